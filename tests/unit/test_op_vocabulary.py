"""The value-op vocabulary (`descriptor.ops.VOCABULARY`) is the one place a BinOp / UnOp op is
spelled: the op table's rows of those families, the frontend's value-op builtins and their
stubs in lang.pyi all come from it. What a new op costs beyond its row is one rule per
target (emit/wgsl/values.py, emit/spirv/values.py) and the reference's rule
(reference/values.py); the schema's BinOp / UnOp lists (descriptor/schema.py) are fixed by
shared/spec/kernel-descriptor.md, so an op's name must already be one of their variants.

The last test adds a toy op (the schema's UnOp `Unpack4Low`, which vyre_build does not use)
to a copy of the vocabulary and follows it, with no other edit, into the op table, the
builtin registry, the stub and a compiled kernel's validated descriptor; both emitters
then stop at the rule they lack.
"""

from __future__ import annotations

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import EmitError
from vyre_build.descriptor import codec, ops, schema, validate
from vyre_build.descriptor.ops import OPS, TYPINGS, VOCABULARY, ValueOp
from vyre_build.emit.spirv import emit_spirv
from vyre_build.emit.wgsl import emit_wgsl
from vyre_build.frontend import builtin_calls, builtins, calls, expressions, module
from vyre_build.frontend import statements, stubgen
from vyre_build.frontend.builtins import BUILTINS, OP_SHAPES
from vyre_build.reference import values as reference_values

SCHEMA = {"BinOpKind": "BinOp", "UnOpKind": "UnOp"}


def test_every_row_names_a_schema_variant_and_a_typing_class():
    keys = [row.key for row in VOCABULARY]
    assert len(keys) == len(set(keys)), "an op has two vocabulary rows"
    for row in VOCABULARY:
        variants = [name for name, _ in schema.ENUMS[SCHEMA[row.family]]]
        assert row.name in variants and row.name != "Opaque", row.key
        assert row.typing in TYPINGS, row.key
        assert row.doc and "\n" not in row.doc, row.key
        if row.builtin_typing is not None:  # a builtin takes a part of the op's domain
            narrow, wide = TYPINGS[row.builtin_typing], TYPINGS[row.typing]
            assert set(narrow.types) <= set(wide.types), row.key
            assert (narrow.result, narrow.amount) == (wide.result, wide.amount), row.key


def test_the_tables_binop_and_unop_rows_are_the_vocabularys():
    from_table = {op for op, _ in OPS if op[0] in SCHEMA}
    assert from_table == {row.key for row in VOCABULARY}
    for row in VOCABULARY:
        typing = TYPINGS[row.typing]
        for t in typing.types:
            operands = (t,) if row.family == "UnOpKind" else (t, typing.amount or t)
            assert OPS[(row.key, operands)] == (typing.result or t), (row.key, operands)
    assert len([r for r in OPS if r[0][0] in SCHEMA]) == sum(
        len(TYPINGS[row.typing].types) for row in VOCABULARY
    )


def test_each_value_op_builtin_is_its_vocabulary_row():
    named = {row.builtin: row for row in VOCABULARY if row.builtin is not None}
    for name, row in named.items():
        b = BUILTINS[name]
        group, handler, _, result = OP_SHAPES[(row.family, row.builtin_typing or row.typing)]
        assert (b.op, b.doc, b.group, b.handler, b.result) == (
            row.name,
            row.doc,
            group,
            handler,
            result,
        )
    # and no hand-written row calls a value-op handler: those builtins are all derived
    handlers = {shape[1] for shape in OP_SHAPES.values()}
    assert {n for n, b in BUILTINS.items() if b.handler in handlers} == set(named)


def test_a_builtin_without_a_call_shape_is_refused(monkeypatch):
    monkeypatch.setattr(builtins, "BUILTINS", dict(BUILTINS))
    odd = ValueOp("BinOpKind", "SaturatingAdd", "integer", "a + b, saturating.", "add_sat")
    with pytest.raises(ValueError) as e:
        builtins.add_op_builtins((odd,))
    assert str(e.value) == (
        "builtin add_sat: no call shape for a BinOpKind op of typing class 'integer' "
        "(frontend/builtins.py OP_SHAPES)"
    )


