"""Every global atomic: min/max/add/sub statistics, or/xor/and/exchange bit summaries, and
a lock-free open-addressing set built with compare-exchange."""
from vyre_build.lang import (Buffer, atomic_add, atomic_and, atomic_compare_exchange,
                             atomic_exchange, atomic_max, atomic_min, atomic_or, atomic_sub,
                             atomic_xor, bitcast, global_id, i32, kernel, u32)

from .common import hash_u32

EMPTY = 0


@kernel(workgroup_size=64, grid="values")
def atomic_stats(values: Buffer[i32], stats: Buffer[i32, "rw"], bits: Buffer[u32, "rw"],
                 slots: Buffer[u32, "rw"]):
    # stats: [min, max, sum, -count of negatives]; bits: [or, xor, and, some claimed key]
    # slots: a set of keys i + 1 (EMPTY marks a free slot), probed linearly from a hash
    i = global_id().x
    if i >= len(values):
        return
    v = values[i]
    atomic_min(stats, 0, v)
    atomic_max(stats, 1, v)
    atomic_add(stats, 2, v)
    if v < 0:
        atomic_sub(stats, 3, 1)
    u = bitcast(u32, v)
    atomic_or(bits, 0, u)
    atomic_xor(bits, 1, u)
    atomic_and(bits, 2, u)
    key = i + 1
    atomic_exchange(bits, 3, key)
    size = len(slots)
    start = hash_u32(key) % size
    for p in range(size):
        old = atomic_compare_exchange(slots, (start + p) % size, EMPTY, key)
        if old == EMPTY:
            break
