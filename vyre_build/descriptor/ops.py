"""The value-op vocabulary and the op table: every legal (op, operand types) and its result.

`VOCABULARY` holds one row per BinOpKind / UnOpKind op (`ValueOp`: the op, its typing
class in `TYPINGS`, the kernel-language builtin that is this op where there is a plain one,
its one-line doc). The table's rows of those two families are the vocabulary over its
typing classes, and frontend/builtins.py makes the value-op builtins from it (so lang.pyi
too): a new such op is its vocabulary row plus one rule in each of emit/wgsl/values.py,
emit/spirv/values.py and reference/values.py. Its name must be a variant of the schema's
BinOp / UnOp, whose lists shared/spec/kernel-descriptor.md fixes (schema.ENUMS spells them).

Validation types every value op by looking its row up here, and both emitters keep one
rule per row (a test asserts each row has a rule in both, and no emitter rule is
outside the table). A row key is `(op, operand types)`, where `op` is `(family, name)`:

    ("BinOpKind", "Add")      ("UnOpKind", "Sqrt")     ("Fma", "")     ("Select", "")
    ("Cast", target type)     ("Bitcast", target)      ("Construct", vector type)
    ("Extract", "")           ("Atomic", AtomicOp name)   ("Subgroup", op name)

Bitcast, Construct and Extract are the documented OpaqueExpr extensions `vyre.bitcast`,
`vyre.vec` and `vyre.extract`. Subgroup rows are the schema's SubgroupAdd, SubgroupBallot
and SubgroupShuffle kinds and the OpaqueExpr `vyre.subgroup` (payload: the op's name).
Atomic rows take the slot's element type (the index and the slot are checked
structurally). The pinned semantics of each row are in docs/descriptor-conventions.md;
the emitters spell them out. Which op of a descriptor is which row: `descriptor.view`
decodes each op once, and a value op's `key` is its `op` here.
"""

from __future__ import annotations

from dataclasses import dataclass

from vyre_build.descriptor.types import (
    FLOAT,
    INTEGER,
    NUMERIC,
    SCALARS,
    STORAGE_ONLY,
    TYPES,
    VECTORS,
)

__all__ = ["OPS", "Row", "TYPINGS", "Typing", "VOCABULARY", "ValueOp", "result_of", "table"]

Op = tuple[str, str]
Row = tuple[Op, tuple[str, ...]]


# --- the vocabulary of value ops -----------------------------------------------------------
# One row per BinOpKind / UnOpKind op: the op, its typing class (where it is defined and
# what it returns), the kernel language's builtin function that is this op where there is
# a plain one (frontend/builtins.py makes its row from this one, lang.pyi its stub), and
# its one-line doc (the builtin's doc). Adding such an op: its row here, then its rule in
# emit/wgsl/values.py, emit/spirv/values.py and reference/values.py. The op must be a
# variant of the schema's BinOp / UnOp (schema.ENUMS): the spec fixes those lists.


@dataclass(frozen=True)
class Typing:
    """Where an op is defined: its operand types, each on its own, and its result."""

    types: tuple[str, ...]  # the (left) operand types; both operands of a binary op agree
    result: str | None = None  # the result type (None: the operand's type)
    amount: str | None = None  # a binary op's right operand type where it is fixed (u32)


_FLOAT_VECTORS = tuple(v for v, (e, _) in VECTORS.items() if e in FLOAT)  # not bf16's
_INT_VECTORS = tuple(v for v, (e, _) in VECTORS.items() if TYPES[e].kind in ("uint", "sint"))
_SINT_VECTORS = tuple(v for v, (e, _) in VECTORS.items() if TYPES[e].kind == "sint")
_SIGNED_VECTORS = tuple(v for v in VECTORS if v in _FLOAT_VECTORS + _SINT_VECTORS)

# The typing classes. Vectors are componentwise (docs/descriptor-conventions.md, "Vectors").
TYPINGS: dict[str, Typing] = {
    # numeric scalars and every vector of them (not bf16's: a storage type)
    "numeric": Typing(NUMERIC + tuple(v for v, (e, _) in VECTORS.items() if e in NUMERIC)),
    "numeric_scalar": Typing(NUMERIC),
    "numeric_float_vectors": Typing(NUMERIC + _FLOAT_VECTORS),
    "numeric_signed": Typing(NUMERIC + _SIGNED_VECTORS),  # + the float and i32 vectors
    "compare": Typing(NUMERIC, "bool"),
    "equality": Typing(NUMERIC + ("bool",), "bool"),
    "bits": Typing(INTEGER + ("bool",) + _INT_VECTORS),  # bool: logical
    "integer": Typing(INTEGER),
    "shift": Typing(INTEGER, amount="u32"),  # the amount is a u32, used mod 32
    "logic": Typing(("bool",)),
    "float": Typing(FLOAT + _FLOAT_VECTORS),
    "float_scalar": Typing(FLOAT),
    "predicate": Typing(FLOAT, "bool"),
}


