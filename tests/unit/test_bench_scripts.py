"""The bench/ scripts run on the kernels a newcomer has (bench numbers are printed, never
asserted: only the shape of the report is)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from spirv_tools import missing, pinned

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_bench(script: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_compile_bench_times_a_spirv_only_kernel_without_its_wgsl(tmp_path):
    for name in ("lib_matmul_f16.py", "saxpy.py"):
        shutil.copy(os.path.join(ROOT, "kernels", name), tmp_path / name)
    proc = run_bench("compile_bench.py", "--repeat", "1", "--root", str(tmp_path))
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ("file kernels front ms lower ms wgsl ms spirv ms total ms".split())
    coop, saxpy = (line.split() for line in lines[1:3])
    assert coop[:2] == ["lib_matmul_f16.py", "1"] and coop[4] == "-"
    assert saxpy[:2] == ["saxpy.py", "1"] and float(saxpy[4]) > 0
    assert all(float(t) > 0 for t in coop[2:4] + coop[5:] + saxpy[2:])
    assert lines[3:6] == [
        "",
        "2 kernels (variants counted) in 2 files",
        "1 of them SPIR-V only (what WGSL cannot express): no WGSL step",
    ]


def test_scan_bench_times_every_scan_path_and_checks_each():
    """bench/scan_bench.py on the cpu backend (forward progress: every look-back runs): a
    line per path, kind and size, each result checked against numpy."""
    proc = run_bench(
        "scan_bench.py", "--quick", "--backend", "cpu", "--rounds", "1", "--number", "1"
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "forward progress: yes" in lines
    rows = [line.split() for line in lines if line.startswith("  ")]
    names = ["rts b1024", "rts b528", "rts b264", "look", "look acq", "once", "look16"]
    want = [
        (kind, f"n={n}", name) for kind in ("f32", "i32") for n in (4099, 1 << 16) for name in names
    ]
    got = [
        (r[0], r[1], " ".join(r[2:4]) if r[3] in ("b1024", "b528", "b264", "acq") else r[2])
        for r in rows
    ]
    assert got == want
    assert all("matches" in line for line in lines if line.startswith("  "))


def test_scan_bench_floor_rows_copy_in_the_look_back_tile_shape():
    """--floor on the cpu backend: the tile-shaped copies (bench/kernels/tile_copy.py) run
    where n is whole tiles of them, each checked against its input, beside the scan rows."""
    proc = run_bench(
        "scan_bench.py", "--backend", "cpu", "--sizes", "16384,12288", "--kinds", "f32",
        "--paths", "rts b1024,look", "--floor", "--rounds", "1", "--number", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("  ")]
    # 16,384 values: one tile of 16 vec4s, two of 8; 12,288: no whole tiles, no copy rows
    assert [(r[1], r[2]) for r in rows] == [
        ("n=16384", "copy8"), ("n=16384", "copy16"), ("n=16384", "rts"), ("n=16384", "look"),
        ("n=12288", "rts"), ("n=12288", "look"),
    ]  # fmt: skip
    assert all(r[7] == "copied" for r in rows[:2])


def test_scan_bench_against_another_revision_with_its_own_tiles(tmp_path):
    """--against FILE with --held: the other copy of lib_scan.py runs beside this tree's,
    over its wide tiles and over tiles of N vec4s built from its text (look hN old), each
    checked against numpy; a copy that does not compile is refused under its own name."""
    other = tmp_path / "lib_scan_other.py"
    shutil.copy(os.path.join(ROOT, "kernels", "lib_scan.py"), other)
    proc = run_bench(
        "scan_bench.py", "--backend", "cpu", "--sizes", "24576", "--kinds", "i32",
        "--against", str(other), "--held", "12", "--rounds", "1", "--number", "1",
        "--paths", "rts b1024,look16 old,look h12,look h12 old",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # "  i32 n=24576       look h12 old       12413.9 us ...": fields two spaces apart
    rows = [re.split(r"\s{2,}", ln.strip()) for ln in proc.stdout.splitlines() if ln[:2] == "  "]
    assert [r[1] for r in rows] == ["rts b1024", "look16 old", "look h12 old", "look h12"]
    assert all("matches" in r for r in rows)
    assert all(r[-1].startswith("[lib_scan_look.held12_i32;") for r in rows[2:])
    other.write_text(other.read_text().replace("def lib_scan_look(", "def lib_scan_look(:", 1))
    proc = run_bench(
        "scan_bench.py", "--backend", "cpu", "--sizes", "24576", "--kinds", "i32",
        "--against", str(other), "--held", "12", "--paths", "rts b1024,look h12 old",
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "--against: it does not compile here" in proc.stderr
    assert str(other) in proc.stderr


def test_reduce_bench_rows_match_numpy_on_the_reference():
    proc = run_bench(
        "reduce_bench.py", "--backend", "cpu", "--sizes", "4100", "--types", "u32,f32",
        "--rounds", "1", "--number", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[2] == "library picks: lib_reduce_once.sum_u32, lib_reduce_once.sum_f32"
    i32tk = {"u32": ["lib_once-i32tk G=2*"], "f32": []}
    for kind in ("u32", "f32"):
        at = lines.index(f"sum {kind} n=4100")
        end = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("  "))
        rows = [line.split() for line in lines[at + 1 : end]]  # the rows are indented
        names = [" ".join(r[:2]) if r[1].startswith("G=") else r[0] for r in rows]
        # 4,100 values: 1,025 vec4s, the library's grid 2, the candidate's 64 and up left out
        assert names == [
            "floor", "pass1 G=2", "two-pass", "lib_once G=2*", *i32tk[kind], "four G=2*",
            "four-acqrel G=2*", *(["four-i32tk G=2*"] if kind == "u32" else []), "library",
        ]  # fmt: skip
        # every row with a result (all but the floor and the first pass alone) matches
        # numpy; each one after lib_once gives its ratio to it
        assert all(r[-1 if r[0] != "library" else -2] == "matches" for r in rows[2:]), rows
        assert all("vs lib_once" in line for line in lines[at + 5 : end]), lines[at:end]


def test_matmul_bench_rolled_variant_matches_on_the_reference():
    """bench/matmul_f32_bench.py --rolled: lib_matmul rebuilt with its K steps' inner loops
    as range loops (the text rewrite still finds them) gives C as the library's kernel does."""
    proc = run_bench(
        "matmul_f32_bench.py", "--sizes", "20", "--rounds", "1", "--rolled", "--backend", "cpu"
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ")]
    assert rows == ["library.matmul", "lib_matmul.f32", "lib_matmul.f32+rolled"]
    assert "MISMATCH" not in proc.stdout


@pytest.mark.skipif(missing("spirv-val"), reason="the test extra's spirv-val is not installed")
def test_the_prebuilt_glsl_witnesses_pass_the_pinned_validator():
    """bench/glsl/prebuilt: every hand-written witness module (the GLSL of the library's
    designs, bench/mm_f16_designs.py's design space) passes the pinned spirv-val, as every
    module the compiler makes does; each is Vulkan 1.2 or 1.3 SPIR-V (the cooperative-matrix
    ones need 1.3)."""
    folder = os.path.join(ROOT, "bench", "glsl", "prebuilt")
    names = sorted(f for f in os.listdir(folder) if f.endswith(".spv"))
    assert {"mm_f16_lib_k32_wide.spv", "mmx_128x256_k32_b1.spv", "sgemm.spv"} <= set(names)
    for name in names:
        with open(os.path.join(folder, name), "rb") as f:
            assert f.read(4) == b"\x03\x02\x23\x07", name  # the SPIR-V magic, little-endian
        env = "vulkan1.2" if name.startswith("sgemm") else "vulkan1.3"
        proc = subprocess.run(
            [pinned("spirv-val"), "--target-env", env, os.path.join(folder, name)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"{name}: {proc.stderr}"
