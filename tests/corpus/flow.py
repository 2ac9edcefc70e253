"""Corpus cases for control flow: ifs, for loops, vyre.loop with and without a continuing
block, break/continue/return and the unreachable code after them. References follow the
pinned semantics.
"""

from __future__ import annotations

import numpy as np
from descriptors import Case, Kernel


def case_saxpy(n: int = 200, wg: int = 64) -> Case:
    """y[i] = a * x[i] + y[i] under a bounds check, `wg` invocations per workgroup."""
    kb = Kernel("saxpy", (wg, 1, 1))
    x_s, y_s, a_s = (
        kb.buffer("F32", "ReadOnly", "x"),
        kb.buffer("F32", "ReadWrite", "y"),
        kb.scalar("F32", "a"),
    )
    r = kb.body
    i = r.gid(0)
    body = r.if_(r.bin("Lt", i, r.length(y_s)))
    body.store(
        y_s,
        i,
        body.bin("Add", body.bin("Mul", body.param(a_s), body.load(x_s, i)), body.load(y_s, i)),
    )
    rng = np.random.default_rng(1)
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
    kb = Kernel("loops", (64, 1, 1))
    o1, o2, o3 = (kb.buffer("U32", "WriteOnly", f"out{k}") for k in (1, 2, 3))
    acc, k_var, steps, j_var, acc2 = (
        kb.local("Scratch", "U32", 1, nm) for nm in ("acc", "k", "steps", "j", "acc2")
    )
    r = kb.body
    i = r.gid(0)
    r.if_(r.bin("Ge", i, r.length(o1))).ret()
    zero = r.u32(0)
    body = r.for_("j", r.u32(0), r.bin("Mod", i, r.u32(7)))
    jj = body.loop_index("j")
    body.if_(body.bin("Eq", jj, body.u32(3))).cont()
    body.if_(body.bin("Eq", jj, body.u32(5))).brk()
    body.store(acc, body.u32(0), body.bin("Add", body.load(acc, body.u32(0)), jj))
    r.store(o1, i, r.load(acc, zero))
    r.store(k_var, zero, r.bin("Add", i, r.u32(1)))
    loop = r.loop()
    kv = loop.load(k_var, loop.u32(0))
    loop.if_(loop.bin("Le", kv, loop.u32(1))).brk()
    even, odd = loop.if_else(loop.bin("Eq", loop.bin("Mod", kv, loop.u32(2)), loop.u32(0)))
    even.store(k_var, even.u32(0), even.bin("Div", kv, even.u32(2)))
    odd.store(k_var, odd.u32(0), odd.bin("Add", odd.bin("Mul", kv, odd.u32(3)), odd.u32(1)))
    loop.store(steps, loop.u32(0), loop.bin("Add", loop.load(steps, loop.u32(0)), loop.u32(1)))
    r.store(o2, i, r.load(steps, zero))
    r.store(j_var, zero, r.bin("Mod", i, r.u32(3)))
    lbody, lcont = r.loop(continuing=True)
    jv = lbody.load(j_var, lbody.u32(0))
    lbody.if_(lbody.bin("Ge", jv, lbody.u32(20))).brk()
    lbody.if_(lbody.bin("Eq", jv, lbody.u32(9))).cont()
    lbody.store(acc2, lbody.u32(0), lbody.bin("Add", lbody.load(acc2, lbody.u32(0)), jv))
    lcont.store(
        j_var, lcont.u32(0), lcont.bin("Add", lcont.load(j_var, lcont.u32(0)), lcont.u32(3))
    )
    r.store(o3, i, r.load(acc2, zero))
    refs = np.array([_loops_ref(k) for k in range(n)], dtype=np.uint32)
    zeros = np.zeros(n, dtype=np.uint32)
    return Case(
        kb.build(),
        {"out1": zeros, "out2": zeros, "out3": zeros},
        {"out1": refs[:, 0], "out2": refs[:, 1], "out3": refs[:, 2]},
        groups=(2, 1, 1),
    )


