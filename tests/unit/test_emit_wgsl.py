"""WGSL emitter: hand-built descriptors -> naga validation -> real wgpu dispatch vs numpy.

Every op and convention of docs/descriptor-conventions.md is exercised, the pinned
semantics with their edge values. GPU runs go through wgpu on the first adapter (Mesa
lavapipe on a CPU); without one they skip (fail under CI=true). The dispatch helper is
private to this module on purpose: it must not depend on the runtime package.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from corpus import CORPUS
from corpus.values import COMPARES, I32_MAX, I32_MIN, NP_FLOAT
from descriptors import SH, V, assert_case, buf, kernel

from vyre_build.descriptor import (
    BindingSlot,
    KernelBody,
    KernelDescriptor,
    KernelOp,
    decode,
    encode,
)
from vyre_build.emit.wgsl import emit_wgsl
from vyre_build.emit.wgsl.memory import ident
from vyre_build.core.errors import DescriptorFormatError

NP = {"U32": np.uint32, "I32": np.int32, "F32": np.float32, "Bool": np.uint32}


def host_type(t):
    """(numpy dtype, components) of a slot element type; a Vec{E, n} buffer is a flat
    array of n * length values of E."""
    if t.name == "Vec":
        return NP[t.args[0].name], t.args[1]
    return NP[t.name], 1


def elementwise(ty_in, ty_out, fn, n_in=1):
    """out[i] = fn(body, in0[i], ...) over `n_in` input buffers; slot n_in is `out`."""
    slots = [buf(k, ty_in, f"in{k}", "ReadOnly") for k in range(n_in)] + [buf(n_in, ty_out, "out")]
    make, b = kernel(slots)
    i = b.gid()
    args = [b.load(k, i) for k in range(n_in)]
    b.store(n_in, i, fn(b, *args))
    return make()


# --- wgpu dispatch helper ------------------------------------------------------------
@pytest.fixture(scope="module")
def device(wgpu_device):
    """The raw wgpu device of conftest (skips, or fails under CI=true, without an adapter)."""
    return wgpu_device


def validate(device, desc):
    """Emit and hand the text to naga through create_shader_module; return the text."""
    text = emit_wgsl(desc)
    device.create_shader_module(code=text)
    return text


def dispatch(device, desc, arrays, scalars=None, groups=None):
    """Run `desc` once: arrays {slot: ndarray} (storage), scalars {slot: value} (uniform).

    Returns {slot: ndarray} read back for every storage slot (flat for vector elements).
    `groups` defaults to ceil(elements of the first written buffer / workgroup_size.x) on x.
    """
    import wgpu

    module = device.create_shader_module(code=emit_wgsl(desc))  # naga validates here
    entries, layout, keep, out_slots = [], [], [], []
    usage = wgpu.BufferUsage
    for s in desc.slots:
        if s.memory_class == "Global":
            dtype, components = host_type(s.element_type)
            data = np.ascontiguousarray(arrays[s.slot], dtype=dtype).ravel()
            b = device.create_buffer_with_data(
                data=data, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
            )
            kind = "read-only-storage" if s.visibility == "ReadOnly" else "storage"
            out_slots.append((s, b, data.size, components))
        elif s.memory_class == "Uniform" and s is next(
            u for u in desc.slots if u.memory_class == "Uniform"
        ):
            members = [u for u in desc.slots if u.memory_class == "Uniform"]
            raw = b"".join(
                np.array([scalars[u.slot]], NP[u.element_type.name]).tobytes() for u in members
            )
            raw += b"\0" * (-len(raw) % 16)  # the uniform block is padded to 16 bytes
            b = device.create_buffer_with_data(data=raw, usage=usage.UNIFORM)
            kind = "uniform"
        else:
            continue
        keep.append(b)
        entries.append({"binding": s.slot, "resource": {"buffer": b, "offset": 0, "size": b.size}})
        layout.append(
            {"binding": s.slot, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}}
        )
    bgl = device.create_bind_group_layout(entries=layout)
    pipeline = device.create_compute_pipeline(
        layout=device.create_pipeline_layout(bind_group_layouts=[bgl]),
        compute={"module": module, "entry_point": "main"},
    )
    bind_group = device.create_bind_group(layout=bgl, entries=entries)
    if groups is None:
        n = next(size // comps for s, _, size, comps in out_slots if s.visibility != "ReadOnly")
        groups = (math.ceil(n / desc.workgroup_size[0]), 1, 1)
    enc = device.create_command_encoder()
    cpass = enc.begin_compute_pass()
    cpass.set_pipeline(pipeline)
    cpass.set_bind_group(0, bind_group)
    cpass.dispatch_workgroups(*groups)
    cpass.end()
    device.queue.submit([enc.finish()])
    return {
        s.slot: np.frombuffer(device.queue.read_buffer(b), host_type(s.element_type)[0])[
            :size
        ].copy()
        for s, b, size, _ in out_slots
    }


def f32_bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


RNG = np.random.default_rng(1234)
EDGE_U32 = np.array(
    [
        0,
        1,
        2,
        3,
        31,
        32,
        33,
        0x7FFFFFFF,
        0x80000000,
        0xFFFFFFFE,
        0xFFFFFFFF,
        65535,
        65536,
        123456789,
    ],
    np.uint32,
)
EDGE_I32 = np.array(
    [
        0,
        1,
        -1,
        2,
        -2,
        7,
        -7,
        31,
        32,
        I32_MIN,
        I32_MIN + 1,
        I32_MAX,
        I32_MAX - 1,
        65536,
        -65536,
        123456789,
    ],
    np.int32,
)


def pairs(edge, dtype, extra=300):
    """All pairs of edge values plus random ones (a size not a multiple of 64)."""
    a, b = np.meshgrid(edge, edge)
    info = np.iinfo(dtype)
    ra = RNG.integers(info.min, info.max, extra, dtype=np.int64, endpoint=True).astype(dtype)
    rb = RNG.integers(info.min, info.max, extra, dtype=np.int64, endpoint=True).astype(dtype)
    return np.concatenate([a.ravel(), ra]).astype(dtype), np.concatenate([b.ravel(), rb]).astype(
        dtype
    )


# --- integer arithmetic (wrap, division, shifts) --------------------------------------
def wrap(x, dtype):
    return np.asarray(x, np.int64).astype(dtype)  # two's complement wrap via int64


def ref_div(a, b):
    """Pinned integer quotient and remainder: truncating, x / 0 == x, x % 0 == 0, wrapping."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    q = np.sign(a64) * np.sign(safe) * (np.abs(a64) // np.abs(safe))
    return wrap(np.where(b64 == 0, a64, q), a.dtype), wrap(
        np.where(b64 == 0, 0, a64 - q * safe), a.dtype
    )


