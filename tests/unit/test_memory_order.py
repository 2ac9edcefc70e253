"""Memory scopes and orders in the language (frontend/memory_order.py): exact errors, the
descriptor extensions and their validation, SPIR-V under the Vulkan memory model (pinned
spirv-val), relaxed forms in WGSL, the WGSL refusal, features, and unchanged bytes for
atomics written without the keywords."""

import re
import subprocess
import textwrap

import pytest

from spirv_tools import missing, pinned
from vyre_build.compiler import compile_file
from vyre_build.descriptor import KernelOp, validate
from vyre_build.descriptor import memory_order as mo
from vyre_build.descriptor.codec import Variant, decode, encode
from vyre_build.core.errors import DescriptorFormatError, KernelError

# What a kernel that orders memory gets instead of WGSL (metadata "skipped").
ORDERED_SPIRV_ONLY = (
    "needs memory ordering (an acquire/release atomic or a fence), which WGSL's relaxed "
    "atomics cannot express: SPIR-V only"
)

HEAD = "from vyre_build.lang import *\n\n"
SIG = 'out: Buffer[u32, "rw"], c: Buffer[i32, "rw"]'


def source(body, sig=SIG):
    return (
        HEAD
        + f"@kernel(workgroup_size=64)\ndef k({sig}):\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
    )


def build(tmp_path, body, targets=("kdesc", "wgsl", "spirv"), sig=SIG):
    path = tmp_path / "k.py"
    path.write_text(source(body, sig))
    return compile_file(str(path), targets=targets, display_path="k.py")[0]


def error(tmp_path, body) -> str:
    with pytest.raises(KernelError) as info:
        build(tmp_path, body, targets=("kdesc",))
    return str(info.value)


