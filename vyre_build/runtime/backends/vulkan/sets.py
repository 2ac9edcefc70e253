"""The Vulkan device's descriptor sets: the pools they come from, an object the device owns
(`VulkanDevice._dpools`), made with the VkDevice and the device's call helpers passed in
(it names no device type and reads no device private).

Guarantees:
- Sets come from pools of `pool_sets` sets each (the device's setting, read at each new
  pool), a new pool made whenever the ones there are full by count or refuse
  (VK_ERROR_OUT_OF_POOL_MEMORY, VK_ERROR_FRAGMENTED_POOL): any number of batches and kept
  sets fit. A pool the driver refused is skipped until one of its sets is freed.
- A freed set gives its pool back what it took; an emptied pool is destroyed while another
  empty one is kept for the next sets.
- Every failure of a Vulkan call is raised as the device's DeviceError (its `error`
  helper), naming what failed; a set that a brand-new pool refuses cannot be made, and
  that pool is destroyed before the error is raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import vulkan as vk

from vyre_build.runtime.backends.vulkan.results import (
    FRAGMENTED_POOL,
    OUT_OF_POOL_MEMORY,
    VulkanCallError,
    invoke,
)

POOL_SETS_MAX = 1 << 16  # pool_sets is clamped to 1..POOL_SETS_MAX
_POOL_STORAGE = 8  # storage descriptors a pool holds per set, at least
# the two descriptor types of a kernel's set (its storage buffers, its uniform block)
STORAGE, UNIFORM = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER


class Pool:
    """A descriptor pool and what it has left, by our count (the driver may refuse sooner:
    `refused` until one of its sets is freed)."""

    __slots__ = ("handle", "sets", "max_sets", "storage", "uniform", "refused")

    def __init__(self, handle: Any, sets: int, storage: int, uniform: int):
        self.handle, self.sets, self.max_sets = handle, sets, sets
        self.storage, self.uniform, self.refused = storage, uniform, False

    def fits(self, storage: int, uniform: int) -> bool:
        return (
            not self.refused
            and self.sets > 0
            and self.storage >= storage
            and self.uniform >= uniform
        )


class DescriptorPools:
    """The pools of one VkDevice `dev`. `new(what, kind, **fields)` creates a Vk<kind>,
    `call(what, fn, *args)` runs a Vulkan call, `error(what, exc)` makes the DeviceError of
    a VulkanCallError: the device's own helpers."""

    def __init__(
        self,
        dev: Any,
        new: Callable[..., Any],
        call: Callable[..., Any],
        error: Callable[[str, VulkanCallError], Exception],
    ):
        self.dev, self._new, self._call, self._error = dev, new, call, error
        self.pools: list[Pool] = []
        self._at = 0  # the pool the last set came from: the search starts there

    def allocate(self, set_layout: Any, need: tuple[int, int], pool_sets: int) -> tuple[Pool, Any]:
        """A descriptor set of `set_layout` (`need`: its storage and uniform descriptors):
        from the pools with room in turn, starting at the last one used; else from a new
        pool of `pool_sets` sets. Returns the pool and the allocated sets (a list of one)."""
        pools, (storage, uniform) = self.pools, need
        for k in range(len(pools)):
            at = (self._at + k) % len(pools)
            pool = pools[at]
            if pool.fits(storage, uniform):
                dsets = self._set_from(pool, set_layout, need, fresh=False)
                if dsets is not None:
                    self._at = at
                    return pool, dsets
        sets = min(max(1, int(pool_sets)), POOL_SETS_MAX)
        sizes = [
            vk.VkDescriptorPoolSize(type=t, descriptorCount=sets * n)
            for t, n in ((STORAGE, max(_POOL_STORAGE, storage)), (UNIFORM, max(1, uniform)))
        ]
        handle = self._new(
            "descriptor pool",
            "DescriptorPool",
            maxSets=sets,
            flags=vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
            pPoolSizes=sizes,
        )
        pool = Pool(handle, sets, sets * max(_POOL_STORAGE, storage), sets * max(1, uniform))
        pools.append(pool)
        self._at = len(pools) - 1
        try:
            dsets = self._set_from(pool, set_layout, need, fresh=True)
        except BaseException:  # refused by a new pool: the set cannot be made
            pools.remove(pool)
            vk.vkDestroyDescriptorPool(self.dev, handle, None)
            raise
        return pool, dsets

    def _set_from(self, pool: Pool, set_layout: Any, need: tuple[int, int], fresh: bool) -> Any:
        # One set from `pool`, or None when it refuses (an error for a `fresh` pool).
        info = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool.handle, pSetLayouts=[set_layout])
        try:
            dsets = invoke(vk.vkAllocateDescriptorSets, self.dev, info)
        except VulkanCallError as exc:
            if exc.code in (OUT_OF_POOL_MEMORY, FRAGMENTED_POOL) and not fresh:
                pool.refused = True
                return None
            raise self._error("descriptor set allocation", exc) from exc
        pool.sets, pool.storage, pool.uniform = (
            pool.sets - 1,
            pool.storage - need[0],
            pool.uniform - need[1],
        )
        return list(dsets)

    def free(self, pool: Pool, dsets: Any, need: tuple[int, int]) -> None:
        """Give `dsets` (from `allocate`, with its `need`) back to `pool`; destroy the pool
        if that empties it and another empty one stays."""
        self._call(
            "descriptor set release", vk.vkFreeDescriptorSets, self.dev, pool.handle, 1, dsets
        )
        pool.sets, pool.storage, pool.uniform = (
            pool.sets + 1,
            pool.storage + need[0],
            pool.uniform + need[1],
        )
        pool.refused = False
        if pool.sets == pool.max_sets and any(
            p.sets == p.max_sets for p in self.pools if p is not pool
        ):  # empty, and another empty one stays for the next sets
            self.pools.remove(pool)
            vk.vkDestroyDescriptorPool(self.dev, pool.handle, None)

    def destroy(self) -> None:
        """Destroy every pool (which frees the sets left in them)."""
        for pool in self.pools:
            vk.vkDestroyDescriptorPool(self.dev, pool.handle, None)
        self.pools.clear()

    def forget(self) -> None:
        """Drop the pools without destroying them (a device left allocated: its GPU work
        may not have ended)."""
        self.pools.clear()
