"""Calls in the kernel language: builtins, casts, atomics, and inlined helper functions.

`CallChecker` is a mixin of `KernelChecker`. Helpers are inlined at each call: their
parameters become fresh locals (buffers are aliased), and a `return` that is not the
helper's last statement becomes an assignment plus a break out of a one-shot loop.
"""

from __future__ import annotations

import ast

from vyre_build.frontend import ir
from vyre_build.frontend.expressions import _has_effects
from vyre_build.core.limits import MAX_OPERATIONS
from vyre_build.frontend.builtins import BUILTINS
from vyre_build.frontend.names import ATOMICS, MEMORY_BUILTINS, TYPE_NAMES

MEMORY_KEYWORDS = frozenset(ATOMICS) | frozenset(MEMORY_BUILTINS)


def call_shape(name: str, n: int) -> str:
    """How builtin (or type) `name` is called with `n` arguments, its parameters named:
    max(a, b), u32(x); a fix shows it."""
    row = BUILTINS.get(name)
    if row is None:  # a type's conversion
        return f"{name}(x)"
    sig = next((s for s in row.signatures if len(s.params) == n), row.signatures[0])
    return f"{name}({', '.join(p.name for p in sig.params)})"


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


class CallChecker:
    """Mixin: call expressions for KernelChecker."""

    def expr_Call(self, node, statement: bool = False):
        # scope= / order= of the memory builtins (frontend/memory_order.py)
        if node.keywords and not (
            isinstance(node.func, ast.Name)
            and node.func.id in MEMORY_KEYWORDS
            and node.func.id not in self.frame.module.helpers
        ):
            raise self.err(
                node.keywords[0].value,
                "keyword arguments are not supported in kernels",
                "pass arguments by position",
            )
        if not isinstance(node.func, ast.Name):
            raise self.err(
                node.func,
                "only plain function names can be called",
                "call builtins and helpers directly, e.g. sqrt(x) rather than math.sqrt(x)",
            )
        name = node.func.id
        f = self.frame
        if name in f.vars or name in f.loops or name in f.scalars or name in f.arrays:
            hidden = name in f.module.helpers or name in BUILTINS or name in TYPE_NAMES
            raise self.err(
                node.func,
                f"'{name}' is a variable, not a function",
                f"rename the variable: it hides {name}()"
                if hidden
                else f"write {name} without (...) to use its value",
            )
        if name in f.module.helpers:
            result = self.inline(node, *f.module.helpers[name], statement=statement)
            if result is None and not statement:
                raise self.err(
                    node,
                    f"helper '{name}' returns no value",
                    "give it a return annotation and a return statement",
                )
            return result
        if name in TYPE_NAMES:
            return self.cast(node, name)
        row = BUILTINS.get(name)
        if row is not None and row.group == "memory":
            return self.builtin_memory(node, name, statement)
        if isinstance(self.variant_env.get(name), str):
            self.used_variant_params.add(name)
            return self.cast(node, self.variant_env[name])
        if row is None:
            if name == "print":
                raise self.err(node, "print(...) has no value", "call it as a statement of its own")
            raise self.unknown(node.func, name, called=True)
        # A builtin: where its row says a call may stand, then the handler the row names.
        if row.where == "statement" and not statement:
            raise self.err(
                node, f"{name}() is a statement, not a value", f"call it on its own line: {name}()"
            )
        if row.where == "axis":
            raise self.err(node, f"{name}() is a vector", f"take one component: {name}().x")
        if row.where == "declaration":
            raise self.err(
                node,
                f"{name}(...) can only be assigned to a name at the top level of a kernel body",
                f"write: tile = {name}(f32, 256)",
            )
        return getattr(self, row.handler)(node, name)

    def nargs(self, node, name, n=None):
        """A call of `name` has `n` positional arguments (None: builtin `name`'s arity, from
        its row), else a KernelError at the call."""
        if n is None:
            n = BUILTINS[name].arity
        if len(node.args) != n:
            raise self.err(
                node,
                f"{name}() takes {n} argument{'s' if n != 1 else ''}, got {len(node.args)}",
                f"write {call_shape(name, n)}",
            )

    # -- casts ------------------------------------------------------------------------
    def cast(self, node, ty):
        if ty in ir.VECTORS:
            return self.vector(node, ty)
        self.nargs(node, ty, 1)
        a = self.expr(node.args[0])
        if a.ty in ir.VECTORS:
            raise self.err(
                node.args[0], f"cannot convert a {a.ty} to {ty}", "take a component: v.x"
            )
        if isinstance(a, ir.Const) and a.ty == "int":
            if ty == "bool":
                return ir.Const("bool", a.value != 0)
            return self.coerce(node.args[0], a, ty)
        if a.ty == ty:
            return a
        a = self.via_f32(a, ty)
        if a.ty == ty:
            return a
        if ty == "bool":
            zero = ir.Const(a.ty, 0.0 if a.ty in ir.FLOAT else 0)
            return ir.Binary("Ne", a, zero, "bool")
        return ir.Cast(a, ty)

    @staticmethod
    def via_f32(a, ty: str):
        """`a`, first converted to f32 (or the f32 vector of its length) where it or `ty` is a
        storage type and neither is that: bf16 converts to and from f32 only."""
        wide = ir.vector_of("f32", ir.VECTORS[ty][1]) if ty in ir.VECTORS else "f32"
        if {a.ty, ty} & ir.STORAGE_TYPES and wide not in (a.ty, ty):
            return ir.Cast(a, wide)
        return a

    def vector(self, node, ty):
        """vec4f(x) splats a scalar or converts another 4-vector; vec4f(a, b, c, d) builds one."""
        elem, n = ir.VECTORS[ty]
        if len(node.args) == 1:
            a = self.expr(node.args[0])
            if a.ty in ir.VECTORS:
                if ir.VECTORS[a.ty][1] != n:
                    raise self.err(
                        node.args[0],
                        f"cannot convert a {a.ty} to {ty}",
                        "vectors convert only between equal component counts",
                    )
                if a.ty == ty:
                    return a
                a = self.via_f32(a, ty)
                return a if a.ty == ty else ir.Cast(a, ty)
            return ir.Splat(self.cast_scalar(node.args[0], a, elem), ty)
        if len(node.args) != n:
            raise self.err(
                node,
                f"{ty}() takes 1 or {n} arguments, got {len(node.args)}",
                f"write {ty}(x) for all components equal, or give all {n}",
            )
        return ir.Construct(
            tuple(self.cast_scalar(an, self.expr(an), elem) for an in node.args), ty
        )

    def cast_scalar(self, node, a, elem):
        if a.ty in ir.VECTORS:
            raise self.err(
                node,
                f"expected one {elem} component, got a {a.ty}",
                "pass components: e.g. v.x, v.y",
            )
        if (
            a.ty == "int"
            or a.ty == elem
            or (elem in ("f16", "bf16") and isinstance(a, ir.Const) and a.ty == "f32")
        ):
            return self.coerce(node, a, elem)
        raise self.err(
            node,
            f"expected one {elem} component, got {a.ty}",
            f"convert it explicitly: {elem}(...)",
        )

    def builtin_bitcast(self, node, name):
        self.nargs(node, name)
        t = node.args[0]
        ty = self.resolve_type(t)
        if ty not in ("i32", "u32", "f32"):
            raise self.err(
                t,
                "bitcast needs a 32-bit scalar type: i32, u32 or f32",
                "bitcast each component: bitcast(u32, v.x)",
            )
        a = self.typed(node.args[1])
        if a.ty not in ("i32", "u32", "f32"):
            what = "a bool" if a.ty == "bool" else f"an {a.ty}" if a.ty == "f16" else f"a {a.ty}"
            raise self.err(
                node.args[1], f"cannot bitcast {what}", "bitcast 32-bit scalars: i32, u32, f32"
            )
        return a if a.ty == ty else ir.Bitcast(a, ty)

    # -- math ------------------------------------------------------------------------
    def builtin_f32_unary(self, node, name):
        row = BUILTINS[name]
        predicate = row.result == "bool"  # isnan, isinf, isfinite: of a scalar, a bool
        self.nargs(node, name)
        a = self.expr(node.args[0])
        if a.ty == "int":
            a = self.coerce(node.args[0], a, "f32")
        if predicate and a.ty not in ir.FLOAT:
            raise self.err(
                node.args[0],
                f"{name}() needs an f32 or f16, got {a.ty}",
                "test vector components one by one: isnan(v.x)",
            )
        if ir.element(a.ty) not in ir.FLOAT:
            raise self.err(
                node.args[0],
                f"{name}() needs an f32 or f16 (or a vector of them), got {a.ty}",
                "convert it: f32(x)",
            )
        return ir.Unary(row.op, a, "bool" if predicate else a.ty)

    def builtin_int_unary(self, node, name):
        self.nargs(node, name)
        a = self.typed(node.args[0])
        if a.ty not in ir.INTEGER:
            raise self.err(
                node.args[0],
                f"{name}() needs an i32 or u32, got {a.ty}",
                "reinterpret floats with bitcast(u32, x)",
            )
        return ir.Unary(BUILTINS[name].op, a, a.ty)

    def numeric_args(self, node, name, n):
        self.nargs(node, name, n)
        args = [self.expr(a) for a in node.args]
        vec = next((a.ty for a in args if a.ty in ir.VECTORS), None)
        if vec is not None:  # scalars next to a vector are splatted to it
            for an, a in zip(node.args, args):
                if a.ty in ir.VECTORS and a.ty != vec:
                    raise self.err(
                        an,
                        f"{name}() arguments must have one type; got {vec} and {a.ty}",
                        f"convert one of them, e.g. {vec}(...)",
                    )
            return [
                a if a.ty == vec else ir.Splat(self.cast_scalar(an, a, ir.element(vec)), vec)
                for an, a in zip(node.args, args)
            ]
        literal = lambda a: isinstance(a, ir.Const) and a.ty == "f32"  # noqa: E731 - f16 next to it
        ty = next((a.ty for a in args if a.ty != "int" and not literal(a)), None) or next(
            (a.ty for a in args if a.ty != "int"), None
        )
        args = [self.coerce(an, a, ty) for an, a in zip(node.args, args)]
        ty = args[0].ty
        for an, a in zip(node.args, args):
            if a.ty != ty:
                raise self.err(
                    an,
                    f"{name}() arguments must have one type; got {ty} and {a.ty}",
                    "convert explicitly",
                )
            if a.ty == "bool":
                raise self.err(
                    an,
                    f"{name}() needs numbers, got bool",
                    "convert it: u32(b) (1 for True, 0 for False)",
                )
        return args

    def builtin_abs(self, node, name):
        (a,) = self.numeric_args(node, name, 1)
        return a if ir.element(a.ty) == "u32" else ir.Unary(BUILTINS[name].op, a, a.ty)

    def builtin_min_max(self, node, name):
        a, b = self.numeric_args(node, name, 2)
        return ir.Binary(BUILTINS[name].op, a, b, a.ty)

    def builtin_clamp(self, node, name):
        x, lo, hi = self.numeric_args(node, name, 3)
        return ir.Binary("Min", ir.Binary("Max", x, lo, x.ty), hi, x.ty)

    def builtin_fma(self, node, name):
        a, b, c = self.numeric_args(node, name, 3)
        if ir.element(a.ty) not in ir.FLOAT:
            raise self.err(
                node, f"fma() needs f32 or f16 arguments, got {a.ty}", "use a * b + c for integers"
            )
        return ir.Fma(a, b, c, a.ty)

    def builtin_select(self, node, name):
        self.nargs(node, name)
        c = self.cond(node.args[0])
        a = self.lazy(node.args[1], self.expr)
        b = self.lazy(node.args[2], self.expr)
        a, b = self.broadcast(node.args[1], a, node.args[2], b)
        a, b = self.unify(node, a, b, node.args[1], node.args[2], arith=False)
        a = self.coerce(node.args[1], a, None)
        b = self.coerce(node.args[2], b, a.ty)
        return ir.Select(c, a, b, a.ty)

    def broadcast(self, an, a, bn, b):
        """A scalar (or literal) next to a vector becomes that vector, splatted."""
        if a.ty in ir.VECTORS and b.ty not in ir.VECTORS:
            return a, ir.Splat(self.cast_scalar(bn, b, ir.element(a.ty)), a.ty)
        if b.ty in ir.VECTORS and a.ty not in ir.VECTORS:
            return ir.Splat(self.cast_scalar(an, a, ir.element(b.ty)), b.ty), b
        return a, b

    def builtin_rotate(self, node, name):
        self.nargs(node, name)
        a = self.typed(node.args[0])
        if a.ty not in ir.INTEGER:
            raise self.err(
                node.args[0],
                f"{name}() needs an i32 or u32, got {a.ty}",
                f"rotate each component: {name}(v.x, n)"
                if a.ty in ir.VECTORS
                else f"reinterpret a float's bits: {name}(bitcast(u32, x), n)"
                if a.ty in ir.FLOAT
                else f"convert it: {name}(u32(x), n)",
            )
        rotated = self.as_u32(node.args[1], self.expr(node.args[1]))
        return ir.Binary(BUILTINS[name].op, a, rotated, a.ty)

    def builtin_len(self, node, name):
        self.nargs(node, name)
        arr = self.array_name(node.args[0])
        decl = self.arrays.get(arr)
        if decl is not None:
            return ir.Const("u32", decl.count)
        return ir.Length(arr)

    def builtin_range(self, node, name):
        raise self.err(
            node,
            "range() can only be used as the iterable of a for loop",
            "write: for i in range(n):",
        )

    def builtin_unroll(self, node, name):
        raise self.err(
            node,
            "unroll() can only be used as the iterable of a for loop",
            "write: for i in unroll(4):",
        )

    def builtin_barrier(self, node, name):
        """barrier() / storage_barrier(), a statement (stmt_Expr calls this)."""
        self.nargs(node, name)
        self.block.append(ir.Barrier(storage=name == "storage_barrier"))

    # -- subgroups ------------------------------------------------------------------
    def builtin_subgroup_id(self, node, name):
        self.nargs(node, name)
        return ir.Builtin(name, 0)

    def builtin_subgroup(self, node, name):
        op = BUILTINS[name].op
        if op == "elect":
            self.nargs(node, name, 0)
            return ir.Subgroup(op, (), "bool")
        lane_op = op in ("broadcast", "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down")
        self.nargs(node, name, 2 if lane_op else 1)
        if op in ("all", "any", "ballot"):
            c = self.cond(node.args[0])
            return ir.Subgroup(op, (c,), "vec4u" if op == "ballot" else "bool")
        v = self.typed(node.args[0])
        ints = op in ("and", "or", "xor")
        if ir.element(v.ty) not in (("i32", "u32") if ints else ("i32", "u32", "f32")):
            what = (
                "an i32 or u32 (or a vector of them)"
                if ints
                else "an i32, u32 or f32 (or a vector of them)"
            )
            fix = (
                "use subgroup_all / subgroup_any for bools"
                if v.ty == "bool"
                else "convert it first, e.g. u32(x)"
                if ints
                else "convert it first, e.g. f32(x)"
            )
            raise self.err(node.args[0], f"{name}() needs {what}, got {v.ty}", fix)
        if not lane_op:
            return ir.Subgroup(op, (v,), v.ty)
        lane = self.as_u32(node.args[1], self.expr(node.args[1]))
        if op == "broadcast" and not isinstance(lane, ir.Const):
            raise self.err(
                node.args[1],
                "subgroup_broadcast() needs a constant lane",
                "use subgroup_shuffle(v, lane) for a lane computed at run time",
            )
        return ir.Subgroup(op, (v, lane), v.ty)

    # -- atomics --------------------------------------------------------------------
    def builtin_atomic(self, node, name):
        n = 4 if name == "atomic_compare_exchange" else 3
        self.nargs(node, name, n)
        arr, ty = self.memory_array(node, name)
        scope, order = self.memory_keywords(node, name, "rmw", arr)
        idx = self.index(node.args[1])
        vals = tuple(self.typed(a, ty) for a in node.args[2:])
        if name == "atomic_sub":
            vals = (ir.Unary("Negate", vals[0], ty),)
        return self.atomic(node, name, ATOMICS[name], arr, idx, vals, ty, scope, order)

    # -- helpers --------------------------------------------------------------------
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
