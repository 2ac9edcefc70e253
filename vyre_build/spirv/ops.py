"""Value ops of the SPIR-V emitter: binary/unary arithmetic, select, fma and casts.

Vector operands are handed to the `vectors.VectorOps` forms (the writer mixes in both).

Table-driven where an op maps to one instruction, explicit where the pinned semantics of
docs/descriptor-conventions.md need more (integer div/mod by zero, i32::MIN / -1, shift
amounts & 31, rotations, clz/ctz of 0, saturating float->int casts with NaN -> 0).
`ValueOps` is a mixin of `codegen.FunctionWriter`; every method returns a SPIR-V id and
never emits an instruction whose result is undefined for any input.
"""

from __future__ import annotations

# Operand type -> class letter used as the second key of the tables below.
CLASS = {"U32": "U", "I32": "I", "F32": "F", "Bool": "B"}
INTS = ("U", "I")

# (BinOp, class) -> one core instruction.
BINARY: dict[tuple[str, str], str] = {}
for _op, _int, _float in (
    ("Add", "OpIAdd", "OpFAdd"),
    ("WrappingAdd", "OpIAdd", None),
    ("Sub", "OpISub", "OpFSub"),
    ("WrappingSub", "OpISub", None),
    ("Mul", "OpIMul", "OpFMul"),
    ("BitAnd", "OpBitwiseAnd", None),
    ("BitOr", "OpBitwiseOr", None),
    ("BitXor", "OpBitwiseXor", None),
    ("Eq", "OpIEqual", "OpFOrdEqual"),
    ("Ne", "OpINotEqual", "OpFUnordNotEqual"),
    ("Div", None, "OpFDiv"),
    ("Mod", None, "OpFRem"),
):
    for _c in INTS:
        if _int:
            BINARY[(_op, _c)] = _int
    if _float:
        BINARY[(_op, "F")] = _float
for _op, _u, _s, _f in (
    ("Lt", "OpULessThan", "OpSLessThan", "OpFOrdLessThan"),
    ("Gt", "OpUGreaterThan", "OpSGreaterThan", "OpFOrdGreaterThan"),
    ("Le", "OpULessThanEqual", "OpSLessThanEqual", "OpFOrdLessThanEqual"),
    ("Ge", "OpUGreaterThanEqual", "OpSGreaterThanEqual", "OpFOrdGreaterThanEqual"),
):
    BINARY[(_op, "U")], BINARY[(_op, "I")], BINARY[(_op, "F")] = _u, _s, _f
BINARY.update(
    {
        ("Eq", "B"): "OpLogicalEqual",
        ("Ne", "B"): "OpLogicalNotEqual",
        ("And", "B"): "OpLogicalAnd",
        ("Or", "B"): "OpLogicalOr",
        ("BitAnd", "B"): "OpLogicalAnd",
        ("BitOr", "B"): "OpLogicalOr",
        ("BitXor", "B"): "OpLogicalNotEqual",
    }
)

# (BinOp, class) -> GLSL.std.450 instruction.
BINARY_GLSL = {
    ("Min", "F"): "FMin",
    ("Min", "U"): "UMin",
    ("Min", "I"): "SMin",
    ("Max", "F"): "FMax",
    ("Max", "U"): "UMax",
    ("Max", "I"): "SMax",
}

BOOL_RESULT = frozenset({"Eq", "Ne", "Lt", "Gt", "Le", "Ge", "And", "Or"})

