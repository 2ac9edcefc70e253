"""The value ops of the legal form (a base of `legalize._Legalizer`): integer Div / Mod,
Shl / Shr, rotations, MulHigh and AbsDiff, Clz / Ctz, Abs of i32, Sign of u32, and float
-> integer casts, each rewritten into ops whose target instruction is defined for every
operand it gets (the rules: the `legalize` module docstring,
docs/descriptor-conventions.md).

Guarantees: a rewrite means what the op means under the pinned rules; a guard is left
out only where a literal operand's value (never a proof: naga evaluates a literal's `let`
even on a path that cannot run) or the range analysis (`Proofs.safe`) shows it is not
needed; an op needing no rewrite is kept as the same `KernelOp`. Every rewrite is marked
(`start` / `mark`) so that `Legal.origin` maps its first op to the op it came from.
"""

from __future__ import annotations

from vyre_build.descriptor.types import FLOAT, INTEGER, TYPES, datatype

__all__ = ["ValueRewrites"]

I32_MIN = -(1 << 31)
# The largest f32 values below 2^31 and 2^32: the top of the clamp before a conversion.
F32_I32_HI = 2147483520.0
F32_U32_HI = 4294967040.0

_FLOAT_TO_INT = {(f, i) for f in FLOAT for i in INTEGER}
# Literal operands (their 32 bits, `info.constants`) that need no guard.
_SHIFT_OK = lambda v: v < 32  # noqa: E731
_DIVISOR_OK = lambda v: v != 0  # noqa: E731
_DIVISOR_OK_I32 = lambda v: v not in (0, 0xFFFFFFFF)  # noqa: E731 - nor -1 (MIN / -1)


