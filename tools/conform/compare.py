"""Comparing two backends' buffers: integers bit for bit, floats (f32, f16) under floats.py's
policy (f16 values are always exact: gen_half.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FINAL_ULPS = 4  # slack for the last rounding of an inexact output


@dataclass
class Diff:
    buffer: str
    index: list  # flat indices that differ (the first few)
    left: list
    right: list
    count: int
    tol: float

    def describe(self, a: str, b: str) -> str:
        pairs = ", ".join(
            f"[{i}] {_show(x)} vs {_show(y)}" for i, x, y in zip(self.index, self.left, self.right)
        )
        bound = "bit for bit" if self.tol == 0 else f"tolerance {self.tol:.3g}"
        return f"{self.buffer}: {self.count} element(s) differ ({bound}), {a} vs {b}: {pairs}"


def _show(v) -> str:
    if isinstance(v, float):
        return f"{v!r} (0x{np.float32(v).view(np.uint32):08x})"
    return str(v)


def float_equal(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """Elementwise: equal up to +-0 and NaN payloads, or within tol + FINAL_ULPS ulp."""
    with np.errstate(invalid="ignore", over="ignore"):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        both_nan = np.isnan(a64) & np.isnan(b64)
        same = (a64 == b64) | both_nan  # -0 == +0
        if tol == 0:
            return same
        spacing = np.spacing(np.maximum(np.abs(a), np.abs(b)).astype(a.dtype)).astype(np.float64)
        close = np.abs(a64 - b64) <= tol + FINAL_ULPS * np.abs(spacing)
    return same | (close & np.isfinite(a64) & np.isfinite(b64))


def compare(left: dict, right: dict, written: list, tolerances: dict) -> list:
    """Diffs of the `written` buffers of two results (empty when they agree)."""
    diffs = []
    for name in written:
        a, b = left[name], right[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            diffs.append(Diff(name, [], [str(a.shape)], [str(b.shape)], 1, 0.0))
            continue
        tol = tolerances.get(name, 0.0)
        ok = float_equal(a, b, tol) if a.dtype.kind == "f" else a == b
        bad = np.flatnonzero(~ok)
        if bad.size:
            first = bad[:6]
            diffs.append(
                Diff(name, first.tolist(), a[first].tolist(), b[first].tolist(), int(bad.size), tol)
            )
    return diffs
