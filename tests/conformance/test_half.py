"""The generator's f16 programs (tools/conform/gen_half.py): it makes them, their inputs are
f16, and a few of them agree on the reference, Vulkan and wgpu (lavapipe has f16)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

TOOLS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools"
)
sys.path.insert(0, TOOLS)

from adapters import require_adapter  # noqa: E402
from conform.check import evaluate  # noqa: E402
from conform.gen import Options, generate  # noqa: E402

CI = Options(max_depth=2, max_expr_depth=3, statements=6)


def half_programs(seed: int, count: int, limit: int = 400):
    found = []
    for i in range(limit):
        prog = generate(seed, i, CI)
        if any(p.ty in ("f16", "vec2h", "vec4h") for p in prog.params):
            found.append((i, prog))
            if len(found) == count:
                break
    return found


def test_the_generator_makes_f16_programs():
    progs = half_programs(31, 10, limit=150)
    assert len(progs) >= 8  # about one program in nine
    for _, prog in progs:
        src = prog.source()
        assert "f16" in src
        for p in prog.params:
            if p.kind == "buffer" and p.ty in ("f16", "vec2h", "vec4h"):
                arr = prog.inputs[p.name]
                assert arr.dtype == np.float16 and arr.size % 2 == 0
    text = "".join(p.source() for _, p in progs)
    for piece in ("vec2h(", "vec4h(", "f16(", "f32("):
        assert piece in text, piece
    # the programs without f16 are the ones the generator made before f16 came
    plain = generate(31, next(i for i in range(50) if i not in dict(progs)), CI)
    assert "f16" not in plain.source()


def test_no_denormals_means_no_f16_denormal_inputs():
    opts = Options(max_depth=2, max_expr_depth=3, statements=6, denormals=False)
    for i in range(200):
        prog = generate(5, i, opts)
        for arr in prog.inputs.values():
            if arr.dtype == np.float16:
                a = np.abs(arr[np.isfinite(arr)].astype(np.float32))
                assert not ((a > 0) & (a < 2.0**-14)).any()
        assert "5.960464477539063e-08" not in prog.source()


@pytest.mark.gpu
def test_f16_programs_agree_across_backends():
    require_adapter("wgpu")
    require_adapter("vulkan")
    os.environ.setdefault("MESA_SHADER_CACHE_DISABLE", "true")
    np.seterr(all="ignore")
    for i, prog in half_programs(31, 6, limit=200):
        outcome = evaluate(prog, ["reference", "vulkan", "wgpu", "wgpu-spirv"])
        assert outcome.findings == [], (i, [f.headline() for f in outcome.findings])
        assert "vulkan" in outcome.ran and "wgpu" in outcome.ran, (i, outcome.skipped)
