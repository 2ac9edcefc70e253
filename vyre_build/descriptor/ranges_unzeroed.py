"""The range analysis's Shared arrays that need no zeroing on entry (`Proofs.unzeroed`).

A Shared array of at most one element per invocation qualifies when every read of it
comes after a covering store (element `flat local id`, as the analysis's affine forms in
the local ids show) and then a barrier at the top of the same or an enclosing body: a
barrier stands in uniform control flow, so every invocation made that store, and no zero
can be observed. Anything else keeps its zeroing.
"""

from __future__ import annotations

from vyre_build.descriptor.view import (
    Atomic,
    Barrier,
    BodyView,
    CoopLoad,
    DescriptorView,
    Load,
    OrderedAtomic,
    OrderedLoad,
    OrderedStore,
    Store,
)

__all__ = ["unzeroed"]


def unzeroed(view: DescriptorView, flat: dict[int, tuple]) -> set[int]:
    desc = view.desc
    wx, wy, wz = desc.workgroup_size
    strides, sizes = (1, wx, wx * wy), (wx, wy, wz)

    def covering(index: int) -> bool:
        """Whether `index` is the flat local id (an axis of size 1 may have any stride)."""
        f = flat.get(index)
        return (
            f is not None
            and f[3] == 0
            and all(c == st or n == 1 for c, st, n in zip(f[:3], strides, sizes))
        )

    shared = {s.slot: s for s in desc.slots if s.memory_class == "Shared"}
    ok = {n for n, s in shared.items() if s.element_count <= wx * wy * wz}
    if not ok:
        return set()
    bad: set[int] = set()

    def reads(op, b) -> set[int]:
        """Shared slots op reads (itself or anything nested in it)."""
        out = set()
        if isinstance(op, _READS) and (op.shared if isinstance(op, Load) else True):
            if op.slot in shared:
                out.add(op.slot)
        for child in op.children:
            for sub in b.children[child].ops:
                out |= reads(sub, b.children[child])
        return out

    def walk(b: BodyView, ready: set[int]) -> None:
        """`ready`: slots covered and then fenced by a barrier in an enclosing body."""
        ready = set(ready)
        written: set[int] = set()
        for op in b.ops:
            if isinstance(op, Store) and op.shared and op.slot in ok and covering(op.element):
                written.add(op.slot)
            elif isinstance(op, Barrier):
                ready |= written
            if op.children:
                for child in op.children:
                    walk(b.children[child], ready)
            else:
                bad.update(reads(op, b) - ready)

    walk(view.body, set())
    return ok - bad


# The ops that read a Shared slot (a Load only when it is LoadShared); the ordered ones
# (descriptor.memory_order) count as reads, stores included, as atomics do.
_READS = (Load, Atomic, CoopLoad, OrderedAtomic, OrderedLoad, OrderedStore)
