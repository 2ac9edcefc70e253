"""A memory barrier (fence, no execution barrier) in a loop, reached by one invocation of a
workgroup wider than a subgroup, loses that invocation's later writes on lavapipe.

Found by: the CI differential run (tools/conformance.py --seed 1 --size small, program 107:
o2[29] came back 0 on Vulkan, 32 on the reference), minimised by hand (2026-12-02) to this
kernel: every invocation but 29 returns, 29 runs two loops, the inner one with
fence(scope="workgroup", order="release") (OpMemoryBarrier Workgroup, Release|MakeAvailable
on uniform and workgroup memory), after a loop that runs zero times, then stores 32. At
workgroup sizes 64 and 128 the store is lost; at 8 and 1 (one lavapipe subgroup) it lands;
without the zero-trip loop, or with the fence after the loops, it lands. spirv-val accepts
the module (vulkan1.1..1.3).
Layer: Mesa lavapipe (llvmpipe runs a workgroup's subgroups as coroutines; the memory
barrier behaves as if it waited for the invocations that returned, and the suspended
invocation never resumes). Other drivers must run it right: the device tier runs it on the
H200. wgpu taking the SPIR-V shows the same loss. No workaround on our side: the SPIR-V is what the Vulkan memory model asks for.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=64)
def k(o: Buffer[i32, "w"], s: i32):
    gid = global_id().x
    if gid != 29:
        return
    n0: u32 = 0
    while n0 < 2:
        n0 += 1
        for j in range(0, s):
            o[0] = 1
        n2: u32 = 0
        while n2 < 3:
            n2 += 1
            fence(scope="workgroup", order="release")
    o[gid] = 32
"""
WHY = "lavapipe loses the writes after a memory barrier reached by one invocation"
XFAIL = {"vulkan": WHY, "wgpu-spirv": WHY}  # naga's SPIR-V of it runs into the same bug
NO_WGSL = "fence: memory ordering WGSL cannot express"
DRIVER = "llvmpipe"  # lavapipe's bug: other drivers must run it right


def inputs():
    return {"o": np.zeros(64, np.int32)}, {"s": 0}, 1


def expected(buffers, scalars):
    o = np.zeros(64, np.int32)
    o[29] = 32
    return {"o": o}
