"""Legalize: the pinned semantics written once, as explicit ops (descriptor -> descriptor).

docs/descriptor-conventions.md pins what every op gives for every input: integer division
and remainder by zero, i32::MIN / -1, shift amounts taken mod 32, clz/ctz of 0, |i32::MIN|,
saturating float -> integer casts with NaN -> 0, loads out of bounds giving 0, stores and
atomics out of bounds doing nothing. `legalize(desc, info)` rewrites a validated
descriptor into its *legal form*, where those rules are ops of the descriptor itself
(compares, selects, masks, a clamped index and an `if` around a write) and every op that
reaches an emitter is one whose target instruction is defined for the operands it gets:

- Div / Mod (u32, i32): the divisor is never 0 and never -1 with an i32::MIN dividend
  (`select(bad, 1, b)`); i32 Mod is `a - b * (a / b)` (Vulkan leaves OpSRem undefined for
  negative operands);
- Shl / Shr: the amount is below 32 (`b & 31`, folded for a literal); rotations are
  shifts of a u32 (`(x << n) | (x >> ((32 - n) & 31))`); MulHigh is the 16-bit limb
  product (neither target has 64-bit integers); AbsDiff is a select of two differences;
- Clz / Ctz: the operand is not 0 (`select(x == 0, 32, clz(x))`); Abs of i32 is
  `select(x < 0, 0 - x, x)` and Sign of u32 `select(x != 0, 1, 0)`;
- Cast f32 / f16 -> i32 / u32: the operand is a number in the target's range (NaN -> 0,
  clamped, the top saturated by a select), vectors component by component;
- every load, store and atomic is in bounds: a load reads the clamped index and selects 0
  where the index is out of range, a store or an atomic runs under `if index < length`
  (an atomic's old value travels through a Scratch slot, 0 where it did not run), and an
  access at a literal index past a fixed array's end is gone (0, or nothing).

The range analysis (`descriptor.ranges`) removes what it proves: an access proved in
bounds and a division, shift or clz proved safe (`Proofs.safe`) get no guard (an i32 Mod
is still written as `a - b * (a / b)`, a rotation as its shifts). The
rows the legal form never holds are `EXPANDED`; an emitter writes `LEGAL_ROWS` only, each
as the one instruction (or the target's own spelling of one operation) it is. The
reference (`vyre_build.reference`) executes the descriptor *before* this pass, so it stays
an independent judge of it. Cooperative-matrix fragments keep their rule in the SPIR-V
emitter (the one target that has them).

Guarantees: a pure function of the descriptor (ops it leaves alone are the same
`KernelOp` objects, new result ids follow the descriptor's largest); the result validates
and means what the input means under the pinned rules (tests/conformance runs every
generated program through both and the reference). `Legal.origin` maps the first op of
each rewrite to the op it came from (source-line notes follow it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vyre_build.descriptor.builder import BodyBuilder, KernelBuilder
from vyre_build.descriptor.codec import KernelDescriptor, KernelOp, Variant
from vyre_build.descriptor.facts import DescriptorInfo
from vyre_build.descriptor.ops import OPS
from vyre_build.descriptor.ranges import Proofs
from vyre_build.descriptor.types import FLOAT, INTEGER, MATRICES, TYPES, datatype
from vyre_build.descriptor.validate import validate
from vyre_build.descriptor.view import BodyView, OpView, Walker, view_of

__all__ = ["EXPANDED", "LEGAL_ROWS", "Legal", "legalize"]

I32_MIN = -(1 << 31)
# The largest f32 values below 2^31 and 2^32: the top of the clamp before a conversion.
F32_I32_HI = 2147483520.0
F32_U32_HI = 4294967040.0
_LITERAL = {"u32": "U32", "i32": "I32", "f32": "F32", "bool": "Bool"}


_FLOAT_TO_INT = {(f, i) for f in FLOAT for i in INTEGER}
# Literal operands (their 32 bits, `info.constants`) that need no guard.
_SHIFT_OK = lambda v: v < 32  # noqa: E731
_DIVISOR_OK = lambda v: v != 0  # noqa: E731
_DIVISOR_OK_I32 = lambda v: v not in (0, 0xFFFFFFFF)  # noqa: E731 - nor -1 (MIN / -1)


def _expanded(row) -> bool:
    (family, name), operands = row
    t = operands[0] if operands else ""
    element = TYPES[t].element if t in TYPES else t
    if family == "BinOpKind":
        if name in ("RotateLeft", "RotateRight", "MulHigh", "AbsDiff"):
            return True
        return name == "Mod" and t == "i32"
    if family == "UnOpKind":
        return (name == "Abs" and element == "i32") or (name == "Sign" and t == "u32")
    if family == "Cast":  # f32 -> i32 / u32 stays: the conversion of a clamped number
        return (element, TYPES[name].element) in _FLOAT_TO_INT and t != "f32"
    return False


# The op-table rows the legal form never holds (this pass writes them as other rows).
EXPANDED = frozenset(row for row in OPS if _expanded(row))
# The rows an emitter of the legal form writes.
LEGAL_ROWS = frozenset(OPS) - EXPANDED


@dataclass(frozen=True)
class Legal:
    """A descriptor in legal form, its facts, and where each rewrite came from."""

    desc: KernelDescriptor
    info: DescriptorInfo
    origin: dict[int, KernelOp]  # id(first op of a rewrite) -> the op it rewrites

    def notes(self, notes: dict[int, str] | None) -> dict[int, str] | None:
        """Notes keyed by id(KernelOp) of the input, re-keyed to the legal form's ops."""
        if not notes:
            return notes
        out = dict(notes)
        for new, old in self.origin.items():
            if id(old) in notes:
                out[new] = notes[id(old)]
        return out


