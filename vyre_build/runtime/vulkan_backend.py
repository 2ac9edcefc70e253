"""The Vulkan backend: SPIR-V through the `vulkan` cffi package. Where all device-local
memory is host-visible and coherent (lavapipe, integrated GPUs) buffers are mapped once;
else they are device-local, with transfers through a staging buffer (forced by
VYRE_VULKAN_STAGING=1). The cffi structs free their nested data when collected, so a
nested create-info stays in a variable until the call that reads it; array counts are
taken from the lists given. Pipelines: vulkan_pipelines.py; what the device offers and
is created with: vulkan_profile.py."""

from __future__ import annotations

import os
import time
import warnings
from typing import TYPE_CHECKING, Any, NamedTuple

import vulkan as vk

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.errors import DeviceError
from vyre_build.runtime import vulkan_pipelines, vulkan_profile
from vyre_build.runtime.device import Device, Job, choose_adapter, steps

if TYPE_CHECKING:
    from vyre_build.runtime.pipeline_cache import PipelineCacheFile

_HOST = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
_LOCAL, _COMPUTE = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, vk.VK_PIPELINE_BIND_POINT_COMPUTE
_STAGE = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
_HOST_STAGES = _STAGE | vk.VK_PIPELINE_STAGE_HOST_BIT
_ACCESS = (
    vk.VK_ACCESS_SHADER_READ_BIT
    | vk.VK_ACCESS_SHADER_WRITE_BIT
    | vk.VK_ACCESS_TRANSFER_READ_BIT
    | vk.VK_ACCESS_TRANSFER_WRITE_BIT
)
_COPY = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
_STORAGE_SET, _UNIFORM_SET = (
    vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
    vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
)
_RANK = {t: i for i, t in enumerate(vulkan_profile.TYPES)}
_POOL_SETS, _WAIT_NS, _SPIN_S, _RING_MAX = 64, 120 * 10**9, 0.02, 64
_NO_DRIVER = "install a Vulkan driver (e.g. Mesa lavapipe, package mesa-vulkan-drivers)"


class _Buf(NamedTuple):
    """A VkBuffer with its memory and, when host-visible, its persistent mapping."""

    buffer: Any
    memory: Any
    mapped: Any
    nbytes: int


def list_adapters() -> list[str]:
    """A description of every Vulkan physical device, in the loader's order."""
    return [desc for _, _, desc in vulkan_profile.physical_devices()]


def adapter_profiles() -> list[Any]:
    """The DeviceProfile of every Vulkan physical device (no device is created)."""
    return [vulkan_profile.query(*found)[0] for found in vulkan_profile.physical_devices()]


