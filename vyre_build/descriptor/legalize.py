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

This module holds the pass (`legalize`, `Legal`), the op table's split into `EXPANDED`
and `LEGAL_ROWS`, and the walker's bodies and small builders; the rewrites themselves are
its bases, one module each: legalize_values.py (division, shifts, rotations, MulHigh,
AbsDiff, clz / ctz, Abs, Sign, float -> integer casts) and legalize_memory.py (loads,
stores and atomics in bounds).

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
from vyre_build.descriptor.legalize_memory import MemoryRewrites
from vyre_build.descriptor.legalize_values import _FLOAT_TO_INT, ValueRewrites
from vyre_build.descriptor.ops import OPS
from vyre_build.descriptor.ranges import Proofs
from vyre_build.descriptor.types import TYPES, datatype
from vyre_build.descriptor.validate import validate
from vyre_build.descriptor.view import BodyView, OpView, Walker, view_of

__all__ = ["EXPANDED", "LEGAL_ROWS", "Legal", "legalize"]

_LITERAL = {"u32": "U32", "i32": "I32", "f32": "F32", "bool": "Bool"}


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


def legalize(
    desc: KernelDescriptor, info: DescriptorInfo | None = None, *, device_checks: bool = False
) -> Legal:
    """The legal form of validated `desc` (module docstring); `info`: its validate().

    `device_checks`: the target can leave the bounds rule of plain storage-buffer loads to
    a device that keeps it (SPIR-V under robustBufferAccess2): their index and their
    `index < length` are switched by `vyre.checked`, which is true unless the runtime says
    the device keeps the rule (legalize_memory.py's `switched`; stores keep theirs)."""
    info = info if info is not None else validate(desc)
    return _Legalizer(desc, info, device_checks).run()


class _Legalizer(ValueRewrites, MemoryRewrites, Walker):
    """`visit(op, dst, src, kids)` appends op's legal form to the body builder `dst` (`src`:
    op's body, `kids`: the builders of its children, made up front so that kept control
    flow keeps its child indices). Run once: the legal form of a legal form may guard
    again what a select made safe (the range analysis does not follow selects' conditions)."""

    def __init__(self, desc: KernelDescriptor, info: DescriptorInfo, device_checks: bool):
        self.desc, self.info = desc, info
        self.device_checks = device_checks
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
        info = validate(desc, analyze=False, legal=True)
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

    # --- ops kept as they are (the rewrites: ValueRewrites, MemoryRewrites) ------------
    visit_literal = visit_builtin = visit_subgroup_builtin = visit_loop_index = keep
    visit_checked = keep
    visit_fma = visit_select = visit_bitcast = visit_construct = visit_extract = keep
    visit_subgroup = visit_load_uniform = visit_length = keep
    visit_fence = visit_coop_load = visit_coop_fill = visit_coop_mma = visit_coop_store = keep
    visit_break_ = visit_continue_ = visit_return_ = visit_barrier = visit_debug = keep
    visit_if_ = visit_for_ = visit_loop = nested
