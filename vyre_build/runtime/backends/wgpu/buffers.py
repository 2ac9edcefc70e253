"""The wgpu device's buffers (the base of device.py's WgpuDevice): its own storage buffers,
made, written, read back and freed (the runtime's buffer hooks), and the application's own
GPUBuffers, wrapped (`wrap`), taken as call arguments (`adopt`) and checked before each
submission that binds them. Also `_guard`, which raises a wgpu error as a DeviceError.

Guarantees: sizes and writes are rounded up to 4-byte multiples (WebGPU's rule; the
padding is zeros), and new buffers are zero-initialised (by wgpu, as WebGPU requires).
Reads go through one kept MAP_READ staging buffer, grown to powers of two (at least 256
bytes), not one made and destroyed per read. An application's GPUBuffer is taken only if
it is of this device, has STORAGE usage and holds a whole number of values; before a
submission, and before a read of one, each is checked to be unmapped and still usable
(wgpu-native aborts the process on a submission holding a destroyed or mapped buffer):
a DispatchError names the first that is not, and nothing is submitted.
"""

from __future__ import annotations

import math
from typing import Any

import wgpu

from vyre_build.bundle.metadata import SCALAR_DTYPES
from vyre_build.core.errors import DeviceError, DispatchError
from vyre_build.runtime.backends.wgpu.native import _Native, _Set
from vyre_build.runtime.device import Device, DeviceBuffer

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_STAGING = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST


