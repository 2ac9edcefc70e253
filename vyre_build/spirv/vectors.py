"""Vector values of the SPIR-V emitter (a mixin of `codegen.FunctionWriter`).

docs/descriptor-conventions.md, "Vectors": `DataType::Vec{element, count}` with element
U32, I32 or F32 and count 2 or 4 is an OpTypeVector. Inside the emitter a value type is
a string; a vector's is `Vec<count><element>` ("Vec4F32"), and `Vec<count>Bool` is the
emitter's own boolean vector (the condition of a componentwise OpSelect, which SPIR-V 1.3
needs to have as many components as the selected values; descriptors never hold one).

Componentwise ops map to the same core / GLSL.std.450 instructions as their scalar forms
(those accept vector operands); everything the conventions leave undefined on vectors
(comparisons, shifts, Mod, integer Div, bit counting, ...) is an EmitError naming the op
and its operand types. `vyre.vec` is OpCompositeConstruct, `vyre.extract`
OpCompositeExtract.
"""

from __future__ import annotations

from vyre_build.descriptor import DescriptorError, KernelOp, Variant, decode_datatype
from vyre_build.spirv.ops import BINARY, BINARY_GLSL, CLASS, INTS, UNARY, UNARY_GLSL

VECTOR_ELEMENTS = ("U32", "I32", "F32")
VECTOR_COUNTS = (2, 4)
SCALAR_TYPES = ("U32", "I32", "F32", "Bool")
# Emitter type name -> (element type, component count); Bool vectors are internal only.
VECTOR_TYPES: dict[str, tuple[str, int]] = {
    f"Vec{n}{e}": (e, n) for e in (*VECTOR_ELEMENTS, "Bool") for n in VECTOR_COUNTS
}

# Componentwise BinOps and UnOps the conventions define on vectors (per element type the
# scalar tables of `ops` decide; e.g. Div exists there for F32 only, BitAnd for ints only).
VECTOR_BINOPS = frozenset({"Add", "Sub", "Mul", "Div", "Min", "Max", "BitAnd", "BitOr", "BitXor"})
VECTOR_F32_MATH = frozenset(
    {
        "Sqrt",
        "Exp",
        "Exp2",
        "Log",
        "Log2",
        "Sin",
        "Cos",
        "Tan",
        "Tanh",
        "InverseSqrt",
        "Floor",
        "Ceil",
        "Round",
        "Trunc",
        "Sign",
    }
)


def vector_name(element: str, count: int) -> str:
    return f"Vec{count}{element}"


def element_of(ty: str) -> str:
    """The component type of a vector type name; a scalar type name is its own element."""
    return VECTOR_TYPES[ty][0] if ty in VECTOR_TYPES else ty


def count_of(ty: str) -> int:
    """Components of a vector type name; 1 for a scalar."""
    return VECTOR_TYPES[ty][1] if ty in VECTOR_TYPES else 1


def bool_like(ty: str) -> str:
    """The boolean type with the shape of `ty` (Bool, or the Bool vector of its count)."""
    return vector_name("Bool", VECTOR_TYPES[ty][1]) if ty in VECTOR_TYPES else "Bool"


def datatype_name(dt: Variant) -> str | None:
    """The emitter's type name of a descriptor DataType, or None if it has none.

    Scalars U32 I32 F32 Bool and vectors Vec{U32|I32|F32, 2|4}; anything else is None.
    """
    if not dt.args:
        return dt.name if dt.name in SCALAR_TYPES else None
    if dt.name == "Vec" and len(dt.args) == 2:
        element, count = dt.args
        if (
            isinstance(element, Variant)
            and not element.args
            and element.name in VECTOR_ELEMENTS
            and count in VECTOR_COUNTS
        ):
            return vector_name(element.name, count)
    return None


