"""The random kernel generator covers what it claims, and the minimiser shrinks a planted bug.

No device: programs are compiled and, for the minimiser, run on the CPU reference against
a fake backend (the reference on a descriptor whose popcount ops count zeros instead).
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

TOOLS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools"
)
sys.path.insert(0, TOOLS)

from conform import backends as B  # noqa: E402
from conform.check import Finding, compile_program, evaluate, persists  # noqa: E402
from conform.coverage import constructs, rows, unreachable_row  # noqa: E402
from conform.gen import WORKGROUP_SIZES, Options, generate  # noqa: E402
from conform.inputs import DENORMALS, INT_EDGE_BITS, NAN_BITS  # noqa: E402
from conform.known import KNOWN, explain  # noqa: E402
from conform.shrink import Shrinker, statements  # noqa: E402

from vyre_build.descriptor import Variant  # noqa: E402
from vyre_build.descriptor.ops import OPS  # noqa: E402

CI = Options(max_depth=2, max_expr_depth=3, statements=6)  # --size small, as CI runs it
PROGRAMS = 350

# Constructs the generator claims, with the least count over the CI run's 350 programs.
CLAIMS = {
    "stmt:subgroup_if": 20,
    "subgroup_id": 10,
    "stmt:if": 300,
    "stmt:ifelse": 100,
    "stmt:elif": 50,
    "stmt:while": 50,
    "stmt:while:true": 50,
    "stmt:for:lit": 50,
    "stmt:for:edge": 15,
    "stmt:for:step": 10,
    "stmt:for:scalar": 20,
    "stmt:for:data": 50,
    "stmt:break": 300,
    "stmt:continue": 100,
    "stmt:return": 300,
    "stmt:barrier": 40,
    "stmt:storage_barrier": 5,
    "stmt:shared_store": 10,
    "stmt:shared_load": 30,
    "stmt:shared_atomic": 10,
    "stmt:store:local": 50,
    "stmt:store:io": 20,
    "stmt:store:accd": 20,
    "stmt:store:aug": 3,
    "stmt:let": 500,
    "stmt:assign": 200,
    "stmt:aug": 50,
    "helpers": 200,
    "consts": 200,
    "call": 50,
    "const": 500,
    "load": 1000,
    "oob": 30,
    "select": 200,
    "ifexp": 200,
    "chain": 100,
    "cast": 500,
    "bitcast": 100,
    "vcast": 100,
    "construct": 300,
    "splat": 300,
    "extract": 300,
    "pow": 100,
    "//": 100,
    "%": 100,
    "<<": 100,
    ">>": 100,
    "~": 100,
    "popcount": 50,
    "clz": 50,
    "ctz": 50,
    "reverse_bits": 50,
    "rotl": 30,
    "rotr": 30,
    "isnan": 30,
    "isinf": 30,
    "isfinite": 30,
    "fma": 10,
    "/": 10,
    "sqrt": 10,
    "rsqrt": 10,
    "exp": 10,
    "exp2": 10,
    "log": 10,
    "log2": 10,
    "sin": 5,
    "cos": 5,
    "tan": 5,
    "tanh": 5,
    "floor": 10,
    "ceil": 10,
    "round": 10,
    "trunc": 10,
    "sign": 10,
    "scale": 30,
    "clamp": 300,
    "min": 50,
    "max": 50,
    "abs": 100,
    "len": 50,
}
ATOMIC_OPS = ["add", "sub", "or", "and", "xor", "min", "max"]


@pytest.fixture(scope="module")
def census():
    """Constructs, op-table rows and compile results of the CI run's programs."""
    found, seen, failures = Counter(), Counter(), []
    for i in range(PROGRAMS):
        prog = generate(1, i, CI)
        found.update(constructs(prog))
        try:
            seen.update(rows(compile_program(prog).descriptor))
        except Exception as exc:  # noqa: BLE001 - recorded, asserted below
            failures.append(
                (i, prog, Finding("compile", "compiler", detail=f"{type(exc).__name__}: {exc}"))
            )
    return found, seen, failures


@pytest.mark.slow
def test_every_reachable_op_table_row_is_generated(census):
    _, seen, _ = census
    missing = [row for row in OPS if row not in seen and unreachable_row(row) is None]
    assert missing == []
    wrongly_unreachable = [row for row in seen if unreachable_row(row) is not None]
    assert wrongly_unreachable == []
    for ty in ("i32", "u32"):
        for op in ("Add", "Or", "And", "Xor", "Min", "Max", "Exchange", "CompareExchange"):
            assert seen[(("Atomic", op), (ty,))] > 0, (op, ty)


@pytest.mark.slow
def test_the_generator_makes_every_construct_it_claims(census):
    found, _, _ = census
    short = {k: (found[k], n) for k, n in CLAIMS.items() if found[k] < n}
    assert short == {}
    for wg in WORKGROUP_SIZES:
        assert found[f"workgroup_size:{wg}"] > 10, wg
    for groups in (1, 2, 3, 4):
        assert found[f"workgroups:{groups}"] > 10, groups
    for op in ATOMIC_OPS:
        assert found[f"stmt:atomic:accs:{op}"] > 0, op
    for op in ATOMIC_OPS + ["exchange", "compare_exchange"]:
        assert found[f"stmt:atomic:accd:{op}"] + found[f"stmt:atomic:old:{op}"] > 0, op
    for role, types in {
        "in": ["i32", "u32", "f32", "vec2f", "vec4f", "vec2i", "vec4i", "vec2u", "vec4u"],
        "out": ["i32", "u32", "f32", "vec2f", "vec4f", "vec2i", "vec4i", "vec2u", "vec4u"],
        "edge": ["f32", "vec2f", "vec4f"],
        "io": ["i32", "u32", "f32", "vec4i", "vec2f"],
        "scalar": ["i32", "u32", "f32"],
    }.items():
        for ty in types:
            assert found[f"param:{role}:{ty}"] > 0, (role, ty)


