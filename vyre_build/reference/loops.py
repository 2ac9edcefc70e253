"""Loops of the reference machine: lockstep iterations, and the split of contended ones.

`run_loop` is `Machine.run_loop`: it runs a compiled loop (`steps._LoopSpec`) for the lanes
of a mask to its end, one `_LoopRun` iteration at a time over all its running lanes, each
iteration a step of the budget per running lane (`Machine.budget`); a loop past
MAX_LOOP_ITERATIONS iterations is refused (`Machine.endless`).

Contended loops: lockstep lets one lane per cell win each iteration of a retry loop (a
compare-exchange loop, a spin lock), so N contending lanes would take N iterations over
all N lanes. A loop with no barrier, subgroup or matrix op inside (its lanes are then
independent threads, and any interleaving of their iterations is a legal execution) is
split when, for `SPLIT_WINDOW` iterations in a row, an atomic whose old value the kernel
reads had two or more lanes on one cell, and over them some lanes left the loop but at
most one in 64 of those running per iteration: its running lanes go on in two halves (the
lower lanes first), each on a compacted machine (`Machine.subset`) that may split again,
down to `SPLIT_MIN` lanes; the halves take turns of `TURN` iterations (so a lane that
waits for another half's lane still ends). Contention then costs time, and steps, linear
in the lanes (about SPLIT_MIN steps per contending invocation). A program whose atomics
never collide on an old value it reads is never split: it runs in exactly the lockstep
order of the machine (machine.py).

This module names no machine type: it reads a machine's attributes and methods, and makes
a subset through the machine's own class.
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["MAX_LOOP_ITERATIONS", "run_loop"]

MAX_LOOP_ITERATIONS = 1 << 24  # a loop past this is a kernel that never ends: refused
SPLIT_WINDOW = 4  # iterations of slow, contended progress before a loop is split
SPLIT_MIN = 256  # a loop's running lanes are not split into halves smaller than this
TURN = 1024  # iterations a split half runs before the next half's turn


class _Loop:
    __slots__ = ("broken", "continued")

    def __init__(self, lanes: int):
        self.broken = np.zeros(lanes, bool)
        self.continued = np.zeros(lanes, bool)


def run_loop(self, spec, mask: np.ndarray) -> None:
    """Run a loop for the lanes of `mask` to its end, in lockstep, splitting it when
    contention stalls it (module docstring). `Machine.run_loop`: `self` is the machine,
    `spec` a `steps._LoopSpec`."""
    run = _LoopRun(self, spec, mask & ~self.returned)
    if not (self.can_split and spec.splittable):
        while n := run.pending():
            run.step(n)
        self.loops.pop()
        return
    turns = deque([run])
    while turns:
        run = turns.popleft()
        for _ in range(TURN):
            n = run.pending()
            if n == 0:
                run.machine.loops.pop()
                run.machine.flush()
                break
            if n >= 2 * SPLIT_MIN and run.slow(n):
                turns.extendleft(reversed(run.split()))
                break
            run.step(n)
        else:
            turns.append(run)


class _LoopRun:
    """One loop running on one machine, resumable between iterations: `pending()` (the
    lanes that run the next iteration), `step(n)` (run it), `split()` (two halves)."""

    __slots__ = ("machine", "spec", "loop", "running", "i", "iterations", "history")

    def __init__(self, m, spec, running, i=None, iterations: int = 0):
        self.machine, self.spec, self.running, self.iterations = m, spec, running, iterations
        self.loop = _Loop(m.lanes)
        m.loops.append(self.loop)
        if spec.name is not None and i is None:
            i = np.array(m.vals[spec.lo])
        self.i = i
        self.history: deque = deque(maxlen=SPLIT_WINDOW)  # lanes of the last contended ones

    def pending(self) -> int:
        m = self.machine
        if self.spec.name is not None:
            self.running &= (self.i < m.vals[self.spec.hi]) & ~m.returned
        return int(np.count_nonzero(self.running))

    def step(self, n: int) -> None:
        m, spec, loop = self.machine, self.spec, self.loop
        if self.iterations >= MAX_LOOP_ITERATIONS:
            m.endless()
        self.iterations += 1
        budget = m.budget
        if budget.limit is not None:
            budget.spend(n)
        outer, m.contended = m.contended, False
        loop.continued[:] = False
        if spec.name is not None:
            m.loop_index[spec.name] = self.i
        m.body(spec.main, self.running)
        self.running &= ~loop.broken & ~m.returned
        if spec.name is not None:
            self.i = np.where(self.running, self.i + self.i.dtype.type(1), self.i)
        elif spec.cont is not None:
            loop.continued[:] = False  # the continuing block runs for continued lanes too
            m.body(spec.cont, self.running)
        if m.contended:
            self.history.append(n)
            m.contended = True
        else:
            self.history.clear()  # only an unbroken run of contended iterations counts
            m.contended = outer

    def slow(self, n: int) -> bool:
        """Whether the last SPLIT_WINDOW iterations all collided on an old value the kernel
        reads while at most one in 64 of the running lanes left per iteration (some did)."""
        h = self.history
        if len(h) < SPLIT_WINDOW:
            return False
        left = h[0] - n
        return 0 < left and left * 64 <= n * SPLIT_WINDOW

    def split(self) -> list[_LoopRun]:
        """The running lanes as two runs on compacted machines (this run ends here)."""
        m, spec = self.machine, self.spec
        m.loops.pop()
        m.flush()
        lanes = np.flatnonzero(self.running)
        runs = []
        for half in np.array_split(lanes, 2):
            sub = type(m).subset(m, half)
            for v in spec.outer:
                sub.vals[v] = np.asarray(m.vals[v])[half]
            i = None if self.i is None else self.i[half]
            ones = np.ones(half.size, bool)
            runs.append(_LoopRun(sub, spec.on(sub), ones, i, self.iterations))
        return runs
