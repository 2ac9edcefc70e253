"""A subgroup operation in an elementwise kernel got a coarse entry, where a coarse lane
stands for four elements: the lanes a subgroup_add combines are then other elements.

Found by: python tools/conformance.py --programs 20000 --seed 7 (programs 565, 656 and 946
of the first 1000: subgroup_add of u32 and f32, subgroup_broadcast_first), minimised.
Layer: coarsening (vyre_build/descriptor/coarsen.py): coarsenable() did not refuse the
subgroup kinds, and the runtime dispatches the coarse entry for a default grid.
Fixed: a kernel with any subgroup op or subgroup id gets no coarse entry.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=13)
def k(o0: Buffer[i32, "w"]):
    gid = global_id().x
    o0[gid] = subgroup_broadcast_first(i32(gid))
"""
DEFAULT_GRID = True  # the runtime would pick a coarse entry if there were one
XFAIL: dict = {}
SUBGROUP_SIZE = 8  # lavapipe's: the expected values below assume it


def inputs():
    return {"o0": np.zeros(8, dtype=np.int32)}, {}, 1


def expected(buffers, scalars):
    # one workgroup of 13: lanes 0..7 form a subgroup (its first lane is 0)
    return {"o0": np.zeros(8, dtype=np.int32)}
