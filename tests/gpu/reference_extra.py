"""Numpy references for activations.py, keys.py, sort8.py and atomics.py.

Plain functions (generator `(rng, size) -> args`, reference `args -> expected outputs`);
tests/gpu/reference.py turns them into `KernelCase` rows. Kernels whose result depends on
which invocation wins a race (atomics' exchange and compare-exchange) are given a
canonical form here and checked by `check_atomic_stats`.
"""

from __future__ import annotations

import numpy as np

U32 = np.uint32
MASK32 = (1 << 32) - 1


def _f32(rng, n, lo, hi):
    return rng.uniform(lo, hi, size=n).astype(np.float32)


# ---- activations.py -------------------------------------------------------------------


def activation_inputs(rng, n):
    return {"x": _f32(rng, n, -6.0, 6.0), "out": n}


def gelu_ref(args):
    x = args["x"].astype(np.float64)
    inner = 0.7978845608028654 * (x + 0.044715 * x**3)
    return {"out": (0.5 * x * (1.0 + np.tanh(inner))).astype(np.float32)}


def sigmoid_ref(args):
    x = args["x"].astype(np.float64)
    return {"out": (1.0 / (1.0 + np.exp(-x))).astype(np.float32)}


FLOAT_OPS_OUTPUTS = ("rounded", "truncated", "signs", "inv_sqrt", "pow2", "classes")


def float_ops_inputs(rng, n):
    # +-0.5 ties are avoided: the language does not pin round()'s tie direction
    x = _f32(rng, n, -50.0, 50.0)
    x[np.abs(x - np.round(x)) == 0.5] += np.float32(0.25)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -3.7], dtype=np.float32)
    x[: min(n, specials.size)] = specials[: min(n, specials.size)]
    return {"x": x, **{name: n for name in FLOAT_OPS_OUTPUTS}}


def float_ops_ref(args):
    x = args["x"]
    finite = np.isfinite(x)
    classes = np.isnan(x).astype(U32) | (np.isinf(x).astype(U32) << 1) | (finite.astype(U32) << 2)
    xf = np.where(finite, x, 0.0).astype(np.float64)
    a = np.abs(xf) + 1.0

    def only_finite(values):
        # non-finite inputs return early; their outputs keep the runtime's zero fill
        return np.where(finite, values, 0.0).astype(np.float32)

    return {
        "rounded": only_finite(np.round(xf)),
        "truncated": only_finite(np.trunc(xf)),
        "signs": only_finite(np.sign(xf)),
        "inv_sqrt": only_finite(1.0 / np.sqrt(a)),
        "pow2": only_finite(a),
        "classes": classes.astype(U32),
    }


# ---- keys.py ------------------------------------------------------------------------


def float_key_inputs(rng, n):
    x = _f32(rng, n, -1e6, 1e6)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, -1e-40, 3.5], dtype=np.float32)
    x[: min(n, specials.size)] = specials[: min(n, specials.size)]
    return {"x": x, "keys": n}


def float_key_ref(args):
    bits = args["x"].view("<u4").astype(np.uint64)
    flip = np.where(bits >> 31 != 0, np.uint64(MASK32), np.uint64(0x80000000))
    return {"keys": (bits ^ flip).astype(U32)}


def float_from_key_inputs(rng, n):
    keys = float_key_ref(float_key_inputs(rng, n))["keys"]
    return {"keys": keys, "x": n}


def float_from_key_ref(args):
    k = args["keys"].astype(np.uint64)
    flip = np.where(k >> 31 != 0, np.uint64(0x80000000), np.uint64(MASK32))
    return {"x": (k ^ flip).astype("<u4").view(np.float32)}


# ---- sort8.py -----------------------------------------------------------------------


