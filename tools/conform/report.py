"""The mismatch report: seed, finding, minimised source, inputs, differing values."""

from __future__ import annotations

import numpy as np


def show_array(a: np.ndarray, limit: int = 24) -> str:
    nz = (
        np.flatnonzero(a != 0)
        if a.dtype != np.float32
        else np.flatnonzero((a != 0) | np.signbit(a) | np.isnan(a))
    )
    if nz.size == 0:
        return f"{a.size} x {a.dtype} zeros"
    items = ", ".join(f"[{i}]={a[i]!r}" for i in nz[:limit])
    more = f", ... ({nz.size} nonzero)" if nz.size > limit else ""
    return f"{a.size} x {a.dtype}, nonzero: {items}{more}"


def report(prog, finding, original_seed: str, command: str) -> str:
    """A self-contained description of one finding on a (minimised) program."""
    lines = [
        f"=== {finding.headline()}",
        f"seed {original_seed}; rerun: {command}",
        f"workgroup_size {prog.wg}, {prog.groups} workgroup(s), {prog.invocations} invocations",
        "--- kernel source (minimised) ---",
        prog.source().rstrip(),
        "--- inputs ---",
    ]
    for name, arr in prog.inputs.items():
        lines.append(f"{name}: {show_array(arr)}")
    for name, value in prog.scalars.items():
        lines.append(f"{name} = {value!r}")
    lines.append("--- result ---")
    if finding.diffs:
        lines += [d.describe(finding.baseline, finding.backend) for d in finding.diffs]
    else:
        lines.append(finding.detail)
    return "\n".join(lines)
