"""WGSL emitter, vectors (docs/descriptor-conventions.md, "Vectors"): hand-built
descriptors with vec2/vec4 of f32/i32/u32 in buffers, workgroup arrays and scratch vars,
validated by naga and dispatched through wgpu (lavapipe), results compared with numpy.
A vec<n> buffer is a flat host array of n * length values. Built with tests/descriptors.py;
reuses the private dispatch helper of test_emit_wgsl.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from corpus.vectors import EXACT_F
from descriptors import SH, Body, V, buf, kernel, vbuf, vt
from test_emit_wgsl import (
    EDGE_I32,
    EDGE_U32,
    I32_MAX,
    I32_MIN,
    NP,
    assert_refused,
    dispatch,
    pairs,
    validate,
    wrap,
    wrapped_mul,
)

from vyre_build.descriptor import (
    BindingSlot,
    KernelBody,
    KernelDescriptor,
    decode,
    encode,
    encode_datatype,
)
from vyre_build.emit.wgsl import emit_wgsl


@pytest.fixture(scope="module")
def device(wgpu_device):
    return wgpu_device


def lanes(b: Body, m: int, k: int, i):
    """The index k * m + i (block k of a packed multi-result output buffer)."""
    return b.bin("Add", b.u32(k * m), i) if k else i


# --- end to end ------------------------------------------------------------------------
def test_vec4_saxpy_with_splat(device):
    slots = [
        vbuf(0, "F32", 4, "x", "ReadOnly"),
        vbuf(1, "F32", 4, "y"),
        BindingSlot(2, V("F32"), 1, "Uniform", "ReadOnly", "a"),
    ]
    make, body = kernel(slots)
    i = body.gid()
    inner = body.if_(body.bin("Lt", i, body.length(1)))
    a = inner.param(2)
    r = inner.bin(
        "Add", inner.bin("Mul", inner.splat("F32", 4, a), inner.load(0, i)), inner.load(1, i)
    )
    inner.store(1, i, r)
    desc = make()
    text = validate(device, desc)
    assert "var<storage, read> x: array<vec4<f32>>;" in text
    assert "vec4<f32>(_v" in text
    clamped = re.search(r"let (_v\d+): u32 = min\(", text)  # the legal form's bounds rule
    assert clamped and f"x[{clamped.group(1)}]" in text and "select(" in text
    n = 1000  # vectors; not a multiple of the workgroup size
    rng = np.random.default_rng(7)
    x = rng.standard_normal(4 * n).astype(np.float32)
    y = rng.standard_normal(4 * n).astype(np.float32)
    out = dispatch(device, desc, {0: x, 1: y}, {2: 2.5})
    np.testing.assert_allclose(out[1], np.float32(2.5) * x + y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [2, 4])
def test_f32_vector_componentwise_math(device, n):
    m = 128  # vectors per input
    rng = np.random.default_rng(n)
    a = rng.uniform(-3, 3, n * m).astype(np.float32)
    b = rng.uniform(0.25, 3, n * m).astype(np.float32) * rng.choice([-1, 1], n * m).astype(
        np.float32
    )
    a[:8] = [2.5, -2.5, 0.5, -0.5, 1.5, 0.0, -0.0, 3.0]  # round half to even, zeros
    with np.errstate(all="ignore"):
        bins = {
            "Add": a + b,
            "Sub": a - b,
            "Mul": a * b,
            "Div": a / b,
            "Min": np.minimum(a, b),
            "Max": np.maximum(a, b),
        }
        uns = {
            "Negate": -a,
            "Abs": np.abs(a),
            "Floor": np.floor(a),
            "Ceil": np.ceil(a),
            "Round": np.round(a),
            "Trunc": np.trunc(a),
            "Sign": np.sign(a),
            "Sqrt": np.sqrt(np.abs(a)),
            "Exp": np.exp(a),
            "Exp2": np.exp2(a),
            "Log": np.log(np.abs(a)),
            "Log2": np.log2(np.abs(a)),
            "Sin": np.sin(a),
            "Cos": np.cos(a),
            "Tan": np.tan(a),
            "Tanh": np.tanh(a),
            "InverseSqrt": 1 / np.sqrt(np.abs(a)),
        }
    positive = {"Sqrt", "Log", "Log2", "InverseSqrt"}  # applied to abs(a)
    results = list(bins) + list(uns) + ["Fma"]
    slots = [
        vbuf(0, "F32", n, "a", "ReadOnly"),
        vbuf(1, "F32", n, "b", "ReadOnly"),
        vbuf(2, "F32", n, "out"),
    ]
    make, body = kernel(slots)
    i = body.gid()
    inner = body.if_(body.bin("Lt", i, body.u32(m)))
    x, y = inner.load(0, i), inner.load(1, i)
    ax = inner.un("Abs", x)
    vals = [inner.bin(op, x, y) for op in bins]
    vals += [inner.un(op, ax if op in positive else x) for op in uns]
    vals.append(inner.fma(x, y, x))
    for k, v in enumerate(vals):
        inner.store(2, lanes(inner, m, k, i), v)
    out = dispatch(
        device, make(), {0: a, 1: b, 2: np.zeros(n * m * len(results))}, groups=(2, 1, 1)
    )
    expect = {**bins, **uns, "Fma": a * b + a}
    for k, op in enumerate(results):
        got = out[2][k * n * m : (k + 1) * n * m]
        ref = expect[op].astype(np.float32)
        sel = np.abs(a) > 1e-3 if op in positive else np.ones(a.size, bool)
        if op == "Tan":
            sel &= np.abs(np.cos(a)) > 0.1
        if op in EXACT_F:  # the ops the vector corpus also compares exactly
            np.testing.assert_array_equal(got[sel], ref[sel], err_msg=op)
        else:
            np.testing.assert_allclose(got[sel], ref[sel], rtol=2e-5, atol=1e-5, err_msg=op)


@pytest.mark.parametrize("elem, n", [("I32", 4), ("U32", 4), ("I32", 2), ("U32", 2)])
def test_integer_vector_ops_wrap(device, elem, n):
    dtype = NP[elem]
    a, b = pairs(EDGE_U32 if elem == "U32" else EDGE_I32, dtype, extra=300)
    cut = a.size - a.size % (n * 64)
    a, b = a[:cut], b[:cut]
    m = a.size // n
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    expect = {
        "Add": wrap(a64 + b64, dtype),
        "Sub": wrap(a64 - b64, dtype),
        "Mul": wrapped_mul(a, b),
        "Min": np.minimum(a, b),
        "Max": np.maximum(a, b),
        "BitAnd": a & b,
        "BitOr": a | b,
        "BitXor": a ^ b,
        "Negate": wrap(-a64, dtype),
        "BitNot": ~a,
    }
    if elem == "I32":
        expect["Abs"] = wrap(np.abs(a64), dtype)  # abs(MIN) == MIN
    unary = {"Negate", "BitNot", "Abs"}
    slots = [
        vbuf(0, elem, n, "a", "ReadOnly"),
        vbuf(1, elem, n, "b", "ReadOnly"),
        vbuf(2, elem, n, "out"),
    ]
    make, body = kernel(slots)
    i = body.gid()
    x, y = body.load(0, i), body.load(1, i)
    for k, op in enumerate(expect):
        v = body.un(op, x) if op in unary else body.bin(op, x, y)
        body.store(2, lanes(body, m, k, i), v)
    out = dispatch(
        device, make(), {0: a, 1: b, 2: np.zeros(a.size * len(expect))}, groups=(m // 64, 1, 1)
    )
    for k, op in enumerate(expect):
        np.testing.assert_array_equal(
            out[2][k * a.size : (k + 1) * a.size], expect[op], err_msg=f"vec{n}<{elem}> {op}"
        )
    if elem == "I32":
        assert I32_MIN in a and I32_MAX in a


def test_construct_extract_and_select(device):
    m = 64
    x = np.arange(4 * m, dtype=np.float32) * 0.5 - 7
    slots = [
        vbuf(0, "F32", 4, "x", "ReadOnly"),
        vbuf(1, "F32", 4, "rev"),
        buf(2, "F32", "s"),
        vbuf(3, "U32", 2, "pair"),
        vbuf(4, "I32", 4, "ints"),
        vbuf(5, "F32", 4, "sel"),
    ]
    make, body = kernel(slots)
    i = body.gid()
    v = body.load(0, i)
    cx, cy, cz, cw = (body.extract(v, k) for k in range(4))
    body.store(1, i, body.vec("F32", cw, cz, cy, cx))
    body.store(2, i, body.bin("Add", body.bin("Mul", cx, body.f32(10.0)), cw))
    p = body.vec("U32", i, body.bin("Mul", i, body.u32(3)))
    body.store(3, i, body.vec("U32", body.extract(p, 1), body.extract(p, 0)))
    body.store(
        4, i, body.vec("I32", body.i32(-1), body.i32(I32_MIN), body.i32(7), body.i32(I32_MAX))
    )
    even = body.bin("Eq", body.bin("BitAnd", i, body.u32(1)), body.u32(0))
    body.store(5, i, body.op("Select", even, v, body.splat("F32", 4, body.f32(-1.0))))
    out = dispatch(
        device,
        make(),
        {
            0: x,
            1: np.zeros(4 * m),
            2: np.zeros(m),
            3: np.zeros(2 * m),
            4: np.zeros(4 * m),
            5: np.zeros(4 * m),
        },
    )
    xv = x.reshape(m, 4)
    np.testing.assert_array_equal(out[1].reshape(m, 4), xv[:, ::-1])
    np.testing.assert_array_equal(out[2], xv[:, 0] * np.float32(10) + xv[:, 3])
    idx = np.arange(m, dtype=np.uint32)
    np.testing.assert_array_equal(out[3].reshape(m, 2), np.stack([idx * 3, idx], 1))
    np.testing.assert_array_equal(
        out[4].reshape(m, 4), np.tile(np.array([-1, I32_MIN, 7, I32_MAX], np.int32), (m, 1))
    )
    expect = np.where((idx % 2 == 0)[:, None], xv, np.float32(-1))
    np.testing.assert_array_equal(out[5].reshape(m, 4), expect)


def ref_f32_to_int(x, dtype):
    """Pinned: truncate toward zero, saturate to the target range, NaN -> 0."""
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        t = np.trunc(x.astype(np.float64))
        t = np.where(np.isnan(t), 0, np.clip(t, info.min, info.max))
    return t.astype(dtype)


def test_vector_casts_saturate_and_round(device):
    f = np.array(
        [
            np.nan,
            -np.nan,
            np.inf,
            -np.inf,
            3e9,
            -3e9,
            2147483520.0,
            2147483648.0,
            -2147483648.0,
            -2147483904.0,
            1.5,
            -1.5,
            -0.7,
            0.7,
            4294967040.0,
            4294967296.0,
            -1.0,
            0.0,
            -0.0,
            123456.789,
        ],
        np.float32,
    )
    f = np.concatenate([f, np.random.default_rng(3).uniform(-5e9, 5e9, 44).astype(np.float32)])
    ints = np.concatenate(
        [EDGE_I32, np.array([16777217, -16777217, 2147483584, 2147483585, 5, 6, -5, -6], np.int32)]
    )[:24]
    uints = np.concatenate(
        [
            EDGE_U32,
            np.array(
                [16777217, 4294967167, 4294967168, 4294967295, 33554435, 9, 10, 11, 12, 13],
                np.uint32,
            ),
        ]
    )[:24]
    slots = [
        vbuf(0, "F32", 4, "f", "ReadOnly"),
        vbuf(1, "I32", 4, "i", "ReadOnly"),
        vbuf(2, "U32", 2, "u", "ReadOnly"),
        vbuf(3, "I32", 4, "f2i"),
        vbuf(4, "U32", 4, "f2u"),
        vbuf(5, "F32", 4, "i2f"),
        vbuf(6, "F32", 2, "u2f"),
        vbuf(7, "U32", 4, "i2u"),
        vbuf(8, "I32", 2, "u2i"),
        vbuf(9, "F32", 4, "same"),
    ]
    make, body = kernel(slots, wg=(4, 1, 1))
    g = body.gid()
    inner = body.if_(body.bin("Lt", g, body.u32(16)))
    fv, iv = inner.load(0, g), inner.load(1, g)
    j = inner.bin("Lt", g, inner.u32(12))  # u has 12 vec2s
    uv = inner.load(2, g)
    inner.store(3, g, inner.cast(vt("I32", 4), fv))
    inner.store(4, g, inner.cast(vt("U32", 4), fv))
    inner.store(5, g, inner.cast(vt("F32", 4), iv))
    inner.store(7, g, inner.cast(vt("U32", 4), iv))
    inner.store(9, g, inner.cast(vt("F32", 4), fv))
    guarded = inner.if_(j)
    guarded.store(6, g, guarded.cast(vt("F32", 2), uv))
    guarded.store(8, g, guarded.cast(vt("I32", 2), uv))
    desc = make()
    text = validate(device, desc)
    # float -> int: component by component in the legal form (descriptor.legalize), the
    # saturation spelled as ops; int -> float keeps one helper per pair
    assert "_vy_cast_v4f32_v4i32" not in text and "i32(_v" in text
    assert "fn _vy_cast_v4i32_v4f32(x: vec4<i32>) -> vec4<f32>" in text
    assert "bitcast<vec4<u32>>(" in text
    fz = np.zeros(64)
    out = dispatch(
        device,
        desc,
        {
            0: f,
            1: np.resize(ints, 64),
            2: uints,
            3: fz,
            4: fz,
            5: fz,
            6: np.zeros(24),
            7: fz,
            8: np.zeros(24),
            9: fz,
        },
        groups=(4, 1, 1),
    )
    iv64 = np.resize(ints, 64)
    np.testing.assert_array_equal(out[3], ref_f32_to_int(f, np.int32))
    np.testing.assert_array_equal(out[4], ref_f32_to_int(f, np.uint32))
    assert out[3][0] == 0 and out[3][1] == 0 and out[3][2] == I32_MAX and out[3][3] == I32_MIN
    np.testing.assert_array_equal(out[5], iv64.astype(np.float32))  # round to nearest even
    np.testing.assert_array_equal(out[6], uints.astype(np.float32))
    np.testing.assert_array_equal(out[7], iv64.view(np.uint32))
    np.testing.assert_array_equal(out[8], uints.view(np.int32))
    np.testing.assert_array_equal(out[9].view(np.uint32), f.view(np.uint32))


def test_out_of_bounds_vector_loads_and_stores(device):
    m = 50
    x = np.arange(4 * m, dtype=np.float32) + 1
    sentinel = np.full(4 * m, -9, np.float32)
    slots = [
        vbuf(0, "F32", 4, "x", "ReadOnly"),
        vbuf(1, "F32", 4, "shifted"),
        vbuf(2, "F32", 4, "stored"),
        buf(3, "U32", "len"),
        vbuf(4, "I32", 2, "huge"),
    ]
    make, body = kernel(slots)
    i = body.gid()  # 64 invocations: i and i + 3 run past the 50 vectors
    body.store(1, i, body.load(0, body.bin("Add", i, body.u32(3))))  # OOB load -> zero vector
    body.store(2, body.bin("Add", i, body.u32(5)), body.load(0, i))  # OOB store -> nothing
    body.store(2, body.u32(0xFFFFFFFF), body.splat("F32", 4, body.f32(5.0)))
    body.store(3, body.u32(0), body.length(0))  # counts vectors
    body.store(4, i, body.load(4, body.u32(0xFFFFFFFF)))  # zero vec2<i32>
    out = dispatch(
        device,
        make(),
        {0: x, 1: sentinel, 2: sentinel, 3: np.zeros(1), 4: np.full(2 * 64, 3)},
        groups=(1, 1, 1),
    )
    xv = x.reshape(m, 4)
    np.testing.assert_array_equal(out[1].reshape(m, 4), np.vstack([xv[3:], np.zeros((3, 4))]))
    got = out[2].reshape(m, 4)
    np.testing.assert_array_equal(got[:5], np.full((5, 4), -9))
    np.testing.assert_array_equal(got[5:], xv[: m - 5])
    assert out[3][0] == m
    np.testing.assert_array_equal(out[4], np.zeros(128))


def test_shared_vector_arrays_zeroed_and_exchanged(device):
    wg, groups = 64, 3
    slots = [
        vbuf(0, "F32", 4, "x", "ReadOnly"),
        vbuf(1, "F32", 4, "rev"),
        vbuf(2, "I32", 2, "fresh"),
        BindingSlot(SH, vt("F32", 4), wg, "Shared", "ReadWrite", "sh"),
        BindingSlot(SH + 1, vt("I32", 2), 2 * wg, "Shared", "ReadWrite", "sh2"),
    ]
    make, body = kernel(slots, wg=(wg, 1, 1))
    i, lid = body.gid(), body.op("LocalInvocationId", 0)
    body.store(SH, lid, body.load(0, i))
    # sh2[64 + lid] is never written: it must read as zero in every workgroup.
    body.store(SH + 1, lid, body.vec("I32", body.cast("I32", i), body.i32(-7)))
    body.store(SH + 1, body.u32(2 * wg), body.splat("I32", 2, body.i32(99)))  # OOB: nothing
    body.op(V("Barrier", ("AcqRel",)), value=False)
    mirrored = body.load(SH, body.bin("Sub", body.u32(wg - 1), lid))
    oob = body.load(SH, body.u32(wg))  # zero vector
    body.store(1, i, body.bin("Add", mirrored, oob))
    fresh = body.load(SH + 1, body.bin("Add", lid, body.u32(wg)))
    body.store(2, i, body.bin("Add", fresh, body.load(SH + 1, body.u32(2 * wg - 1))))
    body.op(V("Barrier", ("AcqRel",)), value=False)
    body.store(SH + 1, body.bin("Add", lid, body.u32(wg)), body.splat("I32", 2, body.i32(5)))
    desc = make()
    text = validate(device, desc)
    assert "var<workgroup> sh: array<vec4<f32>, 64>;" in text
    assert "sh2[_z] = vec2<i32>();" in text
    n = wg * groups
    x = np.random.default_rng(5).standard_normal(4 * n).astype(np.float32)
    out = dispatch(device, desc, {0: x, 1: np.zeros(4 * n), 2: np.full(2 * n, 1)})
    expect = x.reshape(groups, wg, 4)[:, ::-1, :].reshape(-1)
    np.testing.assert_array_equal(out[1], expect)
    np.testing.assert_array_equal(out[2], np.zeros(2 * n))


def test_scratch_vector_vars_and_arrays(device):
    slots = [
        vbuf(0, "F32", 4, "x", "ReadOnly"),
        vbuf(1, "F32", 4, "acc_out"),
        vbuf(2, "I32", 2, "sum"),
        BindingSlot(SH, vt("F32", 4), 1, "Scratch", "ReadWrite", "acc"),
        BindingSlot(SH + 1, vt("I32", 2), 3, "Scratch", "ReadWrite", "arr"),
    ]
    make, body = kernel(slots)
    i = body.gid()
    zero = body.u32(0)
    loop = body.for_("k", zero, body.u32(3))
    k = loop.op(V("LoopIndex", ("k",)))
    xv = loop.load(0, i)
    acc = loop.load(SH, loop.u32(0))
    loop.store(SH, loop.u32(0), loop.fma(xv, loop.splat("F32", 4, loop.cast("F32", k)), acc))
    ki = loop.cast("I32", k)
    loop.store(SH + 1, k, loop.vec("I32", ki, loop.un("Negate", ki)))
    body.store(SH, body.u32(1), body.splat("F32", 4, body.f32(1e9)))  # OOB store: nothing
    body.store(1, i, body.load(SH, zero))
    parts = [body.load(SH + 1, body.u32(j)) for j in range(4)]  # arr[3] is OOB: zero
    total = parts[0]
    for p in parts[1:]:
        total = body.bin("Add", total, p)
    body.store(2, i, total)
    desc = make()
    text = validate(device, desc)
    assert "var acc: vec4<f32> = vec4<f32>();" in text
    assert "var arr: array<vec2<i32>, 3> = array<vec2<i32>, 3>();" in text
    n = 64
    x = np.random.default_rng(9).standard_normal(4 * n).astype(np.float32)
    out = dispatch(device, desc, {0: x, 1: np.zeros(4 * n), 2: np.zeros(2 * n)})
    np.testing.assert_allclose(out[1], x * np.float32(3), rtol=1e-6)
    np.testing.assert_array_equal(out[2], np.tile(np.array([3, -3], np.int32), n))


# --- determinism and the scalar-only text --------------------------------------------
def _vector_descriptor():
    make, body = kernel(
        [
            vbuf(0, "F32", 4, "x", "ReadOnly"),
            vbuf(1, "I32", 4, "o"),
            BindingSlot(SH, vt("U32", 2), 8, "Shared", "ReadWrite", "s"),
        ]
    )
    i = body.gid()
    body.store(1, i, body.cast(vt("I32", 4), body.un("Sqrt", body.load(0, i))))
    return make()


def test_vector_text_is_deterministic_and_survives_the_codec():
    desc = _vector_descriptor()
    text = emit_wgsl(desc)
    assert emit_wgsl(desc) == text and emit_wgsl(decode(encode(desc))) == text


def test_scalar_kernels_pull_in_no_vector_helpers():
    make, body = kernel([buf(0, "F32", "x", "ReadOnly"), buf(1, "I32", "o")])
    i = body.gid()
    body.store(1, i, body.cast("I32", body.load(0, i)))
    text = emit_wgsl(make())
    assert "vec2<" not in text and "vec4<" not in text and "_vy_cast" not in text


# --- refusals: validation names the defect before any WGSL is written ----------------------
def _vec_kernel(mutate):
    make, body = kernel(
        [
            vbuf(0, "F32", 4, "f"),
            vbuf(1, "I32", 4, "iv"),
            vbuf(2, "U32", 2, "u"),
            buf(3, "U32", "s"),
        ]
    )
    i = body.gid()
    mutate(body, i, body.load(0, i), body.load(1, i), body.load(2, i))
    return make()


def _vec_op(kind, payload):
    return V("OpaqueExpr", (0, kind, payload))


@pytest.mark.parametrize(
    "mutate, reason",
    [
        (
            lambda b, i, f, v, u: b.bin("Lt", f, f),
            "BinOpKind(Lt,) [1, 1]: BinOpKind Lt is not defined on (vec4f, vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.bin("Eq", v, v),
            "BinOpKind(Eq,) [2, 2]: BinOpKind Eq is not defined on (vec4i, vec4i)",
        ),
        (
            lambda b, i, f, v, u: b.bin("And", u, u),
            "BinOpKind(And,) [3, 3]: BinOpKind And is not defined on (vec2u, vec2u)",
        ),
        (
            lambda b, i, f, v, u: b.bin("Shl", u, i),
            "BinOpKind(Shl,) [3, 0]: BinOpKind Shl is not defined on (vec2u, u32)",
        ),
        (
            lambda b, i, f, v, u: b.bin("RotateLeft", v, i),
            "BinOpKind(RotateLeft,) [2, 0]: BinOpKind RotateLeft is not defined on (vec4i, u32)",
        ),
        (
            lambda b, i, f, v, u: b.bin("Mod", f, f),
            "BinOpKind(Mod,) [1, 1]: BinOpKind Mod is not defined on (vec4f, vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.bin("Div", v, v),
            "BinOpKind(Div,) [2, 2]: BinOpKind Div is not defined on (vec4i, vec4i)",
        ),
        (
            lambda b, i, f, v, u: b.bin("BitAnd", f, f),
            "BinOpKind(BitAnd,) [1, 1]: BinOpKind BitAnd is not defined on (vec4f, vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.un("Popcount", u),
            "UnOpKind(Popcount,) [3]: UnOpKind Popcount is not defined on (vec2u)",
        ),
        (
            lambda b, i, f, v, u: b.un("Abs", u),
            "UnOpKind(Abs,) [3]: UnOpKind Abs is not defined on (vec2u)",
        ),
        (
            lambda b, i, f, v, u: b.un("IsNan", f),
            "UnOpKind(IsNan,) [1]: UnOpKind IsNan is not defined on (vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.un("Acos", f),
            "UnOpKind(Acos,) [1]: UnOpKind Acos is not defined on (vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.bin("Add", f, b.f32(1.0)),
            "BinOpKind(Add,) [1, 4]: BinOpKind Add is not defined on (vec4f, f32)",
        ),
        (
            lambda b, i, f, v, u: b.fma(v, v, v),
            "Fma [2, 2, 2]: Fma is not defined on (vec4i, vec4i, vec4i)",
        ),
        (
            lambda b, i, f, v, u: b.cast(vt("I32", 2), f),
            "Cast(Vec(I32, 2),) [1]: Cast vec2i is not defined on (vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.cast("Bool", f),
            "Cast(Bool,) [1]: Cast bool is not defined on (vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.cast("F32", f),
            "Cast(F32,) [1]: Cast f32 is not defined on (vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.select(f, f, f),
            "Select [1, 1, 1]: Select is not defined on (vec4f, vec4f, vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.bitcast("U32", f),
            "OpaqueExpr(0, 'vyre.bitcast', b'\\x02') [1]: Bitcast u32 is not defined on (vec4f)",
        ),
        (
            lambda b, i, f, v, u: b.atomic("Add", 1, i, v),
            "Atomic(Add, 'Relaxed') [1, 0, 2]: Atomic Add is not defined on (vec4i)",
        ),
        (
            lambda b, i, f, v, u: b.vec("F32", i, i, i, i),
            "OpaqueExpr(0, 'vyre.vec', b'\\x13\\x0f\\x04') [0, 0, 0, 0]: "
            "Construct vec4f is not defined on (u32, u32, u32, u32)",
        ),
        (
            lambda b, i, f, v, u: b.vec("F32", b.f32(1.0), b.f32(2.0), b.f32(3.0)),
            "OpaqueExpr(0, 'vyre.vec', b'\\x13\\x0f\\x03') [4, 5, 6]: "
            "vyre.vec takes 2 or 4 operands, got 3",
        ),
        (
            lambda b, i, f, v, u: b.vec(vt("F32", 3), *(b.f32(1.0),) * 4),
            "OpaqueExpr(0, 'vyre.vec', b'\\x13\\x0f\\x03') [4, 4, 4, 4]: "
            "vyre.vec payload 130f03 is not a supported DataType: unsupported data type Vec(F32, 3)",
        ),
        (
            lambda b, i, f, v, u: b.vec(vt("U32", 2), i),
            "OpaqueExpr(0, 'vyre.vec', b'\\x13\\x02\\x02') [0]: "
            "vyre.vec takes 2 or 4 operands, got 1",
        ),
        (
            lambda b, i, f, v, u: b.op(_vec_op("vyre.vec", encode_datatype(V("U32"))), i, i),
            "OpaqueExpr(0, 'vyre.vec', b'\\x02') [0, 0]: Construct u32 is not defined on (u32, u32)",
        ),
        (
            lambda b, i, f, v, u: b.op(_vec_op("vyre.vec", b"\xff\xff"), i, i),
            "OpaqueExpr(0, 'vyre.vec', b'\\xff\\xff') [0, 0]: vyre.vec payload ffff is not a "
            "supported DataType: malformed descriptor at byte 1: invalid varint marker 255",
        ),
        (
            lambda b, i, f, v, u: b.extract(u, 2),
            "OpaqueExpr(0, 'vyre.extract', b'\\x02') [3]: "
            "vyre.extract payload '02' is not one component index below 2",
        ),
        (
            lambda b, i, f, v, u: b.op(_vec_op("vyre.extract", b""), f),
            "OpaqueExpr(0, 'vyre.extract', b'') [1]: "
            "vyre.extract payload '' is not one component index below 4",
        ),
        (
            lambda b, i, f, v, u: b.extract(i, 0),
            "OpaqueExpr(0, 'vyre.extract', b'\\x00') [0]: "
            "vyre.extract needs a vector operand, got u32",
        ),
        (
            lambda b, i, f, v, u: b.store(2, i, f),
            "StoreGlobal [2, 0, 1]: stores a vec4f into slot 2 'u' of vec2u",
        ),
        (
            lambda b, i, f, v, u: b.store(3, i, u),
            "StoreGlobal [3, 0, 3]: stores a vec2u into slot 3 's' of u32",
        ),
        (
            lambda b, i, f, v, u: b.op("StructuredIfThen", f, 0, value=False),
            "StructuredIfThen [1, 0]: condition has type vec4f, expected bool",
        ),
    ],
)
def test_operations_not_defined_on_vectors_are_refused(mutate, reason):
    assert_refused(_vec_kernel(mutate), reason)


@pytest.mark.parametrize(
    "slot, reason",
    [
        (
            BindingSlot(0, V("Vec", (V("F32"), 3)), None, "Global", "ReadWrite", "o"),
            "slot 0 'o' (Global): unsupported data type Vec(F32, 3)",
        ),
        (
            BindingSlot(0, V("Vec", (V("Bool"), 4)), None, "Global", "ReadWrite", "o"),
            "slot 0 'o' (Global): unsupported data type Vec(Bool, 4)",
        ),
        (
            BindingSlot(0, V("Vec4U32"), None, "Global", "ReadWrite", "o"),
            "slot 0 'o' (Global): unsupported data type Vec4U32",
        ),
        (
            BindingSlot(0, vt("F32", 4), 1, "Uniform", "ReadOnly", "o"),
            "slot 0 'o' (Uniform) holds vec4f x 1; uniform members are one read-only "
            "U32/I32/F32/Bool scalar",
        ),
        (
            BindingSlot(SH, V("Vec", (V("I32"), 8)), 4, "Shared", "ReadWrite", "o"),
            "slot 16777216 'o' (Shared): unsupported data type Vec(I32, 8)",
        ),
    ],
)
def test_bad_vector_slots_are_refused(slot, reason):
    assert_refused(KernelDescriptor("k", (slot,), (1, 1, 1), KernelBody()), reason)


def test_atomics_on_shared_vector_arrays_are_refused():
    make, body = kernel([BindingSlot(SH, vt("U32", 4), 8, "Shared", "ReadWrite", "s")])
    body.atomic("Add", SH, body.u32(0), body.splat("U32", 4, body.u32(1)))
    assert_refused(
        make(), "Atomic(Add, 'Relaxed') [16777216, 0, 2]: Atomic Add is not defined on (vec4u)"
    )


# --- from kernel source (frontend + lowering + this emitter) ----------------------------
VECTOR_SOURCE = """\
from vyre_build.lang import Buffer, barrier, f32, fma, global_id, kernel, local_array, local_id, shared, u32


