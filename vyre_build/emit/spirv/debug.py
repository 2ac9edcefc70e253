"""A debug build's `vyre.debug.*` ops in SPIR-V (a mixin of `function.FunctionWriter`).

The debug buffer is a Block struct of one runtime array of u32 at set 0, binding
`DescriptorInfo.debug_binding` (layout: vyre_build/runtime/debug.py), declared on the
first debug op. A reporting invocation claims its record's words with one OpAtomicIAdd
on word 0 and writes them with OpAtomicStore only when `n + 2 <= length` and
`claimed <= length - 2 - n`; otherwise it adds one to word 1 (a dropped record). So no
access leaves the buffer. A record is [site id, global id x, y, z, value bits...].
"""

from __future__ import annotations

from vyre_build.descriptor import KernelBody, KernelOp
from vyre_build.emit.spirv import grammar as g

__all__ = ["DebugOps"]

_RELAXED = 0


class DebugOps:
    """vyre.debug.print / .assert / .bounds (the walker's `debug`)."""

    _debug: tuple[int, int, int] | None = None  # (variable, element pointer type, length)

    def debug_buffer(self) -> tuple[int, int, int]:
        if self._debug is None:
            m = self.m
            u32 = self.tid("u32")
            rta = m.type_runtime_array(u32)
            m.decorate(rta, "ArrayStride", 4)
            block = m.type_struct_unique([rta])
            m.decorate(block, "Block")
            m.member_decorate(block, 0, "Offset", 0)
            var = m.global_variable(m.type_pointer("StorageBuffer", block), "StorageBuffer")
            m.decorate(var, "DescriptorSet", 0)
            m.decorate(var, "Binding", self.info.debug_binding)
            m.name(block, "vyre_debug_block")
            m.name(var, "vyre_debug")
            length = m.new_id()  # in the entry block, which dominates every use
            m.emit(self.prologue, "OpArrayLength", u32, length, var, 0)
            self._debug = (var, m.type_pointer("StorageBuffer", u32), length)
        return self._debug

    def debug_word(self, value: int, ty: str) -> int:
        if ty == "u32":
            return value
        if ty == "bool":
            return self.op("OpSelect", "u32", value, self.const("u32", 1), self.const("u32", 0))
        return self.op("OpBitcast", "u32", value)

    def h_debug(self, kop: KernelOp, body: KernelBody):
        kind, site = kop.name, kop.site
        o = kop.operands
        types = self.info.types
        if kind == "vyre.debug.print":
            self.debug_record(site, [self.debug_word(self.vals[v], types[v]) for v in o])
            return None
        if kind == "vyre.debug.assert":
            failed = self.op("OpLogicalNot", "bool", self.vals[o[0]])
            words = [self.debug_word(self.vals[v], types[v]) for v in o[1:]]
        else:  # vyre.debug.bounds [slot, index]
            info = self.slots[o[0]]
            idx = self.vals[o[1]]
            if info.slot.memory_class == "Global":
                length = self.length(info)
            else:
                length = self.const("u32", info.slot.element_count)
            failed = self.op("OpUGreaterThanEqual", "bool", idx, length)
            words = [idx, length]
        then_l, merge = self.m.new_id(), self.m.new_id()
        self.selection(failed, then_l, merge, merge)
        self.start_block(then_l)
        self.debug_record(site, words)
        self.branch(merge)
        self.start_block(merge)
        return None

    def debug_record(self, site: int, values: list[int]) -> None:
        """Claim and write one record: the site, the global id and `values` (u32 ids)."""
        var, ptr, length = self.debug_buffer()
        words = [self.const("u32", site)]
        words += [self.builtin("GlobalInvocationId", axis) for axis in range(3)]
        words += values
        n = len(words)
        zero, scope = self.const("u32", 0), self.const("u32", g.SCOPE["Device"])
        relaxed = self.const("u32", _RELAXED)
        counter = self.op_typed("OpAccessChain", ptr, var, zero, zero)
        off = self.op("OpAtomicIAdd", "u32", counter, scope, relaxed, self.const("u32", n))
        need = self.const("u32", n + 2)
        fits = self.op("OpULessThanEqual", "bool", need, length)
        room = self.op("OpISub", "u32", length, need)  # wraps only where `fits` is false
        ok = self.op("OpLogicalAnd", "bool", fits, self.op("OpULessThanEqual", "bool", off, room))
        write_l, drop_l, merge = self.m.new_id(), self.m.new_id(), self.m.new_id()
        self.selection(ok, write_l, drop_l, merge)
        self.start_block(write_l)
        for k, word in enumerate(words):
            at = self.op("OpIAdd", "u32", off, self.const("u32", 2 + k))
            cell = self.op_typed("OpAccessChain", ptr, var, zero, at)
            self.inst("OpAtomicStore", cell, scope, relaxed, word)
        self.branch(merge)
        self.start_block(drop_l)
        dropped = self.op_typed("OpAccessChain", ptr, var, zero, self.const("u32", 1))
        self.op("OpAtomicIAdd", "u32", dropped, scope, relaxed, self.const("u32", 1))
        self.branch(merge)
        self.start_block(merge)
