"""The kernel language's builtins: one row per builtin, the single registry of builtins.

Each row (`Builtin`) gives a builtin's name, the `KernelChecker` method that checks a call
of it (`handler`) and the IR op that method emits for it (`op`), its typing rule (the
parameter kinds of each signature and the result kind), where a call of it may stand, the
device features any call of it needs, and its one-line doc. Everything else reads these
rows: the checker's call handling (frontend/calls.py looks a called name up in `BUILTINS`),
the name sets of frontend/names.py, `vyre_build.lang` (one object per builtin, its doc as
`__doc__`) and `vyre_build/lang.pyi`, which `python -m vyre_build.frontend.stubgen` writes
from them (a test holds the committed stub to the generated text).

The builtins that are one value op (sqrt, isnan, abs, min, max, popcount, rotl, ...) are
spelled once, in the op vocabulary (`descriptor.ops.VOCABULARY`: the op, its typing class,
the builtin's name and doc); `add_op_builtins` makes their rows, each called as `OP_SHAPES`
says for its op's family and typing class. Adding such a builtin: its vocabulary row.
Adding any other builtin: one `add_builtin(...)` call here (a second call with the same
name adds an overload, as Warp's `add_builtin` does), plus its handler in the checker if no
existing handler covers it. A kind a parameter or result names must be in `KINDS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from vyre_build.core.backends import BACKENDS
from vyre_build.core.features import (
    COOPERATIVE_MATRIX,
    SUBGROUP_FEATURES,
    VULKAN_MEMORY_MODEL,
)
from vyre_build.core.targets import COOPERATIVE_MATRIX as NEEDS_COOP
from vyre_build.descriptor.ops import VOCABULARY, ValueOp

__all__ = [
    "BUILTINS",
    "GROUPS",
    "KINDS",
    "MEMORY_ORDERS",
    "MEMORY_SCOPES",
    "OP_SHAPES",
    "ORDERS",
    "Builtin",
    "Param",
    "Signature",
    "add_builtin",
    "add_op_builtins",
    "in_group",
]


# Memory scopes and orders (frontend/memory_order.py checks them), and the orders each kind
# of memory operation allows: read-modify-write, load, store, fence.
MEMORY_SCOPES = ("device", "workgroup")
MEMORY_ORDERS = ("relaxed", "acquire", "release", "acq_rel")
ORDERS = {
    "rmw": MEMORY_ORDERS,
    "load": ("relaxed", "acquire"),
    "store": ("relaxed", "release"),
    "fence": ("acquire", "release", "acq_rel"),
}


def _literal(values: tuple[str, ...]) -> str:
    return "Literal[" + ", ".join(f'"{v}"' for v in values) + "]"


# The typing vocabulary of the rows: kind -> its type in the stub (mypy, IDEs), with the
# kernel language's types it stands for. A kind named by both a parameter and the result of
# a signature is one type throughout the call (the stub's TypeVars _F, _N and _T).
KINDS: dict[str, str] = {
    "float": "_F",  # an f32 or f16, or a vector of them (the result has its type)
    "float_or_scalar": "_F | _Scalar",  # like the first argument, or a scalar splatted to it
    "float_scalar": "builtins.float",  # an f32 or f16
    "numeric": "_N",  # an i32, u32, f32 or f16, or a vector of them
    "numeric_or_scalar": "_N | _Scalar",  # like the first argument, or a scalar splatted to it
    "integer": "builtins.int",  # an i32 or u32
    "u32": "builtins.int",  # a u32 (an integer literal converts)
    "bool": "builtins.bool",  # a condition
    "scalar": "_Scalar",  # a 32-bit scalar: i32, u32 or f32
    "type": "type[_T]",  # a type name
    "float_type": "type[builtins.float]",  # f16 or f32
    "value": "_T",  # a value of the type given
    "array": "Buffer[_T, rw]",  # an array of the type given
    "any_buffer": "Buffer[Any, Any]",  # a buffer or an array
    "int_buffer": "Buffer[builtins.int, Any]",  # an i32 or u32 buffer or shared array
    "float_buffer": "Buffer[builtins.float, Any]",  # an f16 or f32 buffer or shared array
    "ids": "_Ids",  # a u32 per axis: .x, .y, .z
    "ballot": "vec4u",  # a bit mask, one bit per lane
    "counter": "Iterator[builtins.int]",  # the values of a counted loop
    "matrix_a": "_MatrixA",  # cooperative-matrix fragments: A, B, accumulator, any
    "matrix_b": "_MatrixB",
    "matrix_acc": "_MatrixAcc",
    "matrix": "_MatrixA | _MatrixB | _MatrixAcc",
    "scope": "_Scope",  # one of MEMORY_SCOPES
    "order": "_Order",  # one of MEMORY_ORDERS
    "load_order": _literal(ORDERS["load"]),
    "store_order": _literal(ORDERS["store"]),
    "fence_order": _literal(ORDERS["fence"]),
    "none": "None",  # no value: a statement
}


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # a key of KINDS
    default: str | None = None  # Python source of the default (keywords, optional params)


@dataclass(frozen=True)
class Signature:
    """One overload: positional parameters, keyword-only parameters, the result's kind."""

    params: tuple[Param, ...]
    result: str
    keywords: tuple[Param, ...] = ()


