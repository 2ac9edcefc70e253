"""Batches (a base of device.py's Device, naming none of that module's types): the calls a
thread makes inside `with device.batch():`, their dispatches submitted in growing chunks as
they are made and waited for when the block ends, each numpy array passed for a written
buffer given its result then; and what a batch keeps to be dispatched again with no
planning or binding: a run's jobs (Again, for Device.run_again, inside the same batch), and
its whole submission (Submission, for Device.resubmit). A batch's state belongs to the
thread that opened it.

A batch asked to (`keep_submission`) keeps what it submitted as a Submission, which
`Device.resubmit` submits again, outside any batch, with no planning or binding: only
while every kept binding set it holds is still bound (none of their buffers released
since), free, and given back the scalars it had.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from vyre_build.core.errors import DispatchError
from vyre_build.runtime.binding_sets import BindingSets
from vyre_build.runtime.plan import DTYPES, Job

if TYPE_CHECKING:
    from types import TracebackType

# A batch submits its dispatches in chunks of 1, 2, 4, ... up to this many, so the GPU
# starts on the first while later ones are still being recorded.
_CHUNK_MAX = 16


class Temporary(Protocol):
    """What a write-back reads of its temporary buffer: device.py's DeviceBuffer (which
    names its Device, so this module cannot name it)."""

    released: bool
    handle: Any
    nbytes: int
    dtype: str


# (temporary buffer, the caller's numpy array, the call's result, name) of a write-back.
WriteBack = tuple[Temporary, npt.NDArray[Any], dict[str, Any], str]


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


class Batching(BindingSets):
    """The batches of a Device, and what it dispatches again (the module docstring)."""

    def _current_batch(self) -> Batch | None:
        batch: Batch | None = getattr(self._local, "batch", None)
        return batch

    def batch(self) -> Batch:
        """Calls inside `with device.batch():` return DeviceBuffers at once; their
        dispatches go to the device in growing chunks, and leaving the block waits for all.
        A batch belongs to the thread that opened it."""
        return Batch(self)

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


class Batch:
    """Dispatches made in `with device.batch():` by the thread that opened it: submitted in
    growing chunks as they are made, waited for on exit (with an exception, only what was
    already submitted runs). Other threads' calls meanwhile go straight to the device.
    On a clean exit, each numpy array passed for a written buffer receives its result.
    With `keep_submission` set, a batch submitted in one piece at its clean exit, all on
    kept binding sets (DeviceBuffers only, no debug build) and with no array to write
    back, leaves that submission in `submission` (Device.resubmit); else None."""

    def __init__(self, device: Batching):
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