UNARY: dict[tuple[str, str], str] = {
    ("Negate", "I"): "OpSNegate",
    ("Negate", "F"): "OpFNegate",
    ("BitNot", "U"): "OpNot",
    ("BitNot", "I"): "OpNot",
    ("BitNot", "B"): "OpLogicalNot",
    ("LogicalNot", "B"): "OpLogicalNot",
    ("Popcount", "U"): "OpBitCount",
    ("Popcount", "I"): "OpBitCount",
    ("ReverseBits", "U"): "OpBitReverse",
    ("ReverseBits", "I"): "OpBitReverse",
    ("IsNan", "F"): "OpIsNan",
    ("IsInf", "F"): "OpIsInf",
}
UNARY_GLSL: dict[tuple[str, str], str] = {
    (name, "F"): ext
    for name, ext in (
        ("Sqrt", "Sqrt"),
        ("Exp", "Exp"),
        ("Log", "Log"),
        ("Log2", "Log2"),
        ("Exp2", "Exp2"),
        ("Sin", "Sin"),
        ("Cos", "Cos"),
        ("Tan", "Tan"),
        ("Tanh", "Tanh"),
        ("Asin", "Asin"),
        ("Acos", "Acos"),
        ("Atan", "Atan"),
        ("Sinh", "Sinh"),
        ("Cosh", "Cosh"),
        ("InverseSqrt", "InverseSqrt"),
        ("Floor", "Floor"),
        ("Ceil", "Ceil"),
        ("Round", "RoundEven"),  # WGSL round() rounds half to even
        ("Trunc", "Trunc"),
        ("Sign", "FSign"),
        ("Abs", "FAbs"),
    )
}
UNARY_GLSL[("Sign", "I")] = "SSign"
UNARY_BOOL = frozenset({"IsNan", "IsInf", "IsFinite"})

I32_MIN = 0x80000000
# Largest f32 values that still convert in range: 2^31 - 128 and 2^32 - 256.
F32_I32_HI = 2147483520.0
F32_U32_HI = 4294967040.0


