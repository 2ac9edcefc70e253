"""A segmentation fault creating the wgpu pipeline of a kernel whose while condition
calls a helper with nested early returns and a stepped loop.

Found by: python tools/conformance.py --seed 20 (program 1631: the worker died with
signal 11), minimised in subprocesses (the crash kills the process).
Layer: wgpu's pipeline creation (wgpu-native 0.32: naga's SPIR-V backend, or Mesa
lavapipe compiling naga's SPIR-V), on both wgpu paths: from our WGSL and from our SPIR-V
read by naga. Our SPIR-V straight to Vulkan and the CPU reference run it right (every
element 5). The case runs each stage in a subprocess, so the crash fails the stage, not
the test run.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *



def h1(p3: i32, p4: bool) -> u32:
    if p4:
        t8 = select(bool(global_id().x), vec2u(u32(2147483647)).y, workgroup_size().x)
        if (u32(0.5) != t8):
            if (i32(0) == (i32(7) << 16)):
                return u32(0)
            if bool(i32(33)):
                if (False == isnan(-0.0)):
                    return u32(0)
            elif p4:
                return u32(0)
        else:
            for j0 in range((u32(0) & 3), ((u32(0) & 3) + 7), 2):
                pass
    return u32(0)


@kernel(workgroup_size=64)
def k(a1: Buffer[i32, "r"], chk: Buffer[u32, "w"]):
    f0: u32 = 0
    while (f0 < 5) and (h1(i32(-44), (i32(0) == a1[u32(0)])) == u32(0)):
        f0 += 1
    chk[global_id().x] = f0
"""
ISOLATE = True
DRIVER = "llvmpipe"  # the H200's driver compiles the same SPIR-V from naga
WHY = "segfault in wgpu's create_compute_pipeline (naga's SPIR-V output on lavapipe)"
XFAIL = {"wgpu": WHY, "wgpu-spirv": WHY}


def inputs():
    return {"a1": np.array([0, 5], dtype=np.int32), "chk": np.zeros(64, dtype=np.uint32)}, {}, 1


def expected(buffers, scalars):
    return {"chk": np.full(64, 5, dtype=np.uint32)}
