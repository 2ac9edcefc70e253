"""Tuning without a GPU: tuning.yaml's errors, the tuning data in the bundle (round trip,
signature, tampering), the runtime's pick per device, and `vyre-build tune` on the cpu
backend (a wrong candidate dropped; the record merged; a signed bundle re-signed)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import struct

import blake3
import pytest
from tuning_tree import tuning_bundle

from vyre_build.bundle import read_bundle, write_bundle
from vyre_build.bundle.keys import generate_key_pair, write_key_pair
from vyre_build.bundle.tuning import check_tuning, match, merge_records
from vyre_build.cli import main
from vyre_build.core.errors import BundleError, KernelError
from vyre_build.frontend.tuning_yaml import load_tuning
from vyre_build.runtime import get_device, open_bundle
from vyre_build.runtime.tuning import choose, device_identity

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "kernels")


def _error(text: str) -> str:
    with pytest.raises(KernelError) as info:
        load_tuning("kernels/tuning.yaml", text)
    return str(info.value)


CASE = "  case:\n    inputs:\n      x: {shape: [64], dtype: f32, fill: uniform}\n"


def test_the_library_tunables_load_and_default_to_their_first_candidate():
    with open(os.path.join(KERNELS, "tuning.yaml"), encoding="utf-8") as f:
        tunables = load_tuning("kernels/tuning.yaml", f.read())
    assert sorted(tunables) == ["layer_norm", "matmul", "matmul_f16", "reduce", "scan", "softmax"]
    assert tunables["reduce"]["default"] == "p1024"
    assert tunables["reduce"]["candidates"]["p256"] == {"kernel": None, "params": {"partials": 256}}
    assert tunables["matmul"]["candidates"]["tile128"]["kernel"] == "lib_matmul.f32"
    assert tunables["matmul"]["default"] == "tile128"
    assert tunables["matmul"]["candidates"]["tile128x64"] == {
        "kernel": "lib_matmul.f32_128x64",
        "params": {"tile_m": 128, "tile_n": 64, "wg": 256},
    }
    assert tunables["reduce"]["case"]["tolerance"] == 1e-4
    assert tunables["matmul_f16"]["default"] == "staged"  # the faster on the H200
    assert tunables["matmul_f16"]["candidates"] == {
        "direct": {"kernel": "lib_matmul_f16", "params": {}},
        "staged": {"kernel": "lib_mm_f16.f32", "params": {}},
    }
    assert tunables["matmul_f16"]["case"]["inputs"]["a"]["dtype"] == "f16"
    check_tuning({"tunables": tunables, "records": []})


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "reduce:\n  library: reduce\n" + CASE + "  candidates:\n    a: {partials: 5000}\n",
            "kernels/tuning.yaml:7:8",
            "library.reduce parameter 'partials' must be an integer in 4..1024, got 5000",
        ),
        (
            "reduce:\n  library: reduce\n" + CASE + "  candidates:\n    a: {blocks: 4}\n",
            "kernels/tuning.yaml:7:8",
            "library.reduce has no parameter 'blocks' (it has partials)",
        ),
        (
            "k:\n" + CASE + "  candidates:\n    a: {kernel: k.a, tile: 4}\n",
            "kernels/tuning.yaml:6:8",
            "candidate 'a' sets tile: a kernel tunable's candidates name a kernel only",
        ),
        (
            "k:\n" + CASE + "  candidate:\n    a: {kernel: k.a}\n",
            "kernels/tuning.yaml:5:3",
            "unknown key 'candidate'",
        ),
        (
            "k:\n  case:\n    inputs:\n      x: {shape: [64], fill: random}\n"
            "  candidates:\n    a: {kernel: k.a}\n",
            "kernels/tuning.yaml:4:10",
            "unknown fill 'random'",
        ),
        (
            "k:\n" + CASE + "  candidates:\n    a: {}\n",
            "kernels/tuning.yaml:1:1",
            "tunable 'k'.candidates.a: names no kernel (a kernel tunable runs one kernel per "
            "candidate)",
        ),
        (
            "k:\n" + CASE + "  default: b\n  candidates:\n    a: {kernel: k.a}\n",
            "kernels/tuning.yaml:1:1",
            "tunable 'k'.default: 'b' is not one of its candidates",
        ),
        (
            "k:\n  candidates:\n    a: {kernel: k.a}\n",
            "kernels/tuning.yaml:1:1",
            "tunable 'k' has no case",
        ),
        (
            "r1:\n  library: reduce\n" + CASE + "  candidates:\n    a: {partials: 4}\n"
            "r2:\n  library: reduce\n" + CASE + "  candidates:\n    a: {partials: 4}\n",
            "kernels/tuning.yaml:8:1",
            "tunables 'r1' and 'r2' both tune library.reduce",
        ),
        (
            "s:\n  library: scan\n" + CASE + "  candidates:\n    a: {kernel: lib_scan.f32}\n",
            "kernels/tuning.yaml:7:8",
            "library.scan takes no kernel (only layer_norm's, matmul's, matmul_f16's and softmax's candidates name one)",
        ),
        (
            "m:\n  library: matmul_f16\n"
            + CASE
            + "  candidates:\n    a: {kernel: lib_mm_f16.f16}\n",
            "kernels/tuning.yaml:7:8",
            "library.matmul_f16 cannot run kernel 'lib_mm_f16.f16' (its candidates name "
            "lib_matmul_f16, lib_mm_f16.f32)",
        ),
        (
            "m:\n  library: matmul_f16\n"
            + CASE
            + "  candidates:\n    a: {kernel: lib_matmul_f16, tile: 64}\n",
            "kernels/tuning.yaml:7:8",
            "library.matmul_f16 has no parameter 'tile' (it has none)",
        ),
        (
            "m:\n  library: matmul\n" + CASE + "  candidates:\n    a: {tile_m: 2, tile_n: 64}\n",
            "kernels/tuning.yaml:7:8",
            "library.matmul parameter 'tile_m' must be 0 (the tile) or an integer in 4..1024, "
            "got 2",
        ),
        (
            "m:\n  library: matmul\n" + CASE + "  candidates:\n    a: {tile_n: 2048}\n",
            "kernels/tuning.yaml:7:8",
            "library.matmul parameter 'tile_n' must be 0 (the tile) or an integer in 4..1024, "
            "got 2048",
        ),
        (
            "m:\n  library: matmul\n" + CASE + "  candidates:\n    a: {tile_n: true}\n",
            "kernels/tuning.yaml:7:8",
            "library.matmul parameter 'tile_n' must be 0 (the tile) or an integer in 4..1024, "
            "got 'true'",
        ),
        (
            "m:\n  library: matmul\n" + CASE + "  candidates:\n    a: {tile_k: 16}\n",
            "kernels/tuning.yaml:7:8",
            "library.matmul has no parameter 'tile_k' (it has tile, tile_m, tile_n, wg)",
        ),
        ("k: &a {}\n", "kernels/tuning.yaml:1:4", "YAML anchors and aliases"),
    ],
)
def test_tuning_yaml_errors_name_the_place_and_the_problem(text, where, message):
    shown = _error(text)
    assert shown.startswith(f"{where}: error: {message}"), shown


@pytest.mark.parametrize(
    "text, last_line",
    [
        (
            "r:\n  library: reduc\n" + CASE + "  candidates: {}\n",
            "  fix: did you mean 'reduce'?",
        ),
        ("r:\n" + CASE + CASE, "  fix: keep one of them"),
        ("r:\n" + CASE + "    check: y\n", "  fix: write check: [y]"),
        (
            "r:\n" + CASE + "    tolerance: inf\n",
            "  fix: write a finite number, e.g. 1e-4 or 1024",
        ),
        (
            "r:\n" + CASE + "    grid: [0]\n",
            "  fix: write whole numbers from 1 up, e.g. grid: [1024]",
        ),
    ],
)
def test_tuning_yaml_errors_say_what_to_write(text, last_line):
    assert _error(text).splitlines()[-1] == last_line


def _record(candidate="twice", **device):
    base = {
        "backend": "vulkan",
        "vendor_id": 0x10DE,
        "device_id": 0x2335,
        "adapter": "NVIDIA H200",
        "driver": "NVIDIA",
        "driver_version": 100,
        "subgroup_size": 32,
    }
    return {
        "device": {**base, **device},
        "clock": "gpu",
        "picks": {"scale": {"candidate": candidate, "seconds": {candidate: 1e-3}, "dropped": {}}},
        "untuned": {},
    }


def test_match_prefers_the_exact_device_then_another_driver_then_none():
    exact, newer = _record("plain"), _record("twice", driver_version=200)
    amd = _record("plain", vendor_id=0x1002)
    records = merge_records([], [exact, newer, amd])
    assert match(records, exact["device"]) == (exact, "exact")
    other_driver = {**exact["device"], "driver_version": 150, "subgroup_size": 64}
    assert match(records, other_driver) == (newer, "driver")
    assert match(records, {**exact["device"], "device_id": 1}) == (None, "default")
    assert match(records, {**exact["device"], "backend": "wgpu"}) == (None, "default")
    # merging replaces the record of the same device, keeps the others
    again = merge_records(records, [_record("bad")])
    assert (
        len(again) == 3 and match(again, exact["device"])[0]["picks"]["scale"]["candidate"] == "bad"
    )
    # a record of other tunables for the same device keeps this one's pick
    other = _record("x")
    other["picks"] = {"reduce": other["picks"].pop("scale")}
    other["untuned"] = {"scan": "the time limit ran out"}
    merged = match(merge_records(again, [other]), exact["device"])[0]
    assert {n: p["candidate"] for n, p in merged["picks"].items()} == {
        "reduce": "x",
        "scale": "bad",
    }
    assert merged["untuned"] == {"scan": "the time limit ran out"}


def test_the_runtime_takes_its_devices_record_and_ignores_another_devices(tmp_path):
    path = tuning_bundle(tmp_path)
    cpu = get_device("cpu")
    with read_bundle(path) as r:
        tuning = copy.deepcopy(r.tuning)
    mine = _record("twice", **device_identity(cpu.profile))
    tuning["records"] = [_record("bad")]  # an H200's record only: the default here
    assert choose(tuning, "scale", cpu.profile)[1:] == ("plain", "scale.plain", {}, "default", None)
    tuning["records"] = merge_records(tuning["records"], [mine])
    picked = choose(tuning, "scale", cpu.profile)
    assert (picked.candidate, picked.how) == ("twice", "exact")
    mine["device"]["driver_version"] += 1
    tuning["records"] = [mine]
    assert choose(tuning, "scale", cpu.profile).how == "driver"
    mine["picks"]["scale"]["candidate"] = "gone"
    assert choose(tuning, "scale", cpu.profile).how == (
        "default (record names unknown candidate 'gone')"
    )
    assert choose(tuning, "nothing", cpu.profile) is None


def _manifest_span(data: bytes) -> tuple[int, int]:
    m_off, m_size = struct.unpack_from("<QQ", data, 24)
    return m_off, m_size


def test_tuning_data_round_trips_and_a_tampered_record_is_refused(tmp_path):
    path = tuning_bundle(tmp_path)
    with read_bundle(path) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
        ]
        tunables = r.tuning["tunables"]
    tuning = {"tunables": tunables, "records": [_record("twice")]}
    write_bundle(path, entries, tuning=tuning)
    with read_bundle(path) as r:
        assert r.tuning == tuning and r.ids == ["scale.bad", "scale.plain", "scale.twice"]
        assert r.verify() == []
    data = bytearray(path.read_bytes())
    at = data.index(b'"candidate":"twice"') + len(b'"candidate":"')
    data[at : at + 5] = b"plain"  # the record now names another winner
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match="manifest hash mismatch"):
        read_bundle(path)
    # with the header's hash fixed up too, the record's shape is still checked
    data[at : at + 5] = b"nope!"
    m_off, m_size = _manifest_span(data)
    data[48:80] = blake3.blake3(bytes(data[m_off : m_off + m_size])).digest()
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError) as info:
        read_bundle(path)
    assert str(info.value) == (
        f"{path}: in the manifest: tuning data: tuning.records[0].picks.scale.candidate: "
        "name 'nope!' must be 1 to 100 letters, digits or '_'"
    )


def test_a_signed_bundle_covers_its_records_and_bundle_sign_keeps_them(tmp_path):
    secret, public = write_key_pair(tmp_path / "k.key", generate_key_pair("release"))
    path = tuning_bundle(tmp_path)
    assert main(["bundle", "sign", str(path), "--key", secret]) == 0
    with read_bundle(path, trusted_keys=[public]) as r:
        assert sorted(r.tuning["tunables"]) == ["scale"]
    data = bytearray(path.read_bytes())
    at = data.index(b'"tolerance":0.0001')
    data[at + 12 : at + 18] = b"0.5000"  # a looser check, with the manifest hash fixed up
    m_off, m_size = _manifest_span(data)
    data[48:80] = blake3.blake3(bytes(data[m_off : m_off + m_size])).digest()
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match="does not match the bundle"):
        read_bundle(path, trusted_keys=[public])


def test_tune_on_the_cpu_backend_drops_the_wrong_candidate_and_merges(tmp_path, capsys):
    path = tuning_bundle(tmp_path)
    assert main(["tune", str(path), "--backend", "cpu", "--rounds", "2"]) == 0
    out, err = capsys.readouterr()
    assert "[1/1] scale: bad dropped: y: 4096 of 4096 values differ from the reference" in err
    assert out.splitlines()[0] in ("scale: plain (1 dropped)", "scale: twice (1 dropped)")
    with read_bundle(path) as r:
        (rec,) = r.tuning["records"]
    assert rec["clock"] == "wall" and rec["untuned"] == {}
    pick = rec["picks"]["scale"]
    assert set(pick["seconds"]) == {"plain", "twice"} and list(pick["dropped"]) == ["bad"]
    with open_bundle(path, backend="cpu") as b:
        assert b["scale"].variant == pick["candidate"] and b.tuned("scale").how == "exact"
    # a record of another device, merged in: both are kept
    h200 = _record("twice")
    (tmp_path / "h200.json").write_text(json.dumps({"format": "vyretuning", "records": [h200]}))
    assert (
        main(["tune", str(path), "--backend", "cpu", "--record", str(tmp_path / "h200.json")]) == 0
    )
    capsys.readouterr()
    records = json.loads((tmp_path / "h200.json").read_text())["records"]
    assert [r["device"]["backend"] for r in records] == ["cpu", "vulkan"]
    assert main(["bundle", "show", str(path)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert (
        shown[0]
        == "tunable    scale (kernels): bad (scale.bad), plain (scale.plain), twice (scale.twice); default plain"
    )
    assert shown[1].startswith("record     cpu: vyre reference (CPU) (vendor 0x0000")
    assert shown[-1] == f"1 tunable(s), 1 tuning record(s) in {path}"
    assert main(["bundle", "show", str(path), "--device", "--backend", "cpu"]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.startswith(
        f"tuned      scale: {pick['candidate']} (exact match: the record of cpu: "
    )


def test_tune_refuses_a_signed_bundle_without_a_key_and_re_signs_with_one(tmp_path, capsys):
    secret, public = write_key_pair(tmp_path / "k.key", generate_key_pair("release"))
    path = tuning_bundle(tmp_path, sign_key=secret)
    before = path.read_bytes()
    assert main(["tune", str(path), "--backend", "cpu"]) == 1
    with read_bundle(path) as r:
        key_id = r.signature.key_id
    assert capsys.readouterr().err == (
        f"{path}: refusing to write a record into a bundle signed by key id {key_id} without a "
        "key: its signature would no longer hold; give --sign-key KEYFILE to re-sign it, or "
        "--record FILE to keep the record aside\n"
    )
    assert path.read_bytes() == before
    assert main(["tune", str(path), "--backend", "cpu", "--rounds", "1", "--sign-key", secret]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(", signed by " + _describe(public))
    with read_bundle(path, trusted_keys=[public]) as r:
        assert len(r.tuning["records"]) == 1


def _describe(public: str) -> str:
    from vyre_build.bundle.keys import load_public_key

    return load_public_key(public).describe()


def test_tune_time_limit_reports_what_was_not_tuned(tmp_path, capsys):
    path = tuning_bundle(tmp_path)
    assert main(["tune", str(path), "--backend", "cpu", "--time-limit", "1e-9"]) == 0
    out = capsys.readouterr().out
    assert "scale: not tuned: the time limit (1e-09 s) ran out before it was tuned" in out
    assert main(["tune", str(path), "--backend", "cpu", "--rounds", "0"]) == 1
    assert capsys.readouterr().err == "error: --rounds must be at least 1, got 0\n"


def test_tune_only_names_tunables_of_the_bundle(tmp_path, capsys):
    path = tuning_bundle(tmp_path)
    assert main(["tune", str(path), "--backend", "cpu", "--only", "scale,matmul"]) == 1
    assert capsys.readouterr().err == (
        f"error: --only matmul: {path} has no such tunable (it has scale)\n"
    )
    assert main(["tune", str(path), "--backend", "cpu", "--only", "scale", "--rounds", "1"]) == 0
    assert "tuning 1 tunable(s) on cpu: " in capsys.readouterr().err


def test_a_case_the_kernel_cannot_take_leaves_the_tunable_untuned(tmp_path, capsys):
    path = tuning_bundle(tmp_path)
    with read_bundle(path) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
        ]
        tuning = copy.deepcopy(r.tuning)
    tuning["tunables"]["scale"]["case"]["inputs"]["z"] = 1.0
    write_bundle(path, entries, tuning=tuning)
    assert main(["tune", str(path), "--backend", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(
        "scale: not tuned: the reference (cpu backend, candidate 'plain') failed: "
    )
    assert "'z'" in out[0]


def test_tune_refuses_a_bad_record_file_before_it_runs(tmp_path, capsys):
    path = tuning_bundle(tmp_path)
    (tmp_path / "bad.json").write_text("{}")
    assert (
        main(["tune", str(path), "--backend", "cpu", "--record", str(tmp_path / "bad.json")]) == 1
    )
    out, err = capsys.readouterr()
    assert err == (
        f'{tmp_path / "bad.json"}: not a tuning record file (expected {{"format": "vyretuning", '
        '"records": [...]}, as `vyre-build tune --record` writes)\n'
    )


def test_tune_refuses_a_bundle_without_tunables(tmp_path, capsys):
    path = tuning_bundle(tmp_path)
    with read_bundle(path) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
        ]
    write_bundle(path, entries)
    assert main(["tune", str(path), "--backend", "cpu"]) == 1
    assert capsys.readouterr().err.startswith(f"{path}: declares no tunables: nothing to tune")


def _library_bundle(tmp_path, names, picks):
    """A bundle of the library kernels `names`, their tunables, and a cpu record of `picks`."""
    from vyre_build.library.bundle import library_bundle_path

    with read_bundle(library_bundle_path()) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
            if e.name in names
        ]
        tunables = r.tuning["tunables"]
    rec = _record()
    rec["device"] = device_identity(get_device("cpu").profile)
    rec["picks"] = {
        n: {"candidate": c, "seconds": {c: 1e-3}, "dropped": {}} for n, c in picks.items()
    }
    path = tmp_path / "lib.vyrebundle"
    write_bundle(path, entries, tuning={"tunables": tunables, "records": [rec]})
    return path


def test_the_library_functions_run_their_picked_candidate(tmp_path, monkeypatch):
    import numpy as np

    from vyre_build import library
    from vyre_build.library.call import Call

    path = _library_bundle(
        tmp_path,
        ("lib_reduce", "lib_softmax", "lib_softmax_warp"),
        {"reduce": "p64", "softmax": "wide"},
    )
    ran = []
    step = Call.step
    monkeypatch.setattr(
        Call,
        "step",
        lambda self, kid, n, args, grid: ran.append((kid, grid)) or step(self, kid, n, args, grid),
    )
    x = np.ones(1 << 20, np.float32)
    with open_bundle(path, backend="cpu") as b:
        assert library.reduce(b, x) == 1 << 20
        assert ran == [("lib_reduce.sum_f32", 64 * 256), ("lib_reduce.sum_f32", 256)]
        ran.clear()
        rows = np.zeros((2, 1024), np.float32)
        np.testing.assert_allclose(library.softmax(b, rows), np.full((2, 1024), 1 / 1024))
        assert ran == [("lib_softmax.f32", 2 * 256)]  # "wide": not the subgroup-per-row kernel
    ran.clear()
    kernels = {k: v for k, v in open_bundle(path, backend="cpu").items()}  # no tuning data
    library.reduce(kernels, x)
    assert ran[0] == ("lib_reduce.sum_f32", 256 * 256)  # the default: 1M values need 256


def test_a_tuned_bundle_opens_lazily_and_a_non_canonical_manifest_reads_the_same(tmp_path):
    path = tuning_bundle(tmp_path)
    with read_bundle(path) as r:
        assert r._metas == {}  # the canonical split: metadata decoded on first use
        tuning = r.tuning
    data = path.read_bytes()
    m_off, m_size = _manifest_span(data)
    loose = json.dumps(json.loads(data[m_off : m_off + m_size]), indent=1).encode()
    header = bytearray(data[:80])
    struct.pack_into("<Q", header, 16, m_off + len(loose))
    struct.pack_into("<Q", header, 32, len(loose))
    header[48:80] = blake3.blake3(loose).digest()
    other = tmp_path / "loose.vyrebundle"
    other.write_bytes(bytes(header) + data[80:m_off] + loose)
    with read_bundle(other) as r:
        assert r.tuning == tuning and r.ids == ["scale.bad", "scale.plain", "scale.twice"]


def test_matmul_f16_runs_its_picked_kernel_where_the_shape_allows_it(tmp_path, monkeypatch):
    import numpy as np

    from vyre_build import library
    from vyre_build.library.call import Call

    ran = []
    step = Call.step
    monkeypatch.setattr(
        Call,
        "step",
        lambda self, kid, n, args, grid: ran.append((kid, grid)) or step(self, kid, n, args, grid),
    )
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (64, 32)).astype(np.float16)
    b = rng.uniform(-1, 1, (32, 64)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    odd = rng.uniform(-1, 1, (40, 32)).astype(np.float16)  # M = 40: not the unstaged kernel's
    names = ("lib_matmul_f16", "lib_mm_f16")
    staged = _library_bundle(tmp_path, names, {"matmul_f16": "staged"})
    with open_bundle(staged, backend="cpu") as bundle:
        assert bundle.tuned("matmul_f16").kernel == "lib_mm_f16.f32"
        np.testing.assert_allclose(library.matmul_f16(bundle, a, b), want, rtol=0, atol=1e-5)
        assert ran == [("lib_mm_f16.f32", (256, 1, 1))]  # the shape rule would take the unstaged
        ran.clear()
        got = library.matmul_f16(bundle, a, b, out_dtype="float16")
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-2)
        assert ran == [("lib_mm_f16.f16", (256, 1, 1))]  # f16 output: always its own kernel
    ran.clear()
    (tmp_path / "lib.vyrebundle").rename(tmp_path / "staged.vyrebundle")
    direct = _library_bundle(tmp_path, names, {"matmul_f16": "direct"})
    with open_bundle(direct, backend="cpu") as bundle:
        np.testing.assert_allclose(library.matmul_f16(bundle, a, b), want, rtol=0, atol=1e-5)
        assert ran == [("lib_matmul_f16", (32, 1, 1))]
        ran.clear()
        got = library.matmul_f16(bundle, odd, b)
        np.testing.assert_allclose(got, odd.astype(np.float64) @ b, rtol=0, atol=1e-5)
        assert ran == [("lib_mm_f16.f32", (256, 1, 1))]  # the unstaged kernel cannot take it
    ran.clear()
    library.matmul_f16(dict(open_bundle(direct, backend="cpu").items()), a, b)  # no tuning data
    assert ran == [("lib_mm_f16.f32", (256, 1, 1))]  # the default: the staged kernel


def test_a_matmul_f16_candidate_naming_another_kernel_is_refused_by_the_writer(tmp_path):
    from vyre_build.library.bundle import library_bundle_path

    with read_bundle(library_bundle_path()) as r:
        tunables = copy.deepcopy(r.tuning["tunables"])
    tunables["matmul_f16"]["candidates"]["staged"]["kernel"] = "lib_matmul.f32"
    with pytest.raises(BundleError) as info:
        write_bundle(tmp_path / "x.vyrebundle", [], tuning={"tunables": tunables, "records": []})
    assert str(info.value) == (
        "tuning data: tuning.tunables.matmul_f16.candidates.staged.kernel: library.matmul_f16 "
        "cannot run kernel 'lib_matmul.f32' (its candidates name lib_matmul_f16, lib_mm_f16.f32)"
    )


def test_tune_picks_a_matmul_f16_kernel_on_the_cpu_backend(tmp_path, capsys):
    from vyre_build.library.bundle import library_bundle_path

    path = tmp_path / "lib.vyrebundle"
    shutil.copyfile(library_bundle_path(), path)
    assert (
        main(["tune", str(path), "--backend", "cpu", "--only", "matmul_f16", "--rounds", "1"]) == 0
    )
    err = capsys.readouterr().err
    assert "[1/1] matmul_f16: direct " in err and "[1/1] matmul_f16: staged " in err
    with read_bundle(path) as r:
        (rec,) = r.tuning["records"]
    pick = rec["picks"]["matmul_f16"]
    assert sorted(pick["seconds"]) == ["direct", "staged"] and pick["dropped"] == {}
    assert pick["candidate"] == min(pick["seconds"], key=pick["seconds"].get)


def test_matmul_blocks_default_to_the_square_tile():
    """A matmul candidate of an older bundle names `tile` and `wg` only: tile_m and tile_n
    default to 0 (the tile), and 0 is accepted as such."""
    from vyre_build.bundle.tuning import LIBRARY_TUNABLES, check_library_params
    from vyre_build.library.tuning import library_choice

    assert check_library_params("matmul", {"tile": 128, "wg": 256}) is None
    assert check_library_params("matmul", {"tile": 64, "tile_m": 0, "tile_n": 128}) is None
    assert {n: v[2] for n, v in LIBRARY_TUNABLES["matmul"].items()} == {
        "tile": 128, "tile_m": 0, "tile_n": 0, "wg": 256
    }  # fmt: skip
    assert library_choice({}, "matmul") == (
        None,
        {"tile": 128, "tile_m": 0, "tile_n": 0, "wg": 256},
    )
