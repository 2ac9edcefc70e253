"""Kernels in which every invocation contends for one cell (issue 20): on the cpu reference,
whose lockstep lets one lane per cell win each iteration of a retry loop, they cost time
linear in the invocations only because such loops are split (vyre_build/reference/machine.py).
tests/unit/test_reference_contention.py and tests/gpu/test_contention.py run them on every
backend; bench/reference_bench.py times them at 16,384 invocations."""

from vyre_build.lang import Buffer, atomic_compare_exchange, atomic_exchange, global_id, kernel, u32


@kernel(workgroup_size=256, grid="tickets")
def cas_count(tickets: Buffer[u32, "w"], counter: Buffer[u32, "rw"]):  # noqa: F821
    # A compare-exchange increment, retried until it lands: each invocation's ticket is the
    # value it replaced, so the tickets are 0 .. n-1 in some order and the counter ends at n.
    i = global_id().x
    done = False
    while not done:
        old = counter[0]
        if atomic_compare_exchange(counter, 0, old, old + 1) == old:
            if i < len(tickets):
                tickets[i] = old
            done = True


@kernel(workgroup_size=256, grid="order")
def spin_lock(order: Buffer[u32, "w"], lock: Buffer[u32, "rw"], total: Buffer[u32, "rw"]):  # noqa: F821
    # A spin lock (0 free, 1 held) around a plain read-modify-write of total[0]: taken and
    # released in one iteration of the retry loop, as a GPU needs (an invocation that left
    # the loop holding it would wait on its own subgroup's spinning lanes). Each invocation
    # records the total it saw: 0 .. n-1 in some order, and total ends at n.
    i = global_id().x
    while True:
        if atomic_compare_exchange(lock, 0, 0, 1) == 0:
            seen = total[0]
            total[0] = seen + 1
            if i < len(order):
                order[i] = seen
            atomic_exchange(lock, 0, 0)
            break
