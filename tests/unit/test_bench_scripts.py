"""The bench/ scripts run on the kernels a newcomer has (bench numbers are printed, never
asserted: only the shape of the report is)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

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
        "1 of them SPIR-V only (cooperative matrices): no WGSL step",
    ]


def test_reduce_bench_rows_match_numpy_on_the_reference():
    proc = run_bench(
        "reduce_bench.py", "--backend", "cpu", "--sizes", "4100", "--types", "u32,f32",
        "--rounds", "1", "--number", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[2] == "library picks: lib_reduce_once.sum_u32, lib_reduce_once.sum_f32"
    for kind, extra in (("u32", ["i32tk", "acqrel"]), ("f32", ["acqrel"])):
        at = lines.index(f"sum {kind} n=4100")
        end = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("  "))
        rows = [line.split() for line in lines[at + 1 : end]]  # the rows are indented
        names = ["floor", "pass1", "two-pass", "old", "new", *extra, "library"]
        assert [r[0] for r in rows] == names
        # every row with a result (all but the floor and the first pass alone) matches numpy
        assert all(r[-1 if r[0] != "library" else -2] == "matches" for r in rows[2:]), rows
