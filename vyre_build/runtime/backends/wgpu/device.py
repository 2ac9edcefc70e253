"""The wgpu backend: WGSL through wgpu-py's native API (no wgpu.utils); imported only when
a wgpu device is asked for, so that building needs no GPU stack.

A device is made on an adapter (asking for the `subgroup` and `shader-f16` features the
adapter has), or wraps an application's own GPUDevice, whose buffers (GPUBuffer with
STORAGE usage) calls then take as arguments. wgpu-py has no pipeline cache API: pipeline
creation goes through the driver's own shader cache (NVIDIA's, Mesa's) only.

A dispatch past the per-axis workgroup limit is split into pieces: each runs a pipeline of
the kernel's WGSL with its `const vyre_wg_base` line spelling the piece's base workgroup
(kernel.wgsl_at_base), made once per base and kept; unsplit dispatches run the artifact as
it is. A plain constant, not WGSL overrides: naga (wgpu 0.32) constant-evaluates every
expression of a module with overrides at pipeline creation and refuses valid kernels
(literal-only expressions WGSL forbids as constants: 31 of 150 conformance programs, "<<
operation overflowed"); docs/runtime.md, "Grids", has the options weighed.

`device.timing = True` times submissions with timestamp queries where the device has the
"timestamp-query" feature (asked for when the adapter offers it): the first compute pass
of a call or batch writes one at its beginning, the last at its end, and `gpu_seconds` is
their difference (WebGPU timestamps are nanoseconds). Without the feature it stays None.

The device's buffers, its own and the application's (wrapped, adopted, checked before a
submission), are its base class's (buffers.py); this module creates the device, makes its
pipelines and bind groups (uniform buffers pooled per size), records and submits its
dispatches (through native.py's recorder where it can), and frees what it made.
"""

from __future__ import annotations

import struct
from typing import Any

import wgpu

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.core.errors import DeviceError
from vyre_build.runtime.backends.common import choose_adapter, layout_of, steps
from vyre_build.runtime.backends.wgpu.buffers import WgpuBuffers
from vyre_build.runtime.backends.wgpu.module import create_module
from vyre_build.runtime.backends.wgpu.native import _native, _Set
from vyre_build.runtime.backends.wgpu.profile import (
    _LIMITS,
    _describe,
    adapter_profiles,
    list_adapters,
    profile_of,
)
from vyre_build.runtime.kernel import wgsl_at_base
from vyre_build.runtime.plan import Job

# the registry's listings read them here (core/backends.py: this module's WgpuDevice)
__all__ = ["WgpuDevice", "adapter_profiles", "list_adapters"]

_UNIFORM = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
_LAYOUT_TYPE = {
    "r": wgpu.BufferBindingType.read_only_storage,
    "w": wgpu.BufferBindingType.storage,
    "rw": wgpu.BufferBindingType.storage,
    "u": wgpu.BufferBindingType.uniform,
}
_FEATURES = ("subgroup", "shader-f16", "timestamp-query")  # asked for when the adapter has them
_QUERY = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
_UNIFORMS_KEPT = 16  # pooled uniform buffers per size (those of one-off bind groups)


