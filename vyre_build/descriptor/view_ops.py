"""The op views of values and of control flow, and `OpView`, the base of every op view.

One frozen class per op family; `descriptor.view` decodes every op of a descriptor into
one (`decode_view`) and lists them all (`OP_CLASSES`), those of view_memory.py (loads,
stores, atomics, memory order, cooperative matrices) included, and importers take every
class from there. A class names the `Walker` method that handles it (`method`) and whether it
is a statement (control flow or a side effect: no value of its own); its fields are its
decoded payload (None where the payload does not decode), and its operands are named by
role (`Binary.a`, `If.cond`), each read by position only when asked for (`_at`), so that
a malformed op decodes all the same. An `OpView` answers `kind`, `operands` and `result`
as its `KernelOp` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from vyre_build.descriptor.codec import KernelOp

__all__ = [
    "OpView",
    "Literal",
    "Builtin",
    "SubgroupBuiltin",
    "Checked",
    "LoopIndex",
    "Binary",
    "Unary",
    "Fma",
    "Select",
    "Cast",
    "Bitcast",
    "Construct",
    "Extract",
    "Subgroup",
    "If",
    "For",
    "Loop",
    "Break",
    "Continue",
    "Return",
    "Barrier",
    "Debug",
    "Unknown",
]


def _at(i: int, doc: str) -> property:
    """The operand at position `i` (read when asked: a malformed op decodes all the same)."""
    return property(lambda self: self.op.operands[i], doc=doc)


@dataclass(frozen=True, slots=True, eq=False)
class OpView:
    """One decoded op: its index in the descriptor's numbering and its raw `KernelOp`."""

    method: ClassVar[str] = ""  # the Walker method that handles this class
    statement: ClassVar[bool] = False  # control flow or a side effect: no value of its own

    index: int
    op: KernelOp

    @property
    def kind(self):
        return self.op.kind

    @property
    def operands(self) -> tuple[int, ...]:
        return self.op.operands

    @property
    def result(self) -> int | None:
        return self.op.result

    @property
    def children(self) -> tuple[int, ...]:
        """The child bodies this op runs (indices into its body's children)."""
        return ()

    @property
    def loops(self) -> bool:
        """Whether this op's child bodies are a loop's (break and continue leave them)."""
        return False

    def __repr__(self) -> str:
        return f"#{self.index} {self.op.kind!r} {list(self.op.operands)} -> {self.op.result}"


# --- values ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Literal(OpView):
    """Literal [pool index]: `value` is the LiteralValue (None: the index is out of range)."""

    method: ClassVar[str] = "visit_literal"
    value: Any = None


@dataclass(frozen=True, slots=True, eq=False)
class Builtin(OpView):
    """A per-axis u32 id: GlobalInvocationId, LocalInvocationId, WorkgroupId [axis], or the
    OpaqueExpr vyre.num_workgroups [axis]; `name` is that name."""

    method: ClassVar[str] = "visit_builtin"
    name: str = ""
    axis = _at(0, "0, 1 or 2")


@dataclass(frozen=True, slots=True, eq=False)
class SubgroupBuiltin(OpView):
    """A u32 of the invocation's subgroup: SubgroupLocalId, SubgroupSize, or the OpaqueExpr
    vyre.subgroup_id / vyre.num_subgroups; `name` is that name."""

    method: ClassVar[str] = "visit_subgroup_builtin"
    name: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class Checked(OpView):
    """OpaqueExpr vyre.checked []: a bool, true where the module keeps the pinned bounds
    rule of its storage-buffer loads itself, false where the device does
    (descriptor.legalize writes it; docs/descriptor-conventions.md)."""

    method: ClassVar[str] = "visit_checked"


@dataclass(frozen=True, slots=True, eq=False)
class LoopIndex(OpView):
    """The index of the enclosing StructuredForLoop named `var`."""

    method: ClassVar[str] = "visit_loop_index"
    var: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class Binary(OpView):
    """BinOpKind `name` [a, b]."""

    method: ClassVar[str] = "visit_binary"
    name: str = ""
    a = _at(0, "left operand")
    b = _at(1, "right operand")

    @property
    def key(self):
        return ("BinOpKind", self.name)


@dataclass(frozen=True, slots=True, eq=False)
class Unary(OpView):
    """UnOpKind `name` [a]."""

    method: ClassVar[str] = "visit_unary"
    name: str = ""
    a = _at(0, "operand")

    @property
    def key(self):
        return ("UnOpKind", self.name)


@dataclass(frozen=True, slots=True, eq=False)
class Fma(OpView):
    """Fma [a, b, c]: a * b + c."""

    method: ClassVar[str] = "visit_fma"
    key: ClassVar[tuple] = ("Fma", "")


