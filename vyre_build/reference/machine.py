"""The reference machine: a validated descriptor executed on the CPU, vectorised over lanes.

Every invocation of a chunk of workgroups is a lane of one numpy array per SSA value
(shape (lanes,), or (lanes, n) for an n-vector). Ops run in lockstep over all lanes, with
a boolean mask for the lanes that execute them (divergent ifs, loops, early returns), so
an op is one numpy call, never a Python loop per invocation. Lockstep is one of the
schedules a GPU may choose: barriers in uniform control flow hold by construction, and a
load by every lane happens before the store that follows it.

Each body is compiled once into a list of steps (a closure per op holding its operand ids
and its rule; `_Steps` is the `descriptor.view.Walker` that makes them, one method per op
class); values that cannot change during a dispatch (literals, ids, uniforms,
lengths) are computed once per chunk, so a loop iteration costs one call per op.

Memory: storage buffers are the caller's arrays (stores and atomics write them in place,
out of bounds dropped; loads out of bounds give 0); shared arrays are (workgroups, N) per
chunk, zeroed for each workgroup; scratch is (lanes, N). Atomics apply lane by lane in lane
order (a rank loop: each pass updates every cell at most once; a cell that many lanes hit
in one op is folded with numpy's accumulate, a compare-exchange by a search per success).

Memory scopes and orders (descriptor.memory_order): every memory op of every lane is applied
to the one copy of memory when its step runs, so the machine's execution is sequentially
consistent: one total order of all memory operations that keeps each invocation's program
order, every load reading the latest store before it in that order. Such an execution is
allowed by the Vulkan memory model whatever the scopes and orders (each acquire reads a
value that its release wrote before it; a fence only forbids reorderings that never
happen here), so vyre.atomic runs as Atomic, vyre.atomic.load / .store as loads and stores
of the slot, and vyre.fence does nothing. A kernel that waits for another workgroup
(a spin on a flag) ends here only if the workgroup it waits for is in the same chunk and
has written before the wait, or in an earlier chunk (chunks run in workgroup order): the
forward progress the single-pass library kernels assume (docs/runtime.md, "Forward
progress").

Contended loops (`Machine.run_loop`): lockstep lets one lane per cell win each iteration of
a retry loop (a compare-exchange loop, a spin lock), so N contending lanes would take N
iterations over all N lanes. A loop with no barrier, subgroup or matrix op inside (its
lanes are then independent threads, and any interleaving of their iterations is a legal
execution) is split when, for `SPLIT_WINDOW` iterations in a row, an atomic whose old value
the kernel reads had two or more lanes on one cell, and over them some lanes left the loop
but at most one in 64 of those running per iteration: its running lanes go on in two
halves (the lower lanes first), each on a compacted machine (`Machine.subset`) that may
split again, down to `SPLIT_MIN` lanes; the halves take turns of `TURN` iterations (so a
lane that waits for another half's lane still ends). Contention then costs time, and
steps, linear in the lanes (about SPLIT_MIN steps per contending invocation). A program
whose atomics never collide on an old value it reads is never split: it runs in exactly
the lockstep order above.

Strict mode (`strict=True`, reference/strict.py): each step of an op with a defined domain
is wrapped, when the body is compiled, in a check of the operands of the lanes of its mask
(DispatchError on the first lane outside it); a machine that is not strict runs the same
steps as ever.

Step budget: every loop iteration run by one lane is a step; `Budget` counts them over a
dispatch and raises DispatchError once they pass `max_steps` (None: no budget).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from vyre_build.descriptor import DescriptorInfo, KernelDescriptor
from vyre_build.descriptor.types import TYPES
from vyre_build.descriptor.view import (
    Atomic,
    Barrier,
    Binary,
    BodyView,
    Bitcast,
    Break,
    Builtin,
    Cast,
    Construct,
    Continue,
    CoopFill,
    CoopLoad,
    CoopMma,
    CoopStore,
    Debug,
    Extract,
    Fence,
    Fma,
    For,
    If,
    Length,
    Literal,
    Load,
    LoadUniform,
    Loop,
    LoopIndex,
    OpView,
    OrderedAtomic,
    OrderedLoad,
    OrderedStore,
    Return,
    Select,
    Store,
    Subgroup,
    SubgroupBuiltin,
    Unary,
    Unknown,
    Walker,
    view_of,
)
from vyre_build.core.backends import REFERENCE
from vyre_build.core.errors import DispatchError
from vyre_build.reference import matrices as coop
from vyre_build.reference.debug import step_debug
from vyre_build.reference.strict import clz_results, strict_step
from vyre_build.reference.subgroups import Subgroups
from vyre_build.reference.values import RULES, dtype_of

__all__ = ["Budget", "Machine", "MAX_LOOP_ITERATIONS"]

MAX_LOOP_ITERATIONS = 1 << 24  # a loop past this is a kernel that never ends: refused
SPLIT_WINDOW = 4  # iterations of slow, contended progress before a loop is split
SPLIT_MIN = 256  # a loop's running lanes are not split into halves smaller than this
TURN = 1024  # iterations a split half runs before the next half's turn
_SEQUENTIAL = 4  # cells hit by more lanes than this in one op are folded per cell
# Ops every invocation of a workgroup or subgroup takes part in together: a loop holding
# one is never split.
_COLLECTIVE = (Barrier, Subgroup, CoopLoad, CoopFill, CoopMma, CoopStore)
_ATOMIC = {
    "Or": np.bitwise_or,
    "And": np.bitwise_and,
    "Xor": np.bitwise_xor,
    "Min": np.minimum,
    "Max": np.maximum,
    "Exchange": lambda old, v: v,
}
_AXIS_BUILTINS = ("GlobalInvocationId", "LocalInvocationId", "WorkgroupId")


class _Loop:
    __slots__ = ("broken", "continued")

    def __init__(self, lanes: int):
        self.broken = np.zeros(lanes, bool)
        self.continued = np.zeros(lanes, bool)


class Machine:
    """Runs one chunk of workgroups (`first` .. `first + count` in linear order)."""

    debug: list | None = None  # where vyre.debug.* ops append their records (reference/debug.py)

    def __init__(
        self,
        desc: KernelDescriptor,
        info: DescriptorInfo,
        buffers: dict[int, np.ndarray],
        uniforms: dict[int, np.ndarray],
        grid: tuple[int, int, int],
        first: int,
        count: int,
        subgroup_size: int = 32,
        budget: Budget | None = None,
        strict: bool = False,
    ):
        self.desc, self.info = desc, info
        self.strict = strict  # check each op's operands against its domain (strict.py)
        self.budget = budget if budget is not None else Budget(desc.id, None)
        self.root, self.root_lanes, self.can_split, self.contended = self, None, True, False
        view = view_of(desc, info)
        self.read_atomics = _read_atomics(view.body)
        self.buffers, self.uniforms = buffers, uniforms
        self.slots = {s.slot: s for s in desc.slots}
        wx, wy, wz = desc.workgroup_size
        per = wx * wy * wz
        self.lanes = lanes = per * count
        lane = np.arange(lanes, dtype=np.int64)
        local, group = lane % per, lane // per + first
        self.group_in_chunk = (group - first).astype(np.intp)
        self.lane = lane.astype(np.intp)
        lid = (local % wx, local // wx % wy, local // (wx * wy))
        wid = (group % grid[0], group // grid[0] % grid[1], group // (grid[0] * grid[1]))
        self.builtins = {
            "LocalInvocationId": [a.astype(np.uint32) for a in lid],
            "WorkgroupId": [a.astype(np.uint32) for a in wid],
            "GlobalInvocationId": [
                ((w * s + x) & 0xFFFFFFFF).astype(np.uint32)
                for w, s, x in zip(wid, desc.workgroup_size, lid)
            ],
            "vyre.num_workgroups": [self.full(np.uint32(g)) for g in grid],
        }
        self.memory: dict[int, tuple] = {}  # slot -> (flat array, cell base per lane or None, n)
        for s in desc.slots:
            ty = info.slot_types[s.slot]
            comps = (TYPES[ty].count,) if TYPES[ty].count > 1 else ()
            if TYPES[ty].matrix is not None:  # a matrix local: (rows, cols) per lane
                comps = TYPES[ty].matrix[1:]
            if s.memory_class == "Global":
                arr = buffers[s.slot]
                self.memory[s.slot] = (arr, None, len(arr))
            elif s.memory_class in ("Shared", "Scratch"):
                n = s.element_count
                rows, base = (
                    (count, self.group_in_chunk * n)
                    if s.memory_class == "Shared"
                    else (lanes, self.lane * n)
                )
                self.memory[s.slot] = (np.zeros((rows * n,) + comps, dtype_of(ty)), base, n)
        self.vals: dict[int, np.ndarray] = {}
        self.loops: list[_Loop] = []
        self.loop_index: dict[str, np.ndarray] = {}
        self.returned = np.zeros(lanes, bool)
        self.subgroups = Subgroups(lanes, per, subgroup_size)
        if strict:  # a Clz / Ctz of 0: lanes whose use of its result is an error (strict.py)
            self.clz_results, self.poison = clz_results(view, info.types), {}
        self.program = _compile(self, view.body)

    def full(self, value) -> np.ndarray:
        value = np.asarray(value)
        return np.broadcast_to(value, (self.lanes,) + value.shape)

    def run(self) -> None:
        with np.errstate(all="ignore"):
            self.body(self.program, np.ones(self.lanes, bool))

    # --- control ---------------------------------------------------------------------
    def live(self, mask: np.ndarray) -> np.ndarray:
        """`mask` without the lanes that returned or left the innermost loop's iteration."""
        mask = mask & ~self.returned
        if self.loops:
            top = self.loops[-1]
            mask &= ~(top.broken | top.continued)
        return mask

    def body(self, steps, mask: np.ndarray) -> None:
        if not mask.any():
            return
        vals = self.vals
        for fn, result in steps:
            if result is not None:
                vals[result] = fn(self, mask)
            else:
                if fn(self, mask):  # a control step: lanes may have left
                    mask = self.live(mask)
                    if not mask.any():
                        return

    @classmethod
    def subset(cls, parent: Machine, lanes: np.ndarray) -> Machine:
        """A machine of `parent`'s `lanes` (indices), sharing its memory (shared and scratch
        cells by each lane's base), for the halves of a split loop: it has no subgroup
        layout (the loop has no collective op) and runs the loops inside that loop's body
        in plain lockstep; the split loop reads the values it gathers (`_LoopSpec.outer`),
        and its returns are flushed into the root machine."""
        m = cls.__new__(cls)
        m.desc, m.info, m.slots = parent.desc, parent.info, parent.slots
        m.buffers, m.uniforms, m.budget = parent.buffers, parent.uniforms, parent.budget
        m.read_atomics, m.root = parent.read_atomics, parent.root
        m.can_split, m.contended, m.strict = False, False, parent.strict
        if m.strict:
            m.clz_results = parent.clz_results
            m.poison = {k: (bad[lanes], op) for k, (bad, op) in parent.poison.items()}
        m.root_lanes = lanes if parent.root_lanes is None else parent.root_lanes[lanes]
        m.lanes = int(lanes.size)
        m.builtins = {k: [np.asarray(a)[lanes] for a in v] for k, v in parent.builtins.items()}
        m.memory = {
            slot: (arr, None if base is None else base[lanes], n)
            for slot, (arr, base, n) in parent.memory.items()
        }
        m.vals, m.loops = {}, []
        m.loop_index = {k: v[lanes] for k, v in parent.loop_index.items()}
        m.returned = parent.returned[lanes]
        m.subgroups = _LaneIds(parent.subgroups.lane_id[lanes], parent.subgroups.size)
        return m

    def flush(self) -> None:
        """Hand a subset machine's returns to the root machine (its lanes are done here)."""
        if self.root_lanes is not None:
            self.root.returned[self.root_lanes] |= self.returned

    def run_loop(self, spec: _LoopSpec, mask: np.ndarray) -> None:
        """Run a loop for the lanes of `mask` to its end, in lockstep, splitting it when
        contention stalls it (module docstring)."""
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

    def endless(self):
        raise DispatchError(
            f"Kernel {self.desc.id!r}: a loop ran {MAX_LOOP_ITERATIONS} iterations without "
            "ending (the reference refuses kernels that do not terminate)"
        )

    # --- memory ----------------------------------------------------------------------
    def cells(self, slot: int, index: np.ndarray):
        """(flat array, cell per lane clamped into the slot, in-bounds mask)."""
        arr, base, n = self.memory[slot]
        ok = index < n
        clamped = np.minimum(index, max(n - 1, 0)).astype(np.intp)
        return arr, clamped if base is None else base + clamped, ok

    def atomic(self, aop: str, slot: int, index, args, ty, mask, read: bool) -> np.ndarray:
        """Apply an atomic for the lanes of `mask` in lane order; `read`: the kernel reads
        its old value (a collision then marks the machine contended)."""
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


