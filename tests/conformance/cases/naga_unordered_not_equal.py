"""NaN != x is true in the language (an unordered compare), false through wgpu/SPIR-V.

Found by: python tools/conformance.py --seed 2 --only 28 (and --only 88).
Layer: naga's SPIR-V reader (wgpu 0.32, the wgpu/SPIR-V path only). Our SPIR-V says
OpFUnordNotEqual (checked with spirv-dis), Vulkan runs it right, and the WGSL path is
right (the WGSL emitter writes `!(a == b)`); naga reads FUnordNotEqual back as its `!=`,
which it then emits as an ordered compare. A workaround on our side: emit Ne on floats as
OpLogicalNot of OpFOrdEqual in SPIR-V too, as the WGSL emitter does.
Worked around: the SPIR-V emitter writes float != as OpLogicalNot(OpFOrdEqual), which naga reads right.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=4)
def k(x: Buffer[f32], o: Buffer[u32, "w"]):
    i = global_id().x
    o[i * 3] = u32(x[i] != 1.0)
    o[i * 3 + 1] = u32(bool(x[i]))
    if x[i] != 1.0:
        o[i * 3 + 2] = 7
"""
XFAIL: dict = {}  # fixed: see the docstring


def inputs():
    x = np.array([np.nan, 1.0, 2.0, -np.inf], dtype=np.float32)
    return {"x": x, "o": np.zeros(12, dtype=np.uint32)}, {}, 1


def expected(buffers, scalars):
    x = buffers["x"]
    ne = x != 1.0  # numpy, like IEEE and the language: NaN != 1.0 is True
    nz = x != 0.0
    rows = np.stack([ne, nz, np.where(ne, 7, 0)], axis=1).astype(np.uint32)
    return {"o": rows.reshape(-1)}