@dataclass(frozen=True, slots=True, eq=False)
class Select(OpView):
    """Select [cond, if_true, if_false]."""

    method: ClassVar[str] = "visit_select"
    key: ClassVar[tuple] = ("Select", "")
    cond = _at(0, "the bool condition")
    if_true = _at(1, "the value where cond holds")
    if_false = _at(2, "the value where it does not")


@dataclass(frozen=True, slots=True, eq=False)
class Cast(OpView):
    """Cast [a] to the value type `target` (None: a DataType vyre_build has no type for)."""

    method: ClassVar[str] = "visit_cast"
    target: str | None = None
    a = _at(0, "operand")

    @property
    def key(self):
        return ("Cast", self.target)


@dataclass(frozen=True, slots=True, eq=False)
class Bitcast(OpView):
    """OpaqueExpr vyre.bitcast [a]: the bits of `a` as `target` (payload: its DataType)."""

    method: ClassVar[str] = "visit_bitcast"
    target: str | None = None
    a = _at(0, "operand")

    @property
    def key(self):
        return ("Bitcast", self.target)


@dataclass(frozen=True, slots=True, eq=False)
class Construct(OpView):
    """OpaqueExpr vyre.vec [components...]: the vector `target` (payload: its DataType)."""

    method: ClassVar[str] = "visit_construct"
    target: str | None = None

    @property
    def key(self):
        return ("Construct", self.target)


@dataclass(frozen=True, slots=True, eq=False)
class Extract(OpView):
    """OpaqueExpr vyre.extract [vector]: component `component` (payload: one byte)."""

    method: ClassVar[str] = "visit_extract"
    key: ClassVar[tuple] = ("Extract", "")
    component: int | None = None
    a = _at(0, "the vector")


@dataclass(frozen=True, slots=True, eq=False)
class Subgroup(OpView):
    """A subgroup op `name` (descriptor.ops SUBGROUP_*): SubgroupAdd, SubgroupBallot,
    SubgroupShuffle, or the OpaqueExpr vyre.subgroup (payload: the name)."""

    method: ClassVar[str] = "visit_subgroup"
    name: str = ""

    @property
    def key(self):
        return ("Subgroup", self.name)


# --- statements --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class If(OpView):
    """StructuredIfThen [cond, then] / StructuredIfThenElse [cond, then, else]."""

    method: ClassVar[str] = "visit_if_"
    statement: ClassVar[bool] = True
    cond = _at(0, "the bool condition")
    then = _at(1, "the child body run where cond holds")

    @property
    def other(self) -> int | None:
        """The else body's child index (None: no else)."""
        return self.op.operands[2] if len(self.op.operands) == 3 else None

    @property
    def children(self) -> tuple[int, ...]:
        return tuple(self.op.operands[1:])


@dataclass(frozen=True, slots=True, eq=False)
class For(OpView):
    """StructuredForLoop{var} [lo, hi, body]: var from lo while below hi."""

    method: ClassVar[str] = "visit_for_"
    statement: ClassVar[bool] = True
    var: str = ""
    lo = _at(0, "first index")
    hi = _at(1, "bound (exclusive)")
    body = _at(2, "the child body of one iteration")

    @property
    def children(self) -> tuple[int, ...]:
        return (self.op.operands[2],)

    @property
    def loops(self) -> bool:
        return True


@dataclass(frozen=True, slots=True, eq=False)
class Loop(OpView):
    """OpaqueNode vyre.loop [body] or [body, continuing]."""

    method: ClassVar[str] = "visit_loop"
    statement: ClassVar[bool] = True
    body = _at(0, "the child body of one iteration")

    @property
    def continuing(self) -> int | None:
        return self.op.operands[1] if len(self.op.operands) == 2 else None

    @property
    def children(self) -> tuple[int, ...]:
        return tuple(self.op.operands)

    @property
    def loops(self) -> bool:
        return True


@dataclass(frozen=True, slots=True, eq=False)
class Break(OpView):
    """OpaqueNode vyre.break: leave the innermost loop."""

    method: ClassVar[str] = "visit_break_"
    statement: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class Continue(OpView):
    """OpaqueNode vyre.continue: the innermost loop's next iteration."""

    method: ClassVar[str] = "visit_continue_"
    statement: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class Return(OpView):
    """Return: the invocation ends."""

    method: ClassVar[str] = "visit_return_"
    statement: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class Barrier(OpView):
    """Barrier{ordering}: AcqRel (workgroup memory) or SeqCst (storage too)."""

    method: ClassVar[str] = "visit_barrier"
    statement: ClassVar[bool] = True
    ordering: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class Debug(OpView):
    """OpaqueNode vyre.debug.print / .assert / .bounds (`name`), `site` from its payload
    (None: not a 4-byte site id)."""

    method: ClassVar[str] = "visit_debug"
    statement: ClassVar[bool] = True
    name: str = ""
    site: int | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Unknown(OpView):
    """An op kind or extension vyre_build does not use (validation refuses it)."""

    method: ClassVar[str] = "visit_unknown"
    statement: ClassVar[bool] = True
