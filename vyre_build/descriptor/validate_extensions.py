"""The checks of the extensions (a mixin of `validate._Checker`).

The OpaqueExpr / OpaqueNode ops vyre_build uses, each checked as
docs/descriptor-conventions.md says: `vyre.loop` and its exits (break/continue inside a
loop, never in its continuing block), no payload where an extension takes none,
`vyre.extract` (one component below the vector's width), `vyre.bitcast` / `vyre.vec` (the
row of the type their payload names), the memory scopes and orders (descriptor.memory_order:
payload, orders, slot, scope and value types, and the memory model features they need),
the cooperative matrices (descriptor.matrices: fragment payloads, loads and stores of a
slot no atomic uses, the multiply-add's shape and its feature) and a debug build's
`vyre.debug.*` ops (site payloads, reported value types). Each check returns the op's
value type, or None, and raises through `_Checker.fail`.
"""

from __future__ import annotations

from vyre_build.descriptor import matrices as mx
from vyre_build.descriptor import memory_order as mo
from vyre_build.descriptor.codec import decode_datatype
from vyre_build.descriptor.types import MATRICES, TYPES, VECTORS, type_of
from vyre_build.core.errors import DescriptorFormatError
from vyre_build.core.features import VULKAN_MEMORY_MODEL, VULKAN_MEMORY_MODEL_DEVICE_SCOPE

__all__ = ["ExtensionChecks"]

_DEBUG_VALUES = ("i32", "u32", "f32", "bool")


