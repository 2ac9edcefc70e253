"""Memory scopes and orders in the descriptor: four documented extensions
(docs/descriptor-conventions.md, "Memory scopes and orders").

| op | operands | payload |
|---|---|---|
| OpaqueExpr `vyre.atomic` | as Atomic: `[slot, index, (expected,) value]` | `[AtomicOp index, scope, order]` |
| OpaqueExpr `vyre.atomic.load` | `[slot, index]` | `[scope, order]` |
| OpaqueNode `vyre.atomic.store` | `[slot, index, value]` | `[scope, order]` |
| OpaqueNode `vyre.fence` | `[]` | `[scope, order]` |

Payload bytes: scope 0 device, 1 workgroup; order the MemoryOrdering variant index (0
Relaxed, 1 Acquire, 2 Release, 3 AcqRel). An atomic at its slot's own scope (device for a
Global slot, workgroup for a Shared one) with relaxed order stays the schema's
`Atomic{op, Relaxed}`, so kernels without the keywords keep their bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ATOMIC",
    "LOAD",
    "STORE",
    "FENCE",
    "ATOMIC_OPS",
    "SCOPES",
    "ORDERS",
    "Access",
    "access_of",
    "payload",
]

ATOMIC, LOAD, STORE, FENCE = "vyre.atomic", "vyre.atomic.load", "vyre.atomic.store", "vyre.fence"
EXPRS = (ATOMIC, LOAD)
NODES = (STORE, FENCE)
# AtomicOp variants (shared/spec/kernel-descriptor.md) the language uses, by index.
ATOMIC_OPS = ("Add", "Or", "And", "Xor", "Min", "Max", "Exchange", "CompareExchange")
SCOPES = ("device", "workgroup")
ORDERS = ("relaxed", "acquire", "release", "acq_rel")
# The orders each kind allows (the frontend's rule, checked again by validation).
ALLOWED = {
    ATOMIC: ORDERS,
    LOAD: ("relaxed", "acquire"),
    STORE: ("relaxed", "release"),
    FENCE: ("acquire", "release", "acq_rel"),
}


@dataclass(frozen=True)
class Access:
    """One memory-ordered op: its extension kind, AtomicOp name ("" unless vyre.atomic),
    scope and order ("device"/"workgroup", "relaxed"/"acquire"/"release"/"acq_rel")."""

    kind: str
    op: str
    scope: str
    order: str


def payload(kind: str, scope: str, order: str, op: str = "") -> bytes:
    """The payload of extension `kind` (op: the AtomicOp name of a vyre.atomic)."""
    head = bytes([ATOMIC_OPS.index(op)]) if kind == ATOMIC else b""
    return head + bytes([SCOPES.index(scope), ORDERS.index(order)])


def access_of(kind: str, data: bytes) -> Access | None:
    """The Access a payload of extension `kind` encodes, or None if it is malformed."""
    want = 3 if kind == ATOMIC else 2
    if len(data) != want:
        return None
    op = ""
    if kind == ATOMIC:
        if data[0] >= len(ATOMIC_OPS):
            return None
        op = ATOMIC_OPS[data[0]]
    scope, order = data[-2], data[-1]
    if scope >= len(SCOPES) or order >= len(ORDERS):
        return None
    return Access(kind, op, SCOPES[scope], ORDERS[order])


def access(kop) -> Access | None:
    """The Access of a descriptor op that is one of the four extensions, else None."""
    k = kop.kind
    if k.name == "OpaqueExpr" and k.args[1] in EXPRS:
        return access_of(k.args[1], k.args[2])
    if k.name == "OpaqueNode" and k.args[0] in NODES:
        return access_of(k.args[0], k.args[1])
    return None
