"""What every backend shares: the Device (buffers, batches, binding-set reuse, dispatch,
thread safety), and what it hands out and takes: DeviceBuffer and Batch, which name the
Device that owns them (hence one module: no other module of the runtime is named by this
one's types). The Plan that Device.run dispatches, and the pure checks and tables, are
plan.py's; the checks of a kernel against the device's profile, profile.py's. A
backend subclasses `Device`, sets `backend`, `name`, `profile` and the limits, and
implements the hooks below; nothing else is backend-specific.

    _alloc(nbytes, data) -> handle        _upload(handle, data)    _download(handle, nbytes)
    _free(handle)                         _pipeline(meta, code, base, entry) -> pipeline
    _bind(pipeline, bound, uniform_binding, uniform) -> entry (owns its uniform buffer)
    _set_uniform(entry, uniform)          _unbind(entry)
    _submit(jobs, final)                  _wait()                  _close()

Every hook runs under the device's lock, so a backend needs no locking of its own; a
batch's state belongs to the thread that opened it.

A batch asked to (`keep_submission`) keeps what it submitted as a Submission, which
`Device.resubmit` submits again, outside any batch, with no planning or binding: only
while every kept binding set it holds is still bound (none of their buffers released
since), free, and given back the scalars it had.
"""

from __future__ import annotations

import collections
import math
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, overload

import numpy as np
import numpy.typing as npt

from vyre_build.bundle.metadata import SCALAR_DTYPES, KernelMeta
from vyre_build.core.backends import VULKAN, WGPU
from vyre_build.core.errors import DeviceError, DispatchError
from vyre_build.runtime import debug
from vyre_build.runtime.plan import (
    DTYPES,
    NP_NAMES,
    host_array,
    Dispatched,
    Job,
    Plan,
    buffer_spec,
    split_dispatch,
)
from vyre_build.runtime.profile import DeviceProfile, check_kernel
from vyre_build.runtime.warm_chunks import Entry, warm_chunks

if TYPE_CHECKING:
    from types import TracebackType

_KEPT_PER_KEY = 8  # kept binding sets per (pipeline, buffers): distinct scalars per batch
# A batch submits its dispatches in chunks of 1, 2, 4, ... up to this many, so the GPU
# starts on the first while later ones are still being recorded.
_CHUNK_MAX = 16
_Scalar = TypeVar("_Scalar", bound=np.generic)
# (temporary buffer, the caller's numpy array, the call's result, name) of a write-back.
WriteBack = tuple["DeviceBuffer", npt.NDArray[Any], dict[str, Any], str]
_Result = TypeVar("_Result", bound=dict[str, Any])
# Devices made by get_device, by (backend, adapter key): shared, dropped when closed.
DEFAULT_DEVICES: dict[tuple[str, object], Device] = {}


class Submission(NamedTuple):
    """A batch's dispatches as it submitted them in one piece (Batch.keep_submission), for
    Device.resubmit: the jobs, and each kept binding set they use with the uniform bytes it
    held (held here, so that no other set can take the id of one unbound since)."""

    jobs: tuple[Job, ...]
    sets: tuple[tuple[Any, bytes | None], ...]


class Again(NamedTuple):
    """What run() queued in a batch on kept binding sets, for Device.run_again: the batch
    and its jobs (no buffer: a set of a buffer released or collected since leaves
    `_live_sets`, which refuses it, as for a Submission)."""

    batch: Batch
    jobs: tuple[Job, ...]


class _Direct:
    """The submission state of a call outside any batch (made and waited for in one lock)."""

    def __init__(self) -> None:
        self.busy: list[int] = []
        self.oneoff: list[Any] = []


