"""Range analysis: the bounds checks a descriptor provably does not need.

An interval per integer SSA value (from literals, local ids and the workgroup size, loop
bounds, masks, shifts, `%` by a constant, min/max, casts) and, per scope, the facts the
dominating guards establish: `if i < len(buf)` (also `i < n` with `n < len(buf)`, a
`for i in range(len(buf))`, and the rest of a body after `if i >= len(buf): return`).
Locals kept in Scratch slots and Shared arrays get the join of every value stored into
them (zero included), to a fixpoint. An access is proved in bounds when its index is
below the slot's length for every execution: below `len(buf)` by a fact for a storage
buffer, below N by its interval for a Shared/Scratch array of N elements.

A cooperative-matrix load or store of a Shared array (descriptor.matrices) is proved in
place when its stride is a constant, its offset's interval is non-negative, the fragment
rule holds at the interval's top, and the offset is a known multiple of the rule's
alignment (a power of two followed through literals, + - * << & and select).

A Shared array needs no zeroing on entry when every read of it comes after a covering
store (element `flat local id`, every element below N written) and then a barrier at
the top of the same or an enclosing body: a barrier stands in uniform control flow, so
every invocation made that store, and no zero can be observed.

An integer division whose divisor's interval holds neither 0 nor (with an i32 dividend
that may be i32::MIN) -1, a shift or rotation whose amount's interval is within [0, 31],
and a clz/ctz whose operand's interval excludes 0 are proved safe (`Proofs.safe`).

`analyze(view, types, slot_types)` returns `Proofs`, ops named by their view index
(`descriptor.view`); `descriptor.legalize` writes no guard for exactly those. Sound by construction: every rule is a superset of what wrapping u32/i32 arithmetic can give.
The walk and the proofs are here; a value's interval and facts are
`ranges_values.ValueRanges` (a mixin of the analysis), the Shared arrays that need no
zeroing `ranges_unzeroed`.
"""

from __future__ import annotations

from dataclasses import dataclass

from vyre_build.descriptor.matrices import alignment, in_place
from vyre_build.descriptor.ranges_unzeroed import unzeroed
from vyre_build.descriptor.ranges_values import FULL, I32, U32, ValueRanges, _Scope
from vyre_build.descriptor.types import MATRICES, TYPES
from vyre_build.descriptor.view import (
    BodyView,
    Break,
    Continue,
    DescriptorView,
    If,
    Length,
    Load,
    OpView,
    Return,
    Store,
    Walker,
)

__all__ = ["Proofs", "analyze"]

_WIDEN_AFTER = 8  # fixpoint passes before an unstable slot range goes to the full type
_MAX_PASSES = 64  # then every slot goes to its full type, for one last (sound) pass


@dataclass(frozen=True)
class Proofs:
    in_bounds: frozenset[int]  # indices (view.OpView.index) of the accesses proved in range
    unzeroed: frozenset[int]  # Shared slots fully written before any read: no zeroing on entry
    # value ops whose pinned guard is unnecessary (descriptor.legalize): an integer divisor
    # never 0 (nor -1 where the i32 dividend may be i32::MIN), a shift or rotation amount
    # in [0, 31], a clz/ctz operand never 0
    safe: frozenset[int] = frozenset()


def analyze(view: DescriptorView, types: dict[int, str], slot_types: dict[int, str]) -> Proofs:
    """The proofs for a descriptor's view (validated; `types` and `slot_types` are its
    DescriptorInfo's)."""
    a = _Analysis(view, types, slot_types)
    for passes in range(_MAX_PASSES):
        before = dict(a.slot_ranges)
        a.run(widen=passes >= _WIDEN_AFTER)
        if a.slot_ranges == before:
            break
    else:  # not stable yet (a long chain of locals): every slot at its type's full range
        a.slot_ranges = {slot: FULL[slot_types[slot]] for slot in a.slot_ranges}
        a.run(widen=True)
    return Proofs(frozenset(a.proved), frozenset(unzeroed(view, a.flat)), frozenset(a.safe))


def _join(x, y):
    if x is None:
        return y
    if y is None:
        return x
    return (min(x[0], y[0]), max(x[1], y[1]))