class VulkanDevice(Device):
    """A Vulkan logical device with one compute queue and fence, created with every
    feature vyre_build kernels can use that the adapter has (see vulkan_profile.py); its
    pipelines go through a VkPipelineCache persisted per user (pipeline_cache.py). With
    `timing` set, two timestamp queries bracket each submission.

    Arguments:
        adapter: an index into list_adapters("vulkan"), a substring of a description, or
            None for the first discrete, else integrated, ... GPU.
        pipeline_cache: the persisted cache's directory, False (or "off") for none, or
            None for $VYRE_PIPELINE_CACHE, else the user cache directory.
    """

    backend = "vulkan"
    dispatch_base = True
    cache_file: PipelineCacheFile | None
    cache_loaded = 0  # bytes of persisted cache the device started with

    def __init__(
        self,
        adapter: int | str | None = None,
        *,
        pipeline_cache: str | os.PathLike[str] | bool | None = None,
    ):
        super().__init__()
        found = vulkan_profile.physical_devices()
        if not found:
            raise DeviceError(f"the Vulkan loader lists no physical device; {_NO_DRIVER}")
        self.physical, props, self.name = (
            min(found, key=lambda f: _RANK.get(f[1].deviceType, len(_RANK)))
            if adapter is None
            else choose_adapter("Vulkan", found, [f[2] for f in found], adapter)
        )
        self.profile, enable = vulkan_profile.query(self.physical, props, self.name)
        limits = props.limits
        self._spin_s = 0.0 if props.deviceType == vk.VK_PHYSICAL_DEVICE_TYPE_CPU else _SPIN_S
        self.max_workgroup_count = self.profile.max_workgroup_count
        self.max_buffer_bytes = int(limits.maxStorageBufferRange)
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        compute = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not compute:
            raise DeviceError(f"Vulkan adapter {self.name} has no compute queue")
        self.family = compute[0]
        try:
            self.dev = self._create(enable)
        except DeviceError as exc:
            if enable == vulkan_profile.Enable():
                raise
            # A driver that lists a feature and then refuses it: run without the optional ones.
            warnings.warn(
                f"vyre_build: {self.name}: {exc}; the device is made without f16, 16-bit "
                "storage and cooperative matrices",
                RuntimeWarning,
                stacklevel=2,
            )
            self.profile = vulkan_profile.without_optional(self.profile)
            self.dev = self._create(vulkan_profile.Enable())
        self.queue = vk.vkGetDeviceQueue(self.dev, self.family, 0)
        # (pipeline layout, set layout) per binding signature, shared by every pipeline
        self.layouts: dict[tuple[tuple[int, bool], ...], tuple[Any, Any]] = {}
        mem = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.mem_flags = [mem.memoryTypes[i].propertyFlags for i in range(mem.memoryTypeCount)]
        local = [f for f in self.mem_flags if f & _LOCAL]
        self.unified = (
            bool(local)
            and all(f & _HOST == _HOST for f in local)
            and os.environ.get("VYRE_VULKAN_STAGING") != "1"
        )
        self.cmd_pool = self._new(
            "command pool",
            "CommandPool",
            queueFamilyIndex=self.family,
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        )
        self.fence = self._new("fence", "Fence")
        self._live_bufs: dict[int, _Buf] = {}  # freed by close()
        self.pipeline_cache = vulkan_pipelines.open_cache(self, props, pipeline_cache)
        # The driver's one-time pipeline-layout set-up (4-5 ms on NVIDIA without its disk
        # cache) belongs to the device, not to whichever kernel is loaded first.
        vulkan_pipelines.first_layout(self)
        # Command buffers of the submissions since the last wait (only the last one of
        # those carries the fence), with their submit infos; allocated as needed.
        self._ring: list[tuple[Any, Any]] = []
        self._sent, self._stamped = 0, False
        self._fence_arr = vk.ffi.new("VkFence[1]", [self.fence])
        self._begin = vk.ffi.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                "flags": vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            },
        )
        self._pool_sizes = [
            vk.VkDescriptorPoolSize(type=t, descriptorCount=n)
            for t, n in ((_STORAGE_SET, _POOL_SETS * 8), (_UNIFORM_SET, _POOL_SETS))
        ]
        # Between dispatches: later dispatches and transfers see earlier writes; at the end
        # of a waited-for submission ([1]), host reads of mapped memory see them too. The
        # per-dispatch calls go to the cffi library directly (the `vulkan` package's argument
        # conversion costs more than the call), with structs made once here.
        self._barriers = [
            vk.ffi.new(
                "VkMemoryBarrier*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                    "srcAccessMask": _ACCESS,
                    "dstAccessMask": _ACCESS | h,
                },
            )
            for h in (0, vk.VK_ACCESS_HOST_READ_BIT)
        ]
        self._pools: list[Any] = []
        self._pool_at, self._queries = 0, None
        self._staging: _Buf | None = None
        bits = families[self.family].timestampValidBits
        if bits:  # GPU timestamps: ticks of timestampPeriod ns, `bits` valid bits
            self._queries = self._new(
                "query pool", "QueryPool", queryCount=2, queryType=vk.VK_QUERY_TYPE_TIMESTAMP
            )
            self._tick_s = float(limits.timestampPeriod) * 1e-9
            self._tick_mask, self._stamps = (1 << bits) - 1, vk.ffi.new("uint64_t[2]")

    def _create(self, enable: vulkan_profile.Enable) -> Any:
        keep: list[Any] = []  # the create-info's nested structs, read by vkCreateDevice
        info = vulkan_profile.device_create_info(self.family, enable, keep)
        return self._vk("device creation", vk.vkCreateDevice, self.physical, info, None)

    def _fail(self, what: str, error: str, lost: bool) -> DeviceError:
        return DeviceError(
            f"Vulkan {what} failed on {self.name}: {error}"
            f"{' (the device was lost; create a new one)' if lost else ''}"
        )

    def _vk(self, what: str, fn: Any, *args: Any) -> Any:
        # fn(*args) through the `vulkan` package, its exceptions raised as DeviceError.
        try:
            return fn(*args)
        except (vk.VkError, vk.VkException) as exc:
            lost = isinstance(exc, vk.VkErrorDeviceLost)
            raise self._fail(what, type(exc).__name__, lost) from exc

    def _check(self, what: str, result: int) -> None:
        # VkResult of a direct library call: anything but VK_SUCCESS is a DeviceError.
        if result != vk.VK_SUCCESS:
            error = "VK_TIMEOUT" if result == vk.VK_TIMEOUT else f"VkResult {result}"
            raise self._fail(what, error, result == vk.VK_ERROR_DEVICE_LOST)

    def _new(self, what: str, kind: str, **fields: Any) -> Any:
        # vkCreate<kind>(device, Vk<kind>CreateInfo(**fields), None), errors named `what`.
        info = getattr(vk, f"Vk{kind}CreateInfo")(**fields)
        return self._vk(what, getattr(vk, f"vkCreate{kind}"), self.dev, info, None)

    def _make(self, nbytes: int, usage: int, host: bool) -> _Buf:
        nbytes = -(-nbytes // 4) * 4  # fills and copies work in 4-byte words (f16 buffers)
        buffer = self._new(
            "buffer creation",
            "Buffer",
            size=nbytes,
            usage=usage,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
        )
        req, want = vk.vkGetBufferMemoryRequirements(self.dev, buffer), _HOST if host else _LOCAL
        index = next(
            (
                i
                for i, flags in enumerate(self.mem_flags)
                if req.memoryTypeBits & (1 << i) and flags & want == want
            ),
            None,
        )
        if index is None:
            raise DeviceError(f"Vulkan adapter {self.name} has no memory type with flags {want:#x}")
        info = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index)
        memory = self._vk(
            f"allocation of {nbytes} bytes", vk.vkAllocateMemory, self.dev, info, None
        )
        vk.vkBindBufferMemory(self.dev, buffer, memory, 0)
        mapped = vk.vkMapMemory(self.dev, memory, 0, nbytes, 0) if host else None
        return _Buf(buffer, memory, mapped, nbytes)

    def _alloc(self, nbytes: int, data: bytes | None) -> _Buf:
        buf = self._make(nbytes, vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | _COPY, self.unified)
        self._live_bufs[id(buf)] = buf
        if self.unified:
            buf.mapped[0 : buf.nbytes] = (
                bytes(buf.nbytes) if data is None else data.ljust(buf.nbytes, b"\0")
            )
        elif data is not None:
            self._upload(buf, data)
        else:
            self._run_commands(vk.vkCmdFillBuffer, buf.buffer, 0, buf.nbytes, 0)
        return buf

    def _staged(self, nbytes: int) -> _Buf:
        # The staging buffer, grown to hold `nbytes`.
        if self._staging is None or self._staging.nbytes < nbytes:
            if self._staging is not None:
                self._free(self._staging)
            self._staging = self._make(max(nbytes, 1 << 20), _COPY, True)
        return self._staging

    def _copy(self, src: _Buf, dst: _Buf, nbytes: int) -> None:
        region = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=nbytes)]
        self._run_commands(vk.vkCmdCopyBuffer, src.buffer, dst.buffer, 1, region)

    def _upload(self, handle: _Buf, data: bytes) -> None:
        target = handle if handle.mapped is not None else self._staged(len(data))
        target.mapped[0 : len(data)] = data
        if target is not handle:
            self._copy(target, handle, len(data))

    def _download(self, handle: _Buf, nbytes: int) -> bytes:
        if handle.mapped is None:
            staging = self._staged(nbytes)
            self._copy(handle, staging, nbytes)
            handle = staging
        return bytes(handle.mapped[0:nbytes])

    def _free(self, handle: _Buf) -> None:
        self._live_bufs.pop(id(handle), None)
        if handle.mapped is not None:
            vk.vkUnmapMemory(self.dev, handle.memory)
        vk.vkDestroyBuffer(self.dev, handle.buffer, None)
        vk.vkFreeMemory(self.dev, handle.memory, None)

    def _run_commands(self, record: Any, *args: Any, final: bool = True) -> None:
        # Record `record(cmd, *args)` into the next command buffer and submit it; if `final`,
        # with a barrier for host reads and the fence, then wait: the fence covers all
        # earlier submissions.
        lib = vk.lib
        if self._sent == len(self._ring):
            alloc = vk.VkCommandBufferAllocateInfo(
                commandPool=self.cmd_pool,
                commandBufferCount=1,
                level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            )
            cmds = vk.ffi.new(
                "VkCommandBuffer[1]",
                [self._vk("command buffer", vk.vkAllocateCommandBuffers, self.dev, alloc)[0]],
            )
            self._ring.append(
                (
                    cmds,
                    vk.ffi.new(
                        "VkSubmitInfo*",
                        {
                            "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                            "commandBufferCount": 1,
                            "pCommandBuffers": cmds,
                        },
                    ),
                )
            )
        # Past _RING_MAX unwaited submissions, this one waits too (back-pressure).
        wait = final or self._sent + 1 >= _RING_MAX
        cmds, submit = self._ring[self._sent]
        self._check("command recording", lib.vkBeginCommandBuffer(cmds[0], self._begin))
        record(cmds[0], *args)
        if wait:
            lib.vkCmdPipelineBarrier(
                cmds[0],
                _STAGE,
                _HOST_STAGES,
                0,
                1,
                self._barriers[1],
                0,
                vk.ffi.NULL,
                0,
                vk.ffi.NULL,
            )
        self._check("command recording", lib.vkEndCommandBuffer(cmds[0]))
        self._check(
            "queue submit",
            lib.vkQueueSubmit(self.queue, 1, submit, self.fence if wait else vk.ffi.NULL),
        )
        self._sent += 1
        if wait:
            status = self._wait_fence(lib)
            if status == vk.VK_TIMEOUT:  # still running: nothing may be reset under it
                raise self._fail("wait", f"VK_TIMEOUT after {_WAIT_NS // 10**9} s", False)
            lib.vkResetFences(self.dev, 1, self._fence_arr)
            for cmds, _ in self._ring[: self._sent]:
                lib.vkResetCommandBuffer(cmds[0], 0)
            self._sent = 0
            self._check("wait", status)

    def _wait_fence(self, lib: Any) -> int:
        # Poll for up to _SPIN_S, as CUDA syncs do (a blocking wait wakes ~30 us late), then
        # block; a CPU device (lavapipe) needs the host's cores itself, so it never polls.
        # VK_NOT_READY is the only "not yet" answer; anything else ends the poll. An
        # interrupt (Ctrl-C) during the poll waits for the work before it propagates, since
        # the caller then frees what the GPU is still using.
        deadline = time.perf_counter() + self._spin_s
        try:
            while (
                status := lib.vkGetFenceStatus(self.dev, self.fence)
            ) == vk.VK_NOT_READY and time.perf_counter() < deadline:
                pass
        except BaseException:
            lib.vkWaitForFences(self.dev, 1, self._fence_arr, vk.VK_TRUE, _WAIT_NS)
            raise
        if status == vk.VK_NOT_READY:
            status = lib.vkWaitForFences(self.dev, 1, self._fence_arr, vk.VK_TRUE, _WAIT_NS)
        return int(status)

    def _pipeline(
        self, meta: KernelMeta, code: Any, base: tuple[int, int, int] | None, entry: str
    ) -> Any:
        return vulkan_pipelines.create_pipelines(self, [(meta, code, entry)], base)[0]

    def _pipelines_many(self, kernels: list[tuple[KernelMeta, Any, str]]) -> list[Any]:
        return vulkan_pipelines.create_pipelines(self, kernels, None)

    def save_pipeline_cache(self) -> bool:
        with self._lock:
            return vulkan_pipelines.save_cache(self)

    def _bind(
        self,
        pipeline: Any,
        bound: list[tuple[int, Any, int]],
        uniform_binding: int | None,
        uniform: bytes | None,
    ) -> Any:
        # Descriptor pools are tried in turn from the last one with room; a new one when all
        # are full.
        pools = self._pools
        for tries in range(len(pools) + 1):
            if tries == len(pools):
                pools.append(
                    self._new(
                        "descriptor pool",
                        "DescriptorPool",
                        maxSets=_POOL_SETS,
                        flags=vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                        pPoolSizes=self._pool_sizes,
                    )
                )
                self._pool_at = tries
            pool = pools[self._pool_at]
            info = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool, pSetLayouts=[pipeline[2]])
            try:
                dsets = list(vk.vkAllocateDescriptorSets(self.dev, info))
                break
            except (vk.VkErrorOutOfPoolMemory, vk.VkErrorFragmentedPool):
                self._pool_at = (self._pool_at + 1) % len(pools)
        else:
            raise DeviceError(f"Vulkan descriptor set allocation failed on {self.name}")
        targets: list[tuple[int | None, Any, int, int]] = [
            (b, h.buffer, n, _STORAGE_SET) for b, h, n in bound
        ]
        ubuf = None
        if uniform is not None:
            ubuf = self._make(len(uniform), vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, True)
            ubuf.mapped[0 : len(uniform)] = uniform
            targets.append((uniform_binding, ubuf.buffer, len(uniform), _UNIFORM_SET))
        infos = [
            [vk.VkDescriptorBufferInfo(buffer=buf, offset=0, range=n)] for _, buf, n, _ in targets
        ]
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=dsets[0], dstBinding=b, descriptorType=t, pBufferInfo=info
            )
            for (b, _, _, t), info in zip(targets, infos)
        ]
        vk.vkUpdateDescriptorSets(self.dev, len(writes), writes, 0, None)
        return dsets, ubuf, pool, vk.ffi.new("VkDescriptorSet[1]", dsets)

    def _wait(self) -> None:
        if self._sent:  # chunks of a batch in flight
            self._run_commands(lambda cmd: None)

    def _close(self) -> None:
        # Everything the device made, then the device; the VkInstance stays (shared).
        vk.vkDeviceWaitIdle(self.dev)
        for entries in self._sets.values():
            for entry in entries:
                self._unbind(entry)
        for buf in [*self._live_bufs.values(), *filter(None, [self._staging])]:
            self._free(buf)
        for pipe, _, _ in self._pipelines.values():
            vk.vkDestroyPipeline(self.dev, pipe, None)
        for layout, set_layout in self.layouts.values():
            vk.vkDestroyPipelineLayout(self.dev, layout, None)
            vk.vkDestroyDescriptorSetLayout(self.dev, set_layout, None)
        for pool in self._pools:
            vk.vkDestroyDescriptorPool(self.dev, pool, None)
        if self._queries is not None:
            vk.vkDestroyQueryPool(self.dev, self._queries, None)
        vk.vkDestroyPipelineCache(self.dev, self.pipeline_cache, None)
        vk.vkDestroyFence(self.dev, self.fence, None)
        vk.vkDestroyCommandPool(self.dev, self.cmd_pool, None)
        vk.vkDestroyDevice(self.dev, None)
        self._sets.clear()
        self._pipelines.clear()

    def _set_uniform(self, entry: Any, uniform: bytes) -> None:
        entry[1].mapped[0 : len(uniform)] = uniform

    def _unbind(self, entry: Any) -> None:
        dsets, ubuf, pool, _ = entry
        vk.vkFreeDescriptorSets(self.dev, pool, 1, dsets)
        if ubuf is not None:
            self._free(ubuf)

    def _submit(self, jobs: list[Job], final: bool) -> None:
        if not jobs and not (final and (self._sent or self._stamped)):
            return
        if final and not self._stamped:
            self.gpu_seconds = None
        self._run_commands(self._record, jobs, final, final=final)
        if final and self._stamped:
            self._stamped, stamps = False, self._stamps
            self._vk(
                "timestamp query",
                vk.vkGetQueryPoolResults,
                self.dev,
                self._queries,
                0,
                2,
                16,
                stamps,
                8,
                vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT,
            )
            self.gpu_seconds = ((stamps[1] - stamps[0]) & self._tick_mask) * self._tick_s

    def _record(self, cmd: Any, jobs: list[Job], final: bool) -> None:
        lib, null, queries = vk.lib, vk.ffi.NULL, self._queries
        if self.timing and queries is not None and not self._stamped:
            # GPU time from before the batch's first dispatch to after its last one.
            self._stamped, self.gpu_seconds = True, None
            lib.vkCmdResetQueryPool(cmd, queries, 0, 2)
            lib.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0)
        for pipe, entry, (x, y, z), new_pipe, new_set in steps(jobs):
            if new_pipe:
                lib.vkCmdBindPipeline(cmd, _COMPUTE, pipe[0])
            if new_set:
                lib.vkCmdBindDescriptorSets(cmd, _COMPUTE, pipe[1], 0, 1, entry[3], 0, null)
            lib.vkCmdDispatch(cmd, x, y, z)
            lib.vkCmdPipelineBarrier(cmd, _STAGE, _STAGE, 0, 1, self._barriers[0], 0, null, 0, null)
        if final and self._stamped:
            lib.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1)
