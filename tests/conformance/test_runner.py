"""The runner's parts that need no device: comparison, known-bug arithmetic, the worker
pool's timeout, the command line's errors."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)

import pool_tasks  # noqa: E402
from conform.backends import ALL  # noqa: E402
from conform.compare import compare, float_equal  # noqa: E402
from conform.pool import Pool  # noqa: E402

F = np.float32
CHOICES = ", ".join(ALL)


def bits(*u):
    return np.array(u, dtype=np.uint32).view(np.float32)


def test_floats_compare_bit_for_bit_up_to_the_sign_of_zero_and_nan_payloads():
    a = np.array([0.0, -0.0, np.inf, 1.0, 1.0], F)
    b = np.array([-0.0, 0.0, np.inf, 1.0, np.nextafter(F(1), F(2))], F)
    assert float_equal(a, b, 0.0).tolist() == [True, True, True, True, False]
    assert float_equal(bits(0x7FC00000), bits(0xFFC00001), 0.0).tolist() == [True]
    assert float_equal(np.array([np.nan], F), np.array([1.0], F), 1e30).tolist() == [False]
    assert float_equal(np.array([np.inf], F), np.array([-np.inf], F), 1e30).tolist() == [False]


def test_inexact_floats_compare_within_the_bound_plus_four_ulp():
    one = F(1.0)
    four_ulp = np.nextafter(np.nextafter(np.nextafter(np.nextafter(one, F(2)), F(2)), F(2)), F(2))
    five_ulp = np.nextafter(four_ulp, F(2))
    a, b = np.array([one, one, one], F), np.array([four_ulp, five_ulp, 1.25], F)
    assert float_equal(a, b, 1e-12).tolist() == [True, False, False]
    assert float_equal(a, b, 0.25).tolist() == [True, True, True]


def test_compare_reports_the_buffer_the_indices_and_the_values():
    left = {"o": np.array([1, 2, 3], np.int32), "f": np.array([0.5], F)}
    right = {"o": np.array([1, 5, 3], np.int32), "f": np.array([0.5], F)}
    (d,) = compare(left, right, ["o", "f"], {})
    assert (d.buffer, d.index, d.left, d.right, d.count) == ("o", [1], [2], [5], 1)
    assert (
        d.describe("ref", "gpu") == "o: 1 element(s) differ (bit for bit), ref vs gpu: [1] 2 vs 5"
    )


@pytest.mark.parametrize(
    "ty,lo,hi,step,python",
    [
        ("i32", 2**31 - 8, 2**31 - 1, 3, 3),
        ("u32", 5, 0, -2, 3),
        ("u32", 2**32 - 6, 2**32 - 1, 4, 2),
        ("i32", -(2**31) + 5, -(2**31), -2, 3),
        ("i32", 0, 10, 3, 4),
        ("u32", 6, 0, -1, 6),
        ("i32", 3, 3, 2, 0),
        ("u32", 0, 7, -1, 0),
    ],
)
def test_a_stepped_loop_runs_pythons_trips_at_the_ends_of_its_type(
    tmp_path, ty, lo, hi, step, python
):
    # the wrap bug the generator found (tests/conformance/cases/for_step_wrap.py), fixed
    from vyre_build.compiler import compile_file
    from vyre_build.reference import execute

    assert len(range(lo, hi, step)) == python
    src = (
        "from vyre_build.lang import *\n\n@kernel(workgroup_size=1)\n"
        'def k(out: Buffer[u32, "w"]):\n    n: u32 = 0\n'
        f"    for j in range({ty}({lo}), {ty}({hi}), {step}):\n"
        "        n += 1\n        if n > 100:\n            break\n"
        "        out[n] = u32(j)\n    out[0] = n\n"
    )
    (tmp_path / "k.py").write_text(src)
    (k,) = compile_file(str(tmp_path / "k.py"), targets=("kdesc",))
    out = execute(k.descriptor, {"out": np.zeros(8, np.uint32)}, {}, (1, 1, 1))["out"]
    assert out[0] == python
    want = [v & 0xFFFFFFFF for v in range(lo, hi, step)][:7]
    assert list(out[1 : 1 + len(want)]) == want


def test_a_task_past_its_timeout_costs_its_worker_not_the_run():
    pool = Pool(1, pool_tasks.setup, pool_tasks.handle, timeout=lambda t: 2.0, recycle=100)
    tasks = [("ok", 1), ("sleep", 60), ("exit", 3), ("ok", 2)]
    got = list(pool.run(tasks))
    assert [t for t, _ in got] == tasks
    first, hung, died, last = (r for _, r in got)
    assert (
        first[:2] == ("ok", 1)
        and hung is None
        and died == ("died", 3, "")
        and last[:2] == ("ok", 2)
    )
    assert first[2] != last[2]  # a new worker process after the kill


def test_a_crashed_worker_reports_where_it_died():
    from conform.run import _failure

    pool = Pool(1, pool_tasks.setup, pool_tasks.handle, timeout=lambda t: 30.0, recycle=100)
    got = list(pool.run([("segv", 0), ("ok", 1)]))
    (_, died), (_, after) = got
    assert died[:2] == ("died", -11) and after[:2] == ("ok", 1)
    message = _failure(died)
    assert message.startswith("killed the worker (signal 11) in "), message
    assert "pool_tasks.py:" in message and "string_at" in message, message
    assert not os.path.exists(pool.faults)  # the fault files go with the run


def _cli(*args):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "conformance.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--backends", "cuda"],
            "--backends: unknown backend 'cuda'; choose from " + CHOICES,
        ),
        (
            ["--backends", ","],
            "--backends: unknown backend '(none)'; choose from " + CHOICES,
        ),
        (["--programs", "0"], "--programs and --jobs must be >= 1, got 0 and 1"),
        (["--jobs", "-2"], "--programs and --jobs must be >= 1, got 100 and -2"),
        (["--only", "-1"], "--only must be >= 0, got -1"),
        (["--subgroup-size", "12"], "--subgroup-size must be a power of two from 1 to 128, got 12"),
        (["--shrink-seconds", "-1"], "--shrink-seconds must be from 0 to 86400, got -1.0"),
    ],
)
def test_bad_arguments_are_refused_by_name(args, message):
    proc = _cli(*args)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == f"conformance.py: error: {message}"
    assert "Traceback" not in proc.stderr


def test_an_interrupted_run_reports_what_it_ran():
    """SIGINT (Ctrl-C, `timeout -s INT`) ends a long run with its summary, not nothing."""
    proc = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tools", "conformance.py"), "--programs", "100000"]
        + ["--backends", "reference", "--size", "small", "--jobs", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    import signal
    import time

    time.sleep(6)  # programs run meanwhile (no device: the reference only)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    lines = out.strip().splitlines()
    assert proc.returncode == 130, err[-2000:]
    ran = int(lines[-2].split()[1])
    assert lines[-2] == f"interrupted: {ran} of 100000 programs ran"
    assert lines[-1] == f"{ran} programs, 0 mismatches"
    assert lines[0].startswith("backends run: reference (")
    assert "Traceback" not in err
