"""The machinery of vyre_build.library: Call, a library call's kernels and argument
checks (all made before the device is touched), its scratch buffers (kept per device and
thread), and its recipe (the list of dispatches, kept so that a call like an earlier one
on the same DeviceBuffers runs again without checks or planning, and outside a batch the
submission its own batch made, which Device.resubmit submits again as it is while the
device finds it current). The checks that need no device are library/checks.py's, what
calls keep between them (and `again`) library/kept.py's; both are imported from here too."""

from __future__ import annotations

import collections
import math
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from vyre_build.library.checks import _KINDS, _describe
from vyre_build.library.checks import Array as Array
from vyre_build.library.checks import Out as Out
from vyre_build.library.checks import fail as fail
from vyre_build.library.checks import kind_of as kind_of
from vyre_build.library.checks import shape_of as shape_of
from vyre_build.library.kept import (
    _AGAIN,
    _CLONES,
    _RECIPES,
    _RECIPES_KEPT,
    _SCRATCH_KEPT,
    _SCRATCH_LOCK,
    _again_key,
    _Held,
    _Slot,
    _Step,
)
from vyre_build.library.kept import _SCRATCH as _SCRATCH  # tests read it here
from vyre_build.library.kept import KEPT_BYTES as KEPT_BYTES
from vyre_build.library.kept import MISS as MISS
from vyre_build.library.kept import again as again
from vyre_build.runtime.bundles import Bundle
from vyre_build.runtime.device import Again, Device, DeviceBuffer, Submission
from vyre_build.runtime.plan import DTYPES, NP_NAMES
from vyre_build.runtime.kernel import CallResult, Kernel

_U32_MAX = 2**32 - 1
# The kernel file that defines each library kernel (named in a missing kernel's refusal).
_FILES = {
    "lib_reduce": "lib_reduce.py",
    "lib_reduce_once": "lib_reduce.py",
    "lib_scan_sums": "lib_scan.py",
    "lib_scan_block": "lib_scan.py",
    "lib_scan_once": "lib_scan.py",
    "lib_matmul": "lib_matmul.py",
    "lib_matmul_f16": "lib_matmul_f16.py",
    "lib_mm_f16": "lib_mm_f16.py",
    "lib_mm_bf16": "lib_mm_bf16.py",
    "lib_softmax": "lib_norm.py",
    "lib_layer_norm": "lib_norm.py",
    "lib_softmax_warp": "lib_norm_warp.py",
    "lib_layer_norm_warp": "lib_norm_warp.py",
    "lib_softmax_flat": "lib_norm_flat.py",
    "lib_layer_norm_flat": "lib_norm_flat.py",
    "lib_softmax_pair": "lib_norm_flat.py",
    "lib_layer_norm_pair": "lib_norm_flat.py",
}


