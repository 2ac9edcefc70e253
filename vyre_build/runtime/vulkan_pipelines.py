"""Vulkan compute pipelines: their layouts, creation (many in one driver call), and the
VkPipelineCache persisted across processes through pipeline_cache.PipelineCacheFile."""

from __future__ import annotations

import atexit
import contextlib
import weakref
from typing import TYPE_CHECKING, Any

import vulkan as vk

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.errors import DeviceError
from vyre_build.runtime.device import layout_of
from vyre_build.runtime.pipeline_cache import PipelineCacheFile, cache_dir

if TYPE_CHECKING:
    import os

    from vyre_build.runtime.vulkan_backend import VulkanDevice

_DISPATCH_BASE = 0x10  # VK_PIPELINE_CREATE_DISPATCH_BASE_BIT (Vulkan 1.1)
_STORAGE_SET, _UNIFORM_SET = (
    vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
    vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
)
# Devices whose persisted cache is saved at exit, unless they were closed first.
_PERSISTED: weakref.WeakSet[VulkanDevice] = weakref.WeakSet()


def open_cache(dev: VulkanDevice, props: Any, setting: str | os.PathLike[str] | bool | None) -> Any:
    """The device's VkPipelineCache, seeded from the persisted file when there is one."""
    directory = cache_dir(setting)
    dev.cache_file = None
    blob = None
    if directory is not None:
        dev.cache_file = PipelineCacheFile(
            directory,
            int(props.vendorID),
            int(props.deviceID),
            int(props.driverVersion),
            bytes(props.pipelineCacheUUID),
        )
        blob = dev.cache_file.load()
        _PERSISTED.add(dev)
    if blob:
        data = vk.ffi.from_buffer(blob)
        info = vk.VkPipelineCacheCreateInfo(initialDataSize=len(blob), pInitialData=data)
        with contextlib.suppress(DeviceError):  # a blob the driver refuses: start empty
            cache = dev._vk("pipeline cache", vk.vkCreatePipelineCache, dev.dev, info, None)
            dev.cache_loaded = len(blob)
            return cache
    return dev._new("pipeline cache", "PipelineCache")


def cache_data(dev: VulkanDevice, cache: Any) -> bytes:
    """vkGetPipelineCacheData of `cache` (the size query, then the bytes)."""
    size = vk.ffi.new("size_t*")
    dev._check(
        "pipeline cache read", vk.lib.vkGetPipelineCacheData(dev.dev, cache, size, vk.ffi.NULL)
    )
    buf = vk.ffi.new("char[]", size[0])
    dev._check("pipeline cache read", vk.lib.vkGetPipelineCacheData(dev.dev, cache, size, buf))
    return bytes(vk.ffi.buffer(buf, size[0]))


def save_cache(dev: VulkanDevice) -> bool:
    """Save the device's pipeline cache if pipelines were added since the last load/save."""
    if dev.cache_file is None or dev.closed or not dev._pipelines_added:
        return False

    def merge(blob: bytes) -> None:
        # Another process saved pipelines meanwhile: keep theirs too.
        data = vk.ffi.from_buffer(blob)
        info = vk.VkPipelineCacheCreateInfo(initialDataSize=len(blob), pInitialData=data)
        try:
            theirs = dev._vk("pipeline cache", vk.vkCreatePipelineCache, dev.dev, info, None)
        except DeviceError:
            return
        srcs = vk.ffi.new("VkPipelineCache[1]", [theirs])
        vk.lib.vkMergePipelineCaches(dev.dev, dev.pipeline_cache, 1, srcs)
        vk.vkDestroyPipelineCache(dev.dev, theirs, None)

    saved = dev.cache_file.save(lambda: cache_data(dev, dev.pipeline_cache), merge)
    if saved:
        dev._pipelines_added = 0
    return saved


@atexit.register
def _save_at_exit() -> None:
    for dev in list(_PERSISTED):
        with contextlib.suppress(Exception):
            with dev._lock:
                save_cache(dev)


def _layouts(dev: VulkanDevice, meta: KernelMeta) -> tuple[Any, Any]:
    entries = [
        vk.VkDescriptorSetLayoutBinding(
            binding=b,
            descriptorType=_UNIFORM_SET if a == "u" else _STORAGE_SET,
            descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
        )
        for b, a in layout_of(meta)
    ]
    set_layout = dev._new("descriptor set layout", "DescriptorSetLayout", pBindings=entries)
    layout = dev._new("pipeline layout", "PipelineLayout", pSetLayouts=[set_layout])
    return layout, set_layout


def create_pipelines(
    dev: VulkanDevice, kernels: list[tuple[KernelMeta, bytes, str]], base: bool
) -> list[tuple[Any, Any, Any]]:
    """(pipeline, pipeline layout, set layout) of each (kernel, SPIR-V, entry point),
    created in one driver call (`base`: with VK_PIPELINE_CREATE_DISPATCH_BASE, for split
    dispatches). When the driver refuses the batch, each is created alone, so that the
    error names its kernel."""
    if len(kernels) > 1:
        try:
            return _create(dev, kernels, base)
        except DeviceError:
            pass
    out = []
    for meta, code, entry in kernels:
        try:
            out += _create(dev, [(meta, code, entry)], base)
        except DeviceError as exc:
            raise DeviceError(
                f"Kernel {meta.id!r}: the Vulkan driver refused the shader or its layout: {exc}"
            ) from exc
    return out


def _create(
    dev: VulkanDevice, kernels: list[tuple[KernelMeta, bytes, str]], base: bool
) -> list[tuple[Any, Any, Any]]:
    made, modules = [], []
    try:
        for meta, code, _ in kernels:
            made.append(_layouts(dev, meta))
            modules.append(
                dev._new("shader module creation", "ShaderModule", codeSize=len(code), pCode=code)
            )
        stages = [
            vk.VkPipelineShaderStageCreateInfo(
                stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=m, pName=entry
            )
            for m, (_, _, entry) in zip(modules, kernels)
        ]
        infos = [
            vk.VkComputePipelineCreateInfo(
                stage=s, layout=layout, flags=_DISPATCH_BASE if base else 0
            )
            for s, (layout, _) in zip(stages, made)
        ]
        pipes = dev._vk(
            "compute pipeline creation",
            vk.vkCreateComputePipelines,
            dev.dev,
            dev.pipeline_cache,
            len(infos),
            infos,
            None,
        )
    except DeviceError:
        for layout, set_layout in made:
            vk.vkDestroyPipelineLayout(dev.dev, layout, None)
            vk.vkDestroyDescriptorSetLayout(dev.dev, set_layout, None)
        raise
    finally:
        for m in modules:
            vk.vkDestroyShaderModule(dev.dev, m, None)
    return [(p, layout, set_layout) for p, (layout, set_layout) in zip(pipes, made)]
