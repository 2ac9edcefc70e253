"""Load prebuilt kernels and dispatch them through wgpu (WGSL), Vulkan (SPIR-V) or the CPU
reference (.kdesc: no GPU driver needed).

    with open_bundle("dist/kernels.vyrebundle") as bundle:    # a Mapping: id -> Kernel
        y = bundle["saxpy"](x=x, y=y, a=2.0).array("y")       # numpy in, numpy out
    kernel = load_kernel(meta, wgsl=text)                     # or spirv=..., backend="vulkan"

Imports only numpy, blake3 (through the bundle reader), vyre_build.bundle/.errors/.files/
.artifacts/.features and the backend in use (the cpu one: vyre_build.descriptor and
.reference); never the compiler (but once per environment, to build the library that
`library.*` uses without a bundle: library_bundle.py). Backend: the `backend` argument,
else env VYRE_BACKEND, else "wgpu". Any thread may use a device. Before a GPU backend loads
its driver, an unset or unusable XDG_RUNTIME_DIR is pointed at a private temporary folder
(Mesa prints an error per driver load without one). Guide: docs/runtime.md.
"""

from __future__ import annotations

import importlib
import os
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any, Union

from vyre_build.bundle.metadata import KernelMeta, check_metadata
from vyre_build.core.errors import DeviceError, DispatchError, KernelAssertion, PipelineCacheWarning
from vyre_build.runtime.buffers import Batch, DeviceBuffer
from vyre_build.runtime.bundles import Bundle, KernelNotFound, Warmed
from vyre_build.runtime.device import DEFAULT_DEVICES, Device
from vyre_build.runtime.kernel import CallResult, Kernel, ResultNotFound
from vyre_build.runtime.profile import CooperativeMatrixType, DeviceProfile

if TYPE_CHECKING:
    from vyre_build.bundle.reader import BundleReader

__all__ = [
    "BACKENDS",
    "Batch",
    "Bundle",
    "CallResult",
    "CooperativeMatrixType",
    "Device",
    "DeviceBuffer",
    "DeviceProfile",
    "Kernel",
    "KernelAssertion",
    "KernelNotFound",
    "PipelineCacheWarning",
    "ResultNotFound",
    "Warmed",
    "adapter_profiles",
    "get_device",
    "list_adapters",
    "load_kernel",
    "open_bundle",
]

BACKENDS = ("wgpu", "vulkan", "cpu")  # in the order they are listed
# An adapter: an index into list_adapters, a substring of a description, None for the
# default, or (wgpu) an application's GPUAdapter or GPUDevice.
Adapter = Union[int, str, None, Any]
_REGISTRY = threading.Lock()


def _backend_name(backend: str | None) -> str:
    name = backend or os.environ.get("VYRE_BACKEND") or "wgpu"
    if name not in BACKENDS:
        where = "backend" if backend else "VYRE_BACKEND"
        raise DeviceError(f"unknown {where} {name!r}; choose one of {', '.join(BACKENDS)}")
    return name


def _runtime_dir_for_drivers() -> None:
    """Give the GPU drivers a usable XDG_RUNTIME_DIR before they load: where it is unset,
    empty, relative or not an existing folder, set it to a new private (0700) temporary
    folder, removed at exit. Mesa's loaders print "XDG_RUNTIME_DIR is invalid or not set
    in the environment" on every driver load otherwise (containers, CI, ssh sessions)."""
    current = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(current) and os.path.isdir(current):
        return
    import atexit
    import shutil
    import tempfile

    private = tempfile.mkdtemp(prefix="vyre-xdg-")  # mode 0700, owned by this user
    atexit.register(shutil.rmtree, private, ignore_errors=True)
    os.environ["XDG_RUNTIME_DIR"] = private


# Each backend's module under vyre_build.runtime.backends (imported by name, on first use).
_BACKEND_MODULES = {"wgpu": "wgpu", "vulkan": "vulkan.device", "cpu": "cpu"}


