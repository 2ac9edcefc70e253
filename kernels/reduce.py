"""Reductions: exact integer sum (workgroup tree + one atomic per workgroup), f32
per-workgroup partials, and per-workgroup min/max through shared atomics."""
from vyre_build.lang import (Buffer, atomic_add, atomic_max, atomic_min, barrier, f32, global_id,
                             i32, kernel, local_id, shared, storage_barrier, u32, workgroup_id)

WG = 256


@kernel(workgroup_size=WG, grid="x", variants={"u32": {"T": u32}, "i32": {"T": i32}})
def reduce_sum(x: Buffer[T], out: Buffer[T, "rw"]):
    partial = shared(T, WG)
    lid = local_id().x
    # out-of-bounds loads read 0, so the tail workgroup needs no guard
    partial[lid] = x[global_id().x]
    barrier()
    s: u32 = WG // 2
    while s > 0:
        if lid < s:
            partial[lid] += partial[lid + s]
        barrier()
        s >>= 1
    if lid == 0:
        atomic_add(out, 0, partial[0])


@kernel(workgroup_size=WG, grid="x")
def reduce_sum_f32(x: Buffer[f32], partials: Buffer[f32, "w"]):
    partial = shared(f32, WG)
    lid = local_id().x
    partial[lid] = x[global_id().x]
    barrier()
    s: u32 = WG // 2
    while s > 0:
        if lid < s:
            partial[lid] = partial[lid] + partial[lid + s]
        barrier()
        s = s // 2
    if lid == 0:
        # one deterministic partial per workgroup; the host adds them in order
        partials[workgroup_id().x] = partial[0]


@kernel(workgroup_size=WG, grid="x")
def block_min_max(x: Buffer[i32], mins: Buffer[i32, "w"], maxs: Buffer[i32, "w"]):
    # per-workgroup min and max through atomics on a two-element shared array
    lo_hi = shared(i32, 2)
    lid = local_id().x
    if lid == 0:
        lo_hi[0] = 2147483647
        lo_hi[1] = -2147483648
    barrier()
    gid = global_id().x
    if gid < len(x):
        atomic_min(lo_hi, 0, x[gid])
        atomic_max(lo_hi, 1, x[gid])
    # orders the shared updates and any storage traffic before the writer reads them
    storage_barrier()
    if lid == 0:
        mins[workgroup_id().x] = lo_hi[0]
        maxs[workgroup_id().x] = lo_hi[1]
