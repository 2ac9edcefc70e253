"""The op views of memory: loads, stores, atomics, their memory-order forms, coop matrices.

Frozen classes over `view_ops.OpView`, like the others (view_ops.py): `descriptor.view`
decodes ops into them and lists them in `OP_CLASSES`, and importers take them from there.
An op on a slot names it as operand 0 (`slot`) and the element index (`element`) or first
element (`offset`) as operand 1, each read only when asked for; a memory-order op carries
its decoded `access` (descriptor.memory_order: its op, scope and order; None where the
payload does not decode), a cooperative-matrix load or fill its `matrix` type
(descriptor.matrices; None likewise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vyre_build.descriptor import memory_order as mo
from vyre_build.descriptor.view_ops import OpView, _at

__all__ = [
    "Load",
    "LoadUniform",
    "Length",
    "Store",
    "Atomic",
    "OrderedAtomic",
    "OrderedLoad",
    "OrderedStore",
    "Fence",
    "CoopLoad",
    "CoopFill",
    "CoopMma",
    "CoopStore",
]


# --- memory ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Load(OpView):
    """LoadGlobal / LoadShared [slot, index] (`shared`: LoadShared, Shared or Scratch)."""

    method: ClassVar[str] = "visit_load"
    shared: bool = False
    slot = _at(0, "slot number")
    element = _at(1, "element index (u32)")


@dataclass(frozen=True, slots=True, eq=False)
class LoadUniform(OpView):
    """LoadConstant [slot, 0]: a member of the uniform block."""

    method: ClassVar[str] = "visit_load_uniform"
    slot = _at(0, "slot number")


@dataclass(frozen=True, slots=True, eq=False)
class Length(OpView):
    """BufferLength [slot]: elements of a storage buffer, or a fixed array's count."""

    method: ClassVar[str] = "visit_length"
    slot = _at(0, "slot number")


@dataclass(frozen=True, slots=True, eq=False)
class Store(OpView):
    """StoreGlobal / StoreShared [slot, index, value]."""

    method: ClassVar[str] = "visit_store"
    statement: ClassVar[bool] = True
    shared: bool = False
    slot = _at(0, "slot number")
    element = _at(1, "element index (u32)")
    value = _at(2, "the stored value")


@dataclass(frozen=True, slots=True, eq=False)
class Atomic(OpView):
    """Atomic{name, ordering} [slot, index, (expected,) value]: yields the old value."""

    method: ClassVar[str] = "visit_atomic"
    name: str = ""
    ordering: str = ""
    slot = _at(0, "slot number")
    element = _at(1, "element index (u32)")

    @property
    def args(self) -> tuple[int, ...]:
        return self.op.operands[2:]

    @property
    def key(self):
        return ("Atomic", self.name)


# --- memory scopes and orders (descriptor.memory_order) ------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class OrderedAtomic(OpView):
    """OpaqueExpr vyre.atomic [slot, index, (expected,) value] with its `access` (None: a
    payload that does not decode)."""

    method: ClassVar[str] = "visit_ordered_atomic"
    access: mo.Access | None = None
    slot = _at(0, "slot number")
    element = _at(1, "element index (u32)")

    @property
    def name(self) -> str:
        return self.access.op if self.access is not None else ""

    @property
    def args(self) -> tuple[int, ...]:
        return self.op.operands[2:]

    @property
    def key(self):
        return ("Atomic", self.name)


@dataclass(frozen=True, slots=True, eq=False)
class OrderedLoad(OpView):
    """OpaqueExpr vyre.atomic.load [slot, index] with its `access`."""

    method: ClassVar[str] = "visit_ordered_load"
    access: mo.Access | None = None
    slot = _at(0, "slot number")
    element = _at(1, "element index (u32)")


@dataclass(frozen=True, slots=True, eq=False)
class OrderedStore(OpView):
    """OpaqueNode vyre.atomic.store [slot, index, value] with its `access`."""

    method: ClassVar[str] = "visit_ordered_store"
    statement: ClassVar[bool] = True
    access: mo.Access | None = None
    slot = _at(0, "slot number")
    element = _at(1, "element index (u32)")
    value = _at(2, "the stored value")


@dataclass(frozen=True, slots=True, eq=False)
class Fence(OpView):
    """OpaqueNode vyre.fence [] with its `access` (scope and order)."""

    method: ClassVar[str] = "visit_fence"
    statement: ClassVar[bool] = True
    access: mo.Access | None = None


# --- cooperative matrices (descriptor.matrices) --------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class CoopLoad(OpView):
    """OpaqueExpr vyre.coop.load [slot, offset, stride]: a `matrix` (payload: its DataType)."""

    method: ClassVar[str] = "visit_coop_load"
    matrix: str | None = None
    slot = _at(0, "slot number")
    offset = _at(1, "first element (u32)")
    stride = _at(2, "elements between rows (u32)")


@dataclass(frozen=True, slots=True, eq=False)
class CoopFill(OpView):
    """OpaqueExpr vyre.coop.fill [value]: a `matrix` with every element `value`."""

    method: ClassVar[str] = "visit_coop_fill"
    matrix: str | None = None
    value = _at(0, "the element value")


@dataclass(frozen=True, slots=True, eq=False)
class CoopMma(OpView):
    """MatrixMma (`schema`) or OpaqueExpr vyre.coop.mma [a, b, c]: a x b + c."""

    method: ClassVar[str] = "visit_coop_mma"
    schema: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class CoopStore(OpView):
    """OpaqueNode vyre.coop.store [slot, offset, stride, value]."""

    method: ClassVar[str] = "visit_coop_store"
    statement: ClassVar[bool] = True
    slot = _at(0, "slot number")
    offset = _at(1, "first element (u32)")
    stride = _at(2, "elements between rows (u32)")
    value = _at(3, "the matrix")