@dataclass(frozen=True)
class Builtin:
    name: str
    group: str  # a key of GROUPS: the family it belongs to (and its section of lang.pyi)
    handler: str  # the KernelChecker method that checks a call: handler(node, name)
    op: str | None  # the IR op (or the op's member: subgroup op, matrix use) it lowers to
    signatures: tuple[Signature, ...]
    doc: str  # one line: the stub's docstring and the lang object's __doc__
    # where a call stands: "value" (an expression; also a statement), "statement" only,
    # "declaration" (name = shared(T, n) at the top of a kernel body), "loop" (a for
    # loop's iterable) or "axis" (a vector whose components are taken: global_id().x)
    where: str = "value"
    features: frozenset[str] = frozenset()  # device features every call of it needs

    @property
    def arity(self) -> int:
        """The positional argument count of its (first) signature."""
        return len(self.signatures[0].params)

    @property
    def result(self) -> str:
        return self.signatures[0].result


# The families, in the stub's order, with what they are.
GROUPS: dict[str, str] = {
    "ids": "invocation and grid indices, taken per axis",
    "arrays": "shared and private array declarations",
    "barriers": "execution barriers",
    "float_math": "f32/f16 math, per component",
    "fma": "fused multiply-add",
    "float_predicates": "f32/f16 classification",
    "numeric": "numeric functions of any number type, per component",
    "bit_counts": "bit counts of i32/u32",
    "rotates": "bit rotations of i32/u32",
    "other": "buffer lengths, bit casts and counted loops",
    "atomics": "atomic read-modify-write operations (keywords scope= and order=)",
    "memory": "atomic loads and stores, and fences (keywords scope= and order=)",
    "subgroup_ids": "subgroup indices and sizes (u32, no arguments)",
    "subgroups": "subgroup reductions, scans, votes and shuffles",
    "coop": "cooperative matrices (SPIR-V only)",
}
WHERE = ("value", "statement", "declaration", "loop", "axis")

BUILTINS: dict[str, Builtin] = {}


