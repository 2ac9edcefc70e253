"""A candidate for kernels/lib_reduce.py's lib_reduce_once (the single-pass reduce), timed
against it by bench/reduce_bench.py; not measured on the H200 yet, so the library keeps its
kernel. Two changes from it:

- four independent loads per trip, in each invocation's grid-stride share (vec4s, and the
  scalar tail alike) and in the last workgroup's fold of the partials (up to 1,024 partials
  in one round trip at 256 invocations), where lib_reduce_once takes two and one: at the
  library's grid (four vec4s per invocation) a share is one round trip to memory;
- a release ticket add (lib_reduce_once: acq_rel), with lib_reduce_once's storage barrier
  after it. The last workgroup still synchronises with every workgroup's release, its own
  invocation 0's included: each of its invocations does an acquire load of the ticket after
  the barrier, and the storage barrier makes invocation 0's add happen before those loads,
  so they read the last add, the end of the release sequence of every earlier add (atomic
  read-modify-writes continue it). The barrier must be storage_barrier(): barrier() orders
  workgroup memory only (SPIR-V: no UniformMemory semantics), not the ticket in a storage
  buffer, so a load after it may read an earlier add and miss later workgroups' partials.
  The bench times this kernel with the acq_rel add put back too, so the run tells the two
  changes apart.

Same bindings, scalars and grid as lib_reduce_once (the bench dispatches both the same
way), the same fixed order of the partials (an f32 sum is the same on every run for a given
grid), the ticket set back to 0 by the last workgroup, and no forward-progress assumption.
Variants: sum, min, max over u32, i32, f32 (kernels/variants.yaml's lib_reduce_once ones).
"""
from vyre_build.lang import (Buffer, atomic_add, atomic_load, atomic_store, barrier, bitcast,
                             global_id, kernel, local_id, max, min, num_workgroups, shared,
                             storage_barrier, subgroup_add, subgroup_invocation_id,
                             subgroup_max, subgroup_min, subgroup_size, u32, workgroup_id)
from vyre_build.lang import f32, i32, vec4f, vec4i, vec4u

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
    """OP over this invocation's grid-stride share of the n values: four independent loads
    per trip, vec4s and then the scalar tail alike, so that a share of four loads is one
    round trip to memory."""
    gid = global_id().x
    nv = n // 4 if vin != 0 else u32(0)
    a = V(ident)
    b = V(ident)
    c = V(ident)
    d = V(ident)
    i = gid
    while i + 3 * stride < nv:
        a = fold(a, x4[i])
        b = fold(b, x4[i + stride])
        c = fold(c, x4[i + 2 * stride])
        d = fold(d, x4[i + 3 * stride])
        i += 4 * stride
    while i < nv:
        a = fold(a, x4[i])
        i += stride
    a = fold(fold(a, b), fold(c, d))
    s = fold1(fold1(a.x, a.y), fold1(a.z, a.w))
    t = ident
    u = ident
    v = ident
    i = 4 * nv + gid
    while i + 3 * stride < n:
        s = fold1(s, x[i])
        t = fold1(t, x[i + stride])
        u = fold1(u, x[i + 2 * stride])
        v = fold1(v, x[i + 3 * stride])
        i += 4 * stride
    while i < n:
        s = fold1(s, x[i])
        i += stride
    return fold1(fold1(s, t), fold1(u, v))


@kernel(workgroup_size=WG, grid=1,
        variants={"sum_u32": {"T": u32, "V": vec4u, "OP": 0, "IDENT": 0},
                  "sum_i32": {"T": i32, "V": vec4i, "OP": 0, "IDENT": 0},
                  "sum_f32": {"T": f32, "V": vec4f, "OP": 0, "IDENT": 0},
                  "min_u32": {"T": u32, "V": vec4u, "OP": 1, "IDENT": 0xFFFFFFFF},
                  "min_i32": {"T": i32, "V": vec4i, "OP": 1, "IDENT": 0x7FFFFFFF},
                  "min_f32": {"T": f32, "V": vec4f, "OP": 1, "IDENT": 0x7F800000},
                  "max_u32": {"T": u32, "V": vec4u, "OP": 2, "IDENT": 0},
                  "max_i32": {"T": i32, "V": vec4i, "OP": 2, "IDENT": 0x80000000},
                  "max_f32": {"T": f32, "V": vec4f, "OP": 2, "IDENT": 0xFF800000}})
def reduce_once_four(x4: Buffer[V], x: Buffer[T], partials: Buffer[T, "rw"],
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
        t = atomic_add(ticket, 0, 1, scope="device", order="release")
        last[0] = u32(t == groups - 1)
    storage_barrier()  # the ticket is storage memory: barrier() would not order the add
    # every workgroup folds (barriers stay in uniform control); only the last reads partials
    acc = ident
    if last[0] != 0:
        atomic_load(ticket, 0, scope="device", order="acquire")
        # four independent loads per trip: up to 1,024 partials in one round trip
        b = ident
        c = ident
        d = ident
        j = lid
        while j + 3 * WG < groups:
            acc = fold1(acc, partials[j])
            b = fold1(b, partials[j + WG])
            c = fold1(c, partials[j + 2 * WG])
            d = fold1(d, partials[j + 3 * WG])
            j += 4 * WG
        while j < groups:
            acc = fold1(acc, partials[j])
            j += WG
        acc = fold1(fold1(acc, b), fold1(c, d))
    whole = workgroup_fold(acc, slots, ident)
    if lid == 0 and last[0] != 0:
        out[0] = whole
        atomic_store(ticket, 0, 0, scope="device")
