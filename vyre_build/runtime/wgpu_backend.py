"""The wgpu backend: WGSL through wgpu-py's native API (no wgpu.utils); imported only when
a wgpu device is asked for, so that building needs no GPU stack."""

from __future__ import annotations

import wgpu

from vyre_build.errors import DeviceError
from vyre_build.runtime.device import Device, choose_adapter, layout_of, steps

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_UNIFORM = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
_LAYOUT_TYPE = {
    "r": wgpu.BufferBindingType.read_only_storage,
    "w": wgpu.BufferBindingType.storage,
    "rw": wgpu.BufferBindingType.storage,
    "u": wgpu.BufferBindingType.uniform,
}
_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size")  # asked for in full


def _describe(adapter) -> str:
    info = adapter.info
    return (
        f"{info.get('device') or info.get('vendor') or 'unknown'} "
        f"[{info.get('adapter_type', '?')}, {info.get('backend_type', '?')}]"
    )


def list_adapters() -> list[str]:
    """A description of every adapter wgpu can see, in wgpu's order."""
    return [_describe(a) for a in wgpu.gpu.enumerate_adapters_sync()]


class WgpuDevice(Device):
    """A wgpu device; buffers are wgpu storage buffers, pipelines use explicit layouts."""

    backend = "wgpu"

    def __init__(self, adapter=None):
        super().__init__()
        if adapter is None:
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
        try:
            self.device = chosen.request_device_sync(
                required_limits={k: chosen.limits[k] for k in _LIMITS}
            )
        except Exception as exc:
            raise DeviceError(f"wgpu could not create a device on {self.name}: {exc}") from exc
        limits, self.queue, self._fence_buf = self.device.limits, self.device.queue, None
        self.max_workgroups = int(limits["max-compute-workgroups-per-dimension"])
        self.max_buffer_bytes = int(min(limits[k] for k in _LIMITS))

    def _guard(self, what: str, fn, *args, **kwargs):
        # fn(*args, **kwargs), a wgpu error raised as "{what} on <adapter>: <error>".
        try:
            return fn(*args, **kwargs)
        except wgpu.GPUError as exc:
            raise DeviceError(f"{what} on {self.name}: {exc}") from exc

    def _alloc(self, nbytes: int, data: bytes | None):
        if data is not None:
            return self._guard(
                "wgpu buffer upload failed",
                self.device.create_buffer_with_data,
                data=data,
                usage=_STORAGE,
            )
        # wgpu zero-initialises new buffers, as WebGPU requires.
        return self._guard(
            "wgpu buffer allocation failed", self.device.create_buffer, size=nbytes, usage=_STORAGE
        )

    def _upload(self, handle, data: bytes) -> None:
        self._guard("wgpu buffer upload failed", self.queue.write_buffer, handle, 0, data)

    def _download(self, handle, nbytes: int) -> bytes:
        return bytes(
            self._guard("wgpu buffer read failed", self.queue.read_buffer, handle, 0, nbytes)
        )

    def _free(self, handle) -> None:
        handle.destroy()

    def _pipeline(self, meta: dict, code):
        kid = meta.get("id") or meta["name"]
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
            module = self.device.create_shader_module(label=kid, code=code)
            pipeline = self.device.create_compute_pipeline(
                label=kid,
                compute={"module": module, "entry_point": "main"},
                layout=self.device.create_pipeline_layout(bind_group_layouts=[group_layout]),
            )
        except wgpu.GPUError as exc:
            raise DeviceError(
                f"Kernel {kid!r}: wgpu refused the shader or its layout on {self.name}: {exc}"
            ) from exc
        return pipeline, group_layout

    def _bind(self, pipeline, bound, uniform_binding, uniform):
        entries = [
            {"binding": b, "resource": {"buffer": h, "offset": 0, "size": n}} for b, h, n in bound
        ]
        ubuf = None
        if uniform is not None:
            ubuf = self._guard(
                "wgpu uniform upload failed",
                self.device.create_buffer_with_data,
                data=uniform,
                usage=_UNIFORM,
            )
            entries.append(
                {
                    "binding": uniform_binding,
                    "resource": {"buffer": ubuf, "offset": 0, "size": len(uniform)},
                }
            )
        group = self._guard(
            "wgpu bind group creation failed",
            self.device.create_bind_group,
            layout=pipeline[1],
            entries=entries,
        )
        return group, ubuf

    def _set_uniform(self, entry, uniform: bytes) -> None:
        self._guard("wgpu uniform upload failed", self.queue.write_buffer, entry[1], 0, uniform)

    def _unbind(self, entry) -> None:
        if entry[1] is not None:
            entry[1].destroy()

    def _submit(self, jobs: list, final: bool) -> None:
        # Reads wait for submitted work, so the last chunk needs no wait of its own.
        if jobs:
            self._guard("wgpu dispatch failed", self._record, jobs)

    def _record(self, jobs: list) -> None:
        encoder = self.device.create_command_encoder()
        cpass = encoder.begin_compute_pass()
        for pipe, entry, (x, y, z), new_pipe, new_group in steps(jobs):
            if new_pipe:
                cpass.set_pipeline(pipe[0])
            if new_group:
                cpass.set_bind_group(0, entry[0])
            cpass.dispatch_workgroups(x, y, z)
        cpass.end()
        self.queue.submit([encoder.finish()])

    def wait(self) -> None:
        # Reading a buffer waits for all submitted work (on_submitted_work_done_sync is
        # broken in wgpu-py 0.32's native backend).
        if self._fence_buf is None:
            self._fence_buf = self._alloc(4, None)
        self._download(self._fence_buf, 4)
