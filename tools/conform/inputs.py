"""Seeded inputs: buffer sizes around the invocation count and values with their edges.

Integers mix 0, 1, -1, i32 min/max, u32 max, powers of two and shift-sized values with
uniform 32-bit noise. "in" floats stay in [-4, 4] (uniform values, multiples of 1/8,
small integers, +-0); "edge" floats are NaNs of several payloads, +-inf, +-FLT_MAX, 1e30,
+-0, the smallest normal, denormals (unless --no-denormals) and a few ordinary values.
"""

from __future__ import annotations

import numpy as np

from .prog import host_dtype, lanes

INT_EDGE_BITS = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 2, 31, 32, 33, 0xFFFFFFFE, 0x10000, 255]
NAN_BITS = [0x7FC00000, 0x7F800001, 0xFFC00000, 0x7FFFFFFF]
EDGE_FLOATS = [np.inf, -np.inf, 3.4028235e38, -3.4028235e38, 1e30, -1e30, 0.0, -0.0]
EDGE_FLOATS += [1.1754944e-38, -1.1754944e-38, 1.0, -1.0, 2.5, -0.5]
DENORMALS = [1e-40, -1e-40, 1.4e-45, -5.877472e-39]
HALF_NAN_BITS = [0x7E00, 0x7C01, 0xFE00, 0x7FFF]
HALF_EDGES = [np.inf, -np.inf, 65504.0, -65504.0, 0.0, -0.0, 2.0**-14, -(2.0**-14), 1.0, -1.0]
HALF_EDGES += [2.5, -0.5]
HALF_DENORMALS = [2.0**-24, -(2.0**-24), 3 * 2.0**-20, -(2.0**-15)]


def int_values(rng, n: int, dtype) -> np.ndarray:
    noise = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    small = rng.integers(-8, 9, n).astype(np.int64).astype(np.uint32)
    edges = np.array(INT_EDGE_BITS, dtype=np.uint32)[rng.integers(0, len(INT_EDGE_BITS), n)]
    pick = rng.integers(0, 3, n)
    bits = np.where(pick == 0, noise, np.where(pick == 1, small, edges)).astype(np.uint32)
    return bits.view(dtype)


def small_floats(rng, n: int) -> np.ndarray:
    uniform = rng.uniform(-4, 4, n).astype(np.float32)
    eighths = (rng.integers(-32, 33, n) / 8).astype(np.float32)
    pick = rng.integers(0, 4, n)
    out = np.where(pick < 2, uniform, eighths)
    out[pick == 3] = np.float32(-0.0) if rng.random() < 0.5 else np.float32(0.0)
    return out.astype(np.float32)


def edge_floats(rng, n: int, denormals: bool) -> np.ndarray:
    pool = EDGE_FLOATS + (DENORMALS if denormals else [])
    values = np.array(pool, dtype=np.float32)[rng.integers(0, len(pool), n)]
    nans = np.array(NAN_BITS, dtype=np.uint32)[rng.integers(0, len(NAN_BITS), n)].view(np.float32)
    return np.where(rng.integers(0, 6, n) == 0, nans, values).astype(np.float32)


def half_values(rng, n: int, edge: bool, denormals: bool) -> np.ndarray:
    eighths = (rng.integers(-32, 33, n) / 8).astype(np.float16)
    if not edge:
        eighths[rng.integers(0, 5, n) == 0] = np.float16(-0.0)
        return eighths
    pool = HALF_EDGES + (HALF_DENORMALS if denormals else [])
    values = np.array(pool, dtype=np.float16)[rng.integers(0, len(pool), n)]
    nans = np.array(HALF_NAN_BITS, dtype=np.uint16)[rng.integers(0, 4, n)].view(np.float16)
    return np.where(rng.integers(0, 6, n) == 0, nans, values).astype(np.float16)


def values_for(rng, role: str, ty: str, count: int, denormals: bool) -> np.ndarray:
    n = count * lanes(ty)
    dtype = host_dtype(ty)
    if role in ("out", "chk"):
        return np.zeros(n, dtype=dtype)
    if dtype == np.float16:
        return half_values(rng, n, role == "edge", denormals)
    if dtype != np.float32:
        return int_values(rng, n, dtype)
    if role == "edge":
        return edge_floats(rng, n, denormals)
    return small_floats(rng, n)


def make_inputs(prog, bufs, scalars, r, opts) -> None:
    """Fill prog.inputs and prog.scalars (sizes drawn from `r`, values from a numpy rng)."""
    rng = np.random.default_rng(r.getrandbits(64))
    inv = prog.invocations
    if prog.default_grid:  # one length for every buffer, a multiple of 4: coarsenable
        length = 4 * r.randint(1, inv // 4 + 2)
        prog.groups = -(-length // prog.wg)
    for b in bufs:
        if prog.default_grid:
            count = length
        elif b.role == "chk":
            count = inv
        elif b.role == "accs":
            count = b.size
        elif b.role == "in" or b.role == "edge":
            count = r.choice([1, inv, inv + 5, max(1, inv - 3), r.randint(1, inv + 10)])
        else:
            count = max(1, inv + r.choice([-3, -1, 0, 0, 2, 5]))
        if b.ty == "f16" and count % 2:
            # wgpu binds whole 4-byte words: its len() of an odd-length f16 buffer counts
            # the padding (runtime/backends/wgpu/device.py _bind), Vulkan's and the reference's do not
            count += 1
        prog.inputs[b.name] = values_for(rng, b.role, b.ty, count, opts.denormals)
    for v in scalars:
        if v.kind == "bound":
            lo = -3 if v.ty == "i32" else 0
            prog.scalars[v.name] = r.randint(lo, 12)
        elif v.ty == "f32":
            pool = (
                small_floats(rng, 1) if v.kind == "fsmall" else edge_floats(rng, 1, opts.denormals)
            )
            prog.scalars[v.name] = float(pool[0])
        else:
            value = int(int_values(rng, 1, np.uint32)[0])
            prog.scalars[v.name] = value if v.ty == "u32" else value - (value >> 31 << 32)
