"""The reference machine: a validated descriptor executed on the CPU, vectorised over lanes.

Every invocation of a chunk of workgroups is a lane of one numpy array per SSA value
(shape (lanes,), or (lanes, n) for an n-vector). Ops run in lockstep over all lanes, with
a boolean mask for the lanes that execute them (divergent ifs, loops, early returns), so
an op is one numpy call, never a Python loop per invocation. Lockstep is one of the
schedules a GPU may choose: barriers in uniform control flow hold by construction, and a
load by every lane happens before the store that follows it.

Each body is compiled once into a list of steps (a closure per op holding its operand ids
and its rule); values that cannot change during a dispatch (literals, ids, uniforms,
lengths) are computed once per chunk, so a loop iteration costs one call per op.

Memory: storage buffers are the caller's arrays (stores and atomics write them in place,
out of bounds dropped; loads out of bounds give 0); shared arrays are (workgroups, N) per
chunk, zeroed for each workgroup; scratch is (lanes, N). Atomics apply lane by lane in lane
order (a rank loop: each pass updates every cell at most once).
"""

from __future__ import annotations

import numpy as np

from vyre_build.descriptor import DescriptorInfo, KernelDescriptor
from vyre_build.descriptor.ops import op_key
from vyre_build.descriptor.types import TYPES
from vyre_build.errors import DispatchError
from vyre_build.reference import matrices as coop
from vyre_build.reference.debug import step_debug
from vyre_build.reference.subgroups import Subgroups
from vyre_build.reference.values import RULES, dtype_of

__all__ = ["Machine", "MAX_LOOP_ITERATIONS"]

MAX_LOOP_ITERATIONS = 1 << 24  # a loop past this is a kernel that never ends: refused
_ATOMIC = {
    "Or": np.bitwise_or,
    "And": np.bitwise_and,
    "Xor": np.bitwise_xor,
    "Min": np.minimum,
    "Max": np.maximum,
    "Exchange": lambda old, v: v,
}
# Ops whose value is the same for the whole dispatch: computed once per chunk.
_INVARIANT = frozenset(
    {
        "Literal",
        "GlobalInvocationId",
        "LocalInvocationId",
        "WorkgroupId",
        "LoadConstant",
        "BufferLength",
        "SubgroupLocalId",
        "SubgroupSize",
    }
)
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
    ):
        self.desc, self.info = desc, info
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
        self.program = _compile(self, desc.body)

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

    def for_loop(self, name, lo, hi, child, mask) -> None:
        lo, hi = np.array(self.vals[lo]), self.vals[hi]
        loop = _Loop(self.lanes)
        self.loops.append(loop)
        i, one = lo, lo.dtype.type(1)
        running = mask.copy()
        for _ in range(MAX_LOOP_ITERATIONS):
            running &= (i < hi) & ~self.returned
            if not running.any():
                break
            loop.continued[:] = False
            self.loop_index[name] = i
            self.body(child, running)
            running &= ~loop.broken & ~self.returned
            i = np.where(running, i + one, i)
        else:
            self.endless()
        self.loops.pop()

    def loop(self, main, cont, mask) -> None:
        loop = _Loop(self.lanes)
        self.loops.append(loop)
        running = mask & ~self.returned
        for _ in range(MAX_LOOP_ITERATIONS):
            if not running.any():
                break
            loop.continued[:] = False
            self.body(main, running)
            running &= ~loop.broken & ~self.returned
            if cont is not None:
                loop.continued[:] = False  # the continuing block runs for continued lanes too
                self.body(cont, running)
        else:
            self.endless()
        self.loops.pop()

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

    def atomic(self, aop: str, slot: int, index, args, ty, mask) -> np.ndarray:
        arr, cell, ok = self.cells(slot, index)
        old = np.zeros(self.lanes, dtype_of(ty))
        lanes = np.nonzero(mask & ok)[0]
        if lanes.size == 0:
            return old
        args = [np.broadcast_to(a, (self.lanes,))[lanes] for a in args]
        cells = cell[lanes]
        order = np.argsort(cells, kind="stable")  # lane order within each cell
        cells, lanes = cells[order], lanes[order]
        args = [a[order] for a in args]
        start = np.r_[0, np.flatnonzero(cells[1:] != cells[:-1]) + 1]
        rank = np.arange(cells.size) - np.repeat(start, np.diff(np.r_[start, cells.size]))
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