def wrapped_mul(a, b):
    prod = a.view(np.uint32).astype(np.uint64) * b.view(np.uint32).astype(np.uint64)  # mod 2^64
    return prod.astype(np.uint32).view(a.dtype)


@pytest.mark.parametrize("ty", ["U32", "I32"])
def test_integer_arith_wraps_and_div_mod_pinned(device, ty):
    dtype = NP[ty]
    a, b = pairs(EDGE_U32 if ty == "U32" else EDGE_I32, dtype)
    ops = ["Add", "Sub", "Mul", "Div", "Mod", "Min", "Max", "AbsDiff", "BitAnd", "BitOr", "BitXor"]
    slots = [buf(0, ty, "a", "ReadOnly"), buf(1, ty, "b", "ReadOnly")] + [
        buf(2 + k, ty, f"o_{op}") for k, op in enumerate(ops)
    ]
    make, body = kernel(slots)
    i = body.gid()
    x, y = body.load(0, i), body.load(1, i)
    for k, op in enumerate(ops):
        body.store(2 + k, i, body.bin(op, x, y))
    zeros = np.zeros(a.size, dtype)
    arrays = {0: a, 1: b, **{2 + k: zeros for k in range(len(ops))}}
    # the first written buffer decides the grid: all have a.size elements
    out = dispatch(device, make(), arrays)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    quo, rem = ref_div(a, b)
    expect = {
        "Add": wrap(a64 + b64, dtype),
        "Sub": wrap(a64 - b64, dtype),
        "Mul": wrapped_mul(a, b),
        "Div": quo,
        "Mod": rem,
        "Min": np.minimum(a, b),
        "Max": np.maximum(a, b),
        "AbsDiff": wrap(np.abs(a64 - b64), dtype),
        "BitAnd": a & b,
        "BitOr": a | b,
        "BitXor": a ^ b,
    }
    for k, op in enumerate(ops):
        np.testing.assert_array_equal(out[2 + k], expect[op], err_msg=f"{ty} {op}")
    if ty == "I32":  # the documented corner cases, spelled out
        idx = np.flatnonzero((a == I32_MIN) & (b == -1))[0]
        assert out[2 + ops.index("Div")][idx] == I32_MIN and out[2 + ops.index("Mod")][idx] == 0
        idx = np.flatnonzero((a == 7) & (b == 0))[0]
        assert out[2 + ops.index("Div")][idx] == 7 and out[2 + ops.index("Mod")][idx] == 0
        idx = np.flatnonzero((a == -7) & (b == 2))[0]
        assert out[2 + ops.index("Div")][idx] == -3 and out[2 + ops.index("Mod")][idx] == -1


@pytest.mark.parametrize("ty", ["U32", "I32"])
def test_shifts_mask_and_rotations(device, ty):
    dtype = NP[ty]
    vals = EDGE_U32 if ty == "U32" else EDGE_I32
    amounts = np.array([0, 1, 5, 31, 32, 33, 63, 64, 100, 0xFFFFFFFF], np.uint32)
    a, s = (m.ravel() for m in np.meshgrid(vals, amounts))
    ops = ["Shl", "Shr", "RotateLeft", "RotateRight", "MulHigh"]
    slots = [buf(0, ty, "a", "ReadOnly"), buf(1, "U32", "s", "ReadOnly")] + [
        buf(2 + k, ty, f"o{k}") for k in range(len(ops))
    ]
    make, body = kernel(slots)
    i = body.gid()
    x, n = body.load(0, i), body.load(1, i)
    for k, op in enumerate(ops[:4]):
        body.store(2 + k, i, body.bin(op, x, n))
    body.store(6, i, body.bin("MulHigh", x, body.load(0, body.bin("BitXor", i, body.u32(3)))))
    out = dispatch(
        device, make(), {0: a, 1: s, **{2 + k: np.zeros(a.size, dtype) for k in range(5)}}
    )
    u = a.view(np.uint32).astype(np.uint64)
    m = (s & 31).astype(np.uint64)
    shl = ((u << m) & 0xFFFFFFFF).astype(np.uint32).view(dtype)
    shr = (a >> m.astype(dtype)) if ty == "I32" else (u >> m).astype(np.uint32)
    rotl = (((u << m) | (u >> ((32 - m) & 31))) & 0xFFFFFFFF).astype(np.uint32).view(dtype)
    mr = (32 - m) & 31
    rotr = (((u << mr) | (u >> ((32 - mr) & 31))) & 0xFFFFFFFF).astype(np.uint32).view(dtype)
    np.testing.assert_array_equal(out[2], shl)
    np.testing.assert_array_equal(out[3], shr.astype(dtype))
    np.testing.assert_array_equal(out[4], rotl)
    np.testing.assert_array_equal(out[5], rotr)
    idx = np.arange(a.size) ^ 3  # MulHigh against a partner lane; past the end the load gives 0
    partner = np.where(idx < a.size, a[np.minimum(idx, a.size - 1)], 0).astype(dtype)
    hi = np.array([(int(x) * int(y)) >> 32 for x, y in zip(a, partner)], np.int64)
    np.testing.assert_array_equal(out[6], hi.astype(dtype))


