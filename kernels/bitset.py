"""Bitset ops: per-word popcount(a & ~b) with a total, and the other bit builtins."""
from vyre_build.lang import (Buffer, atomic_add, barrier, clz, ctz, global_id, kernel, local_id,
                             popcount, reverse_bits, rotl, rotr, shared, u32)


@kernel(workgroup_size=128)
def andnot_popcount(a: Buffer[u32], b: Buffer[u32], counts: Buffer[u32, "w"],
                    total: Buffer[u32, "rw"]):
    # total[0] accumulates; the caller zeroes it. One global atomic per workgroup.
    wg_total = shared(u32, 1)
    lid = local_id().x
    if lid == 0:
        wg_total[0] = 0
    barrier()
    i = global_id().x
    if i < len(counts):
        c = popcount(a[i] & ~b[i])
        counts[i] = c
        atomic_add(wg_total, 0, c)
    barrier()
    if lid == 0:
        atomic_add(total, 0, wg_total[0])


@kernel(workgroup_size=64)
def bit_ops(x: Buffer[u32], lead: Buffer[u32, "w"], trail: Buffer[u32, "w"],
            rev: Buffer[u32, "w"], rot: Buffer[u32, "w"], s: u32):
    i = global_id().x
    if i < len(lead):
        v = x[i]
        lead[i] = clz(v)
        trail[i] = ctz(v)
        rev[i] = reverse_bits(v)
        # amounts are taken mod 32 (pinned), so s may exceed 31
        rot[i] = rotl(v, s) ^ rotr(v, s + 1)