# --- the body compiler --------------------------------------------------------------
# A step is (fn, result id): fn(machine, mask) returns the op's value; a step with no
# result returns True where lanes may have left (returns, breaks, continues, nested control).


def _compile(m: Machine, body):
    steps = []
    for op in body.ops:
        name = op.kind.name
        if name in _INVARIANT:
            m.vals[op.result] = _invariant(m, op, body)
            continue
        steps.append(_STEPS[name](m, op, body))
    return steps


def _invariant(m: Machine, op, body) -> np.ndarray:
    name = op.kind.name
    if name == "Literal":
        lit = body.literals[op.operands[0]]
        return m.full(np.asarray(lit.args[0], dtype_of(m.info.types[op.result])))
    if name in _AXIS_BUILTINS:
        return m.builtins[name][op.operands[0]]
    if name == "LoadConstant":
        return m.full(m.uniforms[op.operands[0]])
    if name == "SubgroupLocalId":
        return m.subgroups.lane_id
    if name == "SubgroupSize":
        return m.full(np.uint32(m.subgroups.size))
    return m.full(np.uint32(m.memory[op.operands[0]][2]))  # BufferLength


def _value(m: Machine, op, key):
    ids = op.operands
    types = tuple(m.info.types[o] for o in ids)
    rule, res = RULES[(key, types)], m.info.types[op.result]
    if len(ids) == 1:
        (a,) = ids
        return (lambda mm, mask: rule((mm.vals[a],), types, res)), op.result
    if len(ids) == 2:
        a, b = ids
        return (lambda mm, mask: rule((mm.vals[a], mm.vals[b]), types, res)), op.result
    return (lambda mm, mask: rule([mm.vals[o] for o in ids], types, res)), op.result


def _step_value(m, op, body):
    key = op_key(op.kind)
    if key[0] == "Subgroup":
        return _step_subgroup(m, op, key[1])
    return _value(m, op, key)


def _step_subgroup(m, op, name):
    ids = op.operands
    return (lambda mm, mask: mm.subgroups.apply(name, [mm.vals[o] for o in ids], mask)), op.result


def _step_cast(m, op, body):
    return _value(m, op, ("Cast", m.info.types[op.result]))


def _step_opaque_expr(m, op, body):
    _, kind, payload = op.kind.args
    ty = m.info.types[op.result]
    if kind == "vyre.num_workgroups":
        value = m.builtins[kind][op.operands[0]]
        return (lambda mm, mask: value), op.result
    if kind == "vyre.bitcast":
        return _value(m, op, ("Bitcast", ty))
    if kind == "vyre.subgroup":
        return _step_subgroup(m, op, payload.decode("ascii"))
    if kind == "vyre.vec":
        return _value(m, op, ("Construct", ty))
    if kind in _COOP_STEPS:
        return _COOP_STEPS[kind](m, op)
    (a,), k = op.operands, payload[0]  # vyre.extract
    return (lambda mm, mask: mm.vals[a][:, k]), op.result


def _step_loop_index(m, op, body):
    name = op.kind.args[0]
    return (lambda mm, mask: mm.loop_index[name]), op.result


def _fixed_cells(m: Machine, slot: int, index: int):
    """Where a constant index lands: (flat array, cells, in-bounds mask), or None if the
    index is not a literal. A scalar local (one Scratch element at index 0) is the common case."""
    value = m.info.constants.get(index)
    if value is None:
        return None
    return m.cells(slot, np.full(m.lanes, value, np.uint32))


