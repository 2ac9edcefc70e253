"""Load prebuilt kernels and dispatch them through wgpu (WGSL), Vulkan (SPIR-V) or the CPU
reference (.kdesc: no GPU driver needed).

    with open_bundle("dist/kernels.vyrebundle") as bundle:    # a Mapping: id -> Kernel
        y = bundle["saxpy"](x=x, y=y, a=2.0).array("y")       # numpy in, numpy out
    kernel = load_kernel(meta, wgsl=text)                     # or spirv=..., backend="vulkan"

Imports only numpy, blake3 (through the bundle reader), vyre_build.bundle/.errors/.files/
.artifacts/.targets/.backends/.features and the backend in use (the cpu one:
vyre_build.descriptor and .reference); never the compiler (but once per environment, to
build the library that `library.*` uses without a bundle: library/bundle.py). Backends are
registered in vyre_build.core.backends; which: the `backend` argument, else env VYRE_BACKEND,
else "wgpu" (the first registered). Any thread may use a device. Before a GPU backend loads
its driver, an unset or unusable XDG_RUNTIME_DIR is pointed at a private temporary folder
(Mesa prints an error per driver load without one). Guide: docs/runtime.md.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Union

from vyre_build.core.backends import BACKENDS, Backend
from vyre_build.bundle.metadata import KernelMeta
from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.core.errors import DeviceError, DispatchError, KernelAssertion, PipelineCacheWarning
from vyre_build.core.targets import KDESC, SPIRV, WGSL
from vyre_build.runtime.device import DEFAULT_DEVICES, Batch, Device, DeviceBuffer
from vyre_build.runtime.bundles import Bundle, KernelNotFound, Warmed
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

# get_device keywords a device takes only where its backend lists them (others ignore
# pipeline_cache=): what a device of another backend has instead, for the error.
_OWN_KEYWORDS = {
    "subgroup_size": "'s subgroup size is its driver's",
    "max_steps": " has no step budget",
}
# An adapter: an index into list_adapters, a substring of a description, None for the
# default, or (wgpu) an application's GPUAdapter or GPUDevice.
Adapter = Union[int, str, None, Any]
_REGISTRY = threading.Lock()


def _backend_name(backend: str | None) -> str:
    name = backend or os.environ.get("VYRE_BACKEND") or BACKENDS.default.name
    if name not in BACKENDS:
        where = "backend" if backend else "VYRE_BACKEND"
        raise DeviceError(f"unknown {where} {name!r}; choose one of {', '.join(BACKENDS)}")
    return name


def _backend(name: str) -> Backend:
    # Lazy: the GPU stack is imported only when a device of that backend is asked for.
    backend = BACKENDS[name]
    if backend.gpu:
        _runtime_dir_for_drivers()
    try:
        backend.module()
    except ImportError as exc:
        raise DeviceError(f"the {name} backend needs {backend.needs}: {exc}") from exc
    return backend


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


def _foreign_owner(value: object) -> Backend | None:
    """The backend an application's own object (a wgpu GPUAdapter or GPUDevice) is of."""
    package = type(value).__module__.split(".")[0]
    return next((b for b in BACKENDS.values() if b.foreign and b.foreign == package), None)


def list_adapters(backend: str | None = None) -> list[str]:
    """Descriptions of the adapters `backend` can use, in the order `adapter=` indexes."""
    adapters: list[str] = _backend(_backend_name(backend)).module().list_adapters()
    return adapters


def adapter_profiles(backend: str | None = None) -> list[DeviceProfile]:
    """The DeviceProfile of every adapter of `backend`, in list_adapters' order, as a
    device made on it would have (no device is created)."""
    profiles: list[DeviceProfile] = _backend(_backend_name(backend)).module().adapter_profiles()
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
    given = {
        "pipeline_cache": pipeline_cache,
        "subgroup_size": subgroup_size,
        "max_steps": max_steps,
    }
    owner = _foreign_owner(adapter)
    if owner is not None:
        if backend not in (None, owner.name):
            raise DeviceError(
                f"a {owner.name} {type(adapter).__name__} needs backend='{owner.name}', "
                f"not {backend!r}"
            )
    chosen = BACKENDS[owner.name if owner is not None else _backend_name(backend)]
    for keyword, instead in _OWN_KEYWORDS.items():
        if given[keyword] is not None and keyword not in chosen.keywords:
            takers = [b.name for b in BACKENDS.values() if keyword in b.keywords]
            raise DeviceError(
                f"{keyword}= is for the {' or '.join(takers)} backend; a {chosen.name} "
                f"device{instead}"
            )
    keywords = {k: given[k] for k in chosen.keywords}
    if owner is not None:
        key: tuple[str, object] = (owner.name, id(adapter))
    else:
        key = (_backend(chosen.name) if chosen.key else chosen).device_key(adapter, keywords)
    with _REGISTRY:
        found = DEFAULT_DEVICES.get(key)
        if found is None:
            make = _backend(chosen.name).device_class()
            if owner is not None and type(adapter).__name__ == owner.foreign_device:
                found = make(device=adapter)
            else:
                found = make(adapter, **keywords)
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
    if _foreign_owner(device) is not None:
        return get_device(backend, device)
    foreign = "".join(
        f" or a {b.foreign} {b.foreign_device}/{b.foreign_adapter}"
        for b in BACKENDS.values()
        if b.foreign
    )
    raise DeviceError(f"device= must be a vyre_build Device{foreign}, got {type(device).__name__}")


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
    target = BACKENDS[dev.backend].artifact  # its code's keyword is the target's name
    code = {WGSL.name: wgsl, SPIRV.name: spirv, KDESC.name: kdesc}.get(target.name)
    if code is None:
        raise DispatchError(
            f"Kernel {checked.id!r}: the {dev.backend} backend needs {target.name}="
        )
    problem = target.code_problem(code)
    if problem is not None:
        raise DispatchError(f"Kernel {checked.id!r}: {problem}")
    kernel = Kernel(dev, checked, code if isinstance(code, str) else bytes(code))
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
    the .vyrebundle at `path`, opened lazily: the header and the manifest's kernel ids
    now, a kernel's artifact index, metadata and shader on its first use, its pipeline on
    its first call or `warm()`.

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
