"""Device.resubmit on every backend: a batch that kept its submission (keep_submission)
is submitted again as it was, with the scalars it had, and refused (False, nothing
submitted) where it would not be the same: inside a batch, after a buffer it binds was
released, while one of its binding sets is in an open batch's use. Library calls that
replay a recipe go through it and give what a planned call gives."""

from __future__ import annotations

import gc
import os
import sys
import threading

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import load  # noqa: E402

from vyre_build.core.errors import DeviceError  # noqa: E402


def _kept(device, saxpy, x, y, scalars):
    # The submission of a batch of saxpy calls y += a * x, one per scalar in `scalars`.
    with device.batch() as batch:
        batch.chunk = len(scalars) + 1
        batch.keep_submission = True
        for a in scalars:
            saxpy(x=x, y=y, a=a)
    return batch.submission


def test_a_kept_submission_runs_again_with_its_own_scalars(device):
    saxpy = load("saxpy", device.backend, device)
    host = np.arange(100, dtype=np.float32)
    x, y = device.buffer(host), device.buffer(100, "f32")
    sub = _kept(device, saxpy, x, y, (2.0, 3.0))
    assert sub is not None and len(sub.jobs) == 2
    np.testing.assert_array_equal(y.read(), 5 * host)
    saxpy(x=x, y=y, a=-7.0)  # the same buffers with another scalar: a kept set rewritten
    np.testing.assert_array_equal(y.read(), -2 * host)
    assert device.resubmit(sub) and device.resubmit(sub)
    np.testing.assert_array_equal(y.read(), 8 * host)
    x.write(np.ones(100, np.float32))  # what the buffers hold is the caller's
    assert device.resubmit(sub)
    np.testing.assert_array_equal(y.read(), 8 * host + 5)


def test_what_a_batch_cannot_keep(device):
    saxpy = load("saxpy", device.backend, device)
    x, y = device.buffer(np.ones(64, np.float32)), device.buffer(64, "f32")
    with device.batch() as plain:  # not asked to keep it
        saxpy(x=x, y=y, a=1.0)
    assert plain.submission is None
    with device.batch() as chunked:  # a chunk went before the end
        chunked.keep_submission = True
        saxpy(x=x, y=y, a=1.0)
        saxpy(x=x, y=y, a=1.0)
    assert chunked.submission is None
    with device.batch() as arrays:  # an array argument: a one-off set, a write-back
        arrays.chunk, arrays.keep_submission = 4, True
        saxpy(x=np.ones(64, np.float32), y=y, a=1.0)
    assert arrays.submission is None
    with device.batch() as empty:
        empty.keep_submission = True
    assert empty.submission is None
    with pytest.raises(RuntimeError), device.batch() as failed:
        failed.chunk, failed.keep_submission = 4, True
        saxpy(x=x, y=y, a=1.0)
        raise RuntimeError("the batch ends with an exception")
    assert failed.submission is None


def test_a_released_buffer_or_an_open_batch_refuses_it(device):
    saxpy = load("saxpy", device.backend, device)
    x, y = device.buffer(np.ones(64, np.float32)), device.buffer(64, "f32")
    sub = _kept(device, saxpy, x, y, (1.0,))
    with device.batch():
        assert not device.resubmit(sub)  # inside this thread's batch: never
    np.testing.assert_array_equal(y.read(), np.ones(64))
    other = device.buffer(64, "f32")
    other.release()  # a buffer the submission does not bind: no matter
    assert device.resubmit(sub)
    x.release()
    assert not device.resubmit(sub)
    np.testing.assert_array_equal(y.read(), np.full(64, 2.0))


def test_a_buffer_released_inside_another_threads_batch_refuses_it(device):
    # Released while a batch is open, the buffer's sets are unbound only at that batch's
    # end: the submission is stale at once all the same.
    saxpy = load("saxpy", device.backend, device)
    x, y = device.buffer(np.ones(64, np.float32)), device.buffer(64, "f32")
    sub = _kept(device, saxpy, x, y, (1.0,))
    opened, done = threading.Event(), threading.Event()

    def hold() -> None:
        with device.batch():
            opened.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert opened.wait(30)
        y.release()
        assert not device.resubmit(sub)
    finally:
        done.set()
        thread.join()
    assert not device.resubmit(sub)


