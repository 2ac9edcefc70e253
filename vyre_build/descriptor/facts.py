"""The facts computed once per descriptor (by `validate`) that the emitters and metadata read.

`DescriptorInfo` is to a descriptor what naga's ModuleInfo is to a module: every SSA
value's type, every slot's element type, which slots atomics touch, the uniform block's
layout, the values of integer literals, the range analysis's proofs (the bounds
checks and shared-memory zeroing the kernel provably does not need, keyed by op index)
and the descriptor's decoded ops (`descriptor.view`). Emitters take
`(desc, info)` and trust it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vyre_build.descriptor.codec import BindingSlot, KernelOp
from vyre_build.descriptor.ranges import Proofs
from vyre_build.descriptor.view import DescriptorView, OpView

__all__ = ["DescriptorInfo", "UniformBlock", "UniformMember", "uniform_block", "UNIFORM_ALIGN"]

UNIFORM_ALIGN = 16  # a uniform buffer's size is a multiple of this (the runtime pads)
MEMBER_SIZE = 4  # every uniform member is one 4-byte scalar (bool travels as a u32)


@dataclass(frozen=True)
class UniformMember:
    slot: int
    name: str
    type: str
    offset: int


@dataclass(frozen=True)
class UniformBlock:
    """All Uniform slots packed into one buffer at the smallest Uniform slot number."""

    binding: int
    members: tuple[UniformMember, ...]
    size: int


@dataclass(frozen=True)
class DescriptorInfo:
    types: dict[int, str]  # SSA result id -> value type ("u32", "vec4f", ...)
    slot_types: dict[int, str]  # slot number -> element value type
    atomic_slots: frozenset[int]  # slots some Atomic op targets (declared atomic)
    uniform: UniformBlock | None
    constants: dict[int, int] = field(default_factory=dict)  # integer literal id -> 32-bit value
    proofs: Proofs = field(default_factory=lambda: Proofs(frozenset(), frozenset()))
    # device features the kernel needs (vyre_build.core.features vocabulary): subgroup_*, f16, ...
    features: frozenset[str] = frozenset()
    # the debug buffer's binding when a vyre.debug.* op is present (a debug build), else None
    debug_binding: int | None = None
    # the descriptor's ops decoded once (descriptor.view): what every walker walks
    view: DescriptorView | None = field(default=None, compare=False, repr=False)

    def in_bounds(self, op: OpView | KernelOp) -> bool:
        """Whether the range analysis proved this access (a load, store, atomic or
        cooperative fragment) in range; facts are keyed by the op's view index (a raw
        KernelOp of this descriptor is looked up in `view`)."""
        if not isinstance(op, OpView):
            op = self.view.of(op)
        return op.index in self.proofs.in_bounds


def uniform_block(
    slots: tuple[BindingSlot, ...], slot_types: dict[int, str]
) -> UniformBlock | None:
    """The uniform block of `slots` (sorted by number), or None when there is no Uniform slot."""
    uniforms = [s for s in slots if s.memory_class == "Uniform"]
    if not uniforms:
        return None
    members = tuple(
        UniformMember(s.slot, s.name, slot_types[s.slot], MEMBER_SIZE * k)
        for k, s in enumerate(uniforms)
    )
    raw = MEMBER_SIZE * len(members)
    size = max(UNIFORM_ALIGN, (raw + UNIFORM_ALIGN - 1) // UNIFORM_ALIGN * UNIFORM_ALIGN)
    return UniformBlock(uniforms[0].slot, members, size)
