"""Cooperative matrices without a device: what the frontend refuses (exact messages), the
descriptor they lower to, the fragment rule on the reference, and spirv-val on the SPIR-V."""

from __future__ import annotations

import subprocess
import textwrap

import numpy as np
import pytest
from spirv_tools import missing, pinned  # noqa: E402

from vyre_build.compiler import compile_file
from vyre_build.descriptor import Variant, decode, encode, validate
from vyre_build.descriptor.matrices import in_place
from vyre_build.emit.wgsl import emit_wgsl
from vyre_build.core.errors import EmitError, KernelError
from vyre_build.reference import execute

HEADER = "from vyre_build.lang import *\n\n"
SIG = (
    "@kernel(workgroup_size=32, grid=32)\ndef k(a: Buffer[f16], b: Buffer[f16], x: Buffer[f32],\n"
    '      c: Buffer[f32, "rw"], hc: Buffer[f16, "rw"], o: u32, s: u32):\n'
)
MM = """
fa = coop_load_a(a, 0, 16, 16, 16)
fb = coop_load_b(b, 0, 16, 16, 16)
acc = coop_mma(fa, fb, coop_fill(f32, 16, 16, 0.0))
"""


def build(tmp_path, body: str):
    path = tmp_path / "k.py"
    path.write_text(HEADER + SIG + textwrap.indent(textwrap.dedent(body), "    "))
    (k,) = compile_file(str(path))
    return k


def refusal(tmp_path, body: str) -> KernelError:
    with pytest.raises(KernelError) as info:
        build(tmp_path, body)
    return info.value


@pytest.mark.parametrize(
    "body, message, fix",
    [
        (
            "m = coop_load_a(a, 0, 16, s, 16)\n",
            "coop_load_a() needs constant rows and cols (8, 16 or 32)",
            "use literals or module constants, e.g. 16",
        ),
        (
            "m = coop_load_b(b, 0, 16, 16, 12)\n",
            "cooperative matrices have 8, 16 or 32 rows and cols, got 12",
            "split the tile into fragments of a supported size",
        ),
        (
            "m = coop_load_a(x, 0, 16, 16, 16)\n",
            "coop_load_a() makes an A matrix, whose elements are f16 or bf16; buffer 'x' is f32",
            "use a Buffer[f16]",
        ),
        (
            "m = coop_fill(u32, 16, 16, 0)\n",
            "coop_fill() makes an accumulator, whose elements are f16 or f32; the element type "
            "is u32",
            "use f32",
        ),
        (
            MM + "acc = coop_mma(fb, fa, acc)\n",
            "coop_mma(a, b, c) cannot multiply matrix_b.f16.16x16 x matrix_a.f16.16x16 + "
            "matrix_acc.f32.16x16",
            "pass an A matrix, a B matrix and an accumulator, in that order",
        ),
        (
            MM + "acc = coop_mma(fa, coop_load_b(b, 0, 8, 8, 16), acc)\n",
            "coop_mma(a, b, c) cannot multiply matrix_a.f16.16x16 x matrix_b.f16.8x16 + "
            "matrix_acc.f32.16x16",
            "A is MxK, B is KxN, C is MxN: load B with as many rows as A has columns",
        ),
        (
            "acc = coop_mma(x[0], 1.0, 2.0)\n",
            "coop_mma() takes cooperative matrices, got f32",
            "make them with coop_load_a / coop_load_b / coop_load_acc / coop_fill",
        ),
        (
            MM + "coop_store(acc, a, 0, 16)\n",
            "coop_store() of a matrix_acc.f32.16x16 needs a buffer of f32, 'a' holds f16",
            "store into a Buffer[f32]",
        ),
        (
            MM + "coop_store(acc, x, 0, 16)\n",
            "buffer 'x' is read-only",
            'declare it as Buffer[f32, "w"] or "rw"',
        ),
        (
            "t = local_array(f16, 256)\nm = coop_load_a(t, 0, 16, 16, 16)\n",
            "coop_load_a() works on buffers and shared arrays, not local arrays",
            "stage the tile in a shared(...) array",
        ),
        (
            MM + "v = coop_store(acc, c, 0, 16)\n",
            "coop_store() is a statement, not a value",
            "call it on its own line: coop_store()",
        ),
    ],
)
def test_refusals_name_the_call_and_the_fix(tmp_path, body, message, fix):
    err = refusal(tmp_path, body)
    assert err.message == message
    assert err.fix == fix


