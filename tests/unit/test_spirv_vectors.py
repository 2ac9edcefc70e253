"""SPIR-V emitter: vectors (docs/descriptor-conventions.md, "Vectors").

Hand-built descriptors with vec2/vec4 of f32/i32/u32 (built like `spirv_cases`), each
with a numpy reference: spirv-val (Vulkan 1.1), determinism, a dispatch through the
`vulkan` package and one through wgpu's SPIR-V input (both lavapipe), plus the EmitError
text of what the conventions leave undefined on vectors and a kernel compiled from source.
On the host a vec4<f32> buffer is a float32 array of 4*n values.
"""

from __future__ import annotations

import math
import os
import shutil

import numpy as np
import pytest
from spirv_cases import KB, Case, V, _rng
from spirv_kernels import I32_MAX, I32_MIN, _int_ref, _int_unref, _wrap
from test_spirv import spirv_val

from vyre_build.descriptor import (
    SHARED_SLOT_BASE,
    BindingSlot,
    KernelDescriptor,
    decode,
    encode,
    encode_datatype,
)
from vyre_build.errors import EmitError
from vyre_build.emit.spirv import emit_spirv

needs_val = pytest.mark.skipif(
    shutil.which("spirv-val") is None and os.environ.get("CI") != "true",
    reason="spirv-val not on PATH (CI=true requires it)",
)

F4, F2, I4, I2, U4, U2 = (("F32", 4), ("F32", 2), ("I32", 4), ("I32", 2), ("U32", 4), ("U32", 2))


def vt(vec: tuple[str, int]) -> V:
    """The DataType of a vector: Vec{element, count}."""
    return V("Vec", (V(vec[0]), vec[1]))


def vbuffer(kb: KB, vec, vis: str, name: str) -> int:
    slot = len([s for s in kb.slots if s.memory_class == "Global"])
    kb.slots.append(BindingSlot(slot, vt(vec), None, "Global", vis, name))
    return slot


def vlocal(kb: KB, cls: str, vec, n: int, name: str) -> int:
    slot = SHARED_SLOT_BASE + kb.shared_k
    kb.shared_k += 1
    kb.slots.append(BindingSlot(slot, vt(vec), n, cls, "ReadWrite", name))
    return slot


def vec(body, vec_ty, *parts):
    return body.emit(V("OpaqueExpr", (0, "vyre.vec", encode_datatype(vt(vec_ty)))), *parts)


def ext(body, x, k: int):
    return body.emit(V("OpaqueExpr", (0, "vyre.extract", bytes([k]))), x)


def vcast(body, vec_ty, x):
    return body.emit(V("Cast", (vt(vec_ty),)), x)


def host_view(desc: KernelDescriptor) -> KernelDescriptor:
    """The descriptor as the host dispatch helpers see it: a vector buffer is a flat array of its element."""
    slots = tuple(
        BindingSlot(
            s.slot,
            s.element_type.args[0] if s.element_type.name == "Vec" else s.element_type,
            s.element_count,
            s.memory_class,
            s.visibility,
            s.name,
        )
        for s in desc.slots
    )
    return KernelDescriptor(desc.id, slots, desc.workgroup_size, desc.body)


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


# --- cases ---------------------------------------------------------------------------------


def case_vec_saxpy(n: int = 50) -> Case:
    """y = vec4(a) * x + y and z = fma(vec4(a), x, z) on vec4<f32>; invocations n..63 are out of bounds."""
    kb = KB("vec_saxpy", (64, 1, 1))
    x, y, z = (
        vbuffer(kb, F4, "ReadOnly", "x"),
        vbuffer(kb, F4, "ReadWrite", "y"),
        vbuffer(kb, F4, "ReadWrite", "z"),
    )
    a = kb.scalar("F32", "a")
    r = kb.root
    i = r.gid()
    s = r.param(a)
    av = vec(r, F4, s, s, s, s)
    xv = r.load(x, i)
    r.store(y, i, r.bin("Add", r.bin("Mul", av, xv), r.load(y, i)))
    r.store(z, i, r.emit("Fma", av, xv, r.load(z, i)))
    rng = _rng(21)
    xs, ys, zs = (f32(rng.uniform(-4, 4, 4 * n)) for _ in range(3))
    av_ = np.float32(1.75)
    return Case(
        kb.build(),
        {"x": xs, "y": ys, "z": zs},
        {"y": av_ * xs + ys, "z": f32(av_ * xs.astype(np.float64) + zs)},
        scalars={"a": float(av_)},
        rtol=1e-6,
        atol=1e-6,
    )


