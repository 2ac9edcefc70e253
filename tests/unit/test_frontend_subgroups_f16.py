"""The subgroup builtins and f16 in the frontend: what compiles to what, and each refusal
with its exact message."""

from __future__ import annotations

import textwrap

import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelError

HEADER = (
    "from vyre_build.lang import *\n\n@kernel(workgroup_size=64)\n"
    'def k(x: Buffer[f32], h: Buffer[f16], out: Buffer[f32, "w"]):\n'
    "    i = global_id().x\n    v: f32 = 0.0\n"
)


def compile_body(tmp_path, body: str):
    path = tmp_path / "k.py"
    path.write_text(HEADER + textwrap.indent(textwrap.dedent(body), "    ") + "    out[i] = v\n")
    return compile_file(str(path), targets=("kdesc", "wgsl", "spirv"))


def refusal(tmp_path, body: str) -> KernelError:
    with pytest.raises(KernelError) as info:
        compile_body(tmp_path, body)
    return info.value


@pytest.mark.parametrize(
    "body, message, fix",
    [
        (
            "v = subgroup_broadcast(x[i], i)\n",
            "subgroup_broadcast() needs a constant lane",
            "use subgroup_shuffle(v, lane) for a lane computed at run time",
        ),
        (
            "v = subgroup_and(x[i])\n",
            "subgroup_and() needs an i32 or u32 (or a vector of them), got f32",
            "convert it first, e.g. u32(x)",
        ),
        (
            "v = f32(subgroup_add(h[i]))\n",
            "subgroup_add() needs an i32, u32 or f32 (or a vector of them), got f16",
            "convert it first, e.g. f32(x)",
        ),
        (
            "v = f32(subgroup_max(x[i] > 0.0))\n",
            "subgroup_max() needs an i32, u32 or f32 (or a vector of them), got bool",
            "use subgroup_all / subgroup_any for bools",
        ),
        (
            "v = f32(bitcast(u32, h[i]))\n",
            "cannot bitcast an f16",
            "bitcast 32-bit scalars: i32, u32, f32",
        ),
        (
            "v = f32(h[i] % f16(2.0))\n",
            "'%' on f16 is not supported",
            "write x - y * floor(x / y)",
        ),
        (
            "v = f32(h[i] * 70000.0)\n",
            "constant 70000.0 does not fit in f16 (largest is 65504)",
            "use a smaller value, or compute in f32",
        ),
    ],
)
def test_refusals(tmp_path, body, message, fix):
    e = refusal(tmp_path, body)
    assert (e.message, e.fix) == (message, fix)


def test_subgroup_ops_only_in_uniform_control_flow(tmp_path):
    e = refusal(tmp_path, "if i < 3:\n    v = subgroup_add(x[i])\n")
    assert e.line == 8 and e.source_line.strip() == "v = subgroup_add(x[i])"
    assert e.message == (
        "subgroup_add() is in non-uniform control flow: the condition at "
        f"{tmp_path / 'k.py'}:7:5 (`if i < 3:`) depends on global_id(), so some "
        "invocations of the subgroup may not reach it"
    )
    assert e.fix == (
        "guard the work, not the subgroup operation: move the subgroup operation out of the "
        "branch so every invocation of the subgroup reaches it (scalars, constants, len(buf), "
        "workgroup_id(), num_workgroups(), subgroup_id(), num_subgroups() and the results of "
        "subgroup reductions and broadcasts are uniform within a subgroup)"
    )


def test_f16_scalar_parameters_are_refused(tmp_path):
    path = tmp_path / "p.py"
    path.write_text(
        "from vyre_build.lang import *\n\n@kernel(workgroup_size=64)\n"
        'def k(out: Buffer[f32, "w"], a: f16):\n    out[0] = f32(a)\n'
    )
    with pytest.raises(KernelError) as info:
        compile_file(str(path))
    assert info.value.message == (
        "scalar parameter 'a' cannot be f16 (uniform blocks hold 32-bit values)"
    )
    assert info.value.fix == "take an f32 and convert it: a: f32 ... f16(a)"


def test_float_literals_take_f16_next_to_f16_and_features_are_recorded(tmp_path):
    (k,) = compile_body(
        tmp_path,
        """
        a = h[i] * 2.5 + 1.0
        w = vec4h(a) * 0.5
        b = subgroup_ballot(x[i] > 0.0)
        v = f32(max(a, 0.25)) + f32(w.y) + f32(b.x) + subgroup_add(x[i])
        """,
    )
    assert k.meta["features"] == [
        "f16",
        "storage_16bit",
        "subgroup_arithmetic",
        "subgroup_ballot",
        "subgroup_basic",
    ]
    assert "enable f16;" in k.wgsl and "subgroupBallot(" in k.wgsl and "2.5f" in k.wgsl
