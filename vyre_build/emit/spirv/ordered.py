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
  vyre.fence -> OpMemoryBarrier; in bounds, as every access of the legal form.
In such a module every workgroup access and every access of a read-write storage buffer is
NonPrivatePointer (`CoopOps.access`), so release and acquire order the plain loads and
stores around them; a read-only or write-only buffer's accesses are left private, since
nothing in the dispatch both writes and reads it.
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
        scope, sem = self.ordering(acc)
        ptr = self.element_ptr(info, self.vals[idx_ssa])
        return self.op("OpAtomicLoad", info.ty, ptr, scope, sem)

    def h_memory_node(self, kop: KernelOp, body: KernelBody):
        acc = kop.access
        scope, sem = self.ordering(acc)
        if acc.kind == mo.FENCE:
            self.inst("OpMemoryBarrier", scope, sem)
            return None
        number, idx_ssa, val_ssa = kop.operands
        info = self.slots[number]
        ptr = self.element_ptr(info, self.vals[idx_ssa])
        self.inst("OpAtomicStore", ptr, scope, sem, self.vals[val_ssa])
        return None
