"""What the range analysis knows of a value (a mixin of `ranges._Analysis`).

An integer value's interval (`typed`: its type's full range; `operand_range`;
`binary_range`: one rule per BinOp, each a superset of what wrapping u32/i32 arithmetic
can give, the full type wherever a result may wrap), the power of two it is known to be a
multiple of (`multiple`), and, per scope (`_Scope`), the symbolic facts the dominating
guards and the ops establish: `a < len(buf)` and `a <= b` (`assume` of a condition,
`less`), inherited by a u32 op that never exceeds one of its operands (`facts`). A guard
only narrows the intervals of the path it dominates, and never to an empty one.
"""

from __future__ import annotations

from vyre_build.descriptor.view import Binary, Cast, Length, Literal, OpView, Select, Unary

__all__ = ["FULL", "I32", "U32", "ValueRanges"]

U32 = (0, (1 << 32) - 1)
I32 = (-(1 << 31), (1 << 31) - 1)
FULL = {"u32": U32, "i32": I32}
_CAP = 1 << 31  # multiple(): the factor of 0, and the most any value is known to have


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


class ValueRanges:
    """Intervals and facts of values; the `_Analysis` it mixes into gives `types`, `defs`,
    `lits`, `base`, `flat`, `canon` and `range`."""

    # --- symbolic facts ------------------------------------------------------------------
    def facts(self, op, scope) -> None:
        """Symbolic facts of a u32 value op that never exceeds one of its operands."""
        o, r = op.operands, op.result
        if isinstance(op, Binary):
            keep = {
                "Min": (0, 1),
                "BitAnd": (0, 1),
                "Shr": (0,),
                "Div": (0,),
                "Mod": (0,),
            }.get(op.name, ())
            for i in keep:
                if self.types[o[i]] == "u32":
                    self.inherit(scope, r, o[i])
        elif isinstance(op, Select):
            t, f = self.canon(op.if_true), self.canon(op.if_false)
            common = {s for (v, s) in scope.below if v == t} & {
                s for (v, s) in scope.below if v == f
            }
            scope.below.update((r, s) for s in common)

    def inherit(self, scope, r, src) -> None:
        src = self.canon(src)
        scope.below.update((r, s) for (v, s) in list(scope.below) if v == src)

    def assume(self, cond: int, truth: bool, scope: _Scope) -> None:
        op = self.defs.get(cond)
        if isinstance(op, Unary) and op.name == "LogicalNot":
            return self.assume(op.a, not truth, scope)
        if not isinstance(op, Binary):
            return
        bop, a, b = op.name, op.a, op.b
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
        if strict and isinstance(bop, Length):
            bounds.add(bop.slot)
        scope.below.update((a, s) for s in bounds)

    # --- intervals -----------------------------------------------------------------------
    def typed(self, op: OpView):
        """FULL[type] of op's result, or None where it is not an integer of FULL."""
        return FULL.get(self.types.get(op.result))

    def operand_range(self, scope, vid):
        return self.range(scope, vid) or FULL.get(self.types.get(vid), U32)

    def binary_range(self, op, scope):  # noqa: C901 - one branch per BinOp
        ty = self.types[op.result]
        o, bop = op.operands, op.name
        (al, ah), (bl, bh) = self.operand_range(scope, o[0]), self.operand_range(scope, o[1])
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
        o = op.operands
        if isinstance(op, Literal):
            v = self.lits.get(op.result, 0)
            if op.result not in self.lits:
                return 1
            return _CAP if v == 0 else min(_CAP, v & -v)
        if isinstance(op, Select):
            return min(self.multiple(o[1], depth + 1), self.multiple(o[2], depth + 1))
        if isinstance(op, Cast) and self.types.get(o[0]) in FULL:
            return self.multiple(o[0], depth + 1)
        if not isinstance(op, Binary):
            return 1
        bop = op.name
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