def sort_chunks_inputs(rng, n):
    data = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(U32)
    # repeated values and already-sorted runs are insertion sort's edge cases
    data[: n // 3] = data[: n // 3] % 5
    return {"data": data}


def sort_chunks_ref(args, chunk=8):
    data = args["data"].copy()
    for start in range(0, data.size, chunk):
        data[start : start + chunk] = np.sort(data[start : start + chunk])
    return {"data": data}


# ---- atomics.py ---------------------------------------------------------------------


def atomic_stats_inputs(rng, n):
    values = rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64).astype(np.int32)
    start = np.array([2**31 - 1, -(2**31), 0, 0], dtype=np.int32)
    bits = np.array([0, 0, MASK32, 0], dtype=U32)
    # twice as many slots as keys keeps every probe sequence short
    return {"values": values, "stats": start, "bits": bits, "slots": np.zeros(2 * n + 3, dtype=U32)}


def atomic_stats_ref(args):
    """The race-free outputs exactly; `slots` as its sorted content; bits[3] as 0 (the
    claimed key is any of 1..n, see check_atomic_stats)."""
    v = args["values"]
    u = v.view("<u4")
    total = (int(v.astype(np.int64).sum()) + 2**31) % 2**32 - 2**31
    stats = np.array(
        [
            min(v.min(), args["stats"][0]),
            max(v.max(), args["stats"][1]),
            total,
            -int((v < 0).sum()),
        ],
        dtype=np.int32,
    )
    bits = np.array(
        [
            np.bitwise_or.reduce(u),
            np.bitwise_xor.reduce(u),
            np.bitwise_and.reduce(u) & args["bits"][2],
            0,
        ],
        dtype=U32,
    )
    slots = np.zeros(args["slots"].size, dtype=U32)
    slots[-v.size :] = np.arange(1, v.size + 1, dtype=U32)
    return {"stats": stats, "bits": bits, "slots": slots}


def canonical_atomic_stats(args, got: dict) -> dict:
    """`got` in the form atomic_stats_ref returns: slots sorted and bits[3] zeroed, after
    checking that bits[3] holds one of the keys 1..n (AssertionError otherwise)."""
    bits = np.asarray(got["bits"]).copy()
    n = args["values"].size
    assert 1 <= int(bits[3]) <= n, f"atomic_exchange left {int(bits[3])}, not a key in 1..{n}"
    bits[3] = 0
    return {"stats": got["stats"], "bits": bits, "slots": np.sort(np.asarray(got["slots"]))}


# ---- intops.py ----------------------------------------------------------------------


def int_ops_inputs(dtype):
    def make(rng, n):
        if dtype == "i32":
            a = rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64)
            b = rng.integers(-9, 10, size=n, dtype=np.int64)  # many zeros and signs
            specials = [(-(1 << 31), -1), (-(1 << 31), 0), (-7, 2), (7, -2), (-7, -2)]
        else:
            a = rng.integers(0, 1 << 32, size=n, dtype=np.int64)
            b = rng.integers(0, 10, size=n, dtype=np.int64)
            specials = [(MASK32, 0), (MASK32, 1), (7, 2), (0, 0), (1 << 31, 3)]
        for k, (x, y) in enumerate(specials[:n]):
            a[k], b[k] = x, y
        cast = np.int32 if dtype == "i32" else U32
        return {
            "a": a.astype(cast),
            "b": b.astype(cast),
            "s": rng.integers(0, 70, size=n).astype(U32),
            "quot": n,
            "rem": n,
            "shl": n,
            "shr": n,
        }

    return make