def _module(name: str) -> ModuleType:
    # Lazy: the GPU stack is imported only when a device of that backend is asked for.
    if name != "cpu":
        _runtime_dir_for_drivers()
    try:
        return importlib.import_module(f"vyre_build.runtime.backends.{_BACKEND_MODULES[name]}")
    except ImportError as exc:
        need = (
            "vyre_build.reference and vyre_build.descriptor"
            if name == "cpu"
            else f"the '{name}' Python package (pip install {name})"
        )
        raise DeviceError(f"the {name} backend needs {need}: {exc}") from exc


def _is_wgpu_object(value: object) -> bool:
    return type(value).__module__.split(".")[0] == "wgpu"


def list_adapters(backend: str | None = None) -> list[str]:
    """Descriptions of the adapters `backend` can use, in the order `adapter=` indexes."""
    adapters: list[str] = _module(_backend_name(backend)).list_adapters()
    return adapters


def adapter_profiles(backend: str | None = None) -> list[DeviceProfile]:
    """The DeviceProfile of every adapter of `backend`, in list_adapters' order, as a
    device made on it would have (no device is created)."""
    profiles: list[DeviceProfile] = _module(_backend_name(backend)).adapter_profiles()
    return profiles


def get_device(
    backend: str | None = None,
    adapter: Adapter = None,
    *,
    pipeline_cache: str | os.PathLike[str] | bool | None = None,
    subgroup_size: int | None = None,
    max_steps: int | None = None,
) -> Device:
    """The Device of `backend` on `adapter`, created once and shared.

    Arguments:
        backend: "wgpu", "vulkan" or "cpu" (default: $VYRE_BACKEND, else "wgpu").
        adapter: an index into list_adapters, a case-insensitive substring of a
            description, None for the default, or an application's own wgpu GPUAdapter
            or GPUDevice (the backend is then wgpu; a GPUDevice is used as it is).
        pipeline_cache: Vulkan's persisted pipeline cache directory, False for none, or
            None for $VYRE_PIPELINE_CACHE, else the user cache directory.
        subgroup_size: the cpu backend's lanes per subgroup (a power of two from 1 to
            128; default $VYRE_CPU_SUBGROUP_SIZE, else 32); a GPU's is its driver's.
        max_steps: the cpu backend's step budget per dispatch (loop iterations summed over
            invocations; default $VYRE_CPU_MAX_STEPS, else none): past it, DispatchError.
    Returns:
        The shared Device (the same one for the same arguments, until it is closed).
    """
    if _is_wgpu_object(adapter):
        if backend not in (None, "wgpu"):
            raise DeviceError(
                f"a wgpu {type(adapter).__name__} needs backend='wgpu', not {backend!r}"
            )
        key: tuple[str, object] = ("wgpu", id(adapter))
    else:
        key = (_backend_name(backend), (adapter, pipeline_cache, subgroup_size))
    if subgroup_size is not None and key[0] != "cpu":
        raise DeviceError(
            f"subgroup_size= is for the cpu backend; a {key[0]} device's subgroup size "
            "is its driver's"
        )
    if max_steps is not None and key[0] != "cpu":
        raise DeviceError(
            f"max_steps= is for the cpu backend; a {key[0]} device has no step budget"
        )
    if key[0] == "cpu":  # the values in effect, so that a changed $VYRE_CPU_* counts
        cpu = _module("cpu")
        key = ("cpu", (adapter, cpu.subgroup_size_of(subgroup_size), cpu.max_steps_of(max_steps)))
    with _REGISTRY:
        found = DEFAULT_DEVICES.get(key)
        if found is None:
            mod = _module(key[0])
            if key[0] == "cpu":
                found = mod.CpuDevice(adapter, subgroup_size=subgroup_size, max_steps=max_steps)
            elif key[0] == "vulkan":
                found = mod.VulkanDevice(adapter, pipeline_cache=pipeline_cache)
            elif _is_wgpu_object(adapter) and type(adapter).__name__ == "GPUDevice":
                found = mod.WgpuDevice(device=adapter)
            else:
                found = mod.WgpuDevice(adapter)
            DEFAULT_DEVICES[key] = found
        device: Device = found
    return device


