"""Integer division by a descending u32 loop counter crashes the range analysis.

Found by: python tools/conformance.py --seed 1 --size small --only 246 (after merging
main's "range analysis divides intervals by a positive constant"), minimised.
Layer: range analysis (vyre_build/descriptor/ranges.py): `ZeroDivisionError` in the
interval rule of Div (`al // bh` with bh == 0 while bl > 0): the interval of the counter of
`range(u32(7), u32(0), -3)` comes out with its ends out of order, the same fault as
ranges_negative_shift.py, now reached through division.
Fixed with ranges_negative_shift (no inverted intervals) and the stepped-loop trip count.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=1)
def k(x: Buffer[u32, "rw"]):
    for j in range(u32(7), u32(0), -3):
        x[j] = x[j] // j
"""
XFAIL: dict = {}  # fixed: see the docstring


def inputs():
    return {"x": np.arange(8, dtype=np.uint32) * 10}, {}, 1


def expected(buffers, scalars):
    x = buffers["x"].copy()
    for j in range(7, 0, -3):
        x[j] //= j
    return {"x": x}
