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
    def visit_if_(self, op, body, depth):
        # StructuredIfThen [cond, then] or StructuredIfThenElse [cond, then, else].
        self.emit(depth, f"if _v{op.cond} {{")
        self.child(body, op.then, depth + 1)
        if op.other is not None:
            self.emit(depth, "} else {")
            self.child(body, op.other, depth + 1)
        self.emit(depth, "}")

    def visit_for_(self, op, body, depth):
        lo, hi = op.lo, op.hi
        ty = self.info.types[lo]
        var = f"_i{self.loop_count}"
        self.loop_count += 1
        self.emit(
            depth,
            f"for (var {var}: {wgsl_type(ty)} = _v{lo}; {var} < _v{hi}; "
            f"{var} = {var} + {ONE[ty]}) {{",
        )
        self.loops.append((op.var, var))
        self.child(body, op.body, depth + 1)
        self.loops.pop()
        self.emit(depth, "}")

    def visit_loop(self, op, body, depth):
        self.emit(depth, "loop {")
        self.child(body, op.body, depth + 1)
        if op.continuing is not None:
            self.emit(depth + 1, "continuing {")
            self.child(body, op.continuing, depth + 2)
            self.emit(depth + 1, "}")
        self.emit(depth, "}")

    def visit_break_(self, op, body, depth):
        self.emit(depth, "break;")

    def visit_continue_(self, op, body, depth):
        self.emit(depth, "continue;")

    def visit_return_(self, op, body, depth):
        self.emit(depth, "return;")

    def visit_barrier(self, op, body, depth):
        if op.ordering == "SeqCst":
            self.emit(depth, "storageBarrier();")
        self.emit(depth, "workgroupBarrier();")
