"""Library reductions (sum, min, max over u32, i32, f32) for vyre_build.runtime.library.

One pass: workgroup w folds a grid-stride share of the input (vec4 loads through `x4`, the
last n % 4 values, or all of them when `vin` is 0, through `x`: both views of one buffer)
into `partials[w]`. The host runs it twice, over the input with G workgroups and then over
the G partials with one, so the f32 sum is deterministic for a given grid (no float
atomics). Variants (variants.yaml) set T, its vec4 type V, OP (0 sum, 1 min, 2 max) and
IDENT, the bits of OP's identity for T (infinities for f32 min/max).

lib_reduce_once is the single pass (devices with the Vulkan memory model: library.reduce
picks it, `library.reduce_kernel`): each workgroup folds its share as above and writes its
partial; invocation 0 then takes a ticket with a device-scope acq_rel atomic add (its
release publishes the partial). The workgroup that draws the last ticket (G - 1) is the
last to finish: every one of its invocations acquires the ticket (an acquire load, which
reads the last add and so synchronises with every workgroup's release) and folds the G
partials, strided by invocation (a fixed order: an f32 sum is the same on every run for a
given grid); the others fold the identity, so that the fold's barriers stay in uniform
control. Its invocation 0 writes the result and sets the ticket back to 0, so the next
call needs no clear. No workgroup
waits for another: no forward-progress assumption.
"""
from vyre_build.lang import (Buffer, atomic_add, atomic_load, atomic_store, barrier, bitcast,
                             global_id, kernel, local_id, max, min, num_workgroups, shared,
                             storage_barrier, subgroup_add, subgroup_invocation_id, subgroup_max,
                             subgroup_min, subgroup_size, u32, workgroup_id)

WG = 256


# OP is a constant: one arm of each `if` is kept, and each helper has one return
def fold1(a: T, b: T) -> T:
    if OP == 0:
        r = a + b
    elif OP == 1:
        r = min(a, b)
    else:
        r = max(a, b)
    return r


def fold(a: V, b: V) -> V:
    return V(fold1(a.x, b.x), fold1(a.y, b.y), fold1(a.z, b.z), fold1(a.w, b.w))


def subgroup_fold(v: T) -> T:
    if OP == 0:
        r = subgroup_add(v)
    elif OP == 1:
        r = subgroup_min(v)
    else:
        r = subgroup_max(v)
    return r


def workgroup_fold(v: T, slots: Buffer[T, "rw"], ident: T) -> T:
    """OP over the workgroup's `v`, returned to every invocation: each subgroup's result
    goes to the lowest local id among its lanes (any subgroup layout works), the identity
    to the other slots, and every subgroup folds all of them."""
    lid = local_id().x
    t = subgroup_fold(v)
    slots[lid] = t if lid == subgroup_min(lid) else ident
    barrier()
    acc = ident
    j = subgroup_invocation_id()
    while j < WG:
        acc = fold1(acc, slots[j])
        j += subgroup_size()
    return subgroup_fold(acc)


def share(x4: Buffer[V], x: Buffer[T], n: u32, vin: u32, stride: u32, ident: T) -> T:
    """OP over this invocation's grid-stride share of the n values (lib_reduce_once; the
    same loop as lib_reduce's, which keeps its own copy so that its artifacts do not move)."""
    gid = global_id().x
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
    return s


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
    total = workgroup_fold(s, slots, ident)
    if local_id().x == 0:
        partials[workgroup_id().x] = total


@kernel(workgroup_size=WG, grid=1)
def lib_reduce_once(x4: Buffer[V], x: Buffer[T], partials: Buffer[T, "rw"],
                    ticket: Buffer[u32, "rw"], out: Buffer[T, "w"], n: u32, vin: u32,
                    stride: u32):
    slots = shared(T, WG)
    last = shared(u32, 1)
    ident = bitcast(T, u32(IDENT))
    lid = local_id().x
    groups = num_workgroups().x
    total = workgroup_fold(share(x4, x, n, vin, stride, ident), slots, ident)
    if lid == 0:
        partials[workgroup_id().x] = total
        t = atomic_add(ticket, 0, 1, scope="device", order="acq_rel")
        last[0] = u32(t == groups - 1)
    storage_barrier()
    # every workgroup folds (barriers stay in uniform control); only the last reads partials
    acc = ident
    if last[0] != 0:
        atomic_load(ticket, 0, scope="device", order="acquire")
        j = lid
        while j < groups:
            acc = fold1(acc, partials[j])
            j += WG
    whole = workgroup_fold(acc, slots, ident)
    if lid == 0 and last[0] != 0:
        out[0] = whole
        atomic_store(ticket, 0, 0, scope="device")