EXACT_F = (
    "Add",
    "Sub",
    "Mul",
    "Min",
    "Max",
    "Negate",
    "Abs",
    "Floor",
    "Ceil",
    "Round",
    "Trunc",
    "Sign",
    "Select",
)
APPROX_F = (
    "Div",
    "Sqrt",
    "Exp",
    "Exp2",
    "Log",
    "Log2",
    "Sin",
    "Cos",
    "Tan",
    "Tanh",
    "InverseSqrt",
    "Fma",
)
_NP_F = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Min": np.minimum,
    "Max": np.maximum,
    "Div": np.divide,
    "Negate": np.negative,
    "Abs": np.abs,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Round": np.round,
    "Trunc": np.trunc,
    "Sign": np.sign,
    "Sqrt": np.sqrt,
    "Exp": np.exp,
    "Exp2": np.exp2,
    "Log": np.log,
    "Log2": np.log2,
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Tanh": np.tanh,
    "InverseSqrt": lambda v: 1 / np.sqrt(v),
}
_UNARY_ON_B = (
    "Negate",
    "Abs",
    "Floor",
    "Ceil",
    "Round",
    "Trunc",
    "Sign",
    "Exp",
    "Exp2",
    "Sin",
    "Cos",
    "Tan",
    "Tanh",
)


def case_vec_float_math(n: int = 40) -> Case:
    """Every componentwise f32 vector op: exact[k*n + i] / approx[k*n + i] = op_k(a[i], b[i]) on vec4<f32>."""
    kb = KB("vec_float_math", (64, 1, 1))
    a_s, b_s = vbuffer(kb, F4, "ReadOnly", "a"), vbuffer(kb, F4, "ReadOnly", "b")
    exact, approx = vbuffer(kb, F4, "WriteOnly", "exact"), vbuffer(kb, F4, "WriteOnly", "approx")
    r = kb.root
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u(n)))
    a, b = body.load(a_s, i), body.load(b_s, i)
    even = body.bin("Eq", body.bin("BitAnd", i, body.u(1)), body.u(0))
    for out, names in ((exact, EXACT_F), (approx, APPROX_F)):
        for k, name in enumerate(names):
            if name == "Select":
                v = body.emit("Select", even, a, b)
            elif name == "Fma":
                v = body.emit("Fma", a, b, b)
            elif name in ("Add", "Sub", "Mul", "Min", "Max", "Div"):
                v = body.bin(name, a, b)
            else:
                v = body.un(name, b if name in _UNARY_ON_B else a)
            body.store(out, body.bin("Add", body.u(k * n), i), v)
    rng = _rng(22)
    a = f32(rng.uniform(0.5, 4.0, 4 * n))
    b = f32(rng.uniform(-1.0, 1.0, 4 * n))
    b[np.abs(b) < 0.1] = 0.3
    b[:8] = [0.5, -0.5, 1.0, -1.0, 0.25, -0.75, 0.125, 0.875]  # round() halves go to even
    a[:4] = [2.5, 3.5, 0.5, 1.5]
    want_exact, want_approx = [], []
    ev = np.repeat((np.arange(n) % 2 == 0), 4)
    for name in EXACT_F:
        if name == "Select":
            want_exact.append(np.where(ev, a, b))
        elif name in ("Add", "Sub", "Mul", "Min", "Max"):
            want_exact.append(_NP_F[name](a, b))
        else:
            want_exact.append(_NP_F[name](b if name in _UNARY_ON_B else a))
    for name in APPROX_F:
        if name == "Fma":
            want_approx.append(a.astype(np.float64) * b + b)
        elif name == "Div":
            want_approx.append(a / b)
        else:
            want_approx.append(_NP_F[name]((b if name in _UNARY_ON_B else a).astype(np.float64)))
    z = np.zeros(4 * n * len(EXACT_F), np.float32)
    return Case(
        kb.build(),
        {"a": a, "b": b, "exact": z, "approx": np.zeros(4 * n * len(APPROX_F), np.float32)},
        {"exact": f32(np.concatenate(want_exact)), "approx": f32(np.concatenate(want_approx))},
        per_output_tol={"approx": (2e-4, 2e-5)},
    )


