"""SPIR-V rules for the value ops: one rule per row of the legal form (`legalize.LEGAL_ROWS`).

A rule is `rule(w, ids, types, result) -> id`: it writes the instructions for one op
through the function writer `w` (`op`, `glsl`, `const`, `zero`, `select_value`) and
returns the result's SPIR-V id. The emitter writes the legal form (descriptor.legalize),
where the pinned semantics of docs/descriptor-conventions.md (division by zero, i32::MIN
/ -1, shift amounts & 31, clz/ctz of 0, saturating float->int casts) are ops of the
descriptor: each rule is one core or GLSL.std.450 instruction (for scalars and vectors
alike), or the few a translator needs to read it right (float `!=`, clz as 31 - msb), and
the rows legalize expands (`legalize.EXPANDED`) have none. No rule emits an instruction
whose result is undefined for an operand the legal form gives it.
"""

from __future__ import annotations

from vyre_build.descriptor.legalize import LEGAL_ROWS
from vyre_build.descriptor.types import TYPES, VECTORS, vector_of
from vyre_build.emit.spirv import grammar as g

__all__ = ["RULES", "ATOMICS", "RULE_ROWS", "bool_like"]

# (BinOp, kind) -> one core instruction.
_KINDS = ("uint", "sint", "float", "bool")
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
    ("Ne", "OpINotEqual", None),  # float: !(a == b) (naga's reader orders OpFUnordNotEqual)
    ("Div", None, "OpFDiv"),
    ("Mod", None, "OpFRem"),
):  # integer Div / Mod: below, by signedness (legal form: the divisor is safe)
    if _int:
        BINARY[(_op, "uint")] = BINARY[(_op, "sint")] = _int
    if _float:
        BINARY[(_op, "float")] = _float
for _op, _u, _s, _f in (
    ("Lt", "OpULessThan", "OpSLessThan", "OpFOrdLessThan"),
    ("Gt", "OpUGreaterThan", "OpSGreaterThan", "OpFOrdGreaterThan"),
    ("Le", "OpULessThanEqual", "OpSLessThanEqual", "OpFOrdLessThanEqual"),
    ("Ge", "OpUGreaterThanEqual", "OpSGreaterThanEqual", "OpFOrdGreaterThanEqual"),
):
    BINARY[(_op, "uint")], BINARY[(_op, "sint")], BINARY[(_op, "float")] = _u, _s, _f