class ValueRewrites:
    """The value-op methods of `legalize._Legalizer` (the module docstring); they build
    through its small builders (`const`, `bin`, `un`, `select`) and mark each rewrite with
    its `start` / `mark`."""

    def visit_binary(self, op, dst, src, kids) -> None:
        t = self.types[op.operands[0]]
        name = op.name
        if t not in INTEGER and name != "AbsDiff":
            return self.keep(op, dst)
        if name in ("Div", "Mod"):
            return self.divide(op, dst, t)
        if name in ("Shl", "Shr") and not self.proved(op, op.operands[1], _SHIFT_OK):
            self.start(op, dst)
            amount = self.amount(dst, op.operands[1])
            dst.op(op.kind, op.operands[0], amount, result=op.result)
            return self.mark()
        if name in ("RotateLeft", "RotateRight"):
            return self.rotate(op, dst, t)
        if name == "MulHigh":
            return self.mul_high(op, dst, t)
        if name == "AbsDiff":
            return self.abs_diff(op, dst, t)
        return self.keep(op, dst)

    def divide(self, op, dst, t: str) -> None:
        """x / 0 == x, x % 0 == 0, MIN / -1 == MIN, MIN % -1 == 0: divide by 1 instead."""
        a, b = op.operands
        signed_mod = op.name == "Mod" and t == "i32"
        ok = _DIVISOR_OK_I32 if t == "i32" else _DIVISOR_OK
        proved = self.proved(op, b, ok)
        if proved and not signed_mod:
            return self.keep(op, dst)
        self.start(op, dst)
        safe = b
        if not proved:
            bad = self.bin(dst, "Eq", b, self.const(dst, t, 0))
            if t == "i32":
                is_min = self.bin(dst, "Eq", a, self.const(dst, t, I32_MIN))
                is_neg1 = self.bin(dst, "Eq", b, self.const(dst, t, -1))
                bad = self.bin(dst, "Or", bad, self.bin(dst, "And", is_min, is_neg1))
            safe = self.select(dst, bad, self.const(dst, t, 1), b)
        if not signed_mod:
            dst.op(op.kind, a, safe, result=op.result)
        else:  # a - b * (a / b): OpSRem is undefined for negative operands on Vulkan
            q = self.bin(dst, "Div", a, safe)
            self.bin(dst, "Sub", a, self.bin(dst, "Mul", safe, q), result=op.result)
        self.mark()

    def proved(self, op, operand: int, ok) -> bool:
        """Whether `op` needs no guard for `operand`: a literal is judged by its value
        (never by a proof: naga evaluates a literal's `let` and refuses a shift by 32 or a
        division by 0 even on a path that cannot run, where the range analysis proves
        anything), any other operand by the range analysis (`Proofs.safe`)."""
        known = self.info.constants.get(operand)
        if known is not None:
            return ok(known)
        return op.index in self.safe

    def amount(self, dst, b: int) -> int:
        """A u32 shift amount mod 32 (a literal folded)."""
        known = self.info.constants.get(b)
        if known is not None:
            return b if known < 32 else self.const(dst, "u32", known & 31)
        return self.bin(dst, "BitAnd", b, self.const(dst, "u32", 31))

    def rotate(self, op, dst, t: str) -> None:
        """Rotation as two shifts of a u32; the back shift (32 - n) & 31 makes n == 0 x | x."""
        self.start(op, dst)
        x, b = op.operands
        if t == "i32":
            x = dst.bitcast("U32", x)
        known = self.info.constants.get(b)
        if known is not None:
            n = self.amount(dst, b)
            back = self.const(dst, "u32", (32 - (known & 31)) & 31)
        else:
            n = b if op.index in self.safe else self.amount(dst, b)
            thirty_two = self.const(dst, "u32", 32)
            back = self.bin(
                dst, "BitAnd", self.bin(dst, "Sub", thirty_two, n), self.const(dst, "u32", 31)
            )
        first, second = ("Shl", "Shr") if op.name == "RotateLeft" else ("Shr", "Shl")
        res = None if t == "i32" else op.result
        r = self.bin(
            dst, "BitOr", self.bin(dst, first, x, n), self.bin(dst, second, x, back), result=res
        )
        if t == "i32":
            dst.bitcast("I32", r, result=op.result)
        self.mark()

    def mul_high(self, op, dst, t: str) -> None:
        """The high word of the 64-bit product from 16-bit limbs; signed: the unsigned high
        word minus (a < 0 ? b : 0) minus (b < 0 ? a : 0), mod 2^32."""
        self.start(op, dst)
        a, b = op.operands
        au, bu = (dst.bitcast("U32", a), dst.bitcast("U32", b)) if t == "i32" else (a, b)
        mask, sixteen = self.const(dst, "u32", 0xFFFF), self.const(dst, "u32", 16)
        al, ah = self.bin(dst, "BitAnd", au, mask), self.bin(dst, "Shr", au, sixteen)
        bl, bh = self.bin(dst, "BitAnd", bu, mask), self.bin(dst, "Shr", bu, sixteen)
        ll, lh = self.bin(dst, "Mul", al, bl), self.bin(dst, "Mul", al, bh)
        hl, hh = self.bin(dst, "Mul", ah, bl), self.bin(dst, "Mul", ah, bh)
        low = self.bin(
            dst, "Add", self.bin(dst, "BitAnd", lh, mask), self.bin(dst, "BitAnd", hl, mask)
        )
        mid = self.bin(dst, "Add", self.bin(dst, "Shr", ll, sixteen), low)
        cross = self.bin(
            dst, "Add", self.bin(dst, "Shr", lh, sixteen), self.bin(dst, "Shr", hl, sixteen)
        )
        hi = self.bin(
            dst,
            "Add",
            self.bin(dst, "Add", hh, cross),
            self.bin(dst, "Shr", mid, sixteen),
            result=op.result if t == "u32" else None,
        )
        if t == "i32":
            zero_i, zero_u = self.const(dst, "i32", 0), self.const(dst, "u32", 0)
            fix_a = self.select(dst, self.bin(dst, "Lt", a, zero_i), bu, zero_u)
            fix_b = self.select(dst, self.bin(dst, "Lt", b, zero_i), au, zero_u)
            hi = self.bin(dst, "Sub", self.bin(dst, "Sub", hi, fix_a), fix_b)
            dst.bitcast("I32", hi, result=op.result)
        self.mark()

    def abs_diff(self, op, dst, t: str) -> None:
        """|a - b|: for integers the larger minus the smaller (wrapping), for floats abs(a - b)."""
        self.start(op, dst)
        a, b = op.operands
        if t in INTEGER:
            gt = self.bin(dst, "Gt", a, b)
            self.select(
                dst, gt, self.bin(dst, "Sub", a, b), self.bin(dst, "Sub", b, a), result=op.result
            )
        else:
            self.un(dst, "Abs", self.bin(dst, "Sub", a, b), result=op.result)
        self.mark()

    def visit_unary(self, op, dst, src, kids) -> None:
        t = self.types[op.operands[0]]
        name, a = op.name, op.operands[0]
        if name in ("Clz", "Ctz") and op.index not in self.safe:
            self.start(op, dst)
            is0 = self.bin(dst, "Eq", a, self.const(dst, t, 0))
            count = dst.op(op.kind, a)
            self.select(dst, is0, self.const(dst, t, 32), count, result=op.result)
        elif name == "Abs" and TYPES[t].element == "i32":
            self.start(op, dst)
            self.per_component(dst, t, t, a, op.result, self.abs_i32)
        elif name == "Sign" and t == "u32":
            self.start(op, dst)
            nz = self.bin(dst, "Ne", a, self.const(dst, t, 0))
            self.select(dst, nz, self.const(dst, t, 1), self.const(dst, t, 0), result=op.result)
        else:
            return self.keep(op, dst)
        self.mark()

    def abs_i32(self, dst, a: int, result=None) -> int:
        """|x| with |i32::MIN| == i32::MIN (0 - x wraps)."""
        zero = self.const(dst, "i32", 0)
        neg = self.bin(dst, "Lt", a, zero)
        return self.select(dst, neg, self.bin(dst, "Sub", zero, a), a, result=result)

    def visit_cast(self, op, dst, src, kids) -> None:
        at, target = self.types[op.operands[0]], self.types[op.result]
        if (TYPES[at].element, TYPES[target].element) not in _FLOAT_TO_INT:
            return self.keep(op, dst)
        self.start(op, dst)
        source, element = TYPES[at].element, TYPES[target].element

        def convert(d, x, result=None):
            return self.float_to_int(d, x, source, element, result)

        self.per_component(dst, at, target, op.operands[0], op.result, convert)
        self.mark()

    def float_to_int(self, dst, a: int, source: str, element: str, result=None) -> int:
        """f32 or f16 `a` -> i32 / u32: truncated toward zero, saturated, NaN -> 0."""
        if source == "f16":
            a = dst.cast(datatype("f32"), a)
        lo, hi, top = (
            (-2147483648.0, F32_I32_HI, 0x7FFFFFFF)
            if element == "i32"
            else (0.0, F32_U32_HI, 0xFFFFFFFF)
        )
        nan = self.un(dst, "IsNan", a)
        clean = self.select(dst, nan, self.const(dst, "f32", 0.0), a)
        hi_id = self.const(dst, "f32", hi)
        clamped = self.bin(
            dst, "Max", self.bin(dst, "Min", clean, hi_id), self.const(dst, "f32", lo)
        )
        value = dst.cast(datatype(element), clamped)
        over = self.bin(dst, "Gt", clean, hi_id)
        return self.select(dst, over, self.const(dst, element, top), value, result=result)

    def per_component(self, dst, at: str, target: str, a: int, result: int, scalar) -> None:
        """`scalar(dst, x, result=)` on scalar `a`, or on each component of vector `a`
        (extracted; the vector `result` constructed from the results)."""
        if TYPES[at].count == 1:
            scalar(dst, a, result=result)
            return
        parts = [scalar(dst, dst.extract(a, k)) for k in range(TYPES[at].count)]
        dst.vec(datatype(target), *parts, result=result)
