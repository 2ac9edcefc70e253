"""Many threads on one device: kernel calls with numpy and device-buffer arguments, buffers
made and dropped, and batches (each owned by the thread that opened it), compared with
numpy. Runs for real on both backends (lavapipe here)."""

from __future__ import annotations

import gc
import os
import sys
import threading

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import load  # noqa: E402

from vyre_build.core.errors import DispatchError  # noqa: E402

pytestmark = pytest.mark.gpu

THREADS, CALLS, N = 8, 200, 300


def run_threads(worker, count=THREADS) -> None:
    """Run worker(index) on `count` threads at once; re-raise the first failure."""
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def body(index: int) -> None:
        try:
            start.wait()
            worker(index)
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


@pytest.mark.slow
def test_eight_threads_two_hundred_calls_each(device):
    saxpy, iota = load("saxpy", device.backend, device), load("iota", device.backend, device)
    shared_x = device.buffer(np.arange(N, dtype=np.float32), read_only=True)

    def worker(t: int) -> None:
        rng = np.random.default_rng(t)
        mine = device.buffer(np.zeros(N, np.float32))
        total = np.zeros(N, np.float32)
        for i in range(CALLS):
            a = float(t + 1)
            if i % 4 == 0:  # numpy in, numpy out
                x = rng.standard_normal(N).astype(np.float32)
                y = rng.standard_normal(N).astype(np.float32)
                want = np.float32(a) * x + y
                got = saxpy(x=x, y=y, a=a).array("y")  # y itself, holding the result
                assert got is y
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
            elif i % 4 == 1:  # device buffers, accumulating on the GPU
                assert saxpy(x=shared_x, y=mine, a=a)["y"] is mine
                total += np.float32(a) * np.arange(N, dtype=np.float32)
            elif i % 4 == 2:  # an output made by the runtime
                out = iota(out=N, start=t * 1000 + i, step=t + 1).array("out")
                np.testing.assert_array_equal(
                    out, (t * 1000 + i + (t + 1) * np.arange(N)).astype(np.uint32)
                )
            else:  # a buffer made and dropped by this thread
                tmp = device.buffer(N, "u32")
                iota(out=tmp, start=i, step=0)
                assert (tmp.read() == i).all()
                del tmp
        np.testing.assert_allclose(mine.read(), total, rtol=1e-5)

    run_threads(worker)
    gc.collect()


@pytest.mark.slow
def test_batches_on_several_threads_at_once(device):
    saxpy = load("saxpy", device.backend, device)
    ones = device.buffer(np.ones(N, np.float32), read_only=True)

    def worker(t: int) -> None:
        y = device.buffer(N, "f32")
        for _ in range(10):
            with device.batch():
                for _ in range(20):
                    saxpy(x=ones, y=y, a=float(t))
                    # Calls with arrays inside a batch: temporaries freed at its end.
                    saxpy(x=np.ones(N, np.float32), y=y, a=1.0)
                with pytest.raises(DispatchError, match="inside device.batch"):
                    y.read()
        np.testing.assert_array_equal(y.read(), np.full(N, 200.0 * (t + 1), np.float32))

    run_threads(worker)


def test_a_batch_belongs_to_the_thread_that_opened_it(device):
    saxpy = load("saxpy", device.backend, device)
    x, y = device.buffer(np.ones(64, np.float32), read_only=True), device.buffer(64, "f32")
    batch = device.batch()
    batch.__enter__()
    saxpy(x=x, y=y, a=1.0)  # pending in this thread's batch
    seen = {}

    def other() -> None:
        # Outside any batch of its own: its call goes to the device and waits.
        seen["other"] = saxpy(x=np.ones(64, np.float32), y=np.zeros(64, np.float32), a=5.0).array(
            "y"
        )
        try:
            batch.__exit__(None, None, None)
        except DispatchError as exc:
            seen["error"] = str(exc)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen["error"] == (
        "device.batch() belongs to the thread that opened it; leave it in that thread"
    )
    np.testing.assert_array_equal(seen["other"], np.full(64, 5.0, np.float32))
    batch.__exit__(None, None, None)
    np.testing.assert_array_equal(y.read(), np.ones(64, np.float32))


@pytest.mark.slow
def test_descriptor_pools_grow_under_concurrent_batches_and_kept_sets():
    # One set per pool: every binding set of eight threads' batches (kept ones and the
    # one-off sets of array arguments, held until each batch ends) needs a pool of its own.
    # A driver that refuses sooner (NVIDIA: VK_ERROR_OUT_OF_POOL_MEMORY) is covered by
    # test_runtime_faults.py.
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime.backends.vulkan.device import VulkanDevice

    device = VulkanDevice(pipeline_cache=False)
    device.pool_sets = 1
    saxpy = load("saxpy", "vulkan", device)
    ones = device.buffer(np.ones(N, np.float32), read_only=True)
    seen: list[int] = []
    ys = {}

    def worker(t: int) -> None:
        y = ys[t] = device.buffer(N, "f32")
        for _ in range(5):
            with device.batch():
                for _ in range(20):
                    saxpy(x=ones, y=y, a=float(t))
                    saxpy(x=np.ones(N, np.float32), y=y, a=1.0)
                with device.lock:
                    seen.append(len(device._pools))
        np.testing.assert_array_equal(y.read(), np.full(N, 100.0 * (t + 1), np.float32))

    run_threads(worker)
    # This thread's batch held its kept set and 20 one-off sets, one pool each.
    assert min(seen) >= 21
    assert len(device._pools) == 9  # the kept set of each thread's y, and one spare
    for y in ys.values():
        y.release()
    assert len(device._pools) == 1
    device.close()
