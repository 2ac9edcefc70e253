"""Corpus cases for vectors (docs/descriptor-conventions.md, "Vectors"): vec2/vec4 of
f32/i32/u32 in buffers, workgroup arrays and scratch variables, with numpy references.
On the host a vec4<f32> buffer is a flat float32 array of 4*n values.
"""

from __future__ import annotations

import math

import numpy as np
from descriptors import Case, Kernel, vt

from corpus.values import I32_MAX, I32_MIN, NP_FLOAT, _int_ref, _int_unref, _sat, _wrap

F4, F2, I4, I2, U4, U2 = (
    vt("F32", 4),
    vt("F32", 2),
    vt("I32", 4),
    vt("I32", 2),
    vt("U32", 4),
    vt("U32", 2),
)


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


# --- cases ---------------------------------------------------------------------------------


def case_vec_saxpy(n: int = 50) -> Case:
    """y = vec4(a) * x + y and z = fma(vec4(a), x, z) on vec4<f32>; invocations n..63 are out of bounds."""
    kb = Kernel("vec_saxpy", (64, 1, 1))
    x, y, z = (
        kb.buffer(F4, "ReadOnly", "x"),
        kb.buffer(F4, "ReadWrite", "y"),
        kb.buffer(F4, "ReadWrite", "z"),
    )
    a = kb.scalar("F32", "a")
    r = kb.body
    i = r.gid()
    s = r.param(a)
    av = r.vec(F4, s, s, s, s)
    xv = r.load(x, i)
    r.store(y, i, r.bin("Add", r.bin("Mul", av, xv), r.load(y, i)))
    r.store(z, i, r.fma(av, xv, r.load(z, i)))
    rng = np.random.default_rng(21)
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
    kb = Kernel("vec_float_math", (64, 1, 1))
    a_s, b_s = kb.buffer(F4, "ReadOnly", "a"), kb.buffer(F4, "ReadOnly", "b")
    exact, approx = kb.buffer(F4, "WriteOnly", "exact"), kb.buffer(F4, "WriteOnly", "approx")
    r = kb.body
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u32(n)))
    a, b = body.load(a_s, i), body.load(b_s, i)
    even = body.bin("Eq", body.bin("BitAnd", i, body.u32(1)), body.u32(0))
    for out, names in ((exact, EXACT_F), (approx, APPROX_F)):
        for k, name in enumerate(names):
            if name == "Select":
                v = body.select(even, a, b)
            elif name == "Fma":
                v = body.fma(a, b, b)
            elif name in ("Add", "Sub", "Mul", "Min", "Max", "Div"):
                v = body.bin(name, a, b)
            else:
                v = body.un(name, b if name in _UNARY_ON_B else a)
            body.store(out, body.bin("Add", body.u32(k * n), i), v)
    rng = np.random.default_rng(22)
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
            want_exact.append(NP_FLOAT[name](a, b))
        else:
            want_exact.append(NP_FLOAT[name](b if name in _UNARY_ON_B else a))
    for name in APPROX_F:
        if name == "Fma":
            want_approx.append(a.astype(np.float64) * b + b)
        elif name == "Div":
            want_approx.append(a / b)
        else:
            want_approx.append(NP_FLOAT[name]((b if name in _UNARY_ON_B else a).astype(np.float64)))
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
    kb = Kernel("vec_int_ops", (64, 1, 1))
    p_s, q_s = kb.buffer(I4, "ReadOnly", "p"), kb.buffer(I4, "ReadOnly", "q")
    u_s, w_s = kb.buffer(U2, "ReadOnly", "u"), kb.buffer(U2, "ReadOnly", "w")
    oi, ou = kb.buffer(I4, "WriteOnly", "oi"), kb.buffer(U2, "WriteOnly", "ou")
    r = kb.body
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u32(n)))
    for x_s, y_s, out, names in (
        (p_s, q_s, oi, INT_BIN + INT_UN_I),
        (u_s, w_s, ou, INT_BIN + INT_UN_U),
    ):
        x, y = body.load(x_s, i), body.load(y_s, i)
        for k, name in enumerate(names):
            v = body.bin(name, x, y) if name in INT_BIN else body.un(name, x)
            body.store(out, body.bin("Add", body.u32(k * n), i), v)
    rng = np.random.default_rng(23)
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
    kb = Kernel("vec_construct_extract", (64, 1, 1))
    x_s = kb.buffer(F4, "ReadOnly", "x")
    rev, pair = kb.buffer(F4, "WriteOnly", "rev"), kb.buffer(F2, "WriteOnly", "pair")
    ids = kb.buffer(U2, "WriteOnly", "ids")
    sums = kb.buffer("F32", "WriteOnly", "sums")
    r = kb.body
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u32(n)))
    x = body.load(x_s, i)
    c = [body.extract(x, k) for k in range(4)]
    body.store(rev, i, body.vec(F4, c[3], c[2], c[1], c[0]))
    body.store(pair, i, body.vec(F2, c[1], c[2]))
    body.store(ids, i, body.vec(U2, i, body.bin("Mul", i, body.u32(3))))
    body.store(sums, i, body.bin("Add", c[0], body.extract(body.vec(F2, c[2], c[3]), 1)))
    x = f32(np.random.default_rng(24).uniform(-10, 10, 4 * n))
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


