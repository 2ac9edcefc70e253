"""Control-flow statements of the kernel language: if/elif/else, for-range, while, break,
continue and return (also inside inlined helpers).

`ControlChecker` is a mixin of `KernelChecker` (checker.py).
"""

from __future__ import annotations

import ast

from vyre_build.frontend import ir
from vyre_build.core.limits import MAX_UNROLL
from vyre_build.frontend.types import RANGES


class ControlChecker:
    """Mixin: control-flow statements for KernelChecker."""

    def stmt_If(self, node):
        c = self.cond(node.test)
        then = self.sub_block(node.body)
        orelse = self.sub_block(node.orelse) if node.orelse else ()
        if isinstance(c, ir.Const):
            self.block.extend(then if c.value else orelse)
        else:
            self.block.append(ir.If(c, then, orelse))

    def stmt_For(self, node):
        if node.orelse:
            raise self.err(node.orelse[0], "for/else is not supported", "use a flag variable")
        if not isinstance(node.target, ast.Name):
            raise self.err(
                node.target,
                "the loop variable must be a single name",
                "loop over one name: for i in range(n):",
            )
        it = node.iter
        kind = it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) else None
        if kind not in ("range", "unroll"):
            raise self.err(
                it,
                "for loops iterate over range(...) or unroll(...) only",
                "write: for i in range(n):  (or range(start, stop, step); unroll(n) for a loop "
                "copied at compile time)",
            )
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.err(
                it,
                f"{kind}() takes 1 to 3 positional arguments",
                f"write {kind}(stop) or {kind}(start, stop, step), without keywords",
            )
        lo, hi, step, literal = self.loop_bounds(it, kind)
        name = node.target.id
        f = self.frame
        if name in f.vars or name in f.scalars or name in f.arrays or name in f.loops:
            raise self.err(
                node.target,
                f"loop variable '{name}' is already defined here",
                "use a new name for the loop variable",
            )
        self.check_no_assign(node.body, name)
        if kind == "unroll":
            self.unrolled(node, name, lo, hi, step, "int" if literal else lo.ty)
            return
        var = self.unique(f"{f.helper}_{name}" if f.helper else name)
        f.loops[name] = ir.LoopVar(var, lo.ty)
        try:
            body = self.sub_block(node.body, loop=True)
        finally:
            del f.loops[name]
        self.block.append(ir.For(var, lo, hi, step, body))
        self.after_loop()

    def loop_bounds(self, it, kind):
        """(start, stop, step, literal) of range(...) / unroll(...) call `it`: start and stop of
        one integer type (both literals, `literal`: the first of i32, u32 that holds both),
        step a nonzero constant that fits it."""
        args = [self.expr(a) for a in it.args]
        for a, an in zip(args, it.args):
            if a.ty in ir.VECTORS:
                raise self.err(
                    an,
                    f"{kind}() needs scalar integers, got a {a.ty}",
                    f"use a component, e.g. {kind}(v.x)",
                )
        step = 1
        if len(args) == 3:
            s = args[2]
            if not (isinstance(s, ir.Const) and s.ty in ("int", "i32", "u32")) or s.value == 0:
                raise self.err(
                    it.args[2],
                    f"the {kind} step must be a nonzero constant integer",
                    "use a while loop for a computed step",
                )
            step = s.value
        lo_node, hi_node = (it.args[0], it.args[1]) if len(args) > 1 else (None, it.args[0])
        lo = args[0] if len(args) > 1 else ir.Const("int", 0)
        hi = args[1] if len(args) > 1 else args[0]
        lo, hi = self.unify(it, lo, hi, lo_node or it, hi_node)
        ty = None if lo.ty == "int" else lo.ty
        literal = ty is None
        if ty is None:  # both bounds are literals: the first type that holds both
            ty = next(
                (
                    t
                    for t in ir.INTEGER
                    if all(RANGES[t][0] <= c.value <= RANGES[t][1] for c in (lo, hi))
                ),
                None,
            )
            if ty is None:
                raise self.err(
                    it,
                    f"{kind} bounds {lo.value} and {hi.value} do not fit one loop type (i32 or u32)",
                    "use bounds from -2147483648 to 2147483647 (i32) or 0 to 4294967295 (u32)",
                )
        lo, hi = self.coerce(lo_node or it, lo, ty), self.coerce(hi_node, hi, ty)
        if lo.ty not in ir.INTEGER:
            raise self.err(
                it, f"{kind}() needs integers, got {lo.ty}", f"use integer bounds, e.g. {kind}(4)"
            )
        limit = RANGES["i32"][1] if lo.ty == "i32" else RANGES["u32"][1]
        if not -limit <= step <= limit:
            raise self.err(
                it.args[2],
                f"the {kind} step {step} does not fit the {lo.ty} loop variable",
                f"use a step from -{limit} to {limit}",
            )
        return lo, hi, step, literal

    def unrolled(self, node, name, lo, hi, step, ty):
        """for name in unroll(...): the body once per value of the counter, in order, with
        `name` that value as a constant of type `ty` (the bounds' type; "int", typed as a
        literal is, where both are literals), so that it folds into indices and sizes; no
        loop is left in the kernel."""
        it = node.iter
        if not (isinstance(lo, ir.Const) and isinstance(hi, ir.Const)):
            bad = it.args[0] if not isinstance(lo, ir.Const) else it.args[min(1, len(it.args) - 1)]
            raise self.err(
                bad,
                "unroll() needs constant bounds (literals, module constants or variant values)",
                "use range() for bounds known only when the kernel runs",
            )
        count = len(range(lo.value, hi.value, step))
        if count > MAX_UNROLL:
            raise self.err(
                it,
                f"unroll() of {count} copies of the loop body; at most {MAX_UNROLL}",
                "unroll fewer (nest an unroll inside a range loop) or use range()",
            )
        for stmt in node.body:
            leave = _leaves(stmt)
            if leave is not None:
                word = "break" if isinstance(leave, ast.Break) else "continue"
                raise self.err(
                    leave,
                    f"'{word}' in an unroll() loop: its body is copied, not looped",
                    "use range() for a loop that leaves early, or guard the rest of the body "
                    "with an if",
                )
        f = self.frame
        for value in range(lo.value, hi.value, step):
            f.loops[name] = ir.Const(ty, value)
            try:
                self.block.extend(self.sub_block(node.body))
            finally:
                del f.loops[name]

    def check_no_assign(self, body, name):
        for stmt in body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                    raise self.err(
                        n,
                        f"cannot assign to loop variable '{name}'",
                        "use a while loop or another variable",
                    )

    def stmt_While(self, node):
        if node.orelse:
            raise self.err(node.orelse[0], "while/else is not supported", "use a flag variable")
        saved, self.block = self.block, []
        self.frame.loop_depth += 1
        self.enter_block(node)
        try:
            c = self.cond(node.test)
            if not (isinstance(c, ir.Const) and c.value):
                if isinstance(c, ir.Const):
                    self.block = saved
                    return
                leave = ir.If(ir.Unary("LogicalNot", c, "bool"), (ir.Break(),))
                self.where[id(leave)] = (self.src, node, leave)  # the while's own condition
                self.block.append(leave)
            self.statements(node.body)
            body = tuple(self.block)
        finally:
            self.leave_block()
            self.frame.loop_depth -= 1
            self.block = saved
        self.block.append(ir.Loop(body))
        self.after_loop()

    def stmt_Break(self, node):
        self.require_loop(node, "break")
        self.block.append(ir.Break())

    def stmt_Continue(self, node):
        self.require_loop(node, "continue")
        self.block.append(ir.Continue())

    def require_loop(self, node, what: str) -> None:
        """`what` (break or continue) stands in a loop of its own function."""
        if self.frame.loop_depth == 0:
            raise self.err(
                node,
                f"'{what}' outside a loop",
                "put it inside a for or while loop of the helper (it cannot leave its caller's "
                "loop)"
                if self.frame.helper
                else "put it inside a for or while loop",
            )

    def stmt_Return(self, node):
        f = self.frame
        if f.helper is None:
            if node.value is not None:
                raise self.err(
                    node.value, "kernels cannot return a value", "write results into a buffer"
                )
            self.block.append(ir.Return())
            return
        if f.ret_type is None:
            if node.value is not None:
                raise self.err(
                    node.value,
                    f"helper '{f.helper}' has no return type but returns a value",
                    "annotate it, e.g. -> f32",
                )
        elif node.value is None:
            raise self.err(
                node,
                f"helper '{f.helper}' must return a {f.ret_type}",
                f"return a {f.ret_type} value: return x",
            )
        else:
            self.block.append(ir.Assign(f.ret_var, self.typed(node.value, f.ret_type)))
        if f.wrapped:
            if f.loop_depth:
                # Leave every enclosing loop: set the flag that each loop exit tests (after_loop).
                self.block.append(ir.Assign(f.returned_var, ir.Const("bool", True)))
            self.block.append(ir.Break())

    def after_loop(self):
        """In a helper with a return inside a loop: once a loop ends, leave if it returned."""
        f = self.frame
        if f.returned_var is not None:
            self.block.append(ir.If(ir.Var(f.returned_var, "bool"), (ir.Break(),)))


def _leaves(stmt):
    """The first break or continue in `stmt` that leaves the loop `stmt` is in (not one of a
    loop inside it), or None."""
    if isinstance(stmt, (ast.Break, ast.Continue)):
        return stmt
    if isinstance(stmt, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for child in ast.iter_child_nodes(stmt):
        found = _leaves(child)
        if found is not None:
            return found
    return None
