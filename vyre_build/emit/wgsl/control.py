"""Structured control flow of the WGSL emitter (a mixin of `function.FunctionWriter`).

if / if-else, `for` over a half-open integer range, `loop { ... continuing { ... } }`,
break, continue, return and the two barriers (docs/descriptor-conventions.md, "Control
flow"). Validation has placed every terminator last and kept exits out of continuing
blocks, so each handler only writes.
"""

from __future__ import annotations

from vyre_build.emit.wgsl.values import ONE, wgsl_type

__all__ = ["ControlRules"]


class ControlRules:
    def op_StructuredIfThenElse(self, op, body, depth):
        # Also StructuredIfThen: [cond, then] or [cond, then, else].
        self.emit(depth, f"if _v{op.operands[0]} {{")
        self.child(body, op.operands[1], depth + 1)
        if len(op.operands) == 3:
            self.emit(depth, "} else {")
            self.child(body, op.operands[2], depth + 1)
        self.emit(depth, "}")

    op_StructuredIfThen = op_StructuredIfThenElse

    def op_StructuredForLoop(self, op, body, depth):
        lo, hi = op.operands[0], op.operands[1]
        ty = self.info.types[lo]
        var = f"_i{self.loop_count}"
        self.loop_count += 1
        self.emit(
            depth,
            f"for (var {var}: {wgsl_type(ty)} = _v{lo}; {var} < _v{hi}; "
            f"{var} = {var} + {ONE[ty]}) {{",
        )
        self.loops.append((op.kind.args[0], var))
        self.child(body, op.operands[2], depth + 1)
        self.loops.pop()
        self.emit(depth, "}")

    def op_OpaqueNode(self, op, body, depth):
        kind = op.kind.args[0]
        if kind.startswith("vyre.debug."):
            return self.debug_op(op, body, depth)
        if kind in ("vyre.atomic.store", "vyre.fence"):  # descriptor.memory_order
            return self.ordered(op, body, depth)
        if kind == "vyre.loop":
            self.emit(depth, "loop {")
            self.child(body, op.operands[0], depth + 1)
            if len(op.operands) == 2:
                self.emit(depth + 1, "continuing {")
                self.child(body, op.operands[1], depth + 2)
                self.emit(depth + 1, "}")
            self.emit(depth, "}")
        else:  # vyre.break / vyre.continue
            self.emit(depth, kind[5:] + ";")

    def op_Return(self, op, body, depth):
        self.emit(depth, "return;")

    def op_Barrier(self, op, body, depth):
        if op.kind.args[0] == "SeqCst":
            self.emit(depth, "storageBarrier();")
        self.emit(depth, "workgroupBarrier();")
