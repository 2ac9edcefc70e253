"""The body compiler of the reference machine: each op of a body made into a step.

A body is compiled once per machine into a list of steps, at most one per op (`_compile`):
a step is (fn, result id), fn(machine, mask) a closure holding the op's operand ids and
its rule (reference/values.py) that returns the op's value for every lane (the machine
reads it for the lanes of the mask only); a step with no result returns True where lanes
may have left (returns, breaks, continues, nested control). `_Steps` is the
`descriptor.view.Walker` that makes them, one method per op class; values that cannot
change during a dispatch (literals, ids, uniforms, lengths) are computed into
`Machine.vals` once per chunk and have no step, so a loop iteration costs one call per op.
Loads and stores are memory.py's steps, atomics atomics.py's, cooperative matrices
matrices.py's, debug ops debug.py's; a strict machine's steps are wrapped in their checks
(strict.py) here, and only there: a machine that is not strict runs the bare steps.

A loop compiles into a `_LoopSpec` (its steps, the ids it reads from outside, whether it
may be split: loops.py), which compiles its bodies again for the subset machine of a split
loop. `_READS` says which operands of each op class are SSA values: what a split loop
gathers, the uses strict mode checks for a Clz / Ctz of 0 (strict.py), and which atomics'
old values a kernel reads (`_read_atomics`).
"""

from __future__ import annotations

import numpy as np

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
    Checked,
    Unary,
    Unknown,
    Walker,
)
from vyre_build.core.errors import DispatchError
from vyre_build.reference import matrices as coop
from vyre_build.reference.atomics import _step_atomic
from vyre_build.reference.debug import step_debug
from vyre_build.reference.memory import _step_load, _step_store
from vyre_build.reference.strict import strict_step
from vyre_build.reference.values import RULES, dtype_of


# Ops every invocation of a workgroup or subgroup takes part in together: a loop holding
# one is never split.
_COLLECTIVE = (Barrier, Subgroup, CoopLoad, CoopFill, CoopMma, CoopStore)
_AXIS_BUILTINS = ("GlobalInvocationId", "LocalInvocationId", "WorkgroupId")


class _LoopSpec:
    """A compiled loop: its steps on one machine, its bodies (to compile on a subset), whether
    it may be split (no barrier, subgroup or matrix op inside) and the ids it reads from
    outside (gathered into a subset)."""

    __slots__ = ("name", "lo", "hi", "main", "cont", "bodies", "splittable", "outer")

    def __init__(self, m, name, lo, hi, bodies):
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

    def on(self, m) -> _LoopSpec:
        """This loop compiled for the subset machine `m`."""
        spec = _LoopSpec.__new__(_LoopSpec)
        spec.name, spec.lo, spec.hi, spec.bodies = self.name, self.lo, self.hi, self.bodies
        spec.splittable, spec.outer = self.splittable, self.outer
        spec.main = _compile(m, self.bodies[0])
        spec.cont = _compile(m, self.bodies[1]) if len(self.bodies) == 2 else None
        return spec


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
    Checked: None,
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


def _compile(m, body: BodyView):
    steps, compiler = [], _Steps(m)
    for op in body.ops:
        step = compiler.visit(op, body)
        if step is not None:
            steps.append(strict_step(m, op, step, _reads(op)) if m.strict else step)
    return steps


def _value(m, op, key):
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

    def __init__(self, m):
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

    def visit_checked(self, op, body):
        # the reference keeps the bounds rule itself (it runs the descriptor before
        # legalize, which alone writes vyre.checked)
        self.invariant(op, self.m.full(np.bool_(True)))

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

    # Memory scopes and orders (machine.py's docstring): as Atomic, loads and stores.
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