class _Analysis(Walker, ValueRanges):
    """One pass of the analysis: `visit(op, body, scope, loops)` per op (one method per op
    class), `body` over a body's ops."""

    def __init__(self, view: DescriptorView, types, slot_types):
        desc = view.desc
        self.view, self.desc, self.types, self.slot_types = view, desc, types, slot_types
        self.slots = {s.slot: s for s in desc.slots}
        # Locals and shared arrays start zeroed: the bottom of the fixpoint is their zero.
        self.slot_ranges: dict[int, tuple] = {
            s.slot: (0, 0)
            for s in desc.slots
            if s.memory_class in ("Shared", "Scratch") and slot_types[s.slot] in FULL
        }
        self.defs: dict[int, OpView] = {}  # SSA id -> defining op
        self.lits: dict[int, int] = {}  # SSA id -> the value of an integer literal
        self.alias: dict[int, int] = {}  # a local's reload -> the value it holds
        self._writes: dict[int, frozenset] = {}  # id(body) -> Scratch slots stored inside
        self.flat: dict[int, tuple] = {}  # SSA id -> affine form in local ids (cx, cy, cz, c0)
        self.locals = {
            s.slot for s in desc.slots if s.memory_class == "Scratch" and s.element_count == 1
        }

    def run(self, widen: bool) -> None:
        self.widen = widen
        self.proved: set[int] = set()
        self.safe: set[int] = set()
        self.alias = {}
        self.base: dict[int, tuple] = {}
        self.stored: dict[int, tuple] = {}
        self.body(self.view.body, _Scope({}, set()), {})
        for slot, r in self.stored.items():
            ty = self.slot_types[slot]
            if ty not in FULL:
                continue
            joined = _join(self.slot_ranges.get(slot), _join(r, (0, 0)))
            if widen and joined != self.slot_ranges.get(slot):
                joined = FULL[ty]
            self.slot_ranges[slot] = joined

    def canon(self, vid):
        """The value a reload of a local stands for (the same value as the local's last
        store or first load in straight-line code), else `vid` itself."""
        return self.alias.get(vid, vid)

    def range(self, scope, vid):
        got = scope.ranges.get(self.canon(vid))
        return got if got is not None else self.base.get(vid)

    def writes(self, b: BodyView) -> frozenset:
        """The single-value Scratch slots (locals) stored anywhere in `b`."""
        got = self._writes.get(id(b))
        if got is None:
            out = {
                op.slot
                for op in b.ops
                if isinstance(op, Store) and op.shared and op.slot in self.locals
            }
            for child in b.children:
                out |= self.writes(child)
            got = self._writes[id(b)] = frozenset(out)
        return got

    # --- the walk ----------------------------------------------------------------------
    def body(self, b: BodyView, scope: _Scope, loops: dict) -> None:
        for op in b.ops:
            self.visit(op, b, scope, loops)

    def define(self, op: OpView, scope: _Scope, r) -> None:
        """Record a value op: its definition, its interval `r` (None: not an integer of
        FULL, or nothing known) and the facts it carries."""
        self.defs[op.result] = op
        if r is not None:
            self.base[op.result] = r
        if self.types.get(op.result) == "u32":
            self.facts(op, scope)

    def opaque(self, op, b, scope, loops) -> None:
        """A value op the analysis knows nothing of: its type's full range."""
        self.define(op, scope, self.typed(op))

    visit_subgroup_builtin = visit_fma = visit_construct = visit_extract = visit_subgroup = opaque
    visit_checked = opaque
    visit_load_uniform = visit_coop_fill = visit_coop_mma = opaque

    def visit_literal(self, op, b, scope, loops) -> None:
        r = None
        if self.typed(op) is not None:
            v = op.value.args[0]
            self.lits[op.result] = v
            r = (v, v)
        self.define(op, scope, r)

    def visit_builtin(self, op, b, scope, loops) -> None:
        if op.name != "LocalInvocationId":
            return self.opaque(op, b, scope, loops)
        axis = op.axis
        self.flat[op.result] = tuple(1 if k == axis else 0 for k in range(3)) + (0,)
        self.define(op, scope, (0, self.desc.workgroup_size[axis] - 1))

    def visit_loop_index(self, op, b, scope, loops) -> None:
        r = None
        if self.typed(op) is not None:
            index, hi = loops[op.var]
            below = {s for (v, s) in scope.below if v == hi}
            hop = self.defs.get(hi)
            if isinstance(hop, Length):
                below.add(hop.slot)
            scope.below.update((op.result, s) for s in below)
            r = index
        self.defs[op.result] = op  # no symbolic facts beyond those above
        if r is not None:
            self.base[op.result] = r

    def visit_length(self, op, b, scope, loops) -> None:
        s = self.slots[op.slot]
        n = s.element_count if s.memory_class != "Global" else None
        self.define(op, scope, (n, n) if n is not None else U32)

    def visit_cast(self, op, b, scope, loops) -> None:
        full = self.typed(op)
        r = None
        if full is not None:
            src = self.types[op.a]
            if src == "bool":
                r = (0, 1)
            elif src in FULL:
                lo, hi = self.operand_range(scope, op.a)
                r = (lo, hi) if full[0] <= lo and hi <= full[1] else full
            else:
                r = full
        self.define(op, scope, r)

    visit_bitcast = visit_cast

    def visit_select(self, op, b, scope, loops) -> None:
        r = None
        if self.typed(op) is not None:
            r = _join(self.operand_range(scope, op.if_true), self.operand_range(scope, op.if_false))
        self.define(op, scope, r)

    def visit_unary(self, op, b, scope, loops) -> None:
        full = self.typed(op)
        r = full
        if full is not None and op.name in ("Popcount", "Clz", "Ctz"):
            r = (0, 32)
            if op.name != "Popcount":
                lo, hi = self.operand_range(scope, op.operands[0])
                if lo > 0 or hi < 0:  # never 0: clz/ctz need no guard
                    self.safe.add(op.index)
        self.define(op, scope, r)

    def visit_binary(self, op, b, scope, loops) -> None:
        if self.typed(op):
            self.check_value(op, scope)
        self.define(op, scope, self.binary_range(op, scope) if self.typed(op) else None)

    def visit_load(self, op, b, scope, loops) -> None:
        self.track_local(op, scope)
        full = self.typed(op)
        r = full
        if full is not None and op.shared:
            r = self.slot_ranges.get(op.slot, full)
        self.define(op, scope, r)
        self.check(op, scope, "load")

    def visit_store(self, op, b, scope, loops) -> None:
        self.track_local(op, scope)
        self.check(op, scope, "store")

    def visit_atomic(self, op, b, scope, loops) -> None:
        self.define(op, scope, self.typed(op))
        self.check(op, scope, "atomic")

    def visit_ordered_atomic(self, op, b, scope, loops) -> None:  # as Atomic
        self.define(op, scope, self.typed(op))
        self.check(op, scope, "atomic")

    def visit_ordered_load(self, op, b, scope, loops) -> None:  # as Atomic
        self.define(op, scope, self.typed(op))
        self.check(op, scope, "atomic")

    def visit_ordered_store(self, op, b, scope, loops) -> None:  # as Atomic
        self.check(op, scope, "atomic")

    def visit_coop_load(self, op, b, scope, loops) -> None:
        self.define(op, scope, self.typed(op))
        self.check_fragment(op, scope, self.types[op.result])

    def visit_coop_store(self, op, b, scope, loops) -> None:
        self.check_fragment(op, scope, self.types[op.value])

    def nothing(self, op, b, scope, loops) -> None:
        """A statement with no interval, no access and no child body."""

    visit_fence = visit_break_ = visit_continue_ = visit_return_ = visit_barrier = visit_debug = (
        nothing
    )

    def visit_if_(self, op, b, scope, loops) -> None:
        then = scope.child()
        self.assume(op.cond, True, then)
        self.body(b.children[op.then], then, loops)
        if op.other is not None:
            other = scope.child()
            self.assume(op.cond, False, other)
            self.body(b.children[op.other], other, loops)
        # The rest of this body runs only where an arm that always exits was not taken.
        if _exits(b.children[op.then]):
            self.assume(op.cond, False, scope)
        elif op.other is not None and _exits(b.children[op.other]):
            self.assume(op.cond, True, scope)
        for child in op.children:
            scope.forget(self.writes(b.children[child]))

    def visit_for_(self, op, b, scope, loops) -> None:
        lo, hi, child = op.lo, op.hi, op.body
        ty = self.types[lo]
        rl, rh = self.range(scope, lo) or FULL[ty], self.range(scope, hi) or FULL[ty]
        index = (rl[0], max(rl[0], rh[1] - 1))
        inner = scope.child(forget=self.writes(b.children[child]))
        self.body(b.children[child], inner, {**loops, op.var: (index, hi)})
        scope.forget(self.writes(b.children[child]))

    def visit_loop(self, op, b, scope, loops) -> None:
        stored = frozenset().union(*(self.writes(b.children[c]) for c in op.children))
        for child in op.children:  # the back edge: no local stored in the loop keeps a value
            self.body(b.children[child], scope.child(forget=stored), loops)
        scope.forget(stored)

    def track_local(self, op, scope) -> None:
        """Value numbering of locals: a reload with no store since aliases the value. Only
        an access at the literal index 0 is the local's (a one-element array indexed
        anywhere else reads 0 and writes nothing): a store elsewhere forgets the value."""
        if not op.shared or op.slot not in self.locals:
            return
        at_zero = self.lits.get(self.canon(op.element)) == 0
        if isinstance(op, Load):
            if not at_zero:
                return
            held = scope.held.get(op.slot)
            if held is not None:
                self.alias[op.result] = held
            else:
                scope.held[op.slot] = op.result
        elif at_zero:
            scope.held[op.slot] = self.canon(op.value)
        else:
            scope.held.pop(op.slot, None)

    # --- proofs --------------------------------------------------------------------------
    def check_value(self, op, scope) -> None:
        """An integer division, shift or rotation whose pinned guard cannot change its
        result (descriptor.legalize): a divisor whose range holds neither 0 nor, where the
        i32 dividend's range holds i32::MIN, -1; an amount in [0, 31]."""
        name = op.name
        if name in ("Div", "Mod"):
            (al, _), (bl, bh) = [self.operand_range(scope, o) for o in op.operands]
            if bl <= 0 <= bh:
                return
            if self.types[op.result] == "i32" and bl <= -1 <= bh and al <= I32[0]:
                return
            self.safe.add(op.index)
        elif name in ("Shl", "Shr", "RotateLeft", "RotateRight"):
            lo, hi = self.operand_range(scope, op.operands[1])
            if 0 <= lo and hi <= 31:
                self.safe.add(op.index)

    def check_fragment(self, op, scope, ty: str) -> None:
        """A cooperative load/store (of matrix `ty`) of a Shared array proved to fit (the
        fragment rule of descriptor.matrices holds for every offset in its range): its
        guard goes."""
        s = self.slots[op.slot]
        if s.memory_class == "Global":
            return
        off, stride = self.range(scope, op.offset), self.range(scope, op.stride)
        if off is None or stride is None or stride[0] != stride[1] or off[0] < 0:
            return
        _, rows, cols = MATRICES[ty]
        align = alignment(TYPES[ty].element, cols)
        length = s.element_count * TYPES[self.slot_types[op.slot]].count
        if self.multiple(op.offset) % align == 0 and in_place(length, off[1], stride[0], ty):
            self.proved.add(op.index)

    def check(self, op, scope, what: str) -> None:
        """A load, store or atomic (`what`) whose index is proved in range: its check goes.
        A store into a Shared/Scratch slot (an atomic: into a Shared one) widens the slot's
        stored range."""
        slot, index = op.slot, op.element
        s = self.slots[slot]
        ty = self.slot_types[slot]
        shared_store = what == "store" and op.shared
        if ty in FULL and (shared_store or what == "atomic" and s.memory_class != "Global"):
            stored = self.range(scope, op.value) if shared_store else None
            self.stored[slot] = _join(self.stored.get(slot), stored or FULL[ty])
        if s.memory_class == "Global":
            ok = (self.canon(index), slot) in scope.below
        else:
            r = self.range(scope, index)
            ok = r is not None and 0 <= r[0] and r[1] < s.element_count
        if ok:
            self.proved.add(op.index)


def _exits(b: BodyView) -> bool:
    """Whether every path through `b` ends in return, break or continue."""
    if not b.ops:
        return False
    last = b.ops[-1]
    if isinstance(last, (Return, Break, Continue)):
        return True
    if isinstance(last, If) and last.other is not None:
        return _exits(b.children[last.then]) and _exits(b.children[last.other])
    return False
