"""Subgroup-level uniformity: what is uniform within a subgroup may control subgroup and
cooperative-matrix operations (and be a matrix's offset, stride and fill value); barriers
keep the workgroup rule. Each refusal checks the exact message, which names the rule.
The SPIR-V of what compiles passes spirv-val; runs on devices: tests/gpu/test_subgroup_ids.py.
Also: subgroup_id() / num_subgroups() in the descriptor and on the reference at every size.
"""

from __future__ import annotations

import subprocess
import textwrap
from dataclasses import replace

import numpy as np
import pytest
from spirv_tools import missing, pinned

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelError

HEADER = "from vyre_build.lang import *\n\n"
SIG = (
    "@kernel(workgroup_size=64)\n"
    'def k(x: Buffer[f32], out: Buffer[f32, "rw"], n: u32):\n'
    "    i = global_id().x\n"
)
COOP_SIG = (
    "@kernel(workgroup_size=64, grid=64)\n"
    'def k(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "rw"], s: u32):\n'
)
SUBGROUP_FIX = (
    "guard the work, not the subgroup operation: move the subgroup operation out of the "
    "branch so every invocation of the subgroup reaches it (scalars, constants, len(buf), "
    "workgroup_id(), num_workgroups(), subgroup_id(), num_subgroups() and the results of "
    "subgroup reductions and broadcasts are uniform within a subgroup)"
)
BARRIER_FIX = (
    "guard the work, not the barrier: move the barrier out of the branch so every "
    "invocation reaches it (conditions on scalars, constants, len(buf), workgroup_id() "
    "and num_workgroups() are uniform); a barrier needs the whole workgroup, a "
    "subgroup_id() branch holds a subgroup"
)


