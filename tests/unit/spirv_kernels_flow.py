"""Descriptor cases for control flow, memory (bounds, scratch, shared, uniforms) and atomics.

`CASES` (name -> builder of a `spirv_cases.Case`) is the whole catalogue, the value-op
cases of spirv_kernels.py included. References follow the pinned semantics.
"""

from __future__ import annotations

import numpy as np
from spirv_cases import KB, Case, _rng
from spirv_kernels import I32_MAX, I32_MIN, case_casts, case_float_ops, case_int_ops


def case_saxpy(n: int = 200) -> Case:
    kb = KB("saxpy", (64, 1, 1))
    x_s, y_s, a_s = (
        kb.buffer("F32", "ReadOnly", "x"),
        kb.buffer("F32", "ReadWrite", "y"),
        kb.scalar("F32", "a"),
    )
    r = kb.root
    i = r.gid(0)
    body = r.if_(r.bin("Lt", i, r.emit("BufferLength", y_s)))
    body.store(
        y_s,
        i,
        body.bin("Add", body.bin("Mul", body.param(a_s), body.load(x_s, i)), body.load(y_s, i)),
    )
    rng = _rng(1)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a = np.float32(2.5)
    return Case(
        kb.build(),
        {"x": x, "y": y},
        {"y": a * x + y},
        {"a": a},
        groups=(4, 1, 1),
        rtol=1e-6,
        atol=1e-6,
    )


def _loops_ref(i: int) -> tuple[int, int, int]:
    acc = 0
    for j in range(i % 7):
        if j == 3:
            continue
        if j == 5:
            break
        acc += j
    k, steps = i + 1, 0
    while k > 1:
        k = k // 2 if k % 2 == 0 else 3 * k + 1
        steps += 1
    j, acc2 = i % 3, 0
    while j < 20:
        if j != 9:
            acc2 += j
        j += 3
    return acc, steps, acc2


def case_loops(n: int = 100) -> Case:
    """for with continue/break, while-style vyre.loop, vyre.loop with a continuing block."""
    kb = KB("loops", (64, 1, 1))
    o1, o2, o3 = (kb.buffer("U32", "WriteOnly", f"out{k}") for k in (1, 2, 3))
    acc, k_var, steps, j_var, acc2 = (
        kb.local("Scratch", "U32", 1, nm) for nm in ("acc", "k", "steps", "j", "acc2")
    )
    r = kb.root
    i = r.gid(0)
    r.if_(r.bin("Ge", i, r.emit("BufferLength", o1))).ret()
    zero = r.u(0)
    body = r.for_("j", r.u(0), r.bin("Mod", i, r.u(7)))
    jj = body.emit(_loop_index("j"))
    body.if_(body.bin("Eq", jj, body.u(3))).cont()
    body.if_(body.bin("Eq", jj, body.u(5))).brk()
    body.store(acc, body.u(0), body.bin("Add", body.load(acc, body.u(0)), jj))
    r.store(o1, i, r.load(acc, zero))
    r.store(k_var, zero, r.bin("Add", i, r.u(1)))
    loop = r.loop()
    kv = loop.load(k_var, loop.u(0))
    loop.if_(loop.bin("Le", kv, loop.u(1))).brk()
    even, odd = loop.if_else(loop.bin("Eq", loop.bin("Mod", kv, loop.u(2)), loop.u(0)))
    even.store(k_var, even.u(0), even.bin("Div", kv, even.u(2)))
    odd.store(k_var, odd.u(0), odd.bin("Add", odd.bin("Mul", kv, odd.u(3)), odd.u(1)))
    loop.store(steps, loop.u(0), loop.bin("Add", loop.load(steps, loop.u(0)), loop.u(1)))
    r.store(o2, i, r.load(steps, zero))
    r.store(j_var, zero, r.bin("Mod", i, r.u(3)))
    lbody, lcont = r.loop(continuing=True)
    jv = lbody.load(j_var, lbody.u(0))
    lbody.if_(lbody.bin("Ge", jv, lbody.u(20))).brk()
    lbody.if_(lbody.bin("Eq", jv, lbody.u(9))).cont()
    lbody.store(acc2, lbody.u(0), lbody.bin("Add", lbody.load(acc2, lbody.u(0)), jv))
    lcont.store(j_var, lcont.u(0), lcont.bin("Add", lcont.load(j_var, lcont.u(0)), lcont.u(3)))
    r.store(o3, i, r.load(acc2, zero))
    refs = np.array([_loops_ref(k) for k in range(n)], dtype=np.uint32)
    zeros = np.zeros(n, dtype=np.uint32)
    return Case(
        kb.build(),
        {"out1": zeros, "out2": zeros, "out3": zeros},
        {"out1": refs[:, 0], "out2": refs[:, 1], "out3": refs[:, 2]},
        groups=(2, 1, 1),
    )