class WgpuDevice(WgpuBuffers):
    """A wgpu device; buffers are wgpu storage buffers, pipelines use explicit layouts.

    Arguments:
        adapter: an index into list_adapters("wgpu"), a substring of a description, a
            wgpu GPUAdapter, or None for the high-performance default.
        device: an application's own wgpu GPUDevice to run on instead (its features and
            limits are what kernels get; closing this Device leaves it alone).
    """

    backend = "wgpu"
    # A piece of a split dispatch runs a pipeline of the kernel's WGSL with its constant
    # vyre_wg_base spelling the piece's base workgroup (kernel.wgsl_at_base; docs/runtime.md,
    # "Grids"); made once per base and kept.
    splits_dispatches = True
    # Buffer writes (queue.write_buffer) are ordered with submissions: work submitted before
    # a write sees the old contents, so a buffer can be rewritten while that work is in
    # flight (library calls upload small arrays into kept buffers: library/kept.py).
    ordered_writes = True

    def __init__(self, adapter: Any = None, *, device: Any = None):
        super().__init__()
        self.owned = device is None
        if device is not None:
            if not isinstance(device, wgpu.GPUDevice):
                raise DeviceError(f"device= must be a wgpu GPUDevice, got {type(device).__name__}")
            chosen = device.adapter
        elif isinstance(adapter, wgpu.GPUAdapter):
            chosen = adapter
        elif adapter is None:
            chosen = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
            if chosen is None:
                raise DeviceError(
                    "wgpu found no adapter; install a Vulkan driver (e.g. Mesa "
                    "lavapipe, package mesa-vulkan-drivers) or a GPU driver"
                )
        else:
            found = wgpu.gpu.enumerate_adapters_sync()
            chosen = choose_adapter("wgpu", found, [_describe(a) for a in found], adapter)
        self.name = _describe(chosen)
        if device is None:
            wanted = [f for f in _FEATURES if f in chosen.features]
            try:
                device = chosen.request_device_sync(
                    required_features=wanted,
                    required_limits={k: chosen.limits[k] for k in _LIMITS},
                )
            except Exception as exc:
                if "timestamp-query" not in wanted:
                    raise DeviceError(
                        f"wgpu could not create a device on {self.name}: {exc}"
                    ) from exc
                # Timing is optional: a driver that lists the feature and then refuses it
                # still gives a device (gpu_seconds stays None on it).
                try:
                    device = chosen.request_device_sync(
                        required_features=[f for f in wanted if f != "timestamp-query"],
                        required_limits={k: chosen.limits[k] for k in _LIMITS},
                    )
                except Exception as exc2:
                    raise DeviceError(
                        f"wgpu could not create a device on {self.name}: {exc2}"
                    ) from exc2
        self.device, self.queue, self._fence_buf = device, device.queue, None
        self.profile = profile_of(chosen, device.features, device.limits)
        self.max_workgroup_count = self.profile.max_workgroup_count
        self.max_buffer_bytes = self.profile.max_storage_buffer_binding
        self._buffers: dict[int, Any] = {}  # our own, destroyed by close()
        self._uniforms: dict[int, list[Any]] = {}  # size -> free uniform buffers
        self._staging: Any = None  # the kept MAP_READ buffer reads go through
        self._probe_layout: Any = None  # one read-only storage binding (_probe)
        # What this device created, by kind (tests check that repeated calls reuse).
        self.made = {"bind_groups": 0, "uniform_buffers": 0, "staging_buffers": 0}
        # Timestamp queries (device.timing): a query set of two and the buffer they resolve to.
        self._queries: Any = None
        if "timestamp-query" in {str(f) for f in device.features}:
            self._queries = self._guard(
                "wgpu query set creation failed",
                device.create_query_set,
                type=wgpu.QueryType.timestamp,
                count=2,
            )
            self._stamps = self._guard(
                "wgpu buffer allocation failed", device.create_buffer, size=16, usage=_QUERY
            )
        self._stamped = False  # the first pass of this submission wrote its start time
        self._native = _native(device)  # None: every call recorded through wgpu-py's API

    # -- hooks --

    def _pipeline(
        self, meta: KernelMeta, code: Any, base: tuple[int, int, int] | None, entry: str
    ) -> Any:
        try:
            group_layout = self.device.create_bind_group_layout(
                entries=[
                    {
                        "binding": b,
                        "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": _LAYOUT_TYPE[a]},
                    }
                    for b, a in layout_of(meta)
                ]
            )
            if base is not None:  # a split dispatch's piece: the WGSL's base line spelt
                code = wgsl_at_base(code, base)
            module = create_module(self.device, meta.id, code)  # without naga's bounds checks
            pipeline = self.device.create_compute_pipeline(
                label=meta.id,
                compute={"module": module, "entry_point": entry},
                layout=self.device.create_pipeline_layout(bind_group_layouts=[group_layout]),
            )
        except wgpu.GPUError as exc:
            raise DeviceError(
                f"Kernel {meta.id!r}: wgpu refused the shader or its layout on {self.name}: {exc}"
            ) from exc
        return pipeline, group_layout, meta

    def _bind(
        self,
        pipeline: Any,
        bound: list[tuple[int, Any, int]],
        uniform_binding: int | None,
        uniform: bytes | None,
    ) -> Any:
        # A storage binding's size is a multiple of 4 bytes (an odd count of f16 values
        # sees one value of padding, which the runtime zeroed).
        entries = [
            {"binding": b, "resource": {"buffer": h, "offset": 0, "size": -(-n // 4) * 4}}
            for b, h, n in bound
        ]
        ubuf = None
        if uniform is not None:
            ubuf = self._uniform_buffer(uniform)
            entries.append(
                {
                    "binding": uniform_binding,
                    "resource": {"buffer": ubuf, "offset": 0, "size": len(uniform)},
                }
            )
        entry = _Set(None, ubuf, uniform)
        borrowed = [(b, h) for b, h, _ in bound if id(h) not in self._buffers]
        if borrowed:  # the application's buffers, by argument name
            meta: KernelMeta = pipeline[2]
            names = {x.binding: x.name for x in meta.bindings}
            entry.borrowed = tuple((names.get(b, f"binding {b}"), h) for b, h in borrowed)
            entry.kernel = meta.id
        try:
            entry.group = self.device.create_bind_group(layout=pipeline[1], entries=entries)
        except wgpu.GPUError as exc:
            self._unbind(entry)
            self._check_borrowed([entry])  # an application buffer's fault: named
            raise DeviceError(f"wgpu bind group creation failed on {self.name}: {exc}") from exc
        self.made["bind_groups"] += 1
        return entry

    def _uniform_buffer(self, uniform: bytes) -> Any:
        # A pooled uniform buffer of this size with `uniform` written into it, else a new
        # one. Reuse is safe: queue.write_buffer is ordered after the work already
        # submitted (which saw the old contents) and before the next submission.
        pool = self._uniforms.get(len(uniform))
        if pool:
            ubuf = pool.pop()
            self._guard("wgpu uniform upload failed", self.queue.write_buffer, ubuf, 0, uniform)
            return ubuf
        self.made["uniform_buffers"] += 1
        return self._guard(
            "wgpu uniform upload failed",
            self.device.create_buffer_with_data,
            data=uniform,
            usage=_UNIFORM,
        )

    def _set_uniform(self, entry: Any, uniform: bytes) -> None:
        if entry.uniform == uniform:  # the buffer holds these bytes already
            return
        self._guard("wgpu uniform upload failed", self.queue.write_buffer, entry.ubuf, 0, uniform)
        entry.uniform = uniform

    def _unbind(self, entry: Any) -> None:
        # The bind group goes; its uniform buffer back to the pool (destroyed past the cap).
        if entry.ubuf is not None:
            pool = self._uniforms.setdefault(int(entry.ubuf.size), [])
            if len(pool) < _UNIFORMS_KEPT:
                pool.append(entry.ubuf)
            else:
                entry.ubuf.destroy()

    def _submit(self, jobs: list[Job], final: bool) -> None:
        # Reads wait for submitted work, so the last chunk needs no wait of its own.
        if final and not self._stamped:
            self.gpu_seconds = None
        if jobs or (final and self._stamped):
            self._check_borrowed([entry for _, entry, _ in jobs if entry.borrowed])
            self._guard("wgpu dispatch failed", self._record, jobs, final)
        if final and self._stamped:
            self._stamped = False
            # Through the kept staging buffer (_read), as every read: wgpu-py's
            # queue.read_buffer makes and destroys a MAP_READ buffer each time; on an H100
            # (2026-12-06) a timed batch then took about 45 ms more once a 64 MiB read had
            # been made.
            raw = self._guard("timestamp query", self._read, self._stamps, 16)
            start, end = struct.unpack("<QQ", raw)
            self.gpu_seconds = max(end - start, 0) * 1e-9

    def _record(self, jobs: list[Job], final: bool) -> None:
        if self._native is not None and not self.timing and not self._stamped:
            self._native.record(jobs)
            return
        encoder = self.device.create_command_encoder()
        writes: dict[str, Any] | None = None
        if self.timing and self._queries is not None and not self._stamped:
            # GPU time from the beginning of the first pass to the end of the last one.
            self._stamped, self.gpu_seconds = True, None
            writes = {"query_set": self._queries, "beginning_of_pass_write_index": 0}
        if final and self._stamped:
            writes = {**(writes or {"query_set": self._queries}), "end_of_pass_write_index": 1}
        cpass = encoder.begin_compute_pass(timestamp_writes=writes)
        for pipe, entry, (x, y, z), new_pipe, new_group in steps(jobs):
            if new_pipe:
                cpass.set_pipeline(pipe[0])
            if new_group:
                cpass.set_bind_group(0, entry.group)
            cpass.dispatch_workgroups(x, y, z)
        cpass.end()
        if final and self._stamped:
            encoder.resolve_query_set(self._queries, 0, 2, self._stamps, 0)
        self.queue.submit([encoder.finish()])

    def _wait(self) -> None:
        # Reading a buffer waits for all submitted work (on_submitted_work_done_sync is
        # broken in wgpu-py 0.32's native backend).
        if self._fence_buf is None:
            self._fence_buf = self._alloc(4, None)
        self._download(self._fence_buf, 4)

    def _close(self) -> None:
        for entries in self._sets.values():
            for entry in entries:
                self._unbind(entry)
        for buf in list(self._buffers.values()):
            buf.destroy()
        self._buffers.clear()
        for pool in self._uniforms.values():
            for ubuf in pool:
                ubuf.destroy()
        self._uniforms.clear()
        if self._staging is not None:
            self._staging.destroy()
            self._staging = None
        if self._queries is not None:
            self._queries.destroy()
            self._stamps.destroy()
        self._sets.clear()
        self._pipelines.clear()
        if self.owned:
            self.device.destroy()
