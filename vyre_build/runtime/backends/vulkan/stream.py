"""Vulkan pipeline creation overlapped with the preparation of later pipelines: the
calling thread prepares a batch in slices (load, check, create-infos) and hands each to
`Stream`, whose helper threads call vkCreateComputePipelines on it while the caller
prepares the next; the `vulkan` package's cffi calls release the GIL for the driver's
work, so a warm() takes about the longer of the two, not their sum.

Guarantees:
- Every slice goes to exactly one driver call (`create_slice`); the pipelines and their
  order do not depend on which thread made them or when.
- At most _THREADS threads create pipelines at once (the caller included: it takes the
  slices still queued once it has prepared the last), and no more than the host has
  cores; a slice after which no more may follow starts no thread, so a kernel's
  first-use pipeline, or a batch of one slice, is made on the calling thread.
- `close()` (always called: `with Stream(...)`) stops the helpers after the calls they
  are in and joins them, so no thread outlives the batch, also when preparing a later
  slice raised. A helper's exception is kept on its slice and raised by the caller
  (`Slice.result`), never lost in the thread.
- While helpers run, the interpreter's switch interval is lowered to _SWITCH_S (and put
  back when the last stream of the process closes, unless someone changed it meanwhile),
  so a helper whose driver call returned gets the GIL from the preparing caller in
  _SWITCH_S, not the default 5 ms that would leave the driver idle.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

import vulkan as vk

if TYPE_CHECKING:
    from types import TracebackType

    from vyre_build.bundle.metadata import KernelMeta

# The most threads creating pipelines at once (Device.warm's chunks, up to 8 pipelines,
# are the slices: one driver call each): the driver's work per pipeline runs with the GIL released, so where it compiles (a cold
# cache, lavapipe) a bundle's warm() takes a fraction of the serial time. From a warm
# cache NVIDIA's driver serialises (H200, driver 580, the tree's 77 pipelines: 12.2 ms in
# one call, 11.1 ms on 4 threads, 24-43 ms on 8), hence at most 4.
_THREADS = 4
_SWITCH_S = 0.0002  # the switch interval while helpers run (the default is 0.005 s)

_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.0
# What sys.getswitchinterval() reads after we set _SWITCH_S (CPython keeps whole
# microseconds and reads them back times 1e-6: 0.00019999999999999998, not 0.0002), or
# None where we left the interval as it was.
_switch_ours: float | None = None


def _lower_switch_interval() -> None:
    global _switch_users, _switch_saved, _switch_ours
    with _switch_lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
            _switch_ours = None
            if _switch_saved > _SWITCH_S:
                sys.setswitchinterval(_SWITCH_S)
                _switch_ours = sys.getswitchinterval()
        _switch_users += 1


def _restore_switch_interval() -> None:
    global _switch_users, _switch_ours
    with _switch_lock:
        _switch_users -= 1
        # put back only what we changed: a value set meanwhile by the application stays
        if _switch_users == 0 and _switch_ours is not None:
            if sys.getswitchinterval() == _switch_ours:
                sys.setswitchinterval(_switch_saved)
            _switch_ours = None


class Slice:
    """One driver call's worth of a batch: its (kernel, SPIR-V, entry point) `kernels`,
    their create-infos `infos` (every buffer they point into in `keep`), the `pipes` the
    call writes, the shader modules made for it (`modules`, destroyed after the call),
    each pipeline's layout part (`made`) and, once run, `result`: the VkResult, or the
    exception the call raised."""

    __slots__ = ("kernels", "infos", "pipes", "keep", "modules", "made", "result")

    def __init__(
        self,
        kernels: list[tuple[KernelMeta, bytes, str]],
        infos: Any,
        keep: list[Any],
        modules: list[Any],
        made: list[Any],
    ):
        self.kernels, self.infos, self.keep = kernels, infos, keep
        self.modules, self.made = modules, made
        self.pipes = vk.ffi.new("VkPipeline[]", len(kernels))
        self.result: int | BaseException | None = None

    def destroy(self, device: Any) -> None:
        """Destroy the pipelines this slice made (slots set back to VK_NULL_HANDLE)."""
        lib, null = vk.lib, vk.ffi.NULL
        for k in range(len(self.kernels)):
            if self.pipes[k] != null:
                lib.vkDestroyPipeline(device, self.pipes[k], null)
                self.pipes[k] = null


def create_slice(device: Any, cache: Any, sl: Slice) -> int:
    """The one vkCreateComputePipelines of slice `sl` through `cache` (the pipeline cache
    is made without EXTERNALLY_SYNCHRONIZED, so the driver guards it between threads)."""
    return int(
        vk.lib.vkCreateComputePipelines(
            device, cache, len(sl.kernels), sl.infos, vk.ffi.NULL, sl.pipes
        )
    )


def _run(device: Any, cache: Any, sl: Slice) -> None:
    try:
        sl.result = create_slice(device, cache, sl)
    except BaseException as exc:  # noqa: BLE001 - raised in the calling thread (Slice.result)
        sl.result = exc


class Stream:
    """Slices `put` by the preparing thread, created by up to _THREADS - 1 helper threads
    as they come, the rest by the caller in `finish()`. Use as a context manager: leaving
    it joins every helper (`close`)."""

    def __init__(self, device: Any, cache: Any):
        self.device, self.cache = device, cache
        self._cv = threading.Condition(threading.Lock())
        self._queue: collections.deque[Slice] = collections.deque()
        self._helpers: list[threading.Thread] = []
        self._most = min(_THREADS, os.cpu_count() or 1) - 1
        self._idle = 0
        self._closed = False
        self._lowered = False

    def put(self, sl: Slice, more: bool) -> None:
        """Queue `sl`; where more slices may follow (`more`), a helper takes it as soon as
        one is free, a new one started when none is and fewer than allowed run."""
        with self._cv:
            self._queue.append(sl)
            if not more:
                return
            if self._idle:  # counted off here, so the next put sees it taken
                self._idle -= 1
                self._cv.notify()
                return
            if len(self._helpers) >= self._most:
                return
            if not self._lowered:
                _lower_switch_interval()
                self._lowered = True
            helper = threading.Thread(target=self._help, name="vyre-vk-pipelines", daemon=True)
            self._helpers.append(helper)
        helper.start()

    def _help(self) -> None:
        device, cache = self.device, self.cache
        while True:
            with self._cv:
                while not self._queue and not self._closed:
                    self._idle += 1  # put() counts it off when it wakes this one
                    self._cv.wait()
                if not self._queue:
                    return
                sl = self._queue.popleft()
            _run(device, cache, sl)

    def finish(self) -> None:
        """Create, on the calling thread, the slices no helper has taken, then join the
        helpers: every slice put has its `result` after this."""
        device, cache = self.device, self.cache
        while True:
            with self._cv:
                if not self._queue:
                    break
                sl = self._queue.popleft()
            _run(device, cache, sl)
        self.close()

    def close(self) -> None:
        """Stop the helpers after the calls they are in (slices still queued are not
        created: their `result` stays None) and join them."""
        with self._cv:
            self._closed = True
            self._queue.clear()
            self._cv.notify_all()
        for helper in self._helpers:
            helper.join()
        self._helpers.clear()
        if self._lowered:
            self._lowered = False
            _restore_switch_interval()

    def __enter__(self) -> Stream:  # noqa: PYI034 - typing.Self needs Python 3.11
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