INT_BIN = ("Add", "Sub", "Mul", "Min", "Max", "BitAnd", "BitOr", "BitXor")
INT_UN_I = ("Negate", "BitNot", "Abs")
INT_UN_U = ("Negate", "BitNot")


def case_vec_int_ops(n: int = 16) -> Case:
    """Componentwise integer ops on vec4<i32> and vec2<u32>, wrapping (i32::MIN, MAX and -1 included)."""
    kb = KB("vec_int_ops", (64, 1, 1))
    p_s, q_s = vbuffer(kb, I4, "ReadOnly", "p"), vbuffer(kb, I4, "ReadOnly", "q")
    u_s, w_s = vbuffer(kb, U2, "ReadOnly", "u"), vbuffer(kb, U2, "ReadOnly", "w")
    oi, ou = vbuffer(kb, I4, "WriteOnly", "oi"), vbuffer(kb, U2, "WriteOnly", "ou")
    r = kb.root
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u(n)))
    for x_s, y_s, out, names in (
        (p_s, q_s, oi, INT_BIN + INT_UN_I),
        (u_s, w_s, ou, INT_BIN + INT_UN_U),
    ):
        x, y = body.load(x_s, i), body.load(y_s, i)
        for k, name in enumerate(names):
            v = body.bin(name, x, y) if name in INT_BIN else body.un(name, x)
            body.store(out, body.bin("Add", body.u(k * n), i), v)
    rng = _rng(23)
    special = [I32_MIN, I32_MAX, -1, 0, 1, I32_MIN, I32_MAX, 12345]
    p = np.concatenate([special, rng.integers(I32_MIN, I32_MAX + 1, 4 * n - len(special))])
    q = np.concatenate(
        [
            [-1, 1, I32_MIN, 7, I32_MAX, I32_MIN, I32_MAX, -3],
            rng.integers(I32_MIN, I32_MAX + 1, 4 * n - 8),
        ]
    )
    u = rng.integers(0, 1 << 32, 2 * n)
    w = rng.integers(0, 1 << 32, 2 * n)
    u[:4], w[:4] = [0, 0xFFFFFFFF, 5, 0x80000000], [1, 2, 0xFFFFFFFF, 0x80000000]
    p, q, u, w = _wrap(p, "I32"), _wrap(q, "I32"), _wrap(u, "U32"), _wrap(w, "U32")

    def ref(x, y, names, ty):
        return np.concatenate(
            [_int_ref(nm, x, y, ty) if nm in INT_BIN else _int_unref(nm, x, ty) for nm in names]
        )

    return Case(
        kb.build(),
        {
            "p": p,
            "q": q,
            "u": u,
            "w": w,
            "oi": np.zeros(4 * n * len(INT_BIN + INT_UN_I), np.int32),
            "ou": np.zeros(2 * n * len(INT_BIN + INT_UN_U), np.uint32),
        },
        {"oi": ref(p, q, INT_BIN + INT_UN_I, "I32"), "ou": ref(u, w, INT_BIN + INT_UN_U, "U32")},
    )