class Call:
    """One library call: its kernels (all on one device) and the checks of its arguments
    against that device, all made before anything reaches it."""

    def __init__(self, fn: str, kernels: object, ids: list[str]):
        if not isinstance(kernels, Mapping):
            raise fail(
                fn,
                "kernels must be a Bundle or a mapping of kernel id -> Kernel, got "
                f"{type(kernels).__name__}",
            )
        self.fn = fn
        self.kernels = kernels
        self._submitted: Submission | None = None  # the submission of `run`'s own batch
        self._again: list[Again] | None = None  # what `_dispatch` queued, to queue again
        self._uploads = 0  # numbers this call's uploads (each its own kept buffer)
        self.k: dict[str, Kernel] = {}
        for kid in ids:
            if kid not in kernels:
                where = _FILES[kid.split(".")[0]]
                raise fail(
                    fn, f"no kernel {kid!r} in the kernels given (build kernels/{where} into them)"
                )
            found = kernels[kid]
            if not isinstance(found, Kernel):
                raise fail(fn, f"kernels[{kid!r}] is a {type(found).__name__}, not a Kernel")
            if self.k and found.device is not self.device:
                raise fail(fn, f"kernels {ids[0]!r} and {kid!r} are on different devices")
            self.k[kid] = found
            self.device: Device = found.device

    def where(self) -> str:
        return f"{self.device.backend}: {self.device.name}"

    def place(self, name: str, value: Array) -> int:
        """The element count of array argument `name` (type checked by _kind), refused when
        it is a DeviceBuffer of another device or released, or too large."""
        if isinstance(value, DeviceBuffer):
            if value.released:
                raise fail(self.fn, f"{name} is a released DeviceBuffer")
            if value.device is not self.device:
                raise fail(
                    self.fn,
                    f"{name} is a DeviceBuffer of another device ({value.device.backend}: "
                    f"{value.device.name}); the kernels run on {self.where()}",
                )
        count = math.prod(shape_of(value))
        if count > _U32_MAX:
            raise fail(self.fn, f"{name} has {count} elements, more than {_U32_MAX}")
        padded = -(-count // 4) * 16  # uploaded as whole vec4s of 4-byte values
        if isinstance(value, np.ndarray) and padded > self.device.max_buffer_bytes:
            raise fail(
                self.fn,
                f"{name} needs {padded} bytes, more than the device's storage buffer "
                f"limit of {self.device.max_buffer_bytes} bytes",
            )
        return count

    def output(self, out: object, kind: str, shape: tuple[int, ...], arrays: bool = True) -> None:
        """Refuse `out` unless it is None, or a writable numpy array (if `arrays`) or
        DeviceBuffer (of this device) of `kind` in `shape`; inside the caller's batch, a
        DeviceBuffer."""
        what = "an array or a DeviceBuffer" if arrays else "a DeviceBuffer"
        want = f"{what} of {NP_NAMES[kind]}, shape {shape}"
        if not isinstance(out, DeviceBuffer) and self.in_batch():
            raise fail(
                self.fn,
                "called inside device.batch(): pass out= a DeviceBuffer (reading a result "
                "back waits for the batch's end)",
            )
        if out is None:
            return
        if isinstance(out, np.ndarray) and arrays:
            if out.dtype != DTYPES[kind] or out.shape != shape or not out.flags.writeable:
                raise fail(self.fn, f"out must be {want}, got {_describe(out)}")
            return
        if not isinstance(out, DeviceBuffer):
            raise fail(self.fn, f"out must be {want}, got {_describe(out)}")
        self.place("out", out)
        if out.dtype != kind or out.shape != shape or out.access == "r":
            raise fail(self.fn, f"out must be {want}, got {_describe(out)}")

    def in_batch(self) -> bool:
        return self.device._current_batch() is not None

    # -- steps --

    def step(self, kid: str, n: int, args: dict[str, Any], grid: int | tuple[int, ...]) -> _Step:
        """Dispatch `n` of the call, on its own copy of kernel `kid` (a Kernel keeps the
        plan of its last dispatch: one per step keeps every step's)."""
        kernel, key = self.k[kid], (threading.get_ident(), n)
        with _SCRATCH_LOCK:
            copies = _CLONES.setdefault(kernel, {})
            if key not in copies:
                copies[key] = Kernel(kernel.device, kernel.meta, kernel.code)
            return _Step(copies[key], args, grid)

    def run(self, steps: list[_Step]) -> None:
        """Dispatch `steps` in the caller's open batch, else in a batch of their own that
        submits them together at its end (one command encoder, one submit per call), whose
        submission is kept for the recipe (`_submitted`: Device.resubmit runs it again).
        A step without a plan gets the one its dispatch made (kept in `steps`, for the
        recipe); a step with one, a replayed step, runs it as it is."""
        self._submitted = None
        if self.in_batch():
            self._dispatch(steps)
            return
        with self.device.batch() as batch:
            batch.chunk = len(steps) + 1  # no chunk goes before the batch's end
            batch.keep_submission = True
            self._dispatch(steps)
        self._submitted = batch.submission

    def _dispatch(self, steps: list[_Step]) -> None:
        again: list[Again] | None = []
        for i, s in enumerate(steps):
            if s.plan is not None:  # planned for these very buffers and scalars
                ran = self.device.run(s.kernel, s.plan, s.args, CallResult()._of(s.kernel))
                if again is not None and ran._again is not None:
                    again.append(ran._again)
                else:
                    again = None
                continue
            again = None
            s.kernel.dispatch(s.args, grid=s.grid)
            # The step's kernel is this thread's own copy, so its last plan is this one's
            # (None when the dispatch was not one Kernel keeps a plan of).
            last = s.kernel._last
            steps[i] = s._replace(plan=None if last is None else last[2])
        self._again = again or None

    def _key(self, params: tuple[Any, ...], buffers: tuple[Any, ...]) -> tuple[Any, ...]:
        kernels = tuple(map(id, self.k.values()))
        return (threading.get_ident(), self.fn, params, kernels, tuple(map(id, buffers)))

    def replay(
        self, params: tuple[Any, ...], buffers: tuple[Any, ...], front: tuple[Any, ...] = ()
    ) -> Any:
        """Run the recipe of an earlier call with these parameters, kernels and the same
        live DeviceBuffers (None: absent) and return its scratch result buffer (None when
        the result went to one of `buffers`); MISS if there is no such recipe. Inside the
        caller's batch, the dispatches it queued are kept for `again` under the call's own
        arguments: `front` (what the function was given besides its buffers) and `buffers`."""
        key = self._key(params, buffers)
        with _SCRATCH_LOCK:
            entry = _RECIPES.get(key)
            if entry is not None:
                _RECIPES.move_to_end(key)
        if entry is None:
            return MISS
        # The key names the kernels by id, and the entry holds them: the same ids are the
        # same kernels. The buffers it holds weakly: a buffer of a reused id is another.
        refs, _, steps, result, submitted, again = entry
        for ref, buf in zip(refs, buffers):
            if (
                (ref is None) != (buf is None)
                or ref is not None
                and (ref() is not buf or buf.released)
            ):
                return MISS
        # The submission kept from the last run of these steps, submitted as it is: the
        # same buffers, pipelines, binding sets and scalars (the device refuses it when one
        # of its buffers was released or a set is in an open batch's use, or inside one).
        own = not self.in_batch()
        if own and submitted[0] is not None and self.device.resubmit(submitted[0]):
            return result
        # Inside a batch, the dispatches its last replay queued in this very batch, queued
        # again as they are (Device.run_again refuses them in another batch).
        if not own and again[0] is not None and self.device.run_again(again[0]):
            self._keep_again(front, buffers, again, result)
            return result
        filled = [
            s._replace(args={n: buffers[v.i] if type(v) is _Slot else v for n, v in s.args.items()})
            for s in steps
        ]
        self.run(filled)
        # this thread's recipe: no other thread sets these
        if own:
            submitted[0] = self._submitted
        else:
            again[0] = self._again
            self._keep_again(front, buffers, again, result)
        return result

    def _keep_again(
        self, front: tuple[Any, ...], buffers: tuple[Any, ...], held: list[Any], result: Any
    ) -> None:
        # Keep, for `again`, the recipe's queued dispatches (`held`, which replay updates)
        # under this call's own arguments; for a mapping other than a Bundle (which does
        # not change), with the kernels it held, which `again` finds there again first.
        if held[0] is None:
            return
        key = _again_key(self.fn, self.kernels, front, buffers)
        refs = tuple(None if b is None else weakref.ref(b) for b in buffers)
        looked: tuple[Any, ...] = ()
        if not isinstance(self.kernels, Bundle):  # its size too: no kernel added since
            looked = (len(self.kernels), *self.k.items())
        kref: Callable[[], object]
        try:
            kref = weakref.ref(self.kernels)
        except TypeError:  # a mapping that takes no weak reference (a dict): held
            kref = _Held(self.kernels)
        with _SCRATCH_LOCK:
            _AGAIN[key] = (kref, refs, held, result, self.device, looked)
            while len(_AGAIN) > _RECIPES_KEPT:
                _AGAIN.popitem(last=False)

    def remember(
        self, params: tuple[Any, ...], buffers: tuple[Any, ...], steps: list[_Step], result: Any
    ) -> None:
        """Keep the recipe of a call whose array arguments are all DeviceBuffers."""
        if not all(b is None or isinstance(b, DeviceBuffer) for b in buffers):
            return
        slots = {id(b): _Slot(i) for i, b in enumerate(buffers) if b is not None}
        kept = [s._replace(args={n: slots.get(id(v), v) for n, v in s.args.items()}) for s in steps]
        refs = tuple(None if b is None else weakref.ref(b) for b in buffers)
        found = None if result in buffers else result
        entry = (refs, tuple(self.k.values()), kept, found, [self._submitted], [None])
        with _SCRATCH_LOCK:
            _RECIPES[self._key(params, buffers)] = entry
            while len(_RECIPES) > _RECIPES_KEPT:
                _RECIPES.popitem(last=False)

    # -- buffers --

    def upload(self, value: Array) -> tuple[DeviceBuffer, bool]:
        """(a DeviceBuffer of `value`'s values, whether it can be bound as vec4s): an array
        is uploaded padded to whole vec4s, a DeviceBuffer used as it is."""
        if isinstance(value, DeviceBuffer):
            return value, value.count % 4 == 0
        flat = np.ascontiguousarray(value).reshape(-1)
        if flat.size % 4:
            flat = np.concatenate([flat, np.zeros(-flat.size % 4, flat.dtype)])
        self._uploads += 1
        if self.keeps(flat.nbytes):  # into this thread's kept buffer: no buffer made
            kept = self.scratch(f"upload {self._uploads}", _KINDS[flat.dtype], flat.size)
            kept.write(flat)
            return kept, True
        return self.device.buffer(flat), True

    def keeps(self, nbytes: int) -> bool:
        """Whether an upload or result of `nbytes` goes through a kept scratch buffer: a
        small one (at most KEPT_BYTES), outside the caller's batch, on a device whose
        writes are ordered with its submissions (wgpu), so that rewriting it while an
        earlier call's dispatches still read it is safe."""
        ordered = getattr(self.device, "ordered_writes", False)
        return bool(ordered) and nbytes <= KEPT_BYTES and not self.in_batch()

    def target(self, out: Out, kind: str, count: int) -> tuple[DeviceBuffer, bool]:
        """(the DeviceBuffer the result is written to, whether as vec4s): `out` itself when
        it is a DeviceBuffer, else a new one padded to whole vec4s."""
        if isinstance(out, DeviceBuffer):
            return out, out.count % 4 == 0
        padded = -(-count // 4) * 4
        if self.keeps(padded * 4):  # read back before this call returns
            return self.scratch("result", kind, padded), True
        return self.device.buffer(padded, kind), True

    def pair(
        self, buf: DeviceBuffer, vec: bool, kind: str, written: bool
    ) -> tuple[DeviceBuffer, DeviceBuffer]:
        """(vec4 binding, scalar binding) of `buf`. A read buffer is bound twice where it
        holds whole vec4s; a written one only once, the unused binding going to a scratch
        sink (no backend then sees one buffer written through two bindings)."""
        if not written:
            return (buf if vec else self.scratch("zero", kind, 4)), buf
        sink = self.scratch("sink", kind, 4)
        return (buf, sink) if vec else (sink, buf)

    def scratch(self, purpose: str, kind: str, count: int) -> DeviceBuffer:
        """A DeviceBuffer of `count` values kept for this device, thread and purpose:
        "zero" ones are never written; the others hold what the last call left there."""
        key = (threading.get_ident(), purpose, kind, count)
        with _SCRATCH_LOCK:
            kept = _SCRATCH.setdefault(self.device, collections.OrderedDict())
            found = kept.get(key)
            if found is not None and not found.released:
                kept.move_to_end(key)
                return found
        made = self.device.buffer(count, kind)
        with _SCRATCH_LOCK:
            kept[key] = made
            while len(kept) > _SCRATCH_KEPT:
                kept.popitem(last=False)
        return made

    def result(self, buf: DeviceBuffer, out: Out, count: int, shape: tuple[int, ...]) -> Any:
        """`out` when it is the DeviceBuffer written, else the first `count` values of
        `buf` in `shape`, copied into `out` when it is an array."""
        if out is buf:
            return out
        values = buf.read().reshape(-1)[:count].reshape(shape)
        if isinstance(out, np.ndarray):
            out[...] = values
            return out
        return values
