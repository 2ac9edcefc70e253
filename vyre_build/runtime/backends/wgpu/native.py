"""The wgpu backend's recorder of submissions through wgpu-native's C API (one command
encoder per call, kept bind groups), under wgpu-py's public objects: `_native(device)` gives
it, or None where wgpu-py's internals differ (the device then records through the public
API)."""

from __future__ import annotations

from typing import Any

import wgpu

from vyre_build.runtime.backends.common import steps
from vyre_build.runtime.plan import Job


class _Set:
    """A kept or one-off binding set: the bind group, its uniform buffer (None without a
    uniform block), the bytes last written into that buffer, and the (argument name,
    GPUBuffer) of each application buffer it binds, with the kernel's id (checked before
    each submission of the set: WgpuBuffers._check_borrowed, buffers.py)."""

    __slots__ = ("group", "ubuf", "uniform", "borrowed", "kernel")

    def __init__(
        self,
        group: Any,
        ubuf: Any,
        uniform: bytes | None,
        borrowed: tuple[tuple[str, Any], ...] = (),
        kernel: str = "",
    ):
        self.group, self.ubuf, self.uniform = group, ubuf, uniform
        self.borrowed, self.kernel = borrowed, kernel


class _Native:
    """A call's commands recorded through wgpu-native's C functions themselves: an encoder,
    a pass, its dispatches and a submit with no wrapper objects, descriptor structs or
    release bookkeeping per call, and wgpu-py's error capture once around them all instead
    of once per function (those cost more host time than wgpu-native itself for a library
    call: issue 23). A wgpu error raised in that capture is raised as wgpu-py's methods
    raise it (GPUValidationError, ...). Made only where wgpu-py's native backend has every
    function and helper used; otherwise the public API records (WgpuDevice._record)."""

    def __init__(self, device: Any):
        from wgpu.backends.wgpu_native import _api, _helpers

        ffi, lib = _api.ffi, _api.lib
        if not isinstance(device, _api.GPUDevice):
            raise TypeError("not a wgpu-native device")
        self.device_id, self.queue_id = device._internal, device.queue._internal
        self.ffi, self.errors = ffi, _api.error_handler
        self.error_types = _helpers.ERROR_TYPES
        if not all(callable(getattr(self.errors, f, None)) for f in ("capture", "release")):
            raise TypeError("wgpu-py's error handler differs")
        self.create_encoder = lib.wgpuDeviceCreateCommandEncoder
        self.begin_pass = lib.wgpuCommandEncoderBeginComputePass
        self.set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        self.set_group = lib.wgpuComputePassEncoderSetBindGroup
        self.dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        self.end_pass = lib.wgpuComputePassEncoderEnd
        self.finish = lib.wgpuCommandEncoderFinish
        self.submit_fn = lib.wgpuQueueSubmit
        self.release_pass = lib.wgpuComputePassEncoderRelease
        self.release_encoder = lib.wgpuCommandEncoderRelease
        self.release_commands = lib.wgpuCommandBufferRelease
        self.create_group = lib.wgpuDeviceCreateBindGroup
        self.release_group = lib.wgpuBindGroupRelease
        # Descriptors with empty labels, made once (what wgpu-py's methods fill per call).
        empty = _api.to_c_string_view("")
        self.encoder_desc = ffi.new("WGPUCommandEncoderDescriptor *", {"label": empty})
        self.pass_desc = ffi.new(
            "WGPUComputePassDescriptor *", {"label": empty, "timestampWrites": ffi.NULL}
        )
        self.commands_desc = ffi.new("WGPUCommandBufferDescriptor *", {"label": empty})
        self.commands = ffi.new("WGPUCommandBuffer[1]")
        # A probe's bind group: the first 4 bytes of one buffer (WgpuDevice._probe).
        self.probe_entry = ffi.new(
            "WGPUBindGroupEntry *",
            {"binding": 0, "offset": 0, "size": 4, "sampler": ffi.NULL, "textureView": ffi.NULL},
        )
        self.probe_desc = ffi.new(
            "WGPUBindGroupDescriptor *",
            {"label": empty, "entryCount": 1, "entries": self.probe_entry},
        )

    def record(self, jobs: list[Job]) -> None:
        """One encoder, one compute pass, `jobs`' dispatches, one submit. A wgpu error
        reported while encoding is raised before anything is submitted (wgpu-native aborts
        the process on a submit of an invalid command buffer); of several, the last one
        (wgpu-py logs the others)."""
        commands = self._guarded(self._encode, jobs, release=self.release_commands)
        try:
            self.commands[0] = commands
            self._guarded(self.submit_fn, self.queue_id, 1, self.commands)
        finally:
            self.release_commands(commands)

    def probe(self, layout: Any, buffer: Any) -> None:
        """Create and release a bind group of `layout` holding `buffer`; raise the wgpu
        error that creation reports (a destroyed buffer's, ...)."""
        self.probe_entry.buffer = buffer._internal
        self.probe_desc.layout = layout._internal
        release = self.release_group
        group = self._guarded(self.create_group, self.device_id, self.probe_desc, release=release)
        if group != self.ffi.NULL:
            release(group)

    def _guarded(self, fn: Any, *args: Any, release: Any = None) -> Any:
        # fn(*args) inside one wgpu-py error capture; the error reported meanwhile raised
        # (what fn made, released first by `release`).
        errors = self.errors
        errors.capture("vyre")
        try:
            result = fn(*args)
        finally:
            caught = errors.release("vyre")
        if caught is not None:
            if release is not None and result != self.ffi.NULL:
                release(result)
            kind, message = caught
            raise self.error_types.get(kind, wgpu.GPUError)(message)
        return result

    def _encode(self, jobs: list[Job]) -> Any:
        # The finished command buffer of `jobs` (the encoder and pass released).
        null = self.ffi.NULL
        encoder = self.create_encoder(self.device_id, self.encoder_desc)
        try:
            cpass = self.begin_pass(encoder, self.pass_desc)
            try:
                for pipe, entry, (x, y, z), new_pipe, new_group in steps(jobs):
                    if new_pipe:
                        self.set_pipeline(cpass, pipe[0]._internal)
                    if new_group:
                        self.set_group(cpass, 0, entry.group._internal, 0, null)
                    self.dispatch(cpass, x, y, z)
                self.end_pass(cpass)
            finally:
                self.release_pass(cpass)
            return self.finish(encoder, self.commands_desc)
        finally:
            self.release_encoder(encoder)


def _native(device: Any) -> _Native | None:
    # The native recorder of `device`, or None where wgpu-py's internals differ.
    try:
        return _Native(device)
    except Exception:  # noqa: BLE001 - any mismatch: the public API records instead
        return None
