"""Operators of the kernel language: arithmetic, shifts, powers, unary and boolean
operators, comparisons and conditional expressions (a mixin of `KernelChecker`).

`OperatorChecker` holds `expr_BinOp`, `expr_UnaryOp`, `expr_BoolOp`, `expr_Compare` and
`expr_IfExp` (expressions.py's `expr` dispatches to them) and the helpers they share:
`unify` (two operands of one type), vector arithmetic, shift amounts and `**` by a constant
exponent. Guarantees: two constant integer operands fold to a constant (folding.py), a
storage type (bf16) gets no arithmetic or comparison, and an operand of `and` / `or` / an
`if` arm that is not always evaluated has no side effects.
"""

from __future__ import annotations

import ast

from vyre_build.frontend import ir
from vyre_build.frontend.folding import fold_binary, int_const
from vyre_build.frontend.types import convert_const

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


class OperatorChecker:
    """Mixin: operator checking for KernelChecker."""

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
