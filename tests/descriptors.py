"""The one hand-built descriptor builder of the test suite.

`Kernel` holds the slots, the workgroup size and the root `Body`; a `Body` appends ops
the way lowering does: one SSA id counter per kernel (value ops take the next id, in
creation order), a literal pool per body, child bodies for control flow. Element types
are DataType variant names ("U32", "F32", ...) or a `Variant` (`vt("F32", 4)`).
`Case` is a built descriptor with the data to dispatch it and the numpy expectation.
The hand-built corpus (tests/corpus/) and every emitter test build with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from vyre_build.descriptor import (
    SHARED_SLOT_BASE,
    BindingSlot,
    KernelBody,
    KernelDescriptor,
    KernelOp,
    Variant,
    encode_datatype,
)

V = Variant
SH = SHARED_SLOT_BASE


def dt(ty) -> Variant:
    """A DataType from its variant name, or the `Variant` itself."""
    return ty if isinstance(ty, Variant) else V(ty)


def vt(elem: str, n: int) -> Variant:
    """The DataType of an `n`-component vector of `elem`: Vec{elem, n}."""
    return V("Vec", (V(elem), n))


def buf(slot: int, ty, name: str, vis: str = "ReadWrite") -> BindingSlot:
    """A storage-buffer (Global) slot."""
    return BindingSlot(slot, dt(ty), None, "Global", vis, name)


def vbuf(slot: int, elem: str, n: int, name: str, vis: str = "ReadWrite") -> BindingSlot:
    """A storage buffer of `n`-component vectors of `elem`."""
    return buf(slot, vt(elem, n), name, vis)


class Body:
    """One KernelBody under construction; value methods return the new SSA id."""

    def __init__(self, counter: list[int]):
        self.counter, self.ops, self.children, self.lits = counter, [], [], []

    def op(self, kind, *operands, value: bool = True):
        """Append an op of `kind` (a Variant or a payload-less kind name)."""
        rid = None
        if value:
            rid = self.counter[0]
            self.counter[0] += 1
        self.ops.append(KernelOp(dt(kind), tuple(operands), rid))
        return rid

    # --- values -------------------------------------------------------------------
    def lit(self, ty: str, v):
        self.lits.append(V(ty, (v,)))
        return self.op("Literal", len(self.lits) - 1)

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
        return self.op(V("OpaqueExpr", (0, "vyre.num_workgroups", b"")), axis)

    def bin(self, name: str, a, b):
        return self.op(V("BinOpKind", (V(name),)), a, b)

    def un(self, name: str, a):
        return self.op(V("UnOpKind", (V(name),)), a)

    def fma(self, a, b, c):
        return self.op("Fma", a, b, c)

    def select(self, cond, if_true, if_false):
        return self.op("Select", cond, if_true, if_false)

    def cast(self, ty, a):
        return self.op(V("Cast", (dt(ty),)), a)

    def bitcast(self, ty, a):
        return self.op(V("OpaqueExpr", (0, "vyre.bitcast", encode_datatype(dt(ty)))), a)

    def vec(self, ty, *parts):
        """vyre.vec of `parts` into `ty`: a vector DataType, or an element type name
        ("F32") for the vector of that many components."""
        ty = vt(ty, len(parts)) if isinstance(ty, str) else ty
        return self.op(V("OpaqueExpr", (0, "vyre.vec", encode_datatype(ty))), *parts)

    def splat(self, elem: str, n: int, x):
        return self.vec(elem, *([x] * n))

    def extract(self, v, k: int):
        return self.op(V("OpaqueExpr", (0, "vyre.extract", bytes([k]))), v)

    # --- memory ---------------------------------------------------------------------
    def load(self, slot: int, index):
        """LoadGlobal, or LoadShared for a Shared/Scratch slot (numbered from SH)."""
        return self.op("LoadGlobal" if slot < SH else "LoadShared", slot, index)

    def store(self, slot: int, index, v) -> None:
        self.op("StoreGlobal" if slot < SH else "StoreShared", slot, index, v, value=False)

    def param(self, slot: int):
        """LoadConstant of a uniform slot (its index is the u32 literal 0)."""
        return self.op("LoadConstant", slot, self.u32(0))

    def length(self, slot: int):
        return self.op("BufferLength", slot)

    def atomic(self, name: str, slot: int, index, *values):
        return self.op(V("Atomic", (V(name), "Relaxed")), slot, index, *values)

    # --- control flow -------------------------------------------------------------------
    def child(self) -> tuple[int, Body]:
        """A new child body: (its index, the body)."""
        self.children.append(Body(self.counter))
        return len(self.children) - 1, self.children[-1]

    def if_(self, cond) -> Body:
        idx, then = self.child()
        self.op("StructuredIfThen", cond, idx, value=False)
        return then

    def if_else(self, cond) -> tuple[Body, Body]:
        (i, then), (j, other) = self.child(), self.child()
        self.op("StructuredIfThenElse", cond, i, j, value=False)
        return then, other

    def for_(self, var: str, lo, hi) -> Body:
        idx, body = self.child()
        self.op(V("StructuredForLoop", (var,)), lo, hi, idx, value=False)
        return body

    def loop_index(self, var: str):
        return self.op(V("LoopIndex", (var,)))

    def node(self, kind: str, *operands) -> None:
        """An OpaqueNode (vyre.loop, vyre.break, vyre.continue) with no payload."""
        self.op(V("OpaqueNode", (kind, b"")), *operands, value=False)

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
        self.op(V("Barrier", (ordering,)), value=False)

    def build(self) -> KernelBody:
        return KernelBody(
            tuple(self.ops), tuple(c.build() for c in self.children), tuple(self.lits)
        )


class Kernel:
    """A descriptor under construction: id, workgroup size, slots and the root `body`."""

    def __init__(self, name: str = "k", wg=(64, 1, 1), slots=()):
        self.name, self.wg, self.slots = name, tuple(wg), list(slots)
        self.body = Body([0])

    def buffer(self, ty, vis: str, name: str) -> int:
        """A new storage buffer, numbered after the Global slots so far."""
        slot = len([s for s in self.slots if s.memory_class == "Global"])
        self.slots.append(buf(slot, ty, name, vis))
        return slot

    def scalar(self, ty, name: str) -> int:
        """A new uniform parameter, numbered after every binding so far."""
        slot = max([s.slot for s in self.slots if s.slot < SH], default=-1) + 1
        self.slots.append(BindingSlot(slot, dt(ty), 1, "Uniform", "ReadOnly", name))
        return slot

    def local(self, cls: str, ty, n: int, name: str) -> int:
        """A new Shared or Scratch slot of `n` elements, numbered from SH."""
        slot = SH + len([s for s in self.slots if s.slot >= SH])
        self.slots.append(BindingSlot(slot, dt(ty), n, cls, "ReadWrite", name))
        return slot

    def build(self) -> KernelDescriptor:
        slots = tuple(sorted(self.slots, key=lambda s: s.slot))
        return KernelDescriptor(self.name, slots, self.wg, self.body.build())


def kernel(slots, wg=(64, 1, 1), name: str = "k"):
    """(descriptor factory, root body) of a kernel over `slots`: build after filling the body."""
    k = Kernel(name, wg, slots)
    return k.build, k.body


@dataclass
class Case:
    """A descriptor plus the data to dispatch it and the numpy-computed expectation."""

    desc: KernelDescriptor
    inputs: dict[str, np.ndarray]  # every Global buffer by name (outputs too: initial contents)
    expected: dict[str, np.ndarray]  # final contents of the written buffers
    scalars: dict[str, object] = field(default_factory=dict)
    groups: tuple[int, int, int] = (1, 1, 1)
    rtol: float = 0.0
    atol: float = 0.0
    per_output_tol: dict[str, tuple[float, float]] = field(
        default_factory=dict
    )  # name -> (rtol, atol)
    check: Callable[[dict[str, np.ndarray]], None] | None = None  # extra asserts on all buffers


def assert_case(case: Case, got: dict, where: str) -> None:
    """Every expected buffer of `case` in `got` (by name): to its tolerance, else bit for bit."""
    for name, want in case.expected.items():
        have = got[name]
        assert have.dtype == want.dtype and have.shape == want.shape, f"{where}: {name} shape/dtype"
        rtol, atol = case.per_output_tol.get(name, (case.rtol, case.atol))
        if rtol or atol:
            np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=f"{where}: {name}")
        else:  # exact, bit for bit (NaN-safe through the integer view)
            bad = np.flatnonzero(have.view(np.uint32) != want.view(np.uint32))
            assert bad.size == 0, (
                f"{where}: {name} differs at {bad[:8].tolist()}: "
                f"got {have[bad[:8]].tolist()} want {want[bad[:8]].tolist()}"
            )
    if case.check is not None:
        case.check(got)
