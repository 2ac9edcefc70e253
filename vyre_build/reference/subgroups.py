"""Subgroup operations of the reference machine: lanes grouped `size` at a time.

A workgroup's invocations, in local-index order, form subgroups of `size` consecutive
lanes (the last one shorter when the workgroup size is not a multiple). Only the lanes in
the op's mask take part, as on a GPU. Values are laid out as a (subgroups, size) grid
(padding where a subgroup is short), so every op is a few numpy calls.

Where a GPU's result is undefined the reference picks one and says so here: a shuffle or
broadcast from a lane outside the subgroup reads lane mod size (shuffle_up/down past an
edge wrap around, as lavapipe does), and one from an inactive lane reads its value anyway.
Float reductions add in numpy's order; a GPU's order differs (rounding, not meaning).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Subgroups"]

_IDENTITY = {
    "add": lambda dt: np.zeros((), dt),
    "min": lambda dt: np.array(np.inf if dt.kind == "f" else np.iinfo(dt).max, dt),
    "max": lambda dt: np.array(-np.inf if dt.kind == "f" else np.iinfo(dt).min, dt),
    "and": lambda dt: np.array(-1, np.int64).astype(dt),
    "or": lambda dt: np.zeros((), dt),
    "xor": lambda dt: np.zeros((), dt),
}
_REDUCE = {
    "min": np.minimum.reduce,
    "max": np.maximum.reduce,
    "and": np.bitwise_and.reduce,
    "or": np.bitwise_or.reduce,
    "xor": np.bitwise_xor.reduce,
}


class Subgroups:
    """The subgroup layout of one chunk: `lanes` lanes, `per` per workgroup, `size` per subgroup."""

    def __init__(self, lanes: int, per: int, size: int):
        self.size = size
        groups = lanes // per
        rows_per_group = -(-per // size)
        self.rows = groups * rows_per_group
        lane = np.arange(lanes)
        local = lane % per
        self.col = (local % size).astype(np.intp)  # the lane's index in its subgroup
        self.row = (lane // per * rows_per_group + local // size).astype(np.intp)
        self.lane_id = self.col.astype(np.uint32)
        self.subgroup_id = (local // size).astype(np.uint32)  # this subgroup of the workgroup
        self.count = np.uint32(rows_per_group)  # subgroups per workgroup (the last may be short)

    def grid(self, value: np.ndarray, fill, mask: np.ndarray) -> np.ndarray:
        """(rows, size[, n]) with each active lane's value at its place, `fill` elsewhere."""
        value = np.asarray(value)
        out = np.empty((self.rows, self.size) + value.shape[1:], value.dtype)
        out[...] = fill
        pick = mask
        out[self.row[pick], self.col[pick]] = np.broadcast_to(value, mask.shape + value.shape[1:])[
            pick
        ]
        return out

    def apply(self, name: str, args: list, mask: np.ndarray) -> np.ndarray:  # noqa: C901
        """The value of subgroup op `name` for every lane (inactive lanes: anything)."""
        lanes = mask.shape[0]
        if name == "elect":
            first = self._first_active(mask)
            return mask & (self.col == first[self.row])
        v = np.broadcast_to(np.asarray(args[0]), (lanes,) + np.shape(args[0])[1:])
        dt = v.dtype
        if name in ("add", "inclusive_add", "exclusive_add"):
            acc = np.uint32 if dt in (np.int32, np.uint32) else dt  # integers wrap
            g = self.grid(
                v.view(np.uint32) if acc is np.uint32 and dt == np.int32 else v,
                _IDENTITY["add"](dt),
                mask,
            )
            if name == "add":
                total = g.sum(axis=1, dtype=acc)
                return total[self.row].view(dt) if acc is np.uint32 else total[self.row].astype(dt)
            scan = np.cumsum(g, axis=1, dtype=acc)
            if name == "exclusive_add":
                scan = np.concatenate([np.zeros_like(scan[:, :1]), scan[:, :-1]], axis=1)
            got = scan[self.row, self.col]
            return got.view(dt) if acc is np.uint32 else got.astype(dt)
        if name in _REDUCE:
            g = self.grid(v, _IDENTITY[name](dt), mask)
            return _REDUCE[name](g, axis=1)[self.row]
        if name in ("all", "any"):
            g = self.grid(v, name == "all", mask)
            return (g.all(axis=1) if name == "all" else g.any(axis=1))[self.row]
        if name == "ballot":
            g = self.grid(v, False, mask)
            words = np.zeros((self.rows, 4), np.uint32)
            for j in range(min(self.size, 128)):
                words[:, j // 32] |= g[:, j].astype(np.uint32) << np.uint32(j % 32)
            return words[self.row]
        g = self.grid(v, np.zeros((), dt), np.ones(lanes, bool))  # every lane's own value
        if name == "broadcast_first":
            return g[self.row, self._first_active(mask)[self.row]]
        other = np.broadcast_to(np.asarray(args[1]), (lanes,)).astype(np.int64)
        col = self.col.astype(np.int64)
        src = {
            "broadcast": other,
            "shuffle": other,
            "shuffle_xor": col ^ other,
            "shuffle_up": col - other,
            "shuffle_down": col + other,
        }[name]
        return g[self.row, (src % self.size).astype(np.intp)]

    def _first_active(self, mask: np.ndarray) -> np.ndarray:
        """Per subgroup row, the index of its lowest active lane (0 if none is)."""
        g = self.grid(mask, False, np.ones(mask.shape[0], bool))
        return np.argmax(g, axis=1)
