"""unroll() means what range() means: the same loops written both ways give the same
results on the reference (bodies with nested loops and their own break/continue, a
helper's early return, the counter in arithmetic and as a local array's index; empty and
negative-step bounds). (A negative constant index is a compile error in an unrolled copy,
as any constant index is, where range() gives a run-time index out of bounds.)"""

from __future__ import annotations

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.runtime import load_kernel

BODY = """
from vyre_build.lang import *

LO = {lo}
HI = {hi}

def pick(v: i32, j: i32) -> i32:
    for t in range(3):
        if v % (t + 2) == 0:
            return v + j * t
    return v - j

@kernel(workgroup_size=64)
def k(x: Buffer[i32], out: Buffer[i32, "w"]):
    arr = local_array(i32, 64)
    i = global_id().x
    if i < len(out):
        v = x[i]
        acc = 0
        for j in {loop}(LO, HI, {step}):
            acc += v * j - (j >> 1)
            arr[(j + 64) % 64] = acc
            for t in range(5):
                if t == 3:
                    break
                if (v + t) % 2 == 0:
                    continue
                acc ^= pick(v + t, j)
        total = 0
        for j in {loop}(4):
            total += arr[j] + arr[63 - j]
        out[i] = acc + total
"""

BOUNDS = [(0, 8, 1), (3, 17, 4), (10, -6, -3), (5, 5, 1), (6, 0, 1), (-4, 4, 2)]


def run(tmp_path, loop: str, lo: int, hi: int, step: int, x: np.ndarray):
    path = tmp_path / f"{loop}.py"
    path.write_text(BODY.format(loop=loop, lo=lo, hi=hi, step=step))
    (k,) = compile_file(str(path), targets=("wgsl", "kdesc"))
    got = load_kernel(k.meta, backend="cpu", kdesc=k.kdesc)(x=x, out=len(x))["out"]
    return k, got


@pytest.mark.parametrize("bounds", BOUNDS, ids=[f"{a}_{b}_{c}" for a, b, c in BOUNDS])
def test_unroll_gives_what_range_gives(tmp_path, bounds):
    x = np.random.default_rng(sum(bounds) + 40).integers(-1000, 1000, 67).astype(np.int32)
    _, want = run(tmp_path, "range", *bounds, x)
    _, got = run(tmp_path, "unroll", *bounds, x)
    np.testing.assert_array_equal(got, want)