def test_a_fragment_op_under_a_divergent_branch_is_refused(tmp_path):
    err = refusal(tmp_path, MM + "if global_id().x < o:\n    coop_store(acc, c, 0, 16)\n")
    assert err.message.startswith("coop_store() is in non-uniform control flow: the condition")
    assert (err.line, err.col) == (
        11,
        9,
    ) and "guard the work, not the subgroup operation" in err.fix


def test_lowering_the_descriptor_and_its_round_trip(tmp_path):
    k = build(tmp_path, MM + "coop_store(acc, c, o, s)\n")
    kinds = [op.kind for op in k.descriptor.body.ops]
    names = [
        kind.args[1]
        if kind.name == "OpaqueExpr"
        else kind.args[0]
        if kind.name == "OpaqueNode"
        else kind.name
        for kind in kinds
    ]
    assert names.count("vyre.coop.load") == 2 and "vyre.coop.mma" in names
    assert "vyre.coop.fill" in names and names[-1] == "vyre.coop.store"
    assert decode(encode(k.descriptor)) == k.descriptor
    small = build(
        tmp_path,
        "m = coop_mma(coop_load_a(a, 0, 16, 16, 16), coop_load_b(b, 0, 8, 16, 8), coop_fill(f32, 16, 8, 0.0))\ncoop_store(m, c, 0, 8)\n",
    )
    mma = [op.kind for op in small.descriptor.body.ops if op.kind.name == "MatrixMma"]
    assert mma == [Variant("MatrixMma", ("M16N8K16", "RowMajor", "RowMajor", "F16", "F16", "F32"))]
    assert small.meta["features"] == [
        "cooperative_matrix",
        "cooperative_matrix.f16.f32.16x8x16",
        "f16",
        "storage_16bit",
    ]
    info = validate(k.descriptor)
    with pytest.raises(EmitError, match="needs cooperative matrices: SPIR-V only"):
        emit_wgsl(k.descriptor, info)
    assert k.wgsl is None and ".wgsl" not in k.artifacts and ".spv" in k.artifacts


@pytest.mark.parametrize(
    "length, offset, stride, ok",
    [
        (256, 0, 16, True),  # exactly one 16x16 fragment
        (255, 0, 16, False),  # one element short
        (512, 8, 16, True),  # offset a multiple of 8 f16 (16 bytes)
        (512, 4, 16, False),  # misaligned offset
        (512, 0, 12, False),  # stride below the row length
        (512, 0, 24, True),
        (1 << 32 - 1, (1 << 32) - 8, 16, False),  # past the end, no wrap-around
        (16, 32, 16, False),  # offset past the end
    ],
)
def test_the_fragment_rule(length, offset, stride, ok):
    assert in_place(length, offset, stride, "matrix_a.f16.16x16") is ok


