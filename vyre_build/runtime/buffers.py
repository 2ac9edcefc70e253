"""Device buffers and batches: what a user holds between calls (see device.py for the Device)."""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np
import numpy.typing as npt

from vyre_build.bundle.metadata import SCALAR_DTYPES
from vyre_build.core.scalars import HOST_SCALARS
from vyre_build.core.errors import DispatchError

if TYPE_CHECKING:
    from types import TracebackType

    from vyre_build.runtime.device import Device, Job, WriteBack

# The host dtype of each buffer scalar (little-endian, as devices store them), and its name.
DTYPES: dict[str, np.dtype[Any]] = {
    s.name: np.dtype(s.host).newbyteorder("<") for s in HOST_SCALARS
}
NP_NAMES = {s.name: s.host for s in HOST_SCALARS}
_Scalar = TypeVar("_Scalar", bound=np.generic)


class DeviceBuffer:
    """A storage buffer on one device: `count` elements of `dtype` ("f32", "i32", "u32",
    "f16") in `shape`, `nbytes` bytes. Read it back with `.read()`; a read-only one (access
    "r") is refused where a kernel writes. A borrowed buffer (an application's wgpu
    GPUBuffer) is never freed by the runtime."""

    def __init__(
        self,
        device: Device,
        handle: Any,
        dtype: str,
        shape: tuple[int, ...],
        access: str,
        *,
        borrowed: bool = False,
    ):
        self.device, self.handle, self.dtype = device, handle, dtype
        self.shape, self.access, self.released = shape, access, False
        self.borrowed = borrowed
        self.count = math.prod(shape)
        self.nbytes = self.count * SCALAR_DTYPES[dtype]

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        state = " released" if self.released else " borrowed" if self.borrowed else ""
        return (
            f"<DeviceBuffer {NP_NAMES[self.dtype]}{list(self.shape)} access={self.access!r}"
            f"{state} on {self.device.backend}>"
        )

    @property
    def native(self) -> Any:
        """The backend's own buffer behind this one (Device.native_buffer: a wgpu
        `GPUBuffer`, a `VkBuffer` handle, the cpu backend's numpy bytes)."""
        return self.device.native_buffer(self._live())

    @property
    def wgpu_buffer(self) -> Any:
        """The wgpu `GPUBuffer` behind this buffer (wgpu devices only)."""
        return self._native_of("wgpu")

    @property
    def vulkan_buffer(self) -> Any:
        """The `VkBuffer` handle behind this buffer (Vulkan devices only; the runtime owns
        it: see docs/runtime.md on sharing)."""
        return self._native_of("vulkan")

    def _native_of(self, backend: str) -> Any:
        if self.device.backend != backend:
            raise DispatchError(
                f"DeviceBuffer.{backend}_buffer: this is a {self.device.backend} buffer"
            )
        return self.native

    def _live(self, op: str = "") -> Any:
        # A read or write inside this thread's batch would not be ordered with its dispatches.
        if op and self.device._current_batch() is not None:
            raise DispatchError(
                f"DeviceBuffer.{op}() inside device.batch(): {op} before or "
                "after the batch (it is submitted when the `with` block ends)"
            )
        if self.released:
            raise DispatchError("DeviceBuffer was released; create a new one")
        self.device._check_open()
        return self.handle

    @overload
    def read(self) -> npt.NDArray[Any]: ...

    @overload
    def read(self, dtype: type[_Scalar]) -> npt.NDArray[_Scalar]: ...

    def read(self, dtype: type[np.generic] | None = None) -> npt.NDArray[Any]:
        """A new numpy array of the buffer's contents (waits for submitted dispatches);
        with `dtype` (np.float32, ...) typed as such, DispatchError if it is another."""
        if dtype is not None and np.dtype(dtype) != DTYPES[self.dtype]:
            raise DispatchError(
                f"DeviceBuffer.read: the buffer holds {NP_NAMES[self.dtype]}, not {np.dtype(dtype)}"
            )
        with self.device._lock:
            raw = self.device._download(self._live("read"), self.nbytes)
        flat: npt.NDArray[Any] = np.frombuffer(raw, dtype=DTYPES[self.dtype])
        shaped: npt.NDArray[Any] = flat.reshape(self.shape).copy()
        return shaped

    def write(self, array: npt.NDArray[Any]) -> None:
        """Overwrite the whole buffer with `array` (same dtype and element count)."""
        if (
            not isinstance(array, np.ndarray)
            or array.dtype != DTYPES[self.dtype]
            or array.size != self.count
        ):
            got = (
                f"{array.dtype}[{array.size}]"
                if isinstance(array, np.ndarray)
                else type(array).__name__
            )
            raise DispatchError(
                f"DeviceBuffer.write: expected a {NP_NAMES[self.dtype]} array "
                f"of {self.count} elements, got {got}"
            )
        with self.device._lock:
            self.device._upload(self._live("write"), np.ascontiguousarray(array).tobytes())

    def release(self) -> None:
        """Free the device memory now, or when the batches open on the device end."""
        if not self.released:
            self.released = True
            with self.device._lock:
                self.device._release(self.handle, self.borrowed)

    def __del__(self) -> None:
        # Collection may happen in any thread, inside the device's own critical sections:
        # hand the handle over; the next device operation frees it.
        if not getattr(self, "released", True):
            self.released = True
            try:
                self.device._garbage.append((self.handle, self.borrowed))
            except Exception:  # noqa: S110 - at interpreter shutdown: nothing left to free
                pass


class Batch:
    """Dispatches made in `with device.batch():` by the thread that opened it: submitted in
    growing chunks as they are made, waited for on exit (with an exception, only what was
    already submitted runs). Other threads' calls meanwhile go straight to the device.
    On a clean exit, each numpy array passed for a written buffer receives its result."""

    def __init__(self, device: Device):
        self.device, self.chunk = device, 1
        self.pending: list[Job] = []
        self.write_backs: list[WriteBack] = []  # in call order: a later call's result wins
        self.busy: list[int] = []  # ids of kept binding sets this batch's dispatches use
        self.oneoff: list[Any] = []  # one-off binding sets, unbound when the batch ends
        self.thread: int | None = None

    def __enter__(self) -> Batch:
        device = self.device
        with device._lock:
            device._check_open()
            if device._current_batch() is not None:
                raise DispatchError("device.batch() blocks cannot be nested")
            if self.thread is not None:
                raise DispatchError("a device.batch() object can be entered once")
            self.thread, self.chunk = threading.get_ident(), 1
            device._local.batch = self
            device._open_batches += 1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        device = self.device
        if self.thread != threading.get_ident():
            raise DispatchError(
                "device.batch() belongs to the thread that opened it; leave it in that thread"
            )
        with device._lock:
            device._local.batch = None
            try:
                device._flush(self.pending if exc_type is None else [], self)
                if exc_type is None:
                    device._write_back(self.write_backs)
            finally:
                self.pending, self.write_backs = [], []
                device._open_batches -= 1
                device._collect()