def case_vec_construct_extract(n: int = 30) -> Case:
    """vyre.extract every component, vyre.vec to rebuild (reversed), scalars and vec2s out."""
    kb = KB("vec_construct_extract", (64, 1, 1))
    x_s = vbuffer(kb, F4, "ReadOnly", "x")
    rev, pair = vbuffer(kb, F4, "WriteOnly", "rev"), vbuffer(kb, F2, "WriteOnly", "pair")
    ids = vbuffer(kb, U2, "WriteOnly", "ids")
    sums = kb.buffer("F32", "WriteOnly", "sums")
    r = kb.root
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u(n)))
    x = body.load(x_s, i)
    c = [ext(body, x, k) for k in range(4)]
    body.store(rev, i, vec(body, F4, c[3], c[2], c[1], c[0]))
    body.store(pair, i, vec(body, F2, c[1], c[2]))
    body.store(ids, i, vec(body, U2, i, body.bin("Mul", i, body.u(3))))
    body.store(sums, i, body.bin("Add", c[0], ext(body, vec(body, F2, c[2], c[3]), 1)))
    x = f32(_rng(24).uniform(-10, 10, 4 * n))
    q = x.reshape(n, 4)
    idx = np.arange(n, dtype=np.uint32)
    return Case(
        kb.build(),
        {
            "x": x,
            "rev": np.zeros(4 * n, np.float32),
            "pair": np.zeros(2 * n, np.float32),
            "ids": np.zeros(2 * n, np.uint32),
            "sums": np.zeros(n, np.float32),
        },
        {
            "rev": q[:, ::-1].ravel().copy(),
            "pair": q[:, 1:3].ravel().copy(),
            "ids": np.stack([idx, idx * 3], 1).ravel(),
            "sums": q[:, 0] + q[:, 3],
        },
    )


def _sat(x: np.ndarray, lo: int, hi: int, dtype) -> np.ndarray:
    """The pinned f32 -> int cast: NaN -> 0, truncate, saturate."""
    t = np.trunc(np.where(np.isnan(x), 0.0, x.astype(np.float64)))
    return (
        np.clip(t, lo, hi).astype(np.int64).astype(dtype)
        if dtype == np.int32
        else np.clip(t, lo, hi).astype(np.uint64).astype(dtype)
    )


def case_vec_casts() -> Case:
    """Cast vec4<f32> -> vec4<i32>/vec4<u32> (saturating, NaN -> 0), back to f32, i32 <-> u32 bits, vec2 casts."""
    kb = KB("vec_casts", (64, 1, 1))
    f_s = vbuffer(kb, F4, "ReadOnly", "f")
    ci, cu = vbuffer(kb, I4, "WriteOnly", "ci"), vbuffer(kb, U4, "WriteOnly", "cu")
    fi, fu = vbuffer(kb, F4, "WriteOnly", "fi"), vbuffer(kb, F4, "WriteOnly", "fu")
    bits, two = vbuffer(kb, U4, "WriteOnly", "bits"), vbuffer(kb, U2, "WriteOnly", "two")
    specials = [
        math.nan,
        math.inf,
        -math.inf,
        3e9,
        -3e9,
        2.7,
        -2.7,
        0.0,
        2147483520.0,
        2147483648.0,
        4294967040.0,
        4294967296.0,
        -0.5,
        -2147483648.0,
        -2147483904.0,
        16777217.0,
        -math.nan,
        1e-3,
        255.9,
        -1.0,
    ]
    f = f32(np.concatenate([specials, _rng(25).uniform(-5e9, 5e9, 44)]))
    n = f.size // 4
    r = kb.root
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u(n)))
    x = body.load(f_s, i)
    xi, xu = vcast(body, I4, x), vcast(body, U4, x)
    body.store(ci, i, xi)
    body.store(cu, i, xu)
    body.store(fi, i, vcast(body, F4, xi))
    body.store(fu, i, vcast(body, F4, xu))
    body.store(bits, i, vcast(body, U4, xi))
    body.store(two, i, vcast(body, U2, vec(body, F2, ext(body, x, 0), ext(body, x, 3))))
    want_i = _sat(f, I32_MIN, I32_MAX, np.int32)
    want_u = _sat(f, 0, 0xFFFFFFFF, np.uint32)
    q = f.reshape(n, 4)
    z = np.zeros
    return Case(
        kb.build(),
        {
            "f": f,
            "ci": z(4 * n, np.int32),
            "cu": z(4 * n, np.uint32),
            "fi": z(4 * n, np.float32),
            "fu": z(4 * n, np.float32),
            "bits": z(4 * n, np.uint32),
            "two": z(2 * n, np.uint32),
        },
        {
            "ci": want_i,
            "cu": want_u,
            "fi": want_i.astype(np.float32),
            "fu": want_u.astype(np.float32),
            "bits": want_i.view(np.uint32),
            "two": _sat(np.stack([q[:, 0], q[:, 3]], 1).ravel(), 0, 0xFFFFFFFF, np.uint32),
        },
    )


