"""`a if c else b` takes an operation both arms share out of the select (exactly: every op
is a pure function of its operands), so it runs once: the sigmoid's two divisions by 1 + e
become one. The results are the naive form's, bit for bit, on the reference."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.reference import execute

SRC = """
from vyre_build.lang import *

@kernel(workgroup_size=64)
def k(x: Buffer[f32], out: Buffer[f32, "w"], ints: Buffer[i32, "w"]):
    i = global_id().x
    v = x[i]
    e = exp(-abs(v))
    out[i] = 1.0 / (1.0 + e) if v >= 0.0 else e / (1.0 + e)
    n = i32(v * 100.0)
    ints[i] = (n - 7) >> 2 if n > 0 else (n - 7) >> 3
"""


def ops(desc, name):
    found = []

    def walk(body):
        for op in body.ops:
            if op.kind.name == "BinOpKind":
                found.append(op.kind.args[0].name)
        for child in body.children:
            walk(child)

    walk(desc.body)
    return found.count(name)


def test_a_shared_operation_runs_once_with_the_same_results(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(textwrap.dedent(SRC))
    (k,) = compile_file(str(path), targets=("kdesc", "wgsl", "spirv"))
    assert ops(k.descriptor, "Div") == 1 and ops(k.descriptor, "Shr") == 1
    x = np.r_[np.linspace(-30, 30, 301), [np.inf, -np.inf, np.nan, 0.0, -0.0]].astype(np.float32)
    n = len(x)
    got = execute(
        k.descriptor,
        {"x": x, "out": np.zeros(n, np.float32), "ints": np.zeros(n, np.int32)},
        {},
        (-(-n // 64), 1, 1),
    )
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(x))
        want = np.where(x >= 0, np.float32(1) / (np.float32(1) + e), e / (np.float32(1) + e))
    np.testing.assert_array_equal(got["out"], want.astype(np.float32))
    # f32 -> i32 truncates and saturates, NaN gives 0 (the pinned cast)
    big = np.nan_to_num((x * np.float32(100)).astype(np.float64), nan=0.0)
    m = np.trunc(big).clip(-(2**31), 2**31 - 1).astype(np.int64).astype(np.int32)
    np.testing.assert_array_equal(got["ints"], np.where(m > 0, (m - 7) >> 2, (m - 7) >> 3))


def test_a_constant_condition_picks_its_arm(tmp_path):
    path = tmp_path / "c.py"
    path.write_text(
        "from vyre_build.lang import *\n\nOP = 1\n\n@kernel(workgroup_size=64)\n"
        'def k(x: Buffer[f32], out: Buffer[f32, "w"]):\n'
        "    i = global_id().x\n"
        "    out[i] = x[i] + 1.0 if OP == 0 else min(x[i], 1.0)\n"
    )
    (k,) = compile_file(str(path), targets=("kdesc",))
    kinds = [op.kind.name for op in k.descriptor.body.ops]
    assert "Select" not in kinds and ops(k.descriptor, "Min") == 1 and ops(k.descriptor, "Add") == 0


@pytest.mark.parametrize(
    "cond, first",
    [
        ("OP == 1 and W == 2", True),
        ("OP == 1 and W == 3", False),
        ("OP == 0 or W == 2", True),
        ("OP == 0 or not W == 2", False),
        ("0 < OP < W", True),
        ("0 < W < OP", False),
    ],
)
def test_and_or_and_chains_of_constant_conditions_pick_their_arm(tmp_path, cond, first):
    path = tmp_path / "c.py"
    path.write_text(
        "from vyre_build.lang import *\n\nOP = 1\nW = 2\n\n@kernel(workgroup_size=64)\n"
        'def k(x: Buffer[f32], out: Buffer[f32, "w"]):\n'
        "    i = global_id().x\n"
        f"    out[i] = x[i] + 1.0 if {cond} else min(x[i], 1.0)\n"
    )
    (k,) = compile_file(str(path), targets=("kdesc",))
    kinds = [op.kind.name for op in k.descriptor.body.ops]
    assert "Select" not in kinds
    assert (ops(k.descriptor, "Add"), ops(k.descriptor, "Min")) == ((1, 0) if first else (0, 1))
