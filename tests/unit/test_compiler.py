"""Compiler core: descriptor spec example, IR fingerprints, decode->emit equality, determinism."""

import glob
import os

import pytest
from descriptors import Kernel

from vyre_build.frontend import ir
from vyre_build.compiler import compile_file, compiler_identity, kernel_dependencies, list_kernels
from vyre_build.descriptor import (
    BindingSlot,
    DescriptorError,
    Variant,
    decode,
    encode,
    validate,
)
from vyre_build.descriptor.coarsen import entries
from vyre_build.emit.wgsl import emit_wgsl
from vyre_build.frontend import check_module, load_module
from vyre_build.emit.spirv import emit_spirv

SPIRV_ONLY = "needs cooperative matrices: SPIR-V only"
BF16_SPIRV_ONLY = "needs bf16 values, a type WGSL does not have: SPIR-V only"
ORDERED_SPIRV_ONLY = (
    "needs memory ordering (an acquire/release atomic or a fence), which WGSL's relaxed "
    "atomics cannot express: SPIR-V only"
)

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "kernels"))
KERNEL_FILES = sorted(glob.glob(os.path.join(ROOT, "*.py")))
SPEC_EXAMPLE = bytes.fromhex(
    "016b01000201400002036f757440010103000100010003010001010f030001000000010007"
)


def spec_descriptor(count=64, name="out"):
    """The worked example of shared/spec/kernel-descriptor.md: out[gid.x] = 7."""
    kb = Kernel(
        "k", (64, 1, 1), [BindingSlot(0, Variant("U32"), count, "Global", "ReadWrite", name)]
    )
    seven = kb.body.u32(7)
    kb.body.store(0, kb.body.gid(), seven)
    return kb.build()


def test_spec_worked_example_bytes():
    assert encode(spec_descriptor()) == SPEC_EXAMPLE
    assert decode(SPEC_EXAMPLE) == spec_descriptor()


def test_spec_long_name_and_none_count():
    blob = encode(spec_descriptor(count=None, name="n" * 300))
    assert blob[:6] == bytes.fromhex("016b01000200")
    assert bytes.fromhex("0002fb2c01") in blob
    assert decode(blob) == spec_descriptor(count=None, name="n" * 300)


def test_decoder_rejects_truncation_and_bad_tags():
    for n in range(len(SPEC_EXAMPLE)):
        with pytest.raises(DescriptorError):
            decode(SPEC_EXAMPLE[:n])
    bad_option = bytearray(SPEC_EXAMPLE)
    bad_option[5] = 2  # element_count Option tag
    with pytest.raises(DescriptorError, match="Option tag 2"):
        decode(bytes(bad_option))
    with pytest.raises(DescriptorError, match="length 4294967295 exceeds"):
        decode(bytes.fromhex("fcffffffff"))
    with pytest.raises(DescriptorError, match="trailing"):
        decode(SPEC_EXAMPLE + b"\0")


@pytest.mark.parametrize("path", KERNEL_FILES, ids=os.path.basename)
def test_every_kernel_roundtrips_and_emits_identically(path):
    for k in compile_file(path, root=ROOT):
        desc = decode(k.kdesc)
        assert desc == k.descriptor
        info = validate(desc)
        extra = entries(desc, info)
        assert bool(extra) == ("coarse" in k.meta)
        if "skipped" in k.meta:  # cooperative matrices, memory orders or bf16: SPIR-V only
            reasons = (SPIRV_ONLY, ORDERED_SPIRV_ONLY, BF16_SPIRV_ONLY)
            assert k.wgsl is None and k.meta["skipped"]["wgsl"] in reasons
        else:
            assert emit_wgsl(desc, info, entries=extra) == k.wgsl
        assert emit_spirv(desc, info, entries=extra) == k.spirv


def test_fingerprint_equal_programs_equal_and_sensitive(tmp_path):
    src = (
        "from vyre_build.lang import *\n@kernel(workgroup_size=64)\n"
        "def k(x: Buffer[f32], y: Buffer[f32, 'rw'], a: f32):\n"
        "    i = global_id().x\n    y[i] = a * x[i] + y[i]\n"
    )
    (tmp_path / "a.py").write_text(src)
    (tmp_path / "b.py").write_text("# moved and commented\n\n" + src.replace("    ", "    ", 1))
    pa = check_module(load_module(str(tmp_path / "a.py")))[0]
    pb = check_module(load_module(str(tmp_path / "b.py")))[0]
    assert pa == pb and pa.fingerprint() == pb.fingerprint()
    (tmp_path / "c.py").write_text(src.replace("a * x[i]", "a * x[i] * 1.0"))
    pc = check_module(load_module(str(tmp_path / "c.py")))[0]
    assert pc.fingerprint() != pa.fingerprint()
    assert isinstance(pa, ir.Program) and pa.id == "k"


def test_editing_nested_helper_changes_output_and_dependencies(tmp_path):
    (tmp_path / "inner.py").write_text("def twice(v: u32) -> u32:\n    return v * 2\n")
    (tmp_path / "mid.py").write_text(
        "from .inner import twice\n\ndef quad(v: u32) -> u32:\n    return twice(twice(v))\n"
    )
    (tmp_path / "top.py").write_text(
        "from vyre_build.lang import *\nfrom .mid import quad\n"
        "@kernel\ndef k(o: Buffer[u32, 'w']):\n    o[0] = quad(3)\n"
    )
    deps = kernel_dependencies(str(tmp_path / "top.py"))
    assert deps == sorted([str(tmp_path / "inner.py"), str(tmp_path / "mid.py")])
    before = compile_file(str(tmp_path / "top.py"))[0]
    (tmp_path / "inner.py").write_text("def twice(v: u32) -> u32:\n    return v * 3\n")
    after = compile_file(str(tmp_path / "top.py"))[0]
    assert before.kdesc != after.kdesc
    assert before.meta["provenance"]["imports"] != after.meta["provenance"]["imports"]


def test_list_kernels_includes_variants():
    stems = list_kernels(os.path.join(ROOT, "add.py"), root=ROOT)
    assert {"add.f32", "add.i32", "add.u32"} <= set(stems)


def test_compiler_identity_is_stable():
    a = compiler_identity()
    assert a == compiler_identity() and len(a["source_hash"]) == 64


def test_runtime_does_not_need_the_frontend():
    # The runtime reads meta + artifacts; meta bindings come from the descriptor alone.
    k = compile_file(os.path.join(ROOT, "saxpy.py"), root=ROOT)[0]
    names = [b["name"] for b in k.meta["bindings"]]
    assert names == [s.name for s in k.descriptor.slots if s.memory_class in ("Global", "Uniform")]
