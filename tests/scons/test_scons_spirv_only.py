"""End-to-end: a kernel that uses cooperative matrices gets no WGSL artifact. The emitter
declares none for it (scan, scan memo and the workers' scan alike), the build says so once
per kernel built, a null build stays null, and the bundle packs and shows the kernel."""

from __future__ import annotations

import json
import re

import pytest
from scons_helpers import (
    SCONSTRUCT,
    bundled,
    compiled,
    outputs,
    run_scons,
    vyre,
    write_tree,
)

from vyre_build.bundle import read_bundle

pytestmark = pytest.mark.scons

MM = """\
from vyre_build.lang import *
@kernel(workgroup_size=32, grid=32)
def mm(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "w"]):
    acc = coop_mma(coop_load_a(a, 0, 16, 16, 16), coop_load_b(b, 0, 16, 16, 16), coop_fill(f32, 16, 16, 0.0))
    coop_store(acc, c, 0, 16)
"""
WHY = "needs cooperative matrices: SPIR-V only"
NOTE = f"vyre: mm: {WHY} (no .wgsl)"
# 15 ordinary kernels, mm and two helpers: enough files that -j2 scans in the workers.
ORDINARY = 15


def tree(root):
    write_tree(root, ORDINARY)
    (root / "kernels" / "mm.py").write_text(MM)
    return root


def notes(proc) -> list[str]:
    return re.findall(r"^vyre: \w+: needs .*$", proc.stdout, re.M)


def check_built(root) -> None:
    build = root / "build"
    assert sorted(p.name for p in build.glob("mm.*")) == ["mm.kdesc", "mm.meta.json", "mm.spv"]
    assert all((build / f"k{i}.wgsl").is_file() for i in range(ORDINARY))
    meta = json.loads((build / "mm.meta.json").read_text())
    assert meta["skipped"] == {"wgsl": WHY}
    with read_bundle(root / "dist" / "kernels.vyrebundle") as reader:
        assert len(reader.ids) == ORDINARY + 1
        entry = reader.entry("mm")
        assert sorted(entry.artifacts) == [".kdesc", ".spv"]
        assert entry.meta["skipped"] == {"wgsl": WHY}
        assert sorted(reader.entry("k3").artifacts) == [".kdesc", ".spv", ".wgsl"]


@pytest.mark.parametrize("jobs", ["-j1", "-j2"])
def test_a_cooperative_matrix_kernel_builds_without_wgsl(tmp_path, jobs):
    root, cache = tree(tmp_path / "proj"), tmp_path / "cache"
    proc = run_scons(root, cache, jobs)
    assert notes(proc) == [NOTE]
    assert len(compiled(proc)) == ORDINARY + 1
    check_built(root)
    first = outputs(root)

    null = run_scons(root, cache, jobs)
    assert compiled(null) == [] and notes(null) == [] and not bundled(null)

    # Another process, one ordinary kernel edited: the scan memo answers for mm.
    k3 = root / "kernels" / "k3.py"
    k3.write_text(k3.read_text().replace("x[i] * 4", "x[i] * 5"))
    proc = run_scons(root, cache, jobs)
    assert compiled(proc) == ["kernels/k3.py"] and notes(proc) == []
    k3.write_text(k3.read_text().replace("x[i] * 5", "x[i] * 4"))
    run_scons(root, cache, jobs)

    # From the cache after a clean: said again (the kernel is built), the same bytes.
    run_scons(root, cache, "-c")
    proc = run_scons(root, cache, jobs)
    assert notes(proc) == [NOTE]
    assert outputs(root) == first

    shown = vyre(root, cache, "bundle", "show", "dist/kernels.vyrebundle", "mm")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "kernel     mm  (name mm, variant -)"
    assert f"skipped    wgsl: {WHY}" in lines
    assert lines.index(f"skipped    wgsl: {WHY}") == 1 + next(
        i for i, line in enumerate(lines) if line.startswith("features   ")
    )
    assert not any(line.startswith("artifact   .wgsl") for line in lines)
    listed = vyre(root, cache, "bundle", "ls", "dist/kernels.vyrebundle").stdout.splitlines()
    assert re.fullmatch(
        r"mm +32x1x1 +32 +3 +\.kdesc:\d+ \.spv:\d+",
        next(line for line in listed if line.startswith("mm ")),
    )


def test_workers_and_one_process_give_the_same_bytes(tmp_path):
    one = tree(tmp_path / "one")
    two = tree(tmp_path / "two")
    run_scons(one, tmp_path / "c1", "-j1")
    run_scons(two, tmp_path / "c2", "-j2")
    assert outputs(one) == outputs(two)


def test_without_the_wgsl_target_nothing_is_said(tmp_path):
    root = tree(tmp_path / "proj")
    (root / "SConstruct").write_text(
        SCONSTRUCT.replace(
            "toolpath=[vyre_build.build.scons_tool.toolpath()])",
            'toolpath=[vyre_build.build.scons_tool.toolpath()], VYRETARGETS=["spirv"])',
        )
    )
    proc = run_scons(root, tmp_path / "cache")
    assert notes(proc) == []
    assert sorted(p.name for p in (root / "build").glob("mm.*")) == ["mm.meta.json", "mm.spv"]
    assert "skipped" not in json.loads((root / "build" / "mm.meta.json").read_text())
