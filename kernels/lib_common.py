"""Helpers the library kernels (lib_*.py) share: workgroup-wide sums and maxima through
subgroups, a subgroup's rank, and vec4 loads/stores with a scalar path for the tail.

None assumes a subgroup size or layout (lavapipe runs 8 lanes, the H200 32, the CPU
reference any power of two); subgroups are assumed full (the workgroup size is a multiple
of the subgroup size), as on every device here. Each kernel's variants (variants.yaml) set T
(the element type) and V (its vec4 type).
"""
from vyre_build.lang import (Buffer, barrier, bitcast, local_id, subgroup_add,
                             subgroup_invocation_id, subgroup_min, subgroup_size, u32)


def zero_of() -> T:
    return bitcast(T, u32(0))


def wg_sum(v: T, slots: Buffer[T, "rw"]) -> T:
    """The sum of `v` over the workgroup, returned to every invocation. `slots` is a shared
    array of one entry per invocation: each subgroup's total goes to the lowest local id
    of its lanes, the other entries hold 0, and every subgroup adds all of them."""
    lid = local_id().x
    # earlier readers of `slots` are done before it is written again
    barrier()
    t = subgroup_add(v)
    slots[lid] = t if lid == subgroup_min(lid) else zero_of()
    barrier()
    acc = zero_of()
    j = subgroup_invocation_id()
    while j < len(slots):
        acc += slots[j]
        j += subgroup_size()
    return subgroup_add(acc)


def wg_sum2(a: T, b: T, slots_a: Buffer[T, "rw"], slots_b: Buffer[T, "rw"]) -> V:
    """The sums of `a` and of `b` over the workgroup as V(sum a, sum b, 0, 0), returned to
    every invocation: wg_sum for two values with one exchange (two barriers, not four)."""
    lid = local_id().x
    barrier()
    ta = subgroup_add(a)
    tb = subgroup_add(b)
    lead = lid == subgroup_min(lid)
    slots_a[lid] = ta if lead else zero_of()
    slots_b[lid] = tb if lead else zero_of()
    barrier()
    acc_a = zero_of()
    acc_b = zero_of()
    j = subgroup_invocation_id()
    while j < len(slots_a):
        acc_a += slots_a[j]
        acc_b += slots_b[j]
        j += subgroup_size()
    return V(subgroup_add(acc_a), subgroup_add(acc_b), zero_of(), zero_of())


def subgroup_rank(marks: Buffer[u32, "rw"]) -> u32:
    """How many subgroups of the workgroup have a lower first local id than this one's:
    with full subgroups, `rank * subgroup_size() + subgroup_invocation_id()` numbers the
    invocations 0.. in an order that subgroup scans follow, whatever the layout."""
    lid = local_id().x
    first = subgroup_min(lid)
    marks[lid] = u32(1) if lid == first else u32(0)
    barrier()
    count: u32 = 0
    j = subgroup_invocation_id()
    while j < first:
        count += marks[j]
        j += subgroup_size()
    rank = subgroup_add(count)
    # every subgroup has read `marks` before the caller reuses shared memory
    barrier()
    return rank


def load4(x4: Buffer[V], x: Buffer[T], q: u32, n: u32, vin: u32) -> V:
    """Values 4q .. 4q+3 of an array of n (zeros past n): one vec4 load through `x4` when
    `vin` is set and the vector is whole, else scalar loads through `x` (the same buffer)."""
    i = 4 * q
    z = zero_of()
    if vin != 0 and i + 4 <= n:
        r = x4[q]
    else:
        r = V(x[i] if i < n else z, x[i + 1] if i + 1 < n else z, x[i + 2] if i + 2 < n else z,
              x[i + 3] if i + 3 < n else z)
    return r


def put4(out: Buffer[T, "w"], i: u32, limit: u32, r: V) -> None:
    """Store r's components at i .. i+3, those below `limit`, as scalars."""
    if i < limit:
        out[i] = r.x
    if i + 1 < limit:
        out[i + 1] = r.y
    if i + 2 < limit:
        out[i + 2] = r.z
    if i + 3 < limit:
        out[i + 3] = r.w


def store4(out4: Buffer[V, "w"], out: Buffer[T, "w"], q: u32, n: u32, vout: u32, r: V) -> None:
    """Store values 4q .. 4q+3 (those below n): one vec4 store through `out4` when `vout`
    is set (its buffer holds whole vectors: past n it may take the padding), else scalar
    stores through `out`."""
    if vout != 0:
        if 4 * q < n:
            out4[q] = r
    else:
        put4(out, 4 * q, n, r)
