"""range(lo, hi, step) with a step other than 1 wraps past the end of its type.

Found by: python tools/conformance.py --seed 1 (every run: the loop guards' chk bits).
Layer: lower (vyre_build/frontend/lower.py, for_loop): a step != 1 lowers to a scratch counter and
`i = i + step` in the loop's type, tested `i < hi` (`i > hi` for a negative step). When
the last value plus the step passes the type's end, the counter wraps to the other side
of `hi` and the loop runs on (2^32 / step more trips, or forever), where Python's range()
stops. Both emitters and the reference agree with the descriptor: the descriptor is wrong.
The kernel counts trips with a fuel limit of 16 so the bug cannot hang the test.
Fixed: a stepped loop now counts its exact trip count in u32 (lower.py trip_count), and i = lo + t * step.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=1)
def k(out: Buffer[u32, "w"]):
    n: u32 = 0
    for j in range(2147483640, 2147483647, 3):
        n += 1
        if n > 16:
            break
    out[0] = n
    m: u32 = 0
    for q in range(u32(5), u32(0), -2):
        m += 1
        if m > 16:
            break
    out[1] = m
    p: u32 = 0
    for r in range(u32(4294967290), u32(4294967295), 4):
        p += 1
        if p > 16:
            break
    out[2] = p
"""
XFAIL: dict = {}  # fixed: see the docstring


def inputs():
    return {"out": np.zeros(3, dtype=np.uint32)}, {}, 1


def expected(buffers, scalars):
    trips = [
        len(range(2147483640, 2147483647, 3)),
        len(range(5, 0, -2)),
        len(range(4294967290, 4294967295, 4)),
    ]
    return {"out": np.array(trips, dtype=np.uint32)}
