"""The Vulkan backend: SPIR-V through the `vulkan` cffi package. Where all device-local
memory is host-visible and coherent (lavapipe, integrated GPUs) buffers are mapped once;
else they are device-local, with transfers through a staging buffer (forced by
VYRE_VULKAN_STAGING=1). The cffi structs free their nested data when collected, so a
nested create-info stays in a variable until the call that reads it; array counts are
taken from the lists given. Pipelines, their layouts and the pipeline cache: the device's
`pipelines` (pipelines.py); its descriptor pools: sets.py; what the device offers and is created with: profile.py;
VkResults as errors: results.py. The device's own methods are layered in base classes, one
module each, bottom first: calls.py (the call helpers and the unusable state), queue.py
(submissions and waits), memory.py (buffers), binding.py (the pipeline and binding-set
hooks); this module creates the device, saves its persisted pipeline cache and frees what
it made.

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
import dataclasses
import os
import warnings
import weakref
from typing import TYPE_CHECKING, Any

import vulkan as vk

from vyre_build.core.errors import DeviceError
from vyre_build.runtime.backends.vulkan import profile as vulkan_profile
from vyre_build.runtime.backends.vulkan import queue as vulkan_queue
from vyre_build.runtime.backends.vulkan.binding import VulkanBinding
from vyre_build.runtime.backends.vulkan.memory import _HOST, _LOCAL, _Buf
from vyre_build.runtime.backends.vulkan.pipelines import Pipelines
from vyre_build.runtime.backends.vulkan.queue import _RING_MAX as _RING_MAX  # tests read it here
from vyre_build.runtime.backends.vulkan.queue import _SPIN_S, wait_timeout_s
from vyre_build.runtime.backends.vulkan.results import SUCCESS
from vyre_build.runtime.backends.vulkan.sets import DescriptorPools
from vyre_build.runtime.backends.common import choose_adapter

if TYPE_CHECKING:
    from vyre_build.runtime.backends.vulkan.pipeline_cache import PipelineCacheFile

_ACCESS = (
    vk.VK_ACCESS_SHADER_READ_BIT
    | vk.VK_ACCESS_SHADER_WRITE_BIT
    | vk.VK_ACCESS_TRANSFER_READ_BIT
    | vk.VK_ACCESS_TRANSFER_WRITE_BIT
)
_RANK = {t: i for i, t in enumerate(vulkan_profile.TYPES)}
_POOL_SETS = 64
_NO_DRIVER = "install a Vulkan driver (e.g. Mesa lavapipe, package mesa-vulkan-drivers)"
# Devices whose persisted pipeline cache is saved at exit, unless they were closed first.
_PERSISTED: weakref.WeakSet[VulkanDevice] = weakref.WeakSet()


def list_adapters() -> list[str]:
    """A description of every Vulkan physical device, in the loader's order."""
    return [desc for _, _, desc in vulkan_profile.physical_devices()]


def adapter_profiles() -> list[Any]:
    """The DeviceProfile of every Vulkan physical device (no device is created)."""
    return [vulkan_profile.query(*found)[0] for found in vulkan_profile.physical_devices()]


class VulkanDevice(VulkanBinding):
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
            self.dev, enable, dropped = self._create_lighter(enable)
            warnings.warn(
                f"vyre_build: {self.name}: {exc}; the device is made without {dropped}",
                RuntimeWarning,
                stacklevel=2,
            )
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
            self.dev,
            self._new,
            self._vk,
            self._check,
            props,
            pipeline_cache,
            enable.maintenance5,
            enable.robust_alignment,
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

    def _create_lighter(
        self, enable: vulkan_profile.Enable
    ) -> tuple[Any, vulkan_profile.Enable, str]:
        """(device, what it enables, what it leaves out) for a driver that listed a feature
        of `enable` and then refused it: first without robustness2 alone (the kernels then
        keep their own bounds checks), then without every optional feature; the profile
        follows."""
        if enable.robust_alignment:
            lighter = vulkan_profile.without_robustness(enable)
            with contextlib.suppress(DeviceError):
                dev = self._create(lighter)
                self.profile = dataclasses.replace(self.profile, robust_alignment=0)
                return (
                    dev,
                    lighter,
                    "robustBufferAccess2 (the kernels keep their own bounds checks)",
                )
        plain = vulkan_profile.Enable()
        dev = self._create(plain)
        self.profile = vulkan_profile.without_optional(self.profile)
        return (
            dev,
            plain,
            (
                "f16, 16-bit storage, cooperative matrices, the Vulkan memory model, maintenance5 "
                "and robustBufferAccess2"
            ),
        )

    def _create(self, enable: vulkan_profile.Enable) -> Any:
        keep: list[Any] = []  # the create-info's nested structs, read by vkCreateDevice
        info = vulkan_profile.device_create_info(self.family, enable, keep)
        return self._vk("device creation", vk.vkCreateDevice, self.physical, info, None)

    def save_pipeline_cache(self) -> bool:
        # Only if pipelines were added since the last load or save, on a usable device.
        with self._lock:
            if self.closed or self._broken is not None or not self._pipelines_added:
                return False
            saved = self.pipelines.save()
            if saved:
                self._pipelines_added = 0
            return saved

    def pipeline_cache_state(self) -> tuple[str | None, int]:
        return (self.cache_file.path if self.cache_file is not None else None, self.cache_loaded)

    def _close(self) -> None:
        # Everything the device made, then the device; the VkInstance stays (shared). An
        # unusable device is freed only if its work has ended (its fence is signalled);
        # else everything is left allocated, since the GPU may still use it.
        lib = vulkan_queue._lib
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


@atexit.register
def _save_at_exit() -> None:
    for dev in list(_PERSISTED):
        with contextlib.suppress(Exception):
            dev.save_pipeline_cache()
