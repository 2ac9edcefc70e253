"""The Vulkan backend: SPIR-V through the `vulkan` cffi package.

Memory: where every device-local memory type is also host-visible and coherent (one
memory, e.g. lavapipe or an integrated GPU) buffers are mapped once and written in
place; otherwise (a discrete GPU) buffers are device-local and transfers go through a
host-visible staging buffer. VYRE_VULKAN_STAGING=1 forces the staging path (tests).
One queue, one command pool, a fence per command buffer, one VkPipelineCache per device,
a pipeline per kernel, descriptor pools and a uniform arena recycled after each submit.
The cffi structs free their nested data when collected, so every nested create-info is
held in a local variable until the call that reads it returns.
"""
from __future__ import annotations

import os

import vulkan as vk

from vyre_build.errors import DeviceError
from vyre_build.runtime.device import Device

_HOST = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
_LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
_COMPUTE = vk.VK_PIPELINE_BIND_POINT_COMPUTE
_STAGE = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
_ACCESS = (vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
           | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
# After a dispatch: later dispatches, transfers and host reads (mapped memory) see it.
_DST_STAGE = _STAGE | vk.VK_PIPELINE_STAGE_HOST_BIT
_DST_ACCESS = _ACCESS | vk.VK_ACCESS_HOST_READ_BIT
_TYPE_RANK = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0,
              vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
              vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2, vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3}
_TYPE_NAME = {0: "discrete GPU", 1: "integrated GPU", 2: "virtual GPU", 3: "CPU"}
_ARENA_BYTES = 1 << 16
_POOL_SETS = 64
_WAIT_NS = 120 * 10 ** 9
_INSTANCE = []


def _instance():
    if not _INSTANCE:
        app = vk.VkApplicationInfo(pApplicationName="vyre_build", applicationVersion=1,
                                   pEngineName="vyre_build", engineVersion=1,
                                   apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))
        info = vk.VkInstanceCreateInfo(pApplicationInfo=app)
        try:
            _INSTANCE.append(vk.vkCreateInstance(info, None))
        except (vk.VkError, vk.VkException, OSError) as exc:
            raise DeviceError(f"no Vulkan instance: {exc!r}; install a Vulkan driver "
                              "(e.g. Mesa lavapipe, package mesa-vulkan-drivers)") from exc
    return _INSTANCE[0]


def _physical_devices() -> list:
    found = []
    for phys in vk.vkEnumeratePhysicalDevices(_instance()):
        props = vk.vkGetPhysicalDeviceProperties(phys)
        rank = _TYPE_RANK.get(props.deviceType, 4)
        name = str(props.deviceName)  # the vulkan package already decodes char arrays
        found.append((phys, props, f"{name} [{_TYPE_NAME.get(rank, 'other')}, Vulkan]", rank))
    return found


def list_adapters() -> list[str]:
    """A description of every Vulkan physical device, in the loader's order."""
    return [desc for _, _, desc, _ in _physical_devices()]


def _pick(adapter):
    found = _physical_devices()
    names = [d for _, _, d, _ in found]
    if not found:
        raise DeviceError("the Vulkan loader lists no physical device; install a driver "
                          "(e.g. Mesa lavapipe, package mesa-vulkan-drivers)")
    if adapter is None:
        return min(found, key=lambda f: f[3])  # prefer discrete, then integrated, ...
    if isinstance(adapter, int) and not isinstance(adapter, bool):
        if not 0 <= adapter < len(found):
            raise DeviceError(f"Vulkan adapter index {adapter} is out of range; "
                              f"there are {len(found)}: {names}")
        return found[adapter]
    hits = [f for f in found if str(adapter).lower() in f[2].lower()]
    if not hits:
        raise DeviceError(f"no Vulkan adapter matches {adapter!r}; there are: {names}")
    return hits[0]


class _Buf:
    """A VkBuffer with its memory (and the persistent mapping when host-visible)."""
    __slots__ = ("buffer", "mapped", "memory", "nbytes")

    def __init__(self, buffer, memory, mapped, nbytes):
        self.buffer, self.memory, self.mapped, self.nbytes = buffer, memory, mapped, nbytes