class Budget:
    """The step budget of one dispatch: loop iterations summed over lanes, at most `limit`
    (None: no budget); spend() raises DispatchError past it."""

    __slots__ = ("kernel", "limit", "spent")

    def __init__(self, kernel: str, limit: int | None):
        self.kernel, self.limit, self.spent = kernel, limit, 0

    def spend(self, steps: int) -> None:
        self.spent += steps
        if self.limit is not None and self.spent > self.limit:
            raise DispatchError(
                f"Kernel {self.kernel!r}: the dispatch ran past its budget of {self.limit} "
                "steps (a step is one loop iteration of one invocation): it may never end; "
                f'raise the budget with get_device("{REFERENCE.name}", max_steps=N) or '
                "VYRE_CPU_MAX_STEPS=N"
            )


class _LaneIds:
    """What a subset machine keeps of the subgroup layout: each lane's id and the size."""

    __slots__ = ("lane_id", "size")

    def __init__(self, lane_id: np.ndarray, size: int):
        self.lane_id, self.size = lane_id, size


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


class _LoopSpec:
    """A compiled loop: its steps on one machine, its bodies (to compile on a subset), whether
    it may be split (no barrier, subgroup or matrix op inside) and the ids it reads from
    outside (gathered into a subset)."""

    __slots__ = ("name", "lo", "hi", "main", "cont", "bodies", "splittable", "outer")

    def __init__(self, m: Machine, name, lo, hi, bodies):
        self.name, self.lo, self.hi, self.bodies = name, lo, hi, bodies
        self.main = _compile(m, bodies[0])
        self.cont = _compile(m, bodies[1]) if len(bodies) == 2 else None
        defined, reads, collective = set(), set(), False
        for op in _walk(bodies):
            reads.update(_reads(op))
            if op.result is not None:
                defined.add(op.result)
            collective = collective or isinstance(op, _COLLECTIVE)
        self.splittable = not collective
        self.outer = tuple(sorted(reads - defined | ({hi} if hi is not None else set())))

    def on(self, m: Machine) -> _LoopSpec:
        """This loop compiled for the subset machine `m`."""
        spec = _LoopSpec.__new__(_LoopSpec)
        spec.name, spec.lo, spec.hi, spec.bodies = self.name, self.lo, self.hi, self.bodies
        spec.splittable, spec.outer = self.splittable, self.outer
        spec.main = _compile(m, self.bodies[0])
        spec.cont = _compile(m, self.bodies[1]) if len(self.bodies) == 2 else None
        return spec