def test_a_set_in_use_in_another_threads_batch_refuses_it(device):
    # Another thread's open batch dispatches on the same buffers: the kept set it holds
    # (whose scalars it may have rewritten) is not the submission's until that batch ends.
    saxpy = load("saxpy", device.backend, device)
    host = np.arange(64, dtype=np.float32)
    x, y = device.buffer(host), device.buffer(64, "f32")
    sub = _kept(device, saxpy, x, y, (1.0,))
    opened, done = threading.Event(), threading.Event()

    def hold() -> None:
        with device.batch():
            saxpy(x=x, y=y, a=10.0)
            opened.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert opened.wait(30)
        assert not device.resubmit(sub)
    finally:
        done.set()
        thread.join()
    assert device.resubmit(sub)
    np.testing.assert_array_equal(y.read(), 12 * host)


@pytest.mark.backends("wgpu", "vulkan")  # the cpu backend has no GPU time
def test_a_resubmission_is_timed_as_the_batch_was(device):
    # With timing on, gpu_seconds is the resubmission's where a planned call has a figure
    # (None where the device gives none), and None again with timing off.
    saxpy = load("saxpy", device.backend, device)
    x, y = device.buffer(np.ones(64, np.float32)), device.buffer(64, "f32")
    sub = _kept(device, saxpy, x, y, (1.0, 1.0))
    try:
        device.timing = True
        saxpy(x=x, y=y, a=1.0)
        planned = device.gpu_seconds
        device.gpu_seconds = -1.0  # so that a resubmission that sets nothing shows
        assert device.resubmit(sub)
        assert (device.gpu_seconds is None) == (planned is None)
        assert device.gpu_seconds is None or device.gpu_seconds >= 0
    finally:
        device.timing = False
    assert device.resubmit(sub) and device.gpu_seconds is None
    np.testing.assert_array_equal(y.read(), np.full(64, 7.0))


def test_a_closed_device_refuses_it(backend):
    from vyre_build.runtime import get_device

    if backend == "cpu":
        from vyre_build.runtime.backends.cpu import CpuDevice as Made
    elif backend == "wgpu":
        from vyre_build.runtime.backends.wgpu.device import WgpuDevice as Made
    else:
        pytest.skip("a second Vulkan device: test_runtime covers closing it")
    get_device(backend)  # skips where the backend has no adapter
    device = Made()
    saxpy = load("saxpy", backend, device)
    x, y = device.buffer(np.ones(8, np.float32)), device.buffer(8, "f32")
    sub = _kept(device, saxpy, x, y, (1.0,))
    device.close()
    with pytest.raises(DeviceError, match="the device was closed"):
        device.resubmit(sub)