TOY = ValueOp(
    "UnOpKind",
    "Unpack4Low",
    "integer",
    "The low four bits of x (a toy row of the test).",
    "unpack4_low",
)


def test_a_new_op_is_its_vocabulary_row_plus_one_rule_per_target(monkeypatch, tmp_path):
    # 1. the op table: the vocabulary with the toy row, over its typing class
    table = ops.table(VOCABULARY + (TOY,))
    new = {row: table[row] for row in set(table) - set(OPS)}
    assert new == {((("UnOpKind", "Unpack4Low")), (t,)): t for t in ("i32", "u32")}
    assert {row: table[row] for row in OPS} == OPS  # every other row as it was
    for row, result in new.items():
        monkeypatch.setitem(OPS, row, result)

    # 2. the builtin registry: the row the frontend makes of it (a copy of the registry,
    # and the name sets frontend/names.py derives from it)
    registry = dict(BUILTINS)
    for holder in (builtins, calls, builtin_calls, stubgen):
        monkeypatch.setattr(holder, "BUILTINS", registry)
    (row,) = builtins.add_op_builtins((TOY,))
    assert (row.name, row.group, row.handler, row.op, row.doc) == (
        "unpack4_low",
        "bit_counts",
        "builtin_int_unary",
        "Unpack4Low",
        TOY.doc,
    )
    names = frozenset(registry)
    monkeypatch.setattr(statements, "ALL_BUILTINS", names)
    monkeypatch.setattr(expressions, "ALL_BUILTINS", names)
    monkeypatch.setattr(module, "LANG_NAMES", module.LANG_NAMES | names)
    monkeypatch.setattr(stubgen, "LANG_NAMES", stubgen.LANG_NAMES | names)

    # 3. the stub: its def, with its doc, in its group's section after reverse_bits
    text = stubgen.generate()
    stub = f'def unpack4_low(x: builtins.int, /) -> builtins.int:\n    """{TOY.doc}"""'
    assert stub in text
    assert text.index("def reverse_bits(") < text.index(stub) < text.index("def rotl(")
    assert '    "unpack4_low",\n' in text

    # 4. a kernel calling it compiles to a descriptor that validates ...
    src = tmp_path / "k.py"
    src.write_text(
        "from vyre_build.lang import *\n"
        "@kernel(workgroup_size=64)\n"
        'def k(x: Buffer[u32, "r"], o: Buffer[u32, "w"]):\n'
        "    i = global_id().x\n"
        "    o[i] = unpack4_low(x[i])\n"
    )
    (kernel,) = compile_file(str(src), targets=("kdesc",), display_path="k.py")
    desc = codec.decode(kernel.outputs[".kdesc"])
    info = validate(desc)
    kinds = [op.kind for op in desc.body.ops]
    assert codec.Variant("UnOpKind", (codec.Variant("Unpack4Low"),)) in kinds

    # ... and what is left is the rule of each target (and the reference's)
    with pytest.raises(EmitError, match="no WGSL rule for UnOpKind Unpack4Low on \\(u32\\)"):
        emit_wgsl(desc, info)
    with pytest.raises(EmitError, match="no SPIR-V rule for UnOpKind Unpack4Low on \\(u32\\)"):
        emit_spirv(desc, info)
    assert not set(new) & set(reference_values.RULES)  # the reference's rule: none yet
    from vyre_build.core.errors import DispatchError
    from vyre_build.runtime import load_kernel

    run = load_kernel(kernel.meta, kdesc=kernel.outputs[".kdesc"], backend="cpu")
    with pytest.raises(DispatchError, match="no rule for UnOpKind Unpack4Low on \\(u32\\)"):
        run(x=np.zeros(64, np.uint32), o=64)
