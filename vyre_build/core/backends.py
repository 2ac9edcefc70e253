"""The runtime backends: one registered `Backend` per backend, in one table.

A backend is a name ("vulkan"), the target whose artifact it runs ("spirv": its suffix
and format come from vyre_build.core.targets) and its Device class, imported when a device is
made. `vyre_build.runtime` (get_device, load_kernel, bundles) and the CLI's --backend
choices read backends from here; adding one is its module (vyre_build/runtime/backends/)
plus one `BACKENDS.register(Backend(...))` line.

Standard library only (devices are imported when made): the CLI imports it to list its
choices without loading the runtime, and it is no part of the compiler's identity
(compiler._NOT_IDENTITY).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from vyre_build.core.targets import TARGETS, Registry, Target, _resolve

__all__ = ["BACKENDS", "Backend", "REFERENCE", "VULKAN", "WGPU"]


@dataclass(frozen=True)
class Backend:
    """One runtime backend.

    name: as `backend=`, $VYRE_BACKEND and --backend name it ("vulkan").
    target: the target whose artifact its devices run ("spirv").
    device: its Device class, or "module:Class" naming it (imported when a device is
        made); made as Class(adapter, **keywords given). Its module also gives
        list_adapters() and adapter_profiles().
    keywords: the get_device keywords its devices take besides the adapter.
    title: how help and messages name it ("Vulkan"); default: its name.
    gpu: its devices load a GPU driver (get_device prepares XDG_RUNTIME_DIR first).
    forward_progress: its devices run every workgroup on to its end whatever the device
        (the reference's schedule does): a kernel may wait on another workgroup's progress
        (the library's single-pass scan). A GPU backend leaves it to the vendor.
    needs: what it needs installed, for the error when its module does not import.
    foreign: the package whose objects an application may pass as the adapter (wgpu:
        a GPUAdapter, foreign_adapter); foreign_device: the class name of such an object
        that is a device, passed as Class(device=...) instead.
    key: (adapter, **keywords) -> the key devices are shared by, or "module:function"
        naming it (default: the adapter and the keywords as given).
    """

    name: str
    target: str
    device: type | str
    keywords: tuple[str, ...] = ()
    title: str = ""
    gpu: bool = True
    forward_progress: bool = False
    needs: str = ""
    foreign: str = ""
    foreign_adapter: str = ""
    foreign_device: str = ""
    key: Callable[..., Any] | str = ""

    def __post_init__(self) -> None:
        if not self.title:
            object.__setattr__(self, "title", self.name)

    @property
    def artifact(self) -> Target:
        """The target whose artifact it runs."""
        return TARGETS[self.target]

    @property
    def suffix(self) -> str:
        """The suffix of the artifact it runs (".spv")."""
        return self.artifact.suffix

    def module(self) -> ModuleType:
        """Its module: list_adapters(), adapter_profiles() and the Device class
        (ImportError when it, or what it needs, is missing)."""
        if isinstance(self.device, str):
            return importlib.import_module(self.device.partition(":")[0])
        return importlib.import_module(self.device.__module__)

    def device_class(self) -> Any:
        return _resolve(self.device)

    def device_key(self, adapter: Any, keywords: Mapping[str, Any]) -> tuple[str, object]:
        """The key devices made with these arguments are shared by."""
        if not self.key:
            return (self.name, (adapter, *(keywords[k] for k in self.keywords)))
        return (self.name, _resolve(self.key)(adapter, **keywords))


BACKENDS: Registry[Backend] = Registry("backend")
# In this order: listings (vyre-build devices) and the CLI's choices follow it; the first
# is the default backend (BACKENDS.default: no backend= and no $VYRE_BACKEND). Code outside
# a backend's package names none of them (tests/unit/test_import_graph.py): it reads these
# objects (WGPU, VULKAN), their capabilities, or REFERENCE, the backend that runs the
# reference (the judge `vyre-build tune` checks candidates against).
WGPU = BACKENDS.register(
    Backend(
        "wgpu",
        "wgsl",
        "vyre_build.runtime.backends.wgpu.device:WgpuDevice",
        needs="the 'wgpu' Python package (pip install wgpu)",
        foreign="wgpu",
        foreign_adapter="GPUAdapter",
        foreign_device="GPUDevice",
    )
)
VULKAN = BACKENDS.register(
    Backend(
        "vulkan",
        "spirv",
        "vyre_build.runtime.backends.vulkan.device:VulkanDevice",
        keywords=("pipeline_cache",),
        title="Vulkan",
        needs="the 'vulkan' Python package (pip install vulkan)",
    )
)
REFERENCE = BACKENDS.register(
    Backend(
        "cpu",
        "kdesc",
        "vyre_build.runtime.backends.cpu:CpuDevice",
        keywords=("subgroup_size", "max_steps"),
        gpu=False,
        forward_progress=True,
        needs="vyre_build.reference and vyre_build.descriptor",
        key="vyre_build.runtime.backends.cpu:device_key",
    )
)
