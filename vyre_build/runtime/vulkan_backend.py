"""The Vulkan backend: SPIR-V through the `vulkan` cffi package.

Memory: where every device-local memory type is also host-visible and coherent (one
memory, e.g. lavapipe or an integrated GPU) buffers are mapped once and written in
place; otherwise (a discrete GPU) buffers are device-local and transfers go through a
host-visible staging buffer. VYRE_VULKAN_STAGING=1 forces the staging path (tests).
One queue and fence, a pipeline cache per device, freeable descriptor pools; with
`timing` set, two timestamp queries bracket each submission's dispatches.
The cffi structs free their nested data when collected, so every nested create-info is
held in a local variable until the call that reads it returns.
"""
from __future__ import annotations

import os
from collections import namedtuple

import vulkan as vk

from vyre_build.errors import DeviceError
from vyre_build.runtime.device import Device, choose_adapter, layout_of

_HOST = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
_LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
_COMPUTE = vk.VK_PIPELINE_BIND_POINT_COMPUTE
_STAGE = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
_HOST_STAGE = vk.VK_PIPELINE_STAGE_HOST_BIT
_ACCESS = (vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
           | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
_STORAGE_SET, _UNIFORM_SET = (vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER)
_POOL_FULL = (vk.VkErrorOutOfPoolMemory, vk.VkErrorFragmentedPool)
_TYPE_RANK = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0,
              vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
              vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2, vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3}
_TYPE_NAME = {0: "discrete GPU", 1: "integrated GPU", 2: "virtual GPU", 3: "CPU"}
_POOL_SETS, _WAIT_NS = 64, 120 * 10 ** 9
_NO_DRIVER = "install a Vulkan driver (e.g. Mesa lavapipe, package mesa-vulkan-drivers)"
_INSTANCE = []


def _physical_devices() -> list:
    if not _INSTANCE:
        app = vk.VkApplicationInfo(pApplicationName="vyre_build", applicationVersion=1,
                                   pEngineName="vyre_build", engineVersion=1,
                                   apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))
        info = vk.VkInstanceCreateInfo(pApplicationInfo=app)
        try:
            _INSTANCE.append(vk.vkCreateInstance(info, None))
        except (vk.VkError, vk.VkException, OSError) as exc:
            raise DeviceError(f"no Vulkan instance: {exc!r}; {_NO_DRIVER}") from exc
    found = []
    for phys in vk.vkEnumeratePhysicalDevices(_INSTANCE[0]):
        props = vk.vkGetPhysicalDeviceProperties(phys)
        rank = _TYPE_RANK.get(props.deviceType, 4)
        name = str(props.deviceName)  # the vulkan package already decodes char arrays
        found.append((phys, props, f"{name} [{_TYPE_NAME.get(rank, 'other')}, Vulkan]", rank))
    return found


def list_adapters() -> list[str]:
    """A description of every Vulkan physical device, in the loader's order."""
    return [desc for _, _, desc, _ in _physical_devices()]


# A VkBuffer with its memory and, when host-visible, its persistent mapping.
_Buf = namedtuple("_Buf", "buffer memory mapped nbytes")


