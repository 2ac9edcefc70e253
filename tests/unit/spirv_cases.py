"""Hand-built descriptors for the SPIR-V emitter tests, with numpy references.

`KB` / `Body` build a `KernelDescriptor` the way lowering would (one id counter, per-body
literal pools, child bodies for control flow). `CASES` maps a case name to a function
returning a `Case`: the descriptor, the buffer inputs, the scalar parameters, the grid
(workgroup counts) and the expected contents of every written buffer, computed by numpy
from the inputs (never typed in). Used by test_spirv.py (spirv-val), test_spirv_vulkan.py
(dispatch) and tests/snapshots/test_spirv_snapshots.py.
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
NP = {"U32": np.uint32, "I32": np.int32, "F32": np.float32}
LIT = {"U32": "U32", "I32": "I32", "F32": "F32", "Bool": "Bool"}


class Body:
    """One KernelBody under construction."""

    def __init__(self, kb: KB):
        self.kb, self.ops, self.children, self.literals = kb, [], [], []

    def emit(self, kind, *operands, value: bool = True):
        kind = kind if isinstance(kind, Variant) else V(kind)
        rid = self.kb.fresh() if value else None
        self.ops.append(KernelOp(kind, tuple(operands), rid))
        return rid

    def lit(self, ty: str, value):
        lit = V(LIT[ty], (value,))
        self.literals.append(lit)
        return self.emit("Literal", len(self.literals) - 1)

    def u(self, value: int):
        return self.lit("U32", value)

    def bin(self, name: str, a, b):
        return self.emit(V("BinOpKind", (V(name),)), a, b)

    def un(self, name: str, a):
        return self.emit(V("UnOpKind", (V(name),)), a)

    def cast(self, ty: str, a):
        return self.emit(V("Cast", (V(ty),)), a)

    def bitcast(self, ty: str, a):
        return self.emit(V("OpaqueExpr", (0, "vyre.bitcast", encode_datatype(V(ty)))), a)

    def gid(self, axis: int = 0):
        return self.emit("GlobalInvocationId", axis)

    def load(self, slot: int, index):
        kind = "LoadGlobal" if slot < SHARED_SLOT_BASE else "LoadShared"
        return self.emit(kind, slot, index)

    def store(self, slot: int, index, value_id) -> None:
        kind = "StoreGlobal" if slot < SHARED_SLOT_BASE else "StoreShared"
        self.emit(kind, slot, index, value_id, value=False)

    def param(self, slot: int):
        return self.emit("LoadConstant", slot, self.u(0))

    def atomic(self, op: str, slot: int, index, *values):
        return self.emit(V("Atomic", (V(op), "Relaxed")), slot, index, *values)

    def child(self) -> tuple[Body, int]:
        body = Body(self.kb)
        self.children.append(body)
        return body, len(self.children) - 1

    def if_(self, cond) -> Body:
        then, i = self.child()
        self.emit("StructuredIfThen", cond, i, value=False)
        return then

    def if_else(self, cond) -> tuple[Body, Body]:
        (then, i), (other, j) = self.child(), self.child()
        self.emit("StructuredIfThenElse", cond, i, j, value=False)
        return then, other

    def for_(self, var: str, lo, hi) -> Body:
        body, i = self.child()
        self.emit(V("StructuredForLoop", (var,)), lo, hi, i, value=False)
        return body

    def loop(self, continuing: bool = False):
        body, i = self.child()
        if not continuing:
            self.emit(V("OpaqueNode", ("vyre.loop", b"")), i, value=False)
            return body
        cont, j = self.child()
        self.emit(V("OpaqueNode", ("vyre.loop", b"")), i, j, value=False)
        return body, cont

    def brk(self) -> None:
        self.emit(V("OpaqueNode", ("vyre.break", b"")), value=False)

    def cont(self) -> None:
        self.emit(V("OpaqueNode", ("vyre.continue", b"")), value=False)

    def ret(self) -> None:
        self.emit("Return", value=False)

    def freeze(self) -> KernelBody:
        return KernelBody(
            tuple(self.ops), tuple(c.freeze() for c in self.children), tuple(self.literals)
        )


class KB:
    """A descriptor under construction: slots, workgroup size, the root body."""

    def __init__(self, name: str, wg=(64, 1, 1)):
        self.name, self.wg, self.slots, self.counter = name, tuple(wg), [], 0
        self.shared_k = 0
        self.root = Body(self)

    def fresh(self) -> int:
        self.counter += 1
        return self.counter - 1

    def buffer(self, ty: str, vis: str, name: str) -> int:
        slot = len([s for s in self.slots if s.memory_class == "Global"])
        self.slots.append(BindingSlot(slot, V(ty), None, "Global", vis, name))
        return slot

    def scalar(self, ty: str, name: str) -> int:
        slot = max([s.slot for s in self.slots if s.slot < SHARED_SLOT_BASE], default=-1) + 1
        self.slots.append(BindingSlot(slot, V(ty), 1, "Uniform", "ReadOnly", name))
        return slot

    def local(self, cls: str, ty: str, n: int, name: str) -> int:
        slot = SHARED_SLOT_BASE + self.shared_k
        self.shared_k += 1
        self.slots.append(BindingSlot(slot, V(ty), n, cls, "ReadWrite", name))
        return slot

    def build(self) -> KernelDescriptor:
        return KernelDescriptor(
            self.name, tuple(sorted(self.slots, key=lambda s: s.slot)), self.wg, self.root.freeze()
        )


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


def _rng(seed: int = 7) -> np.random.Generator:
    return np.random.default_rng(seed)