def _step_load(m, op, body):
    slot, index = op.operands
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
            if base is not None and m.slots[slot].memory_class == "Scratch" and n == 1:
                return (lambda mm, mask: farr.copy()), op.result  # a scalar local
            return (lambda mm, mask: farr[fcell]), op.result
        value = m.full(np.zeros(arr.shape[1:], dtype_of(ty)))
        return (lambda mm, mask: value), op.result  # always out of bounds: 0

    def load(mm, mask):
        arr, cell, ok = mm.cells(slot, mm.vals[index])
        return np.where(ok[:, None] if vector else ok, arr[cell], zero)

    return load, op.result


def _step_store(m, op, body):
    slot, index, value = op.operands
    arr, base, n = m.memory[slot]
    shape = (m.lanes,) + arr.shape[1:]
    fixed = _fixed_cells(m, slot, index)
    if fixed is not None:
        farr, fcell, fok = fixed
        if not fok.any():
            return (lambda mm, mask: False), None  # always out of bounds: dropped
        if base is not None and m.slots[slot].memory_class == "Scratch" and n == 1:
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


def _step_atomic(m, op, body):
    aop, ty = op.kind.args[0].name, m.info.types[op.result]
    slot, index, *args = op.operands
    return (
        lambda mm, mask: mm.atomic(aop, slot, mm.vals[index], [mm.vals[a] for a in args], ty, mask)
    ), op.result


def _step_if(m, op, body):
    cond = op.operands[0]
    then = _compile(m, body.children[op.operands[1]])
    other = _compile(m, body.children[op.operands[2]]) if len(op.operands) == 3 else None

    def if_(mm, mask):
        c = mm.vals[cond]
        mm.body(then, mask & c)
        if other is not None:
            mm.body(other, mm.live(mask & ~c))
        return True

    return if_, None


def _step_for(m, op, body):
    lo, hi, child = op.operands
    name, steps = op.kind.args[0], _compile(m, body.children[child])

    def for_(mm, mask):
        mm.for_loop(name, lo, hi, steps, mask)
        return True

    return for_, None


def _step_node(m, op, body):
    kind = op.kind.args[0]
    if kind == "vyre.coop.store":
        return coop.step_store(m, op)
    if kind.startswith("vyre.debug."):
        return step_debug(m, op)
    if kind == "vyre.break":

        def brk(mm, mask):
            mm.loops[-1].broken |= mask
            return True

        return brk, None
    if kind == "vyre.continue":

        def cont(mm, mask):
            mm.loops[-1].continued |= mask
            return True

        return cont, None
    main = _compile(m, body.children[op.operands[0]])
    cont_steps = _compile(m, body.children[op.operands[1]]) if len(op.operands) == 2 else None

    def loop(mm, mask):
        mm.loop(main, cont_steps, mask)
        return True

    return loop, None


def _step_return(m, op, body):
    def ret(mm, mask):
        mm.returned |= mask
        return True

    return ret, None


def _step_barrier(m, op, body):
    return (lambda mm, mask: False), None  # lockstep: every lane reaches it before any passes


_COOP_STEPS = {
    "vyre.coop.load": coop.step_load,
    "vyre.coop.fill": coop.step_fill,
    "vyre.coop.mma": coop.step_mma,
}
_STEPS = {
    "MatrixMma": lambda m, op, body: coop.step_mma(m, op),
    "BinOpKind": _step_value,
    "SubgroupAdd": _step_value,
    "SubgroupBallot": _step_value,
    "SubgroupShuffle": _step_value,
    "UnOpKind": _step_value,
    "Fma": _step_value,
    "Select": _step_value,
    "Cast": _step_cast,
    "OpaqueExpr": _step_opaque_expr,
    "LoopIndex": _step_loop_index,
    "LoadGlobal": _step_load,
    "LoadShared": _step_load,
    "StoreGlobal": _step_store,
    "StoreShared": _step_store,
    "Atomic": _step_atomic,
    "StructuredIfThen": _step_if,
    "StructuredIfThenElse": _step_if,
    "StructuredForLoop": _step_for,
    "OpaqueNode": _step_node,
    "Return": _step_return,
    "Barrier": _step_barrier,
}