def add_builtin(
    name: str,
    group: str,
    handler: str,
    op: str | None,
    params: tuple[Param, ...] | list[Param],
    result: str,
    doc: str,
    *,
    keywords: tuple[Param, ...] = (),
    where: str = "value",
    features: tuple[str, ...] = (),
) -> Builtin:
    """Register builtin `name` (a second call with the same name adds an overload: the
    other fields must agree, and the first call's doc is the builtin's)."""
    sig = Signature(tuple(params), result, keywords)
    for kind in (*(p.kind for p in sig.params + keywords), result):
        if kind not in KINDS:
            raise ValueError(f"builtin {name}: unknown kind {kind!r}")
    if group not in GROUPS or where not in WHERE:
        raise ValueError(f"builtin {name}: unknown group {group!r} or where {where!r}")
    old = BUILTINS.get(name)
    if old is not None:
        if (old.group, old.handler, old.op, old.where) != (group, handler, op, where):
            raise ValueError(f"builtin {name}: an overload must keep group, handler, op, where")
        row = Builtin(
            name, group, handler, op, (*old.signatures, sig), old.doc, where, old.features
        )
    else:
        row = Builtin(name, group, handler, op, (sig,), doc, where, frozenset(features))
    BUILTINS[name] = row
    return row


def in_group(group: str) -> dict[str, str | None]:
    """{name: op} of the builtins of `group`, in registry order."""
    return {b.name: b.op for b in BUILTINS.values() if b.group == group}


def _p(spec: str) -> tuple[Param, ...]:
    """Parameters from "x: float, n: u32" (a default as "step: integer = 1")."""
    out = []
    for part in filter(None, (s.strip() for s in spec.split(","))):
        name, _, kind = part.partition(":")
        kind, _, default = kind.partition("=")
        out.append(Param(name.strip(), kind.strip(), default.strip() or None))
    return tuple(out)


# How the builtin of a value op (a row of descriptor.ops.VOCABULARY that names a builtin) is
# called, by the op's family and the builtin's typing class: its group, the checker method,
# its parameters and the result's kind. A builtin whose (family, typing class) is not here
# needs its shape (and, if no handler fits, a handler in the checker) added.
# fmt: off
OP_SHAPES: dict[tuple[str, str], tuple[str, str, str, str]] = {
    ("UnOpKind", "float"): ("float_math", "builtin_f32_unary", "x: float", "float"),
    ("UnOpKind", "predicate"): ("float_predicates", "builtin_f32_unary", "x: float_scalar", "bool"),
    ("UnOpKind", "numeric_signed"): ("numeric", "builtin_abs", "x: numeric", "numeric"),
    ("BinOpKind", "numeric"): (
        "numeric", "builtin_min_max", "a: numeric, b: numeric_or_scalar", "numeric"
    ),
    ("UnOpKind", "integer"): ("bit_counts", "builtin_int_unary", "x: integer", "integer"),
    ("BinOpKind", "shift"): ("rotates", "builtin_rotate", "x: integer, n: u32", "integer"),
}
# fmt: on


def add_op_builtins(vocabulary: tuple[ValueOp, ...] = VOCABULARY) -> list[Builtin]:
    """Register the builtin of every row of `vocabulary` that names one, in its order."""
    rows = []
    for op in vocabulary:
        if op.builtin is None:
            continue
        typing = op.builtin_typing or op.typing
        shape = OP_SHAPES.get((op.family, typing))
        if shape is None:
            raise ValueError(
                f"builtin {op.builtin}: no call shape for a {op.family} op of typing class "
                f"{typing!r} (frontend/builtins.py OP_SHAPES)"
            )
        group, handler, params, result = shape
        rows.append(add_builtin(op.builtin, group, handler, op.name, _p(params), result, op.doc))
    return rows


# The rows, one call per builtin, kept one row to a line where a row fits (formatter off).
# fmt: off
# -- ids ---------------------------------------------------------------------------------
for _name, _doc in (
    ("global_id", "This invocation's index in the whole grid (.x, .y, .z)."),
    ("local_id", "This invocation's index within its workgroup (.x, .y, .z)."),
    ("workgroup_id", "This invocation's workgroup's index in the grid (.x, .y, .z)."),
    ("num_workgroups", "The number of workgroups in the grid (.x, .y, .z)."),
    ("workgroup_size", "The workgroup's size (.x, .y, .z), as @kernel(workgroup_size=...) sets it."),
):
    add_builtin(_name, "ids", "expr_Attribute", "Builtin", (), "ids", _doc, where="axis")

