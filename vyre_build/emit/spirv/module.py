"""A SPIR-V module as the spec's logical layout: named word lists joined at the end.

`SpirvModule` owns the id counter, one word list per layout section (capabilities,
extensions, ext-inst imports, memory model, entry points, execution modes, debug names,
annotations, types/constants/globals, functions) and the dedup maps that make every
type, pointer type and constant appear exactly once. Instructions are written by small
constructors; opcode and enumerant numbers come only from the generated `grammar` table.

Guarantees: `to_bytes()` is a pure function of the calls made (no dict-order, hash-seed
or time dependence); its output is little-endian words with a valid header whose bound
is one past the largest id handed out.
"""

from __future__ import annotations

import struct
import sys
from array import array

from vyre_build.core.artifacts import CHECKED_SPEC_ID
from vyre_build.emit.spirv import grammar as g

OP = g.OPCODES
SPIRV_VERSION_1_3 = 0x00010300
GENERATOR = 0  # unregistered generator id; the tool number is ours to leave at 0

__all__ = ["OP", "SpirvModule", "string_words"]


def string_words(text: str) -> list[int]:
    """A literal string as words: UTF-8, NUL-terminated, zero-padded to a word boundary."""
    raw = text.encode("utf-8") + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


class SpirvModule:
    """Builder for one module. Sections are plain `list[int]` word lists."""

    def __init__(self) -> None:
        self.bound = 1
        self.capabilities: list[int] = []
        self.extensions: list[int] = []
        self.ext_inst_imports: list[int] = []
        self.memory_model: list[int] = []
        self.entry_points: list[int] = []
        self.execution_modes: list[int] = []
        self.debug_names: list[int] = []
        self.annotations: list[int] = []
        self.globals: list[int] = []  # types, constants and global variables
        self.functions: list[int] = []
        self._types: dict[tuple, int] = {}
        self._consts: dict[tuple, int] = {}
        self._decorated: set[tuple] = set()
        self._glsl = 0

    # --- ids and raw instructions -------------------------------------------------

    def new_id(self) -> int:
        i = self.bound
        self.bound += 1
        return i

    @staticmethod
    def emit(words: list[int], opname: str, *operands: int) -> None:
        """Append one instruction (opcode word, then operands) to a section."""
        words.append(((len(operands) + 1) << 16) | OP[opname])
        words.extend(operands)

    # --- preamble sections ---------------------------------------------------------

    def capability(self, name: str) -> None:
        self.emit(self.capabilities, "OpCapability", g.CAPABILITY[name])

    def extension(self, name: str) -> None:
        self.emit(self.extensions, "OpExtension", *string_words(name))

    def ext_inst_import(self, name: str) -> int:
        rid = self.new_id()
        self.emit(self.ext_inst_imports, "OpExtInstImport", rid, *string_words(name))
        return rid

    def glsl_std_450(self) -> int:
        """The GLSL.std.450 import, made on first use and shared by every function."""
        if not self._glsl:
            self._glsl = self.ext_inst_import("GLSL.std.450")
        return self._glsl

    def set_memory_model(self, addressing: str, memory: str) -> None:
        self.emit(
            self.memory_model, "OpMemoryModel", g.ADDRESSINGMODEL[addressing], g.MEMORYMODEL[memory]
        )

    def entry_point(self, model: str, function: int, name: str, interface: list[int]) -> None:
        self.emit(
            self.entry_points,
            "OpEntryPoint",
            g.EXECUTIONMODEL[model],
            function,
            *string_words(name),
            *interface,
        )

    def execution_mode(self, function: int, mode: str, *literals: int) -> None:
        self.emit(
            self.execution_modes, "OpExecutionMode", function, g.EXECUTIONMODE[mode], *literals
        )

    def name(self, target: int, text: str) -> None:
        self.emit(self.debug_names, "OpName", target, *string_words(text))

    def member_name(self, struct_id: int, member: int, text: str) -> None:
        self.emit(self.debug_names, "OpMemberName", struct_id, member, *string_words(text))

    def decorate(self, target: int, decoration: str, *literals: int) -> None:
        key = (target, -1, decoration)
        if key not in self._decorated:  # a shared type must not be decorated twice
            self._decorated.add(key)
            self.emit(self.annotations, "OpDecorate", target, g.DECORATION[decoration], *literals)

    def member_decorate(self, struct_id: int, member: int, decoration: str, *literals: int) -> None:
        self.emit(
            self.annotations,
            "OpMemberDecorate",
            struct_id,
            member,
            g.DECORATION[decoration],
            *literals,
        )

    # --- types (deduplicated) -------------------------------------------------------

    def _type(self, key: tuple, opname: str, *operands: int) -> int:
        tid = self._types.get(key)
        if tid is None:
            tid = self._types[key] = self.new_id()
            self.emit(self.globals, opname, tid, *operands)
        return tid

    def type_void(self) -> int:
        return self._type(("void",), "OpTypeVoid")

    def type_bool(self) -> int:
        return self._type(("bool",), "OpTypeBool")

    def type_int(self, signed: bool) -> int:
        return self._type(("int", signed), "OpTypeInt", 32, int(signed))

    def type_float(self, width: int = 32) -> int:
        key = ("float",) if width == 32 else ("float", width)  # the f32 key as it always was
        return self._type(key, "OpTypeFloat", width)

    def type_bfloat16(self) -> int:
        """OpTypeFloat 16 BFloat16KHR (SPV_KHR_bfloat16)."""
        return self._type(("bfloat16",), "OpTypeFloat", 16, g.FPENCODING["BFloat16KHR"])

    def type_vector(self, component: int, count: int) -> int:
        return self._type(("vec", component, count), "OpTypeVector", component, count)

    def type_array(self, element: int, length: int) -> int:
        return self._type(
            ("array", element, length), "OpTypeArray", element, self.const_u32(length)
        )

    def type_runtime_array(self, element: int) -> int:
        return self._type(("rtarray", element), "OpTypeRuntimeArray", element)

    def type_struct_unique(self, members: list[int]) -> int:
        """A fresh struct type (never shared: each block carries its own decorations)."""
        sid = self.new_id()
        self.emit(self.globals, "OpTypeStruct", sid, *members)
        return sid

    def type_pointer(self, storage: str, pointee: int) -> int:
        return self._type(
            ("ptr", storage, pointee), "OpTypePointer", g.STORAGECLASS[storage], pointee
        )

    def type_function(self, ret: int, params: tuple[int, ...] = ()) -> int:
        return self._type(("fn", ret, params), "OpTypeFunction", ret, *params)

    # --- constants (deduplicated) ----------------------------------------------------

    def _const(self, key: tuple, opname: str, type_id: int, *operands: int) -> int:
        cid = self._consts.get(key)
        if cid is None:
            cid = self._consts[key] = self.new_id()
            self.emit(self.globals, opname, type_id, cid, *operands)
        return cid

    def const_u32(self, value: int) -> int:
        value &= 0xFFFFFFFF
        return self._const(("u32", value), "OpConstant", self.type_int(False), value)

    def const_i32(self, value: int) -> int:
        value &= 0xFFFFFFFF  # the word holds the two's-complement bits
        return self._const(("i32", value), "OpConstant", self.type_int(True), value)

    def const_f32_bits(self, bits: int) -> int:
        return self._const(("f32", bits), "OpConstant", self.type_float(), bits)

    def const_f16_bits(self, bits: int) -> int:
        # a 16-bit literal takes one word, its high bits zero
        return self._const(("f16", bits & 0xFFFF), "OpConstant", self.type_float(16), bits & 0xFFFF)

    def const_bf16_bits(self, bits: int) -> int:
        return self._const(
            ("bf16", bits & 0xFFFF), "OpConstant", self.type_bfloat16(), bits & 0xFFFF
        )

    def const_f32(self, value: float) -> int:
        return self.const_f32_bits(struct.unpack("<I", struct.pack("<f", value))[0])

    def const_bool(self, value: bool) -> int:
        opname = "OpConstantTrue" if value else "OpConstantFalse"
        return self._const(("bool", bool(value)), opname, self.type_bool())

    def const_composite(self, type_id: int, constituents: tuple[int, ...]) -> int:
        """A constant vector/array/struct of the constant ids `constituents`."""
        return self._const(
            ("composite", type_id, constituents), "OpConstantComposite", type_id, *constituents
        )

    def const_null(self, type_id: int) -> int:
        return self._const(("null", type_id), "OpConstantNull", type_id)

    def workgroup_base(self) -> tuple[int, int, int]:
        """The split-dispatch base workgroup: u32 specialization constants SpecId 0, 1, 2
        (x, y, z), 0 unless the runtime sets them (docs/descriptor-conventions.md)."""
        found = self._consts.get(("workgroup_base",))
        if found is None:
            u32, ids = self.type_int(False), []
            for axis in range(3):
                sid = self.new_id()
                self.emit(self.globals, "OpSpecConstant", u32, sid, 0)
                self.decorate(sid, "SpecId", axis)
                self.name(sid, f"vyre_wg_base_{'xyz'[axis]}")
                ids.append(sid)
            found = self._consts[("workgroup_base",)] = tuple(ids)
        return found

    def checked(self) -> int:
        """The bool specialization constant SpecId 3 (`vyre.checked`): true unless the
        runtime sets it false for a device whose robustBufferAccess2 keeps the bounds rule
        of storage-buffer loads (docs/descriptor-conventions.md)."""
        found = self._consts.get(("checked",))
        if found is None:
            found = self._consts[("checked",)] = self.new_id()
            self.emit(self.globals, "OpSpecConstantTrue", self.type_bool(), found)
            self.decorate(found, "SpecId", CHECKED_SPEC_ID)
            self.name(found, "vyre_checked")
        return found

    # --- globals -----------------------------------------------------------------------

    def global_variable(self, pointer_type: int, storage: str) -> int:
        vid = self.new_id()
        self.emit(self.globals, "OpVariable", pointer_type, vid, g.STORAGECLASS[storage])
        return vid

    # --- output ------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The binary: header then every section in logical-layout order, little-endian."""
        words = array("I", [g.MAGIC_NUMBER, SPIRV_VERSION_1_3, GENERATOR, self.bound, 0])
        for section in (
            self.capabilities,
            self.extensions,
            self.ext_inst_imports,
            self.memory_model,
            self.entry_points,
            self.execution_modes,
            self.debug_names,
            self.annotations,
            self.globals,
            self.functions,
        ):
            words.extend(section)
        if sys.byteorder != "little":
            words.byteswap()
        return words.tobytes()
