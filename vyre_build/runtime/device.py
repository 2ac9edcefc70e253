"""What every backend shares: the Device (buffers, batches, binding-set reuse, dispatch,
thread safety), and the DeviceBuffer it hands out and takes, which names the Device that
owns it (hence one module: no other module of the runtime is named by this one's types).
The Device's other parts are its base classes, in modules below this one that name
neither: hooks.py (what a backend sets, and the hooks it implements), binding_sets.py (the
device's state and binding-set reuse), pipelines.py (kernel checks, pipelines, warm) and
batching.py (Batch, and dispatching a batch's work again). The Plan that Device.run
dispatches, and the pure checks and tables, are plan.py's; the checks of a kernel against
the device's profile, profile.py's. A backend subclasses `Device`, sets `backend`, `name`,
`profile` and the limits, and implements the hooks of hooks.py; nothing else is
backend-specific.
"""

from __future__ import annotations

import math
import threading
from typing import Any, TypeVar, overload

import numpy as np
import numpy.typing as npt

from vyre_build.bundle.metadata import SCALAR_DTYPES
from vyre_build.core.backends import VULKAN, WGPU
from vyre_build.core.errors import DispatchError
from vyre_build.runtime import debug
from vyre_build.runtime.batching import Again as Again
from vyre_build.runtime.batching import Batch as Batch
from vyre_build.runtime.batching import Batching, WriteBack
from vyre_build.runtime.batching import Submission as Submission
from vyre_build.runtime.pipelines import DevicePipelines
from vyre_build.runtime.plan import (
    DTYPES,
    NP_NAMES,
    host_array,
    Dispatched,
    Job,
    Plan,
    buffer_spec,
    split_dispatch,
)

_Scalar = TypeVar("_Scalar", bound=np.generic)
_Result = TypeVar("_Result", bound=dict[str, Any])
# Devices made by get_device, by (backend, adapter key): shared, dropped when closed.
DEFAULT_DEVICES: dict[tuple[str, object], Device] = {}


