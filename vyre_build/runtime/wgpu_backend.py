"""The wgpu backend: WGSL through wgpu-py's native API (no wgpu.utils).

Imported only when a wgpu device is asked for, so that building needs no GPU stack.
"""
from __future__ import annotations

import wgpu

from vyre_build.errors import DeviceError
from vyre_build.runtime.device import Device

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_UNIFORM = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
_LAYOUT_TYPE = {"r": wgpu.BufferBindingType.read_only_storage,
                "w": wgpu.BufferBindingType.storage, "rw": wgpu.BufferBindingType.storage}


def _describe(adapter) -> str:
    info = adapter.info
    return (f"{info.get('device') or info.get('vendor') or 'unknown'} "
            f"[{info.get('adapter_type', '?')}, {info.get('backend_type', '?')}]")


def list_adapters() -> list[str]:
    """A description of every adapter wgpu can see, in wgpu's order."""
    return [_describe(a) for a in wgpu.gpu.enumerate_adapters_sync()]


def _pick(adapter):
    if adapter is None:
        found = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        if found is None:
            raise DeviceError("wgpu found no adapter; install a Vulkan driver (e.g. Mesa "
                              "lavapipe, package mesa-vulkan-drivers) or a GPU driver")
        return found
    adapters = wgpu.gpu.enumerate_adapters_sync()
    names = [_describe(a) for a in adapters]
    if isinstance(adapter, int) and not isinstance(adapter, bool):
        if not 0 <= adapter < len(adapters):
            raise DeviceError(f"wgpu adapter index {adapter} is out of range; "
                              f"there are {len(adapters)}: {names}")
        return adapters[adapter]
    hits = [a for a, n in zip(adapters, names) if str(adapter).lower() in n.lower()]
    if not hits:
        raise DeviceError(f"no wgpu adapter matches {adapter!r}; there are: {names}")
    return hits[0]


class WgpuDevice(Device):
    """A wgpu device; buffers are wgpu storage buffers, pipelines use explicit layouts."""

    backend = "wgpu"

    def __init__(self, adapter=None):
        super().__init__()
        chosen = _pick(adapter)
        self.name = _describe(chosen)
        try:
            self.device = chosen.request_device_sync(required_limits={
                "max-storage-buffer-binding-size":
                    chosen.limits["max-storage-buffer-binding-size"],
                "max-buffer-size": chosen.limits["max-buffer-size"]})
        except Exception as exc:
            raise DeviceError(f"wgpu could not create a device on {self.name}: {exc}") from exc
        limits = self.device.limits
        self.max_workgroups = int(limits["max-compute-workgroups-per-dimension"])
        self.max_buffer_bytes = int(min(limits["max-storage-buffer-binding-size"],
                                        limits["max-buffer-size"]))
        self.queue = self.device.queue

    def _guard(self, what: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except wgpu.GPUError as exc:
            raise DeviceError(f"wgpu {what} failed on {self.name}: {exc}") from exc

    def _alloc(self, nbytes: int, data: bytes | None = None):
        if data is not None:
            return self._guard("buffer upload", self.device.create_buffer_with_data,
                               data=data, usage=_STORAGE)
        # wgpu zero-initialises new buffers, as WebGPU requires.
        return self._guard("buffer allocation", self.device.create_buffer,
                           size=nbytes, usage=_STORAGE)

    def _upload(self, handle, data: bytes) -> None:
        self._guard("buffer upload", self.queue.write_buffer, handle, 0, data)

    def _download(self, handle, nbytes: int) -> bytes:
        return bytes(self._guard("buffer read", self.queue.read_buffer, handle, 0, nbytes))

    def _release(self, handle) -> None:
        for _, ubuf in self._sets.drop(handle):
            if ubuf is not None:
                ubuf.destroy()
        handle.destroy()

    def _pipeline(self, meta: dict, code):
        kid = meta.get("id") or meta["name"]
        if not isinstance(code, str):
            raise DeviceError(f"Kernel {kid!r}: the wgpu backend needs WGSL text, "
                              f"got {type(code).__name__}")
        entries = [{"binding": b["binding"], "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": _LAYOUT_TYPE[b["access"]]}}
                   for b in meta["bindings"] if b["kind"] == "buffer"]
        if meta.get("uniform"):
            entries.append({"binding": meta["uniform"]["binding"],
                            "visibility": wgpu.ShaderStage.COMPUTE,
                            "buffer": {"type": wgpu.BufferBindingType.uniform}})
        entries.sort(key=lambda e: e["binding"])
        try:
            module = self.device.create_shader_module(label=kid, code=code)
            layout = self.device.create_bind_group_layout(entries=entries)
            pipeline = self.device.create_compute_pipeline(
                label=kid,
                layout=self.device.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": "main"})
        except wgpu.GPUError as exc:
            raise DeviceError(f"Kernel {kid!r}: wgpu refused the shader or its layout "
                              f"on {self.name}: {exc}") from exc
        return pipeline, layout

    def _encode(self, pipeline, bound, uniform_binding, uniform, workgroups, cacheable):
        pipe, layout = pipeline
        if cacheable:
            key = (id(pipe), tuple((b, id(h), n) for b, h, n in bound))
            entry = self._sets.take(key)
            if entry is not None:
                group, ubuf = entry
                if ubuf is not None:
                    self._guard("uniform upload", self.queue.write_buffer, ubuf, 0, uniform)
                return pipe, group, workgroups, None
            if key not in self._sets.busy:
                group, ubuf = self._bind_group(layout, bound, uniform_binding, uniform)
                self._sets.put(key, [h for _, h, _ in bound], (group, ubuf))
                return pipe, group, workgroups, None
        group, ubuf = self._bind_group(layout, bound, uniform_binding, uniform)
        return pipe, group, workgroups, ubuf

    def _bind_group(self, layout, bound, uniform_binding, uniform):
        entries = [{"binding": b, "resource": {"buffer": h, "offset": 0, "size": n}}
                   for b, h, n in bound]
        keep = None
        if uniform is not None:
            keep = self._guard("uniform upload", self.device.create_buffer_with_data,
                               data=uniform, usage=_UNIFORM)
            entries.append({"binding": uniform_binding,
                            "resource": {"buffer": keep, "offset": 0, "size": len(uniform)}})
        group = self._guard("bind group creation", self.device.create_bind_group,
                            layout=layout, entries=entries)
        return group, keep

    def _submit(self, jobs: list) -> None:
        try:
            encoder = self.device.create_command_encoder()
            cpass = encoder.begin_compute_pass()
            for pipe, group, (x, y, z), _ in jobs:
                cpass.set_pipeline(pipe)
                cpass.set_bind_group(0, group)
                cpass.dispatch_workgroups(x, y, z)
            cpass.end()
            self.queue.submit([encoder.finish()])
        except wgpu.GPUError as exc:
            raise DeviceError(f"wgpu dispatch failed on {self.name}: {exc}") from exc
        finally:
            self._sets.submitted()

    def _wait(self) -> None:
        # Reading a buffer waits for all submitted work (on_submitted_work_done_sync is
        # broken in wgpu-py 0.32's native backend).
        if getattr(self, "_fence_buf", None) is None:
            self._fence_buf = self._alloc(4)
        self._download(self._fence_buf, 4)
