"""The reference under contention (issue 20): retry loops in which every invocation contends
for one cell are split into compacted halves, so they cost steps (and time) linear in the
invocations; crowded cells fold their atomics in lane order; and a program whose atomics
never collide on an old value it reads runs in exactly the lockstep order it always had.
The same kernels on the GPUs: tests/gpu/test_contention.py; their speed:
bench/reference_bench.py."""

from __future__ import annotations

import os

import numpy as np
import pytest
from descriptors import Kernel

from vyre_build import reference
from vyre_build.compiler import compile_file
from vyre_build.descriptor import decode
from vyre_build.core.errors import DispatchError
from vyre_build.reference import loops, machine

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_KERNELS = os.path.join(ROOT, "bench", "kernels")


@pytest.fixture(scope="module")
def contention():
    """The descriptors of bench/kernels/contention.py by kernel id."""
    compiled = compile_file(
        os.path.join(BENCH_KERNELS, "contention.py"), root=BENCH_KERNELS, targets=("kdesc",)
    )
    return {k.meta["id"]: decode(k.kdesc) for k in compiled}


def compile_source(tmp_path, source: str):
    path = tmp_path / "k.py"
    path.write_text("from vyre_build.lang import *\n\n" + source)
    return {k.meta["id"]: decode(k.kdesc) for k in compile_file(str(path), targets=("kdesc",))}


