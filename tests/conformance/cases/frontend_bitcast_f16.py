"""bitcast(f16, x) passed the frontend and failed in lowering as "a compiler bug" (fixed on
main by 78076bc: now a KernelError; kept as a regression test).

Found by: probing the f16 types issue 12 added to the frontend (the generator does not
make f16 yet: the README's language has none), with the generator's own bitcast form.
Layer: frontend (vyre_build/frontend/calls.py, builtin_bitcast): it takes any type of
ir.NUMERIC, which now includes f16, so `bitcast(f16, u32(15360))` reaches validation,
which has no Bitcast row for (u32 -> f16) and raises RuntimeError("lowering produced an
invalid descriptor (a compiler bug): ... Bitcast f16 is not defined on (u32)"): a
traceback for a user error. Expected: a KernelError at the call, as for bitcast(bool, x)
("bitcast needs a 32-bit scalar type: i32, u32 or f32").
"""

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=4)
def k(o: Buffer[f16, "w"]):
    o[global_id().x] = bitcast(f16, u32(15360))
"""
EXPECT_KERNEL_ERROR = "bitcast needs a 32-bit scalar type"
XFAIL: dict = {}