class VulkanDevice(Device):
    """A Vulkan logical device with one compute queue."""

    backend = "vulkan"

    def __init__(self, adapter=None):
        super().__init__()
        found = _physical_devices()
        if not found:
            raise DeviceError(f"the Vulkan loader lists no physical device; {_NO_DRIVER}")
        names = [d for _, _, d, _ in found]
        self.physical, props, self.name, _ = (
            min(found, key=lambda f: f[3]) if adapter is None  # discrete first, ...
            else choose_adapter("Vulkan", found, names, adapter))
        limits = props.limits
        self.max_workgroups = int(min(limits.maxComputeWorkGroupCount[0:3]))
        self.max_buffer_bytes = int(limits.maxStorageBufferRange)
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        compute = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not compute:
            raise DeviceError(f"Vulkan adapter {self.name} has no compute queue")
        self.family, priorities = compute[0], [1.0]
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1,
                                                pQueuePriorities=priorities)
        device_info = vk.VkDeviceCreateInfo(queueCreateInfoCount=1,
                                            pQueueCreateInfos=[queue_info])
        self.dev = self._vk("device creation", vk.vkCreateDevice, self.physical,
                            device_info, None)
        self.queue = vk.vkGetDeviceQueue(self.dev, self.family, 0)
        mem = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.mem_flags = [mem.memoryTypes[i].propertyFlags for i in range(mem.memoryTypeCount)]
        local = [f for f in self.mem_flags if f & _LOCAL]
        self.unified = (bool(local) and all(f & _HOST == _HOST for f in local)
                        and os.environ.get("VYRE_VULKAN_STAGING") != "1")
        pool_info = vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=self.family)
        self.cmd_pool = self._vk("command pool", vk.vkCreateCommandPool, self.dev,
                                 pool_info, None)
        alloc = vk.VkCommandBufferAllocateInfo(commandPool=self.cmd_pool,
                                               level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                               commandBufferCount=2)
        self.cmd, self.xfer_cmd = self._vk("command buffers", vk.vkAllocateCommandBuffers,
                                           self.dev, alloc)
        fence_info = vk.VkFenceCreateInfo()
        self.fence = vk.vkCreateFence(self.dev, fence_info, None)
        # Structs reused by every submission (built once: cffi struct creation is slow).
        self._fences = [self.fence]
        self._begin = vk.VkCommandBufferBeginInfo(
            flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        self._cmd_lists = ([self.cmd], [self.xfer_cmd])
        self._submit_infos = tuple(
            [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=c)] for c in self._cmd_lists)
        # Between dispatches: later dispatches and transfers see earlier writes; after the
        # last one, host reads of mapped memory see them too.
        self._barriers = [vk.VkMemoryBarrier(srcAccessMask=_ACCESS, dstAccessMask=_ACCESS)]
        self._host_barriers = [vk.VkMemoryBarrier(
            srcAccessMask=_ACCESS, dstAccessMask=_ACCESS | vk.VK_ACCESS_HOST_READ_BIT)]
        cache_info = vk.VkPipelineCacheCreateInfo()
        self.pipeline_cache = vk.vkCreatePipelineCache(self.dev, cache_info, None)
        self._pools, self._pool_at, self._staging, self._queries = [], 0, None, None
        bits = families[self.family].timestampValidBits
        if bits:  # GPU timestamps: ticks of timestampPeriod ns, `bits` valid bits
            query_info = vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
                                                  queryCount=2)
            self._queries = vk.vkCreateQueryPool(self.dev, query_info, None)
            self._tick_s = float(limits.timestampPeriod) * 1e-9
            self._tick_mask, self._stamps = (1 << bits) - 1, vk.ffi.new("uint64_t[2]")

    def _vk(self, what: str, fn, *args):
        try:
            return fn(*args)
        except (vk.VkError, vk.VkException) as exc:
            lost = isinstance(exc, vk.VkErrorDeviceLost)
            raise DeviceError(f"Vulkan {what} failed on {self.name}: {type(exc).__name__}"
                              f"{' (the device was lost; create a new one)' if lost else ''}"
                              ) from exc

    def _type_index(self, bits: int, want: int) -> int:
        for i, flags in enumerate(self.mem_flags):
            if bits & (1 << i) and flags & want == want:
                return i
        raise DeviceError(f"Vulkan adapter {self.name} has no memory type with flags {want:#x}")

    def _make(self, nbytes: int, usage: int, host: bool) -> _Buf:
        info = vk.VkBufferCreateInfo(size=nbytes, usage=usage,
                                     sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
        buffer = self._vk("buffer creation", vk.vkCreateBuffer, self.dev, info, None)
        req = vk.vkGetBufferMemoryRequirements(self.dev, buffer)
        index = self._type_index(req.memoryTypeBits, _HOST if host else _LOCAL)
        alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index)
        memory = self._vk(f"allocation of {nbytes} bytes", vk.vkAllocateMemory, self.dev,
                          alloc, None)
        vk.vkBindBufferMemory(self.dev, buffer, memory, 0)
        mapped = vk.vkMapMemory(self.dev, memory, 0, nbytes, 0) if host else None
        return _Buf(buffer, memory, mapped, nbytes)

    def _alloc(self, nbytes: int, data: bytes | None):
        usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        buf = self._make(nbytes, usage, self.unified)
        if data is not None:
            self._upload(buf, data)
        elif self.unified:
            buf.mapped[0:nbytes] = bytes(nbytes)
        else:
            self._run_commands(self.xfer_cmd,
                               lambda cmd: vk.vkCmdFillBuffer(cmd, buf.buffer, 0, nbytes, 0))
        return buf

    def _staging_for(self, nbytes: int) -> _Buf:
        if self._staging is None or self._staging.nbytes < nbytes:
            if self._staging is not None:
                self._free(self._staging)
            usage = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            self._staging = self._make(max(nbytes, 1 << 20), usage, True)
        return self._staging

    def _upload(self, handle: _Buf, data: bytes) -> None:
        if handle.mapped is not None:
            handle.mapped[0:len(data)] = data
            return
        staging = self._staging_for(len(data))
        staging.mapped[0:len(data)] = data
        region = vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=len(data))
        self._run_commands(self.xfer_cmd, lambda cmd: vk.vkCmdCopyBuffer(
            cmd, staging.buffer, handle.buffer, 1, [region]))

    def _download(self, handle: _Buf, nbytes: int) -> bytes:
        if handle.mapped is not None:
            return bytes(handle.mapped[0:nbytes])
        staging = self._staging_for(nbytes)
        region = vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=nbytes)
        self._run_commands(self.xfer_cmd, lambda cmd: vk.vkCmdCopyBuffer(
            cmd, handle.buffer, staging.buffer, 1, [region]))
        return bytes(staging.mapped[0:nbytes])

    def _free(self, handle: _Buf) -> None:
        if handle.mapped is not None:
            vk.vkUnmapMemory(self.dev, handle.memory)
        vk.vkDestroyBuffer(self.dev, handle.buffer, None)
        vk.vkFreeMemory(self.dev, handle.memory, None)

    def _run_commands(self, cmd, record) -> None:
        # Record with `record(cmd)`, submit, and wait for the fence.
        self._vk("command recording", vk.vkBeginCommandBuffer, cmd, self._begin)
        record(cmd)
        self._vk("command recording", vk.vkEndCommandBuffer, cmd)
        submits = self._submit_infos[0 if cmd is self.cmd else 1]
        self._vk("queue submit", vk.vkQueueSubmit, self.queue, 1, submits, self.fence)
        try:
            self._vk("wait", vk.vkWaitForFences, self.dev, 1, self._fences, vk.VK_TRUE,
                     _WAIT_NS)
        finally:
            vk.vkResetFences(self.dev, 1, self._fences)
            vk.vkResetCommandBuffer(cmd, 0)

    def _pipeline(self, meta: dict, code):
        entries = [vk.VkDescriptorSetLayoutBinding(
            binding=b, descriptorType=_UNIFORM_SET if a == "u" else _STORAGE_SET,
            descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
            for b, a in layout_of(meta)]
        try:
            set_info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(entries),
                                                          pBindings=entries)
            set_layout = self._vk("descriptor set layout", vk.vkCreateDescriptorSetLayout,
                                  self.dev, set_info, None)
            layouts = [set_layout]
            layout_info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=layouts)
            layout = self._vk("pipeline layout", vk.vkCreatePipelineLayout, self.dev,
                              layout_info, None)
            module_info = vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
            module = self._vk("shader module creation", vk.vkCreateShaderModule,
                              self.dev, module_info, None)
            stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                                                       module=module, pName="main")
            infos = [vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)]
            pipes = self._vk("compute pipeline creation", vk.vkCreateComputePipelines,
                             self.dev, self.pipeline_cache, 1, infos, None)
        except DeviceError as exc:
            raise DeviceError(f"Kernel {meta.get('id') or meta['name']!r}: the Vulkan driver "
                              f"refused the shader or its layout: {exc}") from exc
        vk.vkDestroyShaderModule(self.dev, module, None)
        return pipes[0], layout, set_layout

    def _allocate_set(self, set_layout):
        # Pools are tried in turn from the last one with room; a new one when all are full.
        layouts, pools = [set_layout], self._pools
        for tries in range(len(pools) + 1):
            if tries == len(pools):
                sizes = [vk.VkDescriptorPoolSize(type=_STORAGE_SET, descriptorCount=_POOL_SETS * 8),
                         vk.VkDescriptorPoolSize(type=_UNIFORM_SET, descriptorCount=_POOL_SETS)]
                pool_info = vk.VkDescriptorPoolCreateInfo(
                    flags=vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                    maxSets=_POOL_SETS, poolSizeCount=2, pPoolSizes=sizes)
                pools.append(self._vk("descriptor pool", vk.vkCreateDescriptorPool, self.dev,
                                      pool_info, None))
                self._pool_at = len(pools) - 1
            pool = pools[self._pool_at]
            info = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=1,
                                                  pSetLayouts=layouts)
            try:
                return list(vk.vkAllocateDescriptorSets(self.dev, info)), pool
            except _POOL_FULL:
                self._pool_at = (self._pool_at + 1) % len(pools)
        raise DeviceError(f"Vulkan descriptor set allocation failed on {self.name}")

    def _bind(self, pipeline, bound, uniform_binding, uniform):
        dsets, pool = self._allocate_set(pipeline[2])
        targets = [(b, h.buffer, n, _STORAGE_SET) for b, h, n in bound]
        ubuf = None
        if uniform is not None:
            ubuf = self._make(len(uniform), vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, True)
            ubuf.mapped[0:len(uniform)] = uniform
            targets.append((uniform_binding, ubuf.buffer, len(uniform), _UNIFORM_SET))
        infos = [[vk.VkDescriptorBufferInfo(buffer=buf, offset=0, range=n)]
                 for _, buf, n, _ in targets]
        writes = [vk.VkWriteDescriptorSet(dstSet=dsets[0], dstBinding=b, descriptorCount=1,
                                          descriptorType=t, pBufferInfo=info)
                  for (b, _, _, t), info in zip(targets, infos)]
        vk.vkUpdateDescriptorSets(self.dev, len(writes), writes, 0, None)
        return dsets, ubuf, pool

    def _set_uniform(self, entry, uniform: bytes) -> None:
        entry[1].mapped[0:len(uniform)] = uniform

    def _unbind(self, entry) -> None:
        dsets, ubuf, pool = entry
        vk.vkFreeDescriptorSets(self.dev, pool, 1, dsets)
        if ubuf is not None:
            self._free(ubuf)

    def _submit(self, jobs: list) -> None:
        barriers, queries = self._barriers, self._queries if self.timing else None

        def record(cmd):
            if queries is not None:
                vk.vkCmdResetQueryPool(cmd, queries, 0, 2)
                vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0)
            last_pipe = last_sets = None
            for i, ((pipe, layout, _), (dsets, _, _), (x, y, z)) in enumerate(jobs, 1):
                if pipe is not last_pipe:
                    vk.vkCmdBindPipeline(cmd, _COMPUTE, pipe)
                    last_pipe = pipe
                if dsets is not last_sets:
                    vk.vkCmdBindDescriptorSets(cmd, _COMPUTE, layout, 0, 1, dsets, 0, None)
                    last_sets = dsets
                vk.vkCmdDispatch(cmd, x, y, z)
                host = i == len(jobs)
                vk.vkCmdPipelineBarrier(cmd, _STAGE, _STAGE | _HOST_STAGE if host else _STAGE, 0,
                                        1, self._host_barriers if host else barriers, 0, None, 0,
                                        None)
            if queries is not None:
                vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1)

        self.gpu_seconds = None
        self._run_commands(self.cmd, record)
        if queries is not None:
            stamps = self._stamps
            self._vk("timestamp query", vk.vkGetQueryPoolResults, self.dev, queries, 0, 2,
                     16, stamps, 8, vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
            self.gpu_seconds = ((stamps[1] - stamps[0]) & self._tick_mask) * self._tick_s

    def _wait(self) -> None:
        pass  # every submission already waited on its fence