def _as_device(device: object, backend: str | None) -> Device:
    # A Device as given, or the Device of an application's wgpu GPUDevice/GPUAdapter.
    if isinstance(device, Device):
        if backend is not None and backend != device.backend:
            raise DispatchError(
                f"backend={backend!r} but the device given is a {device.backend} device"
            )
        return device
    if _is_wgpu_object(device):
        return get_device(backend, device)
    raise DeviceError(
        f"device= must be a vyre_build Device or a wgpu GPUDevice/GPUAdapter, got "
        f"{type(device).__name__}"
    )


def load_kernel(
    meta: dict[str, Any] | KernelMeta,
    *,
    wgsl: str | None = None,
    spirv: bytes | None = None,
    kdesc: bytes | None = None,
    backend: str | None = None,
    device: Device | Any = None,
) -> Kernel:
    """A callable Kernel, its pipeline already created (a refused shader fails here).

    Arguments:
        meta: its metadata record (docs/descriptor-conventions.md), checked here.
        wgsl, spirv, kdesc: the code of the backend in use (WGSL text, SPIR-V bytes, or
            for the cpu backend the kernel descriptor's .kdesc bytes).
        backend: default `device`'s backend, else $VYRE_BACKEND, else "wgpu".
        device: a Device (or an application's wgpu GPUDevice); default `backend`'s.
    """
    checked = meta if isinstance(meta, KernelMeta) else check_metadata(meta, _meta_where(meta))
    dev = get_device(backend) if device is None else _as_device(device, backend)
    dev.check_kernel(checked)  # a kernel the device cannot run is refused before its code
    given = {"wgpu": ("wgsl=", wgsl), "vulkan": ("spirv=", spirv), "cpu": ("kdesc=", kdesc)}
    need, code = given[dev.backend]
    if code is None:
        raise DispatchError(f"Kernel {checked.id!r}: the {dev.backend} backend needs {need}")
    if dev.backend == "cpu":
        if not isinstance(code, (bytes, bytearray, memoryview)):
            raise DispatchError(
                f"Kernel {checked.id!r}: kdesc= must be the bytes of a .kdesc, got "
                f"{type(code).__name__}"
            )
        code = bytes(code)
    elif dev.backend == "vulkan":
        if (
            not isinstance(code, (bytes, bytearray, memoryview))
            or len(code) % 4
            or bytes(code[:4]) != b"\x03\x02\x23\x07"
        ):
            raise DispatchError(
                f"Kernel {checked.id!r}: the given spirv= does not look like a "
                "SPIR-V module (little-endian, magic 0x07230203)"
            )
        code = bytes(code)
    elif not isinstance(code, str):
        raise DispatchError(f"Kernel {checked.id!r}: wgsl= must be str, got {type(code).__name__}")
    kernel = Kernel(dev, checked, code)
    kernel.warm()
    return kernel


def _meta_where(meta: object) -> str:
    name = meta.get("id") or meta.get("name") if isinstance(meta, dict) else None
    return f"kernel {name!r}" if isinstance(name, str) else "kernel"


def open_bundle(
    path: str | os.PathLike[str],
    *,
    backend: str | None = None,
    device: Device | Any = None,
    trusted_keys: Any = None,
) -> Bundle:
    """The Bundle (a context manager and a read-only Mapping of kernel id -> Kernel) of
    the .vyrebundle at `path`, opened lazily: header and manifest now, a kernel's
    metadata and shader on its first use, its pipeline on its first call or `warm()`.

    Arguments:
        backend: the backend of the default device (see get_device).
        device: a Device, or an application's wgpu GPUDevice/GPUAdapter.
        trusted_keys: public key files (or PublicKeys) of which one must have signed the
            bundle; default $VYRE_TRUSTED_KEYS (see read_bundle); False: no check.
    """
    from vyre_build.bundle import read_bundle

    if device is None:
        name = _backend_name(backend)  # refuse a bad backend name now, not at first use
        dev: Device | Any = lambda: get_device(name)  # noqa: E731 - made on first use
    else:
        dev = _as_device(device, backend)
    reader: BundleReader = read_bundle(path, trusted_keys=trusted_keys)
    return Bundle(reader, dev)