def build(tmp_path, body: str, sig: str = SIG, targets=("kdesc", "spirv")):
    path = tmp_path / "k.py"
    path.write_text(HEADER + sig + textwrap.indent(textwrap.dedent(body), "    "))
    (k,) = compile_file(str(path), targets=targets)
    if not missing("spirv-val"):
        spv = tmp_path / "k.spv"
        spv.write_bytes(k.spirv)
        proc = subprocess.run(
            [pinned("spirv-val"), "--target-env", "vulkan1.1", str(spv)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return k


def refusal(tmp_path, body: str, sig: str = SIG) -> KernelError:
    with pytest.raises(KernelError) as info:
        build(tmp_path, body, sig)
    return info.value


def at(tmp_path, line: int, col: int, text: str) -> str:
    return f"{tmp_path / 'k.py'}:{line}:{col} (`{text}`)"


@pytest.mark.parametrize(
    "body",
    [
        # a branch per subgroup: every lane of a subgroup goes the same way
        "if subgroup_id() == 0:\n    out[i] = subgroup_add(x[i])\n",
        # values computed from subgroup-uniform ones, and a local holding one
        "s = subgroup_id() * 2 + num_subgroups() + n\nif s < 4:\n    out[i] = subgroup_max(x[i])\n",
        # reductions, votes and broadcasts are the same in every lane
        "t = subgroup_add(x[i])\nif t > 0.0 and subgroup_any(x[i] > 1.0):\n"
        "    out[i] = subgroup_broadcast_first(x[i])\n",
        # loop bounds, early returns and breaks under subgroup-uniform control
        "for r in range(subgroup_id(), 8):\n"
        "    out[i] += subgroup_add(x[r * 64 + subgroup_invocation_id()])\n",
        "if subgroup_ballot(x[i] > 0.0).x == 0:\n    return\nout[i] = subgroup_min(x[i])\n",
        "r = subgroup_id()\nwhile r < 8:\n    if subgroup_all(x[r] > 2.0):\n        break\n"
        "    out[i] += subgroup_add(x[r])\n    r += num_subgroups()\n",
        # a read-only buffer at a subgroup-uniform index
        "if x[subgroup_id()] > 0.5:\n    out[i] = f32(subgroup_xor(u32(x[i])))\n",
    ],
)
def test_subgroup_uniform_control_may_hold_subgroup_operations(tmp_path, body):
    k = build(tmp_path, body)
    assert "subgroup_basic" in k.meta["features"]


@pytest.mark.parametrize(
    ("body", "line", "why"),
    [
        (
            "if subgroup_inclusive_add(x[i]) > 0.0:\n    out[i] = subgroup_add(x[i])\n",
            "the condition at {0} depends on subgroup_inclusive_add()",
            "if subgroup_inclusive_add(x[i]) > 0.0:",
        ),
        (
            "s = subgroup_id()\nif s == 0 and i < n:\n    out[i] = subgroup_add(x[i])\n",
            "the condition at {0} depends on global_id()",
            "if s == 0 and i < n:",
        ),
        (
            "if subgroup_shuffle_xor(x[i], 1) > 0.0:\n    out[i] = subgroup_add(x[i])\n",
            "the condition at {0} depends on subgroup_shuffle_xor()",
            "if subgroup_shuffle_xor(x[i], 1) > 0.0:",
        ),
    ],
)
def test_control_that_differs_within_a_subgroup_is_refused(tmp_path, body, line, why):
    e = refusal(tmp_path, body)
    n = 7 if body.startswith("s =") else 6
    assert (e.line, e.source_line.strip()) == (n + 1, "out[i] = subgroup_add(x[i])")
    assert e.message == (
        "subgroup_add() is in non-uniform control flow: "
        + line.format(at(tmp_path, n, 5, why))
        + ", so some invocations of the subgroup may not reach it"
    )
    assert e.fix == SUBGROUP_FIX


def test_a_barrier_keeps_the_workgroup_rule(tmp_path):
    e = refusal(tmp_path, "if subgroup_id() == 0:\n    barrier()\n")
    assert (e.line, e.col, e.source_line.strip()) == (7, 9, "barrier()")
    assert e.message == (
        "barrier() is in non-uniform control flow: the condition at "
        f"{at(tmp_path, 6, 5, 'if subgroup_id() == 0:')} depends on subgroup_id(), which is "
        "uniform within a subgroup but not across the workgroup, so some invocations of the "
        "workgroup may not reach it"
    )
    assert e.fix == BARRIER_FIX
    e = refusal(tmp_path, "if subgroup_add(x[i]) > 0.0:\n    return\nbarrier()\n")
    assert e.message == (
        "barrier() is in non-uniform control flow: a return follows the condition at "
        f"{at(tmp_path, 6, 5, 'if subgroup_add(x[i]) > 0.0:')}, which depends on "
        "subgroup_add(), which is uniform within a subgroup but not across the workgroup, so "
        "some invocations of the workgroup may not reach it"
    )


def test_a_return_that_turns_divergent_in_a_later_pass_reaches_the_loop_top(tmp_path):
    # Pass 1: the break leaves per subgroup, the return depends on nothing. Pass 2: `v`
    # holds global_id(), the return diverges, and nothing else changes; pass 3 must still
    # run: some invocations are gone before subgroup_add() in the iterations after.
    body = (
        "v = u32(0)\nwhile True:\n    if subgroup_id() < n:\n        break\n"
        "    out[i] = subgroup_add(x[i])\n    if v > 0:\n        return\n    v = i\n"
    )
    e = refusal(tmp_path, body)
    assert (e.line, e.col) == (10, 9)
    assert e.message == (
        "subgroup_add() is in non-uniform control flow: a return follows the condition at "
        f"{at(tmp_path, 11, 9, 'if v > 0:')}, which depends on global_id(), so some "
        "invocations of the subgroup may not reach it"
    )


def test_cooperative_matrices_under_subgroup_uniform_control(tmp_path):
    body = """
    t = subgroup_id()
    if t < 4:
        fa = coop_load_a(a, t * 256, 16, 16, 16)
        fb = coop_load_b(b, t * 16, 64, 16, 16)
        acc = coop_mma(fa, fb, coop_fill(f32, 16, 16, f32(t)))
        coop_store(acc, c, t * 256 + s, 16)
    """
    k = build(tmp_path, body, COOP_SIG, targets=("kdesc", "spirv", "wgsl"))
    assert k.wgsl is None and "cooperative_matrix" in k.meta["features"]


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (
            "fa = coop_load_a(a, local_id().x * 16, 16, 16, 16)\n",
            5,
            "coop_load_a()'s offset depends on local_id(), which differs between the "
            "invocations of a subgroup: the subgroup handles one matrix together, so they "
            "must agree",
        ),
        (
            "acc = coop_fill(f32, 16, 16, f32(subgroup_invocation_id()))\n"
            "coop_store(acc, c, 0, 16)\n",
            5,
            "coop_fill()'s value depends on subgroup_invocation_id(), which differs between "
            "the invocations of a subgroup: the subgroup handles one matrix together, so they "
            "must agree",
        ),
        (
            "acc = coop_fill(f32, 16, 16, 0.0)\n"
            "coop_store(acc, c, 0, u32(subgroup_exclusive_add(1)) + 16)\n",
            6,
            "coop_store()'s stride depends on subgroup_exclusive_add(), which differs between "
            "the invocations of a subgroup: the subgroup handles one matrix together, so they "
            "must agree",
        ),
    ],
)
def test_a_matrix_operand_that_differs_within_a_subgroup_is_refused(tmp_path, body, line, message):
    e = refusal(tmp_path, body, COOP_SIG)
    assert (e.line, e.message) == (line, message)
    what = message.split("'s ")[1].split(" ")[0]
    assert e.fix == (
        f"compute the {what} from values uniform within the subgroup (scalars, constants, "
        "len(buf), workgroup_id(), num_workgroups(), subgroup_id(), num_subgroups() and the "
        "results of subgroup reductions and broadcasts are uniform within a subgroup)"
    )


