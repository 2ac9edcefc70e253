"""Tuning on a real device (lavapipe here), checked against the cpu reference: the test
kernel's wrong candidate is dropped, the record merged beside another device's and signed,
and the runtime picks the recorded winner; a library function runs its tuned candidate."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tuning_tree import tuning_bundle

from vyre_build.bundle import read_bundle, write_bundle
from vyre_build.bundle.keys import generate_key_pair, write_key_pair
from vyre_build.cli import main
from vyre_build import library
from vyre_build.runtime import open_bundle
from vyre_build.library.bundle import library_bundle_path
from vyre_build.runtime.tuning import device_identity

pytestmark = [pytest.mark.gpu, pytest.mark.backends("vulkan", "wgpu")]

# A device no test machine is (these tests run on lavapipe and on the H200 alike): its
# record must never be picked here.
OTHER = {
    "device": {
        "backend": "vulkan",
        "vendor_id": 0xFFFE,
        "device_id": 0xFFFE,
        "adapter": "Imaginary GPU 9000",
        "driver": "imaginary",
        "driver_version": 0x8F0C0000,
        "subgroup_size": 64,
    },
    "clock": "gpu",
    "picks": {"scale": {"candidate": "twice", "seconds": {"twice": 1e-6}, "dropped": {}}},
    "untuned": {},
}


def test_tune_drops_the_wrong_candidate_and_the_runtime_picks_the_winner(
    backend, device, tmp_path, capsys
):
    secret, public = write_key_pair(tmp_path / "k.key", generate_key_pair("release"))
    path = tuning_bundle(tmp_path, sign_key=secret)
    # an H200's record first (from its own `tune --record`), then this device's
    (tmp_path / "other.json").write_text(json.dumps({"format": "vyretuning", "records": [OTHER]}))
    with open_bundle(path, device=device, trusted_keys=[public]) as b:
        assert b["scale"].variant == "plain"  # no record for this device: the default
        assert b.tuned("scale").how == "default"
    argv = ["tune", str(path), "--backend", backend, "--rounds", "3", "--sign-key", secret]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "[1/1] scale: bad dropped: y: 4096 of 4096 values differ from the reference" in err
    with read_bundle(path, trusted_keys=[public]) as r:  # re-signed: the pinned key holds
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
        ]
        tuning = r.tuning
    (mine,) = tuning["records"]
    assert mine["device"] == device_identity(device.profile)
    assert mine["clock"] == "gpu"  # the device's timestamps
    pick = mine["picks"]["scale"]
    assert pick["candidate"] in ("plain", "twice") and list(pick["dropped"]) == ["bad"]
    assert all(s > 0 for s in pick["seconds"].values())
    # several devices in one bundle: merge the H200's record in, sign again
    from vyre_build.bundle.tuning import merge_records, read_records

    tuning["records"] = merge_records(tuning["records"], read_records(str(tmp_path / "other.json")))
    write_bundle(path, entries, sign_key=secret, tuning=tuning)
    with open_bundle(path, device=device, trusted_keys=[public]) as b:
        assert len(b.reader.tuning["records"]) == 2
        kernel = b["scale"]
        assert kernel.variant == pick["candidate"] and b.tuned("scale").how == "exact"
        x = np.arange(4096, dtype=np.float32)
        np.testing.assert_array_equal(kernel(x=x, y=np.zeros_like(x), a=2.0)["y"], 2 * x)
    assert main(["bundle", "show", str(path), "--device", "--backend", backend]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[1].startswith(f"tuned      scale: {pick['candidate']} (exact match: the record of")


def test_a_record_for_another_device_leaves_the_default(device, tmp_path):
    path = tuning_bundle(tmp_path)
    with read_bundle(path) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
        ]
        tuning = {"tunables": r.tuning["tunables"], "records": [OTHER]}
    write_bundle(path, entries, tuning=tuning)
    with open_bundle(path, device=device) as b:
        assert b["scale"].variant == "plain"
        assert b.tuned("scale")[1:] == ("plain", "scale.plain", {}, "default", None)


def test_a_library_function_runs_its_tuned_candidate(backend, device, tmp_path, capsys):
    with read_bundle(library_bundle_path(), trusted_keys=False) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
            if e.name == "lib_reduce"
        ]
        reduce = dict(r.tuning["tunables"]["reduce"])
    reduce["case"] = {**reduce["case"], "inputs": {**reduce["case"]["inputs"]}}
    reduce["case"]["inputs"]["x"] = {"shape": [1 << 18], "dtype": "f32", "fill": "uniform"}
    path = tmp_path / "reduce.vyrebundle"
    write_bundle(path, entries, tuning={"tunables": {"reduce": reduce}, "records": []})
    assert main(["tune", str(path), "--backend", backend, "--rounds", "2"]) == 0
    capsys.readouterr()
    with open_bundle(path, device=device) as b:
        choice = b.tuned("reduce")
        assert choice.how == "exact" and choice.params["partials"] in (1024, 256, 64)
        x = np.random.default_rng(1).uniform(-1, 1, 1 << 20).astype(np.float32)
        got = library.reduce(b, x)
        assert abs(float(got) - float(x.astype(np.float64).sum())) < 1e-2
        assert library.reduce(b, np.arange(1 << 16, dtype=np.uint32), op="max") == (1 << 16) - 1