# --- unary ops -----------------------------------------------------------------------
@pytest.mark.parametrize("ty", ["U32", "I32"])
def test_integer_unops_and_bit_counts(device, ty):
    dtype = NP[ty]
    vals = np.concatenate(
        [
            EDGE_U32 if ty == "U32" else EDGE_I32,
            RNG.integers(0, 1 << 32, 100, dtype=np.uint64).astype(np.uint32).view(dtype),
        ]
    )
    ops = ["Negate", "BitNot", "Abs", "Popcount", "Clz", "Ctz", "ReverseBits", "Sign"]
    make, body = kernel(
        [buf(0, ty, "a", "ReadOnly")] + [buf(1 + k, ty, f"o{k}") for k in range(len(ops))]
    )
    i = body.gid()
    x = body.load(0, i)
    for k, op in enumerate(ops):
        body.store(1 + k, i, body.un(op, x))
    out = dispatch(
        device, make(), {0: vals, **{1 + k: np.zeros(vals.size, dtype) for k in range(len(ops))}}
    )
    u = [int(v) for v in vals.view(np.uint32)]
    ref = {
        "Negate": wrap(-vals.astype(np.int64), dtype),
        "BitNot": ~vals,
        "Abs": wrap(np.abs(vals.astype(np.int64)), dtype) if ty == "I32" else vals,
        "Popcount": np.array([bin(v).count("1") for v in u], dtype),
        "Clz": np.array([32 - v.bit_length() for v in u], dtype),
        "Ctz": np.array([(v & -v).bit_length() - 1 if v else 32 for v in u], dtype),
        "ReverseBits": np.array([int(f"{v:032b}"[::-1], 2) for v in u], np.uint32).view(dtype),
        "Sign": np.sign(vals.astype(np.int64)).astype(dtype),
    }
    for k, op in enumerate(ops):
        np.testing.assert_array_equal(out[1 + k], ref[op], err_msg=f"{ty} {op}")
    zero = int(np.flatnonzero(vals == 0)[0])
    assert out[1 + ops.index("Clz")][zero] == 32 and out[1 + ops.index("Ctz")][zero] == 32
    if ty == "I32":
        mn = int(np.flatnonzero(vals == I32_MIN)[0])
        assert (
            out[1 + ops.index("Abs")][mn] == I32_MIN and out[1 + ops.index("Negate")][mn] == I32_MIN
        )


SPECIAL_F32 = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.99,
        -1.99,
        2.5,
        3.5,
        1e-40,
        -1e-40,
        np.inf,
        -np.inf,
        np.nan,
        3e9,
        -3e9,
        2147483520.0,
        2147483648.0,
        -2147483648.0,
        -2147483904.0,
        4294967040.0,
        4294967296.0,
        1e20,
        -1e20,
        16777217.0,
        0.1,
        3.4028235e38,
    ],
    np.float32,
)


def test_float_classification_and_math(device):
    vals = np.concatenate(
        [SPECIAL_F32, np.array([0xFFC00000, 0x7F800001], np.uint32).view(np.float32)]
    )
    classes = ["IsNan", "IsInf", "IsFinite"]
    # numpy references shared with the corpus (tests/corpus/values.py)
    names = (
        "Sqrt Floor Ceil Round Trunc Abs Sign Negate Exp Log Sin Cos Tanh Exp2 Log2 InverseSqrt"
        " Reciprocal Atan"
    ).split()
    math_ops = {op: NP_FLOAT[op] for op in names}
    slots = (
        [buf(0, "F32", "a", "ReadOnly")]
        + [buf(1 + k, "U32", f"c{k}") for k in range(3)]
        + [buf(4 + k, "F32", f"m{k}") for k in range(len(names))]
    )
    make, body = kernel(slots)
    i = body.gid()
    x = body.load(0, i)
    for k, op in enumerate(classes):
        body.store(1 + k, i, body.cast("U32", body.un(op, x)))
    for k, op in enumerate(names):
        body.store(4 + k, i, body.un(op, x))
    n = vals.size
    out = dispatch(device, make(), {0: vals, **{s: np.zeros(n) for s in range(1, 4 + len(names))}})
    np.testing.assert_array_equal(out[1], np.isnan(vals).astype(np.uint32))
    np.testing.assert_array_equal(out[2], np.isinf(vals).astype(np.uint32))
    np.testing.assert_array_equal(out[3], np.isfinite(vals).astype(np.uint32))
    exact = {"Floor", "Ceil", "Round", "Trunc", "Abs", "Sign", "Negate"}
    moderate = (np.abs(vals) < 50) & (np.abs(vals) > 1e-30)
    trig = {"Sin", "Cos"}  # Vulkan bounds their error only on [-pi, pi]
    with np.errstate(all="ignore"):
        for k, op in enumerate(names):
            ref = math_ops[op](vals).astype(np.float32)
            sel = (
                np.isfinite(vals) & (np.abs(vals) > 1e-30)
                if op in exact
                else moderate & np.isfinite(ref)
            )
            if op in trig:
                sel &= np.abs(vals) < 3.14
            if op in ("Sqrt", "Log", "Log2", "InverseSqrt"):
                sel &= vals > 0
            np.testing.assert_allclose(
                out[4 + k][sel],
                ref[sel],
                rtol=0 if op in exact else 2e-5,
                atol=0 if op in exact else 1e-6,
                err_msg=op,
            )


def test_fma_select_min_max_float(device):
    a = RNG.standard_normal(333).astype(np.float32)
    b = RNG.standard_normal(333).astype(np.float32)
    slots = [buf(0, "F32", "a", "ReadOnly"), buf(1, "F32", "b", "ReadOnly")] + [
        buf(2 + k, "F32", f"o{k}") for k in range(6)
    ]
    make, body = kernel(slots)
    i = body.gid()
    x, y = body.load(0, i), body.load(1, i)
    body.store(2, i, body.op("Fma", x, y, x))
    body.store(3, i, body.op("Select", body.bin("Gt", x, y), x, y))
    body.store(4, i, body.bin("Min", x, y))
    body.store(5, i, body.bin("AbsDiff", x, y))
    body.store(6, i, body.bin("Div", x, y))
    body.store(7, i, body.bin("Mod", x, y))
    out = dispatch(device, make(), {0: a, 1: b, **{s: np.zeros(333) for s in range(2, 8)}})
    np.testing.assert_allclose(out[2], a * b + a, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out[3], np.maximum(a, b))
    np.testing.assert_array_equal(out[4], np.minimum(a, b))
    np.testing.assert_array_equal(out[5], np.abs(a - b))
    np.testing.assert_allclose(out[6], a / b, rtol=1e-6)
    np.testing.assert_allclose(out[7], np.fmod(a, b), rtol=1e-5, atol=1e-6)


