"""Expressions of the kernel language: typing, constant folding and the builtins table.

`ExprChecker` is a mixin of `KernelChecker` (checker.py): one `expr_X` method per
supported `ast` expression; anything else is rejected by name with a caret.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import fields, is_dataclass

from vyre_build.frontend import ir
from vyre_build.frontend.folding import fold_binary, int_const, literal
from vyre_build.core.limits import MAX_OPERATIONS
from vyre_build.frontend.names import ALL_BUILTINS, ID_BUILTINS, TYPE_NAMES
from vyre_build.frontend.types import convert_const, default_type

_BINOPS = {
    ast.Add: "Add",
    ast.Sub: "Sub",
    ast.Mult: "Mul",
    ast.Div: "Div",
    ast.FloorDiv: "Div",
    ast.Mod: "Mod",
    ast.BitAnd: "BitAnd",
    ast.BitOr: "BitOr",
    ast.BitXor: "BitXor",
    ast.LShift: "Shl",
    ast.RShift: "Shr",
    ast.Pow: "Pow",
}
_CMPOPS = {ast.Eq: "Eq", ast.NotEq: "Ne", ast.Lt: "Lt", ast.Gt: "Gt", ast.LtE: "Le", ast.GtE: "Ge"}
_CMP_FOLD = {
    "Eq": lambda a, b: a == b,
    "Ne": lambda a, b: a != b,
    "Lt": lambda a, b: a < b,
    "Gt": lambda a, b: a > b,
    "Le": lambda a, b: a <= b,
    "Ge": lambda a, b: a >= b,
}

_UNSUPPORTED_EXPR_FIX = {
    "List": "kernels have no lists; use a buffer, shared(...) or local_array(...)",
    "Tuple": "kernels have no tuples; use separate variables",
    "Dict": "kernels have no dicts",
    "Set": "kernels have no sets",
    "ListComp": "write a for loop",
    "GeneratorExp": "write a for loop",
    "Lambda": "define a helper function at module level",
    "JoinedStr": "kernels have no strings",
    "NamedExpr": "assign in a separate statement",
    "Starred": "pass arguments one by one",
    "Await": "kernels are not async",
}


def _has_effects(e) -> bool:
    if isinstance(e, ir.Atomic):
        return True
    if isinstance(e, tuple):
        return any(_has_effects(x) for x in e)
    if is_dataclass(e):
        return any(_has_effects(getattr(e, f.name)) for f in fields(e))
    return False


class ExprChecker:
    """Mixin: expression checking for KernelChecker."""

    # -- entry points ----------------------------------------------------------------
    def expr(self, node):
        """Check an expression; the result may be an untyped Const('int')."""
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            kind = type(node).__name__
            raise self.err(
                node,
                f"'{kind}' expressions are not supported in kernels",
                _UNSUPPORTED_EXPR_FIX.get(kind, "see docs/language.md for the language"),
            )
        self.ops += 1
        if self.ops > MAX_OPERATIONS:
            raise self.too_large(node)
        self.depth += 1
        try:
            self.too_deep(node)
            return self.storage_only(node, method(node))
        finally:
            self.depth -= 1

    def storage_only(self, node, e):
        """`e`, unless it computes on a storage type (bf16: loads, stores, selects and
        conversions to and from f32 only, as SPV_KHR_bfloat16 has it)."""
        if isinstance(e, (ir.Binary, ir.Unary, ir.Fma)):
            for x in (e.a, getattr(e, "b", None), getattr(e, "c", None)):
                self.no_arithmetic(node, getattr(x, "ty", None))
        return e

    def no_arithmetic(self, node, ty) -> None:
        """A KernelError at `node` if `ty` is a storage type (bf16 or its vectors)."""
        if ty in ir.STORAGE_TYPES:
            wide = ir.vector_of("f32", ir.VECTORS[ty][1]) if ty in ir.VECTORS else "f32"
            raise self.err(
                node,
                f"{ty} has no arithmetic, comparisons or math: it is a storage type",
                f"compute in f32 and convert back: {ty}({wide}(x) * 2.0)",
            )

    def typed(self, node, ty: str | None = None):
        """Check an expression and give it a concrete type (`ty` if given)."""
        if isinstance(node, ast.IfExp) and ty is not None:
            self.depth += 1
            try:
                self.too_deep(node)
                return self.expr_IfExp(node, ty)
            finally:
                self.depth -= 1
        e = self.expr(node)
        return self.coerce(node, e, ty)

    def coerce(self, node, e, ty: str | None):
        if ty in ("f16", "bf16") and isinstance(e, ir.Const) and e.ty == "f32":  # a literal
            return convert_const(self.src, node, e, ty)
        if e.ty == "int" and ty in ir.VECTORS:
            raise self.err(
                node,
                f"expected a {ty}, got an integer constant",
                f"build the vector: {ty}({e.value})",
            )
        if e.ty == "int":
            if ty is None:
                try:
                    return default_type(e)
                except OverflowError:
                    raise self.err(
                        node, f"constant {e.value} does not fit in 32 bits", "use a smaller value"
                    ) from None
            return convert_const(self.src, node, e, ty)
        if ty is not None and e.ty != ty:
            raise self.err(
                node,
                f"expected a value of type {ty}, got {e.ty}",
                f"convert it explicitly: {ty}(...)",
            )
        return e

    def cond(self, node):
        e = self.typed(node)
        if e.ty in ir.VECTORS:
            raise self.err(
                node, f"condition must be bool, got {e.ty}", "test a component, e.g. v.x != 0.0"
            )
        if e.ty != "bool":
            fix = "f32(x) != 0.0" if e.ty in ir.STORAGE_TYPES else "x != 0"
            raise self.err(
                node, f"condition must be bool, got {e.ty}", f"compare explicitly, e.g. {fix}"
            )
        return e

    def index(self, node):
        e = self.expr(node)
        if e.ty == "int":
            if e.value < 0:
                raise self.err(node, f"negative index {e.value}", "indices are unsigned")
            return self.coerce(node, e, "u32")
        if e.ty == "i32":
            return ir.Cast(e, "u32")
        if e.ty != "u32":
            raise self.err(node, f"index must be an integer, got {e.ty}", "convert it: u32(...)")
        return e

    def lazy(self, node, fn):
        """Check `node` through fn in a context evaluated eagerly but meant lazily."""
        self.cond_depth += 1
        try:
            e = fn(node)
        finally:
            self.cond_depth -= 1
        if _has_effects(e):
            raise self.err(
                node,
                "this operand has side effects (an atomic) but is evaluated unconditionally",
                "move it into an if statement",
            )
        return e

    # -- leaves ---------------------------------------------------------------------
    def expr_Constant(self, node):
        c = literal(self.src, node)
        if c is not None:
            return c
        v = node.value
        raise self.err(
            node,
            f"{type(v).__name__} constants are not supported in kernels",
            "kernels compute on bool, i32, u32 and f32 only",
        )

    def expr_Name(self, node):
        name = node.id
        f = self.frame
        if name in f.loops:
            return f.loops[name]
        if name in f.vars:
            irname, ty = f.vars[name]
            return ir.Var(irname, ty)
        if name in f.scalars:
            return f.scalars[name]
        if name in f.arrays:
            raise self.err(
                node,
                f"'{name}' is an array and cannot be used as a value",
                f"index it ({name}[i]) or take its length (len({name}))",
            )
        c = self.constant(name)
        if c is not None:
            if isinstance(c, str):
                raise self.err(node, f"'{name}' is a type, not a value", f"cast with {c}(...)")
            return c
        if name in TYPE_NAMES or name in ALL_BUILTINS or name in f.module.helpers:
            raise self.err(
                node, f"'{name}' is a function or type, not a value", f"call it: {name}(...)"
            )
        raise self.unknown(node, name)

    def constant(self, name):
        if name in self.variant_env:
            self.used_variant_params.add(name)
            return self.variant_env[name]
        return self.module_constant(self.frame.module, name)

    def unknown(self, node, name, called=False):
        """The error for an unknown `name`, with the closest known name as the fix. A name
        that is `called` is matched against what can be called (builtins, types, helpers),
        any other against the values in scope."""
        f = self.frame
        if called:
            known = (
                sorted(ALL_BUILTINS)
                + list(TYPE_NAMES)
                + list(f.module.helpers)
                + [k for k, v in self.variant_env.items() if isinstance(v, str)]
            )
            message = f"unknown function '{name}'"
            otherwise = (
                "call a builtin (the README's kernel language section), a type to convert, "
                "or a helper: a module-level def without @kernel"
            )
        else:
            known = (
                list(f.vars)
                + list(f.loops)
                + list(f.scalars)
                + list(f.arrays)
                + list(f.module.constants)
                + list(self.variant_env)
                + list(f.module.helpers)
            )
            message = f"unknown name '{name}'"
            otherwise = (
                "assign it before use, declare it as a parameter, or define a module constant"
            )
        close = difflib.get_close_matches(name, known, n=1)
        return self.err(node, message, f"did you mean '{close[0]}'?" if close else otherwise)

    def expr_Attribute(self, node):
        call = node.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in ID_BUILTINS
            and call.func.id not in self.frame.vars
        ):
            if call.args or call.keywords:
                raise self.err(
                    call, f"{call.func.id}() takes no arguments", f"write {call.func.id}().x"
                )
            axis = {"x": 0, "y": 1, "z": 2}.get(node.attr)
            if axis is None:
                raise self.err(node, f"unknown component '.{node.attr}'", "use .x, .y or .z")
            if call.func.id == "workgroup_size":
                return ir.Const("u32", self.workgroup_size[axis])
            return ir.Builtin(call.func.id, axis)
        v = self.expr(call)
        if v.ty in ir.VECTORS:
            elem, n = ir.VECTORS[v.ty]
            axis = {"x": 0, "y": 1, "z": 2, "w": 3}.get(node.attr)
            if axis is None or axis >= n:
                raise self.err(
                    node,
                    f"a {v.ty} has no component '.{node.attr}'",
                    f"use {', '.join('.' + c for c in 'xyzw'[:n])}",
                )
            return ir.Extract(v, axis, elem)
        raise self.err(
            node,
            "attribute access is only supported on id builtins and vectors",
            "write e.g. global_id().x or v.x; call math builtins directly: sqrt(x)",
        )

    def expr_Subscript(self, node):
        arr = self.array_name(node.value)
        idx = self.index(node.slice)
        self.check_access(node.value, arr, "read")
        self.check_const_index(node, arr, idx)
        return ir.Load(arr, idx, self.element_type(arr), self.site(node))

    # -- operators ------------------------------------------------------------------
    def unify(self, node, a, b, an, bn, arith: bool = True):
        """(a, b) of one type; `arith`: operands of arithmetic or a comparison (not of a
        select, which a storage type such as bf16 may be)."""
        for x in (a, b) if arith else ():
            self.no_arithmetic(node, x.ty)
        if a.ty == "int" and b.ty != "int":
            a = convert_const(self.src, an, a, b.ty)
        elif b.ty == "int" and a.ty != "int":
            b = convert_const(self.src, bn, b, a.ty)
        elif b.ty == "f16" and isinstance(a, ir.Const) and a.ty == "f32":  # a float literal
            a = convert_const(self.src, an, a, "f16")
        elif a.ty == "f16" and isinstance(b, ir.Const) and b.ty == "f32":
            b = convert_const(self.src, bn, b, "f16")
        if a.ty != b.ty:
            raise self.err(
                node,
                f"mismatched operand types {a.ty} and {b.ty}",
                f"convert one side explicitly, e.g. {a.ty}(...) or {b.ty}(...)",
            )
        return a, b

    def expr_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.err(
                node,
                f"operator '{type(node.op).__name__}' is not supported",
                "use + - * / // % ** & | ^ << >>",
            )
        if op == "Pow":
            return self.power(node)
        a, b = self.expr(node.left), self.expr(node.right)
        if a.ty in ir.VECTORS or b.ty in ir.VECTORS:
            return self.vector_binary(node, op, a, b)
        if op in ("Shl", "Shr"):
            return self.shift(node, op, a, b)
        a, b = self.unify(node, a, b, node.left, node.right)
        if a.ty == "int":
            return fold_binary(self.src, node, type(node.op), a, b)
        ty = a.ty
        if ty == "bool":
            raise self.err(node, "arithmetic on bool is not supported", "use and / or / not")
        if isinstance(node.op, ast.Div) and ty not in ir.FLOAT:
            raise self.err(
                node,
                f"'/' is float division but the operands are {ty}",
                "use '//' for integer division, or convert with f32(...)",
            )
        if isinstance(node.op, ast.FloorDiv) and ty in ir.FLOAT:
            return ir.Unary("Floor", ir.Binary("Div", a, b, ty), ty)
        if isinstance(node.op, ast.Mod) and ty in ir.FLOAT:
            raise self.err(node, f"'%' on {ty} is not supported", "write x - y * floor(x / y)")
        if op in ("BitAnd", "BitOr", "BitXor") and ty in ir.FLOAT:
            raise self.err(
                node,
                f"bitwise operators need integers, got {ty}",
                "reinterpret with bitcast(u32, x) first",
            )
        return ir.Binary(op, a, b, ty)

    def vector_binary(self, node, op, a, b):
        """Componentwise arithmetic; a scalar operand is splatted to the vector's type."""
        vec = a.ty if a.ty in ir.VECTORS else b.ty
        elem = ir.element(vec)
        for e in (a, b):
            if e.ty in ir.VECTORS and e.ty != vec:
                raise self.err(
                    node,
                    f"mismatched operand types {a.ty} and {b.ty}",
                    f"convert one side explicitly, e.g. {vec}(...)",
                )
        allowed = {"Add", "Sub", "Mul"} | (
            {"Div"}
            if elem in ir.FLOAT and isinstance(node.op, ast.Div)
            else {"BitAnd", "BitOr", "BitXor"}
            if elem not in ir.FLOAT
            else set()
        )
        if op not in allowed:
            raise self.err(
                node,
                f"operator '{type(node.op).__name__}' is not defined on {vec}",
                "apply it to the components (v.x, v.y, ...) one by one",
            )
        a, b = (
            e if e.ty == vec else ir.Splat(self.cast_scalar(n, e, elem), vec)
            for n, e in ((node.left, a), (node.right, b))
        )
        return ir.Binary(op, a, b, vec)

    def shift(self, node, op, a, b):
        if a.ty == "int" and b.ty == "int":
            return fold_binary(self.src, node, type(node.op), a, b)
        a = self.coerce(node.left, a, None)
        if a.ty not in ir.INTEGER:
            raise self.err(node.left, f"shifts need an integer, got {a.ty}", "convert it: u32(...)")
        return ir.Binary(op, a, self.as_u32(node.right, b), a.ty)

    def as_u32(self, node, e):
        if e.ty == "int":
            if e.value < 0:
                raise self.err(
                    node,
                    "shift and rotate amounts must not be negative",
                    "use an amount from 0 to 31 (shift or rotate the other way instead)",
                )
            return convert_const(self.src, node, e, "u32")
        if e.ty == "i32":
            return ir.Cast(e, "u32")
        if e.ty != "u32":
            raise self.err(
                node,
                f"expected an integer amount, got {e.ty}",
                "use one component: n.x" if e.ty in ir.VECTORS else "convert it: u32(n)",
            )
        return e

    def power(self, node):
        a, b = self.expr(node.left), self.expr(node.right)
        if a.ty == "int" and b.ty == "int":
            return fold_binary(self.src, node, ast.Pow, a, b)
        if not (isinstance(b, ir.Const) and b.ty == "int" and 0 <= b.value <= 16):
            raise self.err(
                node.right,
                "'**' needs a constant integer exponent from 0 to 16",
                "use exp(y * log(x)) for a general power",
            )
        a = self.coerce(node.left, a, None)
        self.too_deep(node, b.value)  # x ** n is n - 1 nested multiplications
        if a.ty == "bool":
            raise self.err(node.left, "'**' on bool", "convert it: u32(b) ** n")
        if b.value == 0:
            return ir.Const(a.ty, 1.0 if a.ty in ir.FLOAT else 1)
        out = a
        for _ in range(b.value - 1):
            out = ir.Binary("Mul", out, a, a.ty)
        return out

    def expr_UnaryOp(self, node):
        a = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            if a.ty != "bool":
                raise self.err(
                    node, f"'not' needs a bool, got {a.ty}", "compare explicitly: x == 0"
                )
            return (
                ir.Const("bool", not a.value)
                if isinstance(a, ir.Const)
                else ir.Unary("LogicalNot", a, "bool")
            )
        if isinstance(node.op, ast.UAdd):
            return a
        if a.ty in ir.VECTORS:
            if isinstance(node.op, ast.Invert) and ir.element(a.ty) in ir.FLOAT:
                raise self.err(
                    node,
                    f"'~' needs integers, got {a.ty}",
                    "reinterpret components with bitcast(u32, v.x)",
                )
            return ir.Unary("BitNot" if isinstance(node.op, ast.Invert) else "Negate", a, a.ty)
        if a.ty == "bool":
            raise self.err(node, "arithmetic on bool is not supported", "use not")
        if isinstance(a, ir.Const) and a.ty in ("int", "f32", "f16"):
            if isinstance(node.op, ast.USub):
                return (
                    int_const(self.src, node, -a.value)
                    if a.ty == "int"
                    else ir.Const(a.ty, -a.value)
                )
            if a.ty == "int":
                return int_const(self.src, node, ~a.value)
        if isinstance(node.op, ast.Invert):
            if a.ty not in ir.INTEGER:
                raise self.err(
                    node,
                    f"'~' needs an integer, got {a.ty}",
                    "reinterpret its bits first: ~bitcast(u32, x)"
                    if a.ty == "f32"
                    else "convert it first: ~u32(x)",
                )
            return ir.Unary("BitNot", a, a.ty)
        return ir.Unary("Negate", a, a.ty)

    def expr_BoolOp(self, node):
        op = "And" if isinstance(node.op, ast.And) else "Or"
        self.too_deep(node, len(node.values) - 1)  # the IR nests one level per operand
        out = self.cond(node.values[0])
        for v in node.values[1:]:
            rhs = self.lazy(v, self.cond)
            out = _bool_op(op, out, rhs)
        return out

    def expr_Compare(self, node):
        self.too_deep(node, len(node.ops))  # a chain a < b < c nests one level per comparison
        out, left, left_node = None, self.expr(node.left), node.left
        for opnode, right_node in zip(node.ops, node.comparators):
            op = _CMPOPS.get(type(opnode))
            if op is None:
                raise self.err(
                    node,
                    f"comparison '{type(opnode).__name__}' is not supported",
                    "use == != < <= > >=",
                )
            right = self.expr(right_node)
            if left.ty in ir.VECTORS or right.ty in ir.VECTORS:
                raise self.err(
                    node, "comparisons are not defined on vectors", "compare components: v.x < w.x"
                )
            a, b = self.unify(node, left, right, left_node, right_node)
            if a.ty == "bool" and op not in ("Eq", "Ne"):
                raise self.err(
                    node,
                    "bools can only be compared with == and !=",
                    "use == or !=, or compare numbers: u32(a) < u32(b)",
                )
            if isinstance(a, ir.Const) and isinstance(b, ir.Const):
                cmp = ir.Const("bool", _CMP_FOLD[op](a.value, b.value))
            else:
                cmp = ir.Binary(op, a, b, "bool")
            out = cmp if out is None else _bool_op("And", out, cmp)
            left, left_node = right, right_node
        return out

    def expr_IfExp(self, node, want: str | None = None):
        """`a if c else b`; untyped literal arms take `want` (the assignment's type) if given."""
        c = self.cond(node.test)
        a = self.lazy(node.body, self.expr)
        b = self.lazy(node.orelse, self.expr)
        a, b = self.broadcast(node.body, a, node.orelse, b)
        a, b = self.unify(node, a, b, node.body, node.orelse, arith=False)
        a = self.coerce(node.body, a, want)
        b = self.coerce(node.orelse, b, a.ty)
        return select(c, a, b)


