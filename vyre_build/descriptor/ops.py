"""The op table: every legal (op, operand types) of a value op and its result type.

Validation types every value op by looking its row up here, and both emitters keep one
rule per row (a test asserts each row has a rule in both, and no emitter rule is
outside the table). A row key is `(op, operand types)`, where `op` is `(family, name)`:

    ("BinOpKind", "Add")      ("UnOpKind", "Sqrt")     ("Fma", "")     ("Select", "")
    ("Cast", target type)     ("Bitcast", target)      ("Construct", vector type)
    ("Extract", "")           ("Atomic", AtomicOp name)   ("Subgroup", op name)

Bitcast, Construct and Extract are the documented OpaqueExpr extensions `vyre.bitcast`,
`vyre.vec` and `vyre.extract`. Subgroup rows are the schema's SubgroupAdd, SubgroupBallot
and SubgroupShuffle kinds and the OpaqueExpr `vyre.subgroup` (payload: the op's name). Atomic rows take the slot's element type (the index and
the slot are checked structurally). The pinned semantics of each row are in
docs/descriptor-conventions.md; the emitters spell them out. Which op of a descriptor is
which row: `descriptor.view` decodes each op once, and a value op's `key` is its `op` here.
"""

from __future__ import annotations

from vyre_build.descriptor.types import FLOAT, INTEGER, NUMERIC, SCALARS, TYPES, VECTORS

__all__ = ["OPS", "Row", "result_of"]

Op = tuple[str, str]
Row = tuple[Op, tuple[str, ...]]

ARITH = ("Add", "Sub", "Mul", "Min", "Max")
COMPARE = ("Lt", "Gt", "Le", "Ge")
EQUALITY = ("Eq", "Ne")
BITWISE = ("BitAnd", "BitOr", "BitXor")
SHIFTS = ("Shl", "Shr", "RotateLeft", "RotateRight")
FLOAT_MATH = (
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
)
FLOAT_SCALAR_MATH = ("Acos", "Asin", "Atan", "Sinh", "Cosh", "Reciprocal")
PREDICATES = ("IsNan", "IsInf", "IsFinite")
BIT_COUNTS = ("Popcount", "Clz", "Ctz", "ReverseBits")
ATOMICS = ("Add", "Or", "And", "Xor", "Min", "Max", "Exchange", "CompareExchange")
# Subgroup ops (docs/descriptor-conventions.md, "Subgroups") and the feature each needs.
SUBGROUP_REDUCE = ("add", "min", "max", "inclusive_add", "exclusive_add")
SUBGROUP_BITS = ("and", "or", "xor")
SUBGROUP_LANE = ("broadcast", "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down")
SUBGROUP_FEATURE = {
    **{n: "subgroup_arithmetic" for n in SUBGROUP_REDUCE + SUBGROUP_BITS},
    "all": "subgroup_vote",
    "any": "subgroup_vote",
    "ballot": "subgroup_ballot",
    "broadcast": "subgroup_ballot",
    "broadcast_first": "subgroup_ballot",
    "shuffle": "subgroup_shuffle",
    "shuffle_xor": "subgroup_shuffle",
    "shuffle_up": "subgroup_shuffle_relative",
    "shuffle_down": "subgroup_shuffle_relative",
    "elect": "subgroup_basic",
}
# The schema's own subgroup kinds; every other subgroup op is the OpaqueExpr vyre.subgroup.
SUBGROUP_KINDS = {"SubgroupAdd": "add", "SubgroupBallot": "ballot", "SubgroupShuffle": "shuffle"}


def _table() -> dict[Row, str]:
    ops: dict[Row, str] = {}

    def add(family: str, name: str, operands: tuple[str, ...], result: str) -> None:
        ops[((family, name), operands)] = result

    def binary(name: str, t: str, result: str | None = None) -> None:
        add("BinOpKind", name, (t, t), result or t)

    def unary(name: str, t: str, result: str | None = None) -> None:
        add("UnOpKind", name, (t,), result or t)

    for t in NUMERIC:
        for name in ARITH + ("Div", "Mod", "AbsDiff"):
            binary(name, t)
        for name in COMPARE + EQUALITY:
            binary(name, t, "bool")
        unary("Negate", t)
        unary("Abs", t)
        unary("Sign", t)
    for t in INTEGER:
        for name in BITWISE + ("WrappingAdd", "WrappingSub", "MulHigh"):
            binary(name, t)
        for name in SHIFTS:
            add("BinOpKind", name, (t, "u32"), t)
        for name in BIT_COUNTS + ("BitNot",):
            unary(name, t)
    for t in FLOAT:
        for name in FLOAT_MATH + FLOAT_SCALAR_MATH:
            unary(name, t)
        for name in PREDICATES:
            unary(name, t, "bool")
    for name in EQUALITY + BITWISE + ("And", "Or"):
        binary(name, "bool", "bool")
    unary("LogicalNot", "bool")
    unary("BitNot", "bool")
    for v, (e, n) in VECTORS.items():
        kind = TYPES[e].kind
        for name in ARITH:
            binary(name, v)
        unary("Negate", v)
        if kind == "float":
            binary("Div", v)
            unary("Abs", v)
            for name in FLOAT_MATH:
                unary(name, v)
        else:
            for name in BITWISE:
                binary(name, v)
            unary("BitNot", v)
            if kind == "sint":
                unary("Abs", v)
        add("Construct", v, (e,) * n, v)
        add("Extract", "", (v,), e)
    for t in FLOAT + tuple(v for v, (e, _) in VECTORS.items() if e in FLOAT):
        add("Fma", "", (t, t, t), t)
    values = [t for t in TYPES if TYPES[t].matrix is None]  # matrices: descriptor.matrices
    for t in values:
        add("Select", "", ("bool", t, t), t)
    for src in SCALARS:
        for dst in SCALARS:
            add("Cast", dst, (src,), dst)
    for src, (_, n) in VECTORS.items():
        for dst, (_, n2) in VECTORS.items():
            if n == n2:
                add("Cast", dst, (src,), dst)
    for src in NUMERIC:
        for dst in NUMERIC:
            if TYPES[src].size == TYPES[dst].size:  # a bit reinterpretation keeps the width
                add("Bitcast", dst, (src,), dst)
    for t in INTEGER:
        for name in ATOMICS:
            add("Atomic", name, (t,), t)
    # Subgroups: 32-bit scalars and their vectors (f16 needs an extension neither target
    # has by default); lanes and deltas are u32.
    wide = [t for t in values if TYPES[t].kind != "bool" and TYPES[t].element != "f16"]
    for t in wide:
        for name in SUBGROUP_REDUCE:
            add("Subgroup", name, (t,), t)
        if TYPES[t].kind in ("uint", "sint"):
            for name in SUBGROUP_BITS:
                add("Subgroup", name, (t,), t)
        for name in SUBGROUP_LANE:
            add("Subgroup", name, (t, "u32"), t)
        add("Subgroup", "broadcast_first", (t,), t)
    for name in ("all", "any"):
        add("Subgroup", name, ("bool",), "bool")
    add("Subgroup", "ballot", ("bool",), "vec4u")
    add("Subgroup", "elect", (), "bool")
    return ops


OPS: dict[Row, str] = _table()


def result_of(op: Op, operands: tuple[str, ...]) -> str | None:
    """The result type of `op` on `operands`, or None where the table has no such row."""
    return OPS.get((op, operands))
