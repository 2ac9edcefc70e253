"""The op table (`descriptor.ops.OPS`) is the contract of validation and both emitters.

Each emitter names the rows it writes (`RULE_ROWS` of its `values` module): they must be
exactly the rows of the legal form (`legalize.LEGAL_ROWS`: the table less the rows
`descriptor.legalize` writes as other ops), no row missing and no rule outside it. The strong form: one
generated descriptor per op family holds every row of that family; it validates, both
emitters write it, spirv-val (Vulkan 1.1) takes the SPIR-V here and naga the WGSL in the
gpu tier. An emitter that lacks a rule fails loudly, naming the op and its operand types.
"""

from __future__ import annotations

import subprocess

import pytest
from spirv_tools import missing, pinned  # noqa: E402
from descriptors import Kernel, V, buf

from vyre_build.descriptor import validate
from vyre_build.descriptor.legalize import EXPANDED, LEGAL_ROWS
from vyre_build.descriptor.ops import OPS
from vyre_build.descriptor.types import MATRICES, TYPES, VECTORS, datatype
from vyre_build.emit.spirv import emit_spirv
from vyre_build.emit.spirv import values as spirv_values
from vyre_build.emit.wgsl import emit_wgsl
from vyre_build.emit.wgsl import values as wgsl_values
from vyre_build.core.errors import EmitError

FAMILIES = sorted({family for (family, _), _ in OPS})
EMITTERS = {"wgsl": wgsl_values, "spirv": spirv_values}


def _touches(row, types) -> bool:
    """Whether op-table row `row` has an operand or result of one of `types`."""
    (family, name), operands = row
    return bool({*operands, OPS[row]} & set(types))


@pytest.mark.parametrize("emitter", sorted(EMITTERS))
def test_every_row_has_a_rule_and_every_rule_a_row(emitter):
    rows = EMITTERS[emitter].RULE_ROWS
    # the rows of value types a target lacks (WGSL: bf16) are the only ones it may skip
    lacks = getattr(EMITTERS[emitter], "LACKS", frozenset())
    legal = {row for row in LEGAL_ROWS if not _touches(row, lacks)}
    assert sorted(legal - rows) == [], f"{emitter}: rows of the legal form with no rule"
    assert sorted(rows - LEGAL_ROWS) == [], f"{emitter}: rules for rows outside the legal form"
    assert not any(_touches(row, lacks) for row in rows), f"{emitter}: a rule for a type it lacks"


def test_wgsl_lacks_only_bf16_and_refuses_it():
    assert wgsl_values.LACKS == {"bf16", "vec2bf", "vec4bf"} and not getattr(
        spirv_values, "LACKS", ()
    )
    with pytest.raises(EmitError, match="uses bf16, a type WGSL does not have: SPIR-V only"):
        emit_wgsl(family_descriptor("Cast"))


def test_the_legal_form_is_the_table_less_what_legalize_expands():
    assert LEGAL_ROWS | EXPANDED == set(OPS) and not LEGAL_ROWS & EXPANDED
    # the pinned forms both targets spelled alike, now written once
    for row in (
        (("BinOpKind", "Mod"), ("i32", "i32")),
        (("BinOpKind", "RotateLeft"), ("u32", "u32")),
        (("BinOpKind", "MulHigh"), ("i32", "i32")),
        (("UnOpKind", "Abs"), ("i32",)),
        (("Cast", "i32"), ("f16",)),
        (("Cast", "vec4i"), ("vec4f",)),
    ):
        assert row in EXPANDED, row
    # kept: the conversion of a clamped number, divisions by a safe divisor
    assert (("Cast", "i32"), ("f32",)) in LEGAL_ROWS
    assert (("BinOpKind", "Div"), ("i32", "i32")) in LEGAL_ROWS


def test_every_value_type_is_an_operand_of_some_row():
    # cooperative matrices are operands of their own ops (descriptor.matrices), not rows
    assert {t for _, operands in OPS for t in operands} == set(TYPES) - set(MATRICES)


# --- one generated descriptor per family -----------------------------------------------