BINARY.update(
    {
        ("Div", "uint"): "OpUDiv",
        ("Mod", "uint"): "OpUMod",
        ("Div", "sint"): "OpSDiv",  # i32 Mod: a - b * (a / b) in the legal form
        ("Eq", "bool"): "OpLogicalEqual",
        ("Ne", "bool"): "OpLogicalNotEqual",
        ("And", "bool"): "OpLogicalAnd",
        ("Or", "bool"): "OpLogicalOr",
        ("BitAnd", "bool"): "OpLogicalAnd",
        ("BitOr", "bool"): "OpLogicalOr",
        ("BitXor", "bool"): "OpLogicalNotEqual",
    }
)
# (BinOp, kind) -> GLSL.std.450 instruction.
BINARY_GLSL = {
    ("Min", "float"): "FMin",
    ("Min", "uint"): "UMin",
    ("Min", "sint"): "SMin",
    ("Max", "float"): "FMax",
    ("Max", "uint"): "UMax",
    ("Max", "sint"): "SMax",
}
UNARY: dict[tuple[str, str], str] = {
    ("Negate", "sint"): "OpSNegate",
    ("Negate", "float"): "OpFNegate",
    ("BitNot", "uint"): "OpNot",
    ("BitNot", "sint"): "OpNot",
    ("LogicalNot", "bool"): "OpLogicalNot",
    ("BitNot", "bool"): "OpLogicalNot",
    ("Popcount", "uint"): "OpBitCount",
    ("Popcount", "sint"): "OpBitCount",
    ("ReverseBits", "uint"): "OpBitReverse",
    ("ReverseBits", "sint"): "OpBitReverse",
    ("IsNan", "float"): "OpIsNan",
    ("IsInf", "float"): "OpIsInf",
}
UNARY_GLSL: dict[tuple[str, str], str] = {
    (name, "float"): ext
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
UNARY_GLSL[("Sign", "sint")] = "SSign"


def bool_like(ty: str) -> str:
    """The boolean type with the shape of `ty`: bool, or the writer's own bool vector
    ("vec4b": the condition of a componentwise OpSelect; descriptors never hold one)."""
    n = TYPES[ty].count
    return "bool" if n == 1 else f"vec{n}b"


def _kind(ty: str) -> str:
    return TYPES[ty].kind


# --- the pinned-semantics forms -------------------------------------------------------


def _shift(w, name: str, a: int, at: str, b: int) -> int:
    """One shift of the legal form (the amount is below 32: descriptor.legalize)."""
    if name == "Shl":
        return w.op("OpShiftLeftLogical", at, a, b)
    if at == "i32":
        return w.op("OpShiftRightArithmetic", at, a, b)
    return w.op("OpShiftRightLogical", at, a, b)


def _widen(ty: str, element: str) -> str:
    """The type of `ty`'s shape with components `element` (vec4h, f32 -> vec4f)."""
    n = TYPES[ty].count
    return element if n == 1 else vector_of(element, n)


def _cast(w, a: int, at: str, target: str) -> int:
    if target == at:
        return a
    ae, te = TYPES[at].element, TYPES[target].element
    if ae == te:
        return a
    # f16 converts through f32 (which holds every f16 exactly), as the WGSL rules do; bf16
    # converts to and from f32 only (the op table's rows; f32 -> bf16 rounds to nearest even).
    if {ae, te} in ({"f16", "f32"}, {"bf16", "f32"}):
        return w.op("OpFConvert", target, a)
    if ae == "f16":  # to bool (to integers: through f32 in the legal form)
        return _cast(w, w.op("OpFConvert", _widen(at, "f32"), a), _widen(at, "f32"), target)
    if te == "f16" and ae != "bool":
        wide = _widen(target, "f32")
        return w.op("OpFConvert", target, _cast(w, a, at, wide))
    if _kind(ae) in ("uint", "sint") and _kind(te) in ("uint", "sint"):
        return w.op("OpBitcast", target, a)
    if ae == "bool":
        return w.op("OpSelect", target, a, w.const(target, 1), w.zero(target))
    if te == "bool":
        if ae in (
            "f32",
            "f16",
        ):  # !(x == 0): NaN gives true, and survives translators that drop "unordered"
            return w.op("OpLogicalNot", "bool", w.op("OpFOrdEqual", "bool", a, w.zero(at)))
        return w.op("OpINotEqual", "bool", a, w.zero(at))
    if te == "f32":
        return w.op("OpConvertUToF" if ae == "u32" else "OpConvertSToF", target, a)
    # f32 -> i32 / u32: a number the legal form clamped into range (descriptor.legalize)
    return w.op("OpConvertFToS" if te == "i32" else "OpConvertFToU", target, a)


# --- subgroups (GroupNonUniform*, scope Subgroup) -------------------------------------------
_SUBGROUP_SCAN = {
    "add": "Reduce",
    "inclusive_add": "InclusiveScan",
    "exclusive_add": "ExclusiveScan",
}
_SUBGROUP_OP = {
    ("add", "float"): "OpGroupNonUniformFAdd",
    ("add", "uint"): "OpGroupNonUniformIAdd",
    ("add", "sint"): "OpGroupNonUniformIAdd",
    ("min", "float"): "OpGroupNonUniformFMin",
    ("min", "uint"): "OpGroupNonUniformUMin",
    ("min", "sint"): "OpGroupNonUniformSMin",
    ("max", "float"): "OpGroupNonUniformFMax",
    ("max", "uint"): "OpGroupNonUniformUMax",
    ("max", "sint"): "OpGroupNonUniformSMax",
    ("and", "uint"): "OpGroupNonUniformBitwiseAnd",
    ("or", "uint"): "OpGroupNonUniformBitwiseOr",
    ("xor", "uint"): "OpGroupNonUniformBitwiseXor",
}
for (_n, _k), _ins in list(_SUBGROUP_OP.items()):
    if _k == "uint" and _n in ("and", "or", "xor"):
        _SUBGROUP_OP[(_n, "sint")] = _ins
_SUBGROUP_LANE = {
    "broadcast": "OpGroupNonUniformBroadcast",  # the lane is a literal: a constant id
    "shuffle": "OpGroupNonUniformShuffle",
    "shuffle_xor": "OpGroupNonUniformShuffleXor",
    "shuffle_up": "OpGroupNonUniformShuffleUp",
    "shuffle_down": "OpGroupNonUniformShuffleDown",
}
# The capability each subgroup feature of descriptor.ops.SUBGROUP_FEATURE needs.
SUBGROUP_CAPABILITY = {
    "subgroup_basic": "GroupNonUniform",
    "subgroup_vote": "GroupNonUniformVote",
    "subgroup_arithmetic": "GroupNonUniformArithmetic",
    "subgroup_ballot": "GroupNonUniformBallot",
    "subgroup_shuffle": "GroupNonUniformShuffle",
    "subgroup_shuffle_relative": "GroupNonUniformShuffleRelative",
}


def _subgroup_rule(name: str, types: tuple[str, ...]):
    scope = lambda w: w.const("u32", g.SCOPE["Subgroup"])  # noqa: E731
    if name in ("add", "inclusive_add", "exclusive_add", "min", "max", "and", "or", "xor"):
        ins = _SUBGROUP_OP[("add" if "add" in name else name, _kind(types[0]))]
        group = g.GROUPOPERATION[_SUBGROUP_SCAN.get(name, "Reduce")]
        return lambda w, ids, types, res: w.op(ins, res, scope(w), group, ids[0])
    if name in ("all", "any", "ballot"):
        ins = {"all": "OpGroupNonUniformAll", "any": "OpGroupNonUniformAny"}.get(
            name, "OpGroupNonUniformBallot"
        )
        return lambda w, ids, types, res: w.op(ins, res, scope(w), ids[0])
    if name in _SUBGROUP_LANE:
        ins = _SUBGROUP_LANE[name]
        return lambda w, ids, types, res: w.op(ins, res, scope(w), ids[0], ids[1])
    if name == "broadcast_first":
        return lambda w, ids, types, res: w.op(
            "OpGroupNonUniformBroadcastFirst", res, scope(w), ids[0]
        )
    return lambda w, ids, types, res: w.op("OpGroupNonUniformElect", res, scope(w))  # elect


# --- rules by row ----------------------------------------------------------------------


def _binary_rule(name: str, at: str):
    k = _kind(at)
    if name == "Ne" and k == "float":  # unordered: NaN != x is true
        return lambda w, ids, types, res: w.op("OpLogicalNot", res, w.op("OpFOrdEqual", res, *ids))
    single = BINARY.get((name, k))
    if single is not None:
        return lambda w, ids, types, res: w.op(single, res, *ids)
    ext = BINARY_GLSL.get((name, k))
    if ext is not None:
        return lambda w, ids, types, res: w.glsl(ext, at, *ids)
    if name in ("Shl", "Shr"):
        return lambda w, ids, types, res: _shift(w, name, ids[0], at, ids[1])
    return None


def _unary_rule(name: str, at: str):  # noqa: C901 - one branch per pinned form
    k = _kind(at)
    single = UNARY.get((name, k))
    if (
        name == "Negate" and k == "uint"
    ):  # 0 - x: translators reject a signed negate of unsigned values
        return lambda w, ids, types, res: w.op("OpISub", at, w.zero(at), ids[0])
    if single is not None:
        return lambda w, ids, types, res: w.op(single, res, ids[0])
    ext = UNARY_GLSL.get((name, k))
    if ext is not None:
        return lambda w, ids, types, res: w.glsl(ext, at, ids[0])
    if name == "Clz":  # 31 - FindUMsb, on u32 bits (translators read the signedness)

        def clz(w, ids, types, res):
            x = w.op("OpBitcast", "u32", ids[0]) if at == "i32" else ids[0]
            r = w.op("OpISub", "u32", w.const("u32", 31), w.glsl("FindUMsb", "u32", x))
            return w.op("OpBitcast", "i32", r) if at == "i32" else r

        return clz
    if name == "Ctz":  # of 0 only where legalize's select drops the result
        return lambda w, ids, types, res: w.glsl("FindILsb", at, ids[0])
    if name == "Abs" and k == "uint":
        return lambda w, ids, types, res: ids[0]
    if name == "IsFinite":

        def finite(w, ids, types, res):
            a = ids[0]
            bad = w.op(
                "OpLogicalOr", "bool", w.op("OpIsNan", "bool", a), w.op("OpIsInf", "bool", a)
            )
            return w.op("OpLogicalNot", "bool", bad)

        return finite
    if name == "Reciprocal":
        return lambda w, ids, types, res: w.op("OpFDiv", at, w.const(at, 1.0), ids[0])
    return None


def _rule(row):
    (family, name), types = row
    if family == "BinOpKind":
        return _binary_rule(name, types[0])
    if family == "UnOpKind":
        return _unary_rule(name, types[0])
    if family == "Fma":
        return lambda w, ids, types, res: w.glsl("Fma", res, *ids)
    if family == "Select":
        return lambda w, ids, types, res: w.select_value(res, *ids)
    if family == "Cast":
        return lambda w, ids, types, res: _cast(w, ids[0], types[0], res)
    if family == "Bitcast":
        return lambda w, ids, types, res: (
            ids[0] if types[0] == res else w.op("OpBitcast", res, ids[0])
        )
    if family == "Construct":
        return lambda w, ids, types, res: w.op("OpCompositeConstruct", res, *ids)
    if family == "Extract":
        return None  # needs the component index from the payload: the writer emits it
    if family == "Subgroup":
        return _subgroup_rule(name, types)
    return None  # Atomic: memory.py


RULES = {row: rule for row in LEGAL_ROWS if (rule := _rule(row)) is not None}

# Atomic rows of the op table -> instruction, written by memory.h_atomic (which also
# orders CompareExchange's operands).
ATOMICS = {
    ("Add", "u32"): "OpAtomicIAdd",
    ("Or", "u32"): "OpAtomicOr",
    ("And", "u32"): "OpAtomicAnd",
    ("Xor", "u32"): "OpAtomicXor",
    ("Exchange", "u32"): "OpAtomicExchange",
    ("Min", "u32"): "OpAtomicUMin",
    ("Max", "u32"): "OpAtomicUMax",
    ("CompareExchange", "u32"): "OpAtomicCompareExchange",
}
ATOMICS.update({(op, "i32"): ins for (op, _), ins in ATOMICS.items()})
ATOMICS[("Min", "i32")] = "OpAtomicSMin"
ATOMICS[("Max", "i32")] = "OpAtomicSMax"

# Every row of the op table this emitter writes: RULES, the atomics, and Extract, which the
# function writer emits itself (OpCompositeExtract of the payload's component, any vector).
_ATOMIC_ROWS = {(("Atomic", op), (ty,)) for op, ty in ATOMICS}
RULE_ROWS = frozenset(RULES) | _ATOMIC_ROWS | {(("Extract", ""), (v,)) for v in VECTORS}
