"""Memory scopes and orders in the SPIR-V emitter (a mixin of `function.FunctionWriter`).

The four extensions of `descriptor.memory_order` under the Vulkan memory model, which
`emit_spirv` declares for a kernel that has an order or a fence (feature
vulkan_memory_model; VulkanMemoryModelDeviceScope where a device-scope op is in it):
- scope: device -> Device, workgroup -> Workgroup;
- semantics: relaxed -> None; acquire -> Acquire | MakeVisible, release -> Release |
  MakeAvailable, acq_rel -> AcquireRelease | MakeAvailable | MakeVisible, each with
  UniformMemory | WorkgroupMemory, so an order covers buffer and shared memory alike;
- vyre.atomic -> the op's OpAtomic* (a compare-exchange's unequal semantics keep only the
  acquire part), vyre.atomic.load -> OpAtomicLoad, vyre.atomic.store -> OpAtomicStore,
  vyre.fence -> OpMemoryBarrier; each with the pinned bounds rules of `memory`.
In such a module every storage-buffer and workgroup access is NonPrivatePointer
(`CoopOps.access`), so release and acquire order the plain loads and stores around them.
"""

from __future__ import annotations

from vyre_build.descriptor import KernelBody, KernelOp
from vyre_build.descriptor import memory_order as mo
from vyre_build.emit.spirv import grammar as g

_S = g.MEMORYSEMANTICS
_STORAGE_BITS = _S["UniformMemory"] | _S["WorkgroupMemory"]
SEMANTICS = {
    "relaxed": 0,
    "acquire": _S["Acquire"] | _S["MakeVisible"] | _STORAGE_BITS,
    "release": _S["Release"] | _S["MakeAvailable"] | _STORAGE_BITS,
    "acq_rel": _S["AcquireRelease"] | _S["MakeAvailable"] | _S["MakeVisible"] | _STORAGE_BITS,
}
SCOPES = {"device": "Device", "workgroup": "Workgroup"}


class OrderedOps:
    """vyre.atomic, vyre.atomic.load, vyre.atomic.store and vyre.fence."""

    def ordering(self, acc: mo.Access) -> tuple[int, int]:
        """(scope id, semantics id) of an Access."""
        scope = self.const("u32", g.SCOPE[SCOPES[acc.scope]])
        return scope, self.const("u32", SEMANTICS[acc.order])

    def h_memory_expr(self, kop: KernelOp, body: KernelBody):
        acc = kop.access
        if acc.kind == mo.ATOMIC:
            return self.h_atomic(kop, body, acc)
        number, idx_ssa = kop.operands
        info = self.slots[number]
        if self.never_in_bounds(info, idx_ssa):
            return self.zero(info.ty)
        idx = self.vals[idx_ssa]
        scope, sem = self.ordering(acc)
        if self.info.in_bounds(kop):
            return self.op("OpAtomicLoad", info.ty, self.element_ptr(info, idx), scope, sem)
        n = self.length(info)
        ok = self.op("OpULessThan", "bool", idx, n)
        last = self.op("OpISub", "u32", n, self.const("u32", 1))
        ptr = self.element_ptr(info, self.glsl("UMin", "u32", idx, last))
        loaded = self.op("OpAtomicLoad", info.ty, ptr, scope, sem)
        return self.select_value(info.ty, ok, loaded, self.zero(info.ty))

    def h_memory_node(self, kop: KernelOp, body: KernelBody):
        acc = kop.access
        scope, sem = self.ordering(acc)
        if acc.kind == mo.FENCE:
            self.inst("OpMemoryBarrier", scope, sem)
            return None
        number, idx_ssa, val_ssa = kop.operands
        info = self.slots[number]
        if self.never_in_bounds(info, idx_ssa):
            return None
        idx = self.vals[idx_ssa]
        guard = self.guarded(kop, info, idx)
        self.inst("OpAtomicStore", self.element_ptr(info, idx), scope, sem, self.vals[val_ssa])
        if guard is not None:
            self.branch(guard[1])
            self.start_block(guard[1])
        return None