def case_vec_bounds(n: int = 20) -> Case:
    """Out-of-bounds vector loads give a zero vector, stores do nothing; BufferLength counts vectors."""
    kb = KB("vec_bounds", (64, 1, 1))
    x_s, z_s = vbuffer(kb, F4, "ReadOnly", "x"), vbuffer(kb, I2, "ReadOnly", "z")
    out, out2 = vbuffer(kb, F4, "ReadWrite", "out"), vbuffer(kb, I2, "ReadWrite", "out2")
    r = kb.root
    i = r.gid()
    r.store(out, i, r.load(x_s, r.bin("Add", i, r.u(7))))
    one = r.lit("F32", 1.0)
    r.store(out, r.bin("Add", i, r.u(100)), vec(r, F4, one, one, one, one))  # never in bounds
    lens = vec(
        r,
        I2,
        r.cast("I32", r.emit("BufferLength", x_s)),
        r.cast("I32", r.emit("BufferLength", out2)),
    )
    r.store(out2, i, r.bin("Add", lens, r.load(z_s, r.bin("Add", i, r.u(5)))))
    x = f32(_rng(26).uniform(-3, 3, 4 * n))
    z = _wrap(_rng(27).integers(-50, 50, 2 * 12), "I32")
    want = np.zeros(4 * n, np.float32)
    want[: 4 * (n - 7)] = x[4 * 7 :]
    m2 = 10
    zz = np.zeros(2 * (m2 + 5), np.int32)
    zz[: z.size] = z
    want2 = (np.tile(np.array([n, m2], np.int32), m2) + zz[10 : 10 + 2 * m2]).astype(np.int32)
    return Case(
        kb.build(),
        {"x": x, "z": z, "out": np.full(4 * n, -1, np.float32), "out2": np.zeros(2 * m2, np.int32)},
        {"out": want, "out2": want2},
    )


def case_vec_shared(groups: int = 3) -> Case:
    """Workgroup arrays of vec4<f32> / vec2<u32>: exchange through a barrier, zero-init, OOB load."""
    kb = KB("vec_shared", (64, 1, 1))
    x_s = vbuffer(kb, F4, "ReadOnly", "x")
    out, outz, out2 = (
        vbuffer(kb, F4, "WriteOnly", "out"),
        vbuffer(kb, F4, "WriteOnly", "outz"),
        vbuffer(kb, U2, "WriteOnly", "out2"),
    )
    sh, sh2 = vlocal(kb, "Shared", F4, 128, "sh"), vlocal(kb, "Shared", U2, 64, "sh2")
    r = kb.root
    gi, lid = r.gid(), r.emit("LocalInvocationId", 0)
    r.store(sh, lid, r.load(x_s, gi))
    r.store(sh2, lid, vec(r, U2, gi, lid))
    r.store(sh2, r.bin("Add", lid, r.u(64)), vec(r, U2, lid, lid))  # out of bounds: does nothing
    r.emit(V("Barrier", ("AcqRel",)), value=False)
    r.store(out, gi, r.load(sh, r.bin("Sub", r.u(63), lid)))
    r.store(outz, gi, r.load(sh, r.bin("Add", lid, r.u(64))))  # never written: zero-initialised
    nxt = r.bin("BitAnd", r.bin("Add", lid, r.u(1)), r.u(63))
    r.store(out2, gi, r.bin("Add", r.load(sh2, nxt), r.load(sh2, r.bin("Add", lid, r.u(64)))))
    n = 64 * groups
    x = f32(_rng(28).uniform(-9, 9, 4 * n))
    g = np.arange(n) // 64 * 64
    lidv = np.arange(n) % 64
    src = g + 63 - lidv
    nx = (lidv + 1) % 64
    return Case(
        kb.build(),
        {
            "x": x,
            "out": np.zeros(4 * n, np.float32),
            "outz": np.full(4 * n, 7, np.float32),
            "out2": np.zeros(2 * n, np.uint32),
        },
        {
            "out": x.reshape(n, 4)[src].ravel().copy(),
            "outz": np.zeros(4 * n, np.float32),
            "out2": np.stack([g + nx, nx], 1).ravel().astype(np.uint32),
        },
        groups=(groups, 1, 1),
    )


