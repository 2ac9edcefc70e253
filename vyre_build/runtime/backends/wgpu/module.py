"""WGSL shader modules for the wgpu backend without naga's bounds checks.

wgpu (through naga) wraps every buffer, workgroup-array and local-array access of a WGSL
module in its own bounds check, because WGSL from an arbitrary author may index past an
end. Ours may not: both emitters write the legal form of the descriptor
(descriptor.legalize, docs/descriptor-conventions.md), in which every access is in bounds
by construction (an out-of-range load is a clamped index and a select that gives 0, an
out-of-range store a write under a branch), so naga's checks only repeat ours, in the
innermost loops of every kernel (a matmul's shared-memory reads). The Vulkan backend runs
the same accesses on SPIR-V with no further check.

`create_module` asks wgpu-native for the module through
`wgpuDeviceCreateShaderModuleTrusted` with naga's runtime checks limited to loop bounding
(a loop that never ends stays bounded, as WebGPU promises), and without even that where
every loop of the module provably ends (backends/wgpu/loops.py: counted loops only), where
the wgpu-py in use exposes it; otherwise, or for anything but WGSL text, through the ordinary
`create_shader_module` with every check (also for a device that is not wgpu-py's native
GPUDevice). `VYRE_WGPU_CHECKED=1` keeps naga's checks (to compare; read once per process,
at the first module). The module behaves as wgpu-py's own (the same class, errors raised
as GPUError).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from vyre_build.core.errors import DeviceError
from vyre_build.runtime.backends.wgpu.loops import ends

# naga's runtime checks the trusted call keeps for a module whose loops are not proven to
# end (loops.ends): loop bounding (a loop that never ends stays bounded, as WebGPU
# promises); a module proven to end gets "None" (runtime_checks). tools/naga_spirv/
# capture.py replaces runtime_checks in its own process, to measure what the bounding
# costs; the runtime never changes either.
RUNTIME_CHECKS = "ForceLoopBounding"

# the wgpu-py internals the trusted call needs (wgpu.backends.wgpu_native._api)
_NEEDED = (
    "ffi",
    "lib",
    "libf",
    "new_struct_p",
    "to_c_string_view",
    "GPUDevice",
    "GPUShaderModule",
)


@lru_cache(maxsize=1)
def _native() -> Any:
    """wgpu-py's wgpu-native module where it offers the trusted creation, else None."""
    if os.environ.get("VYRE_WGPU_CHECKED") == "1":
        return None
    try:
        from wgpu.backends.wgpu_native import _api
    except ImportError:
        return None
    if not all(hasattr(_api, name) for name in _NEEDED):
        return None
    lib = _api.lib
    wanted = ("wgpuDeviceCreateShaderModuleTrusted", "WGPUShaderRuntimeChecks_ForceLoopBounding")
    if not all(hasattr(lib, name) for name in wanted):
        return None
    if not hasattr(_api.libf, "wgpuDeviceCreateShaderModuleTrusted"):
        return None
    return _api


def runtime_checks(code: str) -> str:
    """The naga runtime checks the trusted call asks for WGSL `code`: none where every
    loop provably ends (loops.ends), else RUNTIME_CHECKS."""
    return "None" if ends(code) else RUNTIME_CHECKS


def trusted() -> bool:
    """Whether `create_module` leaves out naga's bounds checks here."""
    return _native() is not None


def create_module(device: Any, label: str, code: str | bytes) -> Any:
    """A shader module of `code` on wgpu-py device `device`: WGSL text without naga's bounds
    checks where wgpu-native offers that (module docstring), else with them."""
    api = _native()
    native = getattr(device, "_internal", None) if api is not None else None
    if native is None or not isinstance(device, api.GPUDevice) or not isinstance(code, str):
        return device.create_shader_module(label=label, code=code)
    ffi, lib = api.ffi, api.lib
    source = api.new_struct_p("WGPUShaderSourceWGSL *", code=api.to_c_string_view(code))
    source[0].chain.next = ffi.NULL
    source[0].chain.sType = lib.WGPUSType_ShaderSourceWGSL
    chained = ffi.cast("WGPUChainedStruct *", source)  # (`source` keeps the memory)
    descriptor = api.new_struct_p(
        "WGPUShaderModuleDescriptor *",
        nextInChain=chained,
        label=api.to_c_string_view(label),
    )
    checks = getattr(lib, "WGPUShaderRuntimeChecks_" + runtime_checks(code))
    handle = api.libf.wgpuDeviceCreateShaderModuleTrusted(native, descriptor, checks)
    if handle == ffi.NULL:
        raise DeviceError(f"Kernel {label!r}: wgpu-native made no shader module of its WGSL")
    return api.GPUShaderModule(label, handle, device)