ERRORS = {
    "order_on_store": (
        'atomic_store(out, 0, 1, order="acquire")\n',
        'k.py:5:35: error: atomic_store() cannot have order="acquire"\n'
        '        atomic_store(out, 0, 1, order="acquire")\n'
        "                                      ^~~~~~~~~\n"
        '  fix: a store is order="relaxed" or "release" (to wait for a value, use atomic_load '
        'with order="acquire")',
    ),
    "order_on_load": (
        'x = atomic_load(out, 0, order="release")\n',
        'k.py:5:35: error: atomic_load() cannot have order="release"\n'
        '        x = atomic_load(out, 0, order="release")\n'
        "                                      ^~~~~~~~~\n"
        '  fix: a load is order="relaxed" or "acquire" (to publish, use atomic_store with '
        'order="release")',
    ),
    "device_scope_on_shared": (
        's = shared(u32, 64)\natomic_add(s, 0, 1, scope="device")\n',
        "k.py:6:31: error: atomic_add() on shared array 's' cannot have scope=\"device\": "
        "workgroup memory is seen only by its own workgroup\n"
        '        atomic_add(s, 0, 1, scope="device")\n'
        "                                  ^~~~~~~~\n"
        '  fix: write scope="workgroup" (or leave scope out)',
    ),
    "non_literal_order": (
        "x = atomic_load(out, 0, order=out)\n",
        "k.py:5:35: error: the order of atomic_load() must be a string literal\n"
        "        x = atomic_load(out, 0, order=out)\n"
        "                                      ^~~\n"
        '  fix: write order="relaxed": scopes and orders are fixed when the kernel is compiled',
    ),
    "unknown_scope": (
        'atomic_add(out, 0, 1, scope="queue")\n',
        "k.py:5:33: error: unknown memory scope 'queue' in atomic_add()\n"
        '        atomic_add(out, 0, 1, scope="queue")\n'
        "                                    ^~~~~~~\n"
        '  fix: write scope= one of "device", "workgroup"',
    ),
    "unknown_order": (
        'atomic_add(out, 0, 1, order="seq_cst")\n',
        "k.py:5:33: error: unknown memory order 'seq_cst' in atomic_add()\n"
        '        atomic_add(out, 0, 1, order="seq_cst")\n'
        "                                    ^~~~~~~~~\n"
        '  fix: write order= one of "relaxed", "acquire", "release", "acq_rel"',
    ),
    "unknown_keyword": (
        'atomic_add(out, 0, 1, ordering="relaxed")\n',
        "k.py:5:36: error: atomic_add() takes the keywords scope= and order=, not 'ordering'\n"
        '        atomic_add(out, 0, 1, ordering="relaxed")\n'
        "                                       ^~~~~~~~~\n"
        '  fix: write e.g. atomic_add(..., scope="device", order="relaxed")',
    ),
    "relaxed_fence": (
        'fence(order="relaxed")\n',
        'k.py:5:17: error: fence() cannot have order="relaxed"\n'
        '        fence(order="relaxed")\n'
        "                    ^~~~~~~~~\n"
        '  fix: a fence orders memory: order="acquire", "release" or "acq_rel" (a relaxed '
        "fence does nothing: remove it)",
    ),
    "fence_as_value": (
        "x = fence()\n",
        "k.py:5:9: error: fence() is a statement, not a value\n"
        "        x = fence()\n"
        "            ^~~~~~~\n"
        "  fix: call it on its own line: fence()",
    ),
    "keywords_elsewhere": (
        "out[0] = min(out[1], 2, order=3)\n",
        "k.py:5:35: error: keyword arguments are not supported in kernels\n"
        "        out[0] = min(out[1], 2, order=3)\n"
        "                                      ^\n"
        "  fix: pass arguments by position",
    ),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_bad_scope_or_order_is_a_kernel_error_with_the_fix(tmp_path, case):
    body, want = ERRORS[case]
    assert error(tmp_path, body) == want


def ops(desc):
    out, todo = [], [desc.body]
    while todo:
        b = todo.pop()
        out += b.ops
        todo += b.children
    return out


ORDERED = """
s = shared(u32, 64)
i = global_id().x
atomic_add(s, local_id().x, 1, scope="workgroup")
atomic_store(out, i, 7, order="release")
v = atomic_load(out, i, order="acquire")
t = atomic_add(c, 0, 1, order="acq_rel")
u = atomic_compare_exchange(c, 1, 0, 2, scope="workgroup", order="acquire")
fence(scope="workgroup", order="release")
out[i] = v + u32(t + u)
f[i] = f32(v)
"""
ORDERED_SIG = SIG + ', f: Buffer[f32, "rw"]'


def test_lowering_carries_the_documented_extensions_to_the_byte(tmp_path):
    k = build(tmp_path, ORDERED, sig=ORDERED_SIG)
    assert k.wgsl is None
    kinds = [op.kind for op in ops(decode(k.kdesc))]
    assert Variant("Atomic", (Variant("Add"), "Relaxed")) in kinds  # the shared array's own scope
    assert Variant("OpaqueNode", ("vyre.atomic.store", b"\x00\x02")) in kinds
    assert Variant("OpaqueExpr", (0, "vyre.atomic.load", b"\x00\x01")) in kinds
    assert Variant("OpaqueExpr", (0, "vyre.atomic", b"\x00\x00\x03")) in kinds  # Add, device
    assert Variant("OpaqueExpr", (0, "vyre.atomic", b"\x07\x01\x01")) in kinds  # CmpXchg, wg
    assert Variant("OpaqueNode", ("vyre.fence", b"\x01\x02")) in kinds
    assert encode(decode(k.kdesc)) == k.kdesc
    assert k.meta["features"] == ["vulkan_memory_model", "vulkan_memory_model_device_scope"]
    assert k.meta["skipped"] == {"wgsl": ORDERED_SPIRV_ONLY}


def test_keywords_that_say_the_default_keep_todays_bytes(tmp_path):
    plain = build(tmp_path, "atomic_add(out, 0, 1)\nx = atomic_max(c, 1, 2)\n")
    said = build(
        tmp_path,
        'atomic_add(out, 0, 1, scope="device", order="relaxed")\n'
        'x = atomic_max(c, 1, 2, scope="device")\n',
    )
    assert (said.kdesc, said.spirv, said.wgsl) == (plain.kdesc, plain.spirv, plain.wgsl)
    assert b"VulkanMemoryModel" not in plain.spirv and "features" not in plain.meta


@pytest.mark.skipif(missing("spirv-val"), reason="needs the pinned spirv-val (test extra)")
@pytest.mark.parametrize("env", ["vulkan1.1", "vulkan1.2", "vulkan1.3"])
def test_ordered_spirv_passes_the_pinned_validator(tmp_path, env):
    k = build(tmp_path, ORDERED, targets=("kdesc", "spirv"), sig=ORDERED_SIG)
    path = tmp_path / "k.spv"
    path.write_bytes(k.spirv)
    val = subprocess.run(
        [pinned("spirv-val"), "--target-env", env, str(path)], capture_output=True, text=True
    )
    assert val.returncode == 0, val.stderr
    dis = subprocess.run([pinned("spirv-dis"), str(path)], capture_output=True, text=True).stdout
    assert "OpMemoryModel Logical Vulkan" in dis
    assert "OpCapability VulkanMemoryModelDeviceScope" in dis
    assert "OpMemoryBarrier %uint_2 " in dis  # the workgroup fence (Workgroup scope = 2)
    assert "NonPrivatePointer" in dis  # plain accesses take part in the ordering


def test_workgroup_scope_without_device_ops_needs_no_device_scope(tmp_path):
    k = build(
        tmp_path,
        's = shared(u32, 64)\nx = atomic_add(s, 0, 1, order="acq_rel")\nout[0] = x\n',
        targets=("kdesc", "spirv"),
    )
    assert k.meta["features"] == ["vulkan_memory_model"]
    assert b"VulkanMemoryModelDeviceScope" not in k.spirv.replace(b"\0", b"")


def test_relaxed_scoped_forms_keep_wgsl(tmp_path):
    k = build(
        tmp_path,
        'atomic_store(out, 1, 5)\nx = atomic_load(out, 1, scope="workgroup")\n'
        'y = atomic_add(c, 0, 1, scope="workgroup")\nout[0] = x + u32(y)\n',
    )
    assert "skipped" not in k.meta and "features" not in k.meta
    clamped = re.search(r"let (_v\d+): u32 = min\(", k.wgsl)  # the legal form's bounds rule
    assert "atomicStore(&out[_v" in k.wgsl and f"atomicLoad(&out[{clamped.group(1)}])" in k.wgsl
    assert "atomicAdd(&c[_v" in k.wgsl


def _slot_desc(kind, operands, element="U32", memory="Global"):
    from vyre_build.descriptor.codec import BindingSlot, KernelBody, KernelDescriptor

    slot = BindingSlot(
        0 if memory == "Global" else 1 << 24, Variant(element), None, memory, "ReadWrite", "b"
    )
    if memory == "Shared":
        slot = BindingSlot(1 << 24, Variant(element), 64, "Shared", "ReadWrite", "b")
    body_ops = [
        KernelOp(Variant("Literal"), (0,), 0),
        KernelOp(kind, tuple(operands), 1 if kind.name == "OpaqueExpr" else None),
    ]
    return KernelDescriptor(
        "k", [slot], (64, 1, 1), KernelBody(body_ops, [], [Variant("U32", (0,))])
    )


@pytest.mark.parametrize(
    "kind, operands, memory, why",
    [
        (
            Variant("OpaqueNode", (mo.STORE, b"\x00\x01")),
            (0, 0, 0),
            "Global",
            "vyre.atomic.store cannot have order acquire",
        ),
        (
            Variant("OpaqueExpr", (0, mo.LOAD, b"\x00\x00")),
            (1 << 24, 0),
            "Shared",
            "vyre.atomic.load at device scope on shared slot 16777216 'b'",
        ),
        (
            Variant("OpaqueExpr", (0, mo.ATOMIC, b"\x00\x00")),
            (0, 0, 0),
            "Global",
            "vyre.atomic payload '0000' is not [(op,) scope, order]",
        ),
        (
            Variant("OpaqueNode", (mo.FENCE, b"\x00\x00")),
            (),
            "Global",
            "vyre.fence cannot have order relaxed",
        ),
        (
            Variant("OpaqueExpr", (0, mo.STORE, b"\x00\x00")),
            (0, 0, 0),
            "Global",
            "vyre.atomic.store is an OpaqueNode, not an OpaqueExpr",
        ),
    ],
)
def test_validation_refuses_bad_memory_extensions(kind, operands, memory, why):
    with pytest.raises(DescriptorFormatError) as info:
        validate(_slot_desc(kind, operands, memory=memory))
    assert str(info.value).endswith(why), str(info.value)


def test_a_bare_fence_is_device_scope_acq_rel(tmp_path):
    k = build(tmp_path, "fence()\nout[0] = 1\n", targets=("kdesc", "spirv"))
    kinds = [op.kind for op in ops(decode(k.kdesc))]
    assert Variant("OpaqueNode", ("vyre.fence", b"\x00\x03")) in kinds
    assert k.meta["features"] == ["vulkan_memory_model", "vulkan_memory_model_device_scope"]


def test_the_scan_names_the_missing_wgsl_before_compiling(tmp_path):
    from vyre_build.compiler import skipped_targets

    (tmp_path / "k.py").write_text(
        source("h(out)\n", sig=SIG).replace(
            "@kernel",
            'def h(b: Buffer[u32, "rw"]):\n    fence(scope="workgroup", order="release")\n\n\n'
            "@kernel",
        )
    )
    (tmp_path / "plain.py").write_text(source('atomic_add(out, 0, 1, scope="workgroup")\n'))
    assert skipped_targets(str(tmp_path / "k.py")) == {"k": {"wgsl": ORDERED_SPIRV_ONLY}}
    assert skipped_targets(str(tmp_path / "plain.py")) == {}
