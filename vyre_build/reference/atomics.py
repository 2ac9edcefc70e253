"""Atomics of the reference machine: each op applied lane by lane, in lane order.

`atomic` is `Machine.atomic`; `_step_atomic` makes the step of an Atomic or a vyre.atomic
op (`steps._Steps`). An atomic applies for the lanes of its mask in lane order, every
old value as that order gives it, out-of-bounds lanes dropped (old value 0): a rank loop
in which each pass updates every cell at most once; a cell that many lanes hit in one op
(more than `_SEQUENTIAL`) is folded with numpy's accumulate, a compare-exchange by a
search per success. Add wraps on u32 bit patterns (for i32 too). An atomic whose old value
the kernel reads and that two or more lanes apply to one cell marks the machine contended
(`Machine.contended`, which splits a contended loop: loops.py).

Memory scopes and orders (machine.py) change nothing here: a vyre.atomic runs as the
Atomic of its AtomicOp.
"""

from __future__ import annotations

import numpy as np

from vyre_build.reference.values import dtype_of

__all__ = ["atomic"]

_SEQUENTIAL = 4  # cells hit by more lanes than this in one op are folded per cell
_ATOMIC = {
    "Or": np.bitwise_or,
    "And": np.bitwise_and,
    "Xor": np.bitwise_xor,
    "Min": np.minimum,
    "Max": np.maximum,
    "Exchange": lambda old, v: v,
}


def atomic(self, aop: str, slot: int, index, args, ty, mask, read: bool) -> np.ndarray:
    """Apply an atomic for the lanes of `mask` in lane order; `read`: the kernel reads
    its old value (a collision then marks the machine contended). `Machine.atomic`: `self`
    is the machine."""
    arr, cell, ok = self.cells(slot, index)
    old = np.zeros(self.lanes, dtype_of(ty))
    lanes = np.flatnonzero(mask & ok)
    if lanes.size == 0:
        return old
    shape = (self.lanes,)
    args = [(a if a.shape == shape else np.broadcast_to(a, shape))[lanes] for a in args]
    cells = cell[lanes]
    first = cells[0]
    if lanes.size == 1 or (cells == first).all():  # one cell: one fold, in lane order
        if lanes.size > 1 and read:
            self.contended = True
        old[lanes], arr[first] = _fold(aop, arr[first], args)
        return old
    order = np.argsort(cells, kind="stable")  # lane order within each cell
    cells, lanes = cells[order], lanes[order]
    args = [a[order] for a in args]
    start = np.concatenate(([0], np.flatnonzero(cells[1:] != cells[:-1]) + 1))
    if start.size < cells.size and read:
        self.contended = True
    length = np.diff(np.append(start, cells.size))
    if length.max() > _SEQUENTIAL:  # crowded cells: one fold each; the rest by ranks
        crowded = np.flatnonzero(length > _SEQUENTIAL)
        for s, n in zip(start[crowded].tolist(), length[crowded].tolist()):
            c = cells[s]
            old[lanes[s : s + n]], arr[c] = _fold(aop, arr[c], [a[s : s + n] for a in args])
        keep = np.repeat(length <= _SEQUENTIAL, length)
        cells, lanes, args = cells[keep], lanes[keep], [a[keep] for a in args]
        length = length[length <= _SEQUENTIAL]
        if cells.size == 0:
            return old
        start = np.concatenate(([0], np.cumsum(length)[:-1]))
    rank = np.arange(cells.size) - np.repeat(start, length)
    for r in range(int(rank.max()) + 1):
        pick = rank == r
        c = cells[pick]
        before = arr[c]
        old[lanes[pick]] = before
        if aop == "CompareExchange":
            arr[c] = np.where(before == args[0][pick], args[1][pick], before)
        elif aop == "Add":  # on u32 bit patterns, so i32 wraps too
            arr[c] = (before.view(np.uint32) + args[0][pick].view(np.uint32)).view(arr.dtype)
        else:
            arr[c] = _ATOMIC[aop](before, args[0][pick])
    return old


def _fold(aop: str, before, args: list[np.ndarray]):
    """(old value per lane, final value) of atomic `aop` applied by lanes in order to one
    cell holding `before`."""
    a = args[0]
    if aop == "CompareExchange":
        return _compare_exchange(before, a, args[1])
    seq = np.empty(a.size + 1, a.dtype)
    seq[0], seq[1:] = before, a
    if aop == "Exchange":
        return seq[:-1], a[-1]
    if aop == "Add":  # u32 bit patterns: wraps, for i32 too
        acc = np.add.accumulate(seq.view(np.uint32), dtype=np.uint32).view(a.dtype)
    else:
        acc = _ATOMIC[aop].accumulate(seq)
    return acc[:-1], acc[-1]


def _compare_exchange(before, expected: np.ndarray, new: np.ndarray):
    """Lane-ordered compare-exchange on one cell: a search per success (a retry loop has
    one per op), then a plain loop once there are many."""
    olds = np.empty_like(expected)
    v, pos, n = before, 0, expected.size
    for _ in range(16):
        hits = np.flatnonzero(expected[pos:] == v)
        if hits.size == 0:
            olds[pos:] = v
            return olds, v
        j = pos + int(hits[0])
        olds[pos : j + 1] = v
        v, pos = new[j], j + 1
        if pos == n:
            return olds, v
    cur, rest = v.item(), []
    for e, w in zip(expected[pos:].tolist(), new[pos:].tolist()):
        rest.append(cur)
        if cur == e:
            cur = w
    olds[pos:] = rest
    return olds, expected.dtype.type(cur)


def _step_atomic(m, op):
    # Atomic, or a vyre.atomic (its scope and order: machine.py's docstring): `op.name` is
    # the AtomicOp either way
    aop, ty = op.name, m.info.types[op.result]
    slot, index, args = op.slot, op.element, op.args
    read = op.result in m.read_atomics

    def atomic(mm, mask):
        return mm.atomic(aop, slot, mm.vals[index], [mm.vals[a] for a in args], ty, mask, read)

    return atomic, op.result
