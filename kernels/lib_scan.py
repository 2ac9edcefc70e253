"""Library full-array prefix sums (inclusive and exclusive) over u32, i32, f32, for
vyre_build.runtime.library.scan: reduce-then-scan in three dispatches.

1. lib_scan_sums: workgroup b adds block b (per_block * WG vec4s) into sums[b].
2. lib_scan_block over the sums with one workgroup and exclusive=1: each block's offset.
3. lib_scan_block over the input with those offsets: each workgroup scans its block,
   WG vec4s per step (a vec4's own prefix, subgroup_inclusive_add across lanes, subgroup
   totals through shared memory across subgroups), the next step's vec4 loaded before
   the current one is scanned.
Integer sums wrap; variants.yaml binds T and V per type. There is no single-pass
decoupled look-back: WGSL's atomics are relaxed and its storageBarrier orders only within
a workgroup (no device-scope release/acquire to publish a block's sum), and nothing
guarantees forward progress between workgroups (the CPU reference runs a chunk's
workgroups in lockstep, lavapipe runs them on a few threads), so a waiting workgroup could
spin forever.
"""
from vyre_build.lang import (Buffer, barrier, kernel, local_id, shared, subgroup_add,
                             subgroup_inclusive_add, subgroup_invocation_id, subgroup_size, u32,
                             workgroup_id)

from .lib_common import load4, store4, subgroup_rank, wg_sum, zero_of

WG = 256


@kernel(workgroup_size=WG, grid=1)
def lib_scan_sums(x4: Buffer[V], x: Buffer[T], sums: Buffer[T, "w"], n: u32, vin: u32,
                  per_block: u32):
    slots = shared(T, WG)
    lid = local_id().x
    b = workgroup_id().x
    first = b * per_block * WG + lid
    acc = V(zero_of())
    acc2 = V(zero_of())
    # two independent loads per trip keep more bytes in flight
    for k in range(per_block // 2):
        q = first + 2 * k * WG
        acc = acc + load4(x4, x, q, n, vin)
        acc2 = acc2 + load4(x4, x, q + WG, n, vin)
    if per_block % 2 == 1:
        acc = acc + load4(x4, x, first + (per_block - 1) * WG, n, vin)
    acc = acc + acc2
    total = wg_sum(acc.x + acc.y + acc.z + acc.w, slots)
    if lid == 0:
        sums[b] = total


@kernel(workgroup_size=WG, grid=1)
def lib_scan_block(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                   offsets: Buffer[T], n: u32, vin: u32, vout: u32, per_block: u32,
                   exclusive: u32):
    # subgroup totals, double-buffered by step so that one barrier per step suffices
    totals = shared(T, 2 * WG)
    marks = shared(u32, WG)
    lane = subgroup_invocation_id()
    size = subgroup_size()
    rank = subgroup_rank(marks)
    groups = (u32(WG) + size - 1) // size
    b = workgroup_id().x
    carry = offsets[b]
    first = b * per_block * WG + rank * size + lane
    z = zero_of()
    v = load4(x4, x, first, n, vin)
    for k in range(per_block):
        q = first + k * WG
        ahead = V(z)
        if k + 1 < per_block:
            ahead = load4(x4, x, q + WG, n, vin)
        s1 = v.x
        s2 = s1 + v.y
        s3 = s2 + v.z
        t = s3 + v.w
        incl = subgroup_inclusive_add(t)
        half = (k % 2) * WG
        if lane == size - 1:
            totals[half + rank] = incl
        barrier()
        # every subgroup adds the totals of the subgroups ranked below it, and all of them
        below = z
        whole = z
        c: u32 = 0
        while c < groups:
            j = c + lane
            w = totals[half + j] if j < groups else z
            below += subgroup_add(w if j < rank else z)
            whole += subgroup_add(w)
            c += size
        pre = carry + below + incl - t
        if exclusive != 0:
            r = V(pre, pre + s1, pre + s2, pre + s3)
        else:
            r = V(pre + s1, pre + s2, pre + s3, pre + t)
        store4(out4, out, q, n, vout, r)
        carry += whole
        v = ahead
