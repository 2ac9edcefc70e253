"""Memory of the reference machine: where each slot's cells are, and loads and stores.

`slot_memory` lays out a chunk's memory (`Machine.memory`: slot -> (flat array, cell base
per lane or None, n)): storage buffers are the caller's arrays (stores and atomics write
them in place), shared arrays are (workgroups, N) per chunk, zeroed for each workgroup,
scratch is (lanes, N), zeroed; a vector slot holds (cells, n) and a matrix local (cells,
rows, cols). `cells` (`Machine.cells`) finds a lane's cell: an index past the slot's
length is clamped into it and flagged out of bounds, so that a load out of bounds gives 0
and a store out of bounds is dropped (`_step_load`, `_step_store`, the steps of Load /
Store and of vyre.atomic.load / .store: steps.py). A load or store at a literal index
finds its cells once, when the body is compiled; a scalar local (one Scratch element at
index 0) is then read and written as a whole array (on the root machine, not on a split
loop's subset).
"""

from __future__ import annotations

import numpy as np

from vyre_build.descriptor.types import TYPES
from vyre_build.reference.values import dtype_of

__all__ = ["cells", "slot_memory"]


def slot_memory(m, buffers: dict[int, np.ndarray], count: int) -> dict[int, tuple]:
    """Each slot's memory on machine `m`, a chunk of `count` workgroups (module docstring):
    slot -> (flat array, cell base per lane or None, n)."""
    desc, info, lanes = m.desc, m.info, m.lanes
    memory: dict[int, tuple] = {}
    for s in desc.slots:
        ty = info.slot_types[s.slot]
        comps = (TYPES[ty].count,) if TYPES[ty].count > 1 else ()
        if TYPES[ty].matrix is not None:  # a matrix local: (rows, cols) per lane
            comps = TYPES[ty].matrix[1:]
        if s.memory_class == "Global":
            arr = buffers[s.slot]
            memory[s.slot] = (arr, None, len(arr))
        elif s.memory_class in ("Shared", "Scratch"):
            n = s.element_count
            rows, base = (
                (count, m.group_in_chunk * n) if s.memory_class == "Shared" else (lanes, m.lane * n)
            )
            memory[s.slot] = (np.zeros((rows * n,) + comps, dtype_of(ty)), base, n)
    return memory


def cells(self, slot: int, index: np.ndarray):
    """(flat array, cell per lane clamped into the slot, in-bounds mask). `Machine.cells`:
    `self` is the machine."""
    arr, base, n = self.memory[slot]
    ok = index < n
    clamped = np.minimum(index, max(n - 1, 0)).astype(np.intp)
    return arr, clamped if base is None else base + clamped, ok


def _fixed_cells(m, slot: int, index: int):
    """Where a constant index lands: (flat array, cells, in-bounds mask), or None if the
    index is not a literal. A scalar local (one Scratch element at index 0) is the common case."""
    value = m.info.constants.get(index)
    if value is None:
        return None
    return m.cells(slot, np.full(m.lanes, value, np.uint32))


def _scratch(m, slot: int) -> bool:
    return m.slots[slot].memory_class == "Scratch"


def _step_load(m, op):
    slot, index = op.slot, op.element
    ty = m.info.types[op.result]
    arr, base, n = m.memory[slot]
    zero = np.zeros((), dtype_of(ty))
    if n == 0:
        zeros = m.full(np.zeros(arr.shape[1:], dtype_of(ty)))
        return (lambda mm, mask: zeros), op.result
    vector = TYPES[ty].count > 1
    fixed = _fixed_cells(m, slot, index)
    if fixed is not None:
        farr, fcell, fok = fixed
        if fok.all():
            if m.root_lanes is None and base is not None and n == 1 and _scratch(m, slot):
                return (lambda mm, mask: farr.copy()), op.result  # a scalar local
            return (lambda mm, mask: farr[fcell]), op.result
        value = m.full(np.zeros(arr.shape[1:], dtype_of(ty)))
        return (lambda mm, mask: value), op.result  # always out of bounds: 0

    def load(mm, mask):
        arr, cell, ok = mm.cells(slot, mm.vals[index])
        return np.where(ok[:, None] if vector else ok, arr[cell], zero)

    return load, op.result


def _step_store(m, op):
    slot, index, value = op.slot, op.element, op.value
    arr, base, n = m.memory[slot]
    shape = (m.lanes,) + arr.shape[1:]
    fixed = _fixed_cells(m, slot, index)
    if fixed is not None:
        farr, fcell, fok = fixed
        if not fok.any():
            return (lambda mm, mask: False), None  # always out of bounds: dropped
        if m.root_lanes is None and base is not None and n == 1 and _scratch(m, slot):
            where = (slice(None),) + (None,) * (farr.ndim - 1)

            def store_local(mm, mask):
                np.copyto(farr, mm.vals[value], where=mask[where])
                return False

            return store_local, None

        def store_fixed(mm, mask):
            farr[fcell[mask]] = np.broadcast_to(mm.vals[value], shape)[mask]
            return False

        return store_fixed, None

    def store(mm, mask):
        arr, cell, ok = mm.cells(slot, mm.vals[index])
        pick = mask & ok
        arr[cell[pick]] = np.broadcast_to(mm.vals[value], shape)[pick]
        return False

    return store, None
