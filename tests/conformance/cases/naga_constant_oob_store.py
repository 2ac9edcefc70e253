"""A store to a local array at a constant out-of-bounds index: valid SPIR-V, refused by wgpu.

Found by: python tools/conformance.py --seed 2 --only 29.
Layer: naga's SPIR-V reader/validator (wgpu 0.32, the wgpu/SPIR-V path only): the store is
dropped by the pinned semantics, and our SPIR-V guards it (`if index < length`), but the
access chain still has the constant index, and naga rejects the module ("Expression [N]
is invalid: Accessing index 54 is out of [M] bounds") even though Vulkan accepts it. A
workaround on our side: clamp a store's index as loads do, or fold a constant-false guard.
Worked around: the SPIR-V emitter decides a constant out-of-bounds index into a fixed-size
array at compile time (the load is 0, the store is dropped), so naga never sees it.
Since the frontend refuses a constant index written past an array's end (a compile error),
the index reaches the emitters as a literal through a local.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=8)
def k(out: Buffer[f32, "w"]):
    la = local_array(f32, 4)
    j = u32(54)
    la[j] = 1.0
    la[1] = 2.0
    out[global_id().x] = la[0] + la[1]
"""
XFAIL: dict = {}  # fixed: see the docstring


def inputs():
    return {"out": np.zeros(8, dtype=np.float32)}, {}, 1


def expected(buffers, scalars):
    return {"out": np.full(8, 2.0, dtype=np.float32)}
