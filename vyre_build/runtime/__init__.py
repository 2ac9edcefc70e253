"""Load prebuilt kernels and dispatch them through wgpu (WGSL) or Vulkan (SPIR-V).

    kernel = load_kernel(meta, wgsl=text)                 # or spirv=..., backend="vulkan"
    out = kernel(x=x, y=y, a=2.0)                         # {"y": numpy array}
    with open_bundle("dist/kernels.vyrebundle") as b:
        b["saxpy"](x=x, y=y, a=2.0)

Imports only numpy, blake3 (through the bundle reader), vyre_build.bundle/.errors and
the backend in use; never the compiler. Backend: the `backend` argument, else env
VYRE_BACKEND, else "wgpu".
"""

from __future__ import annotations

import importlib
import os

from vyre_build.errors import BundleError, DeviceError, DispatchError
from vyre_build.runtime.device import Batch, Device, DeviceBuffer, Kernel

__all__ = [
    "Batch",
    "Bundle",
    "Device",
    "DeviceBuffer",
    "Kernel",
    "get_device",
    "list_adapters",
    "load_kernel",
    "open_bundle",
]

_ARTIFACT = {"wgpu": ".wgsl", "vulkan": ".spv"}  # per backend, in the order they are listed
_DEFAULT_DEVICES: dict = {}


def _backend_name(backend: str | None) -> str:
    name = backend or os.environ.get("VYRE_BACKEND") or "wgpu"
    if name not in _ARTIFACT:
        where = "backend" if backend else "VYRE_BACKEND"
        raise DeviceError(f"unknown {where} {name!r}; choose one of {', '.join(_ARTIFACT)}")
    return name


def _module(name: str):
    # Lazy: the GPU stack is imported only when a device of that backend is asked for.
    try:
        return importlib.import_module(f"vyre_build.runtime.{name}_backend")
    except ImportError as exc:
        raise DeviceError(
            f"the {name} backend needs the '{name}' Python package (pip install {name}): {exc}"
        ) from exc


def list_adapters(backend: str | None = None) -> list[str]:
    """Descriptions of the adapters `backend` can use, in the order `adapter=` indexes."""
    return _module(_backend_name(backend)).list_adapters()


def get_device(backend: str | None = None, adapter: int | str | None = None) -> Device:
    """The Device of `backend` ("wgpu" or "vulkan") on `adapter` (an index into
    list_adapters, a case-insensitive substring of a description, or None for the default),
    created once and shared."""
    key = (_backend_name(backend), adapter)
    if key not in _DEFAULT_DEVICES:
        mod = _module(key[0])
        _DEFAULT_DEVICES[key] = (mod.WgpuDevice if key[0] == "wgpu" else mod.VulkanDevice)(adapter)
    return _DEFAULT_DEVICES[key]


def load_kernel(
    meta: dict,
    *,
    wgsl: str | None = None,
    spirv: bytes | None = None,
    backend: str | None = None,
    device: Device | None = None,
) -> Kernel:
    """A callable Kernel (see Kernel.__call__), its pipeline already created, of `meta` (its
    metadata record, docs/descriptor-conventions.md) and `wgsl` or `spirv` (the shader of the
    backend in use). `device` defaults to `backend`'s default device, `backend` to
    `device`'s backend, else VYRE_BACKEND, else "wgpu"."""
    if device is None:
        device = get_device(backend)
    elif backend is not None and backend != device.backend:
        raise DispatchError(
            f"load_kernel: backend={backend!r} but the device given is a {device.backend} device"
        )
    code = wgsl if device.backend == "wgpu" else spirv
    if code is None:
        kid = meta.get("id") or meta.get("name") if isinstance(meta, dict) else None
        need = "wgsl=" if device.backend == "wgpu" else "spirv="
        raise DispatchError(f"Kernel {kid!r}: the {device.backend} backend needs {need}")
    return device.kernel(meta, code)


class Bundle:
    """An opened .vyrebundle (a context manager): kernels by id ("saxpy", "add.f32"), each
    read, verified and loaded on first use and kept for the bundle's lifetime."""

    def __init__(self, reader, backend: str | None, device: Device | None):
        self.reader, self._backend, self._device, self._kernels = reader, backend, device, {}
        self.ids = reader.ids  # sorted kernel ids

    @property
    def device(self) -> Device:
        """The device kernels run on, created on first use (so opening stays cheap)."""
        if self._device is None:
            self._device = get_device(self._backend)
        return self._device

    def __contains__(self, kid: str) -> bool:
        return kid in self.ids

    def __getitem__(self, kid: str) -> Kernel:
        return self.kernel(*kid.split(".", 1))

    def kernel(self, name: str, variant: str | None = None) -> Kernel:
        """The kernel `name` (and `variant`), loaded on first use."""
        kid = f"{name}.{variant}" if variant else name
        if kid not in self._kernels:
            entry, suffix = self.reader.entry(name, variant or None), _ARTIFACT[self.device.backend]
            if suffix not in entry.artifacts:
                raise BundleError(
                    f"bundle kernel {entry.id!r} has no {suffix} artifact for "
                    f"the {self.device.backend} backend"
                )
            code = self.reader.read_artifact(entry.id, suffix)
            try:
                code = code.decode("utf-8") if suffix == ".wgsl" else code
            except UnicodeDecodeError as exc:
                raise BundleError(f"bundle kernel {entry.id!r}: .wgsl is not UTF-8: {exc}") from exc
            self._kernels[kid] = self.device.kernel(entry.meta, code)
        return self._kernels[kid]

    def close(self) -> None:
        """Close the bundle file."""
        self.reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_bundle(
    path, *, backend: str | None = None, device: Device | None = None, trusted_keys=None
) -> Bundle:
    """The Bundle (a context manager) of the .vyrebundle at `path`, opened lazily (header and
    manifest only; artifacts are read and verified when a kernel is first used); kernels
    run on `device`, else `backend`'s default device. `trusted_keys` (public key files;
    default $VYRE_TRUSTED_KEYS) refuses a bundle none of them signed (see read_bundle)."""
    from vyre_build.bundle import read_bundle

    if device is None:
        _backend_name(backend)  # refuse a bad backend name now, not at first use
    return Bundle(read_bundle(path, trusted_keys=trusted_keys), backend, device)
