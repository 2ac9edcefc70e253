"""The WGSL emitter's rule tables: types, op templates, helper functions, reserved names.

Every rule is data. A template is a `str.format` pattern over the operand expressions
(`{a}`, `{b}`, `{c}`); the emitter only substitutes names of already-bound values, so a
template may repeat an operand freely. A template that calls a `_vy_*` helper pulls the
helper's definition (from `HELPERS`) into the module. Every pinned semantic of
docs/descriptor-conventions.md is spelled out here, never left to naga's polyfills.
"""

from __future__ import annotations

TYPE_MAP = {"U32": "u32", "I32": "i32", "F32": "f32", "Bool": "bool"}
ZERO = {"U32": "0u", "I32": "0i", "F32": "0.0f", "Bool": "false"}
ONE = {"U32": "1u", "I32": "1i", "F32": "1.0f"}
INTS = ("U32", "I32")
NUMS = ("U32", "I32", "F32")
SCALARS = tuple(TYPE_MAP)
ATOMIC_TYPES = INTS

# --- vectors: DataType Vec{element, count}, element U32/I32/F32, count 2 or 4 ----------
# A vector's type key is "Vec<F32,4>"; it cannot collide with a DataType variant name
# (so the schema's legacy unit variants Vec2U32/Vec4U32 stay unsupported).
VEC_COUNTS = (2, 4)
VECTORS: dict[str, tuple[str, int]] = {}  # type key -> (element type, count)
for _e in NUMS:
    for _n in VEC_COUNTS:
        _k = f"Vec<{_e},{_n}>"
        VECTORS[_k] = (_e, _n)
        TYPE_MAP[_k] = f"vec{_n}<{TYPE_MAP[_e]}>"
        ZERO[_k] = f"{TYPE_MAP[_k]}()"  # the zero-value constructor
COMPONENTS = "xyzw"
STORAGE_TYPES = NUMS + tuple(VECTORS)  # host-shareable element types of storage buffers


def vec_key(element: str, count: int) -> str:
    return f"Vec<{element},{count}>"


def type_key(dt) -> str:
    """The type key of a DataType `Variant`: its name for a unit variant, `Vec<E,N>` for a
    supported vector, and otherwise a string no rule accepts (the variant's repr)."""
    if not dt.args:
        return dt.name
    if dt.name == "Vec" and len(dt.args) == 2:
        elem, count = dt.args
        if getattr(elem, "args", None) == () and vec_key(elem.name, count) in VECTORS:
            return vec_key(elem.name, count)
    return repr(dt)


# i32::MIN cannot be written as a literal (`-2147483648i` negates an out-of-range 2147483648i).
I32_MIN = "(-2147483647i - 1i)"


def _is_nan(x: str) -> str:
    # WGSL has no isnan, and `x != x` may be folded away: test the exponent/mantissa bits.
    return f"((bitcast<u32>({x}) & 0x7fffffffu) > 0x7f800000u)"


# --- binary ops: (op, operand type) -> (result type, template) -----------------------
BINOPS: dict[tuple[str, str], tuple[str, str]] = {}
for _t in NUMS:
    for _op, _sym in (("Add", "+"), ("Sub", "-"), ("Mul", "*")):
        BINOPS[(_op, _t)] = (_t, f"({{a}} {_sym} {{b}})")  # integer wrap is WGSL-native
    BINOPS[("Min", _t)] = (_t, "min({a}, {b})")
    BINOPS[("Max", _t)] = (_t, "max({a}, {b})")
    for _op, _sym in (("Lt", "<"), ("Gt", ">"), ("Le", "<="), ("Ge", ">=")):
        BINOPS[(_op, _t)] = ("Bool", f"({{a}} {_sym} {{b}})")
for _t in NUMS + ("Bool",):
    BINOPS[("Eq", _t)] = ("Bool", "({a} == {b})")
    BINOPS[("Ne", _t)] = ("Bool", "({a} != {b})")
# IEEE: NaN != x is true, but naga lowers f32 `!=` to an ordered compare (false on NaN).
BINOPS[("Ne", "F32")] = ("Bool", "(!({a} == {b}))")
for _t in INTS + ("Bool",):
    BINOPS[("BitAnd", _t)] = (_t, "({a} & {b})")
    BINOPS[("BitOr", _t)] = (_t, "({a} | {b})")
