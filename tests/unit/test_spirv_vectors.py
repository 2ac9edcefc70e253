"""SPIR-V emitter: vectors (docs/descriptor-conventions.md, "Vectors").

The vector cases of the corpus (tests/corpus/vectors.py) are validated and dispatched
with every other corpus case (test_spirv.py, test_spirv_vulkan.py); here: the type and
stride layout, the exact refusal (by validation) of what the conventions leave undefined
on vectors, and a vector kernel compiled from source, validated and dispatched through
the `vulkan` package and wgpu's SPIR-V input (both lavapipe).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from spirv_tools import missing  # noqa: E402
from corpus import CORPUS
from corpus.values import I32_MAX, I32_MIN, _sat
from corpus.vectors import F4, I2, I4, U2, U4
from descriptors import Case, Kernel, V, vt
from test_spirv import assert_refused, spirv_val

from vyre_build.descriptor import (
    SHARED_SLOT_BASE,
    BindingSlot,
    KernelDescriptor,
)
from vyre_build.emit.spirv import emit_spirv

needs_val = pytest.mark.skipif(
    missing("spirv-val"),
    reason="spirv-val (the test extra's pinned tool) not installed; CI=true requires it",
)


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


# --- layout -----------------------------------------------------------------------------


def test_vector_types_and_strides():
    """One OpTypeVector per vector type; ArrayStride 16 for vec4 and 8 for vec2 buffers.

    x and rev (both vec4<f32>) share one runtime-array type, so one ArrayStride 16.
    """
    import struct

    from vyre_build.emit.spirv.grammar import DECORATION, OPCODES

    binary = emit_spirv(CORPUS["vec_construct_extract"]().desc)
    w = struct.unpack(f"<{len(binary) // 4}I", binary)[5:]
    vectors, strides, pos = [], [], 0
    while pos < len(w):
        n, op = w[pos] >> 16, w[pos] & 0xFFFF
        if op == OPCODES["OpTypeVector"]:
            vectors.append(w[pos + 2 : pos + 4])
        if op == OPCODES["OpDecorate"] and w[pos + 2] == DECORATION["ArrayStride"]:
            strides.append(w[pos + 3])
        pos += n
    assert len(vectors) == len(set(vectors))
    assert sorted(strides) == [4, 8, 8, 16]


# --- what the conventions leave undefined on vectors --------------------------------------


def _refused(build) -> KernelDescriptor:
    """A kernel with one vector value of each kind (f4 f4b i4 u4 u2) and scalars (f u), then `build`."""
    kb = Kernel("refused", (64, 1, 1))
    slots = {
        k: kb.buffer(t, "ReadWrite", k) for k, t in (("f4", F4), ("i4", I4), ("u4", U4), ("u2", U2))
    }
    r = kb.body
    i = r.gid()
    v = {k: r.load(s, i) for k, s in slots.items()}
    v.update(f4b=r.load(slots["f4"], r.u32(1)), f=r.lit("F32", 1.0), u=i, slots=slots)
    build(r, v)
    return kb.build()


REFUSED = {
    "compare": (
        lambda r, v: r.bin("Lt", v["f4"], v["f4b"]),
        "BinOpKind(Lt,) [1, 6]: BinOpKind Lt is not defined on (vec4f, vec4f)",
    ),
    "mod": (
        lambda r, v: r.bin("Mod", v["i4"], v["i4"]),
        "BinOpKind(Mod,) [2, 2]: BinOpKind Mod is not defined on (vec4i, vec4i)",
    ),
    "int_div": (
        lambda r, v: r.bin("Div", v["u4"], v["u4"]),
        "BinOpKind(Div,) [3, 3]: BinOpKind Div is not defined on (vec4u, vec4u)",
    ),
    "shift": (
        lambda r, v: r.bin("Shl", v["u4"], v["u"]),
        "BinOpKind(Shl,) [3, 0]: BinOpKind Shl is not defined on (vec4u, u32)",
    ),
    "rotate": (
        lambda r, v: r.bin("RotateLeft", v["u2"], v["u2"]),
        "BinOpKind(RotateLeft,) [4, 4]: BinOpKind RotateLeft is not defined on (vec2u, vec2u)",
    ),
    "float_bitand": (
        lambda r, v: r.bin("BitAnd", v["f4"], v["f4"]),
        "BinOpKind(BitAnd,) [1, 1]: BinOpKind BitAnd is not defined on (vec4f, vec4f)",
    ),
    "and": (
        lambda r, v: r.bin("And", v["u4"], v["u4"]),
        "BinOpKind(And,) [3, 3]: BinOpKind And is not defined on (vec4u, vec4u)",
    ),
    "mixed": (
        lambda r, v: r.bin("Add", v["f4"], v["f"]),
        "BinOpKind(Add,) [1, 7]: BinOpKind Add is not defined on (vec4f, f32)",
    ),
    "mixed_scalar_first": (
        lambda r, v: r.bin("Add", v["f"], v["f4"]),
        "BinOpKind(Add,) [7, 1]: BinOpKind Add is not defined on (f32, vec4f)",
    ),
    "sizes": (
        lambda r, v: r.bin("Add", v["u4"], v["u2"]),
        "BinOpKind(Add,) [3, 4]: BinOpKind Add is not defined on (vec4u, vec2u)",
    ),
    "popcount": (
        lambda r, v: r.un("Popcount", v["u4"]),
        "UnOpKind(Popcount,) [3]: UnOpKind Popcount is not defined on (vec4u)",
    ),
    "isnan": (
        lambda r, v: r.un("IsNan", v["f4"]),
        "UnOpKind(IsNan,) [1]: UnOpKind IsNan is not defined on (vec4f)",
    ),
    "u_abs": (
        lambda r, v: r.un("Abs", v["u2"]),
        "UnOpKind(Abs,) [4]: UnOpKind Abs is not defined on (vec2u)",
    ),
    "int_sqrt": (
        lambda r, v: r.un("Sqrt", v["i4"]),
        "UnOpKind(Sqrt,) [2]: UnOpKind Sqrt is not defined on (vec4i)",
    ),
    "int_sign": (
        lambda r, v: r.un("Sign", v["i4"]),
        "UnOpKind(Sign,) [2]: UnOpKind Sign is not defined on (vec4i)",
    ),
    "float_bitnot": (
        lambda r, v: r.un("BitNot", v["f4"]),
        "UnOpKind(BitNot,) [1]: UnOpKind BitNot is not defined on (vec4f)",
    ),
    "asin": (
        lambda r, v: r.un("Asin", v["f4"]),
        "UnOpKind(Asin,) [1]: UnOpKind Asin is not defined on (vec4f)",
    ),
    "cast_count": (
        lambda r, v: r.cast(I2, v["f4"]),
        "Cast(Vec(I32, 2),) [1]: Cast vec2i is not defined on (vec4f)",
    ),
    "cast_splat": (
        lambda r, v: r.cast(F4, v["f"]),
        "Cast(Vec(F32, 4),) [7]: Cast vec4f is not defined on (f32)",
    ),
    "cast_to_scalar": (
        lambda r, v: r.cast("U32", v["u4"]),
        "Cast(U32,) [3]: Cast u32 is not defined on (vec4u)",
    ),
    "fma_int": (
        lambda r, v: r.fma(v["i4"], v["i4"], v["i4"]),
        "Fma [2, 2, 2]: Fma is not defined on (vec4i, vec4i, vec4i)",
    ),
    "fma_mixed": (
        lambda r, v: r.fma(v["f4"], v["f"], v["f4"]),
        "Fma [1, 7, 1]: Fma is not defined on (vec4f, f32, vec4f)",
    ),
    "select_mixed": (
        lambda r, v: r.select(r.bin("Eq", v["u"], v["u"]), v["f4"], v["f"]),
        "Select [8, 1, 7]: Select is not defined on (bool, vec4f, f32)",
    ),
    "extract_range": (
        lambda r, v: r.extract(v["f4"], 4),
        "OpaqueExpr(0, 'vyre.extract', b'\\x04') [1]: "
        "vyre.extract payload '04' is not one component index below 4",
    ),
    "extract_scalar": (
        lambda r, v: r.extract(v["f"], 0),
        "OpaqueExpr(0, 'vyre.extract', b'\\x00') [7]: vyre.extract needs a vector operand, got f32",
    ),
    "vec_arity": (
        lambda r, v: r.vec(F4, v["f"], v["f"], v["f"]),
        "OpaqueExpr(0, 'vyre.vec', b'\\x13\\x0f\\x04') [7, 7, 7]: "
        "vyre.vec takes 2 or 4 operands, got 3",
    ),
    "vec_types": (
        lambda r, v: r.vec(U2, v["u"], v["f"]),
        "OpaqueExpr(0, 'vyre.vec', b'\\x13\\x02\\x02') [0, 7]: "
        "Construct vec2u is not defined on (u32, f32)",
    ),
    "vec3": (
        lambda r, v: r.vec("F32", v["f"], v["f"], v["f"]),
        "OpaqueExpr(0, 'vyre.vec', b'\\x13\\x0f\\x03') [7, 7, 7]: "
        "vyre.vec takes 2 or 4 operands, got 3",
    ),
    "vec_bad_payload": (
        lambda r, v: r.op(V("OpaqueExpr", (0, "vyre.vec", b"\xff")), v["f"], v["f"]),
        "OpaqueExpr(0, 'vyre.vec', b'\\xff') [7, 7]: vyre.vec payload ff is not a supported "
        "DataType: malformed descriptor at byte 1: invalid varint marker 255",
    ),
    "atomic": (
        lambda r, v: r.atomic("Add", v["slots"]["u4"], v["u"], v["u4"]),
        "Atomic(Add, 'Relaxed') [2, 0, 3]: Atomic Add is not defined on (vec4u)",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_undefined_vector_ops_are_refused(name):
    build, reason = REFUSED[name]
    assert_refused(_refused(build), reason)


@pytest.mark.parametrize(
    "element_type, memory_class, reason",
    [
        (vt("F32", 3), "Global", "slot 0 'v' (Global): unsupported data type Vec(F32, 3)"),
        (
            vt("Bool", 4),
            "Shared",
            "slot 16777216 'v' (Shared): unsupported data type Vec(Bool, 4)",
        ),
        (
            vt("F64", 2),
            "Scratch",
            "slot 16777216 'v' (Scratch): unsupported data type Vec(F64, 2)",
        ),
        (
            F4,
            "Uniform",
            "slot 0 'v' (Uniform) holds vec4f x 4; uniform members are one read-only "
            "U32/I32/F32/Bool scalar",
        ),
    ],
)
def test_unsupported_vector_slots_are_refused(element_type, memory_class, reason):
    kb = Kernel("slots")
    slot = 0 if memory_class in ("Global", "Uniform") else SHARED_SLOT_BASE
    count = None if memory_class == "Global" else 4
    kb.slots.append(BindingSlot(slot, element_type, count, memory_class, "ReadOnly", "v"))
    assert_refused(kb.build(), reason)


# --- a vector kernel from source (frontend + lowering + this emitter) ---------------------

KERNEL_SOURCE = """
from vyre_build.lang import Buffer, f32, global_id, kernel, vec4f, vec4i