def test_the_reference_gives_zeros_for_a_fragment_that_does_not_fit(tmp_path):
    k = build(tmp_path, "m = coop_load_acc(x, o, s, 16, 16)\ncoop_store(m, c, 0, 16)\n")
    x = np.arange(300, dtype=np.float32)
    args = {"a": np.zeros(1, np.float16), "b": np.zeros(1, np.float16), "x": x}
    args["hc"] = np.zeros(1, np.float16)

    def run(o, s):
        c = np.full(256, -1.0, np.float32)
        return execute(k.descriptor, {**args, "c": c}, {"o": o, "s": s}, (1, 1, 1))["c"]

    np.testing.assert_array_equal(run(4, 16), x[4:260])
    np.testing.assert_array_equal(run(5, 16), np.zeros(256))  # f32 offsets align to 4
    np.testing.assert_array_equal(run(48, 16), np.zeros(256))  # 48 + 256 > 300
    k2 = build(tmp_path, MM + "coop_store(acc, c, o, s)\n")
    c = np.full(64, -1.0, np.float32)
    half = {**args, "a": np.ones(256, np.float16), "b": np.ones(256, np.float16), "c": c}
    out = execute(k2.descriptor, half, {"o": 0, "s": 16}, (1, 1, 1))["c"]
    np.testing.assert_array_equal(out, c)  # 256 values do not fit in 64: nothing stored


def test_every_spirv_module_passes_spirv_val(tmp_path):
    if missing("spirv-val"):
        pytest.skip("spirv-val (the test extra's pinned tool) not installed; CI=true requires it")
    bodies = [
        MM + "coop_store(acc, c, o, s)\n",
        "sa = shared(f16, 512)\nsa[global_id().x] = a[global_id().x]\nbarrier()\n"
        "m = coop_mma(coop_load_a(sa, 0, 16, 16, 16), coop_load_b(sa, 256, 16, 16, 16), "
        "coop_load_acc(c, o, s, 16, 16))\ncoop_store(m, c, o, s)\n",
        "h = coop_mma(coop_load_a(a, 0, 16, 16, 16), coop_load_b(b, 0, 8, 16, 8), "
        "coop_fill(f16, 16, 8, 1.0))\ncoop_store(h, hc, o, 8)\n",
    ]
    for i, body in enumerate(bodies):
        path = tmp_path / f"m{i}.spv"
        path.write_bytes(build(tmp_path, body).spirv)
        proc = subprocess.run(
            [pinned("spirv-val"), "--target-env", "vulkan1.1", str(path)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"body {i}: {proc.stderr}"


VECTORS = """
from vyre_build.lang import *

@kernel(workgroup_size=32, grid=32)
def k(a: Buffer[vec4h], b: Buffer[f16], c: Buffer[vec4f, "w"]):
    t = shared(vec4h, 64)
    lid = local_id().x
    t[lid] = a[lid]
    t[lid + 32] = a[lid + 32]
    barrier()
    acc = coop_fill(f32, 16, 16, 0.0)
    acc = coop_mma(coop_load_a(t, 0, 16, 16, 16), coop_load_b(b, 0, 16, 16, 16), acc)
    coop_store(acc, c, 0, 16)
    bad = coop_load_a(t, 8, 16, 16, 16)  # 8 + 15 * 16 + 16 > 256: never fits, zeros
    coop_store(coop_mma(bad, coop_load_b(b, 0, 16, 16, 16), acc), c, 256, 16)
"""


def test_fragments_of_vector_buffers_and_shared_arrays(tmp_path):
    path = tmp_path / "v.py"
    path.write_text(VECTORS)
    (k,) = compile_file(str(path))
    rng = np.random.default_rng(2)
    a = rng.integers(-4, 5, (16, 16)).astype(np.float16)
    b = rng.integers(-4, 5, (16, 16)).astype(np.float16)
    out = execute(
        k.descriptor,
        {"a": a.reshape(-1, 4), "b": b.ravel(), "c": np.zeros((128, 4), np.float32)},
        {},
        (1, 1, 1),
    )["c"].reshape(2, 16, 16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(out[0], want)
    np.testing.assert_array_equal(out[1], want)  # the zero fragment adds nothing
    if not missing("spirv-val"):
        spv = tmp_path / "v.spv"
        spv.write_bytes(k.spirv)
        proc = subprocess.run(
            [pinned("spirv-val"), "--target-env", "vulkan1.1", str(spv)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
