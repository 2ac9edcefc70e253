"""The builtin handlers that registry rows name for math, select, rotation, len, barriers,
subgroups and atomics (a mixin of `KernelChecker`).

`BuiltinCallChecker` holds one `builtin_X` method per handler of frontend/builtins.py's
rows (casts and bitcast are in calls.py, cooperative matrices in coop.py, memory builtins in
memory_order.py). `expr_Call` has checked where the call may stand; each handler checks the
arity and argument types, splats a scalar next to a vector, and returns the IR of the call.
Guarantee: a typed IR expression (or, for a barrier, a statement appended to the block), or
a KernelError at the call or the argument, with the fix.
"""

from __future__ import annotations

from vyre_build.frontend import ir
from vyre_build.frontend.builtins import BUILTINS
from vyre_build.frontend.names import ATOMICS


class BuiltinCallChecker:
    """Mixin: builtin call handlers for KernelChecker."""

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

    def integer_first(self, node, name, fix):
        # The first argument of `name`, which must be an i32 or u32 (`fix(ty)`: the fix
        # named otherwise).
        a = self.typed(node.args[0])
        if a.ty not in ir.INTEGER:
            raise self.err(node.args[0], f"{name}() needs an i32 or u32, got {a.ty}", fix(a.ty))
        return a

    def builtin_int_unary(self, node, name):
        self.nargs(node, name)
        a = self.integer_first(node, name, lambda ty: "reinterpret floats with bitcast(u32, x)")
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
        a = self.integer_first(
            node,
            name,
            lambda ty: (
                f"rotate each component: {name}(v.x, n)"
                if ty in ir.VECTORS
                else f"reinterpret a float's bits: {name}(bitcast(u32, x), n)"
                if ty in ir.FLOAT
                else f"convert it: {name}(u32(x), n)"
            ),
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