IDS = """\
from vyre_build.lang import *


@kernel(workgroup_size=96)
def ids(out: Buffer[u32, "w"]):
    out[global_id().x] = subgroup_id() * 65536 + num_subgroups() * 256 + subgroup_invocation_id()
"""


@pytest.mark.parametrize("size", [1, 2, 4, 8, 16, 32, 64, 128])
def test_the_reference_numbers_subgroups_by_local_index_at_any_size(tmp_path, size):
    from vyre_build.reference import execute

    path = tmp_path / "ids.py"
    path.write_text(IDS)
    (k,) = compile_file(str(path), targets=("kdesc",))
    got = execute(
        k.descriptor, {"out": np.zeros(192, np.uint32)}, {}, (2, 1, 1), subgroup_size=size
    )["out"]
    local = np.arange(192) % 96  # 96 invocations: the last subgroup is short at 64 and 128
    want = (local // size) * 65536 + (-(-96 // size)) * 256 + local % size
    np.testing.assert_array_equal(got, want.astype(np.uint32))


def test_the_descriptor_carries_them_as_opaque_exprs(tmp_path):
    from vyre_build.descriptor import KernelOp, Variant, decode, encode, validate
    from vyre_build.core.errors import DescriptorFormatError

    path = tmp_path / "ids.py"
    path.write_text(IDS)
    (k,) = compile_file(str(path), targets=("kdesc",))
    kinds = {op.kind.args[1] for op in k.descriptor.body.ops if op.kind.name == "OpaqueExpr"}
    assert kinds == {"vyre.subgroup_id", "vyre.num_subgroups"}
    assert decode(encode(k.descriptor)) == k.descriptor
    assert validate(k.descriptor).features == {"subgroup_basic"}
    ops = list(k.descriptor.body.ops)
    n = next(i for i, op in enumerate(ops) if op.kind.name == "OpaqueExpr")
    ops[n] = KernelOp(Variant("OpaqueExpr", (0, ops[n].kind.args[1], b"\x01")), (), ops[n].result)
    bad = replace(k.descriptor, body=replace(k.descriptor.body, ops=tuple(ops)))
    with pytest.raises(DescriptorFormatError, match="takes no payload, got 01"):
        validate(bad)