class Device:
    """One adapter's logical device (get one with `get_device`). Any thread may make
    buffers, call kernels and open batches on it. Calls on DeviceBuffers reuse kept binding
    sets (8 per pipeline and buffers, freed with a buffer they bind); other calls get
    one-off sets. `profile` lists the features and limits kernels are checked against.
    With `timing` set, `gpu_seconds` is the GPU time of the last call or batch (Vulkan; wgpu
    where the device has "timestamp-query"; else None): docs/runtime.md, "GPU timing"."""

    backend = ""
    name = ""
    profile: DeviceProfile
    max_workgroup_count: tuple[int, int, int] = (65535, 65535, 65535)
    max_buffer_bytes = 2**27
    # Whether the backend can split a dispatch past max_workgroup_count: each piece runs a
    # pipeline specialised for its base workgroup (the SPIR-V emitter's vyre_wg_base specialization constants; see Grids in docs/runtime.md).
    splits_dispatches = False
    # Whether the backend runs the coarse entry points of `meta.coarse` (the cpu one does not).
    coarse_entries = True
    timing = False
    gpu_seconds: float | None = None

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

    def __repr__(self) -> str:
        return f"<Device {self.backend}: {self.name}{' (closed)' if self.closed else ''}>"

    # -- state shared by every entry point --

    def _current_batch(self) -> Batch | None:
        batch: Batch | None = getattr(self._local, "batch", None)
        return batch

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

    # -- public API --

    @property
    def lock(self) -> threading.RLock:
        """The lock held around every driver call of this device: hold it to use the
        backend's own objects (Vulkan queue, wgpu queue) alongside the runtime."""
        return self._lock

    def buffer(
        self,
        data: npt.NDArray[Any] | int | tuple[int, ...],
        dtype: str | None = None,
        *,
        read_only: bool = False,
    ) -> DeviceBuffer:
        """A storage buffer on this device.

        Arguments:
            data: a float32/int32/uint32/float16 array to upload, or a length or shape to
                allocate zero-filled.
            dtype: "f32", "i32", "u32", "f16" or a vector type ("vec4f": `data` then
                counts vectors); required when allocating, else it must match the array.
            read_only: refuse the buffer where a kernel writes.
        Returns:
            The DeviceBuffer (freed by `release()` or when collected).
        """
        dtype, shape, content = buffer_spec(data, dtype)
        nbytes = math.prod(shape) * SCALAR_DTYPES[dtype]
        if content is None and nbytes > self.max_buffer_bytes:  # arrays: checked when bound
            raise DispatchError(
                f"Device.buffer: {nbytes} bytes is more than the device's "
                f"storage buffer limit of {self.max_buffer_bytes} bytes"
            )
        with self._lock:
            self._check_open()
            self._collect()
            handle = self._alloc(nbytes, content)
        return DeviceBuffer(self, handle, dtype, shape, "r" if read_only else "rw")

    def wrap(
        self,
        buffer: object,
        dtype: str,
        shape: tuple[int, ...] | None = None,
        *,
        read_only: bool = False,
    ) -> DeviceBuffer:
        """A DeviceBuffer over an application's own buffer (wgpu: a GPUBuffer of this
        device with STORAGE usage), never freed by the runtime; DispatchError elsewhere."""
        raise DispatchError(
            f"Device.wrap: the {self.backend} backend does not take foreign buffers"
        )

    def adopt(self, value: object, dtype: str, access: str) -> DeviceBuffer | None:
        """A borrowed DeviceBuffer for a foreign buffer passed as an argument, None if
        `value` is none; ValueError saying why a foreign buffer does not fit."""
        return None

    def batch(self) -> Batch:
        """Calls inside `with device.batch():` return DeviceBuffers at once; their
        dispatches go to the device in growing chunks, and leaving the block waits for all.
        A batch belongs to the thread that opened it."""
        return Batch(self)

    def wait(self) -> None:
        """Block until every submitted dispatch has finished."""
        with self._lock:
            self._check_open()
            self._wait()

    def resubmit(self, submission: Submission) -> bool:
        """Submit a kept batch's dispatches again (Batch.keep_submission) and wait for them,
        as that batch did; False, with nothing submitted, where this thread has a batch
        open, or the submission is stale: a buffer it binds was released, or one of its
        binding sets is in use in an open batch. Its buffers hold what the caller put in
        them; its kernels and scalars are the batch's own (each set given its uniform
        bytes back where a later call changed them)."""
        with self._lock:
            self._check_open()
            self._collect()
            if self._current_batch() is not None:
                return False
            busy, live = self._busy, self._live_sets
            for entry, _ in submission.sets:
                if id(entry) in busy or id(entry) not in live:
                    return False
            for entry, uniform in submission.sets:
                if uniform is not None:
                    self._set_uniform(entry, uniform)
            self._submit(list(submission.jobs), True)
        return True

    def close(self) -> None:
        """Wait for submitted work, save the persisted pipeline cache (Vulkan), free what
        the device holds; later use raises DeviceError. Buffers still held become unusable."""
        with self._lock:
            if self.closed:
                return
            try:
                self._wait()
                self.save_pipeline_cache()
            finally:
                self.closed = True
                for key in [k for k, d in DEFAULT_DEVICES.items() if d is self]:
                    del DEFAULT_DEVICES[key]
                self._close()

    def save_pipeline_cache(self) -> bool:
        """Save the persisted pipeline cache now if pipelines were added since it was
        loaded or saved (Vulkan; also done on close and at exit); True if written."""
        return False

    def native_buffer(self, handle: Any) -> Any:
        """The backend's own buffer object of a buffer handle (DeviceBuffer.native)."""
        return handle

    def pipeline_cache_state(self) -> tuple[str | None, int]:
        """(the persisted pipeline cache file, or None where there is none; the bytes of
        it the device started with)."""
        return None, 0

    # -- kernels --

    def check_kernel(self, meta: KernelMeta) -> None:
        """DeviceError unless this device can run `meta`: its features, workgroup size and
        declared shared memory."""
        check_kernel(meta, self.profile, f"the {self.backend} device {self.name}")

    def pipeline(
        self,
        meta: KernelMeta,
        code: Any,
        base: tuple[int, int, int] | None = None,
        entry: str = "main",
    ) -> Any:
        """The backend pipeline of this kernel's `entry` point (`base`: specialised for a
        split dispatch's piece starting at that workgroup), created once per device."""
        key = (meta.id, code, base, entry)
        found = self._pipelines.get(key)
        if found is None:
            with self._lock:
                self._check_open()
                found = self._pipelines.get(key)
                if found is None:
                    found = self._pipelines[key] = self._pipeline(meta, code, base, entry)
                    self._pipelines_added += 1
        return found

    def warm(self, kernels: Iterable[tuple[KernelMeta, Any]]) -> int:
        """Create the pipelines of `kernels` ((meta, code) pairs; each entry point) not yet
        created; return how many were created. `kernels` may be an iterator (a bundle
        loading each kernel as it is asked for), consumed under the device's lock in
        chunks (warm_chunks.py): a backend that overlaps (Vulkan) creates the pipelines
        of a chunk while the next is produced. When anything raises (the iterator, or a
        refused pipeline), no pipeline of the call is kept."""
        todo: list[tuple[KernelMeta, Any, str]] = []
        with self._lock:
            self._check_open()
            chunks = warm_chunks(kernels, self._pipelines, self.coarse_entries, todo)
            made = self._pipelines_chunked(chunks)
            for (m, c, e), pipe in zip(todo, made):
                self._pipelines[m.id, c, None, e] = pipe
            self._pipelines_added += len(todo)
        return len(todo)

    def _pipelines_chunked(self, chunks: Iterator[tuple[list[Entry], bool]]) -> list[Any]:
        # The pipelines of every chunk's (meta, code, entry), in order (each chunk with
        # whether more may follow). Backends that create while later chunks are produced
        # (Vulkan) override this; the others make them all once every chunk is in.
        return self._pipelines_many([k for chunk, _ in chunks for k in chunk])

    def _pipelines_many(self, kernels: list[tuple[KernelMeta, Any, str]]) -> list[Any]:
        # Backends that can create many pipelines in one driver call override this.
        return [self._pipeline(m, c, None, e) for m, c, e in kernels]

    # -- dispatch --

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

    def run(
        self, kernel: Dispatched, plan: Plan, args: dict[str, object], into: _Result
    ) -> _Result:
        """Dispatch `plan` of `kernel`, checked for `args`; put the written buffers into
        `into` and return it (Kernel.__call__). A numpy array passed for a written buffer
        receives the result and is what `into` holds for it: now, or inside a batch when
        the batch ends (until then `into` holds the DeviceBuffer that the batch's
        dispatches write)."""
        with self._lock:
            self._check_open()
            self._collect()
            batch = self._current_batch()
            ctx = batch if batch is not None else self._direct
            meta, code = kernel.meta, kernel.code
            pipeline = self.pipeline(meta, code, None, plan.entry)
            temps: dict[str, DeviceBuffer] = {}
            results: dict[str, DeviceBuffer] = {}
            out = into
            bound, oneoff = [], False
            debug_buffer = None
            try:  # temporaries are released however this ends (in a batch: at its end)
                for arg in plan.buffers:
                    value = args[arg.name]
                    if isinstance(value, DeviceBuffer):
                        buf = value
                    elif isinstance(arg.source, DeviceBuffer):  # a foreign buffer, adopted
                        buf = arg.source
                    elif isinstance(arg.source, np.ndarray):
                        buf = temps[arg.name] = self.buffer(arg.source)
                    else:
                        buf = temps[arg.name] = self.buffer(arg.shape, arg.dtype)
                    oneoff = oneoff or buf.borrowed or arg.name in temps
                    results[arg.name] = buf
                    bound.append((arg.binding, buf._live(), buf.nbytes))
                # A debug build's kernel gets a fresh debug buffer per call (runtime/debug.py).
                debug_buffer = debug.attach(self, meta, bound)
                oneoff = oneoff or debug_buffer is not None
                jobs: list[Job] = []  # an empty grid dispatches nothing; outputs keep contents
                if all(plan.workgroups):
                    # Only calls on persistent buffers reuse binding sets; temporaries die now.
                    entry = None if oneoff else self._binding(pipeline, bound, plan, ctx)
                    if entry is None:
                        entry = self._bind(pipeline, bound, plan.uniform_binding, plan.uniform)
                        ctx.oneoff.append(entry)
                    if plan.split:  # each piece on the pipeline specialised for its base
                        pieces = split_dispatch(plan.workgroups, self.max_workgroup_count)
                        jobs += [
                            (
                                self.pipeline(meta, code, b if any(b) else None, plan.entry),
                                entry,
                                counts,
                            )
                            for b, counts in pieces
                        ]
                    else:
                        jobs.append((pipeline, entry, plan.workgroups))
                out.update((n, results[n]) for n in plan.written)
                # (temporary, the caller's array, result, name) of each result an array gets.
                back: list[WriteBack] = [
                    (temps[n], value, out, n)
                    for n in plan.written
                    if n in temps and isinstance(value := args[n], np.ndarray)
                ]
                if batch is not None and debug_buffer is not None:  # reported at once
                    batch.whole = False
                    pending, batch.pending = batch.pending + jobs, []
                    batch.write_backs.extend(back)
                    self._submit(pending, True)
                    debug.read_back(self, meta, debug_buffer)
                    return out
                if batch is not None:
                    if not oneoff and jobs:  # on kept sets, DeviceBuffers only: repeatable
                        # CallResult._again (`into` is typed as any dict here, so not `.`)
                        setattr(into, "_again", Again(batch, tuple(jobs)))  # noqa: B010
                    batch.pending.extend(jobs)
                    batch.write_backs.extend(back)
                    if len(batch.pending) >= batch.chunk:
                        self._send_chunk(batch)
                    return out
                self._flush(jobs, ctx)
                self._write_back(back)
                if debug_buffer is not None:
                    debug.read_back(self, meta, debug_buffer)
                for name, buf in temps.items():
                    if out.get(name) is buf:  # a length or shape: a new array
                        out[name] = buf.read()
                return out
            finally:
                if debug_buffer is not None:  # read back (or the call failed): not needed
                    self._free(debug_buffer)
                for name, buf in temps.items():  # deferred to the batch's end inside one
                    if batch is None or name not in out:
                        buf.release()

    def _send_chunk(self, batch: Batch) -> None:
        # Submit the batch's pending dispatches as a chunk; the next chunk may be larger.
        batch.whole = False
        self._submit(batch.pending, False)
        batch.pending, batch.chunk = [], min(2 * batch.chunk, _CHUNK_MAX)

    def run_again(self, again: list[Again]) -> bool:
        """Queue the dispatches of earlier run() calls again, as they were (`again`: each
        run's CallResult._again), in this thread's open batch; False, queueing nothing, where
        they cannot be: another batch or none, or a buffer released or collected since (its
        sets leave `_live_sets`, as resubmit finds). The binding sets are the ones those runs
        took for this batch: they stay its own, with their scalars, until it ends
        (_binding), so the dispatches are the same (a library call repeated on the same
        DeviceBuffers in a batch: no checks, plan or binding)."""
        with self._lock:
            self._check_open()
            self._collect()
            batch = self._current_batch()
            if batch is None or any(a.batch is not batch for a in again):
                return False
            live = self._live_sets
            if any(id(entry) not in live for a in again for _, entry, _ in a.jobs):
                return False
            for a in again:
                batch.pending.extend(a.jobs)
            if len(batch.pending) >= batch.chunk:
                self._send_chunk(batch)
            return True

    def _write_back(self, items: list[WriteBack]) -> None:
        # Copy each temporary into the caller's array (any strides: the values in row-major
        # order, as they were uploaded) and make the result hold that array. Under the lock.
        for buf, array, result, name in items:
            if buf.released:  # released by its holder inside a batch: nothing to read
                continue
            raw = self._download(buf.handle, buf.nbytes)
            np.copyto(array, np.frombuffer(raw, dtype=DTYPES[buf.dtype]).reshape(array.shape))
            result[name] = array

    # -- backend hooks (see the module docstring) --

    def _alloc(self, nbytes: int, data: bytes | None) -> Any:
        raise NotImplementedError

    def _upload(self, handle: Any, data: bytes) -> None:
        raise NotImplementedError

    def _download(self, handle: Any, nbytes: int) -> bytes:
        raise NotImplementedError

    def _free(self, handle: Any) -> None:
        raise NotImplementedError

    def _pipeline(
        self, meta: KernelMeta, code: Any, base: tuple[int, int, int] | None, entry: str
    ) -> Any:
        raise NotImplementedError

    def _bind(
        self,
        pipeline: Any,
        bound: list[tuple[int, Any, int]],
        uniform_binding: int | None,
        uniform: bytes | None,
    ) -> Any:
        raise NotImplementedError

    def _set_uniform(self, entry: Any, uniform: bytes) -> None:
        raise NotImplementedError

    def _unbind(self, entry: Any) -> None:
        raise NotImplementedError

    def _submit(self, jobs: list[Job], final: bool) -> None:
        raise NotImplementedError

    def _wait(self) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError


