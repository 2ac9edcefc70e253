"""What library calls keep between calls, filled under one lock (_SCRATCH_LOCK): the scratch
buffers (per device, thread and purpose), the per-thread, per-step copies of each kernel, the
recipes of earlier calls on DeviceBuffers (replayed by Call.replay), and the dispatches a call
queued inside a batch, which `again` queues again. Call (library/call.py) fills them."""

from __future__ import annotations

import collections
import threading
import weakref
from typing import Any, NamedTuple

from vyre_build.runtime.device import Device, DeviceBuffer
from vyre_build.runtime.kernel import Kernel


# Per device: (thread, purpose, type, count) -> DeviceBuffer, least recently used dropped
# (a dropped one still in use stays alive until its call ends: the call holds it).
_SCRATCH: weakref.WeakKeyDictionary[Device, collections.OrderedDict[tuple[Any, ...], DeviceBuffer]]
_SCRATCH = weakref.WeakKeyDictionary()
_SCRATCH_KEPT = 32
# Arrays up to this size are uploaded into kept buffers, and results read back through
# them, where Call.keeps says so (larger ones cost more to move than to allocate).
KEPT_BYTES = 1 << 20
_SCRATCH_LOCK = threading.Lock()


class _Step(NamedTuple):
    """One dispatch of a library call (`plan`: its dispatch's, once made)."""

    kernel: Kernel
    args: dict[str, Any]
    grid: int | tuple[int, ...]
    plan: Any = None


class _Slot(NamedTuple):
    """Where a kept recipe had the caller's i-th DeviceBuffer (held weakly, not in it)."""

    i: int


# Recipes of earlier calls on DeviceBuffers, by (thread, function, parameters, kernels,
# buffers): a call like one of them runs its steps again with no checks or planning (each
# step keeps its dispatch's plan; the steps' kernels are per-thread, per-step copies, so
# each keeps the plan of its own dispatch, which no other thread's call replaces).
_RECIPES: collections.OrderedDict[tuple[Any, ...], tuple[Any, ...]] = collections.OrderedDict()
_RECIPES_KEPT = 64
MISS = object()
# Queued dispatches of calls made inside a batch, by the call's own arguments (`again`).
_AGAIN: collections.OrderedDict[tuple[Any, ...], tuple[Any, ...]] = collections.OrderedDict()


class _Held:
    """A strong reference called like a weak one (for mappings without weak references)."""

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __call__(self) -> object:
        return self.obj


def _again_key(
    fn: str, kernels: object, front: tuple[Any, ...], buffers: tuple[Any, ...]
) -> tuple[Any, ...]:
    # What `again` finds a call by: this thread, the function, the kernels, the other
    # arguments and the buffers (by identity; the entry checks they are still those).
    return (threading.get_ident(), fn, id(kernels), front, *map(id, buffers))


def again(fn: str, kernels: Any, front: tuple[Any, ...], buffers: tuple[Any, ...]) -> Any:
    """Inside the caller's batch, a call of library function `fn` like an earlier one
    there (Call.replay kept it): the same kernels (a Bundle, or a mapping still holding the
    same Kernel objects under those ids), the same other arguments (`front`: their
    values and types) and the same live DeviceBuffers. Its dispatches are queued again as
    they were (Device.run_again) and its result buffer returned (None when the result went
    into one of `buffers`), before any check or pick: what that call checked holds for this
    one (a DeviceBuffer's type and shape, the bundle's kernels and the device's picks do not
    change). MISS where there is no such call, a buffer is another or released, or the
    device refuses the dispatches (another batch)."""
    entry = _AGAIN.get(_again_key(fn, kernels, front, buffers))
    if entry is None:
        return MISS
    kref, refs, held, result, device, looked = entry
    if kref() is not kernels:
        return MISS
    if looked:  # a mutable mapping: still as many kernels, the same ones under those ids
        if len(kernels) != looked[0]:
            return MISS
        for kid, kernel in looked[1:]:
            if kernels.get(kid) is not kernel:
                return MISS
    for ref, buf in zip(refs, buffers):
        if ref is not None and ref() is not buf:
            return MISS
    if held[0] is None or not device.run_again(held[0]):
        return MISS
    return result


_CLONES: weakref.WeakKeyDictionary[Kernel, dict[tuple[int, int], Kernel]]
_CLONES = weakref.WeakKeyDictionary()
