"""The reference rules for the value ops: one numpy function per row of `descriptor.ops.OPS`.

A rule is `rule(args, types, result) -> array`: `args` are the operand arrays (shape
(lanes,) for scalars, (lanes, n) for vectors, possibly broadcast views), `types` their
value types, `result` the result type. bf16 values are their uint16 bit patterns
(`vyre_build.core.bfloat16`): only casts to and from f32 and selects touch them. Integer arithmetic is done on unsigned bit
patterns, so it wraps exactly as the pinned semantics say (numpy's signed overflow is not
relied on). Floats are IEEE f32 per op: numpy's float32 ufuncs round every result to f32.
Where GPUs may legitimately differ (see `vyre_build.reference` docs): fused multiply-add
(computed here in f64 then rounded once more to f32), transcendental ULPs, min/max of NaN.
"""

from __future__ import annotations

import numpy as np

from vyre_build.core import bfloat16
from vyre_build.descriptor.ops import OPS
from vyre_build.descriptor.types import SCALARS, TYPES

__all__ = ["RULES", "DTYPES", "dtype_of", "zeros"]

DTYPES = {s: np.dtype(TYPES[s].host) for s in SCALARS}  # the host column of the vocabulary
U32 = np.uint32
I32_MIN = np.int32(-(2**31))


def dtype_of(ty: str) -> np.dtype:
    return DTYPES[TYPES[ty].element]


def zeros(ty: str, lanes: int) -> np.ndarray:
    n = TYPES[ty].count
    return np.zeros((lanes,) if n == 1 else (lanes, n), dtype_of(ty))


def _u(x: np.ndarray) -> np.ndarray:
    """The u32 bit pattern of an i32/u32 array (a view)."""
    return x.view(U32) if x.dtype != U32 else x


def _as(bits: np.ndarray, ty: str) -> np.ndarray:
    return bits.view(dtype_of(ty))


def _wrap(fn):
    """An integer op computed on u32 bit patterns (wraps for i32 too)."""
    return lambda args, types, res: _as(fn(*(_u(np.asarray(a)) for a in args)), res)


def _popcount(x: np.ndarray) -> np.ndarray:
    x = _u(x).astype(U32)
    x = x - ((x >> U32(1)) & U32(0x55555555))
    x = (x & U32(0x33333333)) + ((x >> U32(2)) & U32(0x33333333))
    x = (x + (x >> U32(4))) & U32(0x0F0F0F0F)
    return (x * U32(0x01010101)) >> U32(24)


def _reverse(x: np.ndarray) -> np.ndarray:
    x = _u(x).astype(U32)
    for shift, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF)):
        x = ((x >> U32(shift)) & U32(mask)) | ((x & U32(mask)) << U32(shift))
    return (x >> U32(16)) | (x << U32(16))


def _highest_bit_plus_one(x: np.ndarray) -> np.ndarray:
    """floor(log2(x)) + 1 for u32 x, 0 for 0 (frexp is exact on f64 for 32-bit ints)."""
    return np.frexp(x.astype(np.float64))[1].astype(U32)


def _clz(x: np.ndarray) -> np.ndarray:
    return U32(32) - _highest_bit_plus_one(_u(x))


def _ctz(x: np.ndarray) -> np.ndarray:
    u = _u(x)
    low = u & (U32(0) - u)  # the lowest set bit alone
    return np.where(u == 0, U32(32), _highest_bit_plus_one(low) - U32(1)).astype(U32)