class _LoopRun:
    """One loop running on one machine, resumable between iterations: `pending()` (the
    lanes that run the next iteration), `step(n)` (run it), `split()` (two halves)."""

    __slots__ = ("machine", "spec", "loop", "running", "i", "iterations", "history")

    def __init__(self, m: Machine, spec: _LoopSpec, running, i=None, iterations: int = 0):
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
            sub = Machine.subset(m, half)
            for v in spec.outer:
                sub.vals[v] = np.asarray(m.vals[v])[half]
            i = None if self.i is None else self.i[half]
            ones = np.ones(half.size, bool)
            runs.append(_LoopRun(sub, spec.on(sub), ones, i, self.iterations))
        return runs


def _walk(bodies):
    """Every op of `bodies` (views) and of their child bodies."""
    for b in bodies:
        for op in b.ops:
            yield op
        yield from _walk(b.children)


def _reads(op: OpView) -> tuple:
    """The operands of `op` that are SSA values (not slots, axes, pools or child bodies)."""
    got = _READS[op.__class__]
    return op.operands[got] if got is not None else ()


_ALL, _AFTER_SLOT = slice(None), slice(1, None)
# What of its operands each op class reads as values (None: none of them).
_READS = {
    Literal: None,
    Builtin: None,
    SubgroupBuiltin: None,
    LoopIndex: None,
    Binary: _ALL,
    Unary: _ALL,
    Fma: _ALL,
    Select: _ALL,
    Cast: _ALL,
    Bitcast: _ALL,
    Construct: _ALL,
    Extract: _ALL,
    Subgroup: _ALL,
    Load: _AFTER_SLOT,
    LoadUniform: None,
    Length: None,
    Store: _AFTER_SLOT,
    Atomic: _AFTER_SLOT,
    OrderedAtomic: _AFTER_SLOT,
    OrderedLoad: _AFTER_SLOT,
    OrderedStore: _AFTER_SLOT,
    Fence: None,
    CoopLoad: _AFTER_SLOT,
    CoopFill: _ALL,
    CoopMma: _ALL,
    CoopStore: _AFTER_SLOT,
    If: slice(0, 1),
    For: slice(0, 2),
    Loop: None,
    Break: None,
    Continue: None,
    Return: None,
    Barrier: None,
    Debug: None,
    Unknown: _ALL,
}