def case_returns(n: int = 90) -> Case:
    """Early returns in if/else arms, a loop left only by return, unreachable code after it."""
    kb = Kernel("returns", (32, 1, 1))
    out, out2 = kb.buffer("U32", "ReadWrite", "out"), kb.buffer("U32", "ReadWrite", "out2")
    r = kb.body
    i = r.gid(0)
    r.if_(r.bin("Ge", i, r.length(out))).ret()
    m4 = r.bin("Mod", i, r.u32(4))
    one, other = r.if_else(r.bin("Eq", m4, r.u32(1)))
    one.store(out2, i, one.u32(10))
    one.ret()  # a terminator ends its body (validation refuses ops after it)
    two = other.if_(other.bin("Eq", m4, other.u32(2)))
    two.store(out2, i, two.u32(20))
    two.ret()
    other.store(out2, i, other.u32(30))
    loop = r.loop()
    loop.store(out, i, loop.bin("Mul", i, loop.u32(2)))
    loop.if_(loop.bin("Eq", loop.bin("Mod", i, loop.u32(3)), loop.u32(0))).ret()
    loop.store(out, i, loop.bin("Add", loop.bin("Mul", i, loop.u32(2)), loop.u32(1)))
    loop.ret()
    r.store(out, i, r.u32(5))  # after a loop with no break: unreachable
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
    kb = Kernel("terminators", (32, 1, 1))
    out, out2 = kb.buffer("U32", "ReadWrite", "out"), kb.buffer("U32", "ReadWrite", "out2")
    cnt = kb.local("Scratch", "U32", 1, "cnt")
    r = kb.body
    i = r.gid(0)
    r.if_(r.bin("Ge", i, r.length(out))).ret()
    body = r.for_("j", r.u32(0), r.u32(10))
    body.store(cnt, body.u32(0), body.bin("Add", body.load(cnt, body.u32(0)), body.u32(1)))
    stop, go_on = body.if_else(
        body.bin("Eq", body.loop_index("j"), body.bin("Mod", i, body.u32(5)))
    )
    stop.brk()
    go_on.cont()
    body.store(out, i, body.u32(999))  # unreachable: both arms left the body
    r.store(out, i, r.load(cnt, r.u32(0)))
    even, odd = r.if_else(r.bin("Eq", r.bin("BitAnd", i, r.u32(1)), r.u32(0)))
    even.store(out2, i, even.u32(1))
    even.ret()
    odd.store(out2, i, odd.u32(2))
    odd.ret()
    r.store(out, i, r.u32(777))  # unreachable: both arms returned
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


def _control_flow_ref(i: int) -> int:
    acc = sum(k for k in range(8) if k % 3 != 0)
    arr, j = [0] * 4, 0
    while j < i:
        if j < len(arr):  # out-of-bounds scratch stores do nothing
            arr[j] = j
        j += 2
    return acc + arr[3]


def case_control_flow(n: int = 50) -> Case:
    """An early return, an i32 for loop with continue, and a vyre.loop with a continuing
    block left by break that writes a scratch array partly out of bounds."""
    kb = Kernel("control_flow", (32, 1, 1))
    out = kb.buffer("I32", "ReadWrite", "out")
    acc, j = kb.local("Scratch", "I32", 1, "acc"), kb.local("Scratch", "U32", 1, "j")
    arr = kb.local("Scratch", "I32", 4, "loop")
    r = kb.body
    i = r.gid(0)
    r.if_(r.bin("Ge", i, r.length(out))).ret()
    body = r.for_("k", r.i32(0), r.i32(8))
    k = body.loop_index("k")
    body.if_(body.bin("Eq", body.bin("Mod", k, body.i32(3)), body.i32(0))).cont()
    total = body.load(acc, body.u32(0))
    body.store(acc, body.u32(0), body.bin("Add", total, k))
    wbody, step = r.loop(continuing=True)
    jv = wbody.load(j, wbody.u32(0))
    stop, go_on = wbody.if_else(wbody.bin("Ge", jv, i))
    stop.brk()
    go_on.store(arr, jv, go_on.cast("I32", jv))
    step.store(j, step.u32(0), step.bin("Add", step.load(j, step.u32(0)), step.u32(2)))
    r.store(out, i, r.bin("Add", r.load(acc, r.u32(0)), r.load(arr, r.u32(3))))
    want = np.array([_control_flow_ref(k) for k in range(n)], np.int32)
    return Case(
        kb.build(), {"out": np.full(n, -1, np.int32)}, {"out": want}, groups=(-(-n // 32), 1, 1)
    )