def _rotl(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    s = n & U32(31)
    return (x << s) | (x >> ((U32(32) - s) & U32(31)))


def _div_mod(name: str, a: np.ndarray, b: np.ndarray, ty: str) -> np.ndarray:
    # Pinned: x / 0 == x, x % 0 == 0, MIN / -1 == MIN, MIN % -1 == 0 (divide by 1 instead).
    if ty == "u32":
        d = np.where(b == 0, U32(1), b)
        return a // d if name == "Div" else a % d
    bad = (b == 0) | ((a == I32_MIN) & (b == -1))
    a64 = a.astype(np.int64)
    d64 = np.where(bad, 1, b).astype(np.int64)
    q = np.abs(a64) // np.abs(d64) * np.sign(a64) * np.sign(d64)  # truncates toward zero
    out = q if name == "Div" else a64 - q * d64
    return _as((out & 0xFFFFFFFF).astype(U32), "i32")


def _mul_high(a: np.ndarray, b: np.ndarray, ty: str) -> np.ndarray:
    wide = np.int64 if ty == "i32" else np.uint64
    p = a.astype(wide) * b.astype(wide)
    return _as(((p >> 32) & 0xFFFFFFFF).astype(U32), ty)


def _float_to_int(a: np.ndarray, target: str) -> np.ndarray:
    """Truncate toward zero, saturate, NaN -> 0 (the pinned cast)."""
    a64 = a.astype(np.float64)
    nan = np.isnan(a64)
    t = np.trunc(np.where(nan, 0.0, a64))
    if target == "i32":
        out = np.clip(t, -(2.0**31), 2.0**31 - 1).astype(np.int64)
    else:
        out = np.clip(t, 0.0, 2.0**32 - 1).astype(np.int64)
    return _as((out & 0xFFFFFFFF).astype(U32), target)


def _cast(a: np.ndarray, src: str, dst: str) -> np.ndarray:
    se, de = TYPES[src].element, TYPES[dst].element
    if se == de:
        return a
    if de == "bool":
        return a != 0  # f32: NaN -> true, -0.0 -> false
    if se == "bool":
        return a.astype(DTYPES[de])
    if {se, de} == {"i32", "u32"}:
        return a.view(DTYPES[de])
    if se == "bf16":  # bit patterns (uint16); to f32 only, exactly
        return bfloat16.to_f32(a)
    if de == "bf16":  # from f32 only: round to nearest, ties to even
        return bfloat16.from_f32(a)
    if de == "f32":
        return a.astype(np.float32)  # round to nearest even
    if de == "f16":  # through f32, as both GPU targets convert (f16 <- f32 <- integer)
        return a.astype(np.float32).astype(np.float16)
    return _float_to_int(a, de)


def _f(fn):
    return lambda args, types, res: fn(*args).astype(dtype_of(res), copy=False)


_CMP = {
    "Lt": np.less,
    "Gt": np.greater,
    "Le": np.less_equal,
    "Ge": np.greater_equal,
    "Eq": np.equal,
    "Ne": np.not_equal,
}
_FLOAT_MATH = {
    "Sqrt": np.sqrt,
    "Exp": np.exp,
    "Exp2": np.exp2,
    "Log": np.log,
    "Log2": np.log2,
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Tanh": np.tanh,
    "Acos": np.arccos,
    "Asin": np.arcsin,
    "Atan": np.arctan,
    "Sinh": np.sinh,
    "Cosh": np.cosh,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Round": np.rint,
    "Trunc": np.trunc,
    "Sign": np.sign,
    "Abs": np.abs,
    "InverseSqrt": lambda a: a.dtype.type(1) / np.sqrt(a),
    "Reciprocal": lambda a: a.dtype.type(1) / a,
}
_BITWISE = {"BitAnd": np.bitwise_and, "BitOr": np.bitwise_or, "BitXor": np.bitwise_xor}


def _binary(name: str, ty: str):  # noqa: C901 - one branch per op family
    kind = TYPES[ty].kind
    if name in _CMP:
        return lambda args, types, res: _CMP[name](args[0], args[1])
    if name in _BITWISE:
        fn = _BITWISE[name]
        return lambda args, types, res: fn(args[0], args[1])
    if name in ("And", "Or"):
        fn = np.logical_and if name == "And" else np.logical_or
        return lambda args, types, res: fn(args[0], args[1])
    if kind == "float":
        fns = {
            "Add": np.add,
            "Sub": np.subtract,
            "Mul": np.multiply,
            "Div": np.divide,
            "Mod": np.fmod,
            "Min": np.minimum,
            "Max": np.maximum,
            "AbsDiff": lambda a, b: np.abs(a - b),
        }
        return _f(fns[name])
    if name in ("Add", "WrappingAdd"):
        return _wrap(lambda a, b: a + b)
    if name in ("Sub", "WrappingSub"):
        return _wrap(lambda a, b: a - b)
    if name == "Mul":
        return _wrap(lambda a, b: a * b)
    if name in ("Min", "Max"):
        fn = np.minimum if name == "Min" else np.maximum
        return lambda args, types, res: fn(args[0], args[1])
    if name in ("Div", "Mod"):
        return lambda args, types, res: _div_mod(name, np.asarray(args[0]), np.asarray(args[1]), ty)
    if name == "MulHigh":
        return lambda args, types, res: _mul_high(args[0], args[1], ty)
    if name == "AbsDiff":
        return lambda args, types, res: _as(
            np.where(args[0] > args[1], _u(args[0]) - _u(args[1]), _u(args[1]) - _u(args[0])), ty
        )
    if name == "Shl":
        return lambda args, types, res: _as(_u(args[0]) << (args[1] & U32(31)), ty)
    if name == "Shr":  # arithmetic for i32 (numpy's >> on int32), logical for u32
        return lambda args, types, res: args[0] >> (args[1] & U32(31)).astype(dtype_of(ty))
    if name in ("RotateLeft", "RotateRight"):
        left = name == "RotateLeft"
        return lambda args, types, res: _as(
            _rotl(_u(args[0]), args[1] if left else U32(0) - args[1]), ty
        )
    return None


def _unary(name: str, ty: str):  # noqa: C901 - one branch per op family
    kind = TYPES[ty].kind
    if name in ("LogicalNot",) or (name == "BitNot" and kind == "bool"):
        return lambda args, types, res: np.logical_not(args[0])
    if kind == "float":
        if name == "Negate":
            return lambda args, types, res: np.negative(args[0])
        if name == "IsNan":
            return lambda args, types, res: np.isnan(args[0])
        if name == "IsInf":
            return lambda args, types, res: np.isinf(args[0])
        if name == "IsFinite":
            return lambda args, types, res: np.isfinite(args[0])
        return _f(_FLOAT_MATH[name])
    if name == "Negate":
        return _wrap(lambda a: U32(0) - a)
    if name == "BitNot":
        return lambda args, types, res: np.invert(args[0])
    if name == "Abs":
        if kind == "uint":
            return lambda args, types, res: args[0]
        return _wrap(lambda a: np.where(a >= U32(1 << 31), U32(0) - a, a))  # |MIN| == MIN
    if name == "Sign":
        return lambda args, types, res: np.sign(args[0]).astype(dtype_of(ty))
    if name == "Popcount":
        return lambda args, types, res: _as(_popcount(args[0]), ty)
    if name == "Clz":
        return lambda args, types, res: _as(_clz(args[0]), ty)
    if name == "Ctz":
        return lambda args, types, res: _as(_ctz(args[0]), ty)
    if name == "ReverseBits":
        return lambda args, types, res: _as(_reverse(args[0]), ty)
    return None


def _fma(args, types, res):
    a, b, c = (np.asarray(x, np.float64) for x in args)
    return (a * b + c).astype(dtype_of(res))


def _rule(row):
    (family, name), types = row
    if family == "BinOpKind":
        return _binary(name, types[0])
    if family == "UnOpKind":
        return _unary(name, types[0])
    if family == "Fma":
        return _fma
    if family == "Select":
        if TYPES[types[1]].count > 1:
            return lambda args, types, res: np.where(args[0][:, None], args[1], args[2])
        return lambda args, types, res: np.where(args[0], args[1], args[2])
    if family == "Cast":
        return lambda args, types, res: _cast(np.asarray(args[0]), types[0], res)
    if family == "Bitcast":
        return lambda args, types, res: np.asarray(args[0]).view(dtype_of(res))
    if family == "Construct":
        return lambda args, types, res: np.stack(np.broadcast_arrays(*args), axis=1)
    return None  # Extract, Atomic, Subgroup: the machine writes them (payload, memory, lanes)


RULES = {row: rule for row in OPS if (rule := _rule(row)) is not None}