def case_vec_casts() -> Case:
    """Cast vec4<f32> -> vec4<i32>/vec4<u32> (saturating, NaN -> 0), back to f32, i32 <-> u32 bits, vec2 casts."""
    kb = Kernel("vec_casts", (64, 1, 1))
    f_s = kb.buffer(F4, "ReadOnly", "f")
    ci, cu = kb.buffer(I4, "WriteOnly", "ci"), kb.buffer(U4, "WriteOnly", "cu")
    fi, fu = kb.buffer(F4, "WriteOnly", "fi"), kb.buffer(F4, "WriteOnly", "fu")
    bits, two = kb.buffer(U4, "WriteOnly", "bits"), kb.buffer(U2, "WriteOnly", "two")
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
    f = f32(np.concatenate([specials, np.random.default_rng(25).uniform(-5e9, 5e9, 44)]))
    n = f.size // 4
    r = kb.body
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u32(n)))
    x = body.load(f_s, i)
    xi, xu = body.cast(I4, x), body.cast(U4, x)
    body.store(ci, i, xi)
    body.store(cu, i, xu)
    body.store(fi, i, body.cast(F4, xi))
    body.store(fu, i, body.cast(F4, xu))
    body.store(bits, i, body.cast(U4, xi))
    body.store(two, i, body.cast(U2, body.vec(F2, body.extract(x, 0), body.extract(x, 3))))
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
    kb = Kernel("vec_bounds", (64, 1, 1))
    x_s, z_s = kb.buffer(F4, "ReadOnly", "x"), kb.buffer(I2, "ReadOnly", "z")
    out, out2 = kb.buffer(F4, "ReadWrite", "out"), kb.buffer(I2, "ReadWrite", "out2")
    r = kb.body
    i = r.gid()
    r.store(out, i, r.load(x_s, r.bin("Add", i, r.u32(7))))
    one = r.lit("F32", 1.0)
    r.store(out, r.bin("Add", i, r.u32(100)), r.vec(F4, one, one, one, one))  # never in bounds
    lens = r.vec(
        I2,
        r.cast("I32", r.length(x_s)),
        r.cast("I32", r.length(out2)),
    )
    r.store(out2, i, r.bin("Add", lens, r.load(z_s, r.bin("Add", i, r.u32(5)))))
    x = f32(np.random.default_rng(26).uniform(-3, 3, 4 * n))
    z = _wrap(np.random.default_rng(27).integers(-50, 50, 2 * 12), "I32")
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
    kb = Kernel("vec_shared", (64, 1, 1))
    x_s = kb.buffer(F4, "ReadOnly", "x")
    out, outz, out2 = (
        kb.buffer(F4, "WriteOnly", "out"),
        kb.buffer(F4, "WriteOnly", "outz"),
        kb.buffer(U2, "WriteOnly", "out2"),
    )
    sh, sh2 = kb.local("Shared", F4, 128, "sh"), kb.local("Shared", U2, 64, "sh2")
    r = kb.body
    gi, lid = r.gid(), r.lid(0)
    r.store(sh, lid, r.load(x_s, gi))
    r.store(sh2, lid, r.vec(U2, gi, lid))
    r.store(sh2, r.bin("Add", lid, r.u32(64)), r.vec(U2, lid, lid))  # out of bounds: does nothing
    r.barrier("AcqRel")
    r.store(out, gi, r.load(sh, r.bin("Sub", r.u32(63), lid)))
    r.store(outz, gi, r.load(sh, r.bin("Add", lid, r.u32(64))))  # never written: zero-initialised
    nxt = r.bin("BitAnd", r.bin("Add", lid, r.u32(1)), r.u32(63))
    r.store(out2, gi, r.bin("Add", r.load(sh2, nxt), r.load(sh2, r.bin("Add", lid, r.u32(64)))))
    n = 64 * groups
    x = f32(np.random.default_rng(28).uniform(-9, 9, 4 * n))
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
    kb = Kernel("vec_scratch", (64, 1, 1))
    x_s = kb.buffer(F4, "ReadOnly", "x")
    out, first, out2 = (
        kb.buffer(F4, "WriteOnly", "out"),
        kb.buffer(F4, "WriteOnly", "first"),
        kb.buffer(I2, "WriteOnly", "out2"),
    )
    acc, arr = kb.local("Scratch", F4, 1, "acc"), kb.local("Scratch", I2, 4, "arr")
    r = kb.body
    i = r.gid()
    body = r.if_(r.bin("Lt", i, r.u32(n)))
    body.store(first, i, body.load(acc, body.u32(0)))
    loop = body.for_("k", body.u32(0), body.u32(3))
    loop.store(acc, loop.u32(0), loop.bin("Add", loop.load(acc, loop.u32(0)), loop.load(x_s, i)))
    body.store(out, i, body.load(acc, body.u32(0)))
    ii = body.cast("I32", i)
    body.store(arr, body.u32(1), body.vec(I2, ii, body.un("Negate", ii)))
    got = body.bin(
        "Add",
        body.bin("Add", body.load(arr, body.u32(1)), body.load(arr, body.u32(2))),
        body.load(arr, body.bin("BitAnd", i, body.u32(7))),
    )  # index 4..7: out of bounds -> 0
    body.store(out2, i, got)
    x = f32(np.random.default_rng(29).uniform(-5, 5, 4 * n))
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


VECTOR_CASES = {
    "vec_saxpy": case_vec_saxpy,
    "vec_float_math": case_vec_float_math,
    "vec_int_ops": case_vec_int_ops,
    "vec_construct_extract": case_vec_construct_extract,
    "vec_casts": case_vec_casts,
    "vec_bounds": case_vec_bounds,
    "vec_shared": case_vec_shared,
    "vec_scratch": case_vec_scratch,
}