def legalize(desc: KernelDescriptor, info: DescriptorInfo | None = None) -> Legal:
    """The legal form of validated `desc` (module docstring); `info`: its validate()."""
    info = info if info is not None else validate(desc)
    return _Legalizer(desc, info).run()


class _Legalizer(Walker):
    """`visit(op, dst, src, kids)` appends op's legal form to the body builder `dst` (`src`:
    op's body, `kids`: the builders of its children, made up front so that kept control
    flow keeps its child indices). Run once: the legal form of a legal form may guard
    again what a select made safe (the range analysis does not follow selects' conditions)."""

    def __init__(self, desc: KernelDescriptor, info: DescriptorInfo):
        self.desc, self.info = desc, info
        self.view = view_of(desc, info)
        self.types = info.types
        self.in_bounds = info.proofs.in_bounds  # accesses proved in range
        self.safe = info.proofs.safe  # divisions, shifts, clz/ctz proved in their domain
        self.slots = {s.slot: s for s in desc.slots}
        top = max((op.result for op in self.view.ops if op.result is not None), default=-1)
        self.kb = KernelBuilder(
            desc.id, desc.workgroup_size, desc.slots, first_id=top + 1, intern=True
        )
        self.origin: dict[int, KernelOp] = {}
        self.changed = False
        self._mark: tuple | None = None  # (op, body, position) of the rewrite under way

    def run(self) -> Legal:
        self.body(self.view.body, self.kb.body)
        if not self.changed:
            return Legal(self.desc, self.info, {})
        desc = self.kb.build()
        info = validate(desc, analyze=False)
        # Proofs the emitters still read: shared zeroing (by slot) and the cooperative
        # fragments' (by op: the same KernelOp objects, renumbered in the new view; the
        # other kept accesses carry theirs too, which no emitter needs any more).
        kept = {id(op.op) for op in self.view.ops if op.index in self.info.proofs.in_bounds}
        proved = frozenset(v.index for v in info.view.ops if id(v.op) in kept)
        proofs = Proofs(proved, self.info.proofs.unzeroed)
        return Legal(desc, dataclasses.replace(info, proofs=proofs), self.origin)

    # --- bodies ------------------------------------------------------------------------
    def body(self, src: BodyView, dst: BodyBuilder) -> None:
        dst.seed(src.literals)
        kids = [dst.child()[1] for _ in src.children]
        for op in src.ops:
            self.visit(op, dst, src, kids)

    def keep(self, op: OpView, dst, src=None, kids=None) -> None:
        dst.keep(op.op)

    def nested(self, op: OpView, dst, src, kids) -> None:
        dst.keep(op.op)
        for k in op.children:
            self.body(src.children[k], kids[k])

    def start(self, op: OpView, dst: BodyBuilder) -> None:
        """Mark the next op appended to `dst` as the first of `op`'s rewrite."""
        self.changed = True
        self._mark = (op.op, dst, len(dst.ops))

    def mark(self) -> None:
        old, dst, at = self._mark
        if at < len(dst.ops):
            self.origin[id(dst.ops[at])] = old

    # --- small builders (every constant interned per scope by the kernel builder) ---------
    def const(self, dst: BodyBuilder, ty: str, value, result: int | None = None) -> int:
        """A constant of scalar or vector type `ty` (f16 and bf16 through an f32 literal),
        interned per scope, or made anew under id `result`."""
        element, n = TYPES[ty].element, TYPES[ty].count
        last = result if n == 1 else None
        if element in ("f16", "bf16"):
            scalar = dst.cast(datatype(element), dst.f32(float(value)), result=last)
        else:
            kind = _LITERAL[element]
            v = float(value) if kind == "F32" else bool(value) if kind == "Bool" else value
            scalar = dst.lit(kind, v, result=last)
        return scalar if n == 1 else dst.vec(datatype(ty), *([scalar] * n), result=result)

    def bin(self, dst, name: str, a: int, b: int, result=None) -> int:
        return dst.op(Variant("BinOpKind", (Variant(name),)), a, b, result=result)

    def un(self, dst, name: str, a: int, result=None) -> int:
        return dst.op(Variant("UnOpKind", (Variant(name),)), a, result=result)

    def select(self, dst, cond: int, yes: int, no: int, result=None) -> int:
        return dst.op("Select", cond, yes, no, result=result)

    # --- value ops ---------------------------------------------------------------------
    visit_literal = visit_builtin = visit_subgroup_builtin = visit_loop_index = keep
    visit_fma = visit_select = visit_bitcast = visit_construct = visit_extract = keep
    visit_subgroup = visit_load_uniform = visit_length = keep
    visit_fence = visit_coop_load = visit_coop_fill = visit_coop_mma = visit_coop_store = keep
    visit_break_ = visit_continue_ = visit_return_ = visit_barrier = visit_debug = keep
    visit_if_ = visit_for_ = visit_loop = nested

    def visit_binary(self, op, dst, src, kids) -> None:
        t = self.types[op.operands[0]]
        name = op.name
        if t not in INTEGER and name != "AbsDiff":
            return self.keep(op, dst)
        if name in ("Div", "Mod"):
            return self.divide(op, dst, t)
        if name in ("Shl", "Shr") and not self.proved(op, op.operands[1], _SHIFT_OK):
            self.start(op, dst)
            amount = self.amount(dst, op.operands[1])
            dst.op(op.kind, op.operands[0], amount, result=op.result)
            return self.mark()
        if name in ("RotateLeft", "RotateRight"):
            return self.rotate(op, dst, t)
        if name == "MulHigh":
            return self.mul_high(op, dst, t)
        if name == "AbsDiff":
            return self.abs_diff(op, dst, t)
        return self.keep(op, dst)

    def divide(self, op, dst, t: str) -> None:
        """x / 0 == x, x % 0 == 0, MIN / -1 == MIN, MIN % -1 == 0: divide by 1 instead."""
        a, b = op.operands
        signed_mod = op.name == "Mod" and t == "i32"
        ok = _DIVISOR_OK_I32 if t == "i32" else _DIVISOR_OK
        proved = self.proved(op, b, ok)
        if proved and not signed_mod:
            return self.keep(op, dst)
        self.start(op, dst)
        safe = b
        if not proved:
            bad = self.bin(dst, "Eq", b, self.const(dst, t, 0))
            if t == "i32":
                is_min = self.bin(dst, "Eq", a, self.const(dst, t, I32_MIN))
                is_neg1 = self.bin(dst, "Eq", b, self.const(dst, t, -1))
                bad = self.bin(dst, "Or", bad, self.bin(dst, "And", is_min, is_neg1))
            safe = self.select(dst, bad, self.const(dst, t, 1), b)
        if not signed_mod:
            dst.op(op.kind, a, safe, result=op.result)
        else:  # a - b * (a / b): OpSRem is undefined for negative operands on Vulkan
            q = self.bin(dst, "Div", a, safe)
            self.bin(dst, "Sub", a, self.bin(dst, "Mul", safe, q), result=op.result)
        self.mark()

    def proved(self, op, operand: int, ok) -> bool:
        """Whether `op` needs no guard for `operand`: a literal is judged by its value
        (never by a proof: naga evaluates a literal's `let` and refuses a shift by 32 or a
        division by 0 even on a path that cannot run, where the range analysis proves
        anything), any other operand by the range analysis (`Proofs.safe`)."""
        known = self.info.constants.get(operand)
        if known is not None:
            return ok(known)
        return op.index in self.safe

    def amount(self, dst, b: int) -> int:
        """A u32 shift amount mod 32 (a literal folded)."""
        known = self.info.constants.get(b)
        if known is not None:
            return b if known < 32 else self.const(dst, "u32", known & 31)
        return self.bin(dst, "BitAnd", b, self.const(dst, "u32", 31))

    def rotate(self, op, dst, t: str) -> None:
        """Rotation as two shifts of a u32; the back shift (32 - n) & 31 makes n == 0 x | x."""
        self.start(op, dst)
        x, b = op.operands
        if t == "i32":
            x = dst.bitcast("U32", x)
        known = self.info.constants.get(b)
        if known is not None:
            n = self.amount(dst, b)
            back = self.const(dst, "u32", (32 - (known & 31)) & 31)
        else:
            n = b if op.index in self.safe else self.amount(dst, b)
            thirty_two = self.const(dst, "u32", 32)
            back = self.bin(
                dst, "BitAnd", self.bin(dst, "Sub", thirty_two, n), self.const(dst, "u32", 31)
            )
        first, second = ("Shl", "Shr") if op.name == "RotateLeft" else ("Shr", "Shl")
        res = None if t == "i32" else op.result
        r = self.bin(
            dst, "BitOr", self.bin(dst, first, x, n), self.bin(dst, second, x, back), result=res
        )
        if t == "i32":
            dst.bitcast("I32", r, result=op.result)
        self.mark()

    def mul_high(self, op, dst, t: str) -> None:
        """The high word of the 64-bit product from 16-bit limbs; signed: the unsigned high
        word minus (a < 0 ? b : 0) minus (b < 0 ? a : 0), mod 2^32."""
        self.start(op, dst)
        a, b = op.operands
        au, bu = (dst.bitcast("U32", a), dst.bitcast("U32", b)) if t == "i32" else (a, b)
        mask, sixteen = self.const(dst, "u32", 0xFFFF), self.const(dst, "u32", 16)
        al, ah = self.bin(dst, "BitAnd", au, mask), self.bin(dst, "Shr", au, sixteen)
        bl, bh = self.bin(dst, "BitAnd", bu, mask), self.bin(dst, "Shr", bu, sixteen)
        ll, lh = self.bin(dst, "Mul", al, bl), self.bin(dst, "Mul", al, bh)
        hl, hh = self.bin(dst, "Mul", ah, bl), self.bin(dst, "Mul", ah, bh)
        low = self.bin(
            dst, "Add", self.bin(dst, "BitAnd", lh, mask), self.bin(dst, "BitAnd", hl, mask)
        )
        mid = self.bin(dst, "Add", self.bin(dst, "Shr", ll, sixteen), low)
        cross = self.bin(
            dst, "Add", self.bin(dst, "Shr", lh, sixteen), self.bin(dst, "Shr", hl, sixteen)
        )
        hi = self.bin(
            dst,
            "Add",
            self.bin(dst, "Add", hh, cross),
            self.bin(dst, "Shr", mid, sixteen),
            result=op.result if t == "u32" else None,
        )
        if t == "i32":
            zero_i, zero_u = self.const(dst, "i32", 0), self.const(dst, "u32", 0)
            fix_a = self.select(dst, self.bin(dst, "Lt", a, zero_i), bu, zero_u)
            fix_b = self.select(dst, self.bin(dst, "Lt", b, zero_i), au, zero_u)
            hi = self.bin(dst, "Sub", self.bin(dst, "Sub", hi, fix_a), fix_b)
            dst.bitcast("I32", hi, result=op.result)
        self.mark()

    def abs_diff(self, op, dst, t: str) -> None:
        """|a - b|: for integers the larger minus the smaller (wrapping), for floats abs(a - b)."""
        self.start(op, dst)
        a, b = op.operands
        if t in INTEGER:
            gt = self.bin(dst, "Gt", a, b)
            self.select(
                dst, gt, self.bin(dst, "Sub", a, b), self.bin(dst, "Sub", b, a), result=op.result
            )
        else:
            self.un(dst, "Abs", self.bin(dst, "Sub", a, b), result=op.result)
        self.mark()

    def visit_unary(self, op, dst, src, kids) -> None:
        t = self.types[op.operands[0]]
        name, a = op.name, op.operands[0]
        if name in ("Clz", "Ctz") and op.index not in self.safe:
            self.start(op, dst)
            is0 = self.bin(dst, "Eq", a, self.const(dst, t, 0))
            count = dst.op(op.kind, a)
            self.select(dst, is0, self.const(dst, t, 32), count, result=op.result)
        elif name == "Abs" and TYPES[t].element == "i32":
            self.start(op, dst)
            self.per_component(dst, t, t, a, op.result, self.abs_i32)
        elif name == "Sign" and t == "u32":
            self.start(op, dst)
            nz = self.bin(dst, "Ne", a, self.const(dst, t, 0))
            self.select(dst, nz, self.const(dst, t, 1), self.const(dst, t, 0), result=op.result)
        else:
            return self.keep(op, dst)
        self.mark()

    def abs_i32(self, dst, a: int, result=None) -> int:
        """|x| with |i32::MIN| == i32::MIN (0 - x wraps)."""
        zero = self.const(dst, "i32", 0)
        neg = self.bin(dst, "Lt", a, zero)
        return self.select(dst, neg, self.bin(dst, "Sub", zero, a), a, result=result)

    def visit_cast(self, op, dst, src, kids) -> None:
        at, target = self.types[op.operands[0]], self.types[op.result]
        if (TYPES[at].element, TYPES[target].element) not in _FLOAT_TO_INT:
            return self.keep(op, dst)
        self.start(op, dst)
        source, element = TYPES[at].element, TYPES[target].element

        def convert(d, x, result=None):
            return self.float_to_int(d, x, source, element, result)

        self.per_component(dst, at, target, op.operands[0], op.result, convert)
        self.mark()

    def float_to_int(self, dst, a: int, source: str, element: str, result=None) -> int:
        """f32 or f16 `a` -> i32 / u32: truncated toward zero, saturated, NaN -> 0."""
        if source == "f16":
            a = dst.cast(datatype("f32"), a)
        lo, hi, top = (
            (-2147483648.0, F32_I32_HI, 0x7FFFFFFF)
            if element == "i32"
            else (0.0, F32_U32_HI, 0xFFFFFFFF)
        )
        nan = self.un(dst, "IsNan", a)
        clean = self.select(dst, nan, self.const(dst, "f32", 0.0), a)
        hi_id = self.const(dst, "f32", hi)
        clamped = self.bin(
            dst, "Max", self.bin(dst, "Min", clean, hi_id), self.const(dst, "f32", lo)
        )
        value = dst.cast(datatype(element), clamped)
        over = self.bin(dst, "Gt", clean, hi_id)
        return self.select(dst, over, self.const(dst, element, top), value, result=result)

    def per_component(self, dst, at: str, target: str, a: int, result: int, scalar) -> None:
        """`scalar(dst, x, result=)` on scalar `a`, or on each component of vector `a`
        (extracted; the vector `result` constructed from the results)."""
        if TYPES[at].count == 1:
            scalar(dst, a, result=result)
            return
        parts = [scalar(dst, dst.extract(a, k)) for k in range(TYPES[at].count)]
        dst.vec(datatype(target), *parts, result=result)

    # --- memory ------------------------------------------------------------------------
    def bounds(self, dst, op, clamp: bool = False) -> tuple[int | None, int]:
        """(the index clamped into range where `clamp`, the `index < length` bool) of an
        access not proved in bounds."""
        s = self.slots[op.slot]
        index = op.element
        if s.memory_class == "Global":
            length = dst.length(s.slot)
            last = self.bin(dst, "Sub", length, self.const(dst, "u32", 1)) if clamp else None
        else:
            length = self.const(dst, "u32", s.element_count)
            last = self.const(dst, "u32", s.element_count - 1) if clamp else None
        ok = self.bin(dst, "Lt", index, length)
        if not clamp:
            return None, ok
        if s.memory_class != "Global" and s.element_count == 1:
            return last, ok  # the one element
        return self.bin(dst, "Min", index, last), ok

    def past_the_end(self, op) -> bool:
        """A literal index at or past a fixed array's end (decided before any proof: naga
        refuses such an index even on a path that cannot run)."""
        s = self.slots[op.slot]
        known = self.info.constants.get(op.element)
        return s.memory_class != "Global" and known is not None and known >= s.element_count

    def zero_instead(self, op, dst) -> None:
        """A load or atomic that is never in bounds: the value 0 under its id, no access."""
        self.start(op, dst)
        self.const(dst, self.info.slot_types[op.slot], 0, result=op.result)
        self.mark()

    def visit_load(self, op, dst, src, kids) -> None:
        # LoadGlobal / LoadShared and vyre.atomic.load: the clamped index, 0 out of bounds
        if self.past_the_end(op):
            return self.zero_instead(op, dst)
        if op.index in self.in_bounds or self.info.slot_types[op.slot] in MATRICES:
            return self.keep(op, dst)
        self.start(op, dst)
        ty = self.info.slot_types[op.slot]
        clamped, ok = self.bounds(dst, op, clamp=True)
        loaded = dst.op(op.kind, op.slot, clamped)
        self.select(dst, ok, loaded, self.const(dst, ty, 0), result=op.result)
        self.mark()

    visit_ordered_load = visit_load

    def visit_store(self, op, dst, src, kids) -> None:
        # StoreGlobal / StoreShared and vyre.atomic.store: nothing out of bounds (a matrix
        # local is one element, always at the literal index 0)
        if self.past_the_end(op):
            self.changed = True
            return None
        if op.index in self.in_bounds or self.info.slot_types[op.slot] in MATRICES:
            return self.keep(op, dst)
        self.start(op, dst)
        dst.if_(self.bounds(dst, op)[1]).keep(op.op)
        self.mark()

    visit_ordered_store = visit_store

    def visit_atomic(self, op, dst, src, kids) -> None:
        # Atomic and vyre.atomic: nothing out of bounds, where the old value is 0
        if self.past_the_end(op):
            return self.zero_instead(op, dst)
        if op.index in self.in_bounds:
            return self.keep(op, dst)
        self.start(op, dst)
        ty = self.info.slot_types[op.slot]
        ok = self.bounds(dst, op)[1]
        old = self.kb.local("Scratch", datatype(ty), 1, f"vyre.old.{op.result}")
        first = self.const(dst, "u32", 0)
        dst.store(old, first, self.const(dst, ty, 0))
        then = dst.if_(ok)
        then.store(old, first, then.op(op.kind, *op.operands))
        dst.op("LoadShared", old, first, result=op.result)
        self.mark()

    visit_ordered_atomic = visit_atomic