class VectorOps:
    """Vector types, constants, splats and the componentwise op forms."""

    # --- types and constants --------------------------------------------------------

    @staticmethod
    def bool_type(ty: str) -> str:
        return bool_like(ty)

    def vector_type_id(self, ty: str) -> int:
        element, count = VECTOR_TYPES[ty]
        return self.m.type_vector(self.tid(element), count)

    def vector_const(self, ty: str, value) -> int:
        """A constant vector with every component `value` (OpConstantComposite, deduplicated)."""
        element, count = VECTOR_TYPES[ty]
        return self.m.const_composite(self.tid(ty), (self.const(element, value),) * count)

    def splat(self, ty: str, scalar: int) -> int:
        """A vector of type `ty` with every component the (runtime) scalar `scalar`."""
        return self.op("OpCompositeConstruct", ty, *(scalar,) * VECTOR_TYPES[ty][1])

    def select_value(self, ty: str, cond: int, if_true: int, if_false: int) -> int:
        """OpSelect on a scalar Bool `cond`; a vector `ty` gets the condition splatted first."""
        if ty in VECTOR_TYPES:
            cond = self.splat(bool_like(ty), cond)
        return self.op("OpSelect", ty, cond, if_true, if_false)

    # --- componentwise arithmetic ---------------------------------------------------------

    def vector_binary(self, name: str, a: int, at: str, b: int, bt: str, kop) -> tuple[int, str]:
        if bt != at or at not in VECTOR_TYPES or name not in VECTOR_BINOPS:
            self.fail(kop, f"BinOp {name} is not defined for ({at}, {bt})")
        c = CLASS[element_of(at)]
        single = BINARY.get((name, c))
        if single is not None:
            return self.op(single, at, a, b), at
        ext = BINARY_GLSL.get((name, c))
        if ext is not None:
            return self.glsl(ext, at, a, b), at
        self.fail(kop, f"BinOp {name} is not defined for ({at}, {bt})")

    def vector_unary(self, name: str, a: int, at: str, kop) -> tuple[int, str]:
        element = element_of(at)
        c = CLASS.get(element)
        if at in VECTOR_TYPES and c is not None:
            if name in VECTOR_F32_MATH and c == "F":
                return self.glsl(UNARY_GLSL[(name, c)], at, a), at
            if name == "Negate":
                if c == "U":  # 0 - x: translators reject a signed negate of unsigned values
                    return self.op("OpISub", at, self.zero(at), a), at
                return self.op(UNARY[(name, c)], at, a), at
            if name == "BitNot" and c in INTS:
                return self.op(UNARY[(name, c)], at, a), at
            if name == "Abs" and c == "F":
                return self.glsl("FAbs", at, a), at
            if name == "Abs" and c == "I":  # select, not SAbs: |i32::MIN| == i32::MIN per component
                neg = self.op("OpSLessThan", bool_like(at), a, self.zero(at))
                return self.op("OpSelect", at, neg, self.op("OpSNegate", at, a), a), at
        self.fail(kop, f"UnOp {name} is not defined for {at}")

    # --- construct / extract (OpaqueExpr vyre.vec, vyre.extract) --------------------------

    def vector_construct(self, kop: KernelOp, payload: bytes) -> tuple[int, str]:
        try:
            dt = decode_datatype(payload)
        except DescriptorError as exc:
            self.fail(kop, f"vyre.vec payload is not a DataType: {exc}")
        ty = datatype_name(dt)
        if ty not in VECTOR_TYPES or element_of(ty) == "Bool":
            self.fail(kop, f"vyre.vec payload {dt!r} is not a vector of 2 or 4 U32, I32 or F32")
        element, count = VECTOR_TYPES[ty]
        parts = [self.value(x, kop) for x in self.operands(kop, count)]
        if any(t != element for _, t in parts):
            self.fail(kop, f"vyre.vec to {ty} needs {count} {element} operands")
        return self.op("OpCompositeConstruct", ty, *(i for i, _ in parts)), ty

    def vector_extract(self, kop: KernelOp, payload: bytes) -> tuple[int, str]:
        (x,) = self.operands(kop, 1)
        xi, xt = self.value(x, kop)
        if xt not in VECTOR_TYPES:
            self.fail(kop, f"vyre.extract needs a vector operand, not {xt}")
        element, count = VECTOR_TYPES[xt]
        if len(payload) != 1 or payload[0] >= count:
            self.fail(kop, f"vyre.extract payload {payload.hex()!r} is not one byte below {count}")
        return self.op("OpCompositeExtract", element, xi, payload[0]), element

    # --- casts ------------------------------------------------------------------------------

    def vector_cast(self, a: int, at: str, target: str, kop) -> int:
        """Cast{Vec{e2, n}} of a Vec{e1, n}: the scalar cast rules per component."""
        if target not in VECTOR_TYPES and target not in CLASS:
            self.fail(kop, f"cast target {target} is not a supported type")
        ae, n = VECTOR_TYPES.get(at, (at, 1))
        te, tn = VECTOR_TYPES.get(target, (target, 1))
        if at not in VECTOR_TYPES or target not in VECTOR_TYPES or n != tn or "Bool" in (ae, te):
            self.fail(kop, f"Cast from {at} to {target} is not defined")
        if ae == te:
            return a
        if CLASS[ae] in INTS and CLASS[te] in INTS:
            return self.op("OpBitcast", target, a)
        if te == "F32":
            return self.op("OpConvertUToF" if ae == "U32" else "OpConvertSToF", target, a)
        return self.float_to_int(a, at, target, te)