BINOPS[("BitXor", "U32")] = ("U32", "({a} ^ {b})")
BINOPS[("BitXor", "I32")] = ("I32", "({a} ^ {b})")
BINOPS[("BitXor", "Bool")] = ("Bool", "({a} != {b})")  # WGSL has no ^ on bool
BINOPS[("And", "Bool")] = ("Bool", "({a} && {b})")
BINOPS[("Or", "Bool")] = ("Bool", "({a} || {b})")
# Pinned: x / 0 == x, x % 0 == 0, MIN / -1 == MIN, MIN % -1 == 0 (divide by 1 instead).
BINOPS[("Div", "U32")] = ("U32", "({a} / select({b}, 1u, {b} == 0u))")
BINOPS[("Mod", "U32")] = ("U32", "({a} % select({b}, 1u, {b} == 0u))")
_I32_BAD = "{b} == 0i || ({a} == " + I32_MIN + " && {b} == -1i)"
BINOPS[("Div", "I32")] = ("I32", "({a} / select({b}, 1i, " + _I32_BAD + "))")
BINOPS[("Mod", "I32")] = ("I32", "({a} % select({b}, 1i, " + _I32_BAD + "))")
BINOPS[("Div", "F32")] = ("F32", "({a} / {b})")
BINOPS[("Mod", "F32")] = ("F32", "({a} % {b})")
BINOPS[("AbsDiff", "U32")] = ("U32", "select({b} - {a}, {a} - {b}, {a} > {b})")
BINOPS[("AbsDiff", "I32")] = ("I32", "select({b} - {a}, {a} - {b}, {a} > {b})")
BINOPS[("AbsDiff", "F32")] = ("F32", "abs({a} - {b})")
BINOPS[("MulHigh", "U32")] = ("U32", "_vy_mulhi_u32({a}, {b})")
BINOPS[("MulHigh", "I32")] = ("I32", "_vy_mulhi_i32({a}, {b})")
# Shift-like ops take a U32 amount, used mod 32 (pinned).
SHIFTS: dict[tuple[str, str], tuple[str, str]] = {}
for _t in INTS:
    SHIFTS[("Shl", _t)] = (_t, "({a} << ({b} & 31u))")
    SHIFTS[("Shr", _t)] = (_t, "({a} >> ({b} & 31u))")  # arithmetic for i32, logical for u32
SHIFTS[("RotateLeft", "U32")] = ("U32", "_vy_rotl({a}, {b})")
SHIFTS[("RotateRight", "U32")] = ("U32", "_vy_rotl({a}, 0u - {b})")
SHIFTS[("RotateLeft", "I32")] = ("I32", "bitcast<i32>(_vy_rotl(bitcast<u32>({a}), {b}))")
SHIFTS[("RotateRight", "I32")] = ("I32", "bitcast<i32>(_vy_rotl(bitcast<u32>({a}), 0u - {b}))")

# --- unary ops: (op, operand type) -> (result type, template) ------------------------
UNOPS: dict[tuple[str, str], tuple[str, str]] = {
    ("Negate", "I32"): ("I32", "(0i - {a})"),  # wraps: -MIN == MIN
    ("Negate", "U32"): ("U32", "(0u - {a})"),
    ("Negate", "F32"): ("F32", "(-{a})"),
    ("BitNot", "U32"): ("U32", "(~{a})"),
    ("BitNot", "I32"): ("I32", "(~{a})"),
    ("BitNot", "Bool"): ("Bool", "(!{a})"),
    ("LogicalNot", "Bool"): ("Bool", "(!{a})"),
    ("Abs", "I32"): ("I32", "select({a}, 0i - {a}, {a} < 0i)"),  # abs(MIN) == MIN
    ("Abs", "U32"): ("U32", "{a}"),
    ("Abs", "F32"): ("F32", "abs({a})"),
    ("Sign", "F32"): ("F32", "sign({a})"),
    ("Sign", "I32"): ("I32", "select(select(0i, 1i, {a} > 0i), -1i, {a} < 0i)"),
    ("Sign", "U32"): ("U32", "select(0u, 1u, {a} != 0u)"),
    ("IsNan", "F32"): ("Bool", _is_nan("{a}")),
    ("IsInf", "F32"): ("Bool", "((bitcast<u32>({a}) & 0x7fffffffu) == 0x7f800000u)"),
    ("IsFinite", "F32"): ("Bool", "((bitcast<u32>({a}) & 0x7f800000u) != 0x7f800000u)"),
    ("Reciprocal", "F32"): ("F32", "(1.0f / {a})"),
}
for _t in INTS:
    _w = "32u" if _t == "U32" else "32i"
    UNOPS[("Popcount", _t)] = (_t, "countOneBits({a})")
    # Pinned clz(0) == ctz(0) == 32, written out rather than trusted to the backend.
    UNOPS[("Clz", _t)] = (_t, f"select(countLeadingZeros({{a}}), {_w}, {{a}} == {ZERO[_t]})")
    UNOPS[("Ctz", _t)] = (_t, f"select(countTrailingZeros({{a}}), {_w}, {{a}} == {ZERO[_t]})")
    UNOPS[("ReverseBits", _t)] = (_t, "reverseBits({a})")
