"""Memory scopes and orders in the WGSL emitter (a mixin of `function.FunctionWriter`).

WGSL's atomics are relaxed and it has no fence, so only the relaxed forms of
`descriptor.memory_order` have WGSL: vyre.atomic as the op's atomic builtin,
vyre.atomic.load as atomicLoad, vyre.atomic.store as atomicStore, with the bounds rules of
`memory` (a workgroup-scope atomic on a buffer is written at WGSL's storage scope, which
is wider: still a legal execution). An order, or a fence, is an EmitError; the compiler
never asks for it (the WGSL target lacks MEMORY_ORDER: vyre_build.core.targets; Target.refusal
records why such a kernel has no WGSL).
"""

from __future__ import annotations

from vyre_build.descriptor.view import Fence, OrderedAtomic, OrderedLoad


class OrderedRules:
    """vyre.atomic, vyre.atomic.load, vyre.atomic.store (relaxed); vyre.fence refused."""

    def ordered(self, op, body, depth) -> None:
        acc = op.access
        if isinstance(op, Fence) or acc.order != "relaxed":
            what = "a fence" if isinstance(op, Fence) else f"order {acc.order}"
            raise self.fail(
                op, f"WGSL has no {what}: its atomics are relaxed (emit SPIR-V for this kernel)"
            )
        if isinstance(op, OrderedAtomic):
            self.visit_atomic(op, body, depth)
        elif isinstance(op, OrderedLoad):
            self.visit_load(op, body, depth)
        else:
            self.visit_store(op, body, depth)

    visit_ordered_atomic = visit_ordered_load = visit_ordered_store = visit_fence = ordered