@pytest.mark.backends("wgpu")
def test_replayed_library_calls_resubmit_and_plan_again_when_stale(device, monkeypatch):
    from vyre_build import library
    from vyre_build.runtime.device import Device

    x = (np.arange(20001) % 7).astype(np.uint32)
    xb, prefix, total = device.buffer(x), device.buffer(20001, "u32"), device.buffer(1, "u32")
    # Other buffers released meanwhile (earlier tests' scratch buffers, dropped from the
    # kept ones, or collected) leave these calls' submissions as they are.
    gc.collect()
    library.scan(xb, out=prefix)
    library.reduce(xb, out=total)
    runs, resubmits = [], []
    run, resubmit = Device.run, Device.resubmit
    monkeypatch.setattr(Device, "run", lambda d, k, *a: runs.append(k.id) or run(d, k, *a))
    monkeypatch.setattr(Device, "resubmit", lambda d, s: resubmits.append(r := resubmit(d, s)) or r)
    for _ in range(3):
        library.scan(xb, out=prefix)
        library.reduce(xb, out=total)
    assert runs == [] and resubmits == [True] * 6
    np.testing.assert_array_equal(prefix.read(), np.cumsum(x, dtype=np.uint32))
    assert total.read()[0] == x.sum()
    stale = device.buffer(4, "u32")  # bound by no kept set yet: its release changes nothing
    stale.release()
    x2 = x[::-1].copy()
    xb.write(x2)
    with device.batch():  # inside the caller's batch: planned steps, no resubmission
        library.scan(xb, out=prefix)
    assert len(runs) == 3 and resubmits[6:] == []
    np.testing.assert_array_equal(prefix.read(), np.cumsum(x2, dtype=np.uint32))
    library.scan(xb, out=prefix)  # the kept submission again
    assert len(runs) == 3 and resubmits[6:] == [True]
    # Another call's buffers released: nothing to the submission.
    other, sink = device.buffer(x), device.buffer(20001, "u32")
    library.scan(other, out=sink)
    sink.release()
    library.scan(xb, out=prefix)
    assert resubmits[-1] is True and len(runs) == 3 + 3
    # A submission the device refuses (stale): the steps run again, keeping a new one.
    monkeypatch.setattr(Device, "resubmit", lambda d, s: resubmits.append(False) or False)
    xb.write(x)
    library.scan(xb, out=prefix)
    assert resubmits[-1] is False and len(runs) == 6 + 3
    np.testing.assert_array_equal(prefix.read(), np.cumsum(x, dtype=np.uint32))
    monkeypatch.setattr(Device, "resubmit", lambda d, s: resubmits.append(r := resubmit(d, s)) or r)
    xb.write(x2)
    library.scan(xb, out=prefix)
    assert resubmits[-1] is True and len(runs) == 9
    np.testing.assert_array_equal(prefix.read(), np.cumsum(x2, dtype=np.uint32))


def test_a_batch_queues_a_kernels_dispatch_again_and_no_other_batch_does(device):
    """Device.run_again: what a call queued on kept sets in this batch, queued again as it
    was (its scalars included); refused outside that batch."""
    saxpy = load("saxpy", device.backend, device)
    host = np.arange(64, dtype=np.float32)
    x, y = device.buffer(host), device.buffer(64, "f32")
    with device.batch():
        first = saxpy(x=x, y=y, a=2.0)._again
        saxpy(x=x, y=y, a=-1.0)
        assert first is not None and device.run_again([first]) and device.run_again([first])
    np.testing.assert_array_equal(y.read(), 5 * host)  # 2 - 1 + 2 + 2
    assert not device.run_again([first])  # no batch open
    with device.batch():
        assert not device.run_again([first])  # another batch: its sets are not this one's
        saxpy(x=x, y=y, a=1.0)
    np.testing.assert_array_equal(y.read(), 6 * host)
    with device.batch():  # an array argument: a one-off set, nothing to queue again
        assert saxpy(x=host, y=y, a=1.0)._again is None
    with device.batch():  # a buffer it binds released since: refused
        token = saxpy(x=x, y=y, a=1.0)._again
        x.release()
        assert not device.run_again([token])


def test_library_calls_repeated_in_a_batch_queue_their_dispatches_again(device, monkeypatch):
    from vyre_build import library
    from vyre_build.runtime.device import Device

    x = (np.arange(5000) % 11).astype(np.int32)
    xb, prefix, total = device.buffer(x), device.buffer(5000, "i32"), device.buffer(1, "i32")
    library.scan(xb, out=prefix)  # the recipes
    library.reduce(xb, out=total)
    runs, again = [], []
    run, run_again = Device.run, Device.run_again
    monkeypatch.setattr(Device, "run", lambda d, k, *a: runs.append(k.id) or run(d, k, *a))
    monkeypatch.setattr(Device, "run_again", lambda d, a: again.append(r := run_again(d, a)) or r)
    with device.batch():
        for _ in range(4):
            library.scan(xb, out=prefix)
            library.reduce(xb, out=total)
    planned = len(runs)  # the first scan and reduce of the batch: their steps, planned
    assert planned >= 2 and again == [True] * 6
    np.testing.assert_array_equal(prefix.read(), np.cumsum(x, dtype=np.int32))
    assert total.read()[0] == x.sum()
    x2 = x[::-1].copy()
    xb.write(x2)
    with device.batch():  # a new batch: the last one's dispatches are refused, then its own
        library.reduce(xb, out=total)
        library.reduce(xb, out=total)
    # (the first: refused by the front door, library.again, then by the recipe's replay)
    assert again[6:] == [False, False, True] and len(runs) > planned
    assert total.read()[0] == x2.sum()


