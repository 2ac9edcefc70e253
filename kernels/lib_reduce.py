"""Library reductions (sum, min, max over u32, i32, f32) for vyre_build.runtime.library.

One pass: workgroup w folds a grid-stride share of the input (vec4 loads through `x4`, the
last n % 4 values, or all of them when `vin` is 0, through `x`: both views of one buffer)
into `partials[w]`. The host runs it twice, over the input with G workgroups and then over
the G partials with one, so the f32 sum is deterministic for a given grid (no float
atomics). Variants (variants.yaml) set T, its vec4 type V, OP (0 sum, 1 min, 2 max) and
IDENT, the bits of OP's identity for T (infinities for f32 min/max).
"""
from vyre_build.lang import (Buffer, bitcast, global_id, kernel, local_id, max, min, shared,
                             u32, workgroup_id)

from .lib_common import wg_max, wg_min, wg_sum

WG = 256


# OP is a constant: one arm of each `if` is kept, and each helper has one return
def fold(a: V, b: V) -> V:
    if OP == 0:
        r = a + b
    elif OP == 1:
        r = min(a, b)
    else:
        r = max(a, b)
    return r


def fold1(a: T, b: T) -> T:
    if OP == 0:
        r = a + b
    elif OP == 1:
        r = min(a, b)
    else:
        r = max(a, b)
    return r


@kernel(workgroup_size=WG, grid=1)
def lib_reduce(x4: Buffer[V], x: Buffer[T], partials: Buffer[T, "w"], n: u32, vin: u32,
               stride: u32):
    slots = shared(T, WG)
    gid = global_id().x
    ident = bitcast(T, u32(IDENT))
    nv = n // 4 if vin != 0 else u32(0)
    a = V(ident)
    b = V(ident)
    # two independent loads per trip keep more bytes in flight
    i = gid
    while i + stride < nv:
        a = fold(a, x4[i])
        b = fold(b, x4[i + stride])
        i += 2 * stride
    if i < nv:
        a = fold(a, x4[i])
    a = fold(a, b)
    s = fold1(fold1(a.x, a.y), fold1(a.z, a.w))
    i = 4 * nv + gid
    while i < n:
        s = fold1(s, x[i])
        i += stride
    if OP == 0:
        total = wg_sum(s, slots)
    elif OP == 1:
        total = wg_min(s, slots, ident)
    else:
        total = wg_max(s, slots, ident)
    if local_id().x == 0:
        partials[workgroup_id().x] = total
