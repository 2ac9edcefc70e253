"""Pipelines and binding sets of the Vulkan device (a base of device.py's VulkanDevice):
the Device hooks that hand pipeline creation to the device's `pipelines` (pipelines.py;
stream.py overlaps it with the loading of the kernels `warm` is given) and take descriptor
sets from its pools (sets.py: `DescriptorPools`, made by the device: pools of `pool_sets`
sets each, a new pool whenever the ones there are full by count or refuse), each set with
its own mapped uniform buffer where the kernel has scalars. A set is given back only once
nothing submitted may still read it (_idle): on an unusable device, close() decides.
"""

from __future__ import annotations

from typing import Any

import vulkan as vk

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.runtime.backends.vulkan.memory import VulkanMemory
from vyre_build.runtime.backends.vulkan.pipelines import Chunks, Pipelines
from vyre_build.runtime.backends.vulkan.sets import STORAGE, UNIFORM, DescriptorPools, Pool


_WHOLE_SIZE = (1 << 64) - 1  # VK_WHOLE_SIZE (the `vulkan` package spells it -1)


def _whole(nbytes: int, stride: int | None) -> int:
    """The range a storage binding of elements of `stride` bytes is bound with where the
    device keeps the bounds rule: whole elements only, so that an access is all in range or
    all out (the length the kernel sees, floor(range / stride), is the same); 0 (bound as a
    null descriptor: reads 0, writes dropped, length 0) where not one element fits."""
    return nbytes if stride is None else nbytes - nbytes % stride


class VulkanBinding(VulkanMemory):
    """The pipelines and binding sets of a VulkanDevice (the module docstring)."""

    # Made by VulkanDevice.__init__ (device.py): the pipelines, the descriptor pools, and
    # the number of sets a new pool holds.
    pipelines: Pipelines
    _dpools: DescriptorPools
    pool_sets: int

    @property
    def _pools(self) -> list[Pool]:
        # the descriptor pools (tests count them)
        return self._dpools.pools

    # -- pipelines and binding sets --

    def _pipeline(
        self, meta: KernelMeta, code: Any, base: tuple[int, int, int] | None, entry: str
    ) -> Any:
        return self.pipelines.create([(meta, code, entry)], base)[0]

    def _pipelines_chunked(self, chunks: Chunks) -> list[Any]:
        return self.pipelines.stream(chunks)

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
        strides = pipeline[5]
        targets: list[tuple[int | None, Any, int, int]] = [
            (b, h.buffer, _whole(n, strides.get(b)) if strides else n, STORAGE) for b, h, n in bound
        ]
        if ubuf is not None and uniform is not None:
            # the binding the pipeline's code has it at (the shared layout's slot)
            targets.append((pipeline[4], ubuf.buffer, len(uniform), UNIFORM))
        infos = [
            [
                vk.VkDescriptorBufferInfo(buffer=buf, offset=0, range=n)
                if n
                else vk.VkDescriptorBufferInfo(buffer=vk.ffi.NULL, offset=0, range=_WHOLE_SIZE)
            ]
            for _, buf, n, _ in targets
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