def _loop_index(var: str):
    from vyre_build.descriptor import Variant

    return Variant("LoopIndex", (var,))


def case_returns(n: int = 90) -> Case:
    """Early returns in if/else arms, a loop left only by return, unreachable code after it."""
    kb = KB("returns", (32, 1, 1))
    out, out2 = kb.buffer("U32", "ReadWrite", "out"), kb.buffer("U32", "ReadWrite", "out2")
    r = kb.root
    i = r.gid(0)
    r.if_(r.bin("Ge", i, r.emit("BufferLength", out))).ret()
    m4 = r.bin("Mod", i, r.u(4))
    one, other = r.if_else(r.bin("Eq", m4, r.u(1)))
    one.store(out2, i, one.u(10))
    one.ret()  # a terminator ends its body (validation refuses ops after it)
    two = other.if_(other.bin("Eq", m4, other.u(2)))
    two.store(out2, i, two.u(20))
    two.ret()
    other.store(out2, i, other.u(30))
    loop = r.loop()
    loop.store(out, i, loop.bin("Mul", i, loop.u(2)))
    loop.if_(loop.bin("Eq", loop.bin("Mod", i, loop.u(3)), loop.u(0))).ret()
    loop.store(out, i, loop.bin("Add", loop.bin("Mul", i, loop.u(2)), loop.u(1)))
    loop.ret()
    r.store(out, i, r.u(5))  # after a loop with no break: unreachable
    idx = np.arange(n)
    m = idx % 4
    want2 = np.where(m == 1, 10, np.where(m == 2, 20, 30)).astype(np.uint32)
    want = np.where((m == 1) | (m == 2), 0, np.where(idx % 3 == 0, 2 * idx, 2 * idx + 1)).astype(
        np.uint32
    )
    zeros = np.zeros(n, dtype=np.uint32)
    return Case(
        kb.build(), {"out": zeros, "out2": zeros}, {"out": want, "out2": want2}, groups=(3, 1, 1)
    )


def case_terminators(n: int = 40) -> Case:
    """Ifs whose both arms end in break/continue or return: unreachable merges, dead code after."""
    kb = KB("terminators", (32, 1, 1))
    out, out2 = kb.buffer("U32", "ReadWrite", "out"), kb.buffer("U32", "ReadWrite", "out2")
    cnt = kb.local("Scratch", "U32", 1, "cnt")
    r = kb.root
    i = r.gid(0)
    r.if_(r.bin("Ge", i, r.emit("BufferLength", out))).ret()
    body = r.for_("j", r.u(0), r.u(10))
    body.store(cnt, body.u(0), body.bin("Add", body.load(cnt, body.u(0)), body.u(1)))
    stop, go_on = body.if_else(
        body.bin("Eq", body.emit(_loop_index("j")), body.bin("Mod", i, body.u(5)))
    )
    stop.brk()
    go_on.cont()
    body.store(out, i, body.u(999))  # unreachable: both arms left the body
    r.store(out, i, r.load(cnt, r.u(0)))
    even, odd = r.if_else(r.bin("Eq", r.bin("BitAnd", i, r.u(1)), r.u(0)))
    even.store(out2, i, even.u(1))
    even.ret()
    odd.store(out2, i, odd.u(2))
    odd.ret()
    r.store(out, i, r.u(777))  # unreachable: both arms returned
    idx = np.arange(n)
    zeros = np.zeros(n, np.uint32)
    return Case(
        kb.build(),
        {"out": zeros, "out2": zeros},
        {
            "out": (idx % 5 + 1).astype(np.uint32),
            "out2": np.where(idx % 2 == 0, 1, 2).astype(np.uint32),
        },
        groups=(2, 1, 1),
    )