def _bool_op(op: str, a, b):
    """`a and b` / `a or b` (op "And" / "Or"); two constants give a constant, so that a
    condition on module constants and variant parameters picks its arm (select below)."""
    if isinstance(a, ir.Const) and isinstance(b, ir.Const):
        return ir.Const("bool", (a.value and b.value) if op == "And" else (a.value or b.value))
    return ir.Binary(op, a, b, "bool")


def select(c, a, b):
    """`a if c else b`, with an operation both arms share taken out of the select:
    select(c, x / z, y / z) is select(c, x, y) / z, exactly (every op is a pure function of
    its operands), and the op runs once instead of twice (the sigmoid's two divisions).
    A constant condition picks its arm (`x if OP == 0 else y` with a constant OP)."""
    if isinstance(c, ir.Const):
        return a if c.value else b
    if isinstance(a, ir.Binary) and isinstance(b, ir.Binary) and a.op == b.op and a.ty == b.ty:
        if a.b == b.b and a.a.ty == b.a.ty:
            return ir.Binary(a.op, select(c, a.a, b.a), a.b, a.ty)
        if a.a == b.a and a.b.ty == b.b.ty:
            return ir.Binary(a.op, a.a, select(c, a.b, b.b), a.ty)
    return ir.Select(c, a, b, a.ty)
