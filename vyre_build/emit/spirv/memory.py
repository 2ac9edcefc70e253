"""Slots and memory ops of the SPIR-V emitter (a mixin of `function.FunctionWriter`).

Declares every slot of the descriptor the way docs/descriptor-conventions.md says:
storage buffers as Block structs of one runtime array (ArrayStride 4 per component:
4, or 8 / 16 for vec2 / vec4 elements; NonWritable /
NonReadable by visibility, set 0, binding = slot), all Uniform slots as ONE Block struct
(member k at offset 4*k, binding = the smallest Uniform slot), Shared slots as Workgroup
arrays (zeroed by invocation 0 then a barrier, as WGSL guarantees), Scratch slots as
Function variables initialised with OpConstantNull. Every access of the legal form
(descriptor.legalize) is in bounds: the bounds rules (a clamped index and a select, a
write under a branch) are ops of the descriptor. A buffer that any Atomic targets is read
and written with OpAtomicLoad / OpAtomicStore, like WGSL's atomic<T>.
"""

from __future__ import annotations

from dataclasses import dataclass

from vyre_build.descriptor import BindingSlot, KernelBody, KernelOp
from vyre_build.descriptor import memory_order as mo
from vyre_build.descriptor.types import MATRICES, TYPES
from vyre_build.emit.spirv import grammar as g
from vyre_build.emit.spirv.control import CONTROL_NONE
from vyre_build.emit.spirv.values import ATOMICS

RELAXED = 0
_STORAGE = {"Global": "StorageBuffer", "Shared": "Workgroup", "Scratch": "Function"}


@dataclass
class SlotInfo:
    """How one descriptor slot lives in the module."""

    slot: BindingSlot
    ty: str
    var: int = 0
    ptr: int = 0  # pointer-to-element type for access chains
    member: int = 0  # Uniform: member index in the Params block
    atomic: bool = False  # Global or Shared: some Atomic targets it
    scalar: bool = False  # Scratch with element_count 1: a plain variable
    length: int = 0  # Global: id of its OpArrayLength, once asked for