class ValueOps:
    """Arithmetic on (id, type) values; mixed into the function writer."""

    # --- helpers supplied by the writer: op(), tid(), const(), glsl(), fail() -------

    def zero(self, ty: str) -> int:
        return self.const(ty, 0)

    def binary(self, name: str, a: int, at: str, b: int, bt: str, kop) -> tuple[int, str]:
        c = CLASS.get(at)
        if c is None:
            return self.vector_binary(name, a, at, b, bt, kop)
        res_ty = "Bool" if name in BOOL_RESULT else at
        single = BINARY.get((name, c))
        if single is not None:
            if bt != at:
                self.fail(kop, f"operand types differ ({at} and {bt})")
            return self.op(single, res_ty, a, b), res_ty
        ext = BINARY_GLSL.get((name, c))
        if ext is not None and bt == at:
            return self.glsl(ext, at, a, b), at
        if c in INTS:
            if name in ("Shl", "Shr", "RotateLeft", "RotateRight") and bt == "U32":
                return self._shift(name, a, at, b), at
            if bt == at and name in ("Div", "Mod"):
                return self._div_mod(name, a, at, b), at
            if bt == at and name == "MulHigh":
                return self._mul_high(a, at, b), at
            if bt == at and name == "AbsDiff":
                gt = self.op(BINARY[("Gt", c)], "Bool", a, b)
                d1 = self.op("OpISub", at, a, b)
                d2 = self.op("OpISub", at, b, a)
                return self.op("OpSelect", at, gt, d1, d2), at
        if c == "F" and bt == at and name == "AbsDiff":
            return self.glsl("FAbs", at, self.op("OpFSub", at, a, b)), at
        self.fail(kop, f"BinOp {name} is not defined for ({at}, {bt})")

    def _shift(self, name: str, a: int, at: str, b: int) -> int:
        known = self.const_bits.get(b)
        n = (
            self.const("U32", known & 31)
            if known is not None
            else self.op("OpBitwiseAnd", "U32", b, self.const("U32", 31))
        )
        if name == "Shl":
            return self.op("OpShiftLeftLogical", at, a, n)
        if name == "Shr" and at == "I32":
            return self.op("OpShiftRightArithmetic", at, a, n)
        # Logical shifts and rotations run on U32: translators such as naga read the
        # operand's signedness and would turn a logical shift of an I32 into an arithmetic one.
        x = self.op("OpBitcast", "U32", a) if at == "I32" else a
        if name == "Shr":
            r = self.op("OpShiftRightLogical", "U32", x, n)
        else:
            # The complementary shift is (32 - n) & 31, so n == 0 gives x | x == x.
            back = self.op(
                "OpBitwiseAnd",
                "U32",
                self.op("OpISub", "U32", self.const("U32", 32), n),
                self.const("U32", 31),
            )
            first, second = (
                ("OpShiftLeftLogical", "OpShiftRightLogical")
                if name == "RotateLeft"
                else ("OpShiftRightLogical", "OpShiftLeftLogical")
            )
            r = self.op(
                "OpBitwiseOr", "U32", self.op(first, "U32", x, n), self.op(second, "U32", x, back)
            )
        return self.op("OpBitcast", "I32", r) if at == "I32" else r

    def _mul_high(self, a: int, at: str, b: int) -> int:
        """High 32 bits of the 64-bit product from 16-bit limbs (naga's SPIR-V reader lacks OpUMulExtended)."""
        if at == "I32":
            au, bu = self.op("OpBitcast", "U32", a), self.op("OpBitcast", "U32", b)
        else:
            au, bu = a, b
        mask, sixteen = self.const("U32", 0xFFFF), self.const("U32", 16)
        al, ah = (
            self.op("OpBitwiseAnd", "U32", au, mask),
            self.op("OpShiftRightLogical", "U32", au, sixteen),
        )
        bl, bh = (
            self.op("OpBitwiseAnd", "U32", bu, mask),
            self.op("OpShiftRightLogical", "U32", bu, sixteen),
        )
        ll, lh = self.op("OpIMul", "U32", al, bl), self.op("OpIMul", "U32", al, bh)
        hl, hh = self.op("OpIMul", "U32", ah, bl), self.op("OpIMul", "U32", ah, bh)
        mid = self.op(
            "OpIAdd",
            "U32",
            self.op("OpShiftRightLogical", "U32", ll, sixteen),
            self.op(
                "OpIAdd",
                "U32",
                self.op("OpBitwiseAnd", "U32", lh, mask),
                self.op("OpBitwiseAnd", "U32", hl, mask),
            ),
        )
        hi = self.op(
            "OpIAdd",
            "U32",
            hh,
            self.op(
                "OpIAdd",
                "U32",
                self.op("OpShiftRightLogical", "U32", lh, sixteen),
                self.op("OpShiftRightLogical", "U32", hl, sixteen),
            ),
        )
        hi = self.op("OpIAdd", "U32", hi, self.op("OpShiftRightLogical", "U32", mid, sixteen))
        if at == "U32":
            return hi
        # Signed high word = unsigned high word - (a < 0 ? b : 0) - (b < 0 ? a : 0), mod 2^32.
        zero = self.zero("U32")
        fix_a = self.op(
            "OpSelect", "U32", self.op("OpSLessThan", "Bool", a, self.zero("I32")), bu, zero
        )
        fix_b = self.op(
            "OpSelect", "U32", self.op("OpSLessThan", "Bool", b, self.zero("I32")), au, zero
        )
        hi = self.op("OpISub", "U32", self.op("OpISub", "U32", hi, fix_a), fix_b)
        return self.op("OpBitcast", "I32", hi)

    def _div_mod(self, name: str, a: int, at: str, b: int) -> int:
        # Replace a zero (or i32::MIN / -1) divisor by 1: x / 1 == x and x % 1 == 0 are the pinned results.
        known = self.const_bits.get(b)
        if known is not None and known != 0 and not (at == "I32" and known == 0xFFFFFFFF):
            safe = b  # a literal divisor that needs no guard
        else:
            safe = self._safe_divisor(a, at, b)
        if at == "U32":
            return self.op("OpUDiv" if name == "Div" else "OpUMod", at, a, safe)
        # SRem takes the dividend's sign: truncated modulo, as WGSL's %.
        return self.op("OpSDiv" if name == "Div" else "OpSRem", at, a, safe)

    def _safe_divisor(self, a: int, at: str, b: int) -> int:
        zero, one = self.zero(at), self.const(at, 1)
        bad = self.op("OpIEqual", "Bool", b, zero)
        if at == "I32":
            is_min = self.op("OpIEqual", "Bool", a, self.const("I32", I32_MIN))
            is_neg1 = self.op("OpIEqual", "Bool", b, self.const("I32", 0xFFFFFFFF))
            bad = self.op(
                "OpLogicalOr", "Bool", bad, self.op("OpLogicalAnd", "Bool", is_min, is_neg1)
            )
        return self.op("OpSelect", at, bad, one, b)

    def unary(self, name: str, a: int, at: str, kop) -> tuple[int, str]:
        c = CLASS.get(at)
        if c is None:
            return self.vector_unary(name, a, at, kop)
        res_ty = "Bool" if name in UNARY_BOOL else at
        single = UNARY.get((name, c))
        if single is not None:
            return self.op(single, res_ty, a), res_ty
        ext = UNARY_GLSL.get((name, c))
        if ext is not None:
            return self.glsl(ext, at, a), at
        if c in INTS:
            if name == "Negate":  # 0 - x: translators reject a signed negate of a U32
                return self.op("OpISub", at, self.zero(at), a), at
            if (
                name == "Clz"
            ):  # FindUMsb(0) == -1, so 31 - msb gives 32 for 0; on U32 bits (see _shift)
                x = self.op("OpBitcast", "U32", a) if at == "I32" else a
                r = self.op("OpISub", "U32", self.const("U32", 31), self.glsl("FindUMsb", "U32", x))
                return (self.op("OpBitcast", "I32", r) if at == "I32" else r), at
            if name == "Ctz":
                lsb = self.glsl("FindILsb", at, a)
                is0 = self.op("OpIEqual", "Bool", a, self.zero(at))
                return self.op("OpSelect", at, is0, self.const(at, 32), lsb), at
            if name == "Abs":
                if at == "U32":
                    return a, at
                neg = self.op(
                    "OpSLessThan", "Bool", a, self.zero(at)
                )  # wraps: |i32::MIN| == i32::MIN
                return self.op("OpSelect", at, neg, self.op("OpSNegate", at, a), a), at
            if name == "Sign" and at == "U32":
                nz = self.op("OpINotEqual", "Bool", a, self.zero(at))
                return self.op("OpSelect", at, nz, self.const(at, 1), self.zero(at)), at
        if c == "F":
            if name == "IsFinite":
                bad = self.op(
                    "OpLogicalOr",
                    "Bool",
                    self.op("OpIsNan", "Bool", a),
                    self.op("OpIsInf", "Bool", a),
                )
                return self.op("OpLogicalNot", "Bool", bad), "Bool"
            if name == "Reciprocal":
                return self.op("OpFDiv", at, self.const("F32", 1.0), a), at
        self.fail(kop, f"UnOp {name} is not defined for {at}")

    def cast(self, a: int, at: str, target: str, kop) -> int:
        if target == at:
            return a
        if target not in CLASS or at not in CLASS:
            return self.vector_cast(a, at, target, kop)
        if at in ("U32", "I32") and target in ("U32", "I32"):
            return self.op("OpBitcast", target, a)
        if at == "Bool":
            return self.op("OpSelect", target, a, self.const(target, 1), self.zero(target))
        if target == "Bool":
            if (
                at == "F32"
            ):  # !(x == 0): NaN gives true, and survives translators that drop "unordered"
                return self.op(
                    "OpLogicalNot", "Bool", self.op("OpFOrdEqual", "Bool", a, self.zero(at))
                )
            return self.op("OpINotEqual", "Bool", a, self.zero(at))
        if target == "F32":
            return self.op("OpConvertUToF" if at == "U32" else "OpConvertSToF", "F32", a)
        return self.float_to_int(a, at, target, target)

    def float_to_int(self, a: int, at: str, target: str, element: str) -> int:
        """F32 (or F32 vector) `a` -> `target` with integer components `element` (I32 or U32).

        NaN -> 0, clamp into range (no undefined conversion), then saturate the top.
        """
        cond = self.bool_type(at)
        nan = self.op("OpIsNan", cond, a)
        clean = self.op("OpSelect", at, nan, self.zero(at), a)
        if element == "I32":
            lo, hi, top = -2147483648.0, F32_I32_HI, 0x7FFFFFFF
            conv = "OpConvertFToS"
        else:
            lo, hi, top = 0.0, F32_U32_HI, 0xFFFFFFFF
            conv = "OpConvertFToU"
        clamped = self.glsl("FClamp", at, clean, self.const(at, lo), self.const(at, hi))
        value = self.op(conv, target, clamped)
        over = self.op("OpFOrdGreaterThan", cond, clean, self.const(at, hi))
        return self.op("OpSelect", target, over, self.const(target, top), value)