@kernel(workgroup_size=64)
def vmix(x: Buffer[vec4f], y: Buffer[vec4f, "rw"], q: Buffer[vec4i, "w"], p: Buffer[vec2u, "w"], a: f32):
    sh = shared(vec4f, 64)
    parts = local_array(vec2u, 2)
    i = global_id().x
    l = local_id().x
    sh[l] = x[i]
    barrier()
    acc = vec4f(0.0)
    for k in range(3):
        acc = fma(vec4f(a), sh[63 - l], acc)
    parts[1] = vec2u(i, i * 2)
    if i < len(y):
        v = y[i] + acc
        y[i] = vec4f(v.w, v.z, v.y, v.x)
        q[i] = vec4i(v * 100.0)
        p[i] = parts[0] + parts[1] + vec2u(u32(1))
"""


def test_vector_kernel_from_source_validates_and_runs(device, tmp_path):
    from vyre_build.compiler import compile_file

    path = tmp_path / "vmix.py"
    path.write_text(VECTOR_SOURCE)
    (k,) = compile_file(str(path), targets=("wgsl",))
    assert k.wgsl == emit_wgsl(k.descriptor)
    assert "array<vec4<f32>>" in k.wgsl and "var<workgroup> " in k.wgsl
    validate(device, k.descriptor)
    slots = {s.name: s.slot for s in k.descriptor.slots}
    n, groups = 128, 2
    rng = np.random.default_rng(11)
    x = rng.uniform(-2, 2, 4 * n).astype(np.float32)
    y = rng.uniform(-2, 2, 4 * n).astype(np.float32)
    a = np.float32(0.75)
    out = dispatch(
        device,
        k.descriptor,
        {slots["x"]: x, slots["y"]: y, slots["q"]: np.zeros(4 * n), slots["p"]: np.zeros(2 * n)},
        {slots["a"]: a},
        groups=(groups, 1, 1),
    )
    mirrored = x.reshape(groups, 64, 4)[:, ::-1, :].reshape(n, 4)
    acc = np.zeros((n, 4), np.float32)
    for _ in range(3):
        acc = (a * mirrored + acc).astype(np.float32)
    v = y.reshape(n, 4) + acc
    np.testing.assert_allclose(out[slots["y"]].reshape(n, 4), v[:, ::-1], rtol=1e-5, atol=1e-5)
    got_q = out[slots["q"]].reshape(n, 4)
    assert np.all(np.abs(got_q - np.trunc(v * np.float32(100))) <= 1)  # truncation near .0 edges
    idx = np.arange(n, dtype=np.uint32)
    np.testing.assert_array_equal(
        out[slots["p"]].reshape(n, 2), np.stack([idx + 1, 2 * idx + 1], 1)
    )
