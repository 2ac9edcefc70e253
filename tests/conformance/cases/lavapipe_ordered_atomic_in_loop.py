"""An acquire (or acq_rel) atomic read-modify-write in a loop left by `break`, run by one
invocation, loses another invocation's later plain store on lavapipe.

Found by: a differential run on this machine (tools/conformance.py --seed 11, programs
743 and 1303, 2026-12-05; both mismatch the same way at bf42ef7, before the legalize
pass: the same family as lavapipe_release_store_in_loop.py, with an atomic_max
(order="acquire") in 1303 and an atomic_sub (order="acq_rel") in 743). Only invocation 5
(accd0[5] > 20, e0[0].y > 1) reaches the atomic; every invocation then stores o1[gid] =
1.0, and invocation 0's store (the only one in bounds) never lands on lavapipe (o1[0]
stays 0). spirv-val accepts the module.
Layer: most likely Mesa lavapipe (a memory-model operation reached by part of a workgroup
inside a loop with break loses other invocations' writes); the device tier runs it on the
H200, where it must pass (DRIVER).
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=32)
def k(e0: Buffer[vec2f, "r"], o1: Buffer[f32, "w"], accd0: Buffer[i32, "rw"], chk: Buffer[u32, "w"]):
    gid = global_id().x
    chk_v: u32 = 0
    n3: u32 = 0
    n4: u32 = 0
    n4 = 0
    for j9 in range(4):
        n4 += 1
        if (n4 > 4):
            chk_v |= 2
            break
        n3 = 0
        while True:
            n3 += 1
            if (n3 > 1):
                break
            if (i32(20) >= accd0[gid]):
                break
            if (1.0 >= e0[u32(0)].y):
                break
            atomic_max(accd0, gid, i32(0), order="acquire")
    o1[gid] = 1.0
    chk[gid] = chk_v
"""
WHY = "lavapipe loses another invocation's store after an acquire atomic in a loop"
XFAIL = {"vulkan": WHY}
NO_NAGA_SPIRV = "VulkanMemoryModel"  # naga's SPIR-V reader has no Vulkan memory model
NO_WGSL = "atomic_max(order='acquire'): memory ordering WGSL cannot express"
DRIVER = "llvmpipe"  # lavapipe's bug: other drivers must run it right


def inputs():
    e0 = np.array([0.0, 3.4028235e38], np.float32)  # one vec2f
    accd0 = np.zeros(7, np.int32)
    accd0[5] = 418761715
    return (
        {"e0": e0, "o1": np.zeros(1, np.float32), "accd0": accd0, "chk": np.zeros(32, np.uint32)},
        {},
        1,
    )


def expected(buffers, scalars):
    return {"o1": np.ones(1, np.float32), "accd0": buffers["accd0"], "chk": np.zeros(32, np.uint32)}