class Device(Batching, DevicePipelines):
    """One adapter's logical device (get one with `get_device`). Any thread may make
    buffers, call kernels and open batches on it. Calls on DeviceBuffers reuse kept binding
    sets (8 per pipeline and buffers, freed with a buffer they bind); other calls get
    one-off sets. `profile` lists the features and limits kernels are checked against.
    With `timing` set, `gpu_seconds` is the GPU time of the last call or batch (Vulkan; wgpu
    where the device has "timestamp-query"; else None): docs/runtime.md, "GPU timing"."""

    def __repr__(self) -> str:
        return f"<Device {self.backend}: {self.name}{' (closed)' if self.closed else ''}>"

    # -- public API --

    @property
    def lock(self) -> threading.RLock:
        """The lock held around every driver call of this device: hold it to use the
        backend's own objects (Vulkan queue, wgpu queue) alongside the runtime."""
        return self._lock

    def buffer(
        self,
        data: npt.NDArray[Any] | int | tuple[int, ...],
        dtype: str | None = None,
        *,
        read_only: bool = False,
    ) -> DeviceBuffer:
        """A storage buffer on this device.

        Arguments:
            data: a float32/int32/uint32/float16 array to upload, or a length or shape to
                allocate zero-filled.
            dtype: "f32", "i32", "u32", "f16" or a vector type ("vec4f": `data` then
                counts vectors); required when allocating, else it must match the array.
            read_only: refuse the buffer where a kernel writes.
        Returns:
            The DeviceBuffer (freed by `release()` or when collected).
        """
        dtype, shape, content = buffer_spec(data, dtype)
        nbytes = math.prod(shape) * SCALAR_DTYPES[dtype]
        if content is None and nbytes > self.max_buffer_bytes:  # arrays: checked when bound
            raise DispatchError(
                f"Device.buffer: {nbytes} bytes is more than the device's "
                f"storage buffer limit of {self.max_buffer_bytes} bytes"
            )
        with self._lock:
            self._check_open()
            self._collect()
            handle = self._alloc(nbytes, content)
        return DeviceBuffer(self, handle, dtype, shape, "r" if read_only else "rw")

    def wrap(
        self,
        buffer: object,
        dtype: str,
        shape: tuple[int, ...] | None = None,
        *,
        read_only: bool = False,
    ) -> DeviceBuffer:
        """A DeviceBuffer over an application's own buffer (wgpu: a GPUBuffer of this
        device with STORAGE usage), never freed by the runtime; DispatchError elsewhere."""
        raise DispatchError(
            f"Device.wrap: the {self.backend} backend does not take foreign buffers"
        )

    def adopt(self, value: object, dtype: str, access: str) -> DeviceBuffer | None:
        """A borrowed DeviceBuffer for a foreign buffer passed as an argument, None if
        `value` is none; ValueError saying why a foreign buffer does not fit."""
        return None

    def wait(self) -> None:
        """Block until every submitted dispatch has finished."""
        with self._lock:
            self._check_open()
            self._wait()

    def close(self) -> None:
        """Wait for submitted work, save the persisted pipeline cache (Vulkan), free what
        the device holds; later use raises DeviceError. Buffers still held become unusable."""
        with self._lock:
            if self.closed:
                return
            try:
                self._wait()
                self.save_pipeline_cache()
            finally:
                self.closed = True
                for key in [k for k, d in DEFAULT_DEVICES.items() if d is self]:
                    del DEFAULT_DEVICES[key]
                self._close()

    # -- dispatch --

    def run(
        self, kernel: Dispatched, plan: Plan, args: dict[str, object], into: _Result
    ) -> _Result:
        """Dispatch `plan` of `kernel`, checked for `args`; put the written buffers into
        `into` and return it (Kernel.__call__). A numpy array passed for a written buffer
        receives the result and is what `into` holds for it: now, or inside a batch when
        the batch ends (until then `into` holds the DeviceBuffer that the batch's
        dispatches write)."""
        with self._lock:
            self._check_open()
            self._collect()
            batch = self._current_batch()
            ctx = batch if batch is not None else self._direct
            meta, code = kernel.meta, kernel.code
            pipeline = self.pipeline(meta, code, None, plan.entry)
            temps: dict[str, DeviceBuffer] = {}
            results: dict[str, DeviceBuffer] = {}
            out = into
            bound, oneoff = [], False
            debug_buffer = None
            try:  # temporaries are released however this ends (in a batch: at its end)
                for arg in plan.buffers:
                    value = args[arg.name]
                    if isinstance(value, DeviceBuffer):
                        buf = value
                    elif isinstance(arg.source, DeviceBuffer):  # a foreign buffer, adopted
                        buf = arg.source
                    elif isinstance(arg.source, np.ndarray):
                        buf = temps[arg.name] = self.buffer(arg.source)
                    else:
                        buf = temps[arg.name] = self.buffer(arg.shape, arg.dtype)
                    oneoff = oneoff or buf.borrowed or arg.name in temps
                    results[arg.name] = buf
                    bound.append((arg.binding, buf._live(), buf.nbytes))
                # A debug build's kernel gets a fresh debug buffer per call (runtime/debug.py).
                debug_buffer = debug.attach(self, meta, bound)
                oneoff = oneoff or debug_buffer is not None
                jobs: list[Job] = []  # an empty grid dispatches nothing; outputs keep contents
                if all(plan.workgroups):
                    # Only calls on persistent buffers reuse binding sets; temporaries die now.
                    entry = None if oneoff else self._binding(pipeline, bound, plan, ctx)
                    if entry is None:
                        entry = self._bind(pipeline, bound, plan.uniform_binding, plan.uniform)
                        ctx.oneoff.append(entry)
                    if plan.split:  # each piece on the pipeline specialised for its base
                        pieces = split_dispatch(plan.workgroups, self.max_workgroup_count)
                        jobs += [
                            (
                                self.pipeline(meta, code, b if any(b) else None, plan.entry),
                                entry,
                                counts,
                            )
                            for b, counts in pieces
                        ]
                    else:
                        jobs.append((pipeline, entry, plan.workgroups))
                out.update((n, results[n]) for n in plan.written)
                # (temporary, the caller's array, result, name) of each result an array gets.
                back: list[WriteBack] = [
                    (temps[n], value, out, n)
                    for n in plan.written
                    if n in temps and isinstance(value := args[n], np.ndarray)
                ]
                if batch is not None and debug_buffer is not None:  # reported at once
                    batch.whole = False
                    pending, batch.pending = batch.pending + jobs, []
                    batch.write_backs.extend(back)
                    self._submit(pending, True)
                    debug.read_back(self, meta, debug_buffer)
                    return out
                if batch is not None:
                    if not oneoff and jobs:  # on kept sets, DeviceBuffers only: repeatable
                        # CallResult._again (`into` is typed as any dict here, so not `.`)
                        setattr(into, "_again", Again(batch, tuple(jobs)))  # noqa: B010
                    batch.pending.extend(jobs)
                    batch.write_backs.extend(back)
                    if len(batch.pending) >= batch.chunk:
                        self._send_chunk(batch)
                    return out
                self._flush(jobs, ctx)
                self._write_back(back)
                if debug_buffer is not None:
                    debug.read_back(self, meta, debug_buffer)
                for name, buf in temps.items():
                    if out.get(name) is buf:  # a length or shape: a new array
                        out[name] = buf.read()
                return out
            finally:
                if debug_buffer is not None:  # read back (or the call failed): not needed
                    self._free(debug_buffer)
                for name, buf in temps.items():  # deferred to the batch's end inside one
                    if batch is None or name not in out:
                        buf.release()


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
        return self._native_of(WGPU.name)

    @property
    def vulkan_buffer(self) -> Any:
        """The `VkBuffer` handle behind this buffer (Vulkan devices only; the runtime owns
        it: see docs/runtime.md on sharing)."""
        return self._native_of(VULKAN.name)

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
        array = host_array(array)
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
