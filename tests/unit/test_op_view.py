"""The decoded op view (`descriptor.view`) and its one walker.

- decoding is total: every row of the op table decodes to the class of its family with
  that row's key, every extension validation knows decodes to a class of its own, and any
  other op kind decodes (to `Unknown`) instead of raising;
- every op of the kernel tree gets one index, in order, and the view of a raw op is found;
- every `Walker` subclass of the package and of tools/conform handles every op class,
  and the check fails for a walker that leaves one out.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

import pytest

import vyre_build
from vyre_build.compiler import compile_file
from vyre_build.descriptor import KernelOp, Variant, encode_datatype, validate
from vyre_build.descriptor import view as V
from vyre_build.descriptor.schema import ENUMS
from vyre_build.descriptor.ops import OPS, SUBGROUP_KINDS
from vyre_build.descriptor.types import datatype
from vyre_build.descriptor.validate import ARITY, OPAQUE_ARITY
from vyre_build.core.errors import DescriptorFormatError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "kernels")
TOOLS = os.path.join(ROOT, "tools")

# The class each op-table family decodes to.
FAMILY_CLASS = {
    "BinOpKind": V.Binary,
    "UnOpKind": V.Unary,
    "Fma": V.Fma,
    "Select": V.Select,
    "Cast": V.Cast,
    "Bitcast": V.Bitcast,
    "Construct": V.Construct,
    "Extract": V.Extract,
    "Atomic": V.Atomic,
    "Subgroup": V.Subgroup,
}


def _opaque(ext: str, payload: bytes = b"") -> Variant:
    return Variant("OpaqueExpr", (0, ext, payload))


def row_ops(family: str, name: str) -> list[Variant]:
    """The op kinds that spell the op-table op (family, name) (a subgroup op may have two)."""
    if family in ("BinOpKind", "UnOpKind"):
        return [Variant(family, (Variant(name),))]
    if family in ("Fma", "Select"):
        return [Variant(family)]
    if family == "Cast":
        return [Variant("Cast", (datatype(name),))]
    if family == "Bitcast":
        return [_opaque("vyre.bitcast", encode_datatype(datatype(name)))]
    if family == "Construct":
        return [_opaque("vyre.vec", encode_datatype(datatype(name)))]
    if family == "Extract":
        return [_opaque("vyre.extract", b"\x00")]
    if family == "Atomic":
        return [Variant("Atomic", (Variant(name), "Relaxed"))]
    schema = [Variant(k) for k, n in SUBGROUP_KINDS.items() if n == name]
    return schema + [_opaque("vyre.subgroup", name.encode("ascii"))]


@pytest.mark.parametrize("family", sorted(FAMILY_CLASS))
def test_every_op_table_row_decodes_to_its_family_with_its_key(family):
    rows = [(op, operands) for op, operands in OPS if op[0] == family]
    assert rows, family
    for (fam, name), operands in rows:
        for kind in row_ops(fam, name):
            op = KernelOp(kind, tuple(range(len(operands))), 99)
            got = V.decode_op(7, op)
            assert type(got) is FAMILY_CLASS[family], (kind, got)
            assert got.key == (fam, name), (kind, got.key)
            assert (got.index, got.op, got.kind, got.operands, got.result) == (
                7,
                op,
                kind,
                op.operands,
                99,
            )


def test_the_op_table_families_are_the_mapped_ones():
    assert {op[0] for op, _ in OPS} == set(FAMILY_CLASS)


def test_every_extension_decodes_to_a_class_of_its_own():
    exprs = ("vyre.num_workgroups", "vyre.subgroup_id", "vyre.num_subgroups", "vyre.bitcast")
    exprs += ("vyre.vec", "vyre.extract", "vyre.subgroup", "vyre.coop.load", "vyre.coop.fill")
    exprs += ("vyre.coop.mma", "vyre.atomic", "vyre.atomic.load", "vyre.checked")
    nodes = set(OPAQUE_ARITY) - set(exprs)
    for ext in OPAQUE_ARITY:
        kind = _opaque(ext) if ext in exprs else Variant("OpaqueNode", (ext, b""))
        got = V.decode_op(0, KernelOp(kind, ()))
        assert not isinstance(got, V.Unknown), ext
    assert {"vyre.loop", "vyre.break", "vyre.continue", "vyre.coop.store"} <= nodes
    assert isinstance(V.decode_op(0, KernelOp(_opaque("vyre.nope"), ())), V.Unknown)
    node = Variant("OpaqueNode", ("vyre.nope", b""))
    assert isinstance(V.decode_op(0, KernelOp(node, ())), V.Unknown)


def _sample(ty: str):
    """A payload value of schema type `ty` (enough to build every KernelOpKind variant)."""
    if ty in ENUMS:
        name, payload = ENUMS[ty][0]
        return Variant(name, tuple(_sample(t) for t in payload))
    return {"str": "x", "bytes": b"", "u32": 0, "u64": 0, "MemoryOrdering": "Relaxed"}.get(
        ty, "M16N8K16" if ty == "MatrixMmaShape" else "RowMajor" if "Layout" in ty else "F16"
    )


def test_decode_is_total_over_every_op_kind_of_the_schema():
    used = set(ARITY) | {"Atomic"}  # the kinds validation accepts (beside the extensions)
    for name, payload in ENUMS["KernelOpKind"]:
        kind = Variant(name, tuple(_sample(t) for t in payload))
        for operands in ((), (0,), (5, 6, 7, 8, 9)):  # wrong arities decode all the same
            got = V.decode_op(3, KernelOp(kind, operands), ())
            assert isinstance(got, V.OP_CLASSES)
            if name not in ("OpaqueExpr", "OpaqueNode"):  # extension "x": Unknown
                assert isinstance(got, V.Unknown) == (name not in used), name


def test_a_payload_that_does_not_decode_leaves_its_field_empty():
    assert V.decode_op(0, KernelOp(_opaque("vyre.bitcast", b"\xff\xff"), (1,), 2)).target is None
    assert V.decode_op(0, KernelOp(_opaque("vyre.atomic", b"\x09"), (), 2)).access is None
    assert V.decode_op(0, KernelOp(_opaque("vyre.extract", b""), (1,), 2)).component is None
    assert V.decode_op(0, KernelOp(Variant("Literal"), (4,), 2), ()).value is None


def kernel_views():
    for name in ("saxpy.py", "scan.py", "matmul.py", "histogram.py", "lib_mm_f16.py"):
        for k in compile_file(os.path.join(KERNELS, name), root=KERNELS, targets=("kdesc",)):
            yield k.descriptor, validate(k.descriptor)


def test_every_op_has_one_index_in_order_and_its_raw_op_finds_its_view():
    seen = 0
    for desc, info in kernel_views():
        view = info.view
        assert view is not None and view.desc is desc
        assert [op.index for op in view.ops] == list(range(len(view.ops)))

        def walk(body, bview) -> list:
            assert bview.raw is body and bview.literals is body.literals
            out = list(body.ops)
            for child, cview in zip(body.children, bview.children, strict=True):
                out += walk(child, cview)
            return out

        raw = walk(desc.body, view.body)
        assert [v.op for v in view.ops] == raw
        for op in raw:
            assert view.of(op).op is op
        seen += len(raw)
    assert seen > 100


def test_facts_are_keyed_by_op_index():
    for _, info in kernel_views():
        for index in info.proofs.in_bounds:
            op = info.view.ops[index]
            assert isinstance(op, (V.Load, V.Store, V.Atomic, V.CoopLoad, V.CoopStore))
            assert info.in_bounds(op) and info.in_bounds(op.op)


# --- the walkers ---------------------------------------------------------------------------


# The walks over ops: each is a Walker (and so held to every op class below).
WALKERS = {
    "vyre_build.descriptor.validate._Checker",
    "vyre_build.descriptor.ranges._Analysis",
    "vyre_build.descriptor.coarsen._Refused",
    "vyre_build.descriptor.coarsen._Copy",
    "vyre_build.emit.wgsl.function.FunctionWriter",
    "vyre_build.emit.spirv.function.FunctionWriter",
    "vyre_build.reference.steps._Steps",
    "conform.coverage._Rows",
}


def _walkers() -> list[type]:
    """Every Walker subclass defined by vyre_build or tools/conform."""
    for m in pkgutil.walk_packages(vyre_build.__path__, "vyre_build."):
        if m.name.endswith("__main__") or "scons" in m.name or "site_tools" in m.name:
            continue  # the CLI runs on import; the SCons tool needs SCons
        importlib.import_module(m.name)
    if TOOLS not in sys.path:
        sys.path.insert(0, TOOLS)
    import conform

    for m in pkgutil.walk_packages(conform.__path__, "conform."):
        importlib.import_module(m.name)
    out, todo = [], [V.Walker]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            out.append(sub)
            todo.append(sub)
    return [c for c in out if not c.__module__.startswith(("test_", "tests."))]


def test_every_walker_handles_every_op_class():
    walkers = _walkers()
    names = {f"{c.__module__}.{c.__qualname__}" for c in walkers}
    assert WALKERS <= names, sorted(WALKERS - names)
    for cls in walkers:
        assert cls.unhandled() == [], f"{cls.__module__}.{cls.__qualname__}"


def test_a_walker_that_leaves_out_a_class_is_caught():
    class Partial(V.Walker):
        def visit_literal(self, op):
            return "lit"

    assert "Binary" in Partial.unhandled() and "Literal" not in Partial.unhandled()
    w = Partial()
    assert w.visit(V.decode_op(0, KernelOp(Variant("Literal"), (0,), 1), ())) == "lit"
    with pytest.raises(TypeError, match="Partial has no method 'visit_binary' for Binary"):
        w.visit(V.decode_op(1, KernelOp(Variant("BinOpKind", (Variant("Add"),)), (0, 0), 2)))
    with pytest.raises(DescriptorFormatError, match="op kind not used by vyre_build"):
        w.visit(V.decode_op(2, KernelOp(Variant("Trap", ("x",)), ())))


def test_the_reference_reads_table_covers_every_op_class():
    from vyre_build.reference import steps

    assert set(steps._READS) == set(V.OP_CLASSES)


def test_every_op_class_has_its_own_method_name():
    methods = [c.method for c in V.OP_CLASSES]
    assert len(set(methods)) == len(methods) and all(methods)
    assert all(issubclass(c, V.OpView) and c is not V.OpView for c in V.OP_CLASSES)
