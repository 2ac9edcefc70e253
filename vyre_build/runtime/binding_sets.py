"""The Device's state and the lifetime of what it holds (a base of device.py's Device; it
names none of that module's types): the device's lock and whether it is closed; the kept
binding sets that calls on DeviceBuffers reuse (8 per pipeline and buffers, each given a
call's scalars as it is taken, busy while that call or batch holds it, and live until one
of its buffers is released: then unbound, at the batches' end if one is open); the one-off
sets of other calls; and the frees of collected buffers and of buffers released while a
batch is open, made at the next device operation or once no batch is open. `_flush`
submits a call's or batch's last chunk, then frees its kept sets and unbinds its one-off
ones.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from vyre_build.core.errors import DeviceError
from vyre_build.runtime.hooks import DeviceHooks
from vyre_build.runtime.plan import Job, Plan

_KEPT_PER_KEY = 8  # kept binding sets per (pipeline, buffers): distinct scalars per batch


class _Direct:
    """The submission state of a call outside any batch (made and waited for in one lock)."""

    def __init__(self) -> None:
        self.busy: list[int] = []
        self.oneoff: list[Any] = []


class BindingSets(DeviceHooks):
    """The state every part of the Device shares, and its binding sets (the module
    docstring); the base of pipelines.py's DevicePipelines and batching.py's Batching."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._local = threading.local()
        self._open_batches, self.closed = 0, False
        self._direct = _Direct()
        self._pipelines: dict[tuple[str, Any, tuple[int, int, int] | None, str], Any] = {}
        self._pipelines_added = 0
        self._sets: dict[tuple[Any, ...], list[Any]] = {}
        self._by_handle: dict[int, set[tuple[Any, ...]]] = {}
        self._busy: dict[int, tuple[object, bytes | None]] = {}
        # Handles of collected DeviceBuffers, and of buffers released while a batch is open.
        self._garbage: collections.deque[tuple[Any, bool]] = collections.deque()
        self._deferred: list[tuple[Any, bool]] = []
        # ids of the kept binding sets whose buffers are all unreleased (a set leaves when
        # one of its buffers is released, though unbound only at the batches' end): only a
        # Submission of such sets is submitted again.
        self._live_sets: set[int] = set()

    # -- state shared by every entry point --

    def _check_open(self) -> None:
        if self.closed:
            raise DeviceError(f"{self!r}: the device was closed; get a new one with get_device")

    def _collect(self) -> None:
        # Free what collected buffers left, and (no batch open) what batches deferred.
        while self._garbage:
            handle, borrowed = self._garbage.popleft()
            self._release(handle, borrowed)
        if not self._open_batches and self._deferred:
            deferred, self._deferred = self._deferred, []
            for handle, borrowed in deferred:
                self._release(handle, borrowed)

    def _release(self, handle: Any, borrowed: bool) -> None:
        if self.closed:
            return
        for key in self._by_handle.get(id(handle), ()):
            for entry in self._sets.get(key, ()):
                self._live_sets.discard(id(entry))
        if self._open_batches:  # a batch's dispatches, recorded or in flight, may use it
            self._deferred.append((handle, borrowed))
            return
        for key in self._by_handle.pop(id(handle), ()):
            for entry in self._sets.pop(key, ()):
                self._unbind(entry)
        if not borrowed:
            self._free(handle)

    # -- binding sets of a dispatch --

    def _binding(
        self, pipeline: Any, bound: list[tuple[int, Any, int]], plan: Plan, ctx: Any
    ) -> Any:
        # A kept set free or already holding these scalars for `ctx`, else a new kept one;
        # None when the kept sets of these buffers are all busy.
        key = (id(pipeline), tuple((b, id(h), n) for b, h, n in bound))
        kept = self._sets.setdefault(key, [])
        for entry in kept:
            held = self._busy.get(id(entry))
            if held is None:
                if plan.uniform is not None:
                    self._set_uniform(entry, plan.uniform)
                break
            if held[0] is ctx and held[1] == plan.uniform:
                return entry
        else:
            if len(kept) >= _KEPT_PER_KEY:
                return None
            entry = self._bind(pipeline, bound, plan.uniform_binding, plan.uniform)
            kept.append(entry)
            self._live_sets.add(id(entry))
            for _, h, _ in bound:
                self._by_handle.setdefault(id(h), set()).add(key)
        self._busy[id(entry)] = (ctx, plan.uniform)
        ctx.busy.append(id(entry))
        return entry

    def _flush(self, jobs: list[Job], ctx: Any) -> None:
        # Submit `jobs` as the last chunk and wait, then free `ctx`'s binding sets.
        try:
            self._submit(jobs, True)
        finally:
            for eid in ctx.busy:
                self._busy.pop(eid, None)
            ctx.busy.clear()
            while ctx.oneoff:
                self._unbind(ctx.oneoff.pop())