def test_a_compare_exchange_retry_loop_costs_steps_linear_in_the_invocations(contention):
    # In lockstep, n contending lanes take n(n + 1) / 2 steps (8.4M here); split, each
    # invocation costs at most about SPLIT_MIN: a budget of that per invocation holds.
    n = 4096
    budget = n * (loops.SPLIT_MIN + 32)
    out = reference.execute(
        contention["cas_count"],
        {"tickets": np.zeros(n, np.uint32), "counter": np.zeros(1, np.uint32)},
        {},
        (n // 256, 1, 1),
        max_steps=budget,
    )
    assert out["counter"].tolist() == [n]
    # The halves run in lane order, so the tickets are those of lockstep: lane i gets i.
    np.testing.assert_array_equal(out["tickets"], np.arange(n, dtype=np.uint32))


def test_a_spin_lock_around_a_plain_critical_section_costs_steps_linear_too(contention):
    n = 4096
    out = reference.execute(
        contention["spin_lock"],
        {name: np.zeros(k, np.uint32) for name, k in (("order", n), ("lock", 1), ("total", 1))},
        {},
        (n // 256, 1, 1),
        max_steps=n * (loops.SPLIT_MIN + 32),
    )
    assert (out["total"].tolist(), out["lock"].tolist()) == ([n], [0])
    np.testing.assert_array_equal(out["order"], np.arange(n, dtype=np.uint32))


def test_lockstep_is_what_the_budget_would_refuse(contention, monkeypatch):
    # The same loop with splitting switched off takes the quadratic number of steps.
    monkeypatch.setattr(loops, "SPLIT_MIN", 1 << 30)
    n = 1024
    with pytest.raises(DispatchError) as info:
        reference.execute(
            contention["cas_count"],
            {"tickets": np.zeros(n, np.uint32), "counter": np.zeros(1, np.uint32)},
            {},
            (n // 256, 1, 1),
            max_steps=n * 288,
        )
    assert str(info.value).startswith("Kernel 'cas_count': the dispatch ran past its budget of ")
    out = reference.execute(
        contention["cas_count"],
        {"tickets": np.zeros(n, np.uint32), "counter": np.zeros(1, np.uint32)},
        {},
        (n // 256, 1, 1),
        max_steps=n * (n + 3) // 2,  # lockstep's: lane i wins at iteration i + 1, leaves at i + 2
    )
    np.testing.assert_array_equal(out["tickets"], np.arange(n, dtype=np.uint32))


NOT_SPLIT = """
@kernel(workgroup_size=64, grid="keys")
def histogram_loop(keys: Buffer[u32], hist: Buffer[u32, "rw"], trips: Buffer[u32, "w"]):
    # Contended atomics whose old values nobody reads, in a loop lanes leave one by one.
    i = global_id().x
    if i >= len(keys):
        return
    k = keys[i]
    t: u32 = 0
    while t < k % 97:
        atomic_add(hist, (k + t) % 4, 1)
        t += 1
    trips[i] = t

@kernel(workgroup_size=64, grid="cells")
def own_cell(cells: Buffer[u32, "rw"], tries: Buffer[u32, "w"]):
    # A retry loop on each invocation's own cell: read old values, never a collision.
    i = global_id().x
    if i >= len(cells):
        return
    n: u32 = 0
    while True:
        old = cells[i]
        n += 1
        if atomic_compare_exchange(cells, i, old, old + 1) == old and old + 1 >= 5:
            break
    tries[i] = n
"""


def test_loops_without_a_read_collision_or_with_a_collective_op_are_never_split(
    tmp_path, monkeypatch
):
    def refuse(*args):
        raise AssertionError("split")

    monkeypatch.setattr(machine.Machine, "subset", classmethod(refuse))
    kernels = compile_source(tmp_path, NOT_SPLIT)
    keys = np.random.default_rng(5).integers(0, 2**32, 1000, dtype=np.uint32)
    out = reference.execute(
        kernels["histogram_loop"],
        {"keys": keys, "hist": np.zeros(4, np.uint32), "trips": np.zeros(1000, np.uint32)},
        {},
        (16, 1, 1),
    )
    trips = keys % 97
    np.testing.assert_array_equal(out["trips"], trips)
    want = np.zeros(4, np.uint32)
    for k, t in zip(keys.tolist(), trips.tolist()):
        for j in range(t):
            want[(k + j) % 4] += 1
    np.testing.assert_array_equal(out["hist"], want)

    out = reference.execute(
        kernels["own_cell"],
        {"cells": np.arange(600, dtype=np.uint32) % 7, "tries": np.zeros(600, np.uint32)},
        {},
        (10, 1, 1),
    )
    start = np.arange(600) % 7
    np.testing.assert_array_equal(out["cells"], np.maximum(start + 1, 5))
    np.testing.assert_array_equal(out["tries"], np.maximum(5 - start, 1))

    out = reference.execute(
        cas_with_subgroup_op(),
        {
            name: np.zeros(k, np.uint32)
            for name, k in (("tickets", 512), ("counter", 1), ("lanes", 512))
        },
        {},
        (8, 1, 1),
        subgroup_size=8,
    )
    assert out["counter"].tolist() == [512]
    np.testing.assert_array_equal(out["tickets"], np.arange(512, dtype=np.uint32))
    # Lockstep: lane i wins at the iteration where the lanes after it in its subgroup of 8
    # still spin, and so counts them and itself.
    np.testing.assert_array_equal(out["lanes"], 8 - np.arange(512, dtype=np.uint32) % 8)


def cas_with_subgroup_op():
    """A contended retry loop holding a subgroup op (a descriptor: the language refuses one
    in non-uniform control flow), so its lanes are not independent threads:
    loop { seen = subgroup_add(1); old = counter[0]; if cas(counter, 0, old, old + 1) == old
    { tickets[i] = old; lanes[i] = seen; break } }."""
    k = Kernel("cas_with_subgroup_op", (64, 1, 1))
    tickets, counter = (
        k.buffer("U32", "WriteOnly", "tickets"),
        k.buffer("U32", "ReadWrite", "counter"),
    )
    lanes = k.buffer("U32", "WriteOnly", "lanes")
    b = k.body
    i, zero, one = b.gid(0), b.u32(0), b.u32(1)
    body = b.loop()
    seen = body.op("SubgroupAdd", one)
    old = body.load(counter, zero)
    got = body.atomic("CompareExchange", counter, zero, old, body.bin("Add", old, one))
    then = body.if_(body.bin("Eq", got, old))
    then.store(tickets, i, old)
    then.store(lanes, i, seen)
    then.brk()
    return k.build()


BUSY = """
@kernel(workgroup_size=64, grid="out")
def busy(out: Buffer[u32, "w"], counter: Buffer[u32, "rw"], seed: Buffer[u32]):
    # Three contended increments per invocation, each retried (LOOP) until it lands; between
    # them, state the schedule cannot change: locals, a local array, a nested loop reading
    # shared memory, an early return from inside the retry loop.
    i = global_id().x
    acc: u32 = seed[i % len(seed)]
    hist = local_array(u32, 4)
    tile = shared(u32, 64)
    tile[local_id().x] = acc
    barrier()
    for rep in range(3):
        LOOP
            old = counter[0]
            if atomic_compare_exchange(counter, 0, old, old + 1) != old:
                continue
            for j in range(i % 5):
                acc = acc * 1664525 + u32(j) + tile[(local_id().x + 1) % 64]
                hist[j % 4] += 1
            if i % 11 == 3 and rep == 1:
                out[i] = acc + hist[0] + hist[3]
                return
            break
    out[i] = acc + hist[0] + hist[3]
"""


def busy_model(seed: np.ndarray, n: int) -> tuple[np.ndarray, int]:
    """What busy must write, lane by lane in Python ints, and the counter's final value."""
    out, count = [], 0
    for i in range(n):
        acc = int(seed[i % len(seed)])
        neighbour = int(seed[(i // 64 * 64 + (i % 64 + 1) % 64) % len(seed)])
        hist = [0] * 4
        for rep in range(3):
            count += 1
            for j in range(i % 5):
                acc = (acc * 1664525 + j + neighbour) & 0xFFFFFFFF
                hist[j % 4] += 1
            if i % 11 == 3 and rep == 1:
                break
        out.append((acc + hist[0] + hist[3]) & 0xFFFFFFFF)
    return np.array(out, np.uint32), count


@pytest.mark.parametrize("loop", ["while True:", "for attempt in range(1 << 20):"])
def test_a_split_loop_keeps_every_lane_state_it_had_in_lockstep(tmp_path, monkeypatch, loop):
    desc = compile_source(tmp_path, BUSY.replace("LOOP", loop))["busy"]
    seed = np.random.default_rng(1).integers(0, 2**32, 77, dtype=np.uint32)
    n = 64 * 20
    subsets = []
    split = machine.Machine.subset.__func__
    monkeypatch.setattr(
        machine.Machine, "subset", classmethod(lambda *a: subsets.append(1) or split(*a))
    )

    def run():
        args = {"out": np.zeros(n, np.uint32), "counter": np.zeros(1, np.uint32), "seed": seed}
        return reference.execute(desc, args, {}, (20, 1, 1))

    got = run()
    assert len(subsets) > 2  # the retry loops were split, again and again
    want, count = busy_model(seed, n)
    assert got["counter"].tolist() == [count]
    np.testing.assert_array_equal(got["out"], want)
    monkeypatch.setattr(loops, "SPLIT_MIN", 1 << 30)  # lockstep throughout: the same
    subsets.clear()
    lockstep = run()
    assert not subsets
    np.testing.assert_array_equal(lockstep["out"], want)


ATOMICS = ("Add", "Or", "And", "Xor", "Min", "Max", "Exchange", "CompareExchange")


def crowded(aop: str, ty: str):
    """One atomic per invocation: old = aop(mem[idx[i]], a[i] (, b[i])); out[i] = old."""
    k = Kernel("crowded", (64, 1, 1))
    idx = k.buffer("U32", "ReadOnly", "idx")
    a, b = k.buffer(ty, "ReadOnly", "a"), k.buffer(ty, "ReadOnly", "b")
    mem, out = k.buffer(ty, "ReadWrite", "mem"), k.buffer(ty, "WriteOnly", "out")
    body = k.body
    i = body.gid(0)
    then = body.if_(body.bin("Lt", i, body.length(out)))
    values = [then.load(a, i)] + ([then.load(b, i)] if aop == "CompareExchange" else [])
    then.store(out, i, then.atomic(aop, mem, then.load(idx, i), *values))
    return k.build()


def lane_order(aop: str, mem, idx, a, b):
    """The atomics applied one lane after another, in Python ints (the pinned semantics)."""
    wrap = (lambda v: v & 0xFFFFFFFF) if mem.dtype == np.uint32 else _wrap_i32
    mem, olds = mem.tolist(), []
    for c, x, y in zip(idx.tolist(), a.tolist(), b.tolist()):
        if c >= len(mem):
            olds.append(0)  # out of bounds: dropped, reads 0
            continue
        v = int(mem[c])
        olds.append(v)
        mem[c] = _apply(aop, v, x, y, wrap)
    return mem, olds


def _apply(aop: str, v: int, x: int, y: int, wrap) -> int:
    if aop == "CompareExchange":
        return y if v == x else v
    if aop in ("Min", "Max", "Exchange"):
        return {"Min": min(v, x), "Max": max(v, x), "Exchange": x}[aop]
    return wrap({"Add": v + x, "Or": v | x, "And": v & x, "Xor": v ^ x}[aop])


def _wrap_i32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


@pytest.mark.parametrize("ty", ["U32", "I32"])
@pytest.mark.parametrize("aop", ATOMICS)
def test_crowded_cells_apply_atomics_in_lane_order(aop, ty):
    rng = np.random.default_rng(ATOMICS.index(aop) + 10 * (ty == "I32"))
    n, dtype = 1000, np.uint32 if ty == "U32" else np.int32
    # Cells 0-2 crowded (about 320 lanes each), 3-11 hit by about 3 (ranks), 40 out of bounds.
    weights = np.array([100] * 3 + [1] * 10) / 310
    idx = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 40], n, p=weights)
    idx = np.where(np.arange(n) % 97 == 0, 2**32 - 1 - np.arange(n), idx).astype(np.uint32)
    if aop == "CompareExchange":  # small values: many successes, chains past 16 of them
        a, b = rng.integers(0, 3, n), rng.integers(0, 3, n)
    else:
        a, b = rng.integers(-(2**31), 2**31, n), np.zeros(n, np.int64)
    a, b = (a.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(dtype), b.astype(dtype)
    mem = rng.integers(0, 3, 30).astype(dtype)
    out = reference.execute(
        crowded(aop, ty),
        {"idx": idx, "a": a, "b": b, "mem": mem, "out": np.zeros(n, dtype)},
        {},
        (16, 1, 1),
    )
    want_mem, want_old = lane_order(aop, mem, idx, a, b)
    np.testing.assert_array_equal(out["mem"], np.array(want_mem, dtype))
    np.testing.assert_array_equal(out["out"], np.array(want_old, dtype))