def case_vec_scratch(n: int = 50) -> Case:
    """Function-local vec4<f32> variable (accumulated in a loop) and vec2<i32> array, both zero-initialised."""
    kb = KB("vec_scratch", (64, 1, 1))
    x_s = vbuffer(kb, F4, "ReadOnly", "x")
    out, first, out2 = (
        vbuffer(kb, F4, "WriteOnly", "out"),
        vbuffer(kb, F4, "WriteOnly", "first"),
        vbuffer(kb, I2, "WriteOnly", "out2"),
    )
    acc, arr = vlocal(kb, "Scratch", F4, 1, "acc"), vlocal(kb, "Scratch", I2, 4, "arr")
    r = kb.root
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u(n)))
    body.store(first, i, body.load(acc, body.u(0)))
    loop = body.for_("k", body.u(0), body.u(3))
    loop.store(acc, loop.u(0), loop.bin("Add", loop.load(acc, loop.u(0)), loop.load(x_s, i)))
    body.store(out, i, body.load(acc, body.u(0)))
    ii = body.cast("I32", i)
    body.store(arr, body.u(1), vec(body, I2, ii, body.un("Negate", ii)))
    got = body.bin(
        "Add",
        body.bin("Add", body.load(arr, body.u(1)), body.load(arr, body.u(2))),
        body.load(arr, body.bin("BitAnd", i, body.u(7))),
    )  # index 4..7: out of bounds -> 0
    body.store(out2, i, got)
    x = f32(_rng(29).uniform(-5, 5, 4 * n))
    idx = np.arange(n, dtype=np.int32)
    base = np.stack([idx, -idx], 1)
    want2 = (base + np.where((idx & 7) == 1, 1, 0)[:, None] * base).astype(np.int32).ravel()
    return Case(
        kb.build(),
        {
            "x": x,
            "out": np.zeros(4 * n, np.float32),
            "first": np.full(4 * n, 9, np.float32),
            "out2": np.zeros(2 * n, np.int32),
        },
        {"out": (x + x) + x, "first": np.zeros(4 * n, np.float32), "out2": want2},
    )


CASES = {
    "vec_saxpy": case_vec_saxpy,
    "vec_float_math": case_vec_float_math,
    "vec_int_ops": case_vec_int_ops,
    "vec_construct_extract": case_vec_construct_extract,
    "vec_casts": case_vec_casts,
    "vec_bounds": case_vec_bounds,
    "vec_shared": case_vec_shared,
    "vec_scratch": case_vec_scratch,
}


# --- validity and determinism ----------------------------------------------------------


@needs_val
@pytest.mark.parametrize("name", sorted(CASES))
def test_vector_case_validates_for_vulkan_1_1(name, tmp_path):
    desc = CASES[name]().desc
    binary = emit_spirv(desc)
    spirv_val(binary, tmp_path, name)
    assert emit_spirv(CASES[name]().desc) == binary
    assert emit_spirv(decode(encode(desc))) == binary


def test_vector_types_and_strides():
    """One OpTypeVector per vector type; ArrayStride 16 for vec4 and 8 for vec2 buffers.

    x and rev (both vec4<f32>) share one runtime-array type, so one ArrayStride 16.
    """
    import struct

    from vyre_build.emit.spirv.grammar import DECORATION, OPCODES

    binary = emit_spirv(CASES["vec_construct_extract"]().desc)
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
    kb = KB("refused", (64, 1, 1))
    slots = {
        k: vbuffer(kb, t, "ReadWrite", k)
        for k, t in (("f4", F4), ("i4", I4), ("u4", U4), ("u2", U2))
    }
    r = kb.root
    i = r.gid()
    v = {k: r.load(s, i) for k, s in slots.items()}
    v.update(f4b=r.load(slots["f4"], r.u(1)), f=r.lit("F32", 1.0), u=i, slots=slots)
    build(r, v)
    return kb.build()