class MemoryOps:
    """Slot declarations and the loads, stores and atomics of the legal form."""

    def declare_slots(self) -> None:
        m = self.m
        atomics = self.info.atomic_slots
        self.slots: dict[int, SlotInfo] = {}
        uniforms: list[SlotInfo] = []
        self.shared_vars: list[SlotInfo] = []
        for s in self.desc.slots:
            ty = self.info.slot_types[s.slot]
            info = SlotInfo(s, ty)
            elem = self.tid(ty)
            mc = s.memory_class
            if mc == "Global":
                info.atomic = s.slot in atomics
                rta = m.type_runtime_array(elem)
                m.decorate(rta, "ArrayStride", TYPES[ty].size)  # tightly packed
                block = m.type_struct_unique([rta])
                m.decorate(block, "Block")
                m.member_decorate(block, 0, "Offset", 0)
                if s.visibility == "ReadOnly":
                    m.member_decorate(block, 0, "NonWritable")
                elif s.visibility == "WriteOnly":
                    m.member_decorate(block, 0, "NonReadable")
                info.var = m.global_variable(
                    m.type_pointer("StorageBuffer", block), "StorageBuffer"
                )
                m.decorate(info.var, "DescriptorSet", 0)
                m.decorate(info.var, "Binding", s.slot)
                m.name(block, f"{s.name}_block")
                m.name(info.var, s.name)
                info.ptr = m.type_pointer("StorageBuffer", elem)
            elif mc == "Uniform":
                info.member = len(uniforms)
                uniforms.append(info)
            else:  # Shared or Scratch (validation allows no other class)
                n = s.element_count
                if mc == "Shared":
                    arr = m.type_array(elem, n)
                    info.var = m.global_variable(m.type_pointer("Workgroup", arr), "Workgroup")
                    info.ptr = m.type_pointer("Workgroup", elem)
                    info.atomic = s.slot in atomics
                    if s.slot not in self.info.proofs.unzeroed:
                        self.shared_vars.append(info)
                else:
                    info.scalar = n == 1
                    var_ty = elem if info.scalar else m.type_array(elem, n)
                    zero = self.zero(ty) if ty in MATRICES else m.const_null(var_ty)
                    info.var = self.function_var(var_ty, zero)
                    info.ptr = m.type_pointer("Function", elem)
                m.name(info.var, s.name)
            self.slots[s.slot] = info
        if uniforms:
            layout = self.info.uniform
            block = m.type_struct_unique([self.tid(u.ty) for u in uniforms])
            m.decorate(block, "Block")
            for u, member in zip(uniforms, layout.members):
                m.member_decorate(block, u.member, "Offset", member.offset)
                m.member_name(block, u.member, u.slot.name)
            var = m.global_variable(m.type_pointer("Uniform", block), "Uniform")
            m.decorate(var, "DescriptorSet", 0)
            m.decorate(var, "Binding", layout.binding)
            m.name(block, "Params")
            m.name(var, "params")
            for u in uniforms:
                u.var = var
                u.ptr = m.type_pointer("Uniform", self.tid(u.ty))

    def zero_init_shared(self) -> None:
        """Zero every workgroup array (as WGSL guarantees), invocations striding over it, then a barrier."""
        if not self.shared_vars:
            return
        m = self.m
        first = self.builtin_scalar("LocalInvocationIndex")
        wg = self.desc.workgroup_size
        step = self.const("u32", wg[0] * wg[1] * wg[2])
        counter = self.function_var(self.tid("u32"))
        for info in self.shared_vars:
            self.inst("OpStore", counter, first)
            header, body, cont, merge = m.new_id(), m.new_id(), m.new_id(), m.new_id()
            self.branch(header)
            self.start_block(header)
            k = self.op("OpLoad", "u32", counter)
            more = self.op("OpULessThan", "bool", k, self.const("u32", info.slot.element_count))
            self.inst("OpLoopMerge", merge, cont, CONTROL_NONE)
            self.inst("OpBranchConditional", more, body, merge)
            self.start_block(body)
            self.store_element(info, self.element_ptr(info, k), self.zero(info.ty))
            self.branch(cont)
            self.start_block(cont)
            self.inst(
                "OpStore",
                counter,
                self.op("OpIAdd", "u32", self.op("OpLoad", "u32", counter), step),
            )
            self.branch(header)
            self.start_block(merge)
        wg_scope = self.const("u32", g.SCOPE["Workgroup"])
        sem = g.MEMORYSEMANTICS["AcquireRelease"] | g.MEMORYSEMANTICS["WorkgroupMemory"]
        sem = self.barrier_semantics(sem)
        self.inst("OpControlBarrier", wg_scope, wg_scope, self.const("u32", sem))

    # --- addressing ---------------------------------------------------------------------

    def element_ptr(self, info: SlotInfo, idx: int) -> int:
        if info.scalar:
            return info.var
        if info.slot.memory_class == "Global":
            return self.op_typed("OpAccessChain", info.ptr, info.var, self.const("u32", 0), idx)
        return self.op_typed("OpAccessChain", info.ptr, info.var, idx)

    def length(self, info: SlotInfo) -> int:
        if info.slot.memory_class != "Global":
            return self.const("u32", info.slot.element_count)
        if not info.length:  # computed once in the entry block, which dominates every use
            info.length = self.m.new_id()
            self.m.emit(self.prologue, "OpArrayLength", self.tid("u32"), info.length, info.var, 0)
        return info.length

    def scope(self, info: SlotInfo) -> int:
        return self.const(
            "u32", g.SCOPE["Device" if info.slot.memory_class == "Global" else "Workgroup"]
        )

    def read(self, info: SlotInfo, ptr: int) -> int:
        if info.atomic:
            return self.op(
                "OpAtomicLoad", info.ty, ptr, self.scope(info), self.const("u32", RELAXED)
            )
        mem = self.access(_STORAGE[info.slot.memory_class], info.slot.visibility)
        return self.op("OpLoad", info.ty, ptr, *mem)

    def store_element(self, info: SlotInfo, ptr: int, value: int) -> None:
        if info.atomic:
            self.inst("OpAtomicStore", ptr, self.scope(info), self.const("u32", RELAXED), value)
        else:
            mem = self.access(_STORAGE[info.slot.memory_class], info.slot.visibility)
            self.inst("OpStore", ptr, value, *mem)

    # --- handlers ----------------------------------------------------------------------

    def h_load(self, kop: KernelOp, body: KernelBody):
        number, idx_ssa = kop.operands
        info = self.slots[number]
        return self.read(info, self.element_ptr(info, self.vals[idx_ssa]))

    def h_load_constant(self, kop: KernelOp, body: KernelBody):
        info = self.slots[kop.operands[0]]
        ptr = self.op_typed("OpAccessChain", info.ptr, info.var, self.const("u32", info.member))
        return self.op("OpLoad", info.ty, ptr)

    def h_store(self, kop: KernelOp, body: KernelBody):
        number, idx_ssa, val_ssa = kop.operands
        info = self.slots[number]
        self.store_element(info, self.element_ptr(info, self.vals[idx_ssa]), self.vals[val_ssa])

    def h_length(self, kop: KernelOp, body: KernelBody):
        return self.length(self.slots[kop.operands[0]])

    def h_atomic(self, kop: KernelOp, body: KernelBody, acc=None):
        # acc: the Access of a vyre.atomic (emit/spirv/ordered.py), None for Atomic{op, Relaxed}
        op_name = kop.name  # the AtomicOp (a vyre.atomic's from its access)
        ops = kop.operands
        info = self.slots[ops[0]]
        opname = ATOMICS.get((op_name, info.ty))
        if opname is None:
            self.fail(kop, f"no SPIR-V rule for atomic {op_name} on {info.ty}")
        idx = self.vals[ops[1]]
        args = [self.vals[x] for x in ops[2:]]
        ptr = self.element_ptr(info, idx)
        if acc is None:
            scope, relaxed = self.scope(info), self.const("u32", RELAXED)
            equal = unequal = relaxed
        else:
            scope, equal = self.ordering(acc)
            keep = "acquire" if acc.order in ("acquire", "acq_rel") else "relaxed"
            unequal = self.ordering(mo.Access(acc.kind, acc.op, acc.scope, keep))[1]
        if op_name == "CompareExchange":
            return self.op(opname, info.ty, ptr, scope, equal, unequal, args[1], args[0])
        return self.op(opname, info.ty, ptr, scope, equal, args[0])
