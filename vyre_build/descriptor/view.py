"""The descriptor's ops decoded once into typed views, and the one walker over them.

A `KernelOp` is a schema variant plus operand ids: its meaning hides in the variant's
name, its payload (an OpaqueExpr's extension name and bytes) and the operand positions.
`decode_view(desc)` reads every op once into a frozen `OpView` of one class per op family
(`Binary`, `Cast`, `Load`, `OrderedAtomic`, `CoopMma`, `If`, `Debug`, ...; `OP_CLASSES`),
payloads decoded (cast targets as value-type names, memory-order accesses, matrix types,
subgroup op names) and the operands named by role (`Load.slot`, `Load.element`). Every op
knows its `index`: its position in one numbering of the descriptor's ops (each body's
ops in order, then its children's, depth first), so facts about an op (the range
analysis's proofs) are keyed by that index. (`DescriptorView.of` finds the view of a raw
`KernelOp` by its `id()`, only for callers that still hold raw ops, such as
bench/codegen_bench.py; facts never are.)

Decoding is total: any descriptor decodes (validation reads the view too), an op
vyre_build does not use becomes `Unknown`, a payload that does not decode leaves its
field None, and operands are read by position only when asked for. An `OpView` also
answers `kind`, `operands` and `result` as its `KernelOp` does, and a `BodyView` answers
`ops`, `children` and `literals` as its `KernelBody` does, so code written against the raw
form reads the view unchanged.

`Walker` is the one dispatch over ops: a subclass defines one method per op class (its
`method` name: `visit_binary`, `visit_load`, `visit_if_` ...), and `visit(op, *args)`
calls it through a table built once per subclass. Every walker of the package (validation,
the range analysis, coarsening, both emitters, the reference, the conformance coverage)
handles every class: a test holds them to it (tests/unit/test_op_view.py).

The op classes are defined in view_ops.py (`OpView`, values, control flow) and
view_memory.py (loads, stores, atomics, memory order, cooperative matrices), and imported
from here, where the decoders make them and `OP_CLASSES` lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from vyre_build.descriptor import matrices as mx
from vyre_build.descriptor import memory_order as mo
from vyre_build.descriptor.codec import KernelBody, KernelDescriptor, KernelOp, decode_datatype
from vyre_build.descriptor.ops import SUBGROUP_KINDS
from vyre_build.descriptor.types import type_of
from vyre_build.descriptor.view_memory import (
    Atomic,
    CoopFill,
    CoopLoad,
    CoopMma,
    CoopStore,
    Fence,
    Length,
    Load,
    LoadUniform,
    OrderedAtomic,
    OrderedLoad,
    OrderedStore,
    Store,
)
from vyre_build.descriptor.view_ops import (
    Barrier,
    Binary,
    Bitcast,
    Break,
    Builtin,
    Cast,
    Checked,
    Construct,
    Continue,
    Debug,
    Extract,
    Fma,
    For,
    If,
    Literal,
    Loop,
    LoopIndex,
    OpView,
    Return,
    Select,
    Subgroup,
    SubgroupBuiltin,
    Unary,
    Unknown,
)
from vyre_build.core.errors import DescriptorFormatError

__all__ = [
    "OP_CLASSES",
    "OpView",
    "BodyView",
    "DescriptorView",
    "Walker",
    "decode_op",
    "decode_view",
    "view_of",
]


OP_CLASSES: tuple[type[OpView], ...] = (
    Literal,
    Builtin,
    SubgroupBuiltin,
    Checked,
    LoopIndex,
    Binary,
    Unary,
    Fma,
    Select,
    Cast,
    Bitcast,
    Construct,
    Extract,
    Subgroup,
    Load,
    LoadUniform,
    Length,
    Store,
    Atomic,
    OrderedAtomic,
    OrderedLoad,
    OrderedStore,
    Fence,
    CoopLoad,
    CoopFill,
    CoopMma,
    CoopStore,
    If,
    For,
    Loop,
    Break,
    Continue,
    Return,
    Barrier,
    Debug,
    Unknown,
)

# --- decoding ------------------------------------------------------------------------------

_AXES = ("GlobalInvocationId", "LocalInvocationId", "WorkgroupId")
_SUBGROUP_IDS = ("SubgroupLocalId", "SubgroupSize")


def _type_or_none(datatype) -> str | None:
    try:
        return type_of(datatype)
    except DescriptorFormatError:
        return None


def _payload_type(payload: bytes) -> str | None:
    try:
        return type_of(decode_datatype(payload))
    except (DescriptorFormatError, ValueError):
        return None


def _opaque_expr(index: int, op: KernelOp) -> OpView:
    ext, data = op.kind.args[1], op.kind.args[2]
    if ext in ("vyre.num_workgroups",):
        return Builtin(index, op, ext)
    if ext in ("vyre.subgroup_id", "vyre.num_subgroups"):
        return SubgroupBuiltin(index, op, ext)
    if ext == "vyre.checked":
        return Checked(index, op)
    if ext == "vyre.bitcast":
        return Bitcast(index, op, _payload_type(data))
    if ext == "vyre.vec":
        return Construct(index, op, _payload_type(data))
    if ext == "vyre.extract":
        return Extract(index, op, data[0] if len(data) == 1 else None)
    if ext == "vyre.subgroup":
        return Subgroup(index, op, data.decode("ascii", "replace"))
    if ext == mx.LOAD:
        return CoopLoad(index, op, _payload_type(data))
    if ext == mx.FILL:
        return CoopFill(index, op, _payload_type(data))
    if ext == mx.MMA:
        return CoopMma(index, op, False)
    if ext == mo.ATOMIC:
        return OrderedAtomic(index, op, mo.access_of(ext, data))
    if ext == mo.LOAD:
        return OrderedLoad(index, op, mo.access_of(ext, data))
    return Unknown(index, op)


def _opaque_node(index: int, op: KernelOp) -> OpView:
    ext, data = op.kind.args
    if ext == "vyre.loop":
        return Loop(index, op)
    if ext == "vyre.break":
        return Break(index, op)
    if ext == "vyre.continue":
        return Continue(index, op)
    if ext == mx.STORE:
        return CoopStore(index, op)
    if ext == mo.STORE:
        return OrderedStore(index, op, mo.access_of(ext, data))
    if ext == mo.FENCE:
        return Fence(index, op, mo.access_of(ext, data))
    if ext.startswith("vyre.debug."):
        site = int.from_bytes(data, "little") if len(data) == 4 else None
        return Debug(index, op, ext, site)
    return Unknown(index, op)


def _literal(index: int, op: KernelOp, literals: tuple) -> OpView:
    o = op.operands
    ok = len(o) == 1 and isinstance(o[0], int) and 0 <= o[0] < len(literals)
    return Literal(index, op, literals[o[0]] if ok else None)


# One decoder per KernelOpKind name vyre_build uses: (index, op, literal pool) -> view.
_DECODERS = {
    "Literal": _literal,
    **{n: (lambda i, op, _: Builtin(i, op, op.kind.name)) for n in _AXES},
    **{n: (lambda i, op, _: SubgroupBuiltin(i, op, op.kind.name)) for n in _SUBGROUP_IDS},
    "LoopIndex": lambda i, op, _: LoopIndex(i, op, op.kind.args[0]),
    "BinOpKind": lambda i, op, _: Binary(i, op, op.kind.args[0].name),
    "UnOpKind": lambda i, op, _: Unary(i, op, op.kind.args[0].name),
    "Fma": lambda i, op, _: Fma(i, op),
    "Select": lambda i, op, _: Select(i, op),
    "Cast": lambda i, op, _: Cast(i, op, _type_or_none(op.kind.args[0])),
    **{k: (lambda i, op, _: Subgroup(i, op, SUBGROUP_KINDS[op.kind.name])) for k in SUBGROUP_KINDS},
    "LoadGlobal": lambda i, op, _: Load(i, op, False),
    "LoadShared": lambda i, op, _: Load(i, op, True),
    "StoreGlobal": lambda i, op, _: Store(i, op, False),
    "StoreShared": lambda i, op, _: Store(i, op, True),
    "LoadConstant": lambda i, op, _: LoadUniform(i, op),
    "BufferLength": lambda i, op, _: Length(i, op),
    "Atomic": lambda i, op, _: Atomic(i, op, op.kind.args[0].name, op.kind.args[1]),
    "MatrixMma": lambda i, op, _: CoopMma(i, op, True),
    "StructuredIfThen": lambda i, op, _: If(i, op),
    "StructuredIfThenElse": lambda i, op, _: If(i, op),
    "StructuredForLoop": lambda i, op, _: For(i, op, op.kind.args[0]),
    "Return": lambda i, op, _: Return(i, op),
    "Barrier": lambda i, op, _: Barrier(i, op, op.kind.args[0]),
    "OpaqueExpr": lambda i, op, _: _opaque_expr(i, op),
    "OpaqueNode": lambda i, op, _: _opaque_node(i, op),
}


def decode_op(index: int, op: KernelOp, literals: tuple = ()) -> OpView:
    """The view of `op` numbered `index` (`literals`: its body's literal pool). Total."""
    decoder = _DECODERS.get(op.kind.name)
    return Unknown(index, op) if decoder is None else decoder(index, op, literals)


@dataclass(frozen=True, slots=True, eq=False)
class BodyView:
    """A decoded `KernelBody`: its ops' views, its children's views and its literal pool."""

    ops: tuple[OpView, ...]
    children: tuple[BodyView, ...]
    literals: tuple
    raw: KernelBody


@dataclass(frozen=True, slots=True, eq=False)
class DescriptorView:
    """A descriptor's decoded body; `ops` lists every op's view by its index."""

    desc: KernelDescriptor
    body: BodyView
    ops: tuple[OpView, ...]
    by_op: dict[int, OpView]  # id(KernelOp) -> its view: `of`, for callers holding raw ops

    def of(self, op: KernelOp | OpView) -> OpView:
        """The view of one of this descriptor's ops (a view is its own)."""
        return op if isinstance(op, OpView) else self.by_op[id(op)]


def decode_view(desc: KernelDescriptor) -> DescriptorView:
    """Every op of `desc` decoded once (module docstring): each body's ops numbered in
    order, then its children's, depth first."""
    flat: list[OpView] = []

    def body(b: KernelBody) -> BodyView:
        base = len(flat)
        lits = b.literals
        ops = tuple(decode_op(base + i, op, lits) for i, op in enumerate(b.ops))
        flat.extend(ops)
        return BodyView(ops, tuple(body(c) for c in b.children), lits, b)

    root = body(desc.body)
    return DescriptorView(desc, root, tuple(flat), {id(v.op): v for v in flat})


def view_of(desc: KernelDescriptor, info) -> DescriptorView:
    """The view validation decoded into `info` (a DescriptorInfo), else a fresh decode."""
    got = getattr(info, "view", None)
    return got if got is not None and got.desc is desc else decode_view(desc)


# --- the walker ----------------------------------------------------------------------------


class Walker:
    """One method per op class (`OpView.method`); `visit` dispatches through a table built
    once per subclass. A subclass that leaves a class unhandled fails the walker test;
    `visit_unknown` (an op vyre_build does not use) is an error unless a subclass handles it."""

    _dispatch: ClassVar[dict[type, Any]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._dispatch = {
            c: getattr(cls, c.method) for c in OP_CLASSES if callable(getattr(cls, c.method, None))
        }

    @classmethod
    def unhandled(cls) -> list[str]:
        """The op classes this walker has no method for (the walker test wants none)."""
        return [c.__name__ for c in OP_CLASSES if c not in cls._dispatch]

    def visit(self, op: OpView, *args):
        try:
            method = self._dispatch[op.__class__]
        except KeyError:
            raise TypeError(
                f"{type(self).__name__} has no method {op.method!r} for {type(op).__name__} "
                f"({op!r})"
            ) from None
        return method(self, op, *args)

    def visit_unknown(self, op: OpView, *args):
        raise DescriptorFormatError(f"op kind not used by vyre_build: {op!r}")
