"""The one way to build a KernelDescriptor op by op (docs/descriptor-conventions.md).

`KernelBuilder` holds the descriptor's id, workgroup size and slots, one counter of SSA
result ids for the whole descriptor, and the root `BodyBuilder`. A `BodyBuilder` appends
ops to its body: value ops take the next id in creation order, `lit` adds to the body's
literal pool (and the `Literal` op that reads it), `child` opens a child body for an
if, a loop or a for (its index is the one it will have in the finished body), and the
helpers spell each op family's kind and operand order once. Lowering
(`frontend/lower.py`), coarsening (`descriptor/coarsen.py`) and the tests' hand-built
descriptors (`tests/descriptors.py`) all build through it.

Passes that rewrite a descriptor (`descriptor.legalize`) build through it too: `keep`
appends an op of the input as it is, `seed` starts a body's pool with the input's, and
`result=` gives a rewritten op its old id.

Guarantees: `build()` returns the ops exactly as appended, the same `KernelOp` objects
(so a caller may key notes by them), slots sorted by number. With `intern=True` a
literal equal to one made earlier in the same body or an enclosing one (same variant,
same value; f32 compared by its bits) reuses that `Literal` op's id: no new pool entry,
no new op. Without it every `lit` call adds both. Nothing here checks the descriptor:
`descriptor.validate` does that.
"""

from __future__ import annotations

import struct

from vyre_build.descriptor.codec import (
    SHARED_SLOT_BASE,
    BindingSlot,
    F32Bits,
    KernelBody,
    KernelDescriptor,
    KernelOp,
    Variant,
    encode_datatype,
)

__all__ = ["KernelBuilder", "BodyBuilder", "dt", "vt"]

_EXITS = ("vyre.break", "vyre.continue")


def dt(ty) -> Variant:
    """A DataType from its variant name ("F32"), or the `Variant` itself."""
    return ty if isinstance(ty, Variant) else Variant(ty)


def vt(elem: str, n: int) -> Variant:
    """The DataType of an `n`-component vector of `elem`: Vec{elem, n}."""
    return Variant("Vec", (Variant(elem), n))


def _lit_key(name: str, value) -> tuple:
    if name == "F32":
        return (name, value.bits if isinstance(value, F32Bits) else struct.pack("<f", value))
    return (name, int(value))


class KernelBuilder:
    """A descriptor under construction: id, workgroup size, slots and the root `body`.

    `first_id`: the first SSA result id; `first_private`: the lowest number a new Shared
    or Scratch slot may take; `intern`: literals interned per scope (module docstring)."""

    def __init__(
        self,
        name: str = "k",
        wg=(64, 1, 1),
        slots=(),
        *,
        first_id: int = 0,
        first_private: int = SHARED_SLOT_BASE,
        intern: bool = False,
    ):
        self.name, self.wg, self.slots = name, tuple(wg), list(slots)
        self.next_id = first_id
        self.first_private = first_private
        self.intern = intern
        self.body = BodyBuilder(self, None)

    def fresh(self) -> int:
        """The next SSA result id."""
        rid = self.next_id
        self.next_id += 1
        return rid

    # --- slots ------------------------------------------------------------------------
    def binding(self, ty, count, memory_class: str, visibility: str, name: str) -> int:
        """A new binding (below SHARED_SLOT_BASE), numbered after every binding so far."""
        slot = max([s.slot for s in self.slots if s.slot < SHARED_SLOT_BASE], default=-1) + 1
        self.slots.append(BindingSlot(slot, dt(ty), count, memory_class, visibility, name))
        return slot

    def buffer(self, ty, vis: str, name: str) -> int:
        """A new storage buffer (Global)."""
        return self.binding(ty, None, "Global", vis, name)

    def scalar(self, ty, name: str) -> int:
        """A new uniform parameter."""
        return self.binding(ty, 1, "Uniform", "ReadOnly", name)

    def local(self, cls: str, ty, n, name: str) -> int:
        """A new Shared or Scratch slot of `n` elements, numbered after every such slot so
        far (from `first_private`)."""
        taken = [s.slot for s in self.slots if s.slot >= SHARED_SLOT_BASE]
        slot = max(taken + [self.first_private - 1]) + 1
        self.slots.append(BindingSlot(slot, dt(ty), n, cls, "ReadWrite", name))
        return slot

    def build(self) -> KernelDescriptor:
        slots = tuple(sorted(self.slots, key=lambda s: s.slot))
        return KernelDescriptor(self.name, slots, self.wg, self.body.build())


