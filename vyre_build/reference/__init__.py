"""The CPU reference backend: a KernelDescriptor executed with the pinned semantics.

It reads the same contract the emitters read (`descriptor.validate` -> DescriptorInfo)
and is the judge every GPU path is compared with (tools/conformance.py), and the runtime
backend for machines with no GPU driver (`backend="cpu"`, which runs a bundle's `.kdesc`).

    outputs = execute(desc, {"x": x, "y": y}, {"a": 2.0}, workgroups=(4, 1, 1))

Semantics: exactly docs/descriptor-conventions.md: wrapping integers, shift amounts mod
32, x / 0 == x and x % 0 == 0 (also i32::MIN / -1), out-of-bounds loads 0 and stores
dropped, saturating float -> int casts with NaN -> 0, atomics, shared memory and barriers,
loops with break/continue, early return, vectors, subgroups, cooperative matrices
(reference/matrices.py). Floats are IEEE f32, rounded per op.

Where a GPU may legitimately differ (and the conformance runner allows for it):
- fused multiply-add: `fma` is computed here as a fused op would (the f32 product is exact in
  f64; the sum is rounded to f64, then to f32); a device may not fuse (GLSL.std.450 Fma
  and WGSL allow either; lavapipe does not), which rounds a * b first: the results then
  differ by up to half an ULP of a * b, which near cancellation is any number of ULPs of
  the result (an absolute bound, not a relative one);
- transcendentals (exp, log, sin, cos, tan, tanh, pow-like ops, inverseSqrt): numpy's
  correctly rounded-ish f32 results against the device's few-ULP ones;
- min/max with a NaN operand (backend-defined), and denormals (some devices flush them);
- float `%` (never emitted by the frontend): `fmod` here, `a - b * trunc(a / b)` in WGSL;
- the order atomics apply in within one op (lane order here): only the old values a
  kernel reads back can show it, and they are racy on any device; likewise the order of
  the iterations of a contended retry loop, which the reference splits (loops.py) when
  lockstep would let one lane per cell win each iteration.

Strict mode: `execute(..., strict=True)` runs the same semantics but raises DispatchError
where a lane executing an op gives it an operand outside the op's defined domain (the
operands the pinned rules above fix up: reference/strict.py has the list), naming the op,
the lane and the value: the check of a legal form (`descriptor.legalize`), where no op may
get one.

Step budget: `max_steps` bounds a dispatch's loop iterations summed over invocations
(DispatchError past it), a watchdog for kernels that may never end.
"""

from __future__ import annotations

import numpy as np

from vyre_build.descriptor import DescriptorInfo, KernelDescriptor, validate
from vyre_build.descriptor.types import TYPES
from vyre_build.core.errors import DispatchError
from vyre_build.descriptor.matrices import uses_matrices
from vyre_build.reference.machine import Budget, Machine
from vyre_build.reference.matrices import CHUNK_LANES as COOP_CHUNK_LANES
from vyre_build.reference.values import dtype_of

__all__ = ["execute", "CHUNK_LANES"]

CHUNK_LANES = 1 << 20  # lanes per pass: bounds memory; workgroups never straddle a chunk


def execute(
    desc: KernelDescriptor,
    buffers: dict[str, np.ndarray],
    scalars: dict[str, object],
    workgroups: tuple[int, int, int],
    *,
    info: DescriptorInfo | None = None,
    subgroup_size: int = 32,
    max_steps: int | None = None,
    debug: list | None = None,
    strict: bool = False,
) -> dict[str, np.ndarray]:
    """Run `desc` over `workgroups` (x, y, z) workgroup counts on the CPU.

    Arguments:
        desc: the descriptor (validated here unless `info` is given).
        buffers: every storage buffer by name, as host arrays (a vec4f buffer is a float32
            array of 4*n values, any shape); they are not modified.
        scalars: every scalar parameter by name (int, float or bool).
        workgroups: workgroup counts per axis.
        info: `validate(desc)`, when the caller has it.
        subgroup_size: lanes per subgroup (kernels must not assume one: 8 on lavapipe,
            32 on NVIDIA; compare with a device using its size).
        max_steps: the step budget of the dispatch (a step is one loop iteration of one
            invocation, nested loops' iterations each counted; a kernel with no loop takes
            none): past it, DispatchError (the buffers given are left as they were).
            None: no budget (a loop still ends after MAX_LOOP_ITERATIONS iterations).
        debug: a list that receives a debug build's reports, as arrays of records of u32
            words (reference/debug.py; `vyre_build.runtime.debug` formats them).
        strict: check every op with a defined domain (reference/strict.py) before it runs:
            DispatchError naming the op, the lane and the value where a lane executing it
            gives an operand outside (a divisor 0, an amount >= 32, clz/ctz of 0, a float
            -> int cast of NaN or out of range, an access out of bounds). For a legal
            form (`descriptor.legalize`), which promises no such operand; off: the pinned
            rules, at full speed.
    Returns:
        {name: array} with the final contents of every storage buffer, in the shape and
        dtype each was given in.
    """
    if max_steps is not None and (type(max_steps) is not int or max_steps < 1):
        raise DispatchError(f"max_steps must be a positive int or None, got {max_steps!r}")
    info = info if info is not None else validate(desc)
    grid = tuple(int(g) for g in workgroups)
    if len(grid) != 3 or min(grid) < 0:
        raise DispatchError(
            f"Kernel {desc.id!r}: workgroups must be 3 counts >= 0, got {workgroups!r}"
        )
    arrays, given = {}, {}
    for s in desc.slots:
        if s.memory_class != "Global":
            continue
        if s.name not in buffers:
            raise DispatchError(f"Kernel {desc.id!r}: no buffer given for {s.name!r}")
        ty = info.slot_types[s.slot]
        host = np.asarray(buffers[s.name])
        if host.dtype != dtype_of(ty):
            raise DispatchError(
                f"Kernel {desc.id!r}: buffer {s.name!r} holds {ty}: give a {dtype_of(ty)} "
                f"array, not {host.dtype}"
            )
        given[s.name] = host
        n = TYPES[ty].count
        flat = np.array(host, order="C").reshape(-1)
        arrays[s.slot] = flat.reshape(-1, n) if n > 1 else flat
    uniforms = {}
    if info.uniform is not None:
        for m in info.uniform.members:
            if m.name not in scalars:
                raise DispatchError(f"Kernel {desc.id!r}: no value given for scalar {m.name!r}")
            uniforms[m.slot] = np.asarray(scalars[m.name]).astype(dtype_of(m.type))
    total = grid[0] * grid[1] * grid[2]
    wx, wy, wz = desc.workgroup_size
    lanes = COOP_CHUNK_LANES if uses_matrices(info.types.values()) else CHUNK_LANES
    per_chunk = max(1, lanes // (wx * wy * wz))
    budget = Budget(desc.id, max_steps)
    for first in range(0, total, per_chunk):
        count = min(per_chunk, total - first)
        machine = Machine(
            desc, info, arrays, uniforms, grid, first, count, subgroup_size, budget, strict
        )
        machine.debug = debug
        machine.run()
    return {
        s.name: arrays[s.slot].reshape(given[s.name].shape)
        for s in desc.slots
        if s.memory_class == "Global"
    }