def case_shared(groups: int = 3) -> Case:
    """Workgroup tree reduction with barriers; shared zero-init; OOB shared load/store; ids."""
    kb = KB("shared", (64, 1, 1))
    a_s = kb.buffer("U32", "ReadOnly", "a")
    sums, ids = kb.buffer("U32", "WriteOnly", "sums"), kb.buffer("U32", "WriteOnly", "ids")
    s, t = kb.local("Shared", "U32", 64, "s"), kb.local("Shared", "U32", 8, "t")
    stride = kb.local("Scratch", "U32", 1, "stride")
    r = kb.root
    from vyre_build.descriptor import Variant as V

    gi, lid, wid = r.gid(0), r.emit("LocalInvocationId", 0), r.emit("WorkgroupId", 0)
    nwg = r.emit(V("OpaqueExpr", (0, "vyre.num_workgroups", b"")), 0)
    r.store(t, r.bin("Add", lid, r.u(8)), r.u(99))  # out of bounds: does nothing
    r.store(s, lid, r.load(a_s, gi))
    r.emit(V("Barrier", ("SeqCst",)), value=False)
    z = r.load(t, r.bin("BitAnd", lid, r.u(7)))
    r.store(stride, r.u(0), r.u(32))
    body, cont = r.loop(continuing=True)
    st = body.load(stride, body.u(0))
    body.if_(body.bin("Eq", st, body.u(0))).brk()
    upd = body.if_(body.bin("Lt", lid, st))
    upd.store(s, lid, upd.bin("Add", upd.load(s, lid), upd.load(s, upd.bin("Add", lid, st))))
    body.emit(V("Barrier", ("AcqRel",)), value=False)
    cont.store(stride, cont.u(0), cont.bin("Shr", cont.load(stride, cont.u(0)), cont.u(1)))
    first = r.if_(r.bin("Eq", lid, r.u(0)))
    first.store(sums, wid, first.load(s, first.u(0)))
    v = r.bin("Add", r.bin("Mul", wid, r.u(1000)), r.bin("Mul", nwg, r.u(100)))
    v = r.bin("Add", r.bin("Add", v, z), r.load(s, r.u(1000)))  # t zeroed; s[1000] is OOB -> 0
    r.store(ids, gi, v)
    n = 64 * groups
    a = _rng(3).integers(0, 1 << 20, n).astype(np.uint32)
    want_ids = (np.arange(n) // 64 * 1000 + groups * 100).astype(np.uint32)
    return Case(
        kb.build(),
        {"a": a, "sums": np.zeros(groups, np.uint32), "ids": np.zeros(n, np.uint32)},
        {"sums": a.reshape(groups, 64).sum(axis=1).astype(np.uint32), "ids": want_ids},
        groups=(groups, 1, 1),
    )


def case_atomics(groups: int = 4, cas: bool = True) -> Case:
    """Every atomic op on a U32 and an I32 buffer and on a shared array; OOB atomic -> 0.

    `cas=False` leaves out the compare-exchange (wgpu's SPIR-V reader cannot take it).
    """
    from vyre_build.descriptor import Variant as V

    kb = KB("atomics", (64, 1, 1))
    cnt, icnt = (
        kb.buffer("U32", "ReadWrite", "counters"),
        kb.buffer("I32", "ReadWrite", "icounters"),
    )
    olds, oob = kb.buffer("U32", "WriteOnly", "olds"), kb.buffer("U32", "WriteOnly", "oob")
    cas_s = kb.buffer("U32", "WriteOnly", "cas_old") if cas else None
    hist_out = kb.buffer("U32", "WriteOnly", "hist_out")
    hist = kb.local("Shared", "U32", 4, "hist")
    r = kb.root
    i, lid, wid = r.gid(0), r.emit("LocalInvocationId", 0), r.emit("WorkgroupId", 0)
    bit = r.bin("Shl", r.u(1), r.bin("BitAnd", i, r.u(31)))
    r.store(olds, i, r.atomic("Add", cnt, r.u(0), r.u(1)))
    r.atomic("Or", cnt, r.u(1), bit)
    r.atomic("And", cnt, r.u(2), r.un("BitNot", bit))
    r.atomic("Xor", cnt, r.u(3), i)
    r.atomic("Min", cnt, r.u(4), r.bin("Add", i, r.u(5)))
    r.atomic("Max", cnt, r.u(5), i)
    r.atomic("Exchange", cnt, r.u(6), r.u(7))
    if cas:
        r.store(cas_s, i, r.atomic("CompareExchange", cnt, r.u(7), r.u(0), r.bin("Add", i, r.u(1))))
    si = r.bin("Sub", r.cast("I32", i), r.lit("I32", 100))
    r.atomic("Min", icnt, r.u(0), si)
    r.atomic("Max", icnt, r.u(1), si)
    r.store(oob, i, r.bin("Add", r.atomic("Add", cnt, r.u(1000), r.u(1)), r.u(5)))
    r.atomic("Add", hist, r.bin("BitAnd", lid, r.u(3)), r.u(1))
    r.emit(V("Barrier", ("AcqRel",)), value=False)
    first = r.if_(r.bin("Lt", lid, r.u(4)))
    first.store(
        hist_out, first.bin("Add", first.bin("Mul", wid, first.u(4)), lid), first.load(hist, lid)
    )
    n = 64 * groups

    def check(got: dict) -> None:
        assert sorted(got["olds"].tolist()) == list(range(n)), (
            "atomic add old values are not 0..n-1"
        )
        winner = 0
        if cas:
            winners = np.flatnonzero(got["cas_old"] == 0)
            assert len(winners) == 1, f"compare-exchange succeeded {len(winners)} times"
            losers = got["cas_old"][got["cas_old"] != 0]
            assert np.all(losers == winners[0] + 1), (
                "failed compare-exchanges must see the winner's value"
            )
            winner = int(winners[0]) + 1
        xor = np.bitwise_xor.reduce(np.arange(n, dtype=np.uint32))
        want = [n, 0xFFFFFFFF, 0, xor, 5, n - 1, 7, winner]
        assert got["counters"].tolist() == want, f"counters {got['counters'].tolist()} != {want}"

    init = np.array([0, 0, 0xFFFFFFFF, 0, 0xFFFFFFFF, 0, 0, 0], dtype=np.uint32)
    z = np.zeros(n, np.uint32)
    inputs = {
        "counters": init,
        "icounters": np.array([I32_MAX, I32_MIN], np.int32),
        "olds": z,
        "oob": z,
        "hist_out": np.zeros(4 * groups, np.uint32),
    }
    if cas:
        inputs["cas_old"] = z
    return Case(
        kb.build(),
        inputs,
        {
            "icounters": np.array([-100, n - 101], np.int32),
            "oob": np.full(n, 5, np.uint32),
            "hist_out": np.full(4 * groups, 16, np.uint32),
        },
        groups=(groups, 1, 1),
        check=check,
    )


def case_bounds(n: int = 40) -> Case:
    """OOB global load -> 0, OOB store ignored, scratch array bounds, Bool scratch, uniforms."""
    kb = KB("bounds", (64, 1, 1))
    a_s, out, out2 = (
        kb.buffer("F32", "ReadOnly", "a"),
        kb.buffer("F32", "ReadWrite", "out"),
        kb.buffer("F32", "ReadWrite", "out2"),
    )
    lens, flags = kb.buffer("U32", "WriteOnly", "lens"), kb.buffer("I32", "WriteOnly", "flags")
    off, scale, bias = kb.scalar("U32", "off"), kb.scalar("F32", "scale"), kb.scalar("I32", "bias")
    local, flag = kb.local("Scratch", "F32", 4, "local"), kb.local("Scratch", "Bool", 1, "flag")
    r = kb.root
    i = r.gid(0)
    v = r.bin("Mul", r.load(a_s, r.bin("Add", i, r.param(off))), r.param(scale))
    r.store(out, i, v)
    r.store(local, r.bin("BitAnd", i, r.u(7)), r.bin("Add", v, r.lit("F32", 1.0)))
    r.store(out2, i, r.load(local, r.bin("BitAnd", i, r.u(7))))
    r.store(flag, r.u(0), r.bin("Gt", v, r.lit("F32", 0.5)))
    r.store(
        flags,
        i,
        r.bin(
            "Add",
            r.emit("Select", r.load(flag, r.u(0)), r.lit("I32", 1), r.lit("I32", 0)),
            r.param(bias),
        ),
    )
    first = r.if_(r.bin("Eq", i, r.u(0)))
    for k, slot in enumerate((a_s, local, out2)):
        first.store(lens, first.u(k), first.emit("BufferLength", slot))
    a = _rng(9).uniform(-1, 2, n).astype(np.float32)
    offv, scalev, biasv = 30, np.float32(1.5), -3
    idx = np.arange(n)
    v_ref = np.where(idx + offv < n, a[np.minimum(idx + offv, n - 1)] * scalev, 0).astype(
        np.float32
    )
    w = np.where((idx & 7) < 4, v_ref + np.float32(1), 0).astype(np.float32)
    flags_ref = ((v_ref > 0.5).astype(np.int32) + biasv).astype(np.int32)
    return Case(
        kb.build(),
        {
            "a": a,
            "out": np.full(n, -1, np.float32),
            "out2": np.full(n, -1, np.float32),
            "lens": np.zeros(3, np.uint32),
            "flags": np.zeros(n, np.int32),
        },
        {"out": v_ref, "out2": w, "lens": np.array([n, 4, n], np.uint32), "flags": flags_ref},
        {"off": offv, "scale": scalev, "bias": biasv},
        rtol=1e-6,
    )


CASES = {
    "saxpy": case_saxpy,
    "int_ops_u32": lambda: case_int_ops("U32"),
    "int_ops_i32": lambda: case_int_ops("I32"),
    "float_ops": case_float_ops,
    "casts": case_casts,
    "loops": case_loops,
    "returns": case_returns,
    "terminators": case_terminators,
    "shared": case_shared,
    "atomics": case_atomics,
    "bounds": case_bounds,
}
