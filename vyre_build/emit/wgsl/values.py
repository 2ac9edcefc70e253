"""WGSL rules for the value ops: one template per row of `descriptor.ops.OPS`.

A template is a `str.format` pattern over the operand expressions (`{a}`, `{b}`, `{c}`);
the emitter substitutes names of already-bound values only, so a template may repeat an
operand freely. A template that calls a `_vy_*` helper pulls the helper's definition
(`helpers.HELPERS`) into the module. The emitter writes the legal form
(descriptor.legalize), where the pinned semantics of docs/descriptor-conventions.md are
ops of the descriptor: each rule here is the one operation it names, and the rows
legalize expands (`legalize.EXPANDED`) have none. What stays is WGSL's own spelling where
it lacks an instruction or naga would change the meaning (float `!=`, NaN tests, exact
integer -> f32 rounding), never left to naga's polyfills.
Construct and Extract are built by the emitter from the type table (no template).
"""

from __future__ import annotations

from vyre_build.descriptor.ops import OPS
from vyre_build.descriptor.types import FLOAT, INTEGER, NUMERIC, STORAGE_TYPES, TYPES, VECTORS
from vyre_build.emit.wgsl.helpers import HELPERS

__all__ = [
    "LACKS",
    "RULES",
    "RULE_ROWS",
    "ZERO",
    "ONE",
    "I32_MIN",
    "wgsl_type",
    "COMPONENTS",
    "ATOMICS",
]

COMPONENTS = "xyzw"
# Value types WGSL has no spelling for (a kernel using one gets no WGSL: core.targets).
LACKS = STORAGE_TYPES
ZERO = {"u32": "0u", "i32": "0i", "f32": "0.0f", "f16": "0.0h", "bool": "false"}
ONE = {"u32": "1u", "i32": "1i", "f32": "1.0f", "f16": "1.0h"}
for _v in VECTORS:
    ZERO[_v] = f"{TYPES[_v].wgsl}()"  # the zero-value constructor
# i32::MIN cannot be written as a literal (`-2147483648i` negates an out-of-range 2147483648i).
I32_MIN = "(-2147483647i - 1i)"
ATOMICS = {
    "Add": "atomicAdd",
    "Or": "atomicOr",
    "And": "atomicAnd",
    "Xor": "atomicXor",
    "Min": "atomicMin",
    "Max": "atomicMax",
    "Exchange": "atomicExchange",
}


def wgsl_type(ty: str) -> str:
    return TYPES[ty].wgsl


def _is_nan(x: str) -> str:
    # WGSL has no isnan, and `x != x` may be folded away: test the exponent/mantissa bits.
    return f"((bitcast<u32>({x}) & 0x7fffffffu) > 0x7f800000u)"


RULES: dict = {}


def _bin(name: str, t: str, tpl: str, b: str | None = None) -> None:
    RULES[(("BinOpKind", name), (t, b or t))] = tpl


def _un(name: str, t: str, tpl: str) -> None:
    RULES[(("UnOpKind", name), (t,))] = tpl


def _cast(src: str, dst: str, tpl: str) -> None:
    RULES[(("Cast", dst), (src,))] = tpl


_MATH = {
    "Cos": "cos",
    "Sin": "sin",
    "Tan": "tan",
    "Acos": "acos",
    "Asin": "asin",
    "Atan": "atan",
    "Tanh": "tanh",
    "Sinh": "sinh",
    "Cosh": "cosh",
    "Sqrt": "sqrt",
    "InverseSqrt": "inverseSqrt",
    "Floor": "floor",
    "Ceil": "ceil",
    "Round": "round",
    "Trunc": "trunc",
    "Exp": "exp",
    "Exp2": "exp2",
    "Log": "log",
    "Log2": "log2",
    "Sign": "sign",
}

# --- scalars --------------------------------------------------------------------------
for _t in NUMERIC:
    for _op, _sym in (("Add", "+"), ("Sub", "-"), ("Mul", "*")):
        _bin(_op, _t, f"({{a}} {_sym} {{b}})")  # integer wrap is WGSL-native
    _bin("Min", _t, "min({a}, {b})")
    _bin("Max", _t, "max({a}, {b})")
    for _op, _sym in (
        ("Lt", "<"),
        ("Gt", ">"),
        ("Le", "<="),
        ("Ge", ">="),
        ("Eq", "=="),
        ("Ne", "!="),
    ):
        _bin(_op, _t, f"({{a}} {_sym} {{b}})")
_bin("Eq", "bool", "({a} == {b})")
_bin("Ne", "bool", "({a} != {b})")
# IEEE: NaN != x is true, but naga lowers float `!=` to an ordered compare (false on NaN).
_bin("Ne", "f32", "(!({a} == {b}))")
_bin("Ne", "f16", "(!({a} == {b}))")
for _t in INTEGER + ("bool",):
    _bin("BitAnd", _t, "({a} & {b})")
    _bin("BitOr", _t, "({a} | {b})")
for _t in INTEGER:
    _bin("BitXor", _t, "({a} ^ {b})")
    _bin("WrappingAdd", _t, "({a} + {b})")
    _bin("WrappingSub", _t, "({a} - {b})")
