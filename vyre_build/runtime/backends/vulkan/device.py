"""The Vulkan backend: SPIR-V through the `vulkan` cffi package. Where all device-local
memory is host-visible and coherent (lavapipe, integrated GPUs) buffers are mapped once;
else they are device-local, with transfers through a staging buffer (forced by
VYRE_VULKAN_STAGING=1). The cffi structs free their nested data when collected, so a
nested create-info stays in a variable until the call that reads it; array counts are
taken from the lists given. Pipelines, their layouts and the pipeline cache: the device's
`pipelines` (pipelines.py); its descriptor pools: sets.py; what the device offers and is created with: profile.py;
VkResults as errors: results.py.

Guarantees:
- Every Vulkan call that can fail raises a DeviceError naming what failed, the call and
  its VkResult ("vkAllocateDescriptorSets returned VK_ERROR_OUT_OF_POOL_MEMORY
  (-1000069000)"), whatever the `vulkan` package maps the code to (or fails to).
- Descriptor sets come from pools of `pool_sets` sets each (sets.py: `DescriptorPools`,
  owned by the device), a new pool made whenever the ones there are full by count or
  refuse: any number of batches and kept sets fit; an emptied pool is destroyed while
  another empty one is kept.
- A wait for the GPU gives up after `wait_timeout_s` seconds ($VYRE_VK_TIMEOUT, default
  120). A wait that ends in anything but VK_SUCCESS (VK_TIMEOUT, VK_ERROR_DEVICE_LOST),
  or any call returning VK_ERROR_DEVICE_LOST, makes the device unusable: nothing the GPU
  may still touch is freed or reused, every later use raises DeviceError, get_device makes
  a new device, and close() frees the rest only if the work has ended by then (else it is
  left allocated: leaked, never freed under the GPU). A failure while earlier submissions
  are in flight waits for them first, so the caller may free what they used; so does an
  interrupt (Ctrl-C) during a wait: the next free or use of the device waits it out.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import time
import warnings
import weakref
from typing import TYPE_CHECKING, Any, NamedTuple

import vulkan as vk

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.core.errors import DeviceError
from vyre_build.runtime.backends.vulkan import profile as vulkan_profile
from vyre_build.runtime.backends.vulkan.pipelines import Chunks, Pipelines
from vyre_build.runtime.backends.vulkan.sets import STORAGE, UNIFORM, DescriptorPools, Pool
from vyre_build.runtime.backends.common import choose_adapter, steps
from vyre_build.runtime.device import DEFAULT_DEVICES, Device
from vyre_build.runtime.plan import Job
from vyre_build.runtime.backends.vulkan.results import (
    DEVICE_LOST,
    NOT_READY,
    SUCCESS,
    TIMEOUT,
    VulkanCallError,
    describe,
    invoke,
)

if TYPE_CHECKING:
    from vyre_build.runtime.backends.vulkan.pipeline_cache import PipelineCacheFile

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
_RANK = {t: i for i, t in enumerate(vulkan_profile.TYPES)}
_POOL_SETS, _WAIT_S, _SPIN_S, _RING_MAX = 64, 120.0, 0.02, 64
_NO_DRIVER = "install a Vulkan driver (e.g. Mesa lavapipe, package mesa-vulkan-drivers)"
_NEW_ONE = "close it and get a new one with get_device"
# Devices whose persisted pipeline cache is saved at exit, unless they were closed first.
_PERSISTED: weakref.WeakSet[VulkanDevice] = weakref.WeakSet()


# The cffi library the device calls directly, looked up at each use: tests put a proxy
# here to make a call return a VkResult the driver does not.
_lib: Any = vk.lib


def wait_timeout_s() -> float:
    """The longest wait for the GPU, in seconds: $VYRE_VK_TIMEOUT, else 120; DeviceError
    unless it is a positive number."""
    text = os.environ.get("VYRE_VK_TIMEOUT", "").strip()
    if not text:
        return _WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise DeviceError(
            f"VYRE_VK_TIMEOUT must be a positive number of seconds (the longest wait for "
            f"the GPU), got {text!r}"
        )
    return value


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
    `timing` set, two timestamp queries bracket each submission. `wait_timeout_s` (from
    $VYRE_VK_TIMEOUT, default 120) bounds each wait for the GPU; `pool_sets` is the number
    of descriptor sets per descriptor pool (both may be changed on a device).

    Arguments:
        adapter: an index into list_adapters("vulkan"), a substring of a description, or
            None for the first discrete, else integrated, ... GPU.
        pipeline_cache: the persisted cache's directory, False (or "off") for none, or
            None for $VYRE_PIPELINE_CACHE, else the user cache directory.
    """

    backend = "vulkan"
    splits_dispatches = True

    def __init__(
        self,
        adapter: int | str | None = None,
        *,
        pipeline_cache: str | os.PathLike[str] | bool | None = None,
    ):
        super().__init__()
        # Why the device is unusable (a wait that failed, a lost device), or None.
        self._broken: str | None = None
        self._fence_pending = False  # submitted with the fence, not yet waited for
        self.wait_timeout_s = wait_timeout_s()
        self.pool_sets = _POOL_SETS
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
                "storage, cooperative matrices, the Vulkan memory model and maintenance5",
                RuntimeWarning,
                stacklevel=2,
            )
            self.profile = vulkan_profile.without_optional(self.profile)
            enable = vulkan_profile.Enable()
            self.dev = self._create(enable)
        self.queue = vk.vkGetDeviceQueue(self.dev, self.family, 0)
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
        self._live_bufs: dict[int, _Buf] = {}  # every buffer made, freed by close()
        # The layouts (the shared one made now), the pipeline cache and pipeline creation.
        # With maintenance5 enabled, pipelines take their SPIR-V without shader modules.
        self.pipelines = Pipelines(
            self.dev, self._new, self._vk, self._check, props, pipeline_cache, enable.maintenance5
        )
        if self.pipelines.cache_file is not None:
            _PERSISTED.add(self)
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
        self._dpools = DescriptorPools(self.dev, self._new, self._vk, self._error)
        self._queries = None
        self._staging: _Buf | None = None
        bits = families[self.family].timestampValidBits
        if bits:  # GPU timestamps: ticks of timestampPeriod ns, `bits` valid bits
            self._queries = self._new(
                "query pool", "QueryPool", queryCount=2, queryType=vk.VK_QUERY_TYPE_TIMESTAMP
            )
            self._tick_s = float(limits.timestampPeriod) * 1e-9
            self._tick_mask, self._stamps = (1 << bits) - 1, vk.ffi.new("uint64_t[2]")

    @property
    def cache_file(self) -> PipelineCacheFile | None:
        """The persisted pipeline cache's file, or None where there is none."""
        return self.pipelines.cache_file

    @property
    def cache_loaded(self) -> int:
        """The bytes of persisted pipeline cache the device started with."""
        return self.pipelines.cache_loaded

    @property
    def _pools(self) -> list[Pool]:
        # the descriptor pools (tests count them)
        return self._dpools.pools

    def _create(self, enable: vulkan_profile.Enable) -> Any:
        keep: list[Any] = []  # the create-info's nested structs, read by vkCreateDevice
        info = vulkan_profile.device_create_info(self.family, enable, keep)
        return self._vk("device creation", vk.vkCreateDevice, self.physical, info, None)

    # -- errors, and the unusable state --

    def _check_open(self) -> None:
        super()._check_open()
        if self._broken is not None:
            raise DeviceError(f"{self!r}: the device is unusable since {self._broken}; {_NEW_ONE}")

    def _fail(self, what: str, error: str) -> DeviceError:
        return DeviceError(f"Vulkan {what} failed on {self.name}: {error}")

    def _lose(self, what: str, error: str) -> DeviceError:
        # The device becomes unusable (see the module docstring): the DeviceError saying so.
        if self._broken is None:
            self._broken = f"its {what} failed ({error})"
            for key in [k for k, d in DEFAULT_DEVICES.items() if d is self]:
                del DEFAULT_DEVICES[key]  # get_device makes a new one
        return self._fail(
            what,
            f"{error}; the GPU may still be using the device's memory, so the device is "
            f"unusable now: {_NEW_ONE}",
        )

    def _error(self, what: str, exc: VulkanCallError) -> DeviceError:
        lost = exc.code == DEVICE_LOST
        return self._lose(what, str(exc)) if lost else self._fail(what, str(exc))

    def _vk(self, what: str, fn: Any, *args: Any) -> Any:
        # fn(*args) through the `vulkan` package, its failures raised as DeviceError.
        try:
            return invoke(fn, *args)
        except VulkanCallError as exc:
            raise self._error(what, exc) from exc

    def _check(self, what: str, call: str, result: int) -> None:
        # VkResult of a direct library call `call`: anything but VK_SUCCESS is a DeviceError.
        if result != SUCCESS:
            raise self._error(what, VulkanCallError(call, int(result)))

    def _new(self, what: str, kind: str, **fields: Any) -> Any:
        # vkCreate<kind>(device, Vk<kind>CreateInfo(**fields), None), errors named `what`.
        info = getattr(vk, f"Vk{kind}CreateInfo")(**fields)
        return self._vk(what, getattr(vk, f"vkCreate{kind}"), self.dev, info, None)

    # -- buffers --

    def _make(self, nbytes: int, usage: int, host: bool) -> _Buf:
        nbytes = -(-nbytes // 4) * 4  # fills and copies work in 4-byte words (f16 buffers)
        buffer = self._new(
            "buffer creation",
            "Buffer",
            size=nbytes,
            usage=usage,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
        )
        memory = None
        try:
            req = vk.vkGetBufferMemoryRequirements(self.dev, buffer)
            want = _HOST if host else _LOCAL
            index = next(
                (
                    i
                    for i, flags in enumerate(self.mem_flags)
                    if req.memoryTypeBits & (1 << i) and flags & want == want
                ),
                None,
            )
            if index is None:
                raise DeviceError(
                    f"Vulkan adapter {self.name} has no memory type with flags {want:#x}"
                )
            info = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index)
            memory = self._vk(
                f"allocation of {nbytes} bytes", vk.vkAllocateMemory, self.dev, info, None
            )
            self._vk("memory binding", vk.vkBindBufferMemory, self.dev, buffer, memory, 0)
            mapped = (
                self._vk("memory mapping", vk.vkMapMemory, self.dev, memory, 0, nbytes, 0)
                if host
                else None
            )
        except BaseException:
            vk.vkDestroyBuffer(self.dev, buffer, None)
            if memory is not None:
                vk.vkFreeMemory(self.dev, memory, None)
            raise
        buf = _Buf(buffer, memory, mapped, nbytes)
        self._live_bufs[id(buf)] = buf
        return buf

    def _alloc(self, nbytes: int, data: bytes | None) -> _Buf:
        buf = self._make(nbytes, vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | _COPY, self.unified)
        try:
            if self.unified:
                buf.mapped[0 : buf.nbytes] = (
                    bytes(buf.nbytes) if data is None else data.ljust(buf.nbytes, b"\0")
                )
            elif data is not None:
                self._upload(buf, data)
            else:
                self._run_commands(vk.vkCmdFillBuffer, buf.buffer, 0, buf.nbytes, 0)
        except BaseException:
            self._free(buf)
            raise
        return buf

    def _staged(self, nbytes: int) -> _Buf:
        # The staging buffer, grown to hold `nbytes`.
        if self._staging is None or self._staging.nbytes < nbytes:
            if self._staging is not None:
                self._free(self._staging)
                self._staging = None
            self._staging = self._make(max(nbytes, 1 << 20), _COPY, True)
        return self._staging

    def _copy(self, src: _Buf, dst: _Buf, nbytes: int) -> None:
        region = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=nbytes)]
        self._run_commands(vk.vkCmdCopyBuffer, src.buffer, dst.buffer, 1, region)

    def _upload(self, handle: _Buf, data: bytes) -> None:
        self._quiesce()
        target = handle if handle.mapped is not None else self._staged(len(data))
        target.mapped[0 : len(data)] = data
        if target is not handle:
            self._copy(target, handle, len(data))

    def _download(self, handle: _Buf, nbytes: int) -> bytes:
        self._quiesce()
        if handle.mapped is None:
            staging = self._staged(nbytes)
            self._copy(handle, staging, nbytes)
            handle = staging
        return bytes(handle.mapped[0:nbytes])

    def _free(self, handle: _Buf) -> None:
        if not self._idle():  # the GPU may still use it: close() decides
            return
        self._live_bufs.pop(id(handle), None)
        if handle.mapped is not None:
            vk.vkUnmapMemory(self.dev, handle.memory)
        vk.vkDestroyBuffer(self.dev, handle.buffer, None)
        vk.vkFreeMemory(self.dev, handle.memory, None)

    # -- submissions --

    def _idle(self) -> bool:
        # Whether nothing submitted may still use what is about to be freed.
        try:
            self._quiesce()
        except DeviceError:
            return False
        return self._broken is None

    def _run_commands(self, record: Any, *args: Any, final: bool = True) -> None:
        # Record `record(cmd, *args)` into the next command buffer and submit it; if `final`,
        # with a barrier for host reads and the fence, then wait: the fence covers all
        # earlier submissions.
        lib = _lib
        if self._broken is not None:
            self._check_open()
        self._quiesce()
        # Past _RING_MAX unwaited submissions, this one waits too (back-pressure).
        wait = final or self._sent + 1 >= _RING_MAX
        try:
            if self._sent == len(self._ring):
                self._ring.append(self._command_buffer())
            cmds, submit = self._ring[self._sent]
            self._check(
                "command recording",
                "vkBeginCommandBuffer",
                lib.vkBeginCommandBuffer(cmds[0], self._begin),
            )
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
            self._check("command recording", "vkEndCommandBuffer", lib.vkEndCommandBuffer(cmds[0]))
            self._check(
                "queue submit",
                "vkQueueSubmit",
                lib.vkQueueSubmit(self.queue, 1, submit, self.fence if wait else vk.ffi.NULL),
            )
        except BaseException:
            # This command buffer never runs; the earlier ones may still: wait for them
            # before the caller frees what they use.
            self._drain()
            raise
        self._sent += 1
        if wait:
            self._fence_pending = True
            self._settle(self._wait_fence(lib))

    def _command_buffer(self) -> tuple[Any, Any]:
        # A new command buffer of the ring, with its submit info.
        alloc = vk.VkCommandBufferAllocateInfo(
            commandPool=self.cmd_pool,
            commandBufferCount=1,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        )
        made = self._vk("command buffer", vk.vkAllocateCommandBuffers, self.dev, alloc)
        cmds = vk.ffi.new("VkCommandBuffer[1]", [made[0]])
        submit = vk.ffi.new(
            "VkSubmitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                "commandBufferCount": 1,
                "pCommandBuffers": cmds,
            },
        )
        return cmds, submit

    def _drain(self) -> None:
        # After a failed recording or submit: wait for what is in flight (a fence signalled
        # after it), then reset the ring; if that fails, the device becomes unusable.
        lib, failed = _lib, self._sent
        if self._broken is not None:
            return
        if self._sent:
            status = lib.vkQueueSubmit(self.queue, 0, vk.ffi.NULL, self.fence)
            if status != SUCCESS:
                self._lose("queue submit", describe("vkQueueSubmit", status))
                return
            self._fence_pending = True
            try:
                self._settle(self._wait_fence(lib))
            except DeviceError:
                return
        if failed < len(self._ring):  # the one that failed, recorded in part
            status = lib.vkResetCommandBuffer(self._ring[failed][0][0], 0)
            if status != SUCCESS:
                self._lose("command buffer reset", describe("vkResetCommandBuffer", status))

    def _quiesce(self) -> None:
        # Settle a fenced submission whose wait was interrupted (Ctrl-C lands anywhere):
        # wait for it now, before anything is reused or freed. DeviceError if that fails.
        if self._fence_pending and self._broken is None:
            self._settle(self._wait_fence(_lib))

    def _settle(self, status: int) -> None:
        # After a wait for the fence that ended in `status`: on VK_SUCCESS, the fence and the
        # waited-for command buffers are reset for reuse; on anything else the work may still
        # be running, so nothing is reset and the device becomes unusable (DeviceError).
        if status != SUCCESS:
            timeout = f" after {self.wait_timeout_s:g} s" if status == TIMEOUT else ""
            raise self._lose("wait", describe("vkWaitForFences", status) + timeout)
        lib = _lib
        call, status = "vkResetFences", lib.vkResetFences(self.dev, 1, self._fence_arr)
        for cmds, _ in self._ring[: self._sent] if status == SUCCESS else ():
            call, status = "vkResetCommandBuffer", lib.vkResetCommandBuffer(cmds[0], 0)
            if status != SUCCESS:
                break
        if status != SUCCESS:  # the work is done, but the fence or ring cannot be reused
            raise self._lose("reset after a wait", describe(call, status))
        self._sent, self._fence_pending = 0, False

    def _wait_ns(self) -> int:
        return min(int(self.wait_timeout_s * 1e9), 2**64 - 1)

    def _wait_fence(self, lib: Any) -> int:
        # Poll for up to _SPIN_S, as CUDA syncs do (a blocking wait wakes ~30 us late), then
        # block up to wait_timeout_s; a CPU device (lavapipe) needs the host's cores itself,
        # so it never polls. VK_NOT_READY is the only "not yet" answer; anything else ends
        # the poll. An interrupt (Ctrl-C) leaves _fence_pending set: the next use of the
        # device, and any free the caller then makes, waits for the work first (_quiesce).
        deadline = time.perf_counter() + self._spin_s
        while (
            status := lib.vkGetFenceStatus(self.dev, self.fence)
        ) == NOT_READY and time.perf_counter() < deadline:
            pass
        if status == NOT_READY:
            status = lib.vkWaitForFences(self.dev, 1, self._fence_arr, vk.VK_TRUE, self._wait_ns())
        return int(status)

    # -- pipelines and binding sets --

    def _pipeline(
        self, meta: KernelMeta, code: Any, base: tuple[int, int, int] | None, entry: str
    ) -> Any:
        return self.pipelines.create([(meta, code, entry)], base)[0]

    def _pipelines_chunked(self, chunks: Chunks) -> list[Any]:
        return self.pipelines.stream(chunks)

    def save_pipeline_cache(self) -> bool:
        # Only if pipelines were added since the last load or save, on a usable device.
        with self._lock:
            if self.closed or self._broken is not None or not self._pipelines_added:
                return False
            saved = self.pipelines.save()
            if saved:
                self._pipelines_added = 0
            return saved

    def native_buffer(self, handle: Any) -> Any:
        return handle.buffer

    def pipeline_cache_state(self) -> tuple[str | None, int]:
        return (self.cache_file.path if self.cache_file is not None else None, self.cache_loaded)

    def _bind(
        self,
        pipeline: Any,
        bound: list[tuple[int, Any, int]],
        uniform_binding: int | None,
        uniform: bytes | None,
    ) -> Any:
        ubuf, need = None, pipeline[3]
        if uniform is not None:
            ubuf = self._make(len(uniform), vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, True)
            ubuf.mapped[0 : len(uniform)] = uniform
        try:
            pool, dsets = self._dpools.allocate(pipeline[2], need, self.pool_sets)
        except BaseException:
            if ubuf is not None:
                self._free(ubuf)
            raise
        targets: list[tuple[int | None, Any, int, int]] = [
            (b, h.buffer, n, STORAGE) for b, h, n in bound
        ]
        if ubuf is not None and uniform is not None:
            # the binding the pipeline's code has it at (the shared layout's slot)
            targets.append((pipeline[4], ubuf.buffer, len(uniform), UNIFORM))
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
        return dsets, ubuf, pool, vk.ffi.new("VkDescriptorSet[1]", dsets), need

    def _set_uniform(self, entry: Any, uniform: bytes) -> None:
        entry[1].mapped[0 : len(uniform)] = uniform

    def _unbind(self, entry: Any) -> None:
        if not self._idle():  # the GPU may still read it: close() decides
            return
        dsets, ubuf, pool, _, need = entry
        if ubuf is not None:
            self._free(ubuf)
        self._dpools.free(pool, dsets, need)

    def _wait(self) -> None:
        if self._sent and self._broken is None:  # chunks of a batch in flight
            self._run_commands(lambda cmd: None)

    def _close(self) -> None:
        # Everything the device made, then the device; the VkInstance stays (shared). An
        # unusable device is freed only if its work has ended (its fence is signalled);
        # else everything is left allocated, since the GPU may still use it.
        lib = _lib
        if self._broken is None:
            done = lib.vkDeviceWaitIdle(self.dev) == SUCCESS
        else:
            done = lib.vkGetFenceStatus(self.dev, self.fence) == SUCCESS
            done = done and lib.vkDeviceWaitIdle(self.dev) == SUCCESS
        if done:
            self._broken, self._fence_pending = None, False  # nothing runs: _free may free
            for buf in list(self._live_bufs.values()):
                self._free(buf)
            for pipe, *_ in self._pipelines.values():
                vk.vkDestroyPipeline(self.dev, pipe, None)
            self.pipelines.close()  # the layouts and the pipeline cache
            self._dpools.destroy()  # frees the sets left in them
            if self._queries is not None:
                vk.vkDestroyQueryPool(self.dev, self._queries, None)
            vk.vkDestroyFence(self.dev, self.fence, None)
            vk.vkDestroyCommandPool(self.dev, self.cmd_pool, None)
            vk.vkDestroyDevice(self.dev, None)
        self._live_bufs.clear()
        self._dpools.forget()
        self._staging = None
        self._sets.clear()
        self._pipelines.clear()

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
        lib, null, queries = _lib, vk.ffi.NULL, self._queries
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


@atexit.register
def _save_at_exit() -> None:
    for dev in list(_PERSISTED):
        with contextlib.suppress(Exception):
            dev.save_pipeline_cache()