# -- arrays and barriers -------------------------------------------------------------------
_ARRAY = _p("dtype: type, count: integer")
add_builtin(
    "shared", "arrays", "declare_array", "shared", _ARRAY, "array",
    "A workgroup-shared array of count elements of dtype.", where="declaration",
)
add_builtin(
    "local_array", "arrays", "declare_array", "local", _ARRAY, "array",
    "A private array of count elements of dtype, per invocation.", where="declaration",
)
add_builtin(
    "barrier", "barriers", "builtin_barrier", "Barrier", (), "none",
    "Workgroup barrier: every invocation waits here, shared memory writes become visible.",
    where="statement",
)
add_builtin(
    "storage_barrier", "barriers", "builtin_barrier", "Barrier", (), "none",
    "Storage barrier: storage buffer writes of the workgroup become visible to it.",
    where="statement",
)

# -- math, numeric, bits: the builtins of the op vocabulary (descriptor.ops.VOCABULARY) ----
add_op_builtins()
add_builtin(
    "fma", "fma", "builtin_fma", "Fma",
    _p("a: float, b: float_or_scalar, c: float_or_scalar"), "float",
    "a * b + c with one rounding, per component.",
)
add_builtin(
    "clamp", "numeric", "builtin_clamp", "Min",
    _p("x: numeric, lo: numeric_or_scalar, hi: numeric_or_scalar"), "numeric",
    "min(max(x, lo), hi), per component.",
)
add_builtin(
    "select", "numeric", "builtin_select", "Select",
    _p("cond: bool, if_true: numeric, if_false: numeric_or_scalar"), "numeric",
    "if_true when cond, else if_false (both evaluated; no branch).",
)

# -- buffers, casts, loops -----------------------------------------------------------------
add_builtin(
    "len", "other", "builtin_len", "Length", _p("buf: any_buffer"), "integer",
    "The element count of a buffer.",
)
add_builtin(
    "bitcast", "other", "builtin_bitcast", "Bitcast", _p("dtype: type, x: scalar"), "value",
    "The bits of x reinterpreted as dtype (same size): bitcast(u32, 1.0) == 0x3F800000.",
)
add_builtin(
    "range", "other", "builtin_range", "For", _p("stop: integer"), "counter",
    "A counted loop: range(stop) or range(start, stop, step) with integer bounds.",
    where="loop",
)
add_builtin(
    "range", "other", "builtin_range", "For",
    _p("start: integer, stop: integer, step: integer = 1"), "counter", "", where="loop",
)
add_builtin(
    "unroll", "other", "builtin_unroll", "For", _p("stop: integer"), "counter",
    "A loop unrolled at compile time: unroll(stop) or unroll(start, stop, step), constant "
    "bounds; the counter is a constant in each copy of the body.",
    where="loop",
)
add_builtin(
    "unroll", "other", "builtin_unroll", "For",
    _p("start: integer, stop: integer, step: integer = 1"), "counter", "", where="loop",
)

# -- atomics and memory order --------------------------------------------------------------
_MEMORY = (Param("scope", "scope", '"device"'), Param("order", "order", '"relaxed"'))
_ATOMIC = _p("buf: int_buffer, index: integer, value: integer")
for _name, _op, _doc in (
    ("atomic_add", "Add", "Atomically add value to buf[index]; returns the old value."),
    ("atomic_sub", "Add", "Atomically subtract value from buf[index]; returns the old value."),
    ("atomic_or", "Or", "Atomically OR value into buf[index]; returns the old value."),
    ("atomic_and", "And", "Atomically AND value into buf[index]; returns the old value."),
    ("atomic_xor", "Xor", "Atomically XOR value into buf[index]; returns the old value."),
    (
        "atomic_min",
        "Min",
        "Atomically set buf[index] to the smaller of it and value; returns the old value.",
    ),
    (
        "atomic_max",
        "Max",
        "Atomically set buf[index] to the larger of it and value; returns the old value.",
    ),
    ("atomic_exchange", "Exchange", "Atomically set buf[index] to value; returns the old value."),
):
    add_builtin(
        _name, "atomics", "builtin_atomic", _op, _ATOMIC, "integer", _doc, keywords=_MEMORY
    )
