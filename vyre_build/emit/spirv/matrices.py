"""Cooperative matrices in the SPIR-V emitter (a mixin of `function.FunctionWriter`).

SPV_KHR_cooperative_matrix at subgroup scope: OpTypeCooperativeMatrixKHR per matrix type,
OpCooperativeMatrixLoadKHR / StoreKHR (row-major, stride in elements) under the fragment
rule of `descriptor.matrices` (a load that does not fit gives a zero matrix, a store
that does not fit does nothing), OpCooperativeMatrixMulAddKHR, and a one-constituent
OpCompositeConstruct for a fill. Such a module uses the Vulkan memory model (the
extension requires it): `emit_spirv` declares it, and the writer then marks every
workgroup access (and every storage-buffer access, in a kernel with a storage barrier)
NonPrivatePointer and every barrier MakeAvailable | MakeVisible, so barriers order them as
they do under GLSL450.
"""

from __future__ import annotations

from vyre_build.descriptor import KernelBody, KernelOp
from vyre_build.descriptor.matrices import alignment, in_place
from vyre_build.descriptor.types import MATRICES, TYPES
from vyre_build.emit.spirv import grammar as g

_USE = {"a": "MatrixAKHR", "b": "MatrixBKHR", "acc": "MatrixAccumulatorKHR"}
NON_PRIVATE = g.MEMORYACCESS["NonPrivatePointer"]
AVAILABLE_VISIBLE = g.MEMORYSEMANTICS["MakeAvailable"] | g.MEMORYSEMANTICS["MakeVisible"]