def test_float_compares_follow_ieee_with_nan(device):
    a = np.array([1.0, np.nan, 1.0, np.nan, -0.0, np.inf, 2.0, -np.inf], np.float32)
    b = np.array([1.0, 1.0, np.nan, np.nan, 0.0, np.inf, 1.0, 3.0], np.float32)
    ops = {name: NP_FLOAT[name] for name in COMPARES}
    make, body = kernel(
        [buf(0, "F32", "a", "ReadOnly"), buf(1, "F32", "b", "ReadOnly")]
        + [buf(2 + k, "U32", f"o{k}") for k in range(len(ops))],
        wg=(4, 1, 1),
    )
    i = body.gid()
    x, y = body.load(0, i), body.load(1, i)
    for k, op in enumerate(ops):
        body.store(2 + k, i, body.cast("U32", body.bin(op, x, y)))
    out = dispatch(
        device, make(), {0: a, 1: b, **{2 + k: np.zeros(a.size) for k in range(len(ops))}}
    )
    for k, (op, fn) in enumerate(ops.items()):
        np.testing.assert_array_equal(out[2 + k], fn(a, b).astype(np.uint32), err_msg=op)


def test_bool_ops_select_and_bool_shared(device):
    a = np.array([0, 1, 0, 1, 5, 0, 7], np.uint32)
    b = np.array([0, 0, 1, 1, 0, 9, 2], np.uint32)
    names = ["And", "Or", "BitAnd", "BitOr", "BitXor", "Eq", "Ne"]
    make, body = kernel(
        [buf(0, "U32", "a", "ReadOnly"), buf(1, "U32", "b", "ReadOnly")]
        + [buf(2 + k, "U32", f"o{k}") for k in range(len(names) + 3)]
        + [BindingSlot(SH, V("Bool"), 8, "Shared", "ReadWrite", "flags")],
        wg=(8, 1, 1),
    )
    i, lid = body.gid(), body.op("LocalInvocationId", 0)
    x, y = body.load(0, i), body.load(1, i)
    p, q = body.cast("Bool", x), body.cast("Bool", y)
    for k, op in enumerate(names):
        body.store(2 + k, i, body.cast("U32", body.bin(op, p, q)))
    n = len(names)
    body.store(2 + n, i, body.cast("U32", body.un("LogicalNot", p)))
    body.store(3 + n, i, body.op("Select", p, x, body.bin("Add", y, body.u32(100))))
    body.store(SH, lid, body.un("BitNot", q))
    body.op(V("Barrier", ("AcqRel",)), value=False)
    body.store(4 + n, i, body.cast("U32", body.load(SH, body.bin("BitXor", lid, body.u32(1)))))
    out = dispatch(device, make(), {0: a, 1: b, **{s: np.zeros(a.size) for s in range(2, 5 + n)}})
    pa, qb = a != 0, b != 0
    ref = [pa & qb, pa | qb, pa & qb, pa | qb, pa ^ qb, pa == qb, pa != qb]
    for k, r in enumerate(ref):
        np.testing.assert_array_equal(out[2 + k], r.astype(np.uint32), err_msg=names[k])
    np.testing.assert_array_equal(out[2 + n], (~pa).astype(np.uint32))
    np.testing.assert_array_equal(out[3 + n], np.where(pa, a, b + 100))
    partner = np.arange(a.size) ^ 1  # lane 7 reads the never-written lane 6 of an 8-wide array
    expect = np.where(partner < a.size, ~qb[np.minimum(partner, a.size - 1)], True)
    np.testing.assert_array_equal(out[4 + n], expect.astype(np.uint32))


# --- casts, bitcast, literals ----------------------------------------------------------
def sat_cast(vals, dtype):
    info = np.iinfo(dtype)
    out = []
    for v in vals.astype(np.float64):
        out.append(
            0
            if math.isnan(v)
            else int(
                max(info.min, min(info.max, math.trunc(v)))
                if math.isfinite(v)
                else (info.max if v > 0 else info.min)
            )
        )
    return np.array(out, dtype)


def test_casts_saturate_and_round(device):
    f = SPECIAL_F32
    ints = np.array(
        [
            0,
            1,
            -1,
            16777217,
            16777219,
            -16777219,
            33554435,
            I32_MIN,
            I32_MAX,
            2147483583,
            2147483584,
            123456789,
            -123456789,
        ],
        np.int32,
    )
    make, body = kernel(
        [
            buf(0, "F32", "f", "ReadOnly"),
            buf(1, "I32", "n", "ReadOnly"),
            buf(2, "I32", "f_i"),
            buf(3, "U32", "f_u"),
            buf(4, "U32", "f_b"),
            buf(5, "F32", "n_f"),
            buf(6, "F32", "u_f"),
            buf(7, "U32", "n_u"),
            buf(8, "I32", "b_i"),
            buf(9, "U32", "bits"),
        ],
        wg=(16, 1, 1),
    )
    i = body.gid()
    x, n = body.load(0, i), body.load(1, i)
    body.store(2, i, body.cast("I32", x))
    body.store(3, i, body.cast("U32", x))
    body.store(4, i, body.cast("U32", body.cast("Bool", x)))
    body.store(5, i, body.cast("F32", n))
    body.store(6, i, body.cast("F32", body.cast("U32", n)))
    body.store(7, i, body.cast("U32", n))
    body.store(8, i, body.cast("I32", body.cast("Bool", n)))
    body.store(9, i, body.op(V("OpaqueExpr", (0, "vyre.bitcast", bytes([2]))), x))
    size = max(f.size, ints.size)
    fp = np.resize(f, size)
    ip = np.resize(ints, size)
    out = dispatch(device, make(), {0: fp, 1: ip, **{s: np.zeros(size) for s in range(2, 10)}})
    np.testing.assert_array_equal(out[2], sat_cast(fp, np.int32))
    np.testing.assert_array_equal(out[3], sat_cast(fp, np.uint32))
    np.testing.assert_array_equal(out[4], (fp != 0).astype(np.uint32))  # NaN -> true
    np.testing.assert_array_equal(out[5], ip.astype(np.float32))  # numpy rounds to nearest even
    np.testing.assert_array_equal(out[6], ip.view(np.uint32).astype(np.float32))
    np.testing.assert_array_equal(out[7], ip.view(np.uint32))
    np.testing.assert_array_equal(out[8], (ip != 0).astype(np.int32))
    np.testing.assert_array_equal(out[9], fp.view(np.uint32))


