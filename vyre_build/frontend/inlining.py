"""Helper functions of the kernel language, inlined at each call (a mixin of `KernelChecker`).

`HelperInliner.inline` checks a call of a module-level helper and inlines its body: its
parameters become fresh locals (buffers are aliased), and a `return` that is not the
helper's last statement becomes an assignment plus a break out of a one-shot loop.
Guarantees: recursion, nesting past 32 helpers and a kernel past MAX_OPERATIONS once
inlined are refused before the work (`inline_size`); a helper with a return type returns a
value on every path; a helper that writes memory is never inlined where it would run
unconditionally.
"""

from __future__ import annotations

import ast

from vyre_build.frontend import ir
from vyre_build.frontend.expressions import _has_effects
from vyre_build.core.limits import MAX_OPERATIONS


def _always_returns(stmts) -> bool:
    """Whether every path through `stmts` ends in a return (syntactically: the last
    statement is a return, or an if/else whose arms both always return)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


class HelperInliner:
    """Mixin: helper inlining for KernelChecker."""

    def inline(self, call, module, fn: ast.FunctionDef, statement: bool):
        key = (module.path, fn.name)
        if key in self.inline_stack:
            raise self.err(
                call,
                f"helper '{fn.name}' calls itself (recursion is not supported)",
                "rewrite it as a loop",
            )
        if len(self.inline_stack) > 32:
            raise self.err(
                call,
                "helpers nested more than 32 deep",
                "call fewer helpers inside one another: merge some of them into their callers",
            )
        if self.ops + self.inline_size(module, fn) > MAX_OPERATIONS:
            raise self.too_large(call, fn.name)
        params = self.helper_params(module, fn)
        if len(call.args) != len(params):
            names = ", ".join(p[0] for p in params)
            raise self.err(
                call,
                f"helper '{fn.name}' takes {len(params)} arguments ({names}), got {len(call.args)}",
                f"call it as {fn.name}({names})",
            )
        frame = self.new_frame(module, helper=fn.name)
        binds = []
        for (pname, kind, ty, access, _node), arg in zip(params, call.args):
            if kind == "buffer":
                arr = self.array_name(arg)
                if self.element_type(arr) != ty:
                    raise self.err(
                        arg,
                        f"helper '{fn.name}' expects a {ty} array for '{pname}', "
                        f"'{arr}' holds {self.element_type(arr)}",
                        f"pass a Buffer[{ty}] or change the helper's parameter type",
                    )
                if arr in self.buffers:
                    self.check_access(
                        arg,
                        arr,
                        "read" if access == "r" else "write" if access == "w" else "readwrite",
                    )
                frame.arrays[pname] = arr
            else:
                val = self.typed(arg, ty)
                if self.cond_depth and _has_effects(val):
                    raise self.err(
                        arg,
                        "argument with side effects in a conditional context",
                        "move the call into an if statement",
                    )
                binds.append((pname, ty, val))
        ret_ty = None
        if fn.returns is not None and not (
            isinstance(fn.returns, ast.Constant) and fn.returns.value is None
        ):
            ret_ty = self.resolve_type(fn.returns, module)
        self.inline_stack.append(key)
        outer = self.frame
        self.depth += 2  # an inlined call costs about twice the stack of an expression
        try:
            self.too_deep(call)
            self.frames.append(frame)
            for pname, ty, val in binds:
                irname = self.declare(pname, ty, fn)
                self.block.append(ir.Assign(irname, val))
            frame.ret_type = ret_ty
            if ret_ty is not None:
                frame.ret_var = self.fresh_local(f"{fn.name}_ret", ret_ty)
            self.helper_body(fn, frame)
        finally:
            self.depth -= 2
            self.frames.pop()
            self.inline_stack.pop()
        if self.cond_depth and frame.effects:
            raise self.err(
                call,
                f"helper '{fn.name}' writes memory but is called where it would run "
                "unconditionally",
                "call it in an if statement",
            )
        outer.effects |= frame.effects
        return ir.Var(frame.ret_var, ret_ty) if ret_ty is not None else None

    def inline_size(self, module, fn: ast.FunctionDef, depth: int = 0) -> int:
        """About how many operations inlining `fn` adds (its callees inlined too), capped
        just past the limit: known before the work, so exponential inlining is refused at
        once. Memoised per helper; recursion counts as nothing (it is reported when met)."""
        memo = module.sizes
        if fn.name in memo:
            return memo[fn.name]
        memo[fn.name] = 0
        total = 0
        for n in ast.walk(fn):
            if isinstance(n, (ast.expr, ast.stmt)):
                total += 1
            if (
                depth <= 32
                and isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id in module.helpers
            ):
                total += self.inline_size(*module.helpers[n.func.id], depth + 1)
            if total > MAX_OPERATIONS:
                break
        memo[fn.name] = min(total, MAX_OPERATIONS + 1)
        return memo[fn.name]

    def helper_params(self, module, fn: ast.FunctionDef):
        a = fn.args
        src = module.source
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            plain = ", ".join(
                f"{p.arg}: {ast.unparse(p.annotation) if p.annotation else 'f32'}"
                for p in (*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg)
                if p is not None
            )
            raise src.error(
                fn,
                f"helper '{fn.name}' may only have plain typed parameters",
                "remove *args, **kwargs, defaults, / and keyword-only parameters: "
                f"def {fn.name}({plain})",
            )
        out = []
        for arg in a.args:
            if arg.annotation is None:
                raise src.error(
                    arg,
                    f"parameter '{arg.arg}' of helper '{fn.name}' has no type",
                    f"annotate it, e.g. {arg.arg}: f32",
                )
            kind, ty, access = self.resolve_param_type(arg.annotation, module)
            out.append((arg.arg, kind, ty, access, arg))
        return out

    def helper_body(self, fn: ast.FunctionDef, frame):
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        tail_only = all(
            not isinstance(n, ast.Return) for stmt in body[:-1] for n in ast.walk(stmt)
        ) and not (
            body
            and not isinstance(body[-1], ast.Return)
            and any(isinstance(n, ast.Return) for n in ast.walk(body[-1]))
        )
        if frame.ret_type is not None and tail_only and not _always_returns(body):
            raise frame.module.source.error(
                fn,
                f"helper '{fn.name}' must end with a return",
                "add a return statement at the end",
            )
        if frame.ret_type is not None and not _always_returns(body):
            raise frame.module.source.error(
                fn,
                f"helper '{fn.name}' can reach its end without returning a value",
                "end it with a return (or return in both arms of its last if/else)",
            )
        frame.wrapped = not tail_only
        loops = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, (ast.For, ast.While))]
        if any(isinstance(r, ast.Return) for lp in loops for r in ast.walk(lp)):
            frame.returned_var = self.fresh_local(f"{fn.name}_returned", "bool")
            self.block.append(ir.Assign(frame.returned_var, ir.Const("bool", False)))
        if tail_only:
            self.statements(body)
            return
        loop_body: list = []
        saved = self.block
        self.block = loop_body
        self.enter_block(fn)
        try:
            self.statements(body)
        finally:
            self.leave_block()
            self.block = saved
        if not loop_body or not isinstance(loop_body[-1], ir.Break):
            loop_body.append(ir.Break())
        self.block.append(ir.Loop(tuple(loop_body)))