def _read_atomics(body: BodyView) -> frozenset:
    """The result ids of the atomics whose old value some op reads."""
    reads, atomics = set(), set()
    for op in _walk([body]):
        reads.update(_reads(op))
        if isinstance(op, (Atomic, OrderedAtomic)):
            atomics.add(op.result)
    return frozenset(atomics & reads)


# --- the body compiler --------------------------------------------------------------
# A step is (fn, result id): fn(machine, mask) returns the op's value; a step with no
# result returns True where lanes may have left (returns, breaks, continues, nested control).


def _compile(m: Machine, body: BodyView):
    steps, compiler = [], _Steps(m)
    for op in body.ops:
        step = compiler.visit(op, body)
        if step is not None:
            steps.append(strict_step(m, op, step, _reads(op)) if m.strict else step)
    return steps


def _value(m: Machine, op, key):
    ids = op.operands
    types = tuple(m.info.types[o] for o in ids)
    rule, res = RULES.get((key, types)), m.info.types[op.result]
    if rule is None:  # an op-table row without its reference rule (reference/values.py)
        name = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)) if k)
        raise DispatchError(f"the reference has no rule for {name} on ({', '.join(types)})")
    if len(ids) == 1:
        (a,) = ids
        return (lambda mm, mask: rule((mm.vals[a],), types, res)), op.result
    if len(ids) == 2:
        a, b = ids
        return (lambda mm, mask: rule((mm.vals[a], mm.vals[b]), types, res)), op.result
    return (lambda mm, mask: rule([mm.vals[o] for o in ids], types, res)), op.result


