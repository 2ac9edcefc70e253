"""The one descriptor builder (vyre_build/descriptor/builder.py): ids, literal pools and
interning, child bodies, slot numbering, and that nothing else in the package builds ops."""

from __future__ import annotations

import ast
import math
import pathlib

import vyre_build
from vyre_build.descriptor import SHARED_SLOT_BASE as SH
from vyre_build.descriptor import Variant as V
from vyre_build.descriptor import decode, encode, validate
from vyre_build.descriptor.builder import KernelBuilder

PACKAGE = pathlib.Path(vyre_build.__file__).parent


def test_ids_count_over_the_whole_descriptor_and_children_keep_their_index():
    k = KernelBuilder("ids", (32, 1, 1))
    out = k.buffer("U32", "ReadWrite", "out")
    r = k.body
    i = r.gid()
    then, other = r.if_else(r.bin("Lt", i, r.length(out)))
    then.store(out, i, then.u32(1))
    loop = other.for_("j", other.u32(0), other.u32(4))
    loop.store(out, i, loop.loop_index("j"))
    d = k.build()
    assert [op.result for op in d.body.ops] == [0, 1, 2, None]
    assert d.body.ops[3].operands == (2, 0, 1)
    assert [op.result for op in d.body.children[0].ops] == [3, None]
    other_ops = d.body.children[1].ops
    assert [op.result for op in other_ops] == [4, 5, None]
    assert other_ops[2].kind == V("StructuredForLoop", ("j",)) and other_ops[2].operands == (
        4,
        5,
        0,
    )
    assert d.body.children[1].children[0].ops[0].result == 6
    assert d.body.children[1].literals == (V("U32", (0,)), V("U32", (4,)))
    validate(d)
    assert decode(encode(d)) == d


def test_first_id_and_the_same_op_objects():
    k = KernelBuilder("k", first_id=40)
    k.buffer("F32", "WriteOnly", "out")
    r = k.body
    r.store(0, r.gid(), r.f32(1.5))
    d = k.build()
    assert [op.result for op in d.body.ops] == [40, 41, None]
    assert all(a is b for a, b in zip(d.body.ops, r.ops))  # callers may key notes by op


def test_without_interning_every_literal_is_new():
    k = KernelBuilder("k")
    r = k.body
    a, b = r.u32(7), r.u32(7)
    assert a != b and r.lits == [V("U32", (7,)), V("U32", (7,))]
    assert [op.operands for op in r.ops] == [(0,), (1,)]


def test_interning_reuses_a_literal_of_this_body_or_an_enclosing_one_only():
    k = KernelBuilder("k", intern=True)
    r = k.body
    seven = r.u32(7)
    assert r.u32(7) == seven and r.lits == [V("U32", (7,))]
    assert r.i32(7) != seven  # another variant is another literal
    then, other = r.if_else(r.bool(True))
    assert then.u32(7) == seven and then.lits == []  # the enclosing body's op dominates
    eight = then.u32(8)
    assert other.u32(8) != eight and other.lits == [V("U32", (8,))]  # a sibling's does not
    assert r.u32(8) != eight  # nor a child's
    zero, negzero = r.f32(0.0), r.f32(-0.0)
    assert zero != negzero  # f32 literals compare by their bits
    assert r.f32(math.nan) == r.f32(math.nan)


def test_slots_are_numbered_by_kind_and_sorted():
    k = KernelBuilder("k")
    assert k.buffer("F32", "ReadOnly", "x") == 0
    assert k.buffer("F32", "ReadWrite", "y") == 1
    assert k.scalar("F32", "a") == 2
    assert k.local("Scratch", "U32", 1, "t") == SH
    assert k.local("Shared", "U32", 64, "s") == SH + 1
    assert [s.slot for s in k.build().slots] == [0, 1, 2, SH, SH + 1]
    later = KernelBuilder("k2", first_private=SH + 5)
    assert later.local("Scratch", "U32", 1, "t") == SH + 5
    assert later.local("Scratch", "U32", 1, "u") == SH + 6


def test_ends_sees_the_exits():
    r = KernelBuilder("k").body
    assert not r.ends()
    r.brk()
    assert r.ends()
    body = r.loop()
    assert not r.ends() and not body.ends()
    body.ret()
    assert body.ends()


# The modules that may construct descriptor data directly: the codec (decoding) and the builder.
CONSTRUCTORS = {"KernelOp", "KernelBody", "KernelDescriptor"}
ALLOWED = {"descriptor/codec.py", "descriptor/builder.py"}


def test_only_the_builder_builds_descriptors():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in CONSTRUCTORS
            ):
                found.append(f"{name}:{node.lineno} {node.func.id}")
    assert not found, f"build descriptors with vyre_build.descriptor.builder: {found}"
