"""Numpy references and input generators for every kernel of the kernels/ tree.

`CASES` is a table of `KernelCase`: which file and stem (``"add.f32"``) it covers, a
generator that builds every argument of one call from a seeded `numpy.random.Generator`
and a size, a reference that computes the expected contents of the buffers the kernel
writes, the sizes to test (including ones that are not multiples of the workgroup
size) and the tolerance, with the reason for it. Generators and references never touch
the compiler or a device, so other tests (bundles, benchmarks, the CLI) can import them.
Every case's outputs compare directly; kernels whose outputs depend on which invocation
wins a race (atomics.py) are checked by a dedicated test in test_kernels.py instead.
The generators of the 2-D/multi-step kernels live in reference_2d.py, those of the later
kernels (activations, keys, sort8, intops, stencil, atomics, trig, block_min_max,
gcd_prime) in reference_extra.py.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import reference_2d as grid2d
import reference_extra as extra

U32 = np.uint32
MASK32 = (1 << 32) - 1
# Element counts that straddle the common workgroup sizes (64, 128, 256).
SIZES_1D = (1, 255, 257, 1000)


@dataclass(frozen=True)
class KernelCase:
    """One kernel (or variant) with what it takes to check it against numpy.

    `inputs(rng, size)` returns every argument by binding name (arrays for buffers, an
    int length for a "w" buffer the runtime allocates, Python numbers for scalars);
    `reference(args)` returns the expected final contents of each written buffer, by
    name; `rtol`/`atol` of 0 mean an exact comparison; `tolerance_note` says why a float
    tolerance is what it is.
    """

    file: str
    stem: str
    inputs: Callable[[np.random.Generator, object], dict]
    reference: Callable[[dict], dict]
    sizes: tuple = SIZES_1D
    rtol: float = 0.0
    atol: float = 0.0
    tolerance_note: str = "exact (integer arithmetic)"


def _u32(rng, n):
    return rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(U32)


def _i32(rng, n):
    return rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64).astype(np.int32)


def _f32(rng, n, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=n).astype(np.float32)


def pack_bytes(data: bytes) -> np.ndarray:
    """Bytes packed 4 per u32 little-endian, the tail padded with 0xAB (never counted)."""
    padded = data + b"\xab" * (-len(data) % 4 or (4 if not data else 0))
    return np.frombuffer(padded, dtype="<u4").astype(U32)


# ---- elementwise -------------------------------------------------------------------


def _saxpy_inputs(rng, n):
    return {"x": _f32(rng, n), "y": _f32(rng, n), "a": 2.5}


def _saxpy_ref(args):
    return {"y": np.float32(args["a"]) * args["x"] + args["y"]}


_ADD_GEN = {"f32": lambda rng, n: _f32(rng, n, -100.0, 100.0), "i32": _i32, "u32": _u32}


def _add_inputs(dtype):
    def make(rng, n):
        gen = _ADD_GEN[dtype]
        return {"a": gen(rng, n), "b": gen(rng, n), "out": n}

    return make


def _add_ref(args):
    a, b = args["a"], args["b"]
    if a.dtype == np.float32:
        return {"out": a + b}
    # wrap through int64 so overflow is two's complement without numpy warnings
    return {"out": (a.astype(np.int64) + b.astype(np.int64)).astype(a.dtype)}


_UNARY = {
    # op: (input range, numpy function, rtol, atol, note)
    "sqrt": ((0.0, 100.0), np.sqrt, 1e-6, 1e-7, "sqrt within a few ulp"),
    "exp": ((-10.0, 10.0), np.exp, 2e-5, 1e-7, "Vulkan exp: 3 + 2|x| ulp, |x| <= 10"),
    "log": ((0.01, 100.0), np.log, 1e-5, 1e-5, "Vulkan log: 3 ulp, 2^-21 absolute near 1"),
    "sin": ((-np.pi, np.pi), np.sin, 0.0, 1e-3, "Vulkan sin: 2^-11 absolute on [-pi, pi]"),
}


def _unary_inputs(op):
    lo, hi = _UNARY[op][0]
    return lambda rng, n: {"x": _f32(rng, n, lo, hi), "out": n}


def _unary_ref(op):
    fn = _UNARY[op][1]
    return lambda args: {"out": fn(args["x"].astype(np.float64)).astype(np.float32)}


def _mix_inputs(rng, n):
    return {"a": _f32(rng, n, -4.0, 4.0), "b": _f32(rng, n, -4.0, 4.0), "out": n, "k": 0.75}


def _mix_ref(args):
    x, y = args["a"].astype(np.float64), args["b"].astype(np.float64)
    # a product of two f32 is exact in f64, so this rounds like a fused multiply-add
    m = (x * np.float32(args["k"]) + y).astype(np.float32).astype(np.float64)
    c = np.clip(m, -2.0, 2.0)
    edge = np.where(c >= 0.0, np.ceil(np.maximum(x, y)), np.floor(np.minimum(x, y)))
    return {"out": (c + edge + np.abs(x - y)).astype(np.float32)}


# ---- reductions, scan, histogram ---------------------------------------------------------


def _reduce_inputs(dtype):
    def make(rng, n):
        x = _u32(rng, n) if dtype == "u32" else _i32(rng, n)
        # a nonzero start value checks that the kernel adds into out[0] ("rw")
        return {"x": x, "out": np.array([7], dtype=x.dtype)}

    return make


def _reduce_ref(args):
    x, out = args["x"], args["out"]
    total = int(x.astype(np.int64).sum()) + int(out[0])
    return {"out": np.array([total & MASK32], dtype=np.uint64).astype(U32).view(x.dtype)}


def _reduce_f32_inputs(rng, n):
    return {"x": _f32(rng, n), "partials": -(-n // 256)}


def reduce_f32_partials(x: np.ndarray, block: int = 256) -> np.ndarray:
    """Per-block sums (computed in f64, rounded to f32): the kernel's output."""
    padded = np.zeros(-(-x.size // block) * block, dtype=np.float64)
    padded[: x.size] = x
    return padded.reshape(-1, block).sum(axis=1).astype(np.float32)


def _scan_inputs(rng, n):
    return {"x": _u32(rng, n), "out": n}


def _scan_ref(args, block=256):
    x = args["x"]
    padded = np.zeros(-(-x.size // block) * block, dtype=np.uint64)
    padded[: x.size] = x
    sums = np.cumsum(padded.reshape(-1, block), axis=1) & MASK32
    return {"out": sums.reshape(-1)[: x.size].astype(U32)}


def _hist_inputs(rng, n):
    data = rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()
    return {"words": pack_bytes(data), "bins": np.zeros(256, dtype=U32), "n": n}


def _hist_ref(args):
    data = args["words"].astype("<u4").tobytes()[: args["n"]]
    counts = np.bincount(np.frombuffer(data, dtype=np.uint8), minlength=256)
    return {"bins": (args["bins"].astype(np.int64) + counts).astype(U32)}


# ---- hashes ---------------------------------------------------------------------------


def _strings_inputs(rng, count):
    """`count` random byte strings (lengths 0..40, some gaps between them), packed."""
    lengths = rng.integers(0, 41, size=count)
    gaps = rng.integers(0, 3, size=count)
    offsets, pos = [], 0
    for length, gap in zip(lengths, gaps):
        pos += int(gap)
        offsets.append(pos)
        pos += int(length)
    blob = rng.integers(0, 256, size=max(pos, 1), dtype=np.uint8).tobytes()
    return {
        "data": pack_bytes(blob),
        "offsets": np.array(offsets, dtype=U32),
        "lengths": lengths.astype(U32),
        "out": count,
    }


def strings_of(args) -> list[bytes]:
    """The byte strings a fnv1a/crc32 argument set describes."""
    blob = args["data"].astype("<u4").tobytes()
    return [blob[o : o + n] for o, n in zip(args["offsets"].tolist(), args["lengths"].tolist())]


def fnv1a_32(data: bytes) -> int:
    """32-bit FNV-1a (offset basis 2166136261, prime 16777619)."""
    h = 2166136261
    for byte in data:
        h = ((h ^ byte) * 16777619) & MASK32
    return h


def _fnv_ref(args):
    return {"out": np.array([fnv1a_32(s) for s in strings_of(args)], dtype=U32)}


def _crc_ref(args):
    return {"out": np.array([zlib.crc32(s) for s in strings_of(args)], dtype=U32)}


def fmix32(x: np.ndarray) -> np.ndarray:
    """murmur3's 32-bit finaliser over a u32 array (common.hash_u32)."""
    h = x.astype(np.uint64)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK32
    h ^= h >> 16
    return h.astype(U32)


def rotl32(x: np.ndarray, n: int) -> np.ndarray:
    x, n = x.astype(np.uint64), n & 31
    return (((x << n) | (x >> ((32 - n) & 31))) & MASK32).astype(U32) if n else x.astype(U32)


def rotr32(x: np.ndarray, n: int) -> np.ndarray:
    return rotl32(x, (32 - (n & 31)) & 31)


def _hash_fill_inputs(rng, n):
    return {"out": n, "seed": 0x1234ABCD}


def _hash_fill_ref(args):
    n = args["out"]
    return {"out": fmix32(np.arange(n, dtype=U32) ^ U32(args["seed"]))}


def _blend_inputs(rng, n):
    return {
        "a": _f32(rng, n, -10.0, 10.0),
        "b": _f32(rng, n, -10.0, 10.0),
        "keys": _u32(rng, n),
        "mixed": n,
        "hashed": n,
        "t": 0.3,
        "bias": -5,
    }


def _blend_ref(args):
    a, b, t = args["a"], args["b"], np.float32(args["t"])
    h = fmix32(args["keys"] ^ U32(0x9E3779B9))
    mixed = (rotl32(h, 7) ^ h).astype(np.int64) + args["bias"]
    return {"mixed": a + (b - a) * t, "hashed": (mixed & MASK32).astype(U32)}


# ---- bits ---------------------------------------------------------------------------


def _bitset_inputs(rng, n):
    return {"a": _u32(rng, n), "b": _u32(rng, n), "counts": n, "total": np.zeros(1, dtype=U32)}


def _bitset_ref(args):
    counts = np.bitwise_count(args["a"] & ~args["b"]).astype(U32)
    return {"counts": counts, "total": np.array([int(counts.sum()) & MASK32], dtype=U32)}


def _bit_ops_inputs(rng, n):
    x = _u32(rng, n)
    # zeros and single bits are the edge cases of clz/ctz
    specials = np.array([0, 1, 0x80000000, MASK32, 0x00010000], dtype=U32)
    x[: min(n, specials.size)] = specials[: min(n, specials.size)]
    # variable-magnitude values so clz spans its whole range
    x[specials.size :: 2] >>= x[specials.size :: 2] & 31
    return {"x": x, "lead": n, "trail": n, "rev": n, "rot": n, "s": 37}


def _clz32(x):
    out = np.full(x.shape, 32, dtype=U32)
    nz = x != 0
    # frexp's exponent is the bit length, exact for integers below 2**53
    out[nz] = (32 - np.frexp(x[nz].astype(np.float64))[1]).astype(U32)
    return out


def _ctz32(x):
    out = np.full(x.shape, 32, dtype=U32)
    nz = x != 0
    low = x[nz].astype(np.int64) & -x[nz].astype(np.int64)
    out[nz] = (np.frexp(low.astype(np.float64))[1] - 1).astype(U32)
    return out


def _reverse32(x):
    b = x.astype("<u4").view(np.uint8).reshape(-1, 4)
    rev = np.unpackbits(b, axis=1, bitorder="little")[:, ::-1]
    return np.packbits(rev, axis=1, bitorder="little").reshape(-1).view("<u4").astype(U32)


def _bit_ops_ref(args):
    x, s = args["x"], args["s"]
    return {
        "lead": _clz32(x),
        "trail": _ctz32(x),
        "rev": _reverse32(x),
        "rot": rotl32(x, s) ^ rotr32(x, s + 1),
    }


def _unary_case(op):
    _, _, rtol, atol, note = _UNARY[op]
    return KernelCase(
        "math.py",
        f"unary.{op}",
        _unary_inputs(op),
        _unary_ref(op),
        rtol=rtol,
        atol=atol,
        tolerance_note=note,
    )


CASES: tuple[KernelCase, ...] = (
    KernelCase(
        "saxpy.py",
        "saxpy",
        _saxpy_inputs,
        _saxpy_ref,
        rtol=1e-5,
        atol=1e-6,
        tolerance_note="one multiply and one add (a backend may fuse them)",
    ),
    KernelCase(
        "add.py",
        "add.f32",
        _add_inputs("f32"),
        _add_ref,
        rtol=1e-6,
        atol=0.0,
        tolerance_note="one correctly rounded add",
    ),
    KernelCase("add.py", "add.i32", _add_inputs("i32"), _add_ref),
    KernelCase("add.py", "add.u32", _add_inputs("u32"), _add_ref),
    *(_unary_case(op) for op in _UNARY),
    KernelCase(
        "math.py",
        "mix_math",
        _mix_inputs,
        _mix_ref,
        rtol=1e-5,
        atol=1e-5,
        tolerance_note="fma may or may not round once; floor/ceil/clamp exact",
    ),
    KernelCase(
        "reduce.py", "reduce_sum.u32", _reduce_inputs("u32"), _reduce_ref, sizes=SIZES_1D + (5000,)
    ),
    KernelCase(
        "reduce.py", "reduce_sum.i32", _reduce_inputs("i32"), _reduce_ref, sizes=SIZES_1D + (5000,)
    ),
    KernelCase(
        "reduce.py",
        "reduce_sum_f32",
        _reduce_f32_inputs,
        lambda args: {"partials": reduce_f32_partials(args["x"])},
        rtol=1e-5,
        atol=2e-5,
        tolerance_note="256-term f32 tree sum of values in [-1, 1] vs an f64 sum",
    ),
    KernelCase("scan.py", "scan_inclusive", _scan_inputs, _scan_ref),
    KernelCase(
        "histogram.py", "histogram", _hist_inputs, _hist_ref, sizes=(1, 3, 255, 257, 1000, 4099)
    ),
    KernelCase("fnv1a.py", "fnv1a", _strings_inputs, _fnv_ref, sizes=(1, 63, 65, 200)),
    KernelCase("crc32.py", "crc32", _strings_inputs, _crc_ref, sizes=(1, 63, 65, 200)),
    KernelCase("common.py", "hash_fill", _hash_fill_inputs, _hash_fill_ref),
    KernelCase(
        "blend.py",
        "blend",
        _blend_inputs,
        _blend_ref,
        rtol=1e-5,
        atol=1e-5,
        tolerance_note="lerp is a sub, a mul and an add (a backend may fuse)",
    ),
    KernelCase("bitset.py", "andnot_popcount", _bitset_inputs, _bitset_ref),
    KernelCase("bitset.py", "bit_ops", _bit_ops_inputs, _bit_ops_ref),
    KernelCase(
        "transpose.py",
        "transpose",
        grid2d.transpose_inputs,
        grid2d.transpose_ref,
        sizes=((1, 1), (1, 37), (17, 33), (40, 25), (64, 48)),
    ),
    KernelCase(
        "matmul.py",
        "matmul",
        grid2d.matmul_inputs,
        grid2d.matmul_ref,
        sizes=((1, 1, 1), (17, 19, 23), (33, 16, 40), (64, 64, 64)),
        rtol=1e-4,
        atol=1e-5,
        tolerance_note="K-term f32 dot products vs f64",
    ),
    KernelCase(
        "softmax.py",
        "softmax",
        grid2d.softmax_inputs,
        grid2d.softmax_ref,
        sizes=((1, 1), (3, 63), (5, 257), (2, 1000)),
        rtol=1e-4,
        atol=1e-6,
        tolerance_note="backend exp (a few ulp) and an f32 sum of up to 1000 terms",
    ),
    KernelCase("bitonic.py", "bitonic_step", grid2d.bitonic_inputs, grid2d.bitonic_ref),
    KernelCase(
        "activations.py",
        "gelu",
        extra.activation_inputs,
        extra.gelu_ref,
        rtol=1e-5,
        atol=1e-5,
        tolerance_note="backend tanh (built from exp) on [-6, 6]",
    ),
    KernelCase(
        "activations.py",
        "sigmoid",
        extra.activation_inputs,
        extra.sigmoid_ref,
        rtol=1e-5,
        atol=1e-6,
        tolerance_note="backend exp: 3 + 2|x| ulp, |x| <= 6",
    ),
    KernelCase(
        "activations.py",
        "float_ops",
        extra.float_ops_inputs,
        extra.float_ops_ref,
        rtol=1e-5,
        atol=0.0,
        tolerance_note="round/trunc/sign/classes exact; rsqrt 2 ulp, exp2(log2) few ulp",
    ),
    KernelCase("keys.py", "float_key", extra.float_key_inputs, extra.float_key_ref),
    KernelCase("keys.py", "float_from_key", extra.float_from_key_inputs, extra.float_from_key_ref),
    KernelCase("intops.py", "int_ops.i32", extra.int_ops_inputs("i32"), extra.int_ops_ref),
    KernelCase("intops.py", "int_ops.u32", extra.int_ops_inputs("u32"), extra.int_ops_ref),
    KernelCase("intops.py", "float_to_int", extra.float_to_int_inputs, extra.float_to_int_ref),
    KernelCase(
        "stencil.py",
        "laplacian3d",
        extra.laplacian_inputs,
        extra.laplacian_ref,
        sizes=((1, 1, 1), (5, 3, 2), (9, 6, 7), (16, 8, 4)),
        rtol=1e-5,
        atol=1e-6,
        tolerance_note="seven f32 adds in the kernel's order vs an f64 sum",
    ),
    KernelCase(
        "math.py",
        "trig",
        extra.trig_inputs,
        extra.trig_ref,
        rtol=1e-5,
        atol=2e-3,
        tolerance_note="Vulkan sin/cos: 2^-11 absolute on [-pi, pi], times radius <= 10",
    ),
    KernelCase("reduce.py", "block_min_max", extra.block_min_max_inputs, extra.block_min_max_ref),
    KernelCase("numtheory.py", "gcd_prime", extra.gcd_prime_inputs, extra.gcd_prime_ref),
    KernelCase(
        "sort8.py",
        "sort_chunks",
        extra.sort_chunks_inputs,
        extra.sort_chunks_ref,
        sizes=(1, 7, 9, 255, 2051, 5000),
    ),
)


def case(stem: str) -> KernelCase:
    """The case for one stem; KeyError names the known stems."""
    for c in CASES:
        if c.stem == stem:
            return c
    raise KeyError(f"no reference for {stem!r}; known: {', '.join(c.stem for c in CASES)}")


# --- vector kernels (kernels/vector.py): vec4 buffers are float32/uint32 arrays of shape (n, 4)


def _vec(rng, n, count, kind="f32"):
    flat = {"f32": _f32, "u32": _u32, "i32": _i32}[kind](rng, n * count)
    return flat.reshape(n, count)


def _saxpy4_inputs(rng, n):
    return {"x": _vec(rng, n, 4), "y": _vec(rng, n, 4), "a": float(rng.uniform(-2, 2))}


def _add4_inputs(rng, n):
    return {"a": _vec(rng, n, 4), "b": _vec(rng, n, 4), "out": n}


def _shuffle_mix_inputs(rng, n):
    w = rng.integers(-400, 400, size=(n, 2)).astype(np.int32)
    return {
        "v": _vec(rng, n, 4, "u32"),
        "w": w,
        "out": n,
        "sums": n,
        "k": int(rng.integers(0, 1 << 32)),
    }


def _shuffle_mix_ref(args):
    q = args["v"].astype(np.uint64)
    mixed = ((q ^ q[:, ::-1]) * 3 + args["k"]) & MASK32
    masks = np.array([0xFFFF0000, 0x0000FFFF, 0xFF00FF00, 0x00FF00FF], dtype=np.uint64)
    f = args["w"].astype(np.float32) * np.float32(0.5) - np.array([1.0, -1.0], np.float32)
    g = np.clip(f, -100.0, 100.0)
    sums = g[:, 0] + np.abs(g[:, 1]) + np.maximum(args["w"], 0)[:, 0].astype(np.float32)
    return {"out": (mixed & masks).astype(U32), "sums": sums.astype(np.float32)}


VECTOR_CASES = (
    KernelCase(
        "vector.py",
        "saxpy4",
        _saxpy4_inputs,
        lambda a: {"y": (np.float32(a["a"]) * a["x"] + a["y"]).astype(np.float32)},
        rtol=1e-5,
        atol=1e-6,
        tolerance_note="fma rounds once; numpy rounds twice",
    ),
    KernelCase(
        "vector.py",
        "add4",
        _add4_inputs,
        lambda a: {"out": a["a"] + a["b"]},
        rtol=1e-6,
        tolerance_note="one correctly rounded add per component",
    ),
    KernelCase(
        "vector.py",
        "shuffle_mix",
        _shuffle_mix_inputs,
        _shuffle_mix_ref,
        rtol=1e-6,
        atol=1e-6,
        tolerance_note="integer parts exact; f32 sums of exact halves",
    ),
)
CASES = CASES + VECTOR_CASES