def family_descriptor(family: str, lacks=frozenset()):
    """Every row of `family` (less those touching a type of `lacks`) applied to values of
    its operand types, each result stored.

    Operands come from loads of one read-only buffer per storage type (bool: a runtime
    compare), results go to one buffer per result type (bool: selected to a u32), so
    nothing folds away; atomics run on one read-write buffer per integer type.
    """
    rows = sorted(row for row in OPS if row[0][0] == family and not _touches(row, lacks))
    kb = Kernel(f"rows_{family}", (64, 1, 1))
    r = kb.body
    i = r.gid()
    slots, values = {}, {}

    def value(ty: str):
        if ty not in values:
            if ty == "bool":
                values[ty] = r.bin("Lt", value("u32"), r.u32(7))
            else:
                slots[ty] = kb.buffer(datatype(ty), "ReadOnly", f"in_{ty}")
                values[ty] = r.load(slots[ty], i)
        return values[ty]

    out, atomic = {}, {}
    for k, ((_, name), operands) in enumerate(rows):
        args = [value(t) for t in operands]
        result = OPS[((family, name), operands)]
        if family == "Atomic":
            if operands[0] not in atomic:
                atomic[operands[0]] = kb.buffer(
                    datatype(operands[0]), "ReadWrite", f"at_{operands[0]}"
                )
            extra = args * (2 if name == "CompareExchange" else 1)
            v = r.atomic(name, atomic[operands[0]], i, *extra)
        elif family in ("BinOpKind", "UnOpKind"):
            v = r.op(V(family, (V(name),)), *args)
        elif family in ("Fma", "Select"):
            v = r.op(family, *args)
        elif family == "Cast":
            v = r.cast(datatype(name), *args)
        elif family == "Bitcast":
            v = r.bitcast(datatype(name), *args)
        elif family == "Construct":
            v = r.vec(datatype(name), *args)
        elif family == "Subgroup":
            if name == "broadcast":  # its lane is a literal
                args[1] = r.u32(1)
            kinds = {"add": "SubgroupAdd", "ballot": "SubgroupBallot", "shuffle": "SubgroupShuffle"}
            kind = kinds.get(name) or V("OpaqueExpr", (0, "vyre.subgroup", name.encode()))
            v = r.op(kind, *args)
        else:  # Extract: the last component
            v = r.extract(args[0], VECTORS[operands[0]][1] - 1)
        if result == "bool":
            v, result = r.select(v, r.u32(1), r.u32(0)), "u32"
        if result not in out:
            out[result] = kb.buffer(datatype(result), "WriteOnly", f"out_{result}")
        r.store(out[result], r.u32(k), v)
    return kb.build()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_row_validates_and_both_emitters_write_it(family, tmp_path):
    desc = family_descriptor(family)
    info = validate(desc)
    assert "@compute" in emit_wgsl(family_descriptor(family, wgsl_values.LACKS))
    spirv = emit_spirv(desc, info)
    if missing("spirv-val"):
        pytest.skip("spirv-val (the test extra's pinned tool) not installed; CI=true requires it")
    path = tmp_path / f"{family}.spv"
    path.write_bytes(spirv)
    proc = subprocess.run(
        [pinned("spirv-val"), "--target-env", "vulkan1.1", str(path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"spirv-val rejected the {family} rows:\n{proc.stderr}"


@pytest.mark.parametrize("family", FAMILIES)
def test_every_row_passes_naga(family, wgpu_device):
    wgpu_device.create_shader_module(code=emit_wgsl(family_descriptor(family, wgsl_values.LACKS)))


# --- a missing rule fails loudly -----------------------------------------------------------


def _add_kernel():
    kb = Kernel("k", (64, 1, 1), [buf(0, "U32", "o")])
    i = kb.body.gid()
    kb.body.store(0, i, kb.body.bin("Add", i, i))
    return kb.build()


def _atomic_kernel():
    kb = Kernel("k", (64, 1, 1), [buf(40, "U32", "o")])  # slot 40: no SSA id of that number
    i = kb.body.gid()
    kb.body.atomic("Add", 40, i, i)
    return kb.build()


ADD = (("BinOpKind", "Add"), ("u32", "u32"))


def test_wgsl_without_a_rule_names_the_row(monkeypatch):
    monkeypatch.delitem(wgsl_values.RULES, ADD)
    with pytest.raises(EmitError) as e:
        emit_wgsl(_add_kernel())
    assert str(e.value) == (
        "kernel 'k': cannot emit WGSL for op BinOpKind(Add,) (operands [0: u32, 0: u32], "
        "result 1): no WGSL rule for BinOpKind Add on (u32, u32)"
    )
    monkeypatch.delitem(wgsl_values.RULES, (("Atomic", "Add"), ("u32",)))
    with pytest.raises(EmitError) as e:
        emit_wgsl(_atomic_kernel())
    assert str(e.value) == (
        "kernel 'k': cannot emit WGSL for op Atomic(Add, 'Relaxed') (operands [40: ?, 0: u32, "
        "0: u32], result 5): no WGSL rule for atomic Add on u32"
    )


def test_spirv_without_a_rule_names_the_row(monkeypatch):
    monkeypatch.delitem(spirv_values.RULES, ADD)
    with pytest.raises(EmitError) as e:
        emit_spirv(_add_kernel())
    assert str(e.value) == (
        "SPIR-V emitter: cannot emit op BinOpKind(Add,) with operands [0, 0] "
        "(types ['u32', 'u32']) in kernel 'k': no SPIR-V rule for BinOpKind Add on (u32, u32)"
    )
    monkeypatch.delitem(spirv_values.ATOMICS, ("Add", "u32"))
    with pytest.raises(EmitError) as e:
        emit_spirv(_atomic_kernel())
    assert str(e.value) == (
        "SPIR-V emitter: cannot emit op Atomic(Add, 'Relaxed') with operands [40, 0, 0] "
        "(types ['?', 'u32', 'u32']) in kernel 'k': no SPIR-V rule for atomic Add on u32"
    )