@kernel(workgroup_size=64)
def vmix(x: Buffer[vec4f], y: Buffer[vec4f, "rw"], q: Buffer[vec4i, "w"], a: f32):
    i = global_id().x
    if i < len(y):
        v = x[i]
        w = fma(vec4f(a), v, y[i]) + vec4f(v.w, v.z, v.y, v.x) * 0.5
        y[i] = max(w, vec4f(-4.0))
        q[i] = vec4i(abs(v) * 1000.0)
"""


def _compiled_vmix(tmp_path):
    compiler = pytest.importorskip("vyre_build.compiler")
    path = tmp_path / "vmix.py"
    path.write_text(KERNEL_SOURCE)
    (kernel,) = compiler.compile_file(str(path), root=str(tmp_path), targets=("kdesc",))
    return kernel.descriptor


@needs_val
def test_compiled_vector_kernel_validates(tmp_path):
    desc = _compiled_vmix(tmp_path)
    assert {s.name: s.element_type for s in desc.slots if s.memory_class == "Global"} == {
        "x": F4,
        "y": F4,
        "q": I4,
    }
    spirv_val(emit_spirv(desc), tmp_path, "vmix")
    spirv_val(
        emit_spirv(desc, optimize=True) if shutil.which("spirv-opt") else emit_spirv(desc),
        tmp_path,
        "vmix_o",
    )


def _vmix_reference(x: np.ndarray, y: np.ndarray, a: float) -> tuple[np.ndarray, np.ndarray]:
    v = x.reshape(-1, 4).astype(np.float64)
    w = a * v + y.reshape(-1, 4) + v[:, ::-1] * 0.5
    return f32(np.maximum(w, -4.0)).ravel(), _sat(
        f32(np.abs(x) * np.float32(1000.0)), I32_MIN, I32_MAX, np.int32
    )


# --- dispatch ----------------------------------------------------------------------------

vk = pytest.importorskip("vulkan")
from descriptors import assert_case  # noqa: E402
from test_spirv_vulkan import run_wgpu, runner  # noqa: E402, F401  (runner: the fixture)


@pytest.mark.gpu  # its device fixture is taken by name, out of sight of conftest's marking
@pytest.mark.parametrize("path", ["vulkan", "wgpu"])
def test_compiled_vector_kernel_dispatch(request, path, tmp_path):
    desc = _compiled_vmix(tmp_path)
    n = 150
    rng = np.random.default_rng(30)
    x, y = f32(rng.uniform(-3, 3, 4 * n)), f32(rng.uniform(-3, 3, 4 * n))
    a = 0.75
    want_y, want_q = _vmix_reference(x, y, a)
    case = Case(
        desc,
        {"x": x, "y": y, "q": np.zeros(4 * n, np.int32)},
        {"y": want_y, "q": want_q},
        scalars={"a": a},
        groups=(-(-n // 64), 1, 1),
        per_output_tol={"y": (1e-5, 1e-5)},
    )
    spirv = emit_spirv(desc)
    if path == "vulkan":
        got = request.getfixturevalue("runner").run(
            spirv, desc, case.inputs, case.scalars, case.groups
        )
    else:
        got = run_wgpu(
            request.getfixturevalue("wgpu_device"),
            spirv,
            desc,
            case.inputs,
            case.scalars,
            case.groups,
        )
    assert_case(case, got, f"{path} vmix")
