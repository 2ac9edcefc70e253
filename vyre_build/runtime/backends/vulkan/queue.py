"""The Vulkan device's queue (a base of device.py's VulkanDevice, through memory.py and
binding.py): the command buffers submitted since the last wait, a ring of which only the
last carries the fence; a barrier after each dispatch (later dispatches and transfers see
its writes) and, at the end of a waited-for submission, one for host reads; a wait past
_RING_MAX unwaited submissions (back-pressure); the two timestamp queries that bracket a
call or batch with `timing` set; and each wait for the fence, polled for _SPIN_S (never on
a CPU device), then blocking for up to `wait_timeout_s` seconds ($VYRE_VK_TIMEOUT, default
120).

Guarantees (those of device.py's docstring that are the queue's): a wait that ends in
anything but VK_SUCCESS makes the device unusable (calls.py) and resets nothing the GPU may
still use; a failed recording or submit with earlier submissions in flight waits for them
first, so the caller may free what they used; so does an interrupt (Ctrl-C) during a wait:
the next free or use of the device waits it out (_quiesce, _idle).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import vulkan as vk

from vyre_build.core.errors import DeviceError
from vyre_build.runtime.backends.common import steps
from vyre_build.runtime.backends.vulkan.calls import VulkanCalls
from vyre_build.runtime.plan import Job
from vyre_build.runtime.backends.vulkan.results import (
    NOT_READY,
    SUCCESS,
    TIMEOUT,
    describe,
)

_COMPUTE = vk.VK_PIPELINE_BIND_POINT_COMPUTE
_STAGE = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
_HOST_STAGES = _STAGE | vk.VK_PIPELINE_STAGE_HOST_BIT
_WAIT_S, _SPIN_S, _RING_MAX = 120.0, 0.02, 64
# The cffi library the device calls directly (here, and in device.py's _close), looked up
# at each use: tests put a proxy here to make a call return a VkResult the driver does not.
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


class VulkanQueue(VulkanCalls):
    """The submissions and waits of a VulkanDevice (the module docstring)."""

    # Made by VulkanDevice.__init__ (device.py): the queue, its fence and command pool,
    # the ring and what it holds, the structs the per-dispatch calls take, and the
    # timestamp queries (None without timestamps) with their tick length and mask.
    queue: Any
    fence: Any
    cmd_pool: Any
    wait_timeout_s: float
    _spin_s: float
    _fence_pending: bool
    _ring: list[tuple[Any, Any]]
    _sent: int
    _stamped: bool
    _fence_arr: Any
    _begin: Any
    _barriers: list[Any]
    _queries: Any
    _tick_s: float
    _tick_mask: int
    _stamps: Any

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

    def _wait(self) -> None:
        if self._sent and self._broken is None:  # chunks of a batch in flight
            self._run_commands(lambda cmd: None)

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