class DeviceBuffer:
    """A storage buffer on one device: `count` elements of `dtype` ("f32", "i32", "u32",
    "f16") in `shape`, `nbytes` bytes. Read it back with `.read()`; a read-only one (access
    "r") is refused where a kernel writes. A borrowed buffer (an application's wgpu
    GPUBuffer) is never freed by the runtime."""

    def __init__(
        self,
        device: Device,
        handle: Any,
        dtype: str,
        shape: tuple[int, ...],
        access: str,
        *,
        borrowed: bool = False,
    ):
        self.device, self.handle, self.dtype = device, handle, dtype
        self.shape, self.access, self.released = shape, access, False
        self.borrowed = borrowed
        self.count = math.prod(shape)
        self.nbytes = self.count * SCALAR_DTYPES[dtype]

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        state = " released" if self.released else " borrowed" if self.borrowed else ""
        return (
            f"<DeviceBuffer {NP_NAMES[self.dtype]}{list(self.shape)} access={self.access!r}"
            f"{state} on {self.device.backend}>"
        )

    @property
    def native(self) -> Any:
        """The backend's own buffer behind this one (Device.native_buffer: a wgpu
        `GPUBuffer`, a `VkBuffer` handle, the cpu backend's numpy bytes)."""
        return self.device.native_buffer(self._live())

    @property
    def wgpu_buffer(self) -> Any:
        """The wgpu `GPUBuffer` behind this buffer (wgpu devices only)."""
        return self._native_of(WGPU.name)

    @property
    def vulkan_buffer(self) -> Any:
        """The `VkBuffer` handle behind this buffer (Vulkan devices only; the runtime owns
        it: see docs/runtime.md on sharing)."""
        return self._native_of(VULKAN.name)

    def _native_of(self, backend: str) -> Any:
        if self.device.backend != backend:
            raise DispatchError(
                f"DeviceBuffer.{backend}_buffer: this is a {self.device.backend} buffer"
            )
        return self.native

    def _live(self, op: str = "") -> Any:
        # A read or write inside this thread's batch would not be ordered with its dispatches.
        if op and self.device._current_batch() is not None:
            raise DispatchError(
                f"DeviceBuffer.{op}() inside device.batch(): {op} before or "
                "after the batch (it is submitted when the `with` block ends)"
            )
        if self.released:
            raise DispatchError("DeviceBuffer was released; create a new one")
        self.device._check_open()
        return self.handle

    @overload
    def read(self) -> npt.NDArray[Any]: ...

    @overload
    def read(self, dtype: type[_Scalar]) -> npt.NDArray[_Scalar]: ...

    def read(self, dtype: type[np.generic] | None = None) -> npt.NDArray[Any]:
        """A new numpy array of the buffer's contents (waits for submitted dispatches);
        with `dtype` (np.float32, ...) typed as such, DispatchError if it is another."""
        if dtype is not None and np.dtype(dtype) != DTYPES[self.dtype]:
            raise DispatchError(
                f"DeviceBuffer.read: the buffer holds {NP_NAMES[self.dtype]}, not {np.dtype(dtype)}"
            )
        with self.device._lock:
            raw = self.device._download(self._live("read"), self.nbytes)
        flat: npt.NDArray[Any] = np.frombuffer(raw, dtype=DTYPES[self.dtype])
        shaped: npt.NDArray[Any] = flat.reshape(self.shape).copy()
        return shaped

    def write(self, array: npt.NDArray[Any]) -> None:
        """Overwrite the whole buffer with `array` (same dtype and element count)."""
        array = host_array(array)
        if (
            not isinstance(array, np.ndarray)
            or array.dtype != DTYPES[self.dtype]
            or array.size != self.count
        ):
            got = (
                f"{array.dtype}[{array.size}]"
                if isinstance(array, np.ndarray)
                else type(array).__name__
            )
            raise DispatchError(
                f"DeviceBuffer.write: expected a {NP_NAMES[self.dtype]} array "
                f"of {self.count} elements, got {got}"
            )
        with self.device._lock:
            self.device._upload(self._live("write"), np.ascontiguousarray(array).tobytes())

    def release(self) -> None:
        """Free the device memory now, or when the batches open on the device end."""
        if not self.released:
            self.released = True
            with self.device._lock:
                self.device._release(self.handle, self.borrowed)

    def __del__(self) -> None:
        # Collection may happen in any thread, inside the device's own critical sections:
        # hand the handle over; the next device operation frees it.
        if not getattr(self, "released", True):
            self.released = True
            try:
                self.device._garbage.append((self.handle, self.borrowed))
            except Exception:  # noqa: S110 - at interpreter shutdown: nothing left to free
                pass


