"""Constant folding of the kernel language: module constants, and integer literals meeting
in kernel expressions. Integers stay within 64 bits while folding and floats within f32,
so no constant can grow without bound or fail to encode; the work of folding one file's
top level is bounded too (limits.MAX_FOLD_STEPS)."""

from __future__ import annotations

import ast

from vyre_build.core.limits import INT_MAX, INT_MIN, MAX_FOLD_STEPS, MAX_NESTING, int_text
from vyre_build.frontend.source import Source
from vyre_build.frontend.types import check_f32, convert_const
from vyre_build.frontend.ir import Const


def int_const(src: Source, node, v: int) -> Const:
    """An untyped integer constant, refused when it does not fit in 64 bits."""
    if not INT_MIN <= v <= INT_MAX:
        raise src.error(
            node,
            f"integer constant out of range: {int_text(v)} does not fit in 64 bits",
            "constants are folded in 64 bits (-2**63 .. 2**64-1); use a smaller value",
        )
    return Const("int", v)


def literal(src: Source, node: ast.Constant) -> Const | None:
    """The Const of a bool, int or float literal (range-checked), else None."""
    v = node.value
    if isinstance(v, bool):
        return Const("bool", v)
    if isinstance(v, int):
        return int_const(src, node, v)
    if isinstance(v, float):
        return Const("f32", check_f32(src, node, v))
    return None


class ConstantFolder:
    """Folds the top-level constant expressions of one file (counting its steps)."""

    def __init__(self, src: Source):
        self.src = src
        self.steps = 0

    def count(self, node, depth: int = 0) -> None:
        """One step of this file's constant work, at `node`: refused past MAX_FOLD_STEPS
        steps (a variant's refolding counts too: constants.py) or MAX_NESTING levels."""
        self.steps += 1
        if self.steps > MAX_FOLD_STEPS or depth > MAX_NESTING:
            what = (
                f"constant folding in this file takes more than {MAX_FOLD_STEPS} steps"
                if self.steps > MAX_FOLD_STEPS
                else f"constant expression nested deeper than {MAX_NESTING} levels"
            )
            raise self.src.error(node, what + " (the limit)", "use fewer or simpler constants")

    def fold(self, node, env: dict[str, Const], depth: int = 0) -> Const:
        """Evaluate a module-level constant expression (ints, floats, + - * // % << >> & | ^ ~)."""
        src = self.src
        self.count(node, depth)
        if isinstance(node, ast.Constant):
            c = literal(src, node)
            if c is not None:
                return c
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            raise src.error(
                node,
                f"unknown constant '{node.id}'",
                "define it above as a module constant (NAME = 123)",
            )
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            v = self.fold(node.operand, env, depth + 1)
            if isinstance(node.op, ast.Invert):
                if v.ty != "int":
                    raise src.error(
                        node, "'~' needs an integer constant", "apply it to an integer, e.g. ~0xFF"
                    )
                return int_const(src, node, ~v.value)
            if isinstance(node.op, ast.UAdd):
                return v
            return int_const(src, node, -v.value) if v.ty == "int" else Const(v.ty, -v.value)
        if isinstance(node, ast.BinOp):
            a = self.fold(node.left, env, depth + 1)
            b = self.fold(node.right, env, depth + 1)
            return fold_binary(src, node, type(node.op), a, b)
        raise src.error(
            node,
            "module constants must be numbers or arithmetic on other constants",
            "write e.g. N = 256 or TILE2 = TILE * TILE",
        )


def fold_binary(src: Source, node, op, a: Const, b: Const) -> Const:
    """`a op b` on two constants; ints stay within 64 bits, floats within f32. A typed
    integer constant (N: u32 = 5) with a literal or one of its own type gives that type,
    the exact result required to fit it (as a literal next to a typed value takes its type
    in a kernel; no silent wrap-around at module level)."""
    typed = {a.ty, b.ty} - {"int"}
    if len(typed) == 1 and typed <= {"i32", "u32"}:
        exact = fold_binary(src, node, op, Const("int", a.value), Const("int", b.value))
        return convert_const(src, node, exact, typed.pop())
    ints = a.ty == "int" and b.ty == "int"
    x, y = a.value, b.value
    try:
        if op is ast.Add:
            v = x + y
        elif op is ast.Sub:
            v = x - y
        elif op is ast.Mult:
            v = x * y
        elif op is ast.Div:
            if ints:
                raise src.error(node, "'/' is float division", "use '//' for integer division")
            v = x / y
        elif op is ast.FloorDiv and ints:
            v = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        elif op is ast.Mod and ints:
            v = x - y * (abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1))
        elif op is ast.Pow and ints and 0 <= y <= 64:
            v = x**y
        elif op in (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor) and ints:
            v = {
                ast.LShift: lambda: x << (y & 31) if y >= 0 else 0,
                ast.RShift: lambda: x >> (y & 31),
                ast.BitAnd: lambda: x & y,
                ast.BitOr: lambda: x | y,
                ast.BitXor: lambda: x ^ y,
            }[op]()
        else:
            raise src.error(
                node,
                f"operator {op.__name__} is not supported on constants of type {a.ty} and {b.ty}",
                "use + - * // % << >> & | ^ on integers",
            )
    except ZeroDivisionError:
        raise src.error(
            node, "division by zero in a constant expression", "check the divisor"
        ) from None
    if not ints and not (a.ty in ("int", "f32") and b.ty in ("int", "f32")):
        typed = b.ty if a.ty in ("int", "f32") else a.ty
        raise src.error(
            node,
            f"cannot combine constants of type {a.ty} and {b.ty}",
            "use 1 and 0 for True and False in arithmetic"
            if "bool" in (a.ty, b.ty)
            else "leave the constants it combines unannotated (N = 5) and annotate the "
            f"result (M: {typed} = N + 1)",
        )
    if ints:
        return int_const(src, node, v)
    try:
        return Const("f32", check_f32(src, node, float(v)))
    except OverflowError:
        raise src.error(node, "constant expression overflows f32", "use a smaller value") from None
