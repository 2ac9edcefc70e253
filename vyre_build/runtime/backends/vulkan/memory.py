"""The Vulkan device's buffers (a base of device.py's VulkanDevice, through binding.py):
on a `unified` device (all device-local memory host-visible and coherent: lavapipe,
integrated GPUs; not with VYRE_VULKAN_STAGING=1) buffers are mapped once; else they are
device-local, with transfers through a staging buffer, grown to the largest transfer and
kept. Sizes are rounded up to 4-byte words (fills and copies work in words). Every buffer
made is in `_live_bufs` until freed, and none is freed while the GPU may still use it
(_idle): on an unusable device, close() decides.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import vulkan as vk

from vyre_build.core.errors import DeviceError
from vyre_build.runtime.backends.vulkan.queue import VulkanQueue

_HOST = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
_LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
_COPY = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT


class _Buf(NamedTuple):
    """A VkBuffer with its memory and, when host-visible, its persistent mapping."""

    buffer: Any
    memory: Any
    mapped: Any
    nbytes: int


class VulkanMemory(VulkanQueue):
    """The buffers of a VulkanDevice (the module docstring)."""

    # Made by VulkanDevice.__init__ (device.py): the flags of each memory type, whether
    # buffers are mapped, every buffer made, and the staging buffer (None until needed).
    mem_flags: list[Any]
    unified: bool
    _live_bufs: dict[int, _Buf]
    _staging: _Buf | None

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

    def native_buffer(self, handle: Any) -> Any:
        return handle.buffer
