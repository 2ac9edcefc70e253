"""The memory ops of the legal form (a base of `legalize._Legalizer`): every load, store
and atomic in bounds. A load reads the clamped index and selects 0 where the index is out
of range; a store or an atomic runs under `if index < length` (an atomic's old value
travels through a Scratch slot, 0 where it did not run); an access at a literal index past
a fixed array's end is gone (0, or nothing). With `device_checks` (the SPIR-V target), a plain
storage-buffer load's index and `index < length` are switched by `vyre.checked`
(`switched`): the rule as above where it is true, the device's where it is false. Stores
keep their `if` (a dropped store a compiler forwards to a later load would be read).

Guarantees: an access proved in bounds (`Proofs.in_bounds`) and a cooperative-matrix
local's access are kept as the same `KernelOp`; a literal index past a fixed array's end is
decided before any proof (naga refuses such an index even on a path that cannot run).
Every rewrite is marked (`start` / `mark`) so that `Legal.origin` maps its first op to the
op it came from.
"""

from __future__ import annotations

from vyre_build.descriptor.types import MATRICES, TYPES, datatype
from vyre_build.descriptor.view import Load

__all__ = ["MemoryRewrites"]


class MemoryRewrites:
    """The memory-op methods of `legalize._Legalizer` (the module docstring); they build
    through its small builders and its kernel builder (`kb`, for an atomic's Scratch slot)."""

    def bounds(self, dst, op, clamp: bool = False) -> tuple[int | None, int]:
        """(the index clamped into range where `clamp`, the `index < length` bool) of an
        access not proved in bounds."""
        s = self.slots[op.slot]
        index = op.element
        if s.memory_class == "Global":
            length = dst.length(s.slot)
            last = self.bin(dst, "Sub", length, self.const(dst, "u32", 1)) if clamp else None
        else:
            length = self.const(dst, "u32", s.element_count)
            last = self.const(dst, "u32", s.element_count - 1) if clamp else None
        ok = self.bin(dst, "Lt", index, length)
        if not clamp:
            return None, ok
        if s.memory_class != "Global" and s.element_count == 1:
            return last, ok  # the one element
        return self.bin(dst, "Min", index, last), ok

    def switched(self, dst, op) -> tuple[int, int]:
        """(the index to read, the `index < length` bool) of a load: `bounds`' clamped
        index, switched by `vyre.checked` for a plain storage-buffer load where the target
        lets the device keep the rule. Unchecked: `true`, and the index held at most
        (2^32 - 1) / the element's size, so that it stays below 2^31 and its byte offset
        below 2^32 (lavapipe computes the offset in 32 bits: index 2^31 of a vec4f read
        element 0); every index in range is below that, every one held there still out of
        range (a binding holds less than 2^32 bytes). The driver folds the selects once the
        specialization constant is known. An ordered (atomic) load keeps its check."""
        clamped, ok = self.bounds(dst, op, clamp=True)
        if not (
            self.device_checks and type(op) is Load and self.slots[op.slot].memory_class == "Global"
        ):
            return clamped, ok
        checked = dst.expr("vyre.checked")
        top = 0xFFFFFFFF // TYPES[self.info.slot_types[op.slot]].size
        held = self.bin(dst, "Min", op.element, self.const(dst, "u32", top))
        index = self.select(dst, checked, clamped, held)
        return index, self.select(dst, checked, ok, self.const(dst, "bool", True))

    def past_the_end(self, op) -> bool:
        """A literal index at or past a fixed array's end (decided before any proof: naga
        refuses such an index even on a path that cannot run)."""
        s = self.slots[op.slot]
        known = self.info.constants.get(op.element)
        return s.memory_class != "Global" and known is not None and known >= s.element_count

    def zero_instead(self, op, dst) -> None:
        """A load or atomic that is never in bounds: the value 0 under its id, no access."""
        self.start(op, dst)
        self.const(dst, self.info.slot_types[op.slot], 0, result=op.result)
        self.mark()

    def visit_load(self, op, dst, src, kids) -> None:
        # LoadGlobal / LoadShared and vyre.atomic.load: the clamped index, 0 out of bounds
        if self.past_the_end(op):
            return self.zero_instead(op, dst)
        if op.index in self.in_bounds or self.info.slot_types[op.slot] in MATRICES:
            return self.keep(op, dst)
        self.start(op, dst)
        ty = self.info.slot_types[op.slot]
        clamped, ok = self.switched(dst, op)
        loaded = dst.op(op.kind, op.slot, clamped)
        self.select(dst, ok, loaded, self.const(dst, ty, 0), result=op.result)
        self.mark()

    visit_ordered_load = visit_load

    def visit_store(self, op, dst, src, kids) -> None:
        # StoreGlobal / StoreShared and vyre.atomic.store: nothing out of bounds (a matrix
        # local is one element, always at the literal index 0)
        if self.past_the_end(op):
            self.changed = True
            return None
        if op.index in self.in_bounds or self.info.slot_types[op.slot] in MATRICES:
            return self.keep(op, dst)
        # Every store keeps its check, the device's too: a store the device drops is one a
        # compiler may still forward to a later load of the same index (lavapipe did:
        # `y[i] = v; w = y[i]` read v past y's end), where a store under `if` is not.
        self.start(op, dst)
        dst.if_(self.bounds(dst, op)[1]).keep(op.op)
        self.mark()

    visit_ordered_store = visit_store

    def visit_atomic(self, op, dst, src, kids) -> None:
        # Atomic and vyre.atomic: nothing out of bounds, where the old value is 0
        if self.past_the_end(op):
            return self.zero_instead(op, dst)
        if op.index in self.in_bounds:
            return self.keep(op, dst)
        self.start(op, dst)
        ty = self.info.slot_types[op.slot]
        ok = self.bounds(dst, op)[1]
        old = self.kb.local("Scratch", datatype(ty), 1, f"vyre.old.{op.result}")
        first = self.const(dst, "u32", 0)
        dst.store(old, first, self.const(dst, ty, 0))
        then = dst.if_(ok)
        then.store(old, first, then.op(op.kind, *op.operands))
        dst.op("LoadShared", old, first, result=op.result)
        self.mark()

    visit_ordered_atomic = visit_atomic