def int_ops_ref(args):
    a, b, dtype = args["a"], args["b"], args["a"].dtype
    x, y = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(y == 0, 1, y)
    # truncating division; by zero gives the dividend, i32::MIN // -1 wraps to itself
    q = np.sign(x) * np.sign(safe) * (np.abs(x) // np.abs(safe))
    r = np.where(y == 0, 0, x - q * safe)
    q = np.where(y == 0, x, q)
    sh = args["s"].astype(np.int64) & 31

    def wrap(v):
        return (v & MASK32).astype(np.uint64).astype(U32).view(dtype)

    return {"quot": wrap(q), "rem": wrap(r), "shl": wrap(x << sh), "shr": a >> sh.astype(dtype)}


def float_to_int_inputs(rng, n):
    x = rng.uniform(-5e9, 5e9, size=n).astype(np.float32)
    x[1::3] = rng.uniform(-100, 100, size=x[1::3].size).astype(np.float32)
    specials = np.array(
        [
            np.nan,
            np.inf,
            -np.inf,
            2147483520.0,
            2147483648.0,
            4294967040.0,
            -0.9,
            0.9,
            -2147483648.0,
        ],
        dtype=np.float32,
    )
    x[: min(n, specials.size)] = specials[: min(n, specials.size)]
    return {"x": x, "as_i32": n, "as_u32": n}


def float_to_int_ref(args):
    x = np.nan_to_num(args["x"].astype(np.float64), nan=0.0, posinf=1e40, neginf=-1e40)
    t = np.trunc(x)
    return {
        "as_i32": np.clip(t, -(2.0**31), 2.0**31 - 1).astype(np.int32),
        "as_u32": np.clip(t, 0.0, 2.0**32 - 1).astype(U32),
    }


# ---- stencil.py ---------------------------------------------------------------------


def laplacian_inputs(rng, shape):
    nx, ny, nz = shape
    return {
        "v": _f32(rng, nx * ny * nz, -1.0, 1.0),
        "out": nx * ny * nz,
        "nx": nx,
        "ny": ny,
        "nz": nz,
    }


def laplacian_ref(args):
    nx, ny, nz = args["nx"], args["ny"], args["nz"]
    v = np.pad(args["v"].reshape(nz, ny, nx).astype(np.float64), 1)
    c = v[1:-1, 1:-1, 1:-1]
    acc = (
        -6.0 * c
        + v[1:-1, 1:-1, :-2]
        + v[1:-1, 1:-1, 2:]
        + v[1:-1, :-2, 1:-1]
        + v[1:-1, 2:, 1:-1]
        + v[:-2, 1:-1, 1:-1]
        + v[2:, 1:-1, 1:-1]
    )
    return {"out": acc.astype(np.float32).reshape(-1)}


# ---- math.py trig, reduce.py block_min_max, numtheory.py ---------------------------------


def trig_inputs(rng, n):
    # tan stays away from its poles at +-pi/2
    return {
        "angle": _f32(rng, n, -1.2, 1.2),
        "radius": _f32(rng, n, 0.0, 10.0),
        "px": n,
        "py": n,
        "slope": n,
    }


def trig_ref(args):
    t, r = args["angle"].astype(np.float64), args["radius"].astype(np.float64)
    return {
        "px": (r * np.cos(t)).astype(np.float32),
        "py": (r * np.sin(t)).astype(np.float32),
        "slope": np.tan(t).astype(np.float32),
    }


def block_min_max_inputs(rng, n):
    return {
        "x": rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64).astype(np.int32),
        "mins": -(-n // 256),
        "maxs": -(-n // 256),
    }


def block_min_max_ref(args, block=256):
    x = args["x"]
    starts = range(0, x.size, block)
    return {
        "mins": np.array([x[s : s + block].min() for s in starts], dtype=np.int32),
        "maxs": np.array([x[s : s + block].max() for s in starts], dtype=np.int32),
    }


def gcd_prime_inputs(rng, n):
    a = rng.integers(0, 5000, size=n).astype(U32)
    b = rng.integers(0, 5000, size=n).astype(U32)
    # shared factors make gcds other than 1 common; zeros and large primes are edge cases
    b[::2] = (b[::2] % 50) * (a[::2] % 97 + 1)
    specials = [(0, 0), (0, 12), (12, 0), (1, 1), (2, 4), (4294967291, 7), (65521, 65521)]
    for k, (x, y) in enumerate(specials[:n]):
        a[k], b[k] = x, y
    return {"a": a, "b": b, "g": n, "prime": n}


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def gcd_prime_ref(args):
    a, b = args["a"].astype(np.int64), args["b"].astype(np.int64)
    return {
        "g": np.gcd(a, b).astype(U32),
        "prime": np.array([_is_prime(int(v)) for v in a], dtype=U32),
    }
