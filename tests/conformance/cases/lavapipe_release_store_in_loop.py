"""A release atomic store in a loop that one invocation runs (and leaves by `break` or by
its end) loses another invocation's later plain store on lavapipe.

Found by: a differential run on this machine (tools/conformance.py --seed 206, program
588, 2026-12-05; it mismatches the same way at ecdab97, before this session's changes:
the SPIR-V is byte-identical). Only invocation 3 (e0[6] > 1) enters the loop; its
atomic_store(order="release") targets an element past accd0's end (dropped, as every
out-of-bounds store) and its loop load reads past the end too (0). Every invocation then
stores accd0[gid] = 0; invocation 0's store to accd0[0] is the only one in bounds, and on
lavapipe it never lands (accd0[0] keeps 2147483647). A plain version (no break, no nested
if, a small loop) does not lose it, so the case keeps the generator's program as it was
minimised. spirv-val accepts the module.
Layer: most likely Mesa lavapipe, as lavapipe_memory_barrier_suspends.py (a memory-model
operation reached by part of a workgroup loses other invocations' writes); not yet run on
another driver: the device tier runs it on the H200, where it must pass (DRIVER).
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=128)
def k(e0: Buffer[f32, "r"], accd0: Buffer[u32, "rw"], chk: Buffer[u32, "w"]):
    gid = global_id().x
    wid = workgroup_id().x
    chk_v: u32 = 0
    n3: u32 = 0
    if (e0[(gid + 3)] > 1.0):
        n3 = 0
        for j6 in range(i32(2147483640), i32(2147483647), 3):
            n3 += 1
            if (n3 > 3):
                chk_v |= 8
                break
            if (u32(0) != u32((accd0[gid] > wid > u32(0)))):
                if (u32(0) < wid):
                    break
            else:
                atomic_store(accd0, gid, u32(0), order="release")
    accd0[gid] = u32(0)
    chk[gid] = chk_v
"""
WHY = "lavapipe loses another invocation's store after a release store in a loop"
XFAIL = {"vulkan": WHY}
NO_NAGA_SPIRV = "VulkanMemoryModel"  # naga's SPIR-V reader has no Vulkan memory model
NO_WGSL = "atomic_store(order='release'): memory ordering WGSL cannot express"
DRIVER = "llvmpipe"  # lavapipe's bug: other drivers must run it right


def inputs():
    e0 = np.zeros(11, np.float32)
    e0[6] = np.float32(3.4028235e38)
    accd0 = np.array([2147483647], np.uint32)
    return {"e0": e0, "accd0": accd0, "chk": np.zeros(128, np.uint32)}, {}, 1


def expected(buffers, scalars):
    return {"accd0": np.zeros(1, np.uint32), "chk": np.zeros(128, np.uint32)}
