"""Typing rules of the kernel language: literal conversion and operand unification.

Integer literals and integer constants are untyped ("int") until they meet a typed
operand; alone they become i32 (or u32 when only u32 can hold them). Float literals are
f32, except next to an f16 operand, where they become f16 (if f16 holds them). i32 and
u32 never mix implicitly, nor do ints and floats (a cast is the fix).
"""

from __future__ import annotations

from vyre_build.frontend.ir import Const

RANGES = {"i32": (-(1 << 31), (1 << 31) - 1), "u32": (0, (1 << 32) - 1)}
F32_MAX = 3.4028234663852886e38
F16_MAX = 65504.0


def check_f32(src, node, value: float) -> float:
    """A float constant must be representable as a finite f32 (or be inf/nan on purpose)."""
    if value == value and abs(value) != float("inf") and abs(value) > F32_MAX:
        raise src.error(
            node,
            f"constant {value!r} does not fit in f32 (largest is {F32_MAX:.7g})",
            "use a smaller value",
        )
    return value


def convert_const(src, node, c: Const, ty: str) -> Const:
    """Give an untyped constant the type `ty`, or raise a KernelError if it cannot have it."""
    if c.ty == ty:
        return c
    if c.ty == "int" and ty in RANGES:
        lo, hi = RANGES[ty]
        if not lo <= c.value <= hi:
            fix = (
                "use u32 for values up to 4294967295"
                if ty == "i32" and c.value > 0
                else "use i32 for negative values"
                if ty == "u32" and c.value < 0
                else "the value must fit in 32 bits"
            )
            raise src.error(node, f"constant {c.value} does not fit in {ty}", fix)
        return Const(ty, c.value)
    if c.ty == "int" and ty == "f32":
        try:
            return Const("f32", check_f32(src, node, float(c.value)))
        except OverflowError:
            raise src.error(
                node, f"constant {c.value} does not fit in f32", "use a smaller value"
            ) from None
    if c.ty in ("int", "f32") and ty == "f16":
        v = float(c.value)
        if v == v and abs(v) != float("inf") and abs(v) > F16_MAX:
            raise src.error(
                node,
                f"constant {c.value!r} does not fit in f16 (largest is 65504)",
                "use a smaller value, or compute in f32",
            )
        return Const("f16", v)
    if c.ty in ("int", "f32") and ty == "bf16":  # every f32 has a nearest bf16 (or inf)
        return Const("bf16", float(c.value))
    raise src.error(
        node,
        f"a constant of type {c.ty} cannot be used as {ty}",
        f"cast it explicitly, e.g. {ty}(...)",
    )


def default_type(c: Const) -> Const:
    """The concrete type an untyped constant takes when nothing else decides it."""
    if c.ty != "int":
        return c
    if RANGES["i32"][0] <= c.value <= RANGES["i32"][1]:
        return Const("i32", c.value)
    if 0 <= c.value <= RANGES["u32"][1]:
        return Const("u32", c.value)
    raise OverflowError(c.value)