def test_a_call_repeated_in_a_batch_is_found_before_its_checks(device, monkeypatch):
    """library.again: the third identical call in a batch (after the recipe's planned
    replay) is queued again before any check or pick; another argument type, a released
    buffer or a plain mapping of kernels goes the whole way (and is refused as before)."""
    from vyre_build import library
    from vyre_build.core.errors import DispatchError
    from vyre_build.library import call as library_call

    x = (np.arange(3000) % 5).astype(np.float32)
    xb, out, total = device.buffer(x), device.buffer(3000, "f32"), device.buffer(1, "f32")
    library.scan(xb, out=out)
    library.reduce(xb, out=total)
    made = []
    init = library_call.Call.__init__
    monkeypatch.setattr(
        library_call.Call, "__init__", lambda c, *a: made.append(a[0]) or init(c, *a)
    )
    with device.batch():
        for _ in range(5):
            library.scan(xb, out=out)
            library.reduce(xb, out=total)
        assert made.count("scan") == 1 and made.count("reduce") == 1  # the first of each
        with pytest.raises(DispatchError, match="exclusive must be True or False"):
            library.scan(xb, exclusive=0, out=out)  # equal to False, not a bool: checked
    np.testing.assert_array_equal(out.read(), np.cumsum(x))
    assert total.read()[0] == x.sum()
    with device.batch():  # a new batch: the kept dispatches are refused, its first call
        library.scan(xb, out=out)  # plans again, the others are found
        library.scan(xb, out=out)
        library.scan(xb, out=out)
    assert made.count("scan") == 2
    xb.release()
    with device.batch(), pytest.raises(DispatchError, match="released DeviceBuffer"):
        library.scan(xb, out=out)
    from vyre_build.library.bundle import default_library

    lib = default_library(device)
    kernels = {k: lib[k] for k in lib if k.startswith("lib_scan")}  # a plain mapping
    y = device.buffer(x)
    with device.batch():
        for _ in range(3):
            library.scan(kernels, y, out=out)
    # (the released one refused), then two calls (its recipe, then its replay), then found
    assert made.count("scan") == 2 + 1 + 2
    np.testing.assert_array_equal(out.read(), np.cumsum(x))
    used = library.scan_kernels(device, "f32", 3000)
    with device.batch():
        library.scan(kernels, y, out=out)  # another batch: planned
        library.scan(kernels, y, out=out)  # found again
        kernels[used[-1]] = lib[used[-1]]  # the same Kernel again: still found
        library.scan(kernels, y, out=out)
        assert made.count("scan") == 6
        kernels["extra"] = lib[used[-1]]  # a kernel added: looked up again
        library.scan(kernels, y, out=out)
        assert made.count("scan") == 7
        del kernels[used[-1]]  # a kernel it used gone: the whole way (what the mapping
        try:  # holds now: reduce-then-scan on the cpu reference; elsewhere refused)
            library.scan(kernels, y, out=out)
        except DispatchError as e:
            assert "no kernel" in str(e)
        assert made.count("scan") == 8


def test_what_a_batch_keeps_to_queue_again_keeps_no_buffer_alive(device):
    """The dispatches kept for library.again and Device.run_again hold their buffers
    weakly: buffers the caller drops after a batch are collected (their memory freed)."""
    import weakref

    from vyre_build import library

    x = device.buffer(np.ones(5000, np.float32))
    out = device.buffer(5000, "f32")
    library.scan(x, out=out)
    with device.batch():
        for _ in range(3):
            library.scan(x, out=out)
    refs = (weakref.ref(x), weakref.ref(out))
    del x, out
    gc.collect()
    assert [r() for r in refs] == [None, None]
