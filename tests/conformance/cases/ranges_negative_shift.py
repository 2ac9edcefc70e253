"""A descending u32 loop to 0 and a shift by the literal 0 crash the range analysis.

Found by: python tools/conformance.py --seed 4 --only 28 (minimised, then by hand).
Layer: descriptor/ranges.py (range analysis, new with issue 11): `ValueError: negative
shift count` from the interval rule of Shr, whose amount interval reaches below 0; the
literal 0 is also the loop's bound, so a fact from `j > 0` seems to land on it.
Fixed: an empty refinement (a path the pass's ranges rule out) keeps the ranges as they were instead of inverting them.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=1)
def k(x: Buffer[u32, "rw"]):
    for j in range(u32(6), u32(0), -1):
        x[j] = x[j] >> 0
"""
XFAIL: dict = {}  # fixed: see the docstring


def inputs():
    return {"x": np.arange(8, dtype=np.uint32)}, {}, 1


def expected(buffers, scalars):
    return {"x": buffers["x"].copy()}