def test_literals_keep_exact_bits(device):
    floats = [
        0.0,
        -0.0,
        0.1,
        -2.5,
        1e-45,
        -1.17549435e-38,
        1.17549435e-38,
        3.4028234663852886e38,
        float("inf"),
        float("-inf"),
        float("nan"),
        16777216.0,
        1 / 3,
    ]
    from vyre_build.descriptor import F32Bits

    floats.append(F32Bits(0x7FC00123))  # NaN payload
    floats.append(F32Bits(0xFFA00001))  # signalling NaN, sign bit set
    ints = [0, 1, -1, I32_MIN, I32_MAX]
    uints = [0, 0xFFFFFFFF, 0x80000000]
    make, body = kernel(
        [
            buf(0, "U32", "fbits"),
            buf(1, "I32", "ivals"),
            buf(2, "U32", "uvals"),
            buf(3, "U32", "bools"),
        ],
        wg=(1, 1, 1),
    )
    for k, v in enumerate(floats):
        body.store(
            0, body.u32(k), body.op(V("OpaqueExpr", (0, "vyre.bitcast", bytes([2]))), body.f32(v))
        )
    for k, v in enumerate(ints):
        body.store(1, body.u32(k), body.i32(v))
    for k, v in enumerate(uints):
        body.store(2, body.u32(k), body.u32(v))
    body.store(3, body.u32(0), body.cast("U32", body.bool(True)))
    body.store(3, body.u32(1), body.cast("U32", body.bool(False)))
    out = dispatch(
        device,
        make(),
        {
            0: np.zeros(len(floats)),
            1: np.zeros(len(ints)),
            2: np.zeros(len(uints)),
            3: np.full(2, 7),
        },
        groups=(1, 1, 1),
    )
    want = [
        f.bits if isinstance(f, F32Bits) else struct.unpack("<I", struct.pack("<f", f))[0]
        for f in floats
    ]
    assert [hex(v) for v in out[0]] == [hex(v) for v in want]
    assert out[1].tolist() == ints and out[2].tolist() == uints and out[3].tolist() == [1, 0]


# --- memory: bounds, shared, scratch, uniforms, atomics ----------------------------------
def test_out_of_bounds_loads_zero_and_stores_dropped(device):
    n = 100
    make, body = kernel(
        [
            buf(0, "F32", "src", "ReadOnly"),
            buf(1, "I32", "dst"),
            buf(2, "F32", "loaded"),
            BindingSlot(SH, V("I32"), 8, "Shared", "ReadWrite", "tile"),
            BindingSlot(SH + 1, V("U32"), 1, "Scratch", "ReadWrite", "cell"),
        ]
    )
    i = body.gid()
    shifted = body.bin("Add", i, body.u32(3))
    body.store(2, i, body.load(0, shifted))  # OOB for the last 3
    body.store(1, shifted, body.cast("I32", i))  # OOB store for the last 3
    lid = body.op("LocalInvocationId", 0)
    body.store(SH, lid, body.cast("I32", lid))  # only lid < 8 lands
    body.op(V("Barrier", ("AcqRel",)), value=False)
    body.store(SH + 1, body.u32(1), body.u32(99))  # OOB scratch store: dropped
    sh = body.load(SH, body.bin("BitAnd", lid, body.u32(15)))
    sc = body.load(SH + 1, body.u32(0))
    sc_oob = body.load(SH + 1, body.u32(5))
    mix = body.bin("Add", body.bin("Add", sh, body.cast("I32", sc)), body.cast("I32", sc_oob))
    # lanes i < 3 receive no store from any thread; keep their value at -5 via the guard below
    with_tile = body.if_(body.bin("Lt", i, body.u32(3)))
    with_tile.store(1, i, mix)
    src = np.arange(n, dtype=np.float32) + 1
    out = dispatch(device, make(), {0: src, 1: np.full(n, -5, np.int32), 2: np.zeros(n)})
    expect_loaded = np.concatenate([src[3:], np.zeros(3, np.float32)])
    np.testing.assert_array_equal(out[2], expect_loaded)
    lid_vals = np.arange(3) % 64
    expect_mix = np.where((lid_vals & 15) < 8, lid_vals & 15, 0)
    np.testing.assert_array_equal(out[1][:3], expect_mix)
    np.testing.assert_array_equal(out[1][3:], np.arange(n - 3))


def test_uniform_params_of_every_type_and_keyword_names(device):
    slots = [
        buf(0, "F32", "loop", "ReadOnly"),
        buf(1, "F32", "var"),
        BindingSlot(2, V("F32"), 1, "Uniform", "ReadOnly", "main"),
        BindingSlot(3, V("U32"), 1, "Uniform", "ReadOnly", "u_n"),
        BindingSlot(4, V("I32"), 1, "Uniform", "ReadOnly", "my-offset"),
        BindingSlot(5, V("Bool"), 1, "Uniform", "ReadOnly", "_flag"),
    ]
    make, body = kernel(slots)
    i = body.gid()
    a, n, off, flag = (body.param(s) for s in (2, 3, 4, 5))
    inside = body.if_(body.bin("And", body.bin("Lt", i, n), flag))
    v = inside.bin("Mul", inside.load(0, i), a)
    inside.store(1, i, inside.bin("Add", v, inside.cast("F32", off)))
    x = np.arange(70, dtype=np.float32)
    desc = make()
    text = validate(device, desc)
    assert "u_my_2d_offset" in text and "u_u_5f_n" in text and "u__5f_flag" in text
    out = dispatch(device, desc, {0: x, 1: np.zeros(70)}, {2: 2.5, 3: 50, 4: -3, 5: 1})
    np.testing.assert_array_equal(out[1], np.where(np.arange(70) < 50, x * 2.5 - 3, 0))
    out = dispatch(device, desc, {0: x, 1: np.zeros(70)}, {2: 2.5, 3: 50, 4: -3, 5: 0})
    np.testing.assert_array_equal(out[1], np.zeros(70))