def _step_subgroup(m, op, name):
    ids = op.operands
    return (lambda mm, mask: mm.subgroups.apply(name, [mm.vals[o] for o in ids], mask)), op.result


def _constant(value, op):
    """A step whose value is `value` whatever the mask."""
    return (lambda mm, mask: value), op.result


class _Steps(Walker):
    """The step of each op class on machine `m` (`visit(op, body)`); an op whose value
    cannot change during a dispatch (a literal, an id, a uniform, a length) is computed
    into `m.vals` here, once per chunk, and has no step (None)."""

    def __init__(self, m: Machine):
        self.m = m

    def invariant(self, op, value) -> None:
        self.m.vals[op.result] = value

    def visit_literal(self, op, body):
        m = self.m
        self.invariant(op, m.full(np.asarray(op.value.args[0], dtype_of(m.info.types[op.result]))))

    def visit_builtin(self, op, body):
        value = self.m.builtins[op.name][op.axis]
        if op.name in _AXIS_BUILTINS:
            return self.invariant(op, value)
        return _constant(value, op)  # vyre.num_workgroups

    def visit_subgroup_builtin(self, op, body):
        m, name = self.m, op.name
        if name == "SubgroupLocalId":
            return self.invariant(op, m.subgroups.lane_id)
        if name == "SubgroupSize":
            return self.invariant(op, m.full(np.uint32(m.subgroups.size)))
        sg = m.subgroups
        return _constant(sg.subgroup_id if name == "vyre.subgroup_id" else m.full(sg.count), op)

    def visit_load_uniform(self, op, body):
        self.invariant(op, self.m.full(self.m.uniforms[op.slot]))

    def visit_length(self, op, body):
        self.invariant(op, self.m.full(np.uint32(self.m.memory[op.slot][2])))

    def visit_value(self, op, body):
        return _value(self.m, op, op.key)

    visit_binary = visit_unary = visit_fma = visit_select = visit_value

    def visit_typed(self, op, body):
        """Cast, Bitcast, Construct: the rule of the row of their result type."""
        return _value(self.m, op, (op.key[0], self.m.info.types[op.result]))

    visit_cast = visit_bitcast = visit_construct = visit_typed

    def visit_subgroup(self, op, body):
        return _step_subgroup(self.m, op, op.name)

    def visit_extract(self, op, body):
        a, k = op.a, op.component
        return (lambda mm, mask: mm.vals[a][:, k]), op.result

    def visit_loop_index(self, op, body):
        name = op.var
        return (lambda mm, mask: mm.loop_index[name]), op.result

    def visit_load(self, op, body):
        return _step_load(self.m, op)

    def visit_store(self, op, body):
        return _step_store(self.m, op)

    def visit_atomic(self, op, body):
        return _step_atomic(self.m, op)

    # Memory scopes and orders (the module docstring): as Atomic, loads and stores.
    visit_ordered_atomic, visit_ordered_load, visit_ordered_store = (
        visit_atomic,
        visit_load,
        visit_store,
    )

    def visit_fence(self, op, body):
        return (lambda mm, mask: False), None  # every op is already in one total order

    def visit_coop_load(self, op, body):
        return coop.step_load(self.m, op)

    def visit_coop_fill(self, op, body):
        return coop.step_fill(self.m, op)

    def visit_coop_mma(self, op, body):
        return coop.step_mma(self.m, op)

    def visit_coop_store(self, op, body):
        return coop.step_store(self.m, op)

    def visit_debug(self, op, body):
        return step_debug(self.m, op)

    def visit_if_(self, op, body):
        m, cond = self.m, op.cond
        then = _compile(m, body.children[op.then])
        other = _compile(m, body.children[op.other]) if op.other is not None else None

        def if_(mm, mask):
            c = mm.vals[cond]
            mm.body(then, mask & c)
            if other is not None:
                mm.body(other, mm.live(mask & ~c))
            return True

        return if_, None

    def visit_for_(self, op, body):
        spec = _LoopSpec(self.m, op.var, op.lo, op.hi, (body.children[op.body],))

        def for_(mm, mask):
            mm.run_loop(spec, mask)
            return True

        return for_, None

    def visit_loop(self, op, body):
        spec = _LoopSpec(self.m, None, None, None, tuple(body.children[c] for c in op.children))

        def loop(mm, mask):
            mm.run_loop(spec, mask)
            return True

        return loop, None

    def visit_break_(self, op, body):
        def brk(mm, mask):
            mm.loops[-1].broken |= mask
            return True

        return brk, None

    def visit_continue_(self, op, body):
        def cont(mm, mask):
            mm.loops[-1].continued |= mask
            return True

        return cont, None

    def visit_return_(self, op, body):
        def ret(mm, mask):
            mm.returned |= mask
            return True

        return ret, None

    def visit_barrier(self, op, body):
        return (lambda mm, mask: False), None  # lockstep: every lane reaches it before any passes