class Batch:
    """Dispatches made in `with device.batch():` by the thread that opened it: submitted in
    growing chunks as they are made, waited for on exit (with an exception, only what was
    already submitted runs). Other threads' calls meanwhile go straight to the device.
    On a clean exit, each numpy array passed for a written buffer receives its result.
    With `keep_submission` set, a batch submitted in one piece at its clean exit, all on
    kept binding sets (DeviceBuffers only, no debug build) and with no array to write
    back, leaves that submission in `submission` (Device.resubmit); else None."""

    def __init__(self, device: Device):
        self.device, self.chunk = device, 1
        self.pending: list[Job] = []
        self.write_backs: list[WriteBack] = []  # in call order: a later call's result wins
        self.busy: list[int] = []  # ids of kept binding sets this batch's dispatches use
        self.oneoff: list[Any] = []  # one-off binding sets, unbound when the batch ends
        self.thread: int | None = None
        self.whole = True  # nothing submitted before the exit
        self.keep_submission = False
        self.submission: Submission | None = None

    def __enter__(self) -> Batch:
        device = self.device
        with device._lock:
            device._check_open()
            if device._current_batch() is not None:
                raise DispatchError("device.batch() blocks cannot be nested")
            if self.thread is not None:
                raise DispatchError("a device.batch() object can be entered once")
            self.thread, self.chunk = threading.get_ident(), 1
            device._local.batch = self
            device._open_batches += 1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        device = self.device
        if self.thread != threading.get_ident():
            raise DispatchError(
                "device.batch() belongs to the thread that opened it; leave it in that thread"
            )
        with device._lock:
            device._local.batch = None
            try:
                if self.keep_submission and exc_type is None:
                    self.submission = self._kept()
                device._flush(self.pending if exc_type is None else [], self)
                if exc_type is None:
                    device._write_back(self.write_backs)
            finally:
                self.pending, self.write_backs = [], []
                device._open_batches -= 1
                device._collect()

    def _kept(self) -> Submission | None:
        # The Submission of this batch's pending jobs, where it can be one (under the lock).
        if not self.whole or self.oneoff or self.write_backs or not self.pending:
            return None
        busy, sets = self.device._busy, {}
        for _, entry, _ in self.pending:
            held = busy.get(id(entry))
            if held is None:  # not a kept set
                return None
            sets[id(entry)] = (entry, held[1])
        return Submission(tuple(self.pending), tuple(sets.values()))
