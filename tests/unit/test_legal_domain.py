"""The legal form's promise, checked by the reference's strict mode (`execute(strict=True)`).

- strict mode raises DispatchError naming the op, the lane (global invocation id) and the
  value when a lane executing an op gives it an operand outside its domain (a divisor 0,
  i32::MIN / -1, a shift by 32, clz/ctz of 0, a NaN or out-of-range float -> int cast,
  loads, stores and atomics out of bounds, memory-ordered ones too), and not when an `if`,
  a loop's break or a return keeps those lanes from executing it; off, the pinned rules;
  a clz/ctz of 0 only where its result is used (not dropped by a select, as legalize does);
- a legal form made with forged proofs (every op "safe") keeps the bad operands, and strict
  mode finds them: it catches a guard legalize wrongly dropped;
- the legal form (`descriptor.legalize`) of every kernel of kernels/ runs strictly on small
  dispatches with edge inputs (buffers shorter than the grid: accesses past the end);
- so do the legal forms of the first programs tools/conformance.py generates (seed 1, small).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import sys

import numpy as np
import pytest
from descriptors import Kernel, dt, vt

from vyre_build.compiler import compile_file
from vyre_build.core.errors import DispatchError
from vyre_build.descriptor import validate
from vyre_build.descriptor.legalize import legalize
from vyre_build.descriptor.memory_order import payload
from vyre_build.descriptor.ranges import Proofs
from vyre_build.descriptor.types import TYPES
from vyre_build.reference import execute
from vyre_build.reference.values import dtype_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "kernels")
TOOLS = os.path.join(ROOT, "tools")
N, BAD = 8, 5  # one workgroup of N invocations; the operand of invocation BAD is bad

# --- strict mode on hand-built descriptors ---------------------------------------------


def _unit(ty: str, values, apply, guard: str | None = None):
    """A kernel where invocation i computes `apply(body, kb, x)` on x = in[i] (in holds
    `values`, of element type `ty`) and stores it to out[i]; `guard`: the op runs under
    `if i != BAD` ("if"), after `if i == BAD: return` ("return"), or in a loop that the
    BAD lane breaks out of first ("break")."""
    kb = Kernel("unit", (N, 1, 1))
    r = kb.body
    src = kb.buffer(dt(ty.upper()), "ReadOnly", "in")
    out = kb.buffer(dt("U32"), "ReadWrite", "out")
    i = r.gid()
    body = r
    if guard == "if":
        body = r.if_(r.bin("Ne", i, r.u32(BAD)))
    elif guard == "return":
        r.if_(r.bin("Eq", i, r.u32(BAD))).ret()
    elif guard == "break":
        body = r.for_("t", r.u32(0), r.u32(2))
        body.if_(body.bin("Eq", i, body.u32(BAD))).brk()
    x = body.load(src, i)
    v = apply(body, kb, x)
    if v is not None:
        body.store(out, i, v)
    return kb.build(), {"in": np.array(values, dtype_of(ty)), "out": np.zeros(N, np.uint32)}


def _values(good, bad):
    vals = [good] * N
    vals[BAD] = bad
    return vals


def _raises(desc, inputs, *words):
    with pytest.raises(DispatchError) as got:
        execute(desc, inputs, {}, (1, 1, 1), strict=True)
    message = str(got.value)
    assert "strict" in message and f"({BAD}, 0, 0)" in message, message
    for w in words:
        assert w in message, (w, message)
    return message


def _op(make, signed: bool):
    """apply(body, kb, x): `make(body, x)` as u32 bits (`signed`: an i32, bitcast)."""

    def apply(b, kb, x):
        v = make(b, x)
        return b.bitcast("U32", v) if signed else v

    return apply


def _div(name, lit, dividend):
    return _op(lambda b, x: b.bin(name, b.lit(lit, dividend), x), lit == "I32")


def _shift(name, lit):
    return _op(lambda b, x: b.bin(name, b.lit(lit, 1), x), lit == "I32")


def _unary(name, ty="u32"):
    return _op(lambda b, x: b.un(name, x), ty == "i32")


def _cast(target):
    return _op(lambda b, x: b.cast(target.upper(), x), target == "i32")


MIN = -(2**31)
# Each case: (name, element type of in, values, apply, what the message names).
VALUES = [
    ("u32 / 0", "u32", _values(3, 0), _div("Div", "U32", 7), ["Div(u32)", "divisor 0"]),
    ("u32 % 0", "u32", _values(3, 0), _div("Mod", "U32", 7), ["Mod(u32)", "divisor 0"]),
    ("i32 / 0", "i32", _values(-3, 0), _div("Div", "I32", 7), ["Div(i32)", "divisor 0"]),
    ("MIN / -1", "i32", _values(3, -1), _div("Div", "I32", MIN), ["dividend -2147483648, "]),
    ("MIN % -1", "i32", _values(-3, -1), _div("Mod", "I32", MIN), ["Mod(i32)", "divisor -1"]),
    ("u32 << 32", "u32", _values(31, 32), _shift("Shl", "U32"), ["Shl(u32)", "amount 32"]),
    ("i32 >> 32", "u32", _values(0, 32), _shift("Shr", "I32"), ["Shr(i32)", "amount 32"]),
    ("u32 >> -1", "u32", _values(1, 2**32 - 1), _shift("Shr", "U32"), ["amount 4294967295"]),
    ("clz 0", "u32", _values(5, 0), _unary("Clz"), ["Clz(u32)", "operand 0"]),
    ("ctz 0", "i32", _values(-5, 0), _unary("Ctz", "i32"), ["Ctz(i32)", "operand 0"]),
    ("nan -> i32", "f32", _values(1.5, np.nan), _cast("i32"), ["Cast(f32 -> i32)", "nan"]),
    ("3e9 -> i32", "f32", _values(-1.5, 3e9), _cast("i32"), ["Cast(f32 -> i32)", "3000000000.0"]),
    ("2^31 -> i32", "f32", _values(2147483520.0, 2.0**31), _cast("i32"), ["2147483648.0"]),
    ("-inf -> i32", "f32", _values(-(2.0**31), -np.inf), _cast("i32"), ["-inf"]),
    ("-1 -> u32", "f32", _values(4294967040.0, -1.0), _cast("u32"), ["Cast(f32 -> u32)"]),
    ("2^32 -> u32", "f32", _values(0.0, 2.0**32), _cast("u32"), ["4294967296.0"]),
]


@pytest.mark.parametrize("name,ty,values,apply,words", VALUES, ids=[c[0] for c in VALUES])
def test_strict_names_the_op_the_lane_and_the_value(name, ty, values, apply, words):
    desc, inputs = _unit(ty, values, apply)
    message = _raises(desc, inputs, *words)
    assert "op #" in message and "-> %" in message, message
    execute(desc, inputs, {}, (1, 1, 1))  # off: the pinned rules, no error
    good = dict(inputs, **{"in": np.full(N, values[0], inputs["in"].dtype)})
    execute(desc, good, {}, (1, 1, 1), strict=True)  # the domain's values pass


@pytest.mark.parametrize("guard", ["if", "return", "break"])
@pytest.mark.parametrize("name,ty,values,apply,words", VALUES, ids=[c[0] for c in VALUES])
def test_strict_ignores_lanes_that_do_not_execute_the_op(name, ty, values, apply, words, guard):
    desc, inputs = _unit(ty, values, apply, guard=guard)
    strict = execute(desc, inputs, {}, (1, 1, 1), strict=True)
    plain = execute(desc, inputs, {}, (1, 1, 1))
    assert strict["out"].tobytes() == plain["out"].tobytes()


@pytest.mark.parametrize("name", ["Clz", "Ctz"])
def test_a_count_of_0_is_an_error_only_where_its_result_is_used(name):
    """The legal form's `select(x == 0, 32, clz(x))` computes clz(0) and drops it: fine;
    a select that keeps it for the zero lane, or any other use, is refused."""
    values = _values(6, 0)

    def select(keep_zero: bool):
        def apply(b, kb, x):
            is0 = b.bin("Eq" if not keep_zero else "Ne", x, b.u32(0))
            return b.select(is0, b.u32(32), b.un(name, x))

        return apply

    desc, inputs = _unit("u32", values, select(False))
    got = execute(desc, inputs, {}, (1, 1, 1), strict=True)
    assert got["out"].tolist() == [1 if name == "Ctz" else 29] * BAD + [32] + [
        1 if name == "Ctz" else 29
    ] * (N - BAD - 1)
    desc, inputs = _unit("u32", values, select(True))
    _raises(desc, inputs, f"{name}(u32)", "operand 0", "Select")
    desc, inputs = _unit("u32", values, lambda b, kb, x: b.bin("Add", b.un(name, x), b.u32(1)))
    _raises(desc, inputs, f"{name}(u32)", "operand 0", "Add(u32)")


# --- memory: every index past the slot's length, for each access kind ---------------------

LEN = 4  # elements of the accessed slot; invocation BAD's index is LEN (one past the end)
IDX = [k % LEN for k in range(N)]
IDX[BAD] = LEN


def _memory_kernel(access: str, where: str, guard: bool):
    """Invocation i accesses slot `where` ("global", "shared", "scratch", "vec4") at idx[i]
    with `access`; `guard`: under `if i != BAD`."""
    kb = Kernel("mem", (N, 1, 1))
    r = kb.body
    idx = kb.buffer(dt("U32"), "ReadOnly", "idx")
    out = kb.buffer(dt("U32"), "ReadWrite", "out")
    inputs = {"idx": np.array(IDX, np.uint32), "out": np.zeros(N, np.uint32)}
    if where == "global":
        slot = kb.buffer(dt("U32"), "ReadWrite", "data")
        inputs["data"] = np.arange(LEN, dtype=np.uint32)
    elif where == "vec4":
        slot = kb.buffer(vt("U32", 4), "ReadWrite", "data")
        inputs["data"] = np.arange(4 * LEN, dtype=np.uint32)
    else:
        slot = kb.local(where.capitalize(), dt("U32"), LEN, "data")
    i = r.gid()
    b = r.if_(r.bin("Ne", i, r.u32(BAD))) if guard else r
    k = b.load(idx, i)
    one = b.u32(1)
    if where == "vec4":
        one = b.vec("U32", one, one, one, one)
    device = "workgroup" if where == "shared" else "device"
    if access == "load":
        v = b.load(slot, k)
    elif access == "store":
        b.store(slot, k, one)
        v = None
    elif access == "atomic":
        v = b.atomic("Add", slot, k, one)
    elif access == "ordered atomic":
        v = b.expr(
            "vyre.atomic", slot, k, one, payload=payload("vyre.atomic", device, "acq_rel", "Add")
        )
    elif access == "ordered load":
        v = b.expr(
            "vyre.atomic.load", slot, k, payload=payload("vyre.atomic.load", device, "acquire")
        )
    else:  # ordered store
        b.node(
            "vyre.atomic.store",
            slot,
            k,
            one,
            payload=payload("vyre.atomic.store", device, "release"),
        )
        v = None
    if v is not None:
        b.store(out, i, b.extract(v, 0) if where == "vec4" else v)
    return kb.build(), inputs


MEMORY = [
    ("load", "global", "LoadGlobal"),
    ("load", "shared", "LoadShared"),
    ("load", "scratch", "LoadShared"),
    ("load", "vec4", "LoadGlobal"),
    ("store", "global", "StoreGlobal"),
    ("store", "shared", "StoreShared"),
    ("store", "scratch", "StoreShared"),
    ("store", "vec4", "StoreGlobal"),
    ("atomic", "global", "Atomic Add"),
    ("atomic", "shared", "Atomic Add"),
    ("ordered atomic", "global", "vyre.atomic Add"),
    ("ordered load", "global", "vyre.atomic.load"),
    ("ordered store", "global", "vyre.atomic.store"),
    ("ordered load", "shared", "vyre.atomic.load"),
]


@pytest.mark.parametrize("access,where,name", MEMORY, ids=[f"{a} {w}" for a, w, _ in MEMORY])
def test_strict_refuses_an_access_out_of_bounds(access, where, name):
    desc, inputs = _memory_kernel(access, where, guard=False)
    before = {k: v.copy() for k, v in inputs.items()}
    _raises(desc, inputs, name, f"index {LEN}", f"has {LEN} elements")
    for k, v in inputs.items():
        assert v.tobytes() == before[k].tobytes()  # the caller's buffers untouched
    execute(desc, inputs, {}, (1, 1, 1))  # off: dropped, or 0
    guarded, inputs = _memory_kernel(access, where, guard=True)
    strict = execute(guarded, inputs, {}, (1, 1, 1), strict=True)
    plain = execute(guarded, inputs, {}, (1, 1, 1))
    assert all(strict[k].tobytes() == plain[k].tobytes() for k in plain)


def test_strict_checks_a_literal_index_and_every_chunk():
    """A literal index past the end (the reference's fixed-cell path) is refused for the
    lanes that reach it; the lane named is the first bad one of the dispatch."""
    kb = Kernel("lit", (N, 1, 1))
    r = kb.body
    data = kb.buffer(dt("U32"), "ReadWrite", "data")
    i = r.gid()
    then = r.if_(r.bin("Eq", i, r.u32(N + BAD)))  # only in the second workgroup
    then.store(data, then.u32(LEN), then.u32(1))
    desc = kb.build()
    inputs = {"data": np.zeros(LEN, np.uint32)}
    execute(desc, inputs, {}, (1, 1, 1), strict=True)  # the lane does not exist: fine
    with pytest.raises(DispatchError, match=rf"StoreGlobal.*\({N + BAD}, 0, 0\).*index {LEN}"):
        execute(desc, inputs, {}, (2, 1, 1), strict=True)


def test_the_legal_form_of_the_bad_kernels_runs_strictly():
    """legalize guards what the cases above refuse: their legal forms pass."""
    for name, ty, values, apply, _ in VALUES:
        desc, inputs = _unit(ty, values, apply)
        legal = legalize(desc).desc
        got = execute(legal, inputs, {}, (1, 1, 1), strict=True)
        want = execute(desc, inputs, {}, (1, 1, 1))
        assert got["out"].tobytes() == want["out"].tobytes(), name
    for access, where, _ in MEMORY:
        desc, inputs = _memory_kernel(access, where, guard=False)
        got = execute(legalize(desc).desc, inputs, {}, (1, 1, 1), strict=True)
        want = execute(desc, inputs, {}, (1, 1, 1))
        assert all(got[k].tobytes() == want[k].tobytes() for k in want), (access, where)


def _forged(desc):
    """The legal form of `desc` had the range analysis 'proved' every op safe and every
    access in bounds (the kind of bug strict mode is for): no guard but the casts'."""
    info = validate(desc)
    every = frozenset(op.index for op in info.view.ops)
    forged = Proofs(every, info.proofs.unzeroed, every)
    return legalize(desc, dataclasses.replace(info, proofs=forged)).desc


def test_strict_catches_a_guard_legalize_dropped():
    """With forged proofs the legal form keeps the bad operands, and strict mode finds each
    one (a cast keeps its clamp: no proof removes it)."""
    for _, ty, values, apply, words in VALUES:
        desc, inputs = _unit(ty, values, apply)
        legal = _forged(desc)
        if ty == "f32":  # the casts (the only cases on f32)
            execute(legal, inputs, {}, (1, 1, 1), strict=True)
        else:  # i32 Mod is a - b * (a / b) in the legal form: its Div gets the operands
            _raises(legal, inputs, words[0].replace("Mod(i32)", "Div(i32)"))
    for access, where, name in MEMORY:
        desc, inputs = _memory_kernel(access, where, guard=False)
        _raises(_forged(desc), inputs, name, f"index {LEN}")


def test_a_value_stored_past_a_local_s_end_leaves_its_guards(tmp_path):
    """The review's finding (ranges.py took the value stored at t[i + 1] for t's, although
    a one-element local keeps only t[0]): strict mode sees the divisor 0 and the shared
    store out of bounds its proofs let through, and passes the legal form now."""
    path = tmp_path / "k.py"
    lines = [
        "t = local_array(u32, 1)",
        "w = local_array(u32, 1)",
        "a = shared(u32, 4)",
        "i = global_id().x",
        "w[0] = u32(100)",
        "t[i + 1] = i",
        "w[i + 1] = i",
        "if i > 0:",
        "    if i < 4:",
        "        a[w[0]] = u32(1)",
        "    y[i] = 100 // t[0]",
    ]
    path.write_text(
        "from vyre_build.lang import *\n\n\n@kernel(workgroup_size=8)\n"
        "def k(y: Buffer[u32, 'w']):\n" + "".join(f"    {line}\n" for line in lines)
    )
    (k,) = compile_file(str(path), root=str(tmp_path), targets=("kdesc",))
    y = np.zeros(8, np.uint32)
    got = execute(legalize(k.descriptor).desc, {"y": y}, {}, (1, 1, 1), strict=True)["y"]
    assert got[1:].tolist() == [100] * 7  # x / 0 == x


# --- the legal forms of kernels/ --------------------------------------------------------

EDGES = {
    "u32": [0, 1, 2, 31, 32, 33, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF],
    "i32": [0, 1, -1, 31, 32, -32, -(2**31), 2**31 - 1],
    "f32": [0.0, -0.0, 1.5, -1.5, np.nan, np.inf, -np.inf, 3e9, -3e9, 2147483648.0, 65504.0],
    "f16": [0.0, -0.0, 1.5, -1.5, np.nan, np.inf, -np.inf, 65504.0, -65504.0],
}
ELEMENTS = 13  # every buffer's length: shorter than the dispatch, so accesses run past it


def _buffer(rng, ty: str, tame: bool) -> np.ndarray:
    """Random values with the edges of the type (`tame`: small values, 0 to 15)."""
    element, count = TYPES[ty].element, TYPES[ty].count
    n = ELEMENTS * count
    dtype = dtype_of(ty)
    if tame:
        return rng.integers(0, 16, n).astype(dtype)
    if element in ("f32", "f16"):
        values = rng.standard_normal(n) * 4
    else:
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, n, endpoint=True)
    values = values.astype(dtype)
    edges = np.array(EDGES[element], dtype)
    at = rng.choice(n, size=min(n // 2, edges.size), replace=False)
    values[at] = edges[: at.size]
    return values


def _arguments(meta: dict, seed: int, tame: bool):
    """Every buffer (ELEMENTS long) and scalar (small) of a kernel, from its metadata
    (`tame`: small values, written buffers zeroed)."""
    rng = np.random.default_rng(seed)
    buffers, scalars = {}, {}
    for b in meta["bindings"]:
        if b["kind"] == "buffer":
            buffers[b["name"]] = _buffer(rng, b["dtype"], tame)
            if tame and b["access"] != "r":  # flags and counters start at 0
                buffers[b["name"]][:] = 0
        elif b["dtype"] == "f32":
            scalars[b["name"]] = float(rng.choice([0.0, 0.5, -2.0, 1e-5]))
        else:
            scalars[b["name"]] = int(rng.integers(1, 6))  # not 0: a stride of 0 never ends
    return buffers, scalars


def _kernels():
    out = []
    for path in sorted(glob.glob(os.path.join(KERNELS, "*.py"))):
        for k in compile_file(path, root=KERNELS, targets=("kdesc",)):
            out.append(k)
    return out


@pytest.fixture(scope="module")
def kernels():
    return _kernels()


def test_every_kernel_s_legal_form_runs_strictly(kernels):
    """Per kernel, two workgroups (the second wholly past every buffer's end) on arguments
    with edge values; where that run stops at its step budget (a loop over a huge count, a
    wait on a flag), again on tame ones (small integers, written buffers zeroed), which
    must end.
    A kernel with cooperative matrices is left out: its fragments need a shape (16 x 16
    tiles at aligned strides) and legalize leaves their rule to the SPIR-V emitter."""
    ran, stopped, left = 0, [], []
    for k in kernels:
        meta = k.meta
        if any(f.startswith("cooperative_matrix") for f in meta.get("features") or ()):
            left.append(meta["id"])
            continue
        legal = legalize(k.descriptor)
        for tame in (False, True):
            buffers, scalars = _arguments(meta, 1, tame)
            try:
                execute(
                    legal.desc,
                    buffers,
                    scalars,
                    (2, 1, 1),
                    info=legal.info,
                    subgroup_size=8,
                    max_steps=1 << 18 if tame else 1 << 16,
                    strict=True,
                )
            except DispatchError as exc:
                if "strict" in str(exc) or tame:
                    raise AssertionError(f"{meta['id']} (tame: {tame}): {exc}") from exc
                stopped.append(meta["id"])
                continue
            break  # the edge run ended
        ran += 1
    assert ran >= 80, ran
    assert len(stopped) <= 10, stopped
    coop = ["lib_matmul_f16", "lib_mm_bf16.bf16", "lib_mm_bf16.f32", "lib_mm_f16.f16"]
    assert sorted(left) == [*coop, "lib_mm_f16.f32"], left


# --- the legal forms of generated programs -----------------------------------------------

PROGRAMS = 150


def _conform():
    if TOOLS not in sys.path:
        sys.path.insert(0, TOOLS)
    from conform.gen import generate
    from conformance import SIZES

    return generate, SIZES["small"]


def test_generated_programs_legal_forms_run_strictly(tmp_path):
    generate, opts = _conform()
    path = str(tmp_path / "k.py")
    failures = []
    for index in range(PROGRAMS):
        prog = generate(1, index, opts)
        (compiled,) = compile_file(path, text=prog.source(), targets=("kdesc",))
        desc = compiled.descriptor
        legal = legalize(desc, validate(desc))
        try:
            execute(
                legal.desc,
                {k: v.copy() for k, v in prog.inputs.items()},
                dict(prog.scalars),
                (prog.groups, 1, 1),
                info=legal.info,
                subgroup_size=prog.subgroup_size,
                strict=True,
            )
        except DispatchError as exc:
            failures.append(f"1:{index}: {exc}")
    assert not failures, "\n".join(failures)
