"""Golden WGSL: hand-built descriptors emitted and compared byte for byte with
tests/snapshots/wgsl/<name>.wgsl. Review a change as a diff; rewrite the goldens with
VYRE_UPDATE_SNAPSHOTS=1 (then the test fails once, saying what it rewrote).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vyre_build.descriptor import (
    BindingSlot,
    KernelBody,
    KernelDescriptor,
    KernelOp,
    Variant as V,
    decode,
    encode,
)
from vyre_build.emit.wgsl import emit_wgsl

GOLDEN = Path(__file__).parent / "wgsl"
SH = 1 << 24


class Body:
    """Appends ops to one body; value ops return their SSA id (one counter per kernel)."""

    def __init__(self, counter):
        self.counter, self.ops, self.children, self.lits = counter, [], [], []

    def op(self, kind, *operands, value=True):
        rid = self.counter[0] if value else None
        self.counter[0] += value
        self.ops.append(KernelOp(kind if isinstance(kind, V) else V(kind), operands, rid))
        return rid

    def lit(self, ty, v):
        self.lits.append(V(ty, (v,)))
        return self.op("Literal", len(self.lits) - 1)

    def bin(self, name, a, b):
        return self.op(V("BinOpKind", (V(name),)), a, b)

    def un(self, name, a):
        return self.op(V("UnOpKind", (V(name),)), a)

    def child(self):
        self.children.append(Body(self.counter))
        return len(self.children) - 1, self.children[-1]

    def build(self):
        return KernelBody(
            tuple(self.ops), tuple(c.build() for c in self.children), tuple(self.lits)
        )


def g(slot, ty, name, vis="ReadWrite"):
    return BindingSlot(slot, V(ty), None, "Global", vis, name)


def saxpy():
    b = Body([0])
    i = b.op("GlobalInvocationId", 0)
    t, then = b.child()
    b.op("StructuredIfThen", b.bin("Lt", i, b.op("BufferLength", 1)), t, value=False)
    a = then.op("LoadConstant", 2, then.lit("U32", 0))
    y = then.bin(
        "Add", then.bin("Mul", a, then.op("LoadGlobal", 0, i)), then.op("LoadGlobal", 1, i)
    )
    then.op("StoreGlobal", 1, i, y, value=False)
    slots = (
        g(0, "F32", "x", "ReadOnly"),
        g(1, "F32", "y"),
        BindingSlot(2, V("F32"), 1, "Uniform", "ReadOnly", "a"),
    )
    return KernelDescriptor("saxpy", slots, (256, 1, 1), b.build())


def pinned_ops():
    b = Body([0])
    i = b.op("GlobalInvocationId", 0)
    x, y = b.op("LoadGlobal", 0, i), b.op("LoadGlobal", 1, i)
    s = b.op(V("Cast", (V("U32"),)), y)
    results = [b.bin(op, x, y) for op in ("Div", "Mod", "MulHigh", "AbsDiff")]
    results += [b.bin(op, x, s) for op in ("Shl", "Shr", "RotateLeft", "RotateRight")]
    results += [b.un(op, x) for op in ("Negate", "Abs", "Clz", "Ctz", "Popcount")]
    f = b.op(V("Cast", (V("F32"),)), x)
    results.append(
        b.op(V("Cast", (V("I32"),)), b.op("Fma", f, b.lit("F32", 0.1), b.lit("F32", -0.0)))
    )
    nan = b.op(V("Cast", (V("I32"),)), b.un("IsNan", b.lit("F32", float("nan"))))
    results += [
        nan,
        b.lit("I32", -(1 << 31)),
        b.op(V("OpaqueExpr", (0, "vyre.bitcast", bytes([5]))), b.lit("F32", float("-inf"))),
    ]
    acc = results[0]
    for r in results[1:]:
        acc = b.bin("BitXor", acc, r)
    b.op("StoreGlobal", 2, i, acc, value=False)
    slots = (
        g(0, "I32", "a", "ReadOnly"),
        g(1, "I32", "b", "ReadOnly"),
        g(2, "I32", "out", "WriteOnly"),
    )
    return KernelDescriptor("pinned_ops", slots, (64, 1, 1), b.build())


def control_flow():
    b = Body([0])
    i = b.op("GlobalInvocationId", 0)
    r, ret = b.child()
    b.op("StructuredIfThen", b.bin("Ge", i, b.op("BufferLength", 0)), r, value=False)
    ret.op("Return", value=False)
    f, loop = b.child()
    b.op(V("StructuredForLoop", ("k",)), b.lit("I32", 0), b.lit("I32", 8), f, value=False)
    k = loop.op(V("LoopIndex", ("k",)))
    c, cont = loop.child()
    loop.op(
        "StructuredIfThen",
        loop.bin("Eq", loop.bin("Mod", k, loop.lit("I32", 3)), loop.lit("I32", 0)),
        c,
        value=False,
    )
    cont.op(V("OpaqueNode", ("vyre.continue", b"")), value=False)
    acc = loop.op("LoadShared", SH, loop.lit("U32", 0))
    loop.op("StoreShared", SH, loop.lit("U32", 0), loop.bin("Add", acc, k), value=False)
    body_i, wbody = b.child()
    step_i, step = b.child()
    b.op(V("OpaqueNode", ("vyre.loop", b"")), body_i, step_i, value=False)
    j = wbody.op("LoadShared", SH + 1, wbody.lit("U32", 0))
    t, e = wbody.child()
    el, els = wbody.child()
    wbody.op("StructuredIfThenElse", wbody.bin("Ge", j, i), t, el, value=False)
    e.op(V("OpaqueNode", ("vyre.break", b"")), value=False)
    els.op("StoreShared", SH + 2, j, els.op(V("Cast", (V("I32"),)), j), value=False)
    step.op(
        "StoreShared",
        SH + 1,
        step.lit("U32", 0),
        step.bin("Add", step.op("LoadShared", SH + 1, step.lit("U32", 0)), step.lit("U32", 2)),
        value=False,
    )
    total = b.bin(
        "Add", b.op("LoadShared", SH, b.lit("U32", 0)), b.op("LoadShared", SH + 2, b.lit("U32", 3))
    )
    b.op("StoreGlobal", 0, i, total, value=False)
    slots = (
        g(0, "I32", "out"),
        BindingSlot(SH, V("I32"), 1, "Scratch", "ReadWrite", "acc"),
        BindingSlot(SH + 1, V("U32"), 1, "Scratch", "ReadWrite", "j"),
        BindingSlot(SH + 2, V("I32"), 4, "Scratch", "ReadWrite", "loop"),
    )
    return KernelDescriptor("control_flow", slots, (32, 1, 1), b.build())


def shared_atomics():
    b = Body([0])
    i, lid = b.op("GlobalInvocationId", 0), b.op("LocalInvocationId", 0)
    v = b.op("LoadGlobal", 0, i)
    bin_ = b.bin("BitAnd", v, b.lit("U32", 15))
    b.op(V("Atomic", (V("Add"), "Relaxed")), SH, bin_, b.lit("U32", 1))
    b.op(V("Barrier", ("AcqRel",)), value=False)
    h, head = b.child()
    b.op("StructuredIfThen", b.bin("Lt", lid, b.lit("U32", 16)), h, value=False)
    count = head.op("LoadShared", SH, lid)
    head.op(V("Atomic", (V("Add"), "Relaxed")), 1, lid, count)
    old = head.op(
        V("Atomic", (V("CompareExchange"), "Relaxed")),
        1,
        head.lit("U32", 16),
        head.lit("U32", 0),
        head.op(V("OpaqueExpr", (0, "vyre.num_workgroups", b"")), 0),
    )
    head.op("StoreGlobal", 2, head.op("WorkgroupId", 0), old, value=False)
    b.op(V("Barrier", ("SeqCst",)), value=False)
    slots = (
        g(0, "U32", "values", "ReadOnly"),
        g(1, "U32", "histogram"),
        g(2, "U32", "select"),
        BindingSlot(3, V("Bool"), 1, "Uniform", "ReadOnly", "flag"),
        BindingSlot(4, V("I32"), 1, "Uniform", "ReadOnly", "bias"),
        BindingSlot(SH, V("U32"), 16, "Shared", "ReadWrite", "bins"),
    )
    return KernelDescriptor("shared_atomics", slots, (64, 1, 1), b.build())


CASES = {f.__name__: f for f in (saxpy, pinned_ops, control_flow, shared_atomics)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_wgsl_matches_golden(name):
    desc = CASES[name]()
    text = emit_wgsl(desc)
    assert emit_wgsl(decode(encode(desc))) == text
    path = GOLDEN / f"{name}.wgsl"
    if os.environ.get("VYRE_UPDATE_SNAPSHOTS") == "1":
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            pytest.fail(f"rewrote {path}; review the diff and rerun without VYRE_UPDATE_SNAPSHOTS")
        return
    assert path.exists(), f"{path} is missing: run with VYRE_UPDATE_SNAPSHOTS=1 to create it"
    assert text == path.read_text(encoding="utf-8"), (
        f"emitted WGSL differs from {path}; if the change is intended, rerun with "
        "VYRE_UPDATE_SNAPSHOTS=1 and review the diff"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_validates_under_naga(name):
    try:
        import wgpu

        device = wgpu.gpu.request_adapter_sync(
            power_preference="high-performance"
        ).request_device_sync()
    except Exception as exc:  # noqa: BLE001 - no adapter: this tier is text-only then
        if os.environ.get("CI") == "true":
            pytest.fail(f"no wgpu adapter under CI=true: {exc}")
        pytest.skip(f"no wgpu adapter: {exc}")
    device.create_shader_module(code=(GOLDEN / f"{name}.wgsl").read_text(encoding="utf-8"))