@dataclass(frozen=True)
class ValueOp:
    """One vocabulary row: a BinOpKind or UnOpKind op."""

    family: str  # "BinOpKind" | "UnOpKind"
    name: str  # the schema's BinOp / UnOp variant
    typing: str  # a key of TYPINGS
    doc: str  # one line (the builtin's doc, where it has one)
    builtin: str | None = None  # the kernel-language function that is this op
    builtin_typing: str | None = None  # where the builtin takes less than the op (TYPINGS)

    @property
    def key(self) -> Op:
        return (self.family, self.name)


def _bin(name: str, typing: str, doc: str, builtin: str | None = None) -> ValueOp:
    return ValueOp("BinOpKind", name, typing, doc, builtin)


def _un(
    name: str, typing: str, doc: str, builtin: str | None = None, on: str | None = None
) -> ValueOp:
    return ValueOp("UnOpKind", name, typing, doc, builtin, on)


# The rows of one builtin group are in the stub's order (lang.pyi): sqrt .. sign; abs, min, max.
# fmt: off
VOCABULARY: tuple[ValueOp, ...] = (
    # -- unary ----------------------------------------------------------------------------
    _un("Negate", "numeric", "-a (integers wrap: -MIN == MIN)."),
    _un("BitNot", "bits", "The bitwise NOT of a."),
    _un("LogicalNot", "logic", "not a."),
    _un("Abs", "numeric_signed", "The absolute value, per component of a vector.", "abs"),
    _un("Sqrt", "float", "The square root of x, per component.", "sqrt"),
    _un("Exp", "float", "e raised to x, per component.", "exp"),
    _un("Exp2", "float", "2 raised to x, per component.", "exp2"),
    _un("Log", "float", "The natural logarithm of x, per component.", "log"),
    _un("Log2", "float", "The base-2 logarithm of x, per component.", "log2"),
    _un("Sin", "float", "The sine of x (radians), per component.", "sin"),
    _un("Cos", "float", "The cosine of x (radians), per component.", "cos"),
    _un("Tan", "float", "The tangent of x (radians), per component.", "tan"),
    _un("Tanh", "float", "The hyperbolic tangent of x, per component.", "tanh"),
    _un("InverseSqrt", "float", "1 / sqrt(x), per component.", "rsqrt"),
    _un("Floor", "float", "The largest integer value not greater than x, per component.", "floor"),
    _un("Ceil", "float", "The smallest integer value not less than x, per component.", "ceil"),
    _un("Round", "float", "x rounded to the nearest integer value, ties to even, per component.",
        "round"),
    _un("Trunc", "float", "x with its fraction dropped (toward zero), per component.", "trunc"),
    _un("Sign", "numeric_float_vectors", "-1, 0 or 1 by the sign of x, per component.", "sign",
        on="float"),
    _un("Acos", "float_scalar", "The arc cosine of x (radians)."),
    _un("Asin", "float_scalar", "The arc sine of x (radians)."),
    _un("Atan", "float_scalar", "The arc tangent of x (radians)."),
    _un("Sinh", "float_scalar", "The hyperbolic sine of x."),
    _un("Cosh", "float_scalar", "The hyperbolic cosine of x."),
    _un("Reciprocal", "float_scalar", "1 / x."),
    _un("IsNan", "predicate", "True when x is NaN.", "isnan"),
    _un("IsInf", "predicate", "True when x is +inf or -inf.", "isinf"),
    _un("IsFinite", "predicate", "True when x is neither infinite nor NaN.", "isfinite"),
    _un("Popcount", "integer", "The number of set bits of a 32-bit integer.", "popcount"),
    _un("Clz", "integer", "The number of leading zero bits of a 32-bit integer.", "clz"),
    _un("Ctz", "integer", "The number of trailing zero bits of a 32-bit integer.", "ctz"),
    _un("ReverseBits", "integer", "A 32-bit integer with its bit order reversed.", "reverse_bits"),
    # -- binary ---------------------------------------------------------------------------
    _bin("Add", "numeric", "a + b (integers wrap)."),
    _bin("Sub", "numeric", "a - b (integers wrap)."),
    _bin("Mul", "numeric", "a * b (integers wrap)."),
    _bin("Div", "numeric_float_vectors", "a / b (pinned: integer x / 0 == x, MIN / -1 == MIN)."),
    _bin("Mod", "numeric_scalar", "The remainder of a / b (pinned: integer x % 0 == 0)."),
    _bin("AbsDiff", "numeric_scalar", "|a - b|: the larger minus the smaller (integers wrap)."),
    _bin("Lt", "compare", "a < b."),
    _bin("Gt", "compare", "a > b."),
    _bin("Le", "compare", "a <= b."),
    _bin("Ge", "compare", "a >= b."),
    _bin("Eq", "equality", "a == b."),
    _bin("Ne", "equality", "a != b (true on NaN)."),
    _bin("BitAnd", "bits", "The bitwise AND of a and b."),
    _bin("BitOr", "bits", "The bitwise OR of a and b."),
    _bin("BitXor", "bits", "The bitwise XOR of a and b."),
    _bin("WrappingAdd", "integer", "a + b, wrapping."),
    _bin("WrappingSub", "integer", "a - b, wrapping."),
    _bin("MulHigh", "integer", "The high 32 bits of the 64-bit product a * b."),
    _bin("Shl", "shift", "a shifted left by b mod 32 bits."),
    _bin("Shr", "shift", "a shifted right by b mod 32 bits (arithmetic for i32)."),
    _bin("RotateLeft", "shift", "A 32-bit integer rotated left by n bits.", "rotl"),
    _bin("RotateRight", "shift", "A 32-bit integer rotated right by n bits.", "rotr"),
    _bin("And", "logic", "a and b."),
    _bin("Or", "logic", "a or b."),
    _bin("Min", "numeric", "The smaller of a and b, per component (NaN is not propagated).", "min"),
    _bin("Max", "numeric", "The larger of a and b, per component (NaN is not propagated).", "max"),
)
# fmt: on

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