REFUSED = {
    "compare": (
        lambda r, v: r.bin("Lt", v["f4"], v["f4b"]),
        r"op BinOpKind\(Lt,\) with operands \[\d+, \d+\] \(types \['Vec4F32', 'Vec4F32'\]\).*"
        r"BinOp Lt is not defined for \(Vec4F32, Vec4F32\)",
    ),
    "mod": (
        lambda r, v: r.bin("Mod", v["i4"], v["i4"]),
        r"BinOp Mod is not defined for \(Vec4I32, Vec4I32\)",
    ),
    "int_div": (
        lambda r, v: r.bin("Div", v["u4"], v["u4"]),
        r"BinOp Div is not defined for \(Vec4U32, Vec4U32\)",
    ),
    "shift": (
        lambda r, v: r.bin("Shl", v["u4"], v["u"]),
        r"BinOp Shl is not defined for \(Vec4U32, U32\)",
    ),
    "rotate": (
        lambda r, v: r.bin("RotateLeft", v["u2"], v["u2"]),
        r"BinOp RotateLeft is not defined for \(Vec2U32",
    ),
    "float_bitand": (
        lambda r, v: r.bin("BitAnd", v["f4"], v["f4"]),
        r"BinOp BitAnd is not defined for \(Vec4F32",
    ),
    "and": (lambda r, v: r.bin("And", v["u4"], v["u4"]), r"BinOp And is not defined for \(Vec4U32"),
    "mixed": (
        lambda r, v: r.bin("Add", v["f4"], v["f"]),
        r"BinOp Add is not defined for \(Vec4F32, F32\)",
    ),
    "mixed_scalar_first": (
        lambda r, v: r.bin("Add", v["f"], v["f4"]),
        r"operand types differ \(F32 and Vec4F32\)",
    ),
    "sizes": (
        lambda r, v: r.bin("Add", v["u4"], v["u2"]),
        r"BinOp Add is not defined for \(Vec4U32, Vec2U32\)",
    ),
    "popcount": (
        lambda r, v: r.un("Popcount", v["u4"]),
        r"UnOp Popcount is not defined for Vec4U32",
    ),
    "isnan": (lambda r, v: r.un("IsNan", v["f4"]), r"UnOp IsNan is not defined for Vec4F32"),
    "u_abs": (lambda r, v: r.un("Abs", v["u2"]), r"UnOp Abs is not defined for Vec2U32"),
    "int_sqrt": (lambda r, v: r.un("Sqrt", v["i4"]), r"UnOp Sqrt is not defined for Vec4I32"),
    "int_sign": (lambda r, v: r.un("Sign", v["i4"]), r"UnOp Sign is not defined for Vec4I32"),
    "float_bitnot": (
        lambda r, v: r.un("BitNot", v["f4"]),
        r"UnOp BitNot is not defined for Vec4F32",
    ),
    "asin": (lambda r, v: r.un("Asin", v["f4"]), r"UnOp Asin is not defined for Vec4F32"),
    "cast_count": (
        lambda r, v: vcast(r, I2, v["f4"]),
        r"Cast from Vec4F32 to Vec2I32 is not defined",
    ),
    "cast_splat": (lambda r, v: vcast(r, F4, v["f"]), r"Cast from F32 to Vec4F32 is not defined"),
    "cast_to_scalar": (
        lambda r, v: r.cast("U32", v["u4"]),
        r"Cast from Vec4U32 to U32 is not defined",
    ),
    "fma_int": (
        lambda r, v: r.emit("Fma", v["i4"], v["i4"], v["i4"]),
        r"Fma needs three F32 operands",
    ),
    "fma_mixed": (
        lambda r, v: r.emit("Fma", v["f4"], v["f"], v["f4"]),
        r"Fma needs three F32 operands",
    ),
    "select_mixed": (
        lambda r, v: r.emit("Select", r.bin("Eq", v["u"], v["u"]), v["f4"], v["f"]),
        r"Select needs a Bool condition and two values of one type",
    ),
    "extract_range": (
        lambda r, v: ext(r, v["f4"], 4),
        r"vyre.extract payload '04' is not one byte below 4",
    ),
    "extract_scalar": (
        lambda r, v: ext(r, v["f"], 0),
        r"vyre.extract needs a vector operand, not F32",
    ),
    "vec_arity": (lambda r, v: vec(r, F4, v["f"], v["f"], v["f"]), r"expects 4 operands, got 3"),
    "vec_types": (
        lambda r, v: vec(r, U2, v["u"], v["f"]),
        r"vyre.vec to Vec2U32 needs 2 U32 operands",
    ),
    "vec3": (
        lambda r, v: vec(r, ("F32", 3), v["f"], v["f"], v["f"]),
        r"vyre.vec payload Vec\(F32, 3\) is not a vector",
    ),
    "vec_bad_payload": (
        lambda r, v: r.emit(V("OpaqueExpr", (0, "vyre.vec", b"\xff")), v["f"]),
        r"vyre.vec payload is not a DataType",
    ),
    "atomic": (
        lambda r, v: r.atomic("Add", v["slots"]["u4"], v["u"], v["u4"]),
        r"atomics need a U32 or I32 slot, slot 2 holds Vec4U32",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_undefined_vector_ops_are_refused(name):
    build, match = REFUSED[name]
    with pytest.raises(EmitError, match=match):
        emit_spirv(_refused(build))


@pytest.mark.parametrize(
    "element_type, memory_class, reason",
    [
        (
            V("Vec", (V("F32"), 3)),
            "Global",
            r"element type Vec\(F32, 3\) is not U32, I32, F32 or Bool, "
            r"nor a vector of 2 or 4 U32, I32 or F32",
        ),
        (V("Vec", (V("Bool"), 4)), "Shared", r"element type Vec\(Bool, 4\) is not U32"),
        (V("Vec", (V("F16"), 2)), "Scratch", r"element type Vec\(F16, 2\) is not U32"),
        (vt(F4), "Uniform", r"uniform parameters are U32, I32 or F32"),
    ],
)
def test_unsupported_vector_slots_are_refused(element_type, memory_class, reason):
    kb = KB("slots")
    slot = 0 if memory_class in ("Global", "Uniform") else SHARED_SLOT_BASE
    count = None if memory_class == "Global" else 4
    kb.slots.append(BindingSlot(slot, element_type, count, memory_class, "ReadOnly", "v"))
    with pytest.raises(EmitError, match=reason):
        emit_spirv(kb.build())


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
        "x": vt(F4),
        "y": vt(F4),
        "q": vt(I4),
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
from test_spirv_vulkan import assert_case, run_wgpu, runner  # noqa: E402, F401  (runner: the fixture)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vector_vulkan_dispatch_matches_numpy(runner, name):  # noqa: F811
    case = CASES[name]()
    got = runner.run(
        emit_spirv(case.desc), host_view(case.desc), case.inputs, case.scalars, case.groups
    )
    assert_case(case, got, f"vulkan {name}")


@pytest.mark.skipif(
    shutil.which("spirv-opt") is None and os.environ.get("CI") != "true",
    reason="spirv-opt not on PATH (CI=true requires it)",
)
@pytest.mark.parametrize("name", ["vec_casts", "vec_bounds", "vec_shared", "vec_scratch"])
def test_vector_vulkan_dispatch_optimized(runner, name, tmp_path):  # noqa: F811
    """spirv-opt -O output of vector modules validates and computes the same results."""
    case = CASES[name]()
    binary = emit_spirv(case.desc, optimize=True)
    if shutil.which("spirv-val"):
        spirv_val(binary, tmp_path, name)
    got = runner.run(binary, host_view(case.desc), case.inputs, case.scalars, case.groups)
    assert_case(case, got, f"vulkan -O {name}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_vector_wgpu_spirv_input_matches_numpy(name):
    case = CASES[name]()
    got = run_wgpu(
        emit_spirv(case.desc), host_view(case.desc), case.inputs, case.scalars, case.groups
    )
    assert_case(case, got, f"wgpu {name}")


@pytest.mark.parametrize("path", ["vulkan", "wgpu"])
def test_compiled_vector_kernel_dispatch(request, path, tmp_path):
    desc = _compiled_vmix(tmp_path)
    n = 150
    rng = _rng(30)
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
            spirv, host_view(desc), case.inputs, case.scalars, case.groups
        )
    else:
        got = run_wgpu(spirv, host_view(desc), case.inputs, case.scalars, case.groups)
    assert_case(case, got, f"{path} vmix")