add_builtin(
    "atomic_compare_exchange", "atomics", "builtin_atomic", "CompareExchange",
    _p("buf: int_buffer, index: integer, expected: integer, value: integer"), "integer",
    "Atomically set buf[index] to value if it equals expected; returns the old value.",
    keywords=_MEMORY,
)
add_builtin(
    "atomic_load", "memory", "builtin_memory", "Load", _p("buf: int_buffer, index: integer"),
    "integer",
    'Atomically read buf[index]; order="acquire" sees what a release before it published.',
    keywords=(_MEMORY[0], Param("order", "load_order", '"relaxed"')),
)
add_builtin(
    "atomic_store", "memory", "builtin_memory", "Store", _ATOMIC, "none",
    'Atomically write value to buf[index]; order="release" publishes the writes before it.',
    keywords=(_MEMORY[0], Param("order", "store_order", '"relaxed"')), where="statement",
)
add_builtin(
    "fence", "memory", "builtin_memory", "Fence", (), "none",
    "A memory barrier without an execution barrier (SPIR-V OpMemoryBarrier).",
    keywords=(_MEMORY[0], Param("order", "fence_order", '"acq_rel"')), where="statement",
    features=(VULKAN_MEMORY_MODEL,),
)

# -- subgroups -----------------------------------------------------------------------------
_BASIC = SUBGROUP_FEATURES[0]  # subgroup_basic: every subgroup operation needs it
for _name, _doc in (
    ("subgroup_size", "The number of lanes of a subgroup (32 on NVIDIA, 8 on lavapipe: never assume it)."),
    ("subgroup_invocation_id", "This invocation's lane in its subgroup (0 .. subgroup_size() - 1)."),
    ("subgroup_id", "This invocation's subgroup in its workgroup (0 .. num_subgroups() - 1)."),
    ("num_subgroups", "The number of subgroups of a workgroup (the last may have fewer lanes)."),
):
    add_builtin(
        _name, "subgroup_ids", "builtin_subgroup_id", "Builtin", (), "u32", _doc,
        features=(_BASIC,),
    )