class CoopOps:
    """Matrix types and the four cooperative-matrix ops."""

    def matrix_type(self, ty: str) -> int:
        use, rows, cols = MATRICES[ty]
        c = self.const
        return self.m._type(
            ("coopmat", ty),
            "OpTypeCooperativeMatrixKHR",
            self.tid(TYPES[ty].element),
            c("u32", g.SCOPE["Subgroup"]),
            c("u32", rows),
            c("u32", cols),
            c("u32", g.COOPERATIVEMATRIXUSE[_USE[use]]),
        )

    def access(self, storage: str, visibility: str | None = None) -> tuple[int, ...]:
        """The memory-access operands of a load/store through a `storage` pointer: workgroup
        memory is always shared between invocations; storage buffers only where a
        storage_barrier() or a memory order synchronises them (NonPrivate there costs
        caching on NVIDIA), and in a memory-ordered kernel (emit/spirv/ordered.py) only
        ReadWrite buffers (`visibility`): nothing in the dispatch writes a read-only one or
        reads a write-only one, so their accesses need no ordering."""
        if not self.vmm:
            return ()
        if storage == "Workgroup":
            return (NON_PRIVATE,)
        if storage == "StorageBuffer" and self.storage_sync:
            if self.ordered and visibility is not None and visibility != "ReadWrite":
                return ()
            return (NON_PRIVATE,)
        return ()

    def barrier_semantics(self, sem: int) -> int:
        return sem | AVAILABLE_VISIBLE if self.vmm else sem

    def in_place(self, kop, info, off_ssa: int, stride_ssa: int, ty: str) -> int | bool:
        """The fragment rule in u32 arithmetic that cannot overflow (see descriptor.matrices):
        decided here when offset, stride and the slot's length are constants, or when the
        range analysis proved every offset of a shared array's fragment fits."""
        if self.info.in_bounds(kop):
            return True
        _, rows, cols = MATRICES[ty]
        comps = TYPES[info.ty].count  # a slot of vectors holds count scalars per element
        consts = self.info.constants
        if info.slot.memory_class != "Global" and off_ssa in consts and stride_ssa in consts:
            length = info.slot.element_count * comps
            return in_place(length, consts[off_ssa], consts[stride_ssa], ty)
        offset, stride = self.vals[off_ssa], self.vals[stride_ssa]
        align = alignment(TYPES[ty].element, cols)
        u = lambda v: self.const("u32", v)  # noqa: E731
        n = self.length(info)
        if comps > 1:
            n = self.op("OpIMul", "u32", n, u(comps))
        low = self.op("OpBitwiseOr", "u32", offset, stride)
        conds = [
            self.op("OpIEqual", "bool", self.op("OpBitwiseAnd", "u32", low, u(align - 1)), u(0)),
            self.op("OpUGreaterThanEqual", "bool", stride, u(cols)),
            self.op("OpULessThanEqual", "bool", offset, n),
        ]
        room = self.op("OpISub", "u32", n, offset)
        conds.append(self.op("OpULessThanEqual", "bool", u(cols), room))
        spare = self.op("OpUDiv", "u32", self.op("OpISub", "u32", room, u(cols)), u(rows - 1))
        conds.append(self.op("OpULessThanEqual", "bool", stride, spare))
        ok = conds[0]
        for c in conds[1:]:
            ok = self.op("OpLogicalAnd", "bool", ok, c)
        return ok

    def coop_view(self, info) -> tuple[int, int]:
        """(variable, pointer-to-element type) of a 16-byte view of storage buffer `info`: a
        second variable at its binding, a runtime array of uvec4, through which fragments
        move in 16-byte pieces (the fragment rule guarantees the alignment; a pointer to
        the element type would leave the driver 2-byte loads)."""
        got = self.coop_views.get(info.slot.slot)
        if got is None:
            m = self.m
            uvec4 = m.type_vector(self.tid("u32"), 4)
            rta = m.type_runtime_array(uvec4)
            m.decorate(rta, "ArrayStride", 16)
            block = m.type_struct_unique([rta])
            m.decorate(block, "Block")
            m.member_decorate(block, 0, "Offset", 0)
            if info.slot.visibility == "ReadOnly":
                m.member_decorate(block, 0, "NonWritable")
            elif info.slot.visibility == "WriteOnly":
                m.member_decorate(block, 0, "NonReadable")
            var = m.global_variable(m.type_pointer("StorageBuffer", block), "StorageBuffer")
            m.decorate(var, "DescriptorSet", 0)
            m.decorate(var, "Binding", info.slot.slot)
            m.name(var, f"{info.slot.name}_16")
            got = self.coop_views[info.slot.slot] = (var, m.type_pointer("StorageBuffer", uvec4))
        return got

    def fragment_ptr(self, info, offset: int, stride: int) -> tuple[int, int, str]:
        """(pointer, stride in the pointer's elements, storage class) of a fragment whose
        offset and stride count scalars (the fragment rule makes every shift exact)."""
        scalar = TYPES[TYPES[info.ty].element].size
        if info.slot.memory_class != "Global":
            per = TYPES[info.ty].count  # scalars per element of a shared array of vectors
            if per == 1:
                return self.element_ptr(info, offset), stride, "Workgroup"
            shift = self.const("u32", per.bit_length() - 1)
            index = self.op("OpShiftRightLogical", "u32", offset, shift)
            stride = self.op("OpShiftRightLogical", "u32", stride, shift)
            return self.element_ptr(info, index), stride, "Workgroup"
        var, ptr_type = self.coop_view(info)
        shift = self.const("u32", (16 // scalar).bit_length() - 1)
        index = self.op("OpShiftRightLogical", "u32", offset, shift)
        ptr = self.op_typed("OpAccessChain", ptr_type, var, self.const("u32", 0), index)
        return ptr, self.op("OpShiftRightLogical", "u32", stride, shift), "StorageBuffer"

    def guard(self, ok: int | bool) -> int | None:
        """Open the branch of a fragment that may not fit (None: known to fit)."""
        return None if ok is True else self.open_if(ok)

    def open_if(self, cond: int) -> int:
        then_l, merge = self.m.new_id(), self.m.new_id()
        self.selection(cond, then_l, merge, merge)
        self.start_block(then_l)
        return merge

    def close_if(self, merge: int) -> None:
        self.branch(merge)
        self.start_block(merge)

    def h_coop_load(self, kop: KernelOp, body: KernelBody):
        number, off_ssa, stride_ssa = kop.operands
        info, ty = self.slots[number], self.info.types[kop.result]
        offset, stride = self.vals[off_ssa], self.vals[stride_ssa]
        tid = self.tid(ty)
        ok = self.in_place(kop, info, off_ssa, stride_ssa, ty)
        if ok is False:
            return self.zero(ty)
        var = None
        if ok is not True:
            var = self.function_var(tid)
            self.inst("OpStore", var, self.zero(ty))
        merge = self.guard(ok)
        ptr, stride, storage = self.fragment_ptr(info, offset, stride)
        layout = self.const("u32", g.COOPERATIVEMATRIXLAYOUT["RowMajorKHR"])
        mem = self.access(storage)
        loaded = self.op_typed("OpCooperativeMatrixLoadKHR", tid, ptr, layout, stride, *mem)
        if var is None:
            return loaded
        self.inst("OpStore", var, loaded)
        self.close_if(merge)
        return self.op_typed("OpLoad", tid, var)

    def h_coop_store(self, kop: KernelOp, body: KernelBody):
        number, off_ssa, stride_ssa, value = kop.operands
        info, ty = self.slots[number], self.info.types[value]
        offset, stride = self.vals[off_ssa], self.vals[stride_ssa]
        ok = self.in_place(kop, info, off_ssa, stride_ssa, ty)
        if ok is False:
            return None  # a store that can never fit does nothing
        merge = self.guard(ok)
        ptr, stride, storage = self.fragment_ptr(info, offset, stride)
        layout = self.const("u32", g.COOPERATIVEMATRIXLAYOUT["RowMajorKHR"])
        self.inst(
            "OpCooperativeMatrixStoreKHR",
            ptr,
            self.vals[value],
            layout,
            stride,
            *self.access(storage),
        )
        if merge is not None:
            self.close_if(merge)

    def h_coop_fill(self, kop: KernelOp, body: KernelBody):
        ty = self.info.types[kop.result]
        return self.op("OpCompositeConstruct", ty, self.vals[kop.operands[0]])

    def h_coop_mma(self, kop: KernelOp, body: KernelBody):
        a, b, c = (self.vals[o] for o in kop.operands)
        return self.op("OpCooperativeMatrixMulAddKHR", self.info.types[kop.result], a, b, c)
