"""subgroup_broadcast_first of an integer made of a float's bits aborts lavapipe's LLVM.

Found by: python tools/conformance.py --programs 1000 --seed 74 (program 64 killed its
worker with SIGABRT on all three GPU paths: "LLVM ERROR: Cannot select: f32 = sra ..."),
minimised by hand in subprocesses: `t = subgroup_broadcast_first(bitcast(i32, -x)); t >> 1`.
Layer: Mesa lavapipe (LLVM 15 instruction selection, in cs_co_variant), on our SPIR-V
through Vulkan and on naga's through wgpu alike: LLVM folds the bitcast through the
broadcast and is left with a float operand of an integer shift; the reference runs it. A
relative of lavapipe_broadcast_first_vector.py (a float broadcast); tools/conform/backends.py
skips the GPU paths, on lavapipe, of a program that broadcasts a float's bitcast.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=64)
def k(a: Buffer[f32], o: Buffer[i32, "w"]):
    gid = global_id().x
    t = subgroup_broadcast_first(bitcast(i32, -a[gid]))
    o[gid] = t >> 1
"""
ISOLATE = True
WHY = "lavapipe's LLVM aborts (Cannot select: f32 = sra)"
XFAIL = {"wgpu": WHY, "vulkan": WHY, "wgpu-spirv": WHY}
DRIVER = "llvmpipe"  # lavapipe's bug: other drivers must run it right


def inputs():
    return {"a": np.arange(64, dtype=np.float32) + 1, "o": np.zeros(64, dtype=np.int32)}, {}, 1


def expected(buffers, scalars, lanes=8):
    first = buffers["a"][np.arange(64) // lanes * lanes]  # each subgroup's first lane
    return {"o": ((-first).view(np.int32) >> 1).astype(np.int32)}