@pytest.mark.parametrize("ty", ["U32", "I32"])
def test_atomics_global_and_shared(device, ty):
    n = 200  # not a multiple of 64; 4 workgroups
    ops = ["Add", "Or", "And", "Xor", "Min", "Max", "Exchange"]
    slots = [
        buf(0, ty, "vals", "ReadOnly"),
        buf(1, ty, "acc"),
        buf(2, ty, "oob_olds"),
        buf(3, ty, "cas"),
        buf(4, ty, "cas_olds"),
        buf(5, "U32", "counts"),
        BindingSlot(SH, V(ty), 2, "Shared", "ReadWrite", "hist"),
    ]
    make, body = kernel(slots)
    i = body.gid()
    live = body.if_(body.bin("Lt", i, body.length(0)))
    v = live.load(0, i)
    for k, op in enumerate(ops):
        live.atomic(op, 1, live.u32(k), v)
    live.store(2, i, live.atomic("Add", 1, live.u32(100), v))  # OOB: no effect, returns 0
    mine = live.cast(ty, live.bin("Add", i, live.u32(1)))
    live.store(4, i, live.atomic("CompareExchange", 3, live.u32(0), live.lit(ty, 0), mine))
    lid = body.op("LocalInvocationId", 0)
    body.atomic("Add", SH, body.bin("BitAnd", lid, body.u32(1)), body.lit(ty, 1))
    body.op(V("Barrier", ("AcqRel",)), value=False)
    first = body.if_(body.bin("Eq", lid, body.u32(0)))
    first.store(5, first.op("WorkgroupId", 0), first.cast("U32", first.load(SH, first.u32(0))))
    plain = body.if_(body.bin("Eq", i, body.u32(0)))  # plain load/store of an atomic buffer
    plain.store(1, plain.u32(7), plain.bin("Add", plain.load(1, plain.u32(7)), plain.lit(ty, 5)))
    vals = np.resize(np.array([3, 5, 12, 1, 9], NP[ty]), n)
    if ty == "I32":
        vals[::7] *= -1
    init = np.array([0, 0, -1, 0, 1000, -1000, 0, 77], np.int64).astype(NP[ty])
    out = dispatch(
        device,
        make(),
        {0: vals, 1: init, 2: np.full(n, 9), 3: np.zeros(1), 4: np.zeros(n), 5: np.zeros(4)},
        groups=(4, 1, 1),
    )
    acc = out[1]
    assert acc[0] == wrap(vals.astype(np.int64).sum(), NP[ty])
    assert acc[1] == np.bitwise_or.reduce(vals)
    assert acc[2] == np.bitwise_and.reduce(vals) & init[2]
    assert acc[3] == np.bitwise_xor.reduce(vals)
    assert acc[4] == min(vals.min(), init[4]) and acc[5] == max(vals.max(), init[5])
    assert acc[6] in vals and acc[7] == 82
    np.testing.assert_array_equal(out[2], np.zeros(n))
    olds = out[4]  # exactly one invocation saw 0 and swapped in i + 1; the rest saw that
    winner = np.flatnonzero(olds == 0)
    assert winner.size == 1
    np.testing.assert_array_equal(np.delete(olds, winner), np.full(n - 1, winner[0] + 1))
    assert out[3][0] == winner[0] + 1
    assert out[5].tolist() == [32, 32, 32, 32]  # lanes with an even lid, per workgroup


# --- control flow --------------------------------------------------------------------
def test_loops_break_continue_return_and_ifs(device):
    n = 130
    make, body = kernel(
        [
            buf(0, "I32", "out"),
            buf(1, "U32", "steps"),
            BindingSlot(SH, V("I32"), 1, "Scratch", "ReadWrite", "acc"),
            BindingSlot(SH + 1, V("U32"), 1, "Scratch", "ReadWrite", "j"),
            BindingSlot(SH + 2, V("I32"), 4, "Scratch", "ReadWrite", "arr"),
        ],
        wg=(32, 1, 1),
    )
    i = body.gid()
    zero = body.u32(0)
    early = body.if_(body.bin("Ge", i, body.length(0)))
    early.op("Return", value=False)
    ii = body.cast("I32", i)
    # for k in range(-2, i % 7): acc += k; continue when k == 1; nested for with LoopIndex
    loop = body.for_("k", body.i32(-2), body.bin("Mod", ii, body.i32(7)))
    k = loop.op(V("LoopIndex", ("k",)))
    skip = loop.if_(loop.bin("Eq", k, loop.i32(1)))
    skip.node("vyre.continue")
    inner = loop.for_("m", loop.u32(0), loop.u32(2))
    m = inner.op(V("LoopIndex", ("m",)))
    kk = inner.op(V("LoopIndex", ("k",)))
    cur = inner.load(SH, inner.u32(0))
    inner.store(SH, inner.u32(0), inner.bin("Add", cur, inner.bin("Add", kk, inner.cast("I32", m))))
    inner.store(SH + 2, inner.bin("BitAnd", inner.cast("U32", kk), inner.u32(3)), kk)
    # while-style vyre.loop with a continuing block: j += 3 until j >= i % 20 (break)
    b_idx, lbody = body.child()
    c_idx, cont = body.child()
    body.node("vyre.loop", b_idx, c_idx)
    j = lbody.load(SH + 1, lbody.u32(0))
    stop_idx, stop = lbody.child()
    else_idx, go = lbody.child()
    lbody.op(
        "StructuredIfThenElse",
        lbody.bin("Ge", j, lbody.bin("Mod", i, lbody.u32(20))),
        stop_idx,
        else_idx,
        value=False,
    )
    stop.node("vyre.break")
    go.store(1, i, go.bin("Add", go.load(1, i), go.u32(1)))
    cont.store(SH + 1, cont.u32(0), cont.bin("Add", cont.load(SH + 1, cont.u32(0)), cont.u32(3)))
    arr_sum = body.bin("Add", body.load(SH + 2, body.u32(2)), body.load(SH + 2, body.u32(3)))
    body.store(0, i, body.bin("Add", body.bin("Mul", body.load(SH, zero), body.i32(100)), arr_sum))
    out = dispatch(device, make(), {0: np.zeros(n), 1: np.zeros(n)}, groups=(5, 1, 1))
    exp_out, exp_steps = [], []
    for t in range(n):
        acc, arr = 0, [0, 0, 0, 0]
        for kv in range(-2, t % 7):
            if kv == 1:
                continue
            for mv in range(2):
                acc += kv + mv
                arr[kv & 3] = kv
        jv, steps = 0, 0
        while not jv >= t % 20:
            steps += 1
            jv += 3
        exp_out.append(acc * 100 + arr[2] + arr[3])
        exp_steps.append(steps)
    np.testing.assert_array_equal(out[0], exp_out)
    np.testing.assert_array_equal(out[1], exp_steps)


