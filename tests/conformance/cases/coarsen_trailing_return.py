"""An elementwise kernel that ends with `return` does not compile: its coarse descriptor
is invalid.

Found by: python tools/conformance.py --seed 21 --size small (program 229; minimised to a
kernel whose body is only `return`).
Layer: coarsening (vyre_build/descriptor/coarsen.py, issue 11): `return` becomes a break
out of the copy, and more ops follow it in the same body, which validation refuses:
"descriptor 'k+x4': OpaqueNode('vyre.break', b'') []: break/continue/return must end its
body". The same kernel with the return inside an `if` compiles.
Fixed: a copy whose body already ends in a break (its return) gets no second one.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=4)
def k(x: Buffer[f32], out: Buffer[f32, "w"]):
    i = global_id().x
    out[i] = x[i]
    return
"""
COARSE = True
XFAIL: dict = {}  # fixed: see the docstring


def inputs():
    x = np.arange(8, dtype=np.float32) - 3.5
    return {"x": x, "out": np.zeros(8, dtype=np.float32)}, {}, 2


def expected(buffers, scalars):
    return {"out": buffers["x"].copy()}
