"""Cooperative matrices on the reference machine (steps for `steps._compile`).

A matrix value is an array of shape (lanes, rows, cols): every invocation holds the whole
matrix its subgroup holds together (the invocations of a subgroup pass the same operands,
so their copies agree). Loads and stores follow the fragment rule of
`descriptor.matrices` per lane; a multiply-add rounds the f16 or bf16 inputs' exact
products and sums in f32 (float64 products of 16-bit values are exact; the sum is rounded once to f32,
then to the accumulator type). A GPU's tensor cores add in their own order and
precision: results differ by rounding, not meaning.
"""

from __future__ import annotations

import numpy as np

from vyre_build.core import bfloat16
from vyre_build.descriptor.matrices import alignment
from vyre_build.descriptor.types import MATRICES, TYPES
from vyre_build.reference.values import dtype_of

__all__ = ["step_load", "step_fill", "step_mma", "step_store", "CHUNK_LANES"]

CHUNK_LANES = 1 << 12  # lanes per pass when a kernel holds matrices: each is rows*cols values


def _places(mm, slot: int, offset, stride, ty: str):
    """(flat array, cells (lanes, rows, cols), lanes in place) of fragments of `ty`."""
    arr, base, n = mm.memory[slot]
    if arr.ndim == 2:  # a slot of vectors: its scalars, in order (a view, so stores land)
        comps = arr.shape[1]
        arr, n = arr.reshape(-1), n * comps
        base = None if base is None else base * comps
    _, rows, cols = MATRICES[ty]
    align = alignment(TYPES[ty].element, cols)
    off = np.asarray(offset, np.int64)
    st = np.asarray(stride, np.int64)
    last = off + (rows - 1) * st + cols  # int64: no u32 overflow to worry about
    ok = (off % align == 0) & (st % align == 0) & (st >= cols) & (last <= n)
    ok = np.broadcast_to(ok, (mm.lanes,))
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    cells = np.where(ok, off, 0)[..., None, None] + np.where(ok, st, 0)[..., None, None] * r + c
    cells = np.broadcast_to(cells, (mm.lanes, rows, cols))
    if base is not None:  # a shared array: this workgroup's row of it
        cells = cells + base[:, None, None]
    return arr, cells.astype(np.intp), ok


def step_load(m, op):
    slot, offset, stride = op.operands
    ty = m.info.types[op.result]

    def load(mm, mask):
        arr, cells, ok = _places(mm, slot, mm.vals[offset], mm.vals[stride], ty)
        return np.where(ok[:, None, None], arr[np.where(ok[:, None, None], cells, 0)], 0).astype(
            dtype_of(ty)
        )

    return load, op.result


def step_fill(m, op):
    (value,) = op.operands
    ty = m.info.types[op.result]
    _, rows, cols = MATRICES[ty]

    def fill(mm, mask):
        v = np.broadcast_to(np.asarray(mm.vals[value], dtype_of(ty)), (mm.lanes,))
        return np.broadcast_to(v[:, None, None], (mm.lanes, rows, cols))

    return fill, op.result


def step_mma(m, op):
    a, b, c = op.operands
    dt = dtype_of(m.info.types[op.result])
    # bf16 fragments hold bit patterns (reference.values): their values first, exactly
    wide = bfloat16.to_f32 if TYPES[m.info.types[a]].element == "bf16" else np.asarray

    def mma(mm, mask):
        pa, pb = (wide(mm.vals[x]).astype(np.float64) for x in (a, b))
        prod = np.matmul(pa, pb)
        return (prod + mm.vals[c].astype(np.float64)).astype(np.float32).astype(dt)

    return mma, op.result


def step_store(m, op):
    slot, offset, stride, value = op.operands
    ty = m.info.types[value]

    def store(mm, mask):
        arr, cells, ok = _places(mm, slot, mm.vals[offset], mm.vals[stride], ty)
        pick = mask & ok
        if pick.any():
            v = np.broadcast_to(mm.vals[value], cells.shape)
            arr[cells[pick]] = v[pick]
        return False

    return store, None