class WgpuBuffers(Device):
    """The buffers of a WgpuDevice (the module docstring)."""

    # Made by WgpuDevice.__init__ (device.py): the GPUDevice and its queue, our own buffers
    # by id (destroyed by close()), the kept staging buffer and the probe's layout (None
    # until needed), the native recorder (None: wgpu-py's API), and the creation counts.
    device: Any
    queue: Any
    _buffers: dict[int, Any]
    _staging: Any
    _probe_layout: Any
    _native: _Native | None
    made: dict[str, int]

    def _guard(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        # fn(*args, **kwargs), a wgpu error raised as "{what} on <adapter>: <error>".
        try:
            return fn(*args, **kwargs)
        except wgpu.GPUError as exc:
            raise DeviceError(f"{what} on {self.name}: {exc}") from exc

    # -- the application's buffers --

    def _foreign(self, buffer: Any, dtype: str) -> tuple[int, str]:
        # (element count, problem or "") of an application GPUBuffer as `dtype` elements.
        if getattr(buffer, "_device", None) is not self.device:
            return 0, "is a GPUBuffer of another wgpu device"
        if not buffer.usage & wgpu.BufferUsage.STORAGE:
            return 0, "is a GPUBuffer without STORAGE usage"
        size, item = int(buffer.size), SCALAR_DTYPES[dtype]
        if size < item or size % item:
            return 0, f"is a GPUBuffer of {size} bytes, not a whole number of {dtype} values"
        return size // item, ""

    def wrap(
        self,
        buffer: object,
        dtype: str,
        shape: tuple[int, ...] | None = None,
        *,
        read_only: bool = False,
    ) -> DeviceBuffer:
        if not isinstance(buffer, wgpu.GPUBuffer):
            raise DispatchError(
                f"Device.wrap: expected a wgpu GPUBuffer, got {type(buffer).__name__}"
            )
        if dtype not in SCALAR_DTYPES:
            raise DispatchError(f"Device.wrap: dtype must be f32, i32, u32 or f16, got {dtype!r}")
        count, problem = self._foreign(buffer, dtype)
        if problem:
            raise DispatchError(f"Device.wrap: the buffer {problem}")
        if shape is None:
            shape = (count,)
        elif not (
            isinstance(shape, tuple) and all(isinstance(s, int) and s > 0 for s in shape)
        ) or count != math.prod(shape):
            raise DispatchError(
                f"Device.wrap: shape {shape!r} does not hold {count} {dtype} values"
            )
        return DeviceBuffer(self, buffer, dtype, shape, "r" if read_only else "rw", borrowed=True)

    def _check_borrowed(self, entries: list[_Set]) -> None:
        # wgpu-native aborts the process when a submission holds a destroyed or mapped
        # buffer (wgpuQueueSubmit's errors are fatal), and an application can destroy or
        # map its own GPUBuffer between a call and the submission of its dispatch (inside
        # device.batch(), where dispatches wait in chunks): each application buffer that
        # `entries` bind is checked first, and a DispatchError names the first unusable one.
        seen: set[int] = set()
        for entry in entries:
            if id(entry) in seen:
                continue
            seen.add(id(entry))
            for name, buffer in entry.borrowed:
                if id(buffer) in seen:
                    continue
                seen.add(id(buffer))
                problem = self._unusable(buffer)
                if problem:
                    raise DispatchError(
                        f"Kernel {entry.kernel!r}: the application's GPUBuffer passed as "
                        f"{name!r} {problem}; neither this dispatch nor those waiting with "
                        "it were submitted"
                    )

    def _unusable(self, buffer: Any) -> str:
        # Why the application's GPUBuffer `buffer` cannot be submitted, or "".
        state = str(buffer.map_state)
        if state != "unmapped":
            return f"is {state} (unmap it before a dispatch or read uses it)"
        if buffer._internal is None:
            return "was released"
        try:
            self._probe(buffer)
        except wgpu.GPUError as exc:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            return (
                f"is refused by wgpu ({lines[-1].strip()}): a wrapped buffer must outlive "
                'the dispatches that use it (docs/runtime.md, "The application\'s own device")'
            )
        return ""

    def _probe(self, buffer: Any) -> None:
        # A bind group of `buffer`'s first 4 bytes created and dropped: wgpu validates the
        # buffer as a submission would (a destroyed one is refused) but reports the error.
        if self._probe_layout is None:
            self._probe_layout = self.device.create_bind_group_layout(
                entries=[
                    {
                        "binding": 0,
                        "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": wgpu.BufferBindingType.read_only_storage},
                    }
                ]
            )
        if self._native is not None:
            self._native.probe(self._probe_layout, buffer)
        else:
            self.device.create_bind_group(
                layout=self._probe_layout,
                entries=[{"binding": 0, "resource": {"buffer": buffer, "offset": 0, "size": 4}}],
            )

    def adopt(self, value: object, dtype: str, access: str) -> DeviceBuffer | None:
        if not isinstance(value, wgpu.GPUBuffer):
            return None
        count, problem = self._foreign(value, dtype)
        if problem:
            raise ValueError(problem)
        return DeviceBuffer(self, value, dtype, (count,), "rw", borrowed=True)

    # -- buffer hooks --

    def _alloc(self, nbytes: int, data: bytes | None) -> Any:
        size = -(-nbytes // 4) * 4  # WebGPU buffer sizes and writes are 4-byte multiples
        if data is not None:
            buf = self._guard(
                "wgpu buffer upload failed",
                self.device.create_buffer_with_data,
                data=data.ljust(size, b"\0"),
                usage=_STORAGE,
            )
        else:  # wgpu zero-initialises new buffers, as WebGPU requires
            buf = self._guard(
                "wgpu buffer allocation failed",
                self.device.create_buffer,
                size=size,
                usage=_STORAGE,
            )
        self._buffers[id(buf)] = buf
        return buf

    def _upload(self, handle: Any, data: bytes) -> None:
        data = data.ljust(-(-len(data) // 4) * 4, b"\0")
        self._guard("wgpu buffer upload failed", self.queue.write_buffer, handle, 0, data)

    def _download(self, handle: Any, nbytes: int) -> bytes:
        size = min(-(-nbytes // 4) * 4, int(handle.size))
        if not handle.usage & wgpu.BufferUsage.COPY_SRC:
            raise DispatchError("the GPUBuffer has no COPY_SRC usage, so it cannot be read back")
        if id(handle) not in self._buffers and (problem := self._unusable(handle)):
            raise DispatchError(f"DeviceBuffer.read: the application's GPUBuffer {problem}")
        raw: bytes = self._guard("wgpu buffer read failed", self._read, handle, size)
        return raw[:nbytes]

    def _read(self, handle: Any, size: int) -> bytes:
        # queue.read_buffer makes and destroys a staging buffer per read: a kept one
        # (grown to powers of two) is copied into, mapped, read and unmapped instead.
        if self._staging is None or int(self._staging.size) < size:
            if self._staging is not None:
                self._staging.destroy()
            self._staging = None
            self._staging = self.device.create_buffer(
                size=max(256, 1 << (size - 1).bit_length()), usage=_STAGING
            )
            self.made["staging_buffers"] += 1
        encoder = self.device.create_command_encoder()
        encoder.copy_buffer_to_buffer(handle, 0, self._staging, 0, size)
        self.queue.submit([encoder.finish()])
        # As queue.read_buffer does: "READ_NOSYNC", for map_async's own empty submission
        # (which makes a mapped buffer see earlier writes) is not needed after the copy.
        self._staging.map_async("READ_NOSYNC", 0, size).sync_wait()
        try:
            return bytes(self._staging.read_mapped(0, size, copy=False))
        finally:
            self._staging.unmap()

    def _free(self, handle: Any) -> None:
        self._buffers.pop(id(handle), None)
        handle.destroy()