_bin("BitXor", "bool", "({a} != {b})")  # WGSL has no ^ on bool
_bin("And", "bool", "({a} && {b})")
_bin("Or", "bool", "({a} || {b})")
# Division, remainder and shifts of the legal form (descriptor.legalize): the divisor is
# never 0 nor -1 with an i32::MIN dividend, the amount is below 32; i32 remainder and
# rotations, MulHigh and AbsDiff never reach here (legalize writes them as other ops).
_bin("Div", "u32", "({a} / {b})")
_bin("Mod", "u32", "({a} % {b})")
_bin("Div", "i32", "({a} / {b})")
for _t in FLOAT:
    _bin("Div", _t, "({a} / {b})")
    _bin("Mod", _t, "({a} % {b})")
for _t in INTEGER:
    _bin("Shl", _t, "({a} << {b})", "u32")
    _bin("Shr", _t, "({a} >> {b})", "u32")  # arithmetic for i32, logical for u32

_un("Negate", "i32", "(0i - {a})")  # wraps: -MIN == MIN
_un("Negate", "u32", "(0u - {a})")
_un("Negate", "f32", "(-{a})")
_un("Negate", "f16", "(-{a})")
_un("Abs", "f16", "abs({a})")
_un("BitNot", "u32", "(~{a})")
_un("BitNot", "i32", "(~{a})")
_un("LogicalNot", "bool", "(!{a})")
_un("BitNot", "bool", "(!{a})")
_un("Abs", "u32", "{a}")
_un("Abs", "f32", "abs({a})")
_un("Sign", "i32", "select(select(0i, 1i, {a} > 0i), -1i, {a} < 0i)")
# f16 tests through its exact f32 value (the bit tests are the f32 ones).
for _t, _x in (("f32", "{a}"), ("f16", "f32({a})")):
    _un("IsNan", _t, _is_nan(_x))
    _un("IsInf", _t, f"((bitcast<u32>({_x}) & 0x7fffffffu) == 0x7f800000u)")
    _un("IsFinite", _t, f"((bitcast<u32>({_x}) & 0x7f800000u) != 0x7f800000u)")
    _un("Reciprocal", _t, f"({ONE[_t]} / {{a}})")
for _t in INTEGER:
    _un("Popcount", _t, "countOneBits({a})")
    _un("Clz", _t, "countLeadingZeros({a})")  # of 0 only where legalize's select drops it
    _un("Ctz", _t, "countTrailingZeros({a})")
    _un("ReverseBits", _t, "reverseBits({a})")
for _op, _fn in _MATH.items():  # the float math ops that are one WGSL builtin
    for _t in FLOAT:
        _un(_op, _t, f"{_fn}({{a}})")

# Casts. f32 -> i32 / u32 converts a number the legal form has clamped into range (NaN,
# saturation: descriptor.legalize); f16 -> integers never reach here.
for _t in ("bool", *NUMERIC):
    _cast(_t, _t, "{a}")
_cast("f32", "i32", "i32({a})")
_cast("f32", "u32", "u32({a})")
_cast("u32", "f32", "_vy_u32_to_f32({a})")
_cast("i32", "f32", "_vy_i32_to_f32({a})")
_cast("i32", "u32", "bitcast<u32>({a})")
_cast("u32", "i32", "bitcast<i32>({a})")
_cast("f32", "bool", "((bitcast<u32>({a}) & 0x7fffffffu) != 0u)")  # NaN -> true, -0.0 -> false
# f16 converts through f32, whose value holds every f16 exactly: one rule for each pair.
_cast("f16", "f32", "f32({a})")
_cast("f32", "f16", "f16({a})")
_cast("f16", "bool", RULES[(("Cast", "bool"), ("f32",))].replace("{a}", "f32({a})"))
for _t in ("i32", "u32"):
    _cast(_t, "f16", "f16(" + RULES[(("Cast", "f32"), (_t,))] + ")")
for _t in INTEGER:
    _cast(_t, "bool", f"({{a}} != {ZERO[_t]})")
for _t in NUMERIC:
    _cast("bool", _t, f"select({ZERO[_t]}, {ONE[_t]}, {{a}})")
for _s in NUMERIC:
    for _d in NUMERIC:
        if TYPES[_s].size == TYPES[_d].size:
            RULES[(("Bitcast", _d), (_s,))] = (
                "{a}" if _s == _d else f"bitcast<{TYPES[_d].wgsl}>({{a}})"
            )
for _t in TYPES:
    if TYPES[_t].matrix is None:  # WGSL has no cooperative matrices
        RULES[(("Select", ""), ("bool", _t, _t))] = "select({c}, {b}, {a})"