def test_builtin_ids_and_num_workgroups_3d(device):
    make, body = kernel([buf(0, "U32", "out")], wg=(4, 2, 2))
    g = [body.gid(a) for a in range(3)]
    nw = [body.op(V("OpaqueExpr", (0, "vyre.num_workgroups", b"")), a) for a in range(3)]
    lid = [body.op("LocalInvocationId", a) for a in range(3)]
    wid = [body.op("WorkgroupId", a) for a in range(3)]
    # linear index over the whole grid, computed from the counts
    wx = body.bin("Mul", nw[0], body.u32(4))
    wy = body.bin("Mul", nw[1], body.u32(2))
    lin = body.bin(
        "Add", g[0], body.bin("Mul", wx, body.bin("Add", g[1], body.bin("Mul", wy, g[2])))
    )
    packed = body.bin(
        "BitOr", body.bin("Shl", lid[0], body.u32(0)), body.bin("Shl", lid[1], body.u32(4))
    )
    packed = body.bin("BitOr", packed, body.bin("Shl", lid[2], body.u32(8)))
    packed = body.bin("BitOr", packed, body.bin("Shl", wid[0], body.u32(12)))
    packed = body.bin("BitOr", packed, body.bin("Shl", wid[1], body.u32(16)))
    packed = body.bin("BitOr", packed, body.bin("Shl", wid[2], body.u32(20)))
    body.store(0, lin, packed)
    groups = (3, 2, 2)
    total = 12 * 4 * 4
    out = dispatch(device, make(), {0: np.zeros(total + 5)}, groups=groups)[0]
    for z in range(4):
        for y in range(4):
            for x in range(12):
                v = out[x + 12 * (y + 4 * z)]
                assert (v & 15, (v >> 4) & 15, (v >> 8) & 15) == (x % 4, y % 2, z % 2)
                assert ((v >> 12) & 15, (v >> 16) & 15, (v >> 20) & 15) == (x // 4, y // 2, z // 2)
    assert out[total:].tolist() == [0] * 5


def test_shared_reduction_with_barriers(device):
    n, wg = 1000, 64
    make, body = kernel(
        [
            buf(0, "F32", "x", "ReadOnly"),
            buf(1, "F32", "partial"),
            BindingSlot(SH, V("F32"), wg, "Shared", "ReadWrite", "tile"),
        ],
        wg=(wg, 1, 1),
    )
    i, lid = body.gid(), body.op("LocalInvocationId", 0)
    body.store(SH, lid, body.load(0, i))  # OOB load gives 0 past n
    body.op(V("Barrier", ("AcqRel",)), value=False)
    loop = body.for_("s", body.u32(0), body.u32(6))
    stride = loop.bin("Shr", loop.u32(32), loop.op(V("LoopIndex", ("s",))))
    active = loop.if_(loop.bin("Lt", lid, stride))
    other = active.load(SH, active.bin("Add", lid, stride))
    active.store(SH, lid, active.bin("Add", active.load(SH, lid), other))
    loop.op(V("Barrier", ("SeqCst",)), value=False)
    head = body.if_(body.bin("Eq", lid, body.u32(0)))
    head.store(1, head.op("WorkgroupId", 0), head.load(SH, head.u32(0)))
    x = RNG.standard_normal(n).astype(np.float32)
    groups = math.ceil(n / wg)
    out = dispatch(device, make(), {0: x, 1: np.zeros(groups)}, groups=(groups, 1, 1))
    ref = np.pad(x, (0, groups * wg - n)).reshape(groups, wg).sum(axis=1)
    np.testing.assert_allclose(out[1], ref, rtol=1e-5, atol=1e-5)


# --- the hand-built corpus, through WGSL ----------------------------------------------
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_case_through_wgsl_matches_numpy(device, name):
    """Every corpus case (the SPIR-V tests dispatch the same ones) computes its reference."""
    case = CORPUS[name]()
    slot = {s.name: s.slot for s in case.desc.slots}
    got = dispatch(
        device,
        case.desc,
        {slot[n]: a for n, a in case.inputs.items()},
        {slot[n]: v for n, v in case.scalars.items()},
        groups=case.groups,
    )
    assert_case(case, {s.name: got[s.slot] for s in case.desc.slots if s.slot in got}, name)


# --- determinism, codec round trip, errors -------------------------------------------
def _all_descriptors():
    return [
        elementwise("F32", "F32", lambda b, x: b.un("Sqrt", x)),
        elementwise("I32", "I32", lambda b, x, y: b.bin("Div", x, y), n_in=2),
        elementwise("U32", "U32", lambda b, x: b.bin("RotateLeft", x, b.u32(3))),
    ]


def test_decode_encode_round_trip_emits_identical_text(device):
    for d in _all_descriptors():
        assert emit_wgsl(decode(encode(d))) == emit_wgsl(d)
        validate(device, d)
    make, body = kernel([buf(0, "U32", "o")], wg=(1, 1, 1))
    for k, v in enumerate([float("nan"), 0.1, -0.0, 1e-42, float("inf")]):
        body.store(
            0, body.u32(k), body.op(V("OpaqueExpr", (0, "vyre.bitcast", bytes([2]))), body.f32(v))
        )
    d = make()
    assert emit_wgsl(decode(encode(d))) == emit_wgsl(d)


def test_identifiers_are_injective_and_valid():
    names = ["x", "loop", "main", "u_x", "_x", "my-buf", "my_2d_buf", "é", "a b", "gid", "select"]
    mapped = [ident(n) for n in names]
    assert len(set(mapped)) == len(mapped)
    assert (
        mapped[:2] == ["x", "u_loop"]
        and ident("u_x") == "u_u_5f_x"
        and ident("my-buf") == "u_my_2d_buf"
    )


# --- refusals: validation names the defect before any WGSL is written -------------------
def assert_refused(desc, reason):
    """emit_wgsl (which validates first) refuses `desc` with exactly `reason`."""
    with pytest.raises(DescriptorFormatError) as e:
        emit_wgsl(desc)
    assert str(e.value) == f"descriptor {desc.id!r}: {reason}"


def test_ops_outside_the_op_table_are_refused():
    make, body = kernel([buf(0, "U32", "o")])
    i = body.gid()
    body.store(0, i, body.bin("Shuffle", i, i))
    assert_refused(
        make(), "BinOpKind(Shuffle,) [0, 0]: BinOpKind Shuffle is not defined on (u32, u32)"
    )
    make, body = kernel([buf(0, "U32", "o")])
    body.op(V("Call", ("helper",)), body.gid())
    assert_refused(make(), "Call('helper',) [0]: op kind not used by vyre_build")


def _duplicate_result(b, i):
    b.ops.append(KernelOp(V("GlobalInvocationId"), (1,), i))


def _op_after_break(b, i):
    inner = b.loop()
    inner.brk()
    inner.gid()


def _op_after_return(b, i):
    b.ret()
    b.gid()


@pytest.mark.parametrize(
    "mutate, reason",
    [
        (
            lambda b, i: b.bin("Add", i, b.i32(1)),
            "BinOpKind(Add,) [0, 1]: BinOpKind Add is not defined on (u32, i32)",
        ),
        (
            lambda b, i: b.un("Sqrt", i),
            "UnOpKind(Sqrt,) [0]: UnOpKind Sqrt is not defined on (u32)",
        ),
        (lambda b, i: b.cast("F64", i), "Cast(F64,) [0]: cast target: unsupported data type F64"),
        (lambda b, i: b.store(1, i, i), "StoreGlobal [1, 0, 0]: store to read-only slot 1 'src'"),
        (lambda b, i: b.load(9, i), "LoadGlobal [9, 0]: slot 9 does not exist"),
        (
            lambda b, i: b.op("LoadGlobal", 0, 77),
            "LoadGlobal [0, 77]: operand 77 is not defined before use in scope",
        ),
        (
            lambda b, i: b.loop_index("q"),
            "LoopIndex('q',) []: loop variable is not bound by an enclosing loop",
        ),
        (lambda b, i: b.brk(), "OpaqueNode('vyre.break', b'') []: vyre.break outside a loop"),
        (
            lambda b, i: b.op(V("Atomic", (V("FetchNand"), "Relaxed")), 0, i, i),
            "Atomic(FetchNand, 'Relaxed') [0, 0, 0]: Atomic FetchNand is not defined on (u32)",
        ),
        (
            lambda b, i: b.bitcast("Bool", i),
            "OpaqueExpr(0, 'vyre.bitcast', b'\\n') [0]: Bitcast bool is not defined on (u32)",
        ),
        (
            _op_after_break,
            "OpaqueNode('vyre.break', b'') []: break/continue/return must end its body",
        ),
        (_op_after_return, "Return []: break/continue/return must end its body"),
        (_duplicate_result, "GlobalInvocationId [1]: result id 0 defined twice"),
        (
            lambda b, i: b.barrier("Relaxed"),
            "Barrier('Relaxed',) []: barrier ordering Relaxed is not AcqRel or SeqCst",
        ),
        (lambda b, i: b.gid(3), "GlobalInvocationId [3]: axis must be 0, 1 or 2"),
    ],
)
def test_malformed_descriptors_are_refused_with_the_defect(mutate, reason):
    """Each mutation of a valid kernel is refused with a message naming the defect."""
    make, body = kernel([buf(0, "U32", "o"), buf(1, "U32", "src", "ReadOnly")])
    mutate(body, body.gid())
    assert_refused(make(), reason)


@pytest.mark.parametrize(
    "kind, reason",
    [
        (
            "vyre.break",
            "OpaqueNode('vyre.break', b'') []: vyre.break inside a loop's continuing block",
        ),
        ("Return", "Return []: return inside a loop's continuing block"),
    ],
)
def test_continuing_block_refuses_break_and_return(kind, reason):
    make, body = kernel([buf(0, "U32", "o")])
    _, cont = body.loop(continuing=True)
    cont.ret() if kind == "Return" else cont.brk()
    assert_refused(make(), reason)


@pytest.mark.parametrize(
    "slot, reason",
    [
        (
            BindingSlot(0, V("Bool"), None, "Global", "ReadWrite", "o"),
            "slot 0 'o' (Global): storage buffers hold runtime arrays of U32/I32/F32 "
            "or their vec2/vec4, got Bool x None",
        ),
        (
            BindingSlot(0, V("U32"), None, "Constant", "ReadOnly", "o"),
            "slot 0 'o' (Constant): memory class Constant is not used by vyre_build",
        ),
        (
            BindingSlot(SH, V("F32"), 0, "Shared", "ReadWrite", "o"),
            "slot 16777216 'o' (Shared): needs element_count >= 1, got 0",
        ),
        (
            BindingSlot(0, V("F32"), 2, "Uniform", "ReadOnly", "o"),
            "slot 0 'o' (Uniform) holds f32 x 2; uniform members are one read-only "
            "U32/I32/F32/Bool scalar",
        ),
    ],
)
def test_bad_slots_are_refused(slot, reason):
    assert_refused(KernelDescriptor("k", (slot,), (1, 1, 1), KernelBody()), reason)


def test_duplicate_slot_names_are_refused():
    """Distinct names stay distinct in WGSL (`ident` is injective), equal ones are refused."""
    slots = (buf(0, "U32", "a"), buf(1, "U32", "a"))
    assert_refused(
        KernelDescriptor("k", slots, (1, 1, 1), KernelBody()),
        "slot names are not unique: ['a', 'a']",
    )


def test_naga_validation_is_live(device):
    """The validation every test relies on rejects a type error (so a pass means something)."""
    good = emit_wgsl(_all_descriptors()[0])
    validate(device, _all_descriptors()[0])
    bad = good.replace("sqrt(", "countOneBits(")  # countOneBits has no f32 overload
    assert bad != good
    with pytest.raises(Exception, match="countOneBits|argument|type"):
        device.create_shader_module(code=bad)
