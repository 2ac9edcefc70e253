"""Slots and memory ops of the SPIR-V emitter (a mixin of `codegen.FunctionWriter`).

Declares every slot of the descriptor the way docs/descriptor-conventions.md says:
storage buffers as Block structs of one runtime array (ArrayStride 4 per component:
4, or 8 / 16 for vec2 / vec4 elements; NonWritable /
NonReadable by visibility, set 0, binding = slot), all Uniform slots as ONE Block struct
(member k at offset 4*k, binding = the smallest Uniform slot), Shared slots as Workgroup
arrays (zeroed by invocation 0 then a barrier, as WGSL guarantees), Scratch slots as
Function variables initialised with OpConstantNull. Loads out of bounds give 0 (clamp,
load, select); stores and atomics out of bounds do nothing (under a branch); an atomic
out of bounds returns 0 (a vector load selects with the bounds check splatted to a
Bool vector, as SPIR-V 1.3 OpSelect on vectors requires). A buffer that any Atomic targets is read and written with
OpAtomicLoad / OpAtomicStore, like WGSL's atomic<T> elements.
"""

from __future__ import annotations

from dataclasses import dataclass

from vyre_build.descriptor import BindingSlot, KernelBody, KernelOp
from vyre_build.spirv import grammar as g
from vyre_build.spirv.control import CONTROL_NONE
from vyre_build.spirv.vectors import VECTOR_TYPES, datatype_name

STORAGE_TYPES = ("U32", "I32", "F32")
ATOMIC_OPS = {
    "Add": "OpAtomicIAdd",
    "Or": "OpAtomicOr",
    "And": "OpAtomicAnd",
    "Xor": "OpAtomicXor",
    "Exchange": "OpAtomicExchange",
}
ATOMIC_MINMAX = {
    ("Min", "U32"): "OpAtomicUMin",
    ("Min", "I32"): "OpAtomicSMin",
    ("Max", "U32"): "OpAtomicUMax",
    ("Max", "I32"): "OpAtomicSMax",
}
RELAXED = 0


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


def _atomic_slots(body: KernelBody, out: set[int]) -> None:
    for kop in body.ops:
        if kop.kind.name == "Atomic" and kop.operands:
            out.add(kop.operands[0])
    for child in body.children:
        _atomic_slots(child, out)