_V, _VL = _p("v: numeric"), _p("v: numeric, lane: u32")
# (name, op, parameters, result, the feature beside subgroup_basic, doc)
for _name, _op, _params, _result, _feature, _doc in (
    ("subgroup_add", "add", _V, "numeric", "subgroup_arithmetic",
     "The sum of v over the active invocations of the subgroup."),
    ("subgroup_min", "min", _V, "numeric", "subgroup_arithmetic",
     "The minimum of v over the active invocations of the subgroup."),
    ("subgroup_max", "max", _V, "numeric", "subgroup_arithmetic",
     "The maximum of v over the active invocations of the subgroup."),
    ("subgroup_and", "and", _V, "numeric", "subgroup_arithmetic",
     "The bitwise AND of v over the active invocations of the subgroup."),
    ("subgroup_or", "or", _V, "numeric", "subgroup_arithmetic",
     "The bitwise OR of v over the active invocations of the subgroup."),
    ("subgroup_xor", "xor", _V, "numeric", "subgroup_arithmetic",
     "The bitwise XOR of v over the active invocations of the subgroup."),
    ("subgroup_inclusive_add", "inclusive_add", _V, "numeric", "subgroup_arithmetic",
     "The sum of v over this and the lower active invocations of the subgroup."),
    ("subgroup_exclusive_add", "exclusive_add", _V, "numeric", "subgroup_arithmetic",
     "The sum of v over the lower active invocations of the subgroup (0 in the first)."),
    ("subgroup_all", "all", _p("cond: bool"), "bool", "subgroup_vote",
     "True when cond holds in every active invocation of the subgroup."),
    ("subgroup_any", "any", _p("cond: bool"), "bool", "subgroup_vote",
     "True when cond holds in any active invocation of the subgroup."),
    ("subgroup_ballot", "ballot", _p("cond: bool"), "ballot", "subgroup_ballot",
     "A bit mask (vec4u) of the active invocations where cond holds."),
    ("subgroup_broadcast", "broadcast", _VL, "numeric", "subgroup_ballot",
     "v of invocation lane (a constant), in every invocation of the subgroup."),
    ("subgroup_broadcast_first", "broadcast_first", _V, "numeric", "subgroup_ballot",
     "v of the lowest active invocation, in every invocation of the subgroup."),
    ("subgroup_shuffle", "shuffle", _VL, "numeric", "subgroup_shuffle",
     "v of invocation lane of the subgroup."),
    ("subgroup_shuffle_xor", "shuffle_xor", _p("v: numeric, mask: u32"), "numeric",
     "subgroup_shuffle", "v of the invocation whose lane is this lane XOR mask."),
    ("subgroup_shuffle_up", "shuffle_up", _p("v: numeric, delta: u32"), "numeric",
     "subgroup_shuffle_relative", "v of the invocation delta lanes below this one in the subgroup."),
    ("subgroup_shuffle_down", "shuffle_down", _p("v: numeric, delta: u32"), "numeric",
     "subgroup_shuffle_relative", "v of the invocation delta lanes above this one in the subgroup."),
    ("subgroup_elect", "elect", (), "bool", "subgroup_basic",
     "True in exactly one (the lowest) active invocation of the subgroup."),
):
    add_builtin(
        _name, "subgroups", "builtin_subgroup", _op, _params, _result, _doc,
        features=tuple(sorted({_BASIC, _feature})),
    )

# -- cooperative matrices -------------------------------------------------------------------
_COOP = (COOPERATIVE_MATRIX,)
# How the docs name the backends whose code can say a cooperative-matrix product.
_COOP_BACKENDS = " and ".join(
    b.title for b in BACKENDS.values() if not b.artifact.lacks((NEEDS_COOP,))
)
_LOAD = _p("buf: float_buffer, offset: integer, stride: integer, rows: integer, cols: integer")
for _name, _use, _result, _doc in (
    ("coop_load_a", "a", "matrix_a",
     "Load the A fragment (rows x cols, row-major at offset, stride) of a cooperative matmul."),
    ("coop_load_b", "b", "matrix_b",
     "Load the B fragment (rows x cols, row-major at offset, stride) of a cooperative matmul."),
    ("coop_load_acc", "acc", "matrix_acc",
     "Load an accumulator fragment (rows x cols, row-major at offset, stride)."),
):
    add_builtin(_name, "coop", "builtin_coop_load", _use, _LOAD, _result, _doc, features=_COOP)
add_builtin(
    "coop_fill", "coop", "coop_fill", "CoopFill",
    _p("dtype: float_type, rows: integer, cols: integer, value: float_scalar"), "matrix_acc",
    "A cooperative-matrix accumulator of rows x cols, every element value.", features=_COOP,
)
add_builtin(
    "coop_mma", "coop", "coop_mma", "CoopMma",
    _p("a: matrix_a, b: matrix_b, c: matrix_acc"), "matrix_acc",
    f"The cooperative matrix product a x b + c (tensor cores; {_COOP_BACKENDS}).", features=_COOP,
)
add_builtin(
    "coop_store", "coop", "coop_store", "CoopStore",
    _p("m: matrix, buf: float_buffer, offset: integer, stride: integer"), "none",
    "Store a cooperative-matrix fragment row-major into buf at offset with stride.",
    where="statement", features=_COOP,
)
# fmt: on