for _op, _fn in (
    ("Cos", "cos"),
    ("Sin", "sin"),
    ("Tan", "tan"),
    ("Acos", "acos"),
    ("Asin", "asin"),
    ("Atan", "atan"),
    ("Tanh", "tanh"),
    ("Sinh", "sinh"),
    ("Cosh", "cosh"),
    ("Sqrt", "sqrt"),
    ("InverseSqrt", "inverseSqrt"),
    ("Floor", "floor"),
    ("Ceil", "ceil"),
    ("Round", "round"),
    ("Trunc", "trunc"),
    ("Exp", "exp"),
    ("Exp2", "exp2"),
    ("Log", "log"),
    ("Log2", "log2"),
):
    UNOPS[(_op, "F32")] = ("F32", f"{_fn}({{a}})")

# --- casts: (source type, target type) -> template -----------------------------------
CASTS: dict[tuple[str, str], str] = {(t, t): "{a}" for t in TYPE_MAP}
CASTS.update(
    {
        # Truncate toward zero, saturate (2147483520 is the largest f32 below 2^31), NaN -> 0.
        ("F32", "I32"): (
            "select(select(i32(clamp({a}, -2147483648.0f, 2147483520.0f)), 2147483647i, "
            "{a} >= 2147483648.0f), 0i, " + _is_nan("{a}") + ")"
        ),
        ("F32", "U32"): (
            "select(select(u32(clamp({a}, 0.0f, 4294967040.0f)), 4294967295u, "
            "{a} >= 4294967296.0f), 0u, " + _is_nan("{a}") + ")"
        ),
        ("U32", "F32"): "_vy_u32_to_f32({a})",
        ("I32", "F32"): "_vy_i32_to_f32({a})",
        ("I32", "U32"): "bitcast<u32>({a})",
        ("U32", "I32"): "bitcast<i32>({a})",
        ("F32", "Bool"): "((bitcast<u32>({a}) & 0x7fffffffu) != 0u)",  # NaN -> true, -0.0 -> false
    }
)
for _t in INTS:
    CASTS[(_t, "Bool")] = f"({{a}} != {ZERO[_t]})"
for _t in NUMS:
    CASTS[("Bool", _t)] = f"select({ZERO[_t]}, {ONE[_t]}, {{a}})"
BITCASTS = {(s, t) for s in NUMS for t in NUMS}