class ExtensionChecks:
    """The extension ops' `visit_<class>` methods and their helpers; the `_Checker` they mix
    into gives `fail`, `val`, `slot`, `index`, `child`, `typed` and the state they read."""

    def no_payload(self, op) -> None:
        """An OpaqueNode extension that takes no payload."""
        payload = op.kind.args[1]
        if payload:
            self.fail(op, f"OpaqueNode {op.kind.args[0]!r} takes no payload, got {payload.hex()}")

    def visit_loop(self, op, ctx) -> None:
        self.no_payload(op)
        self.child(op, ctx, op.body, loop_depth=ctx[3] + 1)
        if op.continuing is not None:
            # WGSL forbids return, and break/continue of this loop, inside `continuing`.
            self.child(op, ctx, op.continuing, loop_depth=0, continuing=True)
        return None

    def visit_exit(self, op, ctx) -> None:
        """vyre.break / vyre.continue: inside a loop, not in its continuing block."""
        self.no_payload(op)
        if ctx[3] == 0:
            where = "inside a loop's continuing block" if ctx[4] else "outside a loop"
            self.fail(op, f"{op.kind.args[0]} {where}")
        return None

    visit_break_ = visit_continue_ = visit_exit

    def visit_ordered_expr(self, op, ctx):
        _, kind, payload = op.kind.args  # its first operand is a slot, not a value
        return self.memory_op(op, ctx[1], kind, payload)

    def visit_ordered_node(self, op, ctx):
        kind, payload = op.kind.args
        return self.memory_op(op, ctx[1], kind, payload)

    visit_ordered_atomic = visit_ordered_load = visit_ordered_expr
    visit_ordered_store = visit_fence = visit_ordered_node

    def visit_coop_load(self, op, ctx) -> str:  # its first operand is a slot, not a value
        return self.coop_access(op, ctx[1], "load", self.matrix_payload(op, op.kind.args[2]))

    def visit_coop_fill(self, op, ctx) -> str:
        ty = self.matrix_payload(op, op.kind.args[2])
        got = self.val(op, ctx[1], 0)
        if got != TYPES[ty].element:
            self.fail(op, f"{mx.FILL} of {ty} needs a {TYPES[ty].element} value, got {got}")
        return ty

    def visit_coop_mma(self, op, ctx) -> str:
        if not op.schema and op.kind.args[2]:
            self.fail(op, f"{mx.MMA} takes no payload, got {op.kind.args[2].hex()}")
        return self.coop_mma(op, ctx[1])

    def visit_coop_store(self, op, ctx) -> None:
        self.no_payload(op)
        self.coop_access(op, ctx[1], "store")
        return None

    def visit_extract(self, op, ctx) -> str:
        operands = self.operand_types(op, ctx[1])
        (ty,) = operands
        if ty not in VECTORS:
            self.fail(op, f"vyre.extract needs a vector operand, got {ty}")
        payload = op.kind.args[2]
        if op.component is None or op.component >= VECTORS[ty][1]:
            self.fail(
                op,
                f"vyre.extract payload {payload.hex()!r} is not one component index "
                f"below {VECTORS[ty][1]}",
            )
        return self.typed(op, op.key, operands)

    def visit_payload_typed(self, op, ctx) -> str:
        """vyre.bitcast / vyre.vec: the row of the type their payload names."""
        operands = self.operand_types(op, ctx[1])
        _, kind, payload = op.kind.args
        try:
            target = type_of(decode_datatype(payload))
        except DescriptorFormatError as exc:
            self.fail(op, f"{kind} payload {payload.hex()} is not a supported DataType: {exc}")
        return self.typed(op, (op.key[0], target), operands)

    visit_bitcast = visit_construct = visit_payload_typed

    # --- memory scopes and orders (descriptor.memory_order) ------------------------------
    def model_features(self) -> frozenset:
        """vulkan_memory_model where an op has an order or is a fence, and its device scope
        where such a kernel has a device-scope op (an atomic on a buffer, a device fence)."""
        if VULKAN_MEMORY_MODEL not in self.features:
            return frozenset()
        device = (
            self.device_fence
            or bool(self.debug_sites)  # the debug buffer's atomics are device-scope
            or any(self.slots[n].memory_class == "Global" for n in self.atomic)
        )
        return frozenset({VULKAN_MEMORY_MODEL_DEVICE_SCOPE} if device else ())

    def memory_op(self, op, scopes, kind: str, payload: bytes) -> str | None:
        """A vyre.atomic / .load / .store / vyre.fence: payload, orders, slot, scope, types."""
        acc = mo.access_of(kind, payload)
        if acc is None:
            self.fail(op, f"{kind} payload {payload.hex()!r} is not [(op,) scope, order]")
        if acc.order not in mo.ALLOWED[kind]:
            self.fail(op, f"{kind} cannot have order {acc.order}")
        if acc.order != "relaxed" or kind == mo.FENCE:
            self.features.add(VULKAN_MEMORY_MODEL)
        if kind == mo.FENCE:
            self.device_fence |= acc.scope == "device"
            return None
        s = self.slot(op, op.operands[0], ("Global", "Shared"))
        if s.memory_class == "Global" and s.visibility != "ReadWrite":
            self.fail(op, f"{kind} on a {s.visibility} buffer")
        if s.memory_class == "Shared" and acc.scope == "device":
            self.fail(op, f"{kind} at device scope on shared slot {s.slot} {s.name!r}")
        self.index(op, scopes)
        ty = self.slot_types[s.slot]
        if ty not in ("u32", "i32"):
            self.fail(op, f"{kind} on slot {s.slot} {s.name!r} of {ty}, not u32 or i32")
        for i in range(2, len(op.operands)):
            got = self.val(op, scopes, i)
            if got != ty:
                self.fail(
                    op, f"value operand {i} has type {got}, slot {s.slot} {s.name!r} holds {ty}"
                )
        if kind == mo.ATOMIC and (len(op.operands) == 4) != (acc.op == "CompareExchange"):
            self.fail(
                op, f"{kind} {acc.op} takes {4 if acc.op == 'CompareExchange' else 3} operands"
            )
        if s.slot in self.coop_slots:
            self.fail(op, f"{kind} on slot {s.slot} {s.name!r}, which cooperative matrices use")
        self.atomic.add(s.slot)
        if kind == mo.ATOMIC:
            return self.typed(op, ("Atomic", acc.op), (ty,))
        return ty if kind == mo.LOAD else None

    # --- cooperative matrices (descriptor.matrices) -------------------------------------
    def matrix_payload(self, op, payload: bytes) -> str:
        kind = op.kind.args[1]
        try:
            ty = type_of(decode_datatype(payload))
        except DescriptorFormatError as exc:
            self.fail(op, f"{kind} payload {payload.hex()} is not a supported DataType: {exc}")
        if ty not in MATRICES:
            self.fail(op, f"{kind} payload names {ty}, not a cooperative matrix type")
        return ty

    def coop_access(self, op, scopes, what: str, ty: str | None = None) -> str:
        """A fragment load (`ty` from the payload) or store (`ty` of the stored value)."""
        o = op.operands
        s = self.slot(op, o[0], ("Global", "Shared"))
        bad = "WriteOnly" if what == "load" else "ReadOnly"
        if s.visibility == bad:
            self.fail(op, f"cooperative {what} on a {bad} slot {s.slot} {s.name!r}")
        if s.slot in self.atomic:
            self.fail(op, f"cooperative {what} on slot {s.slot} {s.name!r}, which atomics use")
        for i, role in ((1, "offset"), (2, "stride")):
            if self.val(op, scopes, i) != "u32":
                self.fail(op, f"the {role} of a cooperative {what} must be u32")
        if ty is None:
            ty = self.val(op, scopes, 3)
            if ty not in MATRICES:
                self.fail(op, f"{mx.STORE} stores a {ty}, not a cooperative matrix")
        held = self.slot_types[s.slot]
        if TYPES[held].element != TYPES[ty].element:
            self.fail(op, f"cooperative {what} of {ty} on slot {s.slot} {s.name!r} of {held}")
        self.coop_slots.add(s.slot)
        return ty

    def coop_mma(self, op, scopes) -> str:
        a, b, c = (self.val(op, scopes, i) for i in range(3))
        shape = mx.mma_shape(a, b, c)
        if shape is None:
            self.fail(op, f"no multiply-add of {a} x {b} + {c} (A is MxK, B KxN, C MxN)")
        if op.kind != mx.mma_kind(a, b, c):
            self.fail(
                op, f"the multiply-add of {a} x {b} + {c} is written {mx.mma_kind(a, b, c)!r}"
            )
        self.features.add(mx.mma_feature(a, c, shape))
        return c

    def debug_op(self, op, ctx):
        kind, payload = op.kind.args
        if len(payload) != 4:
            self.fail(op, f"{kind} takes a 4-byte site id payload, got {payload.hex()!r}")
        self.debug_sites.add(int.from_bytes(payload, "little"))
        o = op.operands
        if kind == "vyre.debug.bounds":
            self.slot(op, o[0], ("Global", "Shared", "Scratch"))
            self.index(op, ctx[1])
            return None
        first = 0
        if kind == "vyre.debug.assert":
            cond = self.val(op, ctx[1], 0)
            if cond != "bool":
                self.fail(op, f"the condition of vyre.debug.assert has type {cond}, expected bool")
            first = 1
        for i in range(first, len(o)):
            ty = self.val(op, ctx[1], i)
            if ty not in _DEBUG_VALUES:
                self.fail(op, f"{kind} reports i32, u32, f32 and bool values, not {ty}")
        return None

    visit_debug = debug_op
