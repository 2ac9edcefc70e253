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
from vyre_build.runtime.vulkan_results import SUCCESS

if TYPE_CHECKING:
    import os

    from vyre_build.runtime.vulkan_backend import VulkanDevice

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
    read = "vkGetPipelineCacheData"
    dev._check(
        "pipeline cache read",
        read,
        vk.lib.vkGetPipelineCacheData(dev.dev, cache, size, vk.ffi.NULL),
    )
    buf = vk.ffi.new("char[]", size[0])
    dev._check(
        "pipeline cache read", read, vk.lib.vkGetPipelineCacheData(dev.dev, cache, size, buf)
    )
    return bytes(vk.ffi.buffer(buf, size[0]))


def save_cache(dev: VulkanDevice) -> bool:
    """Save the device's pipeline cache if pipelines were added since the last load/save."""
    if dev.cache_file is None or dev.closed or dev._broken is not None or not dev._pipelines_added:
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
        try:
            dev._check(
                "pipeline cache merge",
                "vkMergePipelineCaches",
                vk.lib.vkMergePipelineCaches(dev.dev, dev.pipeline_cache, 1, srcs),
            )
        except DeviceError:
            pass  # save ours alone
        finally:
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


def first_layout(dev: VulkanDevice) -> None:
    """Make the layout of the commonest signature (two storage buffers and the uniform
    block) at device creation: the driver's first vkCreatePipelineLayout pays a one-time
    set-up there, and the layout stays for the kernels that have that signature."""
    _signature(dev, [(0, "r"), (1, "rw"), (2, "u")])


def _layouts(dev: VulkanDevice, meta: KernelMeta) -> tuple[Any, Any, tuple[int, int]]:
    """(pipeline layout, set layout, (storage, uniform) descriptors of a set) of a kernel's
    binding signature: made once per device (every kernel with the same bindings shares
    them; NVIDIA's first one costs 0.4-5 ms)."""
    return _signature(dev, layout_of(meta))


def _signature(dev: VulkanDevice, kinds: list[tuple[int, str]]) -> tuple[Any, Any, tuple[int, int]]:
    key = tuple((b, a == "u") for b, a in kinds)
    found = dev.layouts.get(key)
    if found is None:
        entries = [
            vk.VkDescriptorSetLayoutBinding(
                binding=b,
                descriptorType=_UNIFORM_SET if a == "u" else _STORAGE_SET,
                descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            )
            for b, a in kinds
        ]
        set_layout = dev._new("descriptor set layout", "DescriptorSetLayout", pBindings=entries)
        try:
            layout = dev._new("pipeline layout", "PipelineLayout", pSetLayouts=[set_layout])
        except DeviceError:
            vk.vkDestroyDescriptorSetLayout(dev.dev, set_layout, None)
            raise
        uniform = sum(u for _, u in key)
        found = dev.layouts[key] = (layout, set_layout, (len(key) - uniform, uniform))
    return found


def create_pipelines(
    dev: VulkanDevice,
    kernels: list[tuple[KernelMeta, bytes, str]],
    base: tuple[int, int, int] | None,
) -> list[tuple[Any, Any, Any, tuple[int, int]]]:
    """(pipeline, pipeline layout, set layout, (storage, uniform) descriptors of its set)
    of each (kernel, SPIR-V, entry point), created in one driver call (`base`: the base
    workgroup of a split dispatch's piece, set through the modules' specialization
    constants 0-2, docs/descriptor-conventions.md). When the driver refuses the batch,
    each is created alone, so that the error names its kernel."""
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
    dev: VulkanDevice,
    kernels: list[tuple[KernelMeta, bytes, str]],
    base: tuple[int, int, int] | None,
) -> list[tuple[Any, Any, Any, tuple[int, int]]]:
    """The pipelines of `kernels` in one vkCreateComputePipelines, its create-infos built
    as plain cffi arrays (the `vulkan` package's per-struct wrappers cost more than the
    driver does once its pipeline cache is warm)."""
    ffi, lib = vk.ffi, vk.lib
    made = [_layouts(dev, meta) for meta, _, _ in kernels]
    modules: dict[bytes, Any] = {}  # one shader module per code: a kernel's entries share it
    keep: list[Any] = []  # every buffer the create-infos point into, alive until the call
    try:
        for _, code, _ in kernels:
            if code not in modules:
                words = ffi.from_buffer(code)
                info = ffi.new(
                    "VkShaderModuleCreateInfo*",
                    {
                        "sType": vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                        "codeSize": len(code),
                        "pCode": ffi.cast("uint32_t*", words),
                    },
                )
                out = ffi.new("VkShaderModule*")
                dev._check(
                    "shader module creation",
                    "vkCreateShaderModule",
                    lib.vkCreateShaderModule(dev.dev, info, ffi.NULL, out),
                )
                keep.append(words)
                modules[code] = out[0]
        spec = ffi.NULL
        if base is not None:  # specialization constants 0, 1, 2: the base workgroup
            entries = ffi.new("VkSpecializationMapEntry[3]")
            for axis in range(3):
                entries[axis].constantID, entries[axis].offset, entries[axis].size = (
                    axis,
                    4 * axis,
                    4,
                )
            data = ffi.new("uint32_t[3]", list(base))
            spec = ffi.new(
                "VkSpecializationInfo*",
                {"mapEntryCount": 3, "pMapEntries": entries, "dataSize": 12, "pData": data},
            )
            keep += [entries, data]
        infos = ffi.new("VkComputePipelineCreateInfo[]", len(kernels))
        for k, ((_, code, entry), (layout, _, _)) in enumerate(zip(kernels, made)):
            name = ffi.new("char[]", entry.encode("utf-8"))
            keep.append(name)
            info = infos[k]
            info.sType = vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
            info.flags = 0
            info.stage.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
            info.stage.stage = vk.VK_SHADER_STAGE_COMPUTE_BIT
            info.stage.module = modules[code]
            info.stage.pName = name
            info.stage.pSpecializationInfo = spec
            info.layout = layout
        pipes = ffi.new("VkPipeline[]", len(kernels))
        result = lib.vkCreateComputePipelines(
            dev.dev, dev.pipeline_cache, len(kernels), infos, ffi.NULL, pipes
        )
        if result != SUCCESS:  # those that were made before the failure go too
            for k in range(len(kernels)):
                if pipes[k] != ffi.NULL:
                    lib.vkDestroyPipeline(dev.dev, pipes[k], ffi.NULL)
        dev._check("compute pipeline creation", "vkCreateComputePipelines", result)
    finally:  # layouts stay: the device keeps them for every kernel of their signature
        for m in modules.values():
            lib.vkDestroyShaderModule(dev.dev, m, ffi.NULL)
    return [(pipes[k], *found) for k, found in enumerate(made)]