def table(vocabulary: tuple[ValueOp, ...] = VOCABULARY) -> dict[Row, str]:
    """The op table: the vocabulary's rows over their typing classes, then the other ops."""
    ops: dict[Row, str] = {}

    def add(family: str, name: str, operands: tuple[str, ...], result: str) -> None:
        ops[((family, name), operands)] = result

    for row in vocabulary:
        typing = TYPINGS[row.typing]
        for t in typing.types:
            if row.family == "UnOpKind":
                operands: tuple[str, ...] = (t,)
            else:
                operands = (t, typing.amount or t)
            add(row.family, row.name, operands, typing.result or t)
    for v, (e, n) in VECTORS.items():
        add("Construct", v, (e,) * n, v)
        add("Extract", "", (v,), e)
    for t in FLOAT + tuple(v for v, (e, _) in VECTORS.items() if e in FLOAT):
        add("Fma", "", (t, t, t), t)
    values = [t for t in TYPES if TYPES[t].matrix is None]  # matrices: descriptor.matrices
    for t in values:
        add("Select", "", ("bool", t, t), t)

    def converts(src: str, dst: str) -> bool:
        # a storage type (bf16, its vectors) converts to and from f32 (its vectors) only: the
        # frontend goes through f32 for the others
        se, de = TYPES[src].element, TYPES[dst].element
        return not ({se, de} & set(STORAGE_ONLY) and se != de and "f32" not in (se, de))

    for src in SCALARS:
        for dst in SCALARS:
            if converts(src, dst):
                add("Cast", dst, (src,), dst)
    for src, (_, n) in VECTORS.items():
        for dst, (_, n2) in VECTORS.items():
            if n == n2 and converts(src, dst):
                add("Cast", dst, (src,), dst)
    for src in NUMERIC:
        for dst in NUMERIC:
            if TYPES[src].size == TYPES[dst].size:  # a bit reinterpretation keeps the width
                add("Bitcast", dst, (src,), dst)
    for t in INTEGER:
        for name in ATOMICS:
            add("Atomic", name, (t,), t)
    # Subgroups: 32-bit scalars and their vectors (f16 and bf16 need an extension neither target
    # has by default); lanes and deltas are u32.
    wide = [t for t in values if TYPES[t].element in NUMERIC and TYPES[t].element != "f16"]
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


OPS: dict[Row, str] = table()


def result_of(op: Op, operands: tuple[str, ...]) -> str | None:
    """The result type of `op` on `operands`, or None where the table has no such row."""
    return OPS.get((op, operands))
