"""subgroup_broadcast_first of a float aborts lavapipe's LLVM at the first dispatch.

Found by: python tools/conformance.py --seed 43 --size small (programs 41, 59, 172 killed
their workers with SIGABRT on all three GPU paths), minimised in subprocesses; 41 and 59
broadcast a vec4f, 172 an f32 (a variable's value, with an if/elif and a return after).
Layer: Mesa lavapipe (LLVM 15 instruction selection: "LLVM ERROR: Cannot select:
v4i32 = scalar_to_vector ..." in cs_co_variant), on our SPIR-V through Vulkan and on
naga's through wgpu alike; the reference runs it. Integer vectors, scalars, broadcast
from a lane and the reductions are fine. A workaround on our side: emit broadcast_first
of a float vector per component. tools/conform/backends.py skips the GPU paths for a
program that broadcasts a float so (the reference still runs it).
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=64)
def k(a: Buffer[f32], o1: Buffer[vec4f, "w"]):
    gid = global_id().x
    t = subgroup_broadcast_first(vec4f(a[gid], 1.0, 1.0, 1.0) * 0.125)
    o1[gid] = t * 2.0
"""
ISOLATE = True
WHY = "lavapipe's LLVM aborts (Cannot select v4i32 scalar_to_vector)"
XFAIL = {"wgpu": WHY, "vulkan": WHY, "wgpu-spirv": WHY}
DRIVER = "llvmpipe"  # lavapipe's bug: other drivers must run it right


def inputs():
    return {"a": np.arange(64, dtype=np.float32), "o1": np.zeros(256, dtype=np.float32)}, {}, 1


def expected(buffers, scalars, lanes=8):
    first = buffers["a"][np.arange(64) // lanes * lanes]  # each subgroup's first lane
    rows = np.stack([first * 0.25] + [np.full(64, 0.25, np.float32)] * 3, axis=1)
    return {"o1": rows.astype(np.float32).reshape(-1)}