@pytest.mark.slow
def test_every_generated_program_compiles_or_hits_a_known_bug(census):
    _, _, failures = census
    unexplained = [(i, f.detail) for i, prog, f in failures if explain(f, prog, []) is None]
    assert unexplained == []


def test_inputs_hold_the_edge_values():
    ints, floats = set(), set()
    for i in range(60):
        prog = generate(1, i, CI)
        for arr in prog.inputs.values():
            if arr.dtype == np.float32:
                floats.update(arr.view(np.uint32).tolist())
            else:
                ints.update(arr.view(np.uint32).tolist())
    assert set(INT_EDGE_BITS) <= ints
    assert set(NAN_BITS) <= floats
    assert {0x7F800000, 0xFF800000, 0x80000000, 0x7F7FFFFF} <= floats  # +-inf, -0.0, FLT_MAX
    assert set(np.array(DENORMALS, np.float32).view(np.uint32).tolist()) <= floats


def test_no_denormals_means_none_in_inputs_literals_or_bits():
    """--no-denormals (a device that flushes them, like the H200): no denormal input, no
    denormal literal, and bitcast(f32, int) always sets the exponent's low bit."""
    flushing = replace(CI, denormals=False)
    tiny = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?e-(\d+)")
    casts = 0
    for i in range(150):
        prog = generate(1, i, flushing)
        for arr in prog.inputs.values():
            if arr.dtype == np.float32:
                bits = arr.view(np.uint32)
                assert not np.any((bits & 0x7F800000 == 0) & (bits & 0x007FFFFF != 0)), i
        src = prog.source()
        for m in tiny.finditer(src):
            v = float(m.group(0))
            assert v == 0 or abs(v) >= 2.0**-126, (i, m.group(0))
        for at in [m.start() for m in re.finditer(r"bitcast\(f32, ", src)]:
            casts += 1
            depth, j = 0, at + len("bitcast(")
            while depth >= 0:  # the argument, up to the cast's closing parenthesis
                depth += {"(": 1, ")": -1}.get(src[j], 0)
                j += 1
            arg = src[at + len("bitcast(f32, ") : j - 1]
            assert arg.endswith("(8388608))"), (i, arg)
    assert casts > 20


def test_a_negated_nan_is_never_bitcast_to_an_integer():
    """A negated NaN's payload is not pinned (the H200 changes it): bitcast(int, -x) takes
    no x that may be NaN, i.e. no load of an edge buffer (e*), which hold the NaNs."""
    negated = Counter()
    for i in range(400):
        for m in re.finditer(r"bitcast\((?:i32|u32), \(-([a-z]+)", generate(1, i).source()):
            negated[m.group(1)] += 1
    assert negated["e"] == 0, negated
    assert sum(negated.values()) > 5, negated  # the construct itself still occurs


def test_the_same_seed_gives_the_same_program():
    a, b = generate(7, 3), generate(7, 3)
    assert a.source() == b.source()
    assert a.inputs.keys() == b.inputs.keys()
    assert all(a.inputs[k].tobytes() == b.inputs[k].tobytes() for k in a.inputs)
    assert a.scalars == b.scalars
    assert generate(7, 4).source() != a.source()


def test_sizes_are_not_multiples_of_the_workgroup_size():
    odd = 0
    for i in range(100):
        prog = generate(1, i, CI)
        sizes = [v.size for k, v in prog.inputs.items() if k != "chk"]
        odd += any(n % prog.wg for n in sizes)
    assert odd > 50


def test_every_known_bug_has_its_regression_case():
    cases = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
    for k in KNOWN.values():
        assert os.path.exists(os.path.join(cases, k.case + ".py")), k.id


# -- the minimiser, on a planted bug -----------------------------------------------------
def _popcount_as_clz(body):
    ops = tuple(
        replace(op, kind=Variant("UnOpKind", (Variant("Clz"),)))
        if op.kind == Variant("UnOpKind", (Variant("Popcount"),))
        else op
        for op in body.ops
    )
    return replace(body, ops=ops, children=tuple(_popcount_as_clz(c) for c in body.children))


def fake_backend(compiled, prog):
    """The reference, but popcount counts leading zeros: a backend with one wrong op."""
    wrong = replace(compiled.descriptor, body=_popcount_as_clz(compiled.descriptor.body))
    return B.run_reference(replace(compiled, descriptor=wrong), prog)


RUNNERS = {"reference": B.run_reference, "fake": fake_backend}


@pytest.mark.slow
def test_the_minimiser_shrinks_a_planted_mismatch():
    for i in range(200):
        prog = generate(3, i, CI)
        outcome = evaluate(prog, ["reference", "fake"], RUNNERS)
        found = [f for f in outcome.findings if f.kind == "mismatch"]
        if found and len(statements(prog)) > 25:
            break
    else:
        pytest.fail("no generated program shows the planted popcount bug")
    shrinker = Shrinker(found[0], ["reference", "fake"], RUNNERS)
    small = shrinker.run(prog)
    assert persists(small, found[0], ["reference", "fake"], RUNNERS)
    assert "popcount(" in small.source()
    assert len(statements(small)) <= len(statements(prog)) // 3
    assert len(small.source()) <= len(prog.source()) // 3
    assert not evaluate(small, ["reference"], RUNNERS).findings  # a valid program still