class BodyBuilder:
    """One KernelBody under construction; value methods return the new SSA id."""

    def __init__(self, kernel: KernelBuilder, parent: BodyBuilder | None):
        self.kernel, self.parent = kernel, parent
        self.ops: list[KernelOp] = []
        self.children: list[BodyBuilder] = []
        self.lits: list[Variant] = []
        self._interned: dict[tuple, int] = {}  # literal key -> its Literal op's id

    def op(self, kind, *operands, value: bool = True, result: int | None = None) -> int | None:
        """Append an op of `kind` (a Variant or a payload-less kind name); `value`: whether
        it has a result; `result`: that result's id where it is given (a pass that rewrites
        an op keeps its id), else the next one."""
        rid = result if result is not None else self.kernel.fresh() if value else None
        self.ops.append(KernelOp(dt(kind), tuple(operands), rid))
        return rid

    def keep(self, op: KernelOp) -> None:
        """Append an op of another descriptor as it is (the same object: a pass copies the
        ops it leaves alone; their result ids must stay below the kernel's `first_id`)."""
        self.ops.append(op)

    def seed(self, literals) -> None:
        """Start this body's literal pool with `literals` (a pass rewriting a body keeps its
        Literal ops' pool indices); new literals follow them."""
        self.lits.extend(literals)

    # --- values -----------------------------------------------------------------------
    def lit(self, ty: str, v, result: int | None = None) -> int:
        """A literal of LiteralValue variant `ty` (U32, I32, F32, Bool); under id `result`
        where it is given (a new pool entry: never interned)."""
        if result is not None:
            self.lits.append(Variant(ty, (v,)))
            return self.op("Literal", len(self.lits) - 1, result=result)
        if not self.kernel.intern:
            self.lits.append(Variant(ty, (v,)))
            return self.op("Literal", len(self.lits) - 1)
        key = _lit_key(ty, v)
        b = self
        while b is not None:
            if key in b._interned:
                return b._interned[key]
            b = b.parent
        self.lits.append(Variant(ty, (v,)))
        rid = self._interned[key] = self.op("Literal", len(self.lits) - 1)
        return rid

    def u32(self, v):
        return self.lit("U32", v)

    def i32(self, v):
        return self.lit("I32", v)

    def f32(self, v):
        return self.lit("F32", v)

    def bool(self, v):
        return self.lit("Bool", v)

    def gid(self, axis: int = 0):
        return self.op("GlobalInvocationId", axis)

    def lid(self, axis: int = 0):
        return self.op("LocalInvocationId", axis)

    def wid(self, axis: int = 0):
        return self.op("WorkgroupId", axis)

    def num_workgroups(self, axis: int = 0):
        return self.expr("vyre.num_workgroups", axis)

    def bin(self, name: str, a, b):
        return self.op(Variant("BinOpKind", (Variant(name),)), a, b)

    def un(self, name: str, a):
        return self.op(Variant("UnOpKind", (Variant(name),)), a)

    def fma(self, a, b, c):
        return self.op("Fma", a, b, c)

    def select(self, cond, if_true, if_false):
        return self.op("Select", cond, if_true, if_false)

    def cast(self, ty, a, result: int | None = None):
        return self.op(Variant("Cast", (dt(ty),)), a, result=result)

    def expr(self, kind: str, *operands, payload: bytes = b"", result: int | None = None):
        """An OpaqueExpr of extension `kind` (a value)."""
        return self.op(Variant("OpaqueExpr", (0, kind, payload)), *operands, result=result)

    def bitcast(self, ty, a, result: int | None = None):
        return self.expr("vyre.bitcast", a, payload=encode_datatype(dt(ty)), result=result)

    def vec(self, ty, *parts, result: int | None = None):
        """vyre.vec of `parts` into `ty`: a vector DataType, or an element type name
        ("F32") for the vector of that many components."""
        ty = vt(ty, len(parts)) if isinstance(ty, str) else ty
        return self.expr("vyre.vec", *parts, payload=encode_datatype(ty), result=result)

    def splat(self, elem: str, n: int, x):
        return self.vec(elem, *([x] * n))

    def extract(self, v, k: int):
        return self.expr("vyre.extract", v, payload=bytes([k]))

    def loop_index(self, var: str):
        return self.op(Variant("LoopIndex", (var,)))

    # --- memory -----------------------------------------------------------------------
    def load(self, slot: int, index):
        """LoadGlobal, or LoadShared for a Shared/Scratch slot (numbered from
        SHARED_SLOT_BASE)."""
        return self.op("LoadGlobal" if slot < SHARED_SLOT_BASE else "LoadShared", slot, index)

    def store(self, slot: int, index, v) -> None:
        kind = "StoreGlobal" if slot < SHARED_SLOT_BASE else "StoreShared"
        self.op(kind, slot, index, v, value=False)

    def param(self, slot: int):
        """LoadConstant of a uniform slot (its index is the u32 literal 0)."""
        return self.op("LoadConstant", slot, self.u32(0))

    def length(self, slot: int):
        return self.op("BufferLength", slot)

    def atomic(self, name: str, slot: int, index, *values):
        return self.op(Variant("Atomic", (Variant(name), "Relaxed")), slot, index, *values)

    # --- control flow -----------------------------------------------------------------
    def child(self) -> tuple[int, BodyBuilder]:
        """A new child body: (its index, the body)."""
        self.children.append(BodyBuilder(self.kernel, self))
        return len(self.children) - 1, self.children[-1]

    def if_(self, cond) -> BodyBuilder:
        idx, then = self.child()
        self.op("StructuredIfThen", cond, idx, value=False)
        return then

    def if_else(self, cond) -> tuple[BodyBuilder, BodyBuilder]:
        (i, then), (j, other) = self.child(), self.child()
        self.op("StructuredIfThenElse", cond, i, j, value=False)
        return then, other

    def for_(self, var: str, lo, hi) -> BodyBuilder:
        idx, body = self.child()
        self.op(Variant("StructuredForLoop", (var,)), lo, hi, idx, value=False)
        return body

    def node(self, kind: str, *operands, payload: bytes = b"") -> None:
        """An OpaqueNode of extension `kind` (a statement: vyre.loop, vyre.break, ...)."""
        self.op(Variant("OpaqueNode", (kind, payload)), *operands, value=False)

    def loop(self, continuing: bool = False):
        """A vyre.loop: its body, or (body, continuing block)."""
        i, body = self.child()
        if not continuing:
            self.node("vyre.loop", i)
            return body
        j, cont = self.child()
        self.node("vyre.loop", i, j)
        return body, cont

    def brk(self) -> None:
        self.node("vyre.break")

    def cont(self) -> None:
        self.node("vyre.continue")

    def ret(self) -> None:
        self.op("Return", value=False)

    def barrier(self, ordering: str = "AcqRel") -> None:
        self.op(Variant("Barrier", (ordering,)), value=False)

    def ends(self) -> bool:
        """Whether the body ends in a break, continue or return (nothing may follow)."""
        if not self.ops:
            return False
        last = self.ops[-1].kind
        return last.name == "Return" or (last.name == "OpaqueNode" and last.args[0] in _EXITS)

    def build(self) -> KernelBody:
        kids = tuple(c.build() for c in self.children)
        return KernelBody(tuple(self.ops), kids, tuple(self.lits))
