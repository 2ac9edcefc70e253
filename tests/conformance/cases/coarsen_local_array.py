"""A local array in a coarsened kernel: copies 1-3 of the body read back zeros.

Found by: python tools/conformance.py --seed 21 --size small (programs 28, 62, 170, 216,
235, 290 of the elementwise share), minimised.
Layer: coarsening (vyre_build/descriptor/coarsen.py, issue 11). The CPU reference run on
the coarse descriptor (`descriptor.coarsen.entries`) gives the same wrong values as the
WGSL entry `main_x4`, so the coarse descriptor is wrong, not the emitter: element 4*gid+j
of copy j stores to the local array and loads 0 back for j = 1, 2, 3 (the locals "made
private per copy" seem to be renamed for the store but not for the load, or re-zeroed).
The runtime dispatches that entry for a default grid over buffers of one length, a
multiple of 4 (DEFAULT_GRID below), so wgpu and Vulkan calls get it wrong too; the plain
entry (wgpu/SPIR-V here, dispatched directly) is right.
Fixed: each copy's local arrays keep their element count (they were made one element long).
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=4)
def k(out: Buffer[f32, "w"]):
    la = local_array(f32, 8)
    i = global_id().x
    la[i] = 3.0
    out[i] = la[i]
"""
COARSE = True
DEFAULT_GRID = True
XFAIL: dict = {}  # fixed: see the docstring


def inputs():
    return {"out": np.zeros(16, dtype=np.float32)}, {}, 4


def expected(buffers, scalars):
    return {"out": np.where(np.arange(16) < 8, 3.0, 0.0).astype(np.float32)}