def _fixed_cells(m: Machine, slot: int, index: int):
    """Where a constant index lands: (flat array, cells, in-bounds mask), or None if the
    index is not a literal. A scalar local (one Scratch element at index 0) is the common case."""
    value = m.info.constants.get(index)
    if value is None:
        return None
    return m.cells(slot, np.full(m.lanes, value, np.uint32))


def _scratch(m: Machine, slot: int) -> bool:
    return m.slots[slot].memory_class == "Scratch"


def _step_load(m, op):
    slot, index = op.slot, op.element
    ty = m.info.types[op.result]
    arr, base, n = m.memory[slot]
    zero = np.zeros((), dtype_of(ty))
    if n == 0:
        zeros = m.full(np.zeros(arr.shape[1:], dtype_of(ty)))
        return (lambda mm, mask: zeros), op.result
    vector = TYPES[ty].count > 1
    fixed = _fixed_cells(m, slot, index)
    if fixed is not None:
        farr, fcell, fok = fixed
        if fok.all():
            if m.root_lanes is None and base is not None and n == 1 and _scratch(m, slot):
                return (lambda mm, mask: farr.copy()), op.result  # a scalar local
            return (lambda mm, mask: farr[fcell]), op.result
        value = m.full(np.zeros(arr.shape[1:], dtype_of(ty)))
        return (lambda mm, mask: value), op.result  # always out of bounds: 0

    def load(mm, mask):
        arr, cell, ok = mm.cells(slot, mm.vals[index])
        return np.where(ok[:, None] if vector else ok, arr[cell], zero)

    return load, op.result


