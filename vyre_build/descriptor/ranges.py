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

`analyze(desc, info)` returns `Proofs`; the emitters drop exactly those checks. Sound by
construction: every rule below is a superset of what wrapping u32/i32 arithmetic can give.
"""

from __future__ import annotations

from dataclasses import dataclass

from vyre_build.descriptor.codec import KernelBody, KernelDescriptor
from vyre_build.descriptor.matrices import LOAD, STORE, alignment, in_place
from vyre_build.descriptor.types import MATRICES, TYPES

from vyre_build.descriptor import memory_order as mo

__all__ = ["Proofs", "analyze"]

U32 = (0, (1 << 32) - 1)
I32 = (-(1 << 31), (1 << 31) - 1)
FULL = {"u32": U32, "i32": I32}
_CAP = 1 << 31  # multiple(): the factor of 0, and the most any value is known to have
_WIDEN_AFTER = 8  # fixpoint passes before an unstable slot range goes to the full type


@dataclass(frozen=True)
class Proofs:
    in_bounds: frozenset[int]  # id() of the Load/Store/Atomic ops whose index is proved in range
    unzeroed: frozenset[int]  # Shared slots fully written before any read: no zeroing on entry


def analyze(desc: KernelDescriptor, types: dict[int, str], slot_types: dict[int, str]) -> Proofs:
    """The proofs for `desc` (validated; `types` and `slot_types` are its DescriptorInfo's)."""
    a = _Analysis(desc, types, slot_types)
    for passes in range(64):
        before = dict(a.slot_ranges)
        a.run(widen=passes >= _WIDEN_AFTER)
        if a.slot_ranges == before:
            break
    return Proofs(frozenset(a.proved), frozenset(_unzeroed(desc, a.flat)))


def _join(x, y):
    if x is None:
        return y
    if y is None:
        return x
    return (min(x[0], y[0]), max(x[1], y[1]))


def _fit(lo: int, hi: int, ty: str):
    """[lo, hi] if it fits `ty` (no wrap possible), else the full range of `ty`."""
    full = FULL[ty]
    return (lo, hi) if full[0] <= lo <= hi <= full[1] else full


class _Scope:
    __slots__ = ("ranges", "below", "le", "held")

    def __init__(self, ranges, below, le=None, held=None):
        self.ranges = ranges  # SSA id -> refined (lo, hi) in this scope
        self.below = below  # {(id, slot)}: value id < len(slot)
        self.le = le if le is not None else set()  # {(a, b)}: value a <= value b
        self.held = held if held is not None else {}  # local's Scratch slot -> its value id

    def child(self, forget=()) -> _Scope:
        held = {k: v for k, v in self.held.items() if k not in forget}
        return _Scope(dict(self.ranges), set(self.below), set(self.le), held)

    def forget(self, slots) -> None:
        for slot in slots:
            self.held.pop(slot, None)


class _Analysis:
    def __init__(self, desc, types, slot_types):
        self.desc, self.types, self.slot_types = desc, types, slot_types
        self.slots = {s.slot: s for s in desc.slots}
        # Locals and shared arrays start zeroed: the bottom of the fixpoint is their zero.
        self.slot_ranges: dict[int, tuple] = {
            s.slot: (0, 0)
            for s in desc.slots
            if s.memory_class in ("Shared", "Scratch") and slot_types[s.slot] in FULL
        }
        self.defs: dict[int, object] = {}  # SSA id -> defining op
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
        self.alias = {}
        self.base: dict[int, tuple] = {}
        self.stored: dict[int, tuple] = {}
        self.body(self.desc.body, _Scope({}, set()), {})
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

    def writes(self, b: KernelBody) -> frozenset:
        """The single-value Scratch slots (locals) stored anywhere in `b`."""
        got = self._writes.get(id(b))
        if got is None:
            out = {
                op.operands[0]
                for op in b.ops
                if op.kind.name == "StoreShared" and op.operands[0] in self.locals
            }
            for child in b.children:
                out |= self.writes(child)
            got = self._writes[id(b)] = frozenset(out)
        return got

    def track_local(self, op, scope) -> None:
        """Value numbering of locals: a reload with no store since aliases the value."""
        name, o = op.kind.name, op.operands
        if name == "LoadShared" and o[0] in self.locals:
            held = scope.held.get(o[0])
            if held is not None:
                self.alias[op.result] = held
            else:
                scope.held[o[0]] = op.result
        elif name == "StoreShared" and o[0] in self.locals:
            scope.held[o[0]] = self.canon(o[2])

    # --- the walk ----------------------------------------------------------------------
    def body(self, b: KernelBody, scope: _Scope, loops: dict) -> None:
        for op in b.ops:
            name = op.kind.name
            self.track_local(op, scope)
            if op.result is not None:
                self.defs[op.result] = op
                r = self.value(op, b, scope, loops)
                if r is not None:
                    self.base[op.result] = r
                self.facts(op, scope)
            self.check(op, scope)
            o = op.operands
            if name in ("StructuredIfThen", "StructuredIfThenElse"):
                then = scope.child()
                self.assume(o[0], True, then)
                self.body(b.children[o[1]], then, loops)
                if len(o) == 3:
                    other = scope.child()
                    self.assume(o[0], False, other)
                    self.body(b.children[o[2]], other, loops)
                # The rest of this body runs only where an arm that always exits was not taken.
                if _exits(b.children[o[1]]):
                    self.assume(o[0], False, scope)
                elif len(o) == 3 and _exits(b.children[o[2]]):
                    self.assume(o[0], True, scope)
                for child in o[1:]:
                    scope.forget(self.writes(b.children[child]))
            elif name == "StructuredForLoop":
                self.for_loop(op, b, scope, loops)
                scope.forget(self.writes(b.children[o[2]]))
            elif name == "OpaqueNode" and op.kind.args[0] == "vyre.loop":
                stored = frozenset().union(*(self.writes(b.children[c]) for c in o))
                for child in o:  # the back edge: no local stored in the loop keeps a value
                    self.body(b.children[child], scope.child(forget=stored), loops)
                scope.forget(stored)

    def for_loop(self, op, b, scope, loops):
        lo, hi, child = op.operands
        ty = self.types[lo]
        rl, rh = self.range(scope, lo) or FULL[ty], self.range(scope, hi) or FULL[ty]
        index = (rl[0], max(rl[0], rh[1] - 1))
        inner = scope.child(forget=self.writes(b.children[child]))
        self.body(b.children[child], inner, {**loops, op.kind.args[0]: (index, hi)})

    def facts(self, op, scope) -> None:
        """Symbolic facts of a value op that never exceeds one of its operands (u32)."""
        name, o, r = op.kind.name, op.operands, op.result
        if name == "LoopIndex":
            return
        if self.types.get(r) != "u32":
            return
        if name == "BinOpKind":
            bop = op.kind.args[0].name
            keep = {
                "Min": (0, 1),
                "BitAnd": (0, 1),
                "Shr": (0,),
                "Div": (0,),
                "Mod": (0,),
            }.get(bop, ())
            for i in keep:
                if self.types[o[i]] == "u32":
                    self.inherit(scope, r, o[i])
        elif name == "Select":
            t, f = self.canon(o[1]), self.canon(o[2])
            common = {s for (v, s) in scope.below if v == t} & {
                s for (v, s) in scope.below if v == f
            }
            scope.below.update((r, s) for s in common)

    def inherit(self, scope, r, src) -> None:
        src = self.canon(src)
        scope.below.update((r, s) for (v, s) in list(scope.below) if v == src)

    def assume(self, cond: int, truth: bool, scope: _Scope) -> None:
        op = self.defs.get(cond)
        if op is None:
            return
        name = op.kind.name
        if name == "UnOpKind" and op.kind.args[0].name == "LogicalNot":
            return self.assume(op.operands[0], not truth, scope)
        if name != "BinOpKind":
            return
        bop, (a, b) = op.kind.args[0].name, op.operands
        if bop in ("And", "Or"):
            if (bop == "And") == truth:  # both hold (And true) / both fail (Or false)
                self.assume(a, truth, scope)
                self.assume(b, truth, scope)
            return
        if self.types.get(a) not in FULL:
            return
        flip = {"Lt": "Ge", "Ge": "Lt", "Gt": "Le", "Le": "Gt"}
        if bop not in flip:
            return
        if not truth:
            bop = flip[bop]
        if bop in ("Gt", "Ge"):  # b < a  /  b <= a
            a, b = b, a
            bop = "Lt" if bop == "Gt" else "Le"
        self.less(a, b, strict=bop == "Lt", scope=scope)

    def less(self, a: int, b: int, strict: bool, scope: _Scope) -> None:
        """Record a < b (or a <= b) in `scope`."""
        ty = self.types[a]
        ra, rb = self.range(scope, a) or FULL[ty], self.range(scope, b) or FULL[ty]
        gap = 1 if strict else 0
        a, b = self.canon(a), self.canon(b)
        # An empty refinement means this path cannot run under the ranges of this pass
        # (locals start at their zero): keep the ranges as they are rather than invert them.
        lo_a, hi_a = ra[0], min(ra[1], rb[1] - gap)
        lo_b, hi_b = max(rb[0], ra[0] + gap), rb[1]
        if lo_a <= hi_a:
            scope.ranges[a] = (lo_a, hi_a)
        if lo_b <= hi_b:
            scope.ranges[b] = (lo_b, hi_b)
        scope.le.add((a, b))
        if ty != "u32":
            return
        bop = self.defs.get(b)
        bounds = {s for (v, s) in scope.below if v == b}
        if strict and bop is not None and bop.kind.name == "BufferLength":
            bounds.add(bop.operands[0])
        scope.below.update((a, s) for s in bounds)

    # --- intervals -----------------------------------------------------------------------
    def value(self, op, b, scope, loops):  # noqa: C901 - one branch per op kind
        name, o = op.kind.name, op.operands
        ty = self.types.get(op.result)
        if ty not in FULL:
            return None
        rng = lambda i: self.range(scope, o[i]) or FULL.get(self.types.get(o[i]), U32)  # noqa: E731
        if name == "Literal":
            v = b.literals[o[0]].args[0]
            self.lits[op.result] = v
            return (v, v)
        if name == "LocalInvocationId":
            self.flat[op.result] = tuple(1 if k == o[0] else 0 for k in range(3)) + (0,)
            return (0, self.desc.workgroup_size[o[0]] - 1)
        if name == "LoopIndex":
            index, hi = loops[op.kind.args[0]]
            below = {s for (v, s) in scope.below if v == hi}
            hop = self.defs.get(hi)
            if hop is not None and hop.kind.name == "BufferLength":
                below.add(hop.operands[0])
            scope.below.update((op.result, s) for s in below)
            return index
        if name == "BufferLength":
            s = self.slots[o[0]]
            n = s.element_count if s.memory_class != "Global" else None
            return (n, n) if n is not None else U32
        if name in ("LoadShared",):
            s = self.slots[o[0]]
            return self.slot_ranges.get(s.slot, FULL[ty])
        if name == "Cast" or name == "OpaqueExpr" and op.kind.args[1] == "vyre.bitcast":
            src = self.types[o[0]]
            if src == "bool":
                return (0, 1)
            if src in FULL:
                lo, hi = rng(0)
                return (lo, hi) if FULL[ty][0] <= lo and hi <= FULL[ty][1] else FULL[ty]
            return FULL[ty]
        if name == "Select":
            return _join(rng(1), rng(2))
        if name == "UnOpKind":
            uop = op.kind.args[0].name
            if uop in ("Popcount", "Clz", "Ctz"):
                return (0, 32)
            return FULL[ty]
        if name != "BinOpKind":
            return FULL[ty]
        bop = op.kind.args[0].name
        (al, ah), (bl, bh) = rng(0), rng(1)
        if bop in ("Shl", "Shr") and bh > 31:
            bl, bh = 0, 31  # the amount is taken mod 32
        fa, fb = self.flat.get(o[0]), self.flat.get(o[1])
        if bop == "Add":
            if fa and fb:
                self.flat[op.result] = tuple(x + y for x, y in zip(fa, fb))
            elif fa and bl == bh:
                self.flat[op.result] = fa[:3] + (fa[3] + bl,)
            elif fb and al == ah:
                self.flat[op.result] = fb[:3] + (fb[3] + al,)
            return _fit(al + bl, ah + bh, ty)
        if bop == "Sub":
            if ty == "u32" and (self.canon(o[1]), self.canon(o[0])) in scope.le:  # b <= a
                return (max(al - bh, 0), max(ah - bl, 0))
            return _fit(al - bh, ah - bl, ty)
        if bop == "Mul":
            if fa and bl == bh:
                self.flat[op.result] = tuple(x * bl for x in fa)
            elif fb and al == ah:
                self.flat[op.result] = tuple(x * al for x in fb)
            corners = (al * bl, al * bh, ah * bl, ah * bh)
            return _fit(min(corners), max(corners), ty)
        if bop == "Shl":
            if fa and bl == bh:
                self.flat[op.result] = tuple(x << bl for x in fa)
            return _fit(al << bl, ah << bh, ty) if al >= 0 else FULL[ty]
        if bop == "Shr" and al >= 0:
            return (al >> bh, ah >> bl)
        if bop in ("Div", "Mod") and al >= 0 and bl >= 0:
            if bop == "Div":
                return (al // bh, ah // bl) if bl > 0 else (0, ah)  # x / 0 == x
            return (0, min(ah, max(bh - 1, 0)))  # x % 0 == 0
        if bop == "BitAnd" and al >= 0 and bl >= 0:
            return (0, min(ah, bh))
        if bop in ("BitOr", "BitXor") and al >= 0 and bl >= 0:
            return (0, (1 << max(ah, bh).bit_length()) - 1)
        if bop == "Min":
            return (min(al, bl), min(ah, bh))
        if bop == "Max":
            return (max(al, bl), max(ah, bh))
        return FULL[ty]

    def multiple(self, vid, depth: int = 0) -> int:
        """A power of two that integer value `vid` is known to be a multiple of (1 when
        nothing is known): literals, and what + - * << & and select keep of them."""
        op = self.defs.get(self.canon(vid))
        if op is None or depth > 64:
            return 1
        name, o = op.kind.name, op.operands
        if name == "Literal":
            v = self.lits.get(op.result, 0)
            if op.result not in self.lits:
                return 1
            return _CAP if v == 0 else min(_CAP, v & -v)
        if name == "Select":
            return min(self.multiple(o[1], depth + 1), self.multiple(o[2], depth + 1))
        if name == "Cast" and self.types.get(o[0]) in FULL:
            return self.multiple(o[0], depth + 1)
        if name != "BinOpKind":
            return 1
        bop = op.kind.args[0].name
        if bop in ("Add", "Sub"):
            return min(self.multiple(o[0], depth + 1), self.multiple(o[1], depth + 1))
        if bop == "Mul":
            return min(_CAP, self.multiple(o[0], depth + 1) * self.multiple(o[1], depth + 1))
        if bop == "BitAnd":
            return max(self.multiple(o[0], depth + 1), self.multiple(o[1], depth + 1))
        if bop == "Shl":
            r = self.base.get(o[1])
            if r is not None and r[0] == r[1] and 0 <= r[0] < 32:
                return min(_CAP, self.multiple(o[0], depth + 1) << r[0])
        return 1

    def check_fragment(self, op, scope) -> None:
        """A cooperative load/store of a Shared array proved to fit (the fragment rule
        of descriptor.matrices holds for every offset in its range): its guard goes."""
        o = op.operands
        s = self.slots[o[0]]
        if s.memory_class == "Global":
            return
        ty = self.types[op.result] if op.kind.name == "OpaqueExpr" else self.types[o[3]]
        off, stride = self.range(scope, o[1]), self.range(scope, o[2])
        if off is None or stride is None or stride[0] != stride[1] or off[0] < 0:
            return
        _, rows, cols = MATRICES[ty]
        align = alignment(TYPES[ty].element, cols)
        length = s.element_count * TYPES[self.slot_types[o[0]]].count
        if self.multiple(o[1]) % align == 0 and in_place(length, off[1], stride[0], ty):
            self.proved.add(id(op))

    def check(self, op, scope) -> None:
        name = op.kind.name
        if mo.access(op) is not None and op.operands:  # an ordered atomic: as Atomic
            name = "Atomic"
        if (
            name == "OpaqueExpr"
            and op.kind.args[1] == LOAD
            or (name == "OpaqueNode" and op.kind.args[0] == STORE)
        ):
            self.check_fragment(op, scope)
            return
        if name not in ("LoadGlobal", "LoadShared", "StoreGlobal", "StoreShared", "Atomic"):
            return
        slot, index = op.operands[0], op.operands[1]
        s = self.slots[slot]
        ty = self.slot_types[slot]
        if ty in FULL and (
            name == "StoreShared" or name == "Atomic" and s.memory_class != "Global"
        ):
            stored = self.range(scope, op.operands[2]) if name == "StoreShared" else None
            self.stored[slot] = _join(self.stored.get(slot), stored or FULL[ty])
        if s.memory_class == "Global":
            ok = (self.canon(index), slot) in scope.below
        else:
            r = self.range(scope, index)
            ok = r is not None and 0 <= r[0] and r[1] < s.element_count
        if ok:
            self.proved.add(id(op))


def _exits(b: KernelBody) -> bool:
    """Whether every path through `b` ends in return, break or continue."""
    if not b.ops:
        return False
    last = b.ops[-1]
    name = last.kind.name
    if (
        name == "Return"
        or name == "OpaqueNode"
        and last.kind.args[0] in ("vyre.break", "vyre.continue")
    ):
        return True
    if name == "StructuredIfThenElse":
        return _exits(b.children[last.operands[1]]) and _exits(b.children[last.operands[2]])
    return False


# --- shared arrays that need no zeroing ------------------------------------------------


def _unzeroed(desc: KernelDescriptor, flat: dict[int, tuple]) -> set[int]:
    wx, wy, wz = desc.workgroup_size
    strides, sizes = (1, wx, wx * wy), (wx, wy, wz)

    def covering(index: int) -> bool:
        """Whether `index` is the flat local id (an axis of size 1 may have any stride)."""
        f = flat.get(index)
        return (
            f is not None
            and f[3] == 0
            and all(c == st or n == 1 for c, st, n in zip(f[:3], strides, sizes))
        )

    shared = {s.slot: s for s in desc.slots if s.memory_class == "Shared"}
    ok = {n for n, s in shared.items() if s.element_count <= wx * wy * wz}
    if not ok:
        return set()
    bad: set[int] = set()

    def reads(op, b) -> set[int]:
        """Shared slots op reads (itself or anything nested in it)."""
        out = set()
        name = op.kind.name
        coop = name == "OpaqueExpr" and op.kind.args[1] == "vyre.coop.load"
        ordered = mo.access(op) is not None and bool(op.operands)  # descriptor.memory_order
        if (name in ("LoadShared", "Atomic") or coop or ordered) and op.operands[0] in shared:
            out.add(op.operands[0])
        for child in _children(op):
            for sub in b.children[child].ops:
                out |= reads(sub, b.children[child])
        return out

    def walk(b: KernelBody, ready: set[int]) -> None:
        """`ready`: slots covered and then fenced by a barrier in an enclosing body."""
        ready = set(ready)
        written: set[int] = set()
        for op in b.ops:
            name = op.kind.name
            if name == "StoreShared" and op.operands[0] in ok and covering(op.operands[1]):
                written.add(op.operands[0])
            elif name == "Barrier":
                ready |= written
            if _children(op):
                for child in _children(op):
                    walk(b.children[child], ready)
            else:
                bad.update(reads(op, b) - ready)

    walk(desc.body, set())
    return ok - bad


def _children(op) -> tuple[int, ...]:
    name = op.kind.name
    if name in ("StructuredIfThen", "StructuredIfThenElse"):
        return tuple(op.operands[1:])
    if name == "StructuredForLoop":
        return (op.operands[2],)
    if name == "OpaqueNode" and op.kind.args[0] == "vyre.loop":
        return tuple(op.operands)
    return ()