class VulkanDevice(Device):
    """A Vulkan logical device with one compute queue."""

    backend = "vulkan"

    def __init__(self, adapter=None):
        super().__init__()
        self.physical, props, self.name, _ = _pick(adapter)
        limits = props.limits
        self.max_workgroups = int(min(limits.maxComputeWorkGroupCount[0:3]))
        self.max_buffer_bytes = int(limits.maxStorageBufferRange)
        self.uniform_align = max(16, int(limits.minUniformBufferOffsetAlignment))
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        compute = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not compute:
            raise DeviceError(f"Vulkan adapter {self.name} has no compute queue")
        self.family = compute[0]
        priorities = [1.0]
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1,
                                                pQueuePriorities=priorities)
        device_info = vk.VkDeviceCreateInfo(queueCreateInfoCount=1,
                                            pQueueCreateInfos=[queue_info])
        self.dev = self._vk("device creation", vk.vkCreateDevice, self.physical,
                            device_info, None)
        self.queue = vk.vkGetDeviceQueue(self.dev, self.family, 0)
        self._memory_types()
        pool_info = vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=self.family)
        self.cmd_pool = self._vk("command pool", vk.vkCreateCommandPool, self.dev,
                                 pool_info, None)
        alloc = vk.VkCommandBufferAllocateInfo(commandPool=self.cmd_pool,
                                               level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                               commandBufferCount=2)
        cmds = self._vk("command buffers", vk.vkAllocateCommandBuffers, self.dev, alloc)
        self.cmd, self.xfer_cmd = cmds[0], cmds[1]
        fence_info = vk.VkFenceCreateInfo()
        self.fence = vk.vkCreateFence(self.dev, fence_info, None)
        # Structs reused by every submission (built once: cffi struct creation is slow).
        self._fences = [self.fence]
        self._begin = vk.VkCommandBufferBeginInfo(
            flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        self._cmd_lists = ([self.cmd], [self.xfer_cmd])
        self._submit_infos = tuple(
            [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=c)] for c in self._cmd_lists)
        barrier = vk.VkMemoryBarrier(srcAccessMask=_ACCESS, dstAccessMask=_DST_ACCESS)
        self._barriers = [barrier]
        cache_info = vk.VkPipelineCacheCreateInfo()
        self.pipeline_cache = vk.vkCreatePipelineCache(self.dev, cache_info, None)
        self._pools, self._pool_at = [], 0
        self._kept_pools, self._kept_full = [], False
        self._arenas, self._arena_at, self._arena_used = [], 0, 0
        self._staging = None

    def _vk(self, what: str, fn, *args):
        try:
            return fn(*args)
        except (vk.VkError, vk.VkException) as exc:
            lost = isinstance(exc, vk.VkErrorDeviceLost)
            raise DeviceError(f"Vulkan {what} failed on {self.name}: {type(exc).__name__}"
                              f"{' (the device was lost; create a new one)' if lost else ''}"
                              ) from exc

    def _memory_types(self) -> None:
        mem = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.mem_flags = [mem.memoryTypes[i].propertyFlags for i in range(mem.memoryTypeCount)]
        local = [f for f in self.mem_flags if f & _LOCAL]
        self.unified = (bool(local) and all(f & _HOST == _HOST for f in local)
                        and os.environ.get("VYRE_VULKAN_STAGING") != "1")

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

    def _alloc(self, nbytes: int, data: bytes | None = None):
        usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        buf = self._make(nbytes, usage, host=self.unified)
        if data is not None:
            self._upload(buf, data)
        elif self.unified:
            buf.mapped[0:nbytes] = bytes(nbytes)
        else:
            self._transfer(lambda cmd: vk.vkCmdFillBuffer(cmd, buf.buffer, 0, nbytes, 0))
        return buf

    def _staging_for(self, nbytes: int) -> _Buf:
        if self._staging is None or self._staging.nbytes < nbytes:
            if self._staging is not None:
                self._release(self._staging)
            usage = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            self._staging = self._make(max(nbytes, 1 << 20), usage, host=True)
        return self._staging

    def _upload(self, handle: _Buf, data: bytes) -> None:
        if handle.mapped is not None:
            handle.mapped[0:len(data)] = data
            return
        staging = self._staging_for(len(data))
        staging.mapped[0:len(data)] = data
        region = vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=len(data))
        self._transfer(lambda cmd: vk.vkCmdCopyBuffer(cmd, staging.buffer, handle.buffer,
                                                      1, [region]))

    def _download(self, handle: _Buf, nbytes: int) -> bytes:
        if handle.mapped is not None:
            return bytes(handle.mapped[0:nbytes])
        staging = self._staging_for(nbytes)
        region = vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=nbytes)
        self._transfer(lambda cmd: vk.vkCmdCopyBuffer(cmd, handle.buffer, staging.buffer,
                                                      1, [region]))
        return bytes(staging.mapped[0:nbytes])

    def _release(self, handle: _Buf) -> None:
        for dset, ubuf, pool in self._sets.drop(handle):
            vk.vkFreeDescriptorSets(self.dev, pool, 1, [dset])
            if ubuf is not None:
                self._release(ubuf)
        if handle.mapped is not None:
            vk.vkUnmapMemory(self.dev, handle.memory)
        vk.vkDestroyBuffer(self.dev, handle.buffer, None)
        vk.vkFreeMemory(self.dev, handle.memory, None)

    def _run_commands(self, cmd, record) -> None:
        """Record into `cmd` with `record(cmd)`, submit, and wait for the fence."""
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

    def _transfer(self, record) -> None:
        self._run_commands(self.xfer_cmd, record)

    def _pipeline(self, meta: dict, code):
        kid = meta.get("id") or meta["name"]
        try:
            return self._create_pipeline(meta, code)
        except DeviceError as exc:
            raise DeviceError(f"Kernel {kid!r}: the Vulkan driver refused the shader or its "
                              f"layout: {exc}") from exc

    def _create_pipeline(self, meta: dict, code):
        kinds = [(b["binding"], vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)
                 for b in meta["bindings"] if b["kind"] == "buffer"]
        if meta.get("uniform"):
            kinds.append((meta["uniform"]["binding"], vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER))
        entries = [vk.VkDescriptorSetLayoutBinding(
            binding=b, descriptorType=t, descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for b, t in sorted(kinds)]
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
        info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)
        infos = [info]
        pipes = self._vk("compute pipeline creation", vk.vkCreateComputePipelines,
                         self.dev, self.pipeline_cache, 1, infos, None)
        vk.vkDestroyShaderModule(self.dev, module, None)
        return pipes[0], layout, set_layout

    def _descriptor_set(self, set_layout):
        layouts = [set_layout]
        while True:
            if self._pool_at == len(self._pools):
                sizes = [vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                 descriptorCount=_POOL_SETS * 8),
                         vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                                                 descriptorCount=_POOL_SETS)]
                pool_info = vk.VkDescriptorPoolCreateInfo(maxSets=_POOL_SETS, poolSizeCount=2,
                                                          pPoolSizes=sizes)
                self._pools.append(self._vk("descriptor pool", vk.vkCreateDescriptorPool,
                                            self.dev, pool_info, None))
            info = vk.VkDescriptorSetAllocateInfo(descriptorPool=self._pools[self._pool_at],
                                                  descriptorSetCount=1, pSetLayouts=layouts)
            try:
                return vk.vkAllocateDescriptorSets(self.dev, info)[0]
            except (vk.VkErrorOutOfPoolMemory, vk.VkErrorFragmentedPool):
                self._pool_at += 1  # this pool is full until the next submit resets it

    def _uniform_slice(self, data: bytes):
        size = -(-len(data) // self.uniform_align) * self.uniform_align
        if self._arena_at < len(self._arenas) and self._arena_used + size > _ARENA_BYTES:
            self._arena_at, self._arena_used = self._arena_at + 1, 0
        if self._arena_at == len(self._arenas):
            self._arenas.append(self._make(max(_ARENA_BYTES, size),
                                           vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, host=True))
        arena, offset = self._arenas[self._arena_at], self._arena_used
        arena.mapped[offset:offset + len(data)] = data
        self._arena_used += size
        return arena.buffer, offset

    def _encode(self, pipeline, bound, uniform_binding, uniform, workgroups, cacheable):
        pipe, layout, set_layout = pipeline
        if cacheable:
            key = (id(pipe), tuple((b, id(h), n) for b, h, n in bound))
            entry = self._sets.take(key)
            if entry is None and key not in self._sets.busy:
                entry = self._kept_set(set_layout, bound, uniform_binding, uniform)
                self._sets.put(key, [h for _, h, _ in bound], entry)
            if entry is not None:
                dset, ubuf, _ = entry
                if ubuf is not None:
                    ubuf.mapped[0:len(uniform)] = uniform
                return pipe, layout, dset, workgroups
        dset = self._descriptor_set(set_layout)
        targets = [(b, h.buffer, 0, n, vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)
                   for b, h, n in bound]
        if uniform is not None:
            buffer, offset = self._uniform_slice(uniform)
            targets.append((uniform_binding, buffer, offset, len(uniform),
                            vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER))
        self._write_set(dset, targets)
        return pipe, layout, dset, workgroups

    def _kept_set(self, set_layout, bound, uniform_binding, uniform):
        """A descriptor set from a freeable pool with its own uniform buffer, kept in the
        binding cache until one of its buffers is released."""
        layouts = [set_layout]
        while True:
            if not self._kept_pools or self._kept_full:
                sizes = [vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                 descriptorCount=_POOL_SETS * 8),
                         vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                                                 descriptorCount=_POOL_SETS)]
                pool_info = vk.VkDescriptorPoolCreateInfo(
                    flags=vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                    maxSets=_POOL_SETS, poolSizeCount=2, pPoolSizes=sizes)
                self._kept_pools.append(self._vk("descriptor pool", vk.vkCreateDescriptorPool,
                                                 self.dev, pool_info, None))
                self._kept_full = False
            pool = self._kept_pools[-1]
            info = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=1,
                                                  pSetLayouts=layouts)
            try:
                dset = vk.vkAllocateDescriptorSets(self.dev, info)[0]
                break
            except (vk.VkErrorOutOfPoolMemory, vk.VkErrorFragmentedPool):
                self._kept_full = True  # this pool is full: continue in a new one
        ubuf, targets = None, [(b, h.buffer, 0, n, vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)
                               for b, h, n in bound]
        if uniform is not None:
            ubuf = self._make(len(uniform), vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, host=True)
            targets.append((uniform_binding, ubuf.buffer, 0, len(uniform),
                            vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER))
        self._write_set(dset, targets)
        return dset, ubuf, pool

    def _write_set(self, dset, targets) -> None:
        infos = [[vk.VkDescriptorBufferInfo(buffer=buf, offset=off, range=n)]
                 for _, buf, off, n, _ in targets]
        writes = [vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=b, descriptorCount=1,
                                          descriptorType=t, pBufferInfo=info)
                  for (b, _, _, _, t), info in zip(targets, infos)]
        vk.vkUpdateDescriptorSets(self.dev, len(writes), writes, 0, None)

    def _submit(self, jobs: list) -> None:
        barriers = self._barriers

        def record(cmd):
            for pipe, layout, dset, (x, y, z) in jobs:
                vk.vkCmdBindPipeline(cmd, _COMPUTE, pipe)
                vk.vkCmdBindDescriptorSets(cmd, _COMPUTE, layout, 0, 1, [dset], 0, None)
                vk.vkCmdDispatch(cmd, x, y, z)
                # Later dispatches and transfers see this dispatch's writes.
                vk.vkCmdPipelineBarrier(cmd, _STAGE, _DST_STAGE, 0, 1, barriers, 0, None, 0,
                                        None)

        try:
            self._run_commands(self.cmd, record)
        finally:
            for pool in self._pools[:self._pool_at + 1]:
                vk.vkResetDescriptorPool(self.dev, pool, 0)
            self._pool_at, self._arena_at, self._arena_used = 0, 0, 0
            self._sets.submitted()

    def _wait(self) -> None:
        """Nothing to do: every submission already waited on its fence."""
