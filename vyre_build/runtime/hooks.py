"""What a backend sets and implements, as the base of every Device: the class attributes a
backend sets (`backend`, `name`, `profile` and the limits), the public methods it may
override (with their defaults), and the hooks below; nothing else is backend-specific. A
backend subclasses `Device` (device.py), whose bases (binding_sets.py's BindingSets, under
pipelines.py's and batching.py's) stand on this one; `wrap` and `adopt`, which a backend
may override too, are device.py's (they return a DeviceBuffer).

    _alloc(nbytes, data) -> handle        _upload(handle, data)    _download(handle, nbytes)
    _free(handle)                         _pipeline(meta, code, base, entry) -> pipeline
    _bind(pipeline, bound, uniform_binding, uniform) -> entry (owns its uniform buffer)
    _set_uniform(entry, uniform)          _unbind(entry)
    _submit(jobs, final)                  _wait()                  _close()

Every hook runs under the device's lock, so a backend needs no locking of its own.
"""

from __future__ import annotations

from typing import Any

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.runtime.plan import Job
from vyre_build.runtime.profile import DeviceProfile


class DeviceHooks:
    """What a backend sets and implements (the module docstring); the base of Device."""

    backend = ""
    name = ""
    profile: DeviceProfile
    max_workgroup_count: tuple[int, int, int] = (65535, 65535, 65535)
    max_buffer_bytes = 2**27
    # Whether the backend can split a dispatch past max_workgroup_count: each piece runs a
    # pipeline specialised for its base workgroup (the SPIR-V emitter's vyre_wg_base specialization constants; see Grids in docs/runtime.md).
    splits_dispatches = False
    # Whether the backend runs the coarse entry points of `meta.coarse` (the cpu one does not).
    coarse_entries = True
    timing = False
    gpu_seconds: float | None = None

    def save_pipeline_cache(self) -> bool:
        """Save the persisted pipeline cache now if pipelines were added since it was
        loaded or saved (Vulkan; also done on close and at exit); True if written."""
        return False

    def native_buffer(self, handle: Any) -> Any:
        """The backend's own buffer object of a buffer handle (DeviceBuffer.native)."""
        return handle

    def pipeline_cache_state(self) -> tuple[str | None, int]:
        """(the persisted pipeline cache file, or None where there is none; the bytes of
        it the device started with)."""
        return None, 0

    # -- backend hooks (see the module docstring) --

    def _alloc(self, nbytes: int, data: bytes | None) -> Any:
        raise NotImplementedError

    def _upload(self, handle: Any, data: bytes) -> None:
        raise NotImplementedError

    def _download(self, handle: Any, nbytes: int) -> bytes:
        raise NotImplementedError

    def _free(self, handle: Any) -> None:
        raise NotImplementedError

    def _pipeline(
        self, meta: KernelMeta, code: Any, base: tuple[int, int, int] | None, entry: str
    ) -> Any:
        raise NotImplementedError

    def _bind(
        self,
        pipeline: Any,
        bound: list[tuple[int, Any, int]],
        uniform_binding: int | None,
        uniform: bytes | None,
    ) -> Any:
        raise NotImplementedError

    def _set_uniform(self, entry: Any, uniform: bytes) -> None:
        raise NotImplementedError

    def _unbind(self, entry: Any) -> None:
        raise NotImplementedError

    def _submit(self, jobs: list[Job], final: bool) -> None:
        raise NotImplementedError

    def _wait(self) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError
