"""The reference's rules for a debug build's `vyre.debug.*` ops (docs/descriptor-conventions.md).

Each op appends, for every lane that reports, one record of u32 words to `Machine.debug`
(a list, or None when nobody reads them): `[site id, global id x, y, z, value bits...]`, the
words a GPU writes into the debug buffer, so `vyre_build.runtime.debug` reports both the
same way. A print reports from every live lane, an assert from the lanes whose condition is
false, a bounds op from the lanes whose index is at or past the slot's length (the access
itself still follows the pinned rule: 0 for a load, nothing for a store or atomic).
"""

from __future__ import annotations

import numpy as np

__all__ = ["step_debug", "words_of"]


def words_of(value: np.ndarray) -> np.ndarray:
    """The u32 bits a record holds for an i32/u32/f32/bool value (bool: 0 or 1)."""
    value = np.asarray(value)
    if value.dtype == np.bool_:
        return value.astype(np.uint32)
    return value.view(np.uint32) if value.dtype.itemsize == 4 else value.astype(np.uint32)


def _record(mm, site: int, report: np.ndarray, values) -> None:
    if mm.debug is None or not report.any():
        return
    lanes = np.nonzero(report)[0]
    gid = mm.builtins["GlobalInvocationId"]
    cols = [np.full(lanes.size, site, np.uint32)] + [g[lanes] for g in gid]
    cols += [words_of(np.broadcast_to(v, (mm.lanes,)))[lanes] for v in values]
    mm.debug.append(np.stack(cols, axis=1).astype(np.uint32))


def step_debug(m, op):
    """The step of one vyre.debug.print / .assert / .bounds op."""
    kind, site = op.name, op.site  # a descriptor.view Debug op
    ids = op.operands
    if kind == "vyre.debug.print":

        def debug_print(mm, mask):
            _record(mm, site, mask, [mm.vals[o] for o in ids])
            return False

        return debug_print, None
    if kind == "vyre.debug.assert":

        def debug_assert(mm, mask):
            _record(mm, site, mask & ~mm.vals[ids[0]], [mm.vals[o] for o in ids[1:]])
            return False

        return debug_assert, None
    slot, index = ids

    def debug_bounds(mm, mask):
        n = mm.memory[slot][2]
        idx = mm.vals[index]
        _record(mm, site, mask & (idx >= n), [idx, np.uint32(n)])
        return False

    return debug_bounds, None