# --- vectors (docs/descriptor-conventions.md, "Vectors"): componentwise ------------------
# WGSL does not splat scalars in select/comparisons, so the templates use the zero vector
# where the scalar rule uses a 0 literal.
for _k, (_e, _n) in VECTORS.items():
    if _e not in NUMERIC:  # bf16 vectors: no arithmetic (and no WGSL)
        continue
    _z = ZERO[_k]
    for _op, _sym in (("Add", "+"), ("Sub", "-"), ("Mul", "*")):
        _bin(_op, _k, f"({{a}} {_sym} {{b}})")  # integer wrap is WGSL-native
    _bin("Min", _k, "min({a}, {b})")
    _bin("Max", _k, "max({a}, {b})")
    if _e in FLOAT:
        _bin("Div", _k, "({a} / {b})")
        _un("Negate", _k, "(-{a})")
        _un("Abs", _k, "abs({a})")
        for _op in _MATH:  # where the table has it on vectors: the scalar rule
            if (("UnOpKind", _op), (_k,)) in OPS:
                _un(_op, _k, RULES[(("UnOpKind", _op), (_e,))])
    else:
        _bin("BitAnd", _k, "({a} & {b})")
        _bin("BitOr", _k, "({a} | {b})")
        _bin("BitXor", _k, "({a} ^ {b})")
        _un("Negate", _k, f"({_z} - {{a}})")  # wraps per component
        _un("BitNot", _k, "(~{a})")
for _t in FLOAT + tuple(v for v, (e, _) in VECTORS.items() if e in FLOAT):
    RULES[(("Fma", ""), (_t, _t, _t))] = "fma({a}, {b}, {c})"
# Atomics: the builtin's name (the emitter writes the call, under the bounds check).
for _t in INTEGER:
    for _op, _fn in ATOMICS.items():
        RULES[(("Atomic", _op), (_t,))] = _fn
    RULES[(("Atomic", "CompareExchange"), (_t,))] = "atomicCompareExchangeWeak"


def _vector_casts() -> None:
    """Cast of a vector to another of the same length: the scalar rule per component.

    i32 <-> u32 is one vector bitcast; the other conversions are a helper function per
    type pair that applies the scalar template to each component, so the vector rule can
    never drift from the scalar one. Helpers are emitted only when a kernel calls them.
    """
    for src, (e1, n) in VECTORS.items():
        for dst, (e2, n2) in VECTORS.items():
            if n2 != n or (("Cast", dst), (src,)) not in OPS or {src, dst} & LACKS:
                continue  # not a row, or one of a type WGSL lacks (LACKS)
            if e1 == e2:
                _cast(src, dst, "{a}")
            elif {e1, e2} == set(INTEGER):
                _cast(src, dst, f"bitcast<{TYPES[dst].wgsl}>({{a}})")
            elif e1 in FLOAT and e2 in INTEGER:
                continue  # component by component in the legal form (descriptor.legalize)
            else:
                name = f"_vy_cast_v{n}{e1}_v{n}{e2}"
                scalar = RULES[(("Cast", e2), (e1,))]
                parts = ",\n".join(f"        {scalar.format(a='x.' + c)}" for c in COMPONENTS[:n])
                HELPERS[name] = (
                    f"fn {name}(x: {TYPES[src].wgsl}) -> {TYPES[dst].wgsl} {{\n"
                    f"    return {TYPES[dst].wgsl}(\n{parts});\n}}"
                )
                _cast(src, dst, f"{name}({{a}})")


_vector_casts()
for _row in OPS:  # Construct and Extract have no template: the emitter writes them
    if _row[0][0] in ("Construct", "Extract"):
        RULES[_row] = None
# Subgroups. The WGSL of wgpu-py's naga takes these builtins under the device's `subgroup`
# feature and refuses `enable subgroups;`; it lacks subgroupElect, so elect is "the first
# active lane" spelled with broadcastFirst. A broadcast's lane is a literal: `{lane}`.
_SUBGROUP = {
    "add": "subgroupAdd({a})",
    "min": "subgroupMin({a})",
    "max": "subgroupMax({a})",
    "and": "subgroupAnd({a})",
    "or": "subgroupOr({a})",
    "xor": "subgroupXor({a})",
    "inclusive_add": "subgroupInclusiveAdd({a})",
    "exclusive_add": "subgroupExclusiveAdd({a})",
    "all": "subgroupAll({a})",
    "any": "subgroupAny({a})",
    "ballot": "subgroupBallot({a})",
    "broadcast": "subgroupBroadcast({a}, {lane})",
    "broadcast_first": "subgroupBroadcastFirst({a})",
    "shuffle": "subgroupShuffle({a}, {b})",
    "shuffle_xor": "subgroupShuffleXor({a}, {b})",
    "shuffle_up": "subgroupShuffleUp({a}, {b})",
    "shuffle_down": "subgroupShuffleDown({a}, {b})",
    "elect": "(subgroupBroadcastFirst(sgid) == sgid)",
}
for _row in OPS:
    if _row[0][0] == "Subgroup":
        RULES[_row] = _SUBGROUP[_row[0][1]]

# no rule touches a type of LACKS
for _row in [r for r in RULES if {*r[1], OPS[r]} & LACKS]:
    del RULES[_row]
# every row of the legal form (legalize.LEGAL_ROWS) it writes: all but those of LACKS types
RULE_ROWS = frozenset(RULES)
