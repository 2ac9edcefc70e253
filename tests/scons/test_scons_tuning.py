"""End-to-end: `env.VyreTuning(...)` carries tunables and tuning records into the bundle,
and a changed record rebuilds the tuning data and the bundle, never a kernel."""

from __future__ import annotations

import json

import pytest
from scons_helpers import SCONSTRUCT, bundled, compiled, run_scons

from vyre_build.bundle import read_bundle

pytestmark = pytest.mark.scons

TUNED = SCONSTRUCT.replace(
    'env.VyreBundle("dist/kernels.vyrebundle", outs)',
    'tuning = env.VyreTuning("build/tuning", ["kernels/tuning.yaml", "tuning"])\n'
    'env.VyreBundle("dist/kernels.vyrebundle", outs + tuning)',
)

TUNING_YAML = """\
pick:
  case:
    inputs:
      x: {shape: [256], dtype: u32, fill: range}
      y: {shape: [256], dtype: u32, fill: zeros}
    check: [y]
  candidates:
    two: {kernel: k2}
    three: {kernel: k3}
"""


def _record(candidate: str) -> str:
    device = {
        "backend": "vulkan",
        "vendor_id": 4318,
        "device_id": 9013,
        "adapter": "NVIDIA H200",
        "driver": "NVIDIA",
        "driver_version": 1,
        "subgroup_size": 32,
    }
    pick = {"candidate": candidate, "seconds": {candidate: 0.001}, "dropped": {}}
    rec = {"device": device, "clock": "gpu", "picks": {"pick": pick}, "untuned": {}}
    return json.dumps({"format": "vyretuning", "records": [rec]})


def test_a_changed_record_rebuilds_only_the_tuning_data_and_the_bundle(project):
    root, cache = project
    assert TUNED != SCONSTRUCT
    (root / "SConstruct").write_text(TUNED)
    (root / "kernels" / "tuning.yaml").write_text(TUNING_YAML)
    (root / "tuning").mkdir()
    (root / "tuning" / "h200.json").write_text(_record("two"))
    first = run_scons(root, cache)
    assert compiled(first) == ["kernels/k0.py", "kernels/k1.py", "kernels/k2.py", "kernels/k3.py"]
    bundle = root / "dist" / "kernels.vyrebundle"
    with read_bundle(bundle) as r:
        assert sorted(r.tuning["tunables"]["pick"]["candidates"]) == ["three", "two"]
        assert r.tuning["records"][0]["picks"]["pick"]["candidate"] == "two"
    null = run_scons(root, cache)
    assert not bundled(null) and compiled(null) == []
    (root / "tuning" / "h200.json").write_text(_record("three"))
    again = run_scons(root, cache)
    assert compiled(again) == [] and bundled(again)
    assert "vyre: tuning build/tuning.tuning.json" in again.stdout.splitlines()
    with read_bundle(bundle) as r:
        assert r.tuning["records"][0]["picks"]["pick"]["candidate"] == "three"


def test_bad_tuning_sources_fail_the_build_with_their_reason(project):
    root, cache = project
    (root / "SConstruct").write_text(TUNED)
    (root / "kernels" / "tuning.yaml").write_text(TUNING_YAML.replace("k3}", "k9}"))
    (root / "tuning").mkdir()
    proc = run_scons(root, cache, check=False)
    assert proc.returncode != 0
    assert (
        "vyre: tunable 'pick' candidate 'three' runs kernel 'k9', which is not among the "
        "bundle's kernels (build its kernel file into it)"
    ) in proc.stderr.splitlines()
    (root / "kernels" / "tuning.yaml").write_text(TUNING_YAML.replace("fill: range", "fill: odd"))
    proc = run_scons(root, cache, check=False)
    assert proc.returncode != 0
    assert "kernels/tuning.yaml:4:10: error: unknown fill 'odd'" in proc.stderr.splitlines()
