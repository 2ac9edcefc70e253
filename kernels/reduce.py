"""Sums: exact integer reduce (workgroup tree + one atomic per workgroup) and f32 per-workgroup partials."""
from vyre_build.lang import (
    Buffer,
    atomic_add,
    barrier,
    f32,
    global_id,
    i32,
    kernel,
    local_id,
    shared,
    u32,
    workgroup_id,
)

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
