"""A tunable test kernel with three candidates (one deliberately wrong) and its bundle,
for the tuning tests (tests/unit/test_tuning.py, tests/gpu/test_tuning_dispatch.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from vyre_build.bundle import write_bundle
from vyre_build.compiler import compile_file
from vyre_build.frontend.tuning_yaml import load_tuning

# y = a * x + OFF, written R times: `plain` and `twice` are right, `bad` adds 1.
KERNEL = textwrap.dedent("""\
    from vyre_build.lang import Buffer, f32, global_id, kernel


    @kernel(workgroup_size=64, variants={"plain": {"OFF": 0.0, "R": 1},
                                         "twice": {"OFF": 0.0, "R": 2},
                                         "bad": {"OFF": 1.0, "R": 1}})
    def scale(x: Buffer[f32], y: Buffer[f32, "w"], a: f32):
        i = global_id().x
        if i < len(y):
            for _ in range(R):
                y[i] = a * x[i] + OFF
    """)

TUNING = textwrap.dedent("""\
    scale:
      case:
        inputs:
          x: {shape: [4096], dtype: f32, fill: uniform}
          y: {shape: [4096], dtype: f32, fill: zeros}
          a: 2.0
        check: [y]
      candidates:
        plain: {kernel: scale.plain}
        twice: {kernel: scale.twice}
        bad: {kernel: scale.bad}
    """)


def tuning_bundle(tmp: Path, name: str = "t.vyrebundle", sign_key=None) -> Path:
    """Write the test tree into `tmp` and its bundle (with the tunable) to tmp/name."""
    (tmp / "scale.py").write_text(KERNEL)
    (tmp / "tuning.yaml").write_text(TUNING)
    entries = [
        {"meta": k.meta, "artifacts": {s: b for s, b in k.artifacts.items() if s != ".meta.json"}}
        for k in compile_file(str(tmp / "scale.py"))
    ]
    tunables = load_tuning("tuning.yaml", TUNING)
    path = tmp / name
    write_bundle(path, entries, sign_key=sign_key, tuning={"tunables": tunables, "records": []})
    return path
