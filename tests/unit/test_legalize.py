"""The legalize pass (`descriptor.legalize`): the pinned semantics written once as ops.

- the legal form means what the input means: the CPU reference (which executes the
  pinned rules itself) gives bit-identical results on a descriptor and on its legal form,
  for every row legalize rewrites, on edge values (0, -1, i32::MIN, amounts past 31, NaN,
  infinities, values past the integer ranges) and on accesses out of bounds;
- no row of `EXPANDED` survives, and every op of the legal form has a rule in both
  emitters (they refuse the expanded rows);
- what the range analysis proves stays as it was: a literal or proved-nonzero divisor has
  no guard, a literal shift amount is folded, an access under `if i < len(buf)` no clamp;
- untouched descriptors come back as they are; the pass is deterministic.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from descriptors import Kernel, V, buf, dt, vt

from vyre_build.compiler import compile_file
from vyre_build.core.errors import DescriptorFormatError
from vyre_build.descriptor import validate
from vyre_build.descriptor.codec import encode
from vyre_build.descriptor.legalize import EXPANDED, LEGAL_ROWS, legalize
from vyre_build.descriptor.ops import OPS
from vyre_build.descriptor.ranges import Proofs
from vyre_build.descriptor.types import datatype
from vyre_build.descriptor.view import Atomic, Binary, Cast, If, Load, Store, Unary
from vyre_build.reference import execute

I32_EDGES = [0, 1, -1, 2, -2, 7, -7, 31, 32, 33, -32, 255, 1 << 30, -(1 << 31), (1 << 31) - 1]
U32_EDGES = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000]
U32_EDGES += [0xFFFFFFFF, 0xFFFFFFFE]
F32_EDGES = [0.0, -0.0, 1.5, -1.5, 0.7, -0.7, 3e9, -3e9, 2147483520.0, 2147483648.0]
F32_EDGES += [-2147483648.0, -2147483904.0, 4294967040.0, 4294967296.0, 123456.789]
F32_EDGES += [np.inf, -np.inf, np.nan, 65504.0, -65504.0]
N = 24  # invocations (one workgroup): every operand pair drawn from the edges


def _inputs():
    rng = np.random.default_rng(5)
    pick = lambda edges, dtype: np.array(  # noqa: E731
        [edges[k] for k in rng.integers(0, len(edges), N)], dtype
    )
    return {
        "u32": (pick(U32_EDGES, np.uint32), pick(U32_EDGES, np.uint32)),
        "i32": (pick(I32_EDGES, np.int32), pick(I32_EDGES, np.int32)),
        "f32": (pick(F32_EDGES, np.float32), pick(F32_EDGES, np.float32)),
    }


def _rows_kernel(rows):
    """Invocation i applies every row to operands a[i], b[i] of the row's types (f16 and
    vectors from f32 / i32 / u32 values) and stores each result to out_<type>[i * R + k]."""
    kb = Kernel("rows", (N, 1, 1))
    r = kb.body
    i = r.gid()
    ins, outs = {}, {}

    def load(t: str, which: int):
        key = (t, which)
        if key not in ins:
            ins[key] = kb.buffer(datatype(t), "ReadOnly", f"{t}_{which}")
        return r.load(ins[key], i)

    def operand(t: str, which: int):
        if t in ("u32", "i32", "f32"):
            return load(t, which)
        if t in ("f16", "bf16"):
            return r.cast(datatype(t), load("f32", which))
        if t == "bool":
            return r.bin("Lt", load("u32", which), r.u32(40))
        n, base = int(t[3]), {"f": "f32", "i": "i32", "u": "u32", "h": "f16", "bf": "bf16"}[t[4:]]
        # components: this operand's value, then the other operand's (edges meet edges)
        parts = [operand(base, which)] + [operand(base, 1 - which)] * (n - 1)
        return r.vec(datatype(t), *parts)

    count = len(rows)
    for k, ((family, name), operands) in enumerate(rows):
        args = [operand(t, j) for j, t in enumerate(operands)]
        if family == "Cast":
            v = r.cast(datatype(name), *args)
        else:
            v = r.op(V(family, (V(name),)), *args)
        res = OPS[((family, name), operands)]
        scalars = _components(r, v, res)
        for c, (ty, x) in enumerate(scalars):
            if ty not in outs:
                outs[ty] = kb.buffer(datatype(ty), "WriteOnly", f"out_{ty}")
            at = r.bin("Add", r.bin("Mul", i, r.u32(count * 4)), r.u32(k * 4 + c))
            r.store(outs[ty], at, x)
    return kb.build(), count * 4


def _components(r, v, ty: str):
    """(storage type, value) of each component of `v` (f16, bf16 widened to f32, bool to
    u32)."""
    if ty.startswith("vec"):
        n, base = int(ty[3]), {"f": "f32", "i": "i32", "u": "u32", "h": "f16", "bf": "bf16"}[ty[4:]]
        out = []
        for c in range(n):
            out += _components(r, r.extract(v, c), base)
        return out
    if ty in ("f16", "bf16"):
        return [("f32", r.cast(datatype("f32"), v))]
    if ty == "bool":
        return [("u32", r.select(v, r.u32(1), r.u32(0)))]
    return [(ty, v)]


def _run(desc, per):
    data = _inputs()
    buffers = {}
    for s in desc.slots:
        if s.visibility == "ReadOnly":
            t, which = s.name.split("_")
            buffers[s.name] = data[t][int(which)]
        else:
            buffers[s.name] = np.zeros(
                N * per, {"u32": np.uint32, "i32": np.int32, "f32": np.float32}[s.name[4:]]
            )
    return execute(desc, buffers, {}, (1, 1, 1))


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)


LEGALIZED_FAMILIES = (
    [
        [row for row in OPS if row[0] == ("BinOpKind", name) and row[1][0] in ("u32", "i32")]
        for name in ("Div", "Mod", "Shl", "Shr", "RotateLeft", "RotateRight", "MulHigh", "AbsDiff")
    ]
    + [
        [row for row in OPS if row[0][0] == "UnOpKind" and row[0][1] in names]
        for names in (("Clz", "Ctz"), ("Abs", "Sign"))
    ]
    + [
        [row for row in OPS if row[0][0] == "Cast" and row[1][0] in src]
        for src in (("f32", "f16"), ("vec2f", "vec4f", "vec2h", "vec4h"))
    ]
)


@pytest.mark.parametrize("rows", LEGALIZED_FAMILIES, ids=lambda rows: f"{rows[0][0][1]}...")
def test_the_legal_form_gives_the_references_bits(rows):
    desc, per = _rows_kernel(sorted(rows))
    info = validate(desc)
    legal = legalize(desc, info)
    assert legal.desc is not desc, "nothing was rewritten"
    before, after = _run(desc, per), _run(legal.desc, per)
    for name in before:
        np.testing.assert_array_equal(_bits(after[name]), _bits(before[name]), err_msg=name)


def _rows_in(desc):
    info = validate(desc)
    return {
        (op.key, tuple(info.types[o] for o in op.operands))
        for op in info.view.ops
        if isinstance(op, (Binary, Unary, Cast))
    }


def test_no_expanded_row_survives_and_every_legal_row_has_both_rules():
    from vyre_build.emit.spirv.values import RULE_ROWS as SPIRV
    from vyre_build.emit.wgsl.values import RULE_ROWS as WGSL

    rows = sorted(r for r in OPS if r[0][0] in ("BinOpKind", "UnOpKind", "Cast"))
    desc, _ = _rows_kernel(rows)
    legal = legalize(desc)
    present = _rows_in(legal.desc)
    assert not present & EXPANDED, sorted(present & EXPANDED)
    from vyre_build.emit.wgsl.values import LACKS

    wgsl_legal = {r for r in LEGAL_ROWS if not {*r[1], OPS[r]} & LACKS}  # WGSL has no bf16
    assert present <= LEGAL_ROWS and wgsl_legal <= WGSL | EXPANDED
    assert LEGAL_ROWS - EXPANDED <= SPIRV


def _ops(desc):
    return validate(desc).view.ops


def _source(tmp_path, body: str, params: str = "x: Buffer[u32], y: Buffer[u32, 'w'], n: u32"):
    (tmp_path / "k.py").write_text(
        "from vyre_build.lang import *\n\n\n"
        f"@kernel(workgroup_size=64)\ndef k({params}):\n    i = global_id().x\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
    )
    (k,) = compile_file(str(tmp_path / "k.py"), root=str(tmp_path), targets=("kdesc",))
    return k.descriptor


def _eq_guards(desc) -> int:
    return sum(isinstance(op, Binary) and op.name == "Eq" for op in _ops(desc))


def test_what_the_range_analysis_proves_keeps_no_guard(tmp_path):
    # a literal divisor, a divisor in [1, 7], a literal shift past 31, a proved access
    desc = _source(
        tmp_path,
        "if i < len(y):\n    v = x[i]\n    y[i] = v // 4 + v % (n % 7 + 1) + (v << 35) + (v >> n)",
    )
    legal = legalize(desc)
    ops = _ops(legal.desc)
    assert _eq_guards(legal.desc) == _eq_guards(desc) == 0  # no divisor guard at all
    masks = [op for op in ops if isinstance(op, Binary) and op.name == "BitAnd"]
    assert len(masks) == 1  # `v >> n` only: the literal 35 is folded to 3
    shl = next(op for op in ops if isinstance(op, Binary) and op.name == "Shl")
    assert legal.info.constants[shl.operands[1]] == 3
    # the load of x is not proved (i < len(y) says nothing of x): clamp + select; y's store is
    loads = [op for op in ops if isinstance(op, Load)]
    assert len(loads) == 1 and any(isinstance(op, Binary) and op.name == "Min" for op in ops)
    assert not any(isinstance(op, If) for op in ops[ops.index(loads[0]) :])  # y[i]: proved


def test_guards_where_nothing_is_proved(tmp_path):
    desc = _source(tmp_path, "y[n] = x[i] // n")
    legal = legalize(desc)
    assert _eq_guards(legal.desc) == 1  # n == 0: the one u32 guard
    # the store runs in the child body of the new `if n < len(y)`
    info = validate(legal.desc)
    (guard,) = [op for op in info.view.ops if isinstance(op, If)]
    then = info.view.body.children[guard.then]
    assert [type(op) for op in then.ops] == [Store]
    # the reference: the same bits before and after, x / 0 == x and the store dropped
    x = np.arange(64, dtype=np.uint32) * 3
    for n in (0, 5, 63, 64, 1000):
        args = ({"x": x, "y": np.zeros(64, np.uint32)}, {"n": n}, (1, 1, 1))
        a, b = execute(desc, *args), execute(legal.desc, *args)
        np.testing.assert_array_equal(a["y"], b["y"])


def test_the_switched_form_keeps_the_rule_where_the_module_checks(tmp_path):
    """device_checks=True (the SPIR-V target's form): plain storage-buffer loads hang on
    vyre.checked, which only a legal form may hold; read as true (the module's own
    checks, as the reference reads it) it gives the descriptor's bits."""
    desc = _source(tmp_path, "y[i + n] = x[i + n] + x[i]")
    legal = legalize(desc, device_checks=True)
    names = [op.kind.args[1] for op in legal.info.view.ops if op.kind.name == "OpaqueExpr"]
    assert names.count("vyre.checked") == 2  # the two loads; the store keeps its `if`
    with pytest.raises(DescriptorFormatError, match="vyre.checked stands only in a legal form"):
        validate(legal.desc)
    assert "vyre.checked" not in {
        op.kind.args[1] for op in legalize(desc).info.view.ops if op.kind.name == "OpaqueExpr"
    }
    x = np.arange(64, dtype=np.uint32) * 3 + 1
    for n in (0, 5, 64, 1 << 31):
        args = ({"x": x, "y": np.zeros(64, np.uint32)}, {"n": n}, (1, 1, 1))
        a, b = execute(desc, *args), execute(legal.desc, *args, info=legal.info)
        np.testing.assert_array_equal(a["y"], b["y"])


def test_atomics_out_of_bounds_return_zero_through_a_local():
    kb = Kernel("k", (8, 1, 1), [buf(0, "U32", "c"), buf(1, "U32", "old", "WriteOnly")])
    r = kb.body
    i = r.gid()
    slot_shared = kb.local("Shared", dt("U32"), 4, "s")
    old = r.atomic("Add", 0, r.bin("Mul", i, r.u32(3)), r.u32(1))  # i*3: past len(c) for i > 1
    sh = r.atomic("Max", slot_shared, i, i)  # 4 shared elements, 8 invocations
    gone = r.atomic("Or", slot_shared, r.u32(9), i)  # a literal past the array: never runs
    r.store(1, i, r.bin("Add", r.bin("Add", old, sh), gone))
    desc = kb.build()
    legal = legalize(desc)
    scratch = [s for s in legal.desc.slots if s.memory_class == "Scratch"]
    assert len(scratch) == 2 and all(s.element_count == 1 for s in scratch)
    assert sum(isinstance(op, Atomic) for op in _ops(legal.desc)) == 2  # the literal one gone
    args = ({"c": np.arange(5, dtype=np.uint32), "old": np.zeros(8, np.uint32)}, {}, (1, 1, 1))
    a, b = execute(desc, *args), execute(legal.desc, *args)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert b["old"][7] == 0 + 0 + 0  # c out of bounds, s out of bounds, never: all 0


def test_loads_of_fixed_arrays_and_literal_indices_past_the_end():
    kb = Kernel("k", (4, 1, 1), [buf(0, "F32", "o", "WriteOnly")])
    r = kb.body
    i = r.gid()
    s = kb.local("Shared", dt("F32"), 2, "s")
    v = kb.local("Scratch", vt("F32", 4), 3, "v")
    r.store(s, i, r.cast(dt("F32"), i))  # i = 2, 3: dropped
    r.store(v, i, r.vec("F32", *([r.f32(1.5)] * 4)))
    r.barrier()
    past = r.load(s, r.u32(7))  # a literal past the end: 0, no access at all
    got = r.extract(r.load(v, i), 3)
    r.store(0, i, r.bin("Add", r.bin("Add", r.load(s, i), past), got))
    desc = kb.build()
    legal = legalize(desc)
    loads = [op for op in _ops(legal.desc) if isinstance(op, Load)]
    assert len(loads) == 2  # s[7] is a constant 0
    a = execute(desc, {"o": np.zeros(4, np.float32)}, {}, (1, 1, 1))
    b = execute(legal.desc, {"o": np.zeros(4, np.float32)}, {}, (1, 1, 1))
    np.testing.assert_array_equal(a["o"], b["o"])
    np.testing.assert_array_equal(b["o"], [1.5, 2.5, 1.5, 0.0])  # v[3], s[2], s[3]: 0


def test_an_untouched_descriptor_comes_back_as_it_is_and_the_pass_is_deterministic(tmp_path):
    desc = _source(tmp_path, "if i < len(y):\n    y[i] = i + n")
    info = validate(desc)
    legal = legalize(desc, info)
    assert legal.desc is desc and legal.info is info and legal.origin == {}
    other = _source(tmp_path, "y[i] = x[i] >> n")
    a, b = legalize(other), legalize(other)
    assert encode(a.desc) == encode(b.desc)
    kept = {id(op) for op in other.body.ops}
    assert any(id(op) in kept for op in a.desc.body.ops)  # ops left alone are the same objects


def test_notes_follow_the_first_op_of_each_rewrite(tmp_path):
    desc = _source(tmp_path, "y[i] = x[i] // n")
    div = next(v.op for v in _ops(desc) if isinstance(v, Binary) and v.name == "Div")
    legal = legalize(desc)
    notes = legal.notes({id(div): "// the division"})
    firsts = [op for op in _ops(legal.desc) if id(op.op) in notes]
    assert firsts and all(isinstance(op, (Binary, Unary, Cast)) for op in firsts)
    assert isinstance(firsts[0], Binary) and firsts[0].name == "Eq"  # the guard comes first


def _proofs(desc):
    info = validate(desc)
    by_name = lambda cls, name: [  # noqa: E731
        op for op in info.view.ops if isinstance(op, cls) and getattr(op, "name", "") == name
    ]
    return info, by_name


def test_a_one_element_local_written_past_its_end_proves_nothing(tmp_path):
    # t[i + 1] writes nothing (t has one element), so t[0] is still 0: the division by it
    # keeps its guard although `i > 0` holds where it runs (the value stored was i)
    desc = _source(
        tmp_path,
        "t = local_array(u32, 1)\nt[i + 1] = i\nif i > 0:\n    y[i] = 100 // t[0]",
        "y: Buffer[u32, 'w']",
    )
    info, named = _proofs(desc)
    (div,) = named(Binary, "Div")
    assert div.index not in info.proofs.safe
    y = np.full(64, 7, np.uint32)
    got = execute(legalize(desc).desc, {"y": y}, {}, (1, 1, 1))["y"]
    np.testing.assert_array_equal(got[1:], 100)  # x / 0 == x
    # nor does a store past the end keep a value that bounds a later index
    desc = _source(
        tmp_path,
        "t = local_array(u32, 1)\na = shared(u32, 4)\nt[0] = u32(100)\nt[i + 1] = i\n"
        "if i < 4:\n    a[t[0]] = u32(1)\n    y[i] = a[i]",
        "y: Buffer[u32, 'w']",
    )
    info, _ = _proofs(desc)
    shared = {s.slot for s in desc.slots if s.memory_class == "Shared"}
    stores = [op for op in info.view.ops if isinstance(op, Store) and op.slot in shared]
    assert stores and not any(op.index in info.proofs.in_bounds for op in stores)


def test_proofs_of_safe_divisions_shifts_and_counts(tmp_path):
    cases = [  # (body, op class, op name, proved safe)
        ("y[i] = u32(i32(x[i] % 4) // -1)", Binary, "Div", True),  # [0, 3] / -1
        ("y[i] = u32(i32(x[i]) // -1)", Binary, "Div", False),  # MIN / -1 possible
        ("y[i] = x[i] << (n % 4 + 28)", Binary, "Shl", True),  # amount in [28, 31]
        ("y[i] = x[i] << (n % 5 + 28)", Binary, "Shl", False),  # [28, 32]
        ("y[i] = u32(ctz(n % 4 + 1))", Unary, "Ctz", True),  # operand in [1, 4]
        ("y[i] = u32(ctz(n % 4))", Unary, "Ctz", False),  # 0 possible
        ("y[i] = x[i] % (n | 1)", Binary, "Mod", False),  # | 1 proves nothing here
    ]
    for body, cls, name, safe in cases:
        desc = _source(tmp_path, body)
        info, named = _proofs(desc)
        (op,) = named(cls, name)
        assert (op.index in info.proofs.safe) is safe, body


def test_literal_operands_are_judged_by_their_value_never_by_a_proof(tmp_path):
    # On a path that cannot run, the range analysis proves anything; naga still evaluates
    # a literal's `let` there and refuses a shift by 32+, a division by 0, a constant
    # index past an array (found by seed 12:430): literals are decided by value.
    def forged(desc):  # every op "proved": as on a path that cannot run
        info = validate(desc)
        every = frozenset(op.index for op in info.view.ops)
        return dataclasses.replace(info, proofs=Proofs(every, frozenset(), every))

    desc = _source(tmp_path, "y[i] = (x[i] << u32(2147483647)) + x[i] // u32(0)")
    legal = legalize(desc, forged(desc))
    shl = next(op for op in _ops(legal.desc) if isinstance(op, Binary) and op.name == "Shl")
    assert legal.info.constants[shl.operands[1]] == 31  # 2147483647 & 31
    assert _eq_guards(legal.desc) == 1  # the divisor 0 is guarded
    x = np.arange(64, dtype=np.uint32)
    args = ({"x": x, "y": np.zeros(64, np.uint32)}, {"n": 3}, (1, 1, 1))
    np.testing.assert_array_equal(execute(desc, *args)["y"], execute(legal.desc, *args)["y"])
    kb = Kernel("k", (4, 1, 1), [buf(0, "U32", "o", "WriteOnly")])
    r = kb.body
    s = kb.local("Shared", dt("U32"), 2, "s")
    r.store(s, r.u32(5), r.u32(1))  # literal indices past the end: gone, 0
    r.store(0, r.gid(), r.load(s, r.u32(7)))
    desc = kb.build()
    ops = _ops(legalize(desc, forged(desc)).desc)
    assert not [op for op in ops if isinstance(op, (Load, Store)) and op.slot == s]