def _step_store(m, op):
    slot, index, value = op.slot, op.element, op.value
    arr, base, n = m.memory[slot]
    shape = (m.lanes,) + arr.shape[1:]
    fixed = _fixed_cells(m, slot, index)
    if fixed is not None:
        farr, fcell, fok = fixed
        if not fok.any():
            return (lambda mm, mask: False), None  # always out of bounds: dropped
        if m.root_lanes is None and base is not None and n == 1 and _scratch(m, slot):
            where = (slice(None),) + (None,) * (farr.ndim - 1)

            def store_local(mm, mask):
                np.copyto(farr, mm.vals[value], where=mask[where])
                return False

            return store_local, None

        def store_fixed(mm, mask):
            farr[fcell[mask]] = np.broadcast_to(mm.vals[value], shape)[mask]
            return False

        return store_fixed, None

    def store(mm, mask):
        arr, cell, ok = mm.cells(slot, mm.vals[index])
        pick = mask & ok
        arr[cell[pick]] = np.broadcast_to(mm.vals[value], shape)[pick]
        return False

    return store, None


def _step_atomic(m, op):
    # Atomic, or a vyre.atomic (its scope and order: the module docstring): `op.name` is the
    # AtomicOp either way
    aop, ty = op.name, m.info.types[op.result]
    slot, index, args = op.slot, op.element, op.args
    read = op.result in m.read_atomics

    def atomic(mm, mask):
        return mm.atomic(aop, slot, mm.vals[index], [mm.vals[a] for a in args], ty, mask, read)

    return atomic, op.result