# --- vector rules (docs/descriptor-conventions.md, "Vectors"): componentwise ------------
# Only what the conventions define is here; everything else on a vector (comparisons,
# And/Or, shifts, rotations, Mod, integer Div, bit counting, atomics) has no rule and the
# emitter raises EmitError. WGSL does not splat scalars in select/comparisons, so the
# templates use the zero vector where the scalar rule uses a 0 literal.
VEC_MATH = (
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
for _k, (_e, _n) in VECTORS.items():
    _z = ZERO[_k]
    for _op, _sym in (("Add", "+"), ("Sub", "-"), ("Mul", "*")):
        BINOPS[(_op, _k)] = (_k, f"({{a}} {_sym} {{b}})")  # integer wrap is WGSL-native
    BINOPS[("Min", _k)] = (_k, "min({a}, {b})")
    BINOPS[("Max", _k)] = (_k, "max({a}, {b})")
    if _e == "F32":
        BINOPS[("Div", _k)] = (_k, "({a} / {b})")
        UNOPS[("Negate", _k)] = (_k, "(-{a})")
        UNOPS[("Abs", _k)] = (_k, "abs({a})")
        for _op in VEC_MATH:
            UNOPS[(_op, _k)] = (_k, UNOPS[(_op, "F32")][1])
    else:
        BINOPS[("BitAnd", _k)] = (_k, "({a} & {b})")
        BINOPS[("BitOr", _k)] = (_k, "({a} | {b})")
        BINOPS[("BitXor", _k)] = (_k, "({a} ^ {b})")
        UNOPS[("Negate", _k)] = (_k, f"({_z} - {{a}})")  # wraps per component
        UNOPS[("BitNot", _k)] = (_k, "(~{a})")
    if _e == "I32":
        UNOPS[("Abs", _k)] = (_k, f"select({{a}}, {_z} - {{a}}, {{a}} < {_z})")  # abs(MIN) == MIN
FMA_TYPES = ("F32",) + tuple(k for k, (e, _) in VECTORS.items() if e == "F32")

# --- atomics: AtomicOp -> WGSL builtin (CompareExchange is handled by the emitter) ---
ATOMICS = {
    "Add": "atomicAdd",
    "Or": "atomicOr",
    "And": "atomicAnd",
    "Xor": "atomicXor",
    "Min": "atomicMin",
    "Max": "atomicMax",
    "Exchange": "atomicExchange",
}

# --- helper functions, included when a template names them ---------------------------
HELPERS: dict[str, str] = {
    "_vy_rotl": """\
fn _vy_rotl(x: u32, n: u32) -> u32 {
    let s = n & 31u;
    return (x << s) | (x >> ((32u - s) & 31u));
}""",
    "_vy_mulhi_u32": """\
fn _vy_mulhi_u32(a: u32, b: u32) -> u32 {
    // High word of the 64-bit product from 16-bit halves (WGSL has no 64-bit integers).
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}""",
    "_vy_mulhi_i32": """\
fn _vy_mulhi_i32(a: i32, b: i32) -> i32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    return bitcast<i32>(_vy_mulhi_u32(ua, ub) - select(0u, ub, a < 0i) - select(0u, ua, b < 0i));
}""",
    "_vy_u32_to_f32": """\
fn _vy_u32_to_f32(x: u32) -> f32 {
    // Both halves convert exactly; the one add rounds to nearest even on every backend.
    return f32(x >> 16u) * 65536.0f + f32(x & 0xffffu);
}""",
    "_vy_i32_to_f32": """\
fn _vy_i32_to_f32(x: i32) -> f32 {
    let m = _vy_u32_to_f32(select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i));
    return select(m, -m, x < 0i);
}""",
}


def _vector_casts() -> None:
    """Cast{Vec<E2,N>} of a Vec<E1,N>: per component with the scalar rule (pinned).

    I32 <-> U32 is one vector bitcast; the other conversions are a helper function per
    type pair that applies the scalar template to each component, so the vector rule can
    never drift from the scalar one. Helpers are emitted only when a kernel calls them.
    """
    for src, (e1, n) in VECTORS.items():
        for e2 in NUMS:
            dst = vec_key(e2, n)
            if e1 == e2:
                continue  # identity: from TYPE_MAP above
            if {e1, e2} == set(INTS):
                CASTS[(src, dst)] = f"bitcast<{TYPE_MAP[dst]}>({{a}})"
                continue
            name = f"_vy_cast_v{n}{e1.lower()}_v{n}{e2.lower()}"
            parts = ",\n".join(
                f"        {CASTS[(e1, e2)].format(a='x.' + c)}" for c in COMPONENTS[:n]
            )
            HELPERS[name] = (
                f"fn {name}(x: {TYPE_MAP[src]}) -> {TYPE_MAP[dst]} {{\n"
                f"    return {TYPE_MAP[dst]}(\n{parts});\n}}"
            )
            CASTS[(src, dst)] = f"{name}({{a}})"


_vector_casts()

# --- names an emitted identifier must never take -------------------------------------
# WGSL keywords and reserved words, plus the predeclared names the emitted code calls
# (a module-scope declaration would shadow them) and the emitter's own fixed names.
_RESERVED_WORDS = """
alias break case const const_assert continue continuing default diagnostic discard else
enable false fn for if let loop override requires return struct switch true var while
NULL Self abstract active alignas alignof as asm asm_fragment async attribute auto await
become binding_array cast catch class co_await co_return co_yield coherent column_major
common compile compile_fragment concept const_cast consteval constexpr constinit crate
debugger decltype delete demote demote_to_helper do dynamic_cast enum explicit export
extends extern external fallthrough filter final finally friend from fxgroup get goto
groupshared highp impl implements import inline instanceof interface layout lowp macro
macro_rules match mediump meta mod module move mut mutable namespace new nil noexcept
noinline nointerpolation noperspective null nullptr of operator package packoffset
partition pass patch pixelfragment precise precision premerge priv protected pub public
readonly ref regardless register reinterpret_cast require resource restrict self set
shared sizeof smooth snorm static static_assert static_cast std subroutine super target
template this thread_local throw trait try type typedef typeid typename typeof union
unless unorm unsafe unsized use using varying virtual volatile wgsl where with writeonly
yield
bool f16 f32 i32 u32 vec2 vec3 vec4 mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 mat4x2
mat4x3 mat4x4 array atomic ptr sampler sampler_comparison read write read_write function
private workgroup uniform storage
abs acos asin atan ceil clamp cos cosh countLeadingZeros countOneBits countTrailingZeros
exp exp2 floor fma inverseSqrt log log2 max min reverseBits round select sign sin sinh
sqrt tan tanh trunc bitcast arrayLength atomicLoad atomicStore atomicAdd atomicOr
atomicAnd atomicXor atomicMin atomicMax atomicExchange atomicCompareExchangeWeak
workgroupBarrier storageBarrier
main params Params gid lid wid nwg
"""
RESERVED = frozenset(_RESERVED_WORDS.split())
