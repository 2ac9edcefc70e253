"""Corpus cases for memory: workgroup arrays with barriers, atomics, bounds (out-of-bounds
loads give 0, stores do nothing), scratch variables and uniform parameters.
"""

from __future__ import annotations

import numpy as np
from descriptors import Case, Kernel

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def case_shared(groups: int = 3) -> Case:
    """Workgroup tree reduction with barriers; shared zero-init; OOB shared load/store; ids."""
    kb = Kernel("shared", (64, 1, 1))
    a_s = kb.buffer("U32", "ReadOnly", "a")
    sums, ids = kb.buffer("U32", "WriteOnly", "sums"), kb.buffer("U32", "WriteOnly", "ids")
    s, t = kb.local("Shared", "U32", 64, "s"), kb.local("Shared", "U32", 8, "t")
    stride = kb.local("Scratch", "U32", 1, "stride")
    r = kb.body
    gi, lid, wid = r.gid(0), r.lid(0), r.wid(0)
    nwg = r.num_workgroups(0)
    r.store(t, r.bin("Add", lid, r.u32(8)), r.u32(99))  # out of bounds: does nothing
    r.store(s, lid, r.load(a_s, gi))
    r.barrier("SeqCst")
    z = r.load(t, r.bin("BitAnd", lid, r.u32(7)))
    r.store(stride, r.u32(0), r.u32(32))
    body, cont = r.loop(continuing=True)
    st = body.load(stride, body.u32(0))
    body.if_(body.bin("Eq", st, body.u32(0))).brk()
    upd = body.if_(body.bin("Lt", lid, st))
    upd.store(s, lid, upd.bin("Add", upd.load(s, lid), upd.load(s, upd.bin("Add", lid, st))))
    body.barrier("AcqRel")
    cont.store(stride, cont.u32(0), cont.bin("Shr", cont.load(stride, cont.u32(0)), cont.u32(1)))
    first = r.if_(r.bin("Eq", lid, r.u32(0)))
    first.store(sums, wid, first.load(s, first.u32(0)))
    v = r.bin("Add", r.bin("Mul", wid, r.u32(1000)), r.bin("Mul", nwg, r.u32(100)))
    v = r.bin("Add", r.bin("Add", v, z), r.load(s, r.u32(1000)))  # t zeroed; s[1000] is OOB -> 0
    r.store(ids, gi, v)
    n = 64 * groups
    a = np.random.default_rng(3).integers(0, 1 << 20, n).astype(np.uint32)
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
    kb = Kernel("atomics", (64, 1, 1))
    cnt, icnt = (
        kb.buffer("U32", "ReadWrite", "counters"),
        kb.buffer("I32", "ReadWrite", "icounters"),
    )
    olds, oob = kb.buffer("U32", "WriteOnly", "olds"), kb.buffer("U32", "WriteOnly", "oob")
    cas_s = kb.buffer("U32", "WriteOnly", "cas_old") if cas else None
    hist_out = kb.buffer("U32", "WriteOnly", "hist_out")
    hist = kb.local("Shared", "U32", 4, "hist")
    r = kb.body
    i, lid, wid = r.gid(0), r.lid(0), r.wid(0)
    bit = r.bin("Shl", r.u32(1), r.bin("BitAnd", i, r.u32(31)))
    r.store(olds, i, r.atomic("Add", cnt, r.u32(0), r.u32(1)))
    r.atomic("Or", cnt, r.u32(1), bit)
    r.atomic("And", cnt, r.u32(2), r.un("BitNot", bit))
    r.atomic("Xor", cnt, r.u32(3), i)
    r.atomic("Min", cnt, r.u32(4), r.bin("Add", i, r.u32(5)))
    r.atomic("Max", cnt, r.u32(5), i)
    r.atomic("Exchange", cnt, r.u32(6), r.u32(7))
    if cas:
        r.store(
            cas_s,
            i,
            r.atomic("CompareExchange", cnt, r.u32(7), r.u32(0), r.bin("Add", i, r.u32(1))),
        )
    si = r.bin("Sub", r.cast("I32", i), r.lit("I32", 100))
    r.atomic("Min", icnt, r.u32(0), si)
    r.atomic("Max", icnt, r.u32(1), si)
    r.store(oob, i, r.bin("Add", r.atomic("Add", cnt, r.u32(1000), r.u32(1)), r.u32(5)))
    r.atomic("Add", hist, r.bin("BitAnd", lid, r.u32(3)), r.u32(1))
    r.barrier("AcqRel")
    first = r.if_(r.bin("Lt", lid, r.u32(4)))
    first.store(
        hist_out, first.bin("Add", first.bin("Mul", wid, first.u32(4)), lid), first.load(hist, lid)
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
    kb = Kernel("bounds", (64, 1, 1))
    a_s, out, out2 = (
        kb.buffer("F32", "ReadOnly", "a"),
        kb.buffer("F32", "ReadWrite", "out"),
        kb.buffer("F32", "ReadWrite", "out2"),
    )
    lens, flags = kb.buffer("U32", "WriteOnly", "lens"), kb.buffer("I32", "WriteOnly", "flags")
    off, scale, bias = kb.scalar("U32", "off"), kb.scalar("F32", "scale"), kb.scalar("I32", "bias")
    local, flag = kb.local("Scratch", "F32", 4, "local"), kb.local("Scratch", "Bool", 1, "flag")
    r = kb.body
    i = r.gid(0)
    v = r.bin("Mul", r.load(a_s, r.bin("Add", i, r.param(off))), r.param(scale))
    r.store(out, i, v)
    r.store(local, r.bin("BitAnd", i, r.u32(7)), r.bin("Add", v, r.lit("F32", 1.0)))
    r.store(out2, i, r.load(local, r.bin("BitAnd", i, r.u32(7))))
    r.store(flag, r.u32(0), r.bin("Gt", v, r.lit("F32", 0.5)))
    r.store(
        flags,
        i,
        r.bin(
            "Add",
            r.select(r.load(flag, r.u32(0)), r.lit("I32", 1), r.lit("I32", 0)),
            r.param(bias),
        ),
    )
    first = r.if_(r.bin("Eq", i, r.u32(0)))
    for k, slot in enumerate((a_s, local, out2)):
        first.store(lens, first.u32(k), first.length(slot))
    a = np.random.default_rng(9).uniform(-1, 2, n).astype(np.float32)
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


def case_shared_atomics(groups: int = 3) -> Case:
    """A workgroup histogram built with shared atomics, merged into a global one after a
    barrier, and one compare-exchange race per dispatch; Bool and I32 uniforms (unused)."""
    kb = Kernel("shared_atomics", (64, 1, 1))
    values = kb.buffer("U32", "ReadOnly", "values")
    hist, sel = kb.buffer("U32", "ReadWrite", "histogram"), kb.buffer("U32", "ReadWrite", "select")
    kb.scalar("Bool", "flag")
    kb.scalar("I32", "bias")
    bins = kb.local("Shared", "U32", 16, "bins")
    r = kb.body
    i, lid = r.gid(0), r.lid(0)
    r.atomic("Add", bins, r.bin("BitAnd", r.load(values, i), r.u32(15)), r.u32(1))
    r.barrier("AcqRel")
    head = r.if_(r.bin("Lt", lid, r.u32(16)))
    head.atomic("Add", hist, lid, head.load(bins, lid))
    old = head.atomic("CompareExchange", hist, head.u32(16), head.u32(0), head.num_workgroups(0))
    head.store(sel, head.wid(0), old)
    r.barrier("SeqCst")
    n = 64 * groups
    v = np.random.default_rng(13).integers(0, 1 << 20, n).astype(np.uint32)
    want = np.append(np.bincount(v & 15, minlength=16), groups).astype(np.uint32)

    def check(got: dict) -> None:
        # One compare-exchange of the whole dispatch sees 0; the 16 lanes of its workgroup
        # race to store what they saw, so that one workgroup may record 0 or `groups`.
        seen = got["select"].tolist()
        assert all(s in (0, groups) for s in seen) and seen.count(0) <= 1, seen

    return Case(
        kb.build(),
        {"values": v, "histogram": np.zeros(17, np.uint32), "select": np.zeros(groups, np.uint32)},
        {"histogram": want},
        scalars={"flag": True, "bias": -3},
        groups=(groups, 1, 1),
        check=check,
    )
