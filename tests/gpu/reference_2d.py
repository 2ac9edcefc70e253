"""Numpy references for the 2-D and multi-step kernels: transpose, matmul, softmax,
bitonic_step (and the full sort schedule) and mandelbrot.

Plain functions (generator `(rng, size) -> args`, reference `args -> expected outputs`);
tests/gpu/reference.py turns them into `KernelCase` rows.
"""

from __future__ import annotations

import numpy as np

U32 = np.uint32


def _f32(rng, n, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=n).astype(np.float32)


def _i32(rng, n):
    return rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64).astype(np.int32)


def transpose_inputs(rng, shape):
    rows, cols = shape
    return {"src": _f32(rng, rows * cols), "dst": rows * cols, "rows": rows, "cols": cols}


def transpose_ref(args):
    src = args["src"].reshape(args["rows"], args["cols"])
    return {"dst": np.ascontiguousarray(src.T).reshape(-1)}


def matmul_inputs(rng, shape):
    m, n, k = shape
    return {"a": _f32(rng, m * k), "b": _f32(rng, k * n), "c": m * n, "M": m, "N": n, "K": k}


def matmul_ref(args):
    m, n, k = args["M"], args["N"], args["K"]
    a = args["a"].reshape(m, k).astype(np.float64)
    b = args["b"].reshape(k, n).astype(np.float64)
    return {"c": (a @ b).astype(np.float32).reshape(-1)}


def softmax_inputs(rng, shape):
    rows, cols = shape
    return {"x": _f32(rng, rows * cols, -8.0, 8.0), "out": rows * cols, "rows": rows, "cols": cols}


def softmax_ref(args):
    x = args["x"].reshape(args["rows"], args["cols"]).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out": (e / e.sum(axis=1, keepdims=True)).astype(np.float32).reshape(-1)}


def bitonic_step_ref(data: np.ndarray, j: int, k: int) -> np.ndarray:
    """One compare-exchange step of bitonic sort (the kernel's semantics, any length)."""
    out = data.copy()
    i = np.arange(data.size, dtype=np.int64)
    partner = i ^ j
    lower = (partner > i) & (partner < data.size)
    i, partner = i[lower], partner[lower]
    a, b = data[i], data[partner]
    ascending = (i & k) == 0
    swap = np.where(ascending, a > b, a < b)
    out[i[swap]], out[partner[swap]] = b[swap], a[swap]
    return out


def bitonic_schedule(n: int) -> list[tuple[int, int]]:
    """The (j, k) steps that sort n (a power of two) elements ascending."""
    steps, k = [], 2
    while k <= n:
        j = k // 2
        while j > 0:
            steps.append((j, k))
            j //= 2
        k *= 2
    return steps


def bitonic_inputs(rng, n):
    return {"data": _i32(rng, n), "j": 4, "k": 16}


def bitonic_ref(args):
    return {"data": bitonic_step_ref(args["data"], args["j"], args["k"])}


MANDELBROT_VIEW = {"x0": -2.0, "y0": -1.25, "span": 2.5}


def mandel_inputs(rng, shape):
    width, height, max_iter = shape
    step = MANDELBROT_VIEW["span"] / max(width, height)
    return {
        "counts": width * height,
        "width": width,
        "height": height,
        "max_iter": max_iter,
        "x0": MANDELBROT_VIEW["x0"],
        "y0": MANDELBROT_VIEW["y0"],
        "step": step,
    }


def mandelbrot_ref(args) -> np.ndarray:
    """Escape counts with the kernel's f32 operation order (no fused multiply-add)."""
    w, h, f = args["width"], args["height"], np.float32
    px = np.arange(w, dtype=np.float32)[None, :]
    py = np.arange(h, dtype=np.float32)[:, None]
    cr = np.broadcast_to(f(args["x0"]) + px * f(args["step"]), (h, w))
    ci = np.broadcast_to(f(args["y0"]) + py * f(args["step"]), (h, w))
    zr = np.zeros((h, w), np.float32)
    zi = np.zeros((h, w), np.float32)
    n = np.zeros((h, w), U32)
    live = np.ones((h, w), bool)
    for _ in range(args["max_iter"]):
        zr2, zi2 = zr * zr, zi * zi
        live &= ~(zr2 + zi2 > f(4.0))
        zi = np.where(live, f(2.0) * zr * zi + ci, zi)
        zr = np.where(live, zr2 - zi2 + cr, zr)
        n += live
    return n.reshape(-1)