class MemoryOps:
    """Slot declarations and loads/stores/atomics with the pinned bounds semantics."""

    def slot_error(self, s: BindingSlot, reason: str):
        from vyre_build.errors import EmitError

        raise EmitError(
            f"SPIR-V emitter: cannot declare slot {s.slot} {s.name!r} "
            f"({s.memory_class} {s.element_type!r} x {s.element_count}) "
            f"in kernel {self.desc.id!r}: {reason}"
        )

    def declare_slots(self) -> None:
        m = self.m
        atomics: set[int] = set()
        _atomic_slots(self.desc.body, atomics)
        self.slots: dict[int, SlotInfo] = {}
        uniforms: list[SlotInfo] = []
        self.shared_vars: list[SlotInfo] = []
        for s in self.desc.slots:
            ty = datatype_name(s.element_type)
            if ty is None:
                self.slot_error(
                    s,
                    f"element type {s.element_type!r} is not U32, I32, F32 or Bool"
                    + (", nor a vector of 2 or 4 U32, I32 or F32" if s.element_type.args else ""),
                )
            info = SlotInfo(s, ty)
            elem = self.tid(ty)
            mc = s.memory_class
            if mc == "Global":
                if ty not in STORAGE_TYPES and ty not in VECTOR_TYPES:
                    self.slot_error(s, "storage buffers hold U32, I32 or F32 or vectors of them")
                info.atomic = s.slot in atomics
                rta = m.type_runtime_array(elem)
                m.decorate(
                    rta, "ArrayStride", 4 * VECTOR_TYPES.get(ty, (ty, 1))[1]
                )  # tightly packed
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
                if ty not in STORAGE_TYPES:
                    self.slot_error(s, "uniform parameters are U32, I32 or F32")
                info.member = len(uniforms)
                uniforms.append(info)
            elif mc in ("Shared", "Scratch"):
                n = s.element_count
                if not n:
                    self.slot_error(s, "needs an element_count of at least 1")
                if mc == "Shared":
                    arr = m.type_array(elem, n)
                    info.var = m.global_variable(m.type_pointer("Workgroup", arr), "Workgroup")
                    info.ptr = m.type_pointer("Workgroup", elem)
                    info.atomic = s.slot in atomics
                    self.shared_vars.append(info)
                else:
                    info.scalar = n == 1
                    var_ty = elem if info.scalar else m.type_array(elem, n)
                    info.var = self.function_var(var_ty, m.const_null(var_ty))
                    info.ptr = m.type_pointer("Function", elem)
                m.name(info.var, s.name)
            else:
                self.slot_error(s, f"memory class {mc} is not used by vyre_build")
            self.slots[s.slot] = info
        if uniforms:
            block = m.type_struct_unique([self.tid(u.ty) for u in uniforms])
            m.decorate(block, "Block")
            for u in uniforms:
                m.member_decorate(block, u.member, "Offset", 4 * u.member)
                m.member_name(block, u.member, u.slot.name)
            var = m.global_variable(m.type_pointer("Uniform", block), "Uniform")
            m.decorate(var, "DescriptorSet", 0)
            m.decorate(var, "Binding", uniforms[0].slot.slot)
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
        step = self.const("U32", wg[0] * wg[1] * wg[2])
        counter = self.function_var(self.tid("U32"))
        for info in self.shared_vars:
            self.inst("OpStore", counter, first)
            header, body, cont, merge = m.new_id(), m.new_id(), m.new_id(), m.new_id()
            self.branch(header)
            self.start_block(header)
            k = self.op("OpLoad", "U32", counter)
            more = self.op("OpULessThan", "Bool", k, self.const("U32", info.slot.element_count))
            self.inst("OpLoopMerge", merge, cont, CONTROL_NONE)
            self.inst("OpBranchConditional", more, body, merge)
            self.start_block(body)
            self.store_element(info, self.element_ptr(info, k), self.zero(info.ty))
            self.branch(cont)
            self.start_block(cont)
            self.inst(
                "OpStore",
                counter,
                self.op("OpIAdd", "U32", self.op("OpLoad", "U32", counter), step),
            )
            self.branch(header)
            self.start_block(merge)
        wg_scope = self.const("U32", g.SCOPE["Workgroup"])
        sem = g.MEMORYSEMANTICS["AcquireRelease"] | g.MEMORYSEMANTICS["WorkgroupMemory"]
        self.inst("OpControlBarrier", wg_scope, wg_scope, self.const("U32", sem))

    # --- addressing ---------------------------------------------------------------------

    def slot_info(self, number: int, kop: KernelOp, classes: tuple[str, ...]) -> SlotInfo:
        info = self.slots.get(number)
        if info is None:
            self.fail(kop, f"slot {number} is not declared")
        if info.slot.memory_class not in classes:
            self.fail(
                kop, f"slot {number} is {info.slot.memory_class}, expected {' or '.join(classes)}"
            )
        return info

    def index(self, ssa: int, kop: KernelOp) -> int:
        vi, vt = self.value(ssa, kop)
        if vt != "U32":
            self.fail(kop, f"index has type {vt}, not U32")
        return vi

    def element_ptr(self, info: SlotInfo, idx: int) -> int:
        if info.scalar:
            return info.var
        if info.slot.memory_class == "Global":
            return self.op_typed("OpAccessChain", info.ptr, info.var, self.const("U32", 0), idx)
        return self.op_typed("OpAccessChain", info.ptr, info.var, idx)

    def length(self, info: SlotInfo) -> int:
        if info.slot.memory_class != "Global":
            return self.const("U32", info.slot.element_count)
        if not info.length:  # computed once in the entry block, which dominates every use
            info.length = self.m.new_id()
            self.m.emit(self.prologue, "OpArrayLength", self.tid("U32"), info.length, info.var, 0)
        return info.length

    def in_bounds_const(self, info: SlotInfo, ssa: int) -> bool:
        """True when the index is a literal already known to be in range (no check needed)."""
        value = self.known.get(ssa)
        return (
            value is not None
            and info.slot.memory_class != "Global"
            and value < info.slot.element_count
        )

    def scope(self, info: SlotInfo) -> int:
        return self.const(
            "U32", g.SCOPE["Device" if info.slot.memory_class == "Global" else "Workgroup"]
        )

    def read(self, info: SlotInfo, ptr: int) -> int:
        if info.atomic:
            return self.op(
                "OpAtomicLoad", info.ty, ptr, self.scope(info), self.const("U32", RELAXED)
            )
        return self.op("OpLoad", info.ty, ptr)

    def store_element(self, info: SlotInfo, ptr: int, value: int) -> None:
        if info.atomic:
            self.inst("OpAtomicStore", ptr, self.scope(info), self.const("U32", RELAXED), value)
        else:
            self.inst("OpStore", ptr, value)

    # --- handlers ----------------------------------------------------------------------

    def h_load(self, kop: KernelOp, body: KernelBody):
        number, idx_ssa = self.operands(kop, 2)
        classes = ("Global",) if kop.kind.name == "LoadGlobal" else ("Shared", "Scratch")
        info = self.slot_info(number, kop, classes)
        if info.slot.visibility == "WriteOnly":
            self.fail(kop, f"slot {number} is WriteOnly")
        idx = self.index(idx_ssa, kop)
        if self.in_bounds_const(info, idx_ssa):
            return self.read(info, self.element_ptr(info, idx)), info.ty
        n = self.length(info)
        ok = self.op("OpULessThan", "Bool", idx, n)
        if info.scalar:
            loaded = self.read(info, info.var)
        else:
            last = self.op("OpISub", "U32", n, self.const("U32", 1))
            loaded = self.read(info, self.element_ptr(info, self.glsl("UMin", "U32", idx, last)))
        return self.select_value(info.ty, ok, loaded, self.zero(info.ty)), info.ty

    def h_load_constant(self, kop: KernelOp, body: KernelBody):
        number, idx_ssa = self.operands(kop, 2)
        info = self.slot_info(number, kop, ("Uniform",))
        if self.known.get(idx_ssa) != 0:
            self.fail(kop, "LoadConstant index must be the literal 0")
        ptr = self.op_typed("OpAccessChain", info.ptr, info.var, self.const("U32", info.member))
        return self.op("OpLoad", info.ty, ptr), info.ty

    def guarded(self, info: SlotInfo, idx_ssa: int, idx: int) -> tuple[int, int] | None:
        """Open `if idx < len` (unless statically in range); returns (header label, merge)."""
        if self.in_bounds_const(info, idx_ssa):
            return None
        ok = self.op("OpULessThan", "Bool", idx, self.length(info))
        header, then_l, merge = self.label, self.m.new_id(), self.m.new_id()
        self.selection(ok, then_l, merge, merge)
        self.start_block(then_l)
        return header, merge

    def h_store(self, kop: KernelOp, body: KernelBody):
        number, idx_ssa, val_ssa = self.operands(kop, 3)
        classes = ("Global",) if kop.kind.name == "StoreGlobal" else ("Shared", "Scratch")
        info = self.slot_info(number, kop, classes)
        if info.slot.visibility == "ReadOnly":
            self.fail(kop, f"slot {number} is ReadOnly")
        idx = self.index(idx_ssa, kop)
        vi, vt = self.value(val_ssa, kop)
        if vt != info.ty:
            self.fail(kop, f"stored value has type {vt}, the slot holds {info.ty}")
        guard = self.guarded(info, idx_ssa, idx)
        self.store_element(info, self.element_ptr(info, idx), vi)
        if guard is not None:
            self.branch(guard[1])
            self.start_block(guard[1])

    def h_length(self, kop: KernelOp, body: KernelBody):
        (number,) = self.operands(kop, 1)
        info = self.slot_info(number, kop, ("Global", "Shared", "Scratch"))
        return self.length(info), "U32"

    def h_atomic(self, kop: KernelOp, body: KernelBody):
        op_name, ordering = kop.kind.args[0].name, kop.kind.args[1]
        cmpxchg = op_name in ("CompareExchange", "CompareExchangeWeak")
        ops = self.operands(kop, 4 if cmpxchg else 3)
        info = self.slot_info(ops[0], kop, ("Global", "Shared"))
        if info.ty not in ("U32", "I32"):
            self.fail(kop, f"atomics need a U32 or I32 slot, slot {ops[0]} holds {info.ty}")
        if ordering != "Relaxed":
            self.fail(kop, f"atomic ordering {ordering} is not Relaxed")
        if info.slot.memory_class == "Global" and info.slot.visibility != "ReadWrite":
            self.fail(kop, f"atomic on {info.slot.visibility} buffer slot {ops[0]}")
        opname = ATOMIC_OPS.get(op_name) or ATOMIC_MINMAX.get((op_name, info.ty))
        if opname is None and not cmpxchg:
            self.fail(kop, f"AtomicOp {op_name} is not supported")
        idx = self.index(ops[1], kop)
        args = [self.value(x, kop) for x in ops[2:]]
        if any(t != info.ty for _, t in args):
            self.fail(kop, f"atomic operands must have the slot's type {info.ty}")
        result = None
        if not self.in_bounds_const(info, ops[1]):
            # Out of bounds returns 0: the old value travels through a variable (no OpPhi,
            # which naga's SPIR-V reader mishandles after a compare-exchange).
            result = self.function_var(self.tid(info.ty))
            self.inst("OpStore", result, self.zero(info.ty))
        guard = self.guarded(info, ops[1], idx)
        ptr = self.element_ptr(info, idx)
        scope, relaxed = self.scope(info), self.const("U32", RELAXED)
        if cmpxchg:
            old = self.op(
                "OpAtomicCompareExchange",
                info.ty,
                ptr,
                scope,
                relaxed,
                relaxed,
                args[1][0],
                args[0][0],
            )
        else:
            old = self.op(opname, info.ty, ptr, scope, relaxed, args[0][0])
        if guard is None:
            return old, info.ty
        self.inst("OpStore", result, old)
        self.branch(guard[1])
        self.start_block(guard[1])
        return self.op("OpLoad", info.ty, result), info.ty
