"""WGSL emitter: a validated `KernelDescriptor` -> WGSL source text.

Both emitters write the legal form of the descriptor (`descriptor.legalize`: the pinned
semantics as ops of the descriptor). Laid out like the SPIR-V emitter: this module
assembles the module (header, declarations, helpers, entry point); `function` walks the
bodies; `values` holds one template per row of the legal form; `memory` the slots, loads,
stores and atomics (in bounds in the legal form); `control` the structured control flow.

Guarantees: the text is a pure function of the descriptor (no dict/set-order, hash-seed,
time or path dependence), so `emit_wgsl(decode(encode(d))) == emit_wgsl(d)`; f32 literals
keep their exact bit pattern. A descriptor that does not validate raises
`DescriptorFormatError`; a validated one fails only where a row has no WGSL rule (`EmitError`).
"""

from __future__ import annotations

import json

from vyre_build.descriptor import DescriptorInfo, KernelDescriptor, validate
from vyre_build.descriptor.legalize import legalize
from vyre_build.emit.wgsl.debug import debug_declarations
from vyre_build.emit.wgsl.function import FunctionWriter
from vyre_build.emit.wgsl.helpers import HELPER_CALL, HELPERS
from vyre_build.core.errors import EmitError
from vyre_build.core.features import BF16, COOPERATIVE_MATRIX

__all__ = ["WORKGROUP_BASE", "emit_target", "emit_wgsl"]

# The base workgroup of a split dispatch's piece (docs/runtime.md, "Grids"): a plain
# constant, 0 in the artifact; the wgpu runtime makes a piece's module with this line
# spelling its base (runtime/kernel.py: the same line). Not an override: naga evaluates
# every constant expression of a module with overrides at pipeline creation and refuses
# valid kernels (a signed shift of literals past the sign bit, "<< operation overflowed").
WORKGROUP_BASE = "const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);"


def emit_wgsl(
    desc: KernelDescriptor,
    info: DescriptorInfo | None = None,
    *,
    entries: tuple[tuple[str, KernelDescriptor, DescriptorInfo], ...] = (),
    notes: dict[int, str] | None = None,
) -> str:
    """Return the WGSL module for `desc` (entry point `main`).

    Arguments:
        desc: the descriptor.
        info: its `validate(desc)` result, when the caller has it already.
        entries: more entry points of the same module, as (name, descriptor, info): the
            coarse entry of descriptor.coarsen. Their bindings alias `desc`'s by number.
        notes: comment lines ("// ...") to write before ops of `desc`, by id(KernelOp)
            (vyre_build.commands.listing: the source line of each statement); none in artifacts.
    Raises:
        EmitError for a kernel with cooperative matrices or bf16 values (WGSL has neither).
    """
    info = info if info is not None else validate(desc)
    if COOPERATIVE_MATRIX in info.features:
        raise EmitError(
            f"WGSL emitter: kernel {desc.id!r} needs cooperative matrices: SPIR-V only "
            "(emit SPIR-V, and dispatch it through Vulkan)"
        )
    if BF16 in info.features:
        raise EmitError(
            f"WGSL emitter: kernel {desc.id!r} uses bf16, a type WGSL does not have: SPIR-V "
            "only (emit SPIR-V, and dispatch it through Vulkan)"
        )
    legal = legalize(desc, info)  # the pinned rules as ops: every op below is one operation
    writers = [("main", FunctionWriter(legal.desc, legal.info, notes=legal.notes(notes)))]
    for name, d, i in entries:
        entry = legalize(d, i)
        writers.append((name, FunctionWriter(entry.desc, entry.info, prefix=f"_{name}_")))
    written = [(name, w.desc.workgroup_size, *w.write(), w.inputs) for name, w in writers]
    decls = [line for _, _, d, _, _ in written for line in d]
    used = set().union(*(w.helpers for _, w in writers))
    header = (
        f"// vyre_build WGSL for kernel {json.dumps(desc.id)}; generated from "
        "its descriptor, do not edit."
    )
    out = [header, ""]
    if any("f16" in w.info.features for _, w in writers):
        out += ["enable f16;", ""]
    out += [WORKGROUP_BASE, ""]
    out += decls
    if info.debug_binding is not None:  # a debug build (emit/wgsl/debug.py)
        out += debug_declarations(info.debug_binding)
    out += [h + "\n" for h in _helpers(used)]
    for k, (name, (wx, wy, wz), _, lines, inputs) in enumerate(written):
        if k:
            out.append("")
        out.append(f"@compute @workgroup_size({wx}, {wy}, {wz})")
        out.append(
            f"fn {name}(@builtin(global_invocation_id) _gid: vec3<u32>, "
            "@builtin(local_invocation_id) lid: vec3<u32>, "
            "@builtin(workgroup_id) _wid: vec3<u32>, "
            f"@builtin(num_workgroups) nwg: vec3<u32>{_subgroup_inputs(inputs)}) {{"
        )
        out += _based_ids((wx, wy, wz))
        out += lines
        out.append("}")
    return "\n".join(out) + "\n"


def _based_ids(size: tuple[int, int, int]) -> list[str]:
    """The entry's `wid` and `gid`: the builtins plus the split-dispatch base workgroup."""
    wx, wy, wz = size
    return [
        "    let wid: vec3<u32> = _wid + vyre_wg_base;",
        f"    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>({wx}u, {wy}u, {wz}u);",
    ]


def _subgroup_inputs(inputs: set[str]) -> str:
    """The entry point's subgroup builtin parameters, only those the body reads."""
    spelled = {
        "sgid": "subgroup_invocation_id",
        "sgsz": "subgroup_size",
        "sgix": "subgroup_id",
    }
    return "".join(f", @builtin({spelled[n]}) {n}: u32" for n in sorted(inputs))


def _helpers(used: set[str]) -> list[str]:
    """The helper functions `used` names and those they call, transitively, in name order."""
    wanted: set[str] = set()
    todo = set(used)
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo |= set(HELPER_CALL.findall(HELPERS[name]))
    return [HELPERS[n] for n in sorted(wanted)]


def emit_target(desc: KernelDescriptor, info, options, entries) -> bytes:
    """The WGSL target's emitter (vyre_build.core.targets): the module as UTF-8."""
    return emit_wgsl(desc, info, entries=entries).encode("utf-8")
