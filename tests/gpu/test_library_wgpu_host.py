"""The host cost of library calls on wgpu (issue 23, item 3): a call submits once, repeated
calls make no bind groups, uniform buffers or storage buffers, and what is reused (kept
upload and result buffers, uniform buffers rewritten in place) still gives every call its
own values, with calls in flight, across threads and inside batches."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import wgpu

from vyre_build.core.errors import DeviceError
from vyre_build import library
from vyre_build.runtime import open_bundle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_library import build_library  # noqa: E402
from vyre_build.library.call import KEPT_BYTES

pytestmark = pytest.mark.backends("wgpu")

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "kernels")


@pytest.fixture(scope="module")
def lib_path(tmp_path_factory):
    """kernels/lib_reduce.py and lib_scan.py compiled to WGSL into one bundle."""
    path = tmp_path_factory.mktemp("lib") / "lib.vyrebundle"
    return build_library(path, ("lib_reduce.py", "lib_scan.py"), ("wgsl",))


@pytest.fixture
def lib(device, lib_path):
    with open_bundle(lib_path, device=device) as bundle:
        yield bundle


class _CountingQueue:
    """A wgpu queue that counts its submissions (everything else passes through)."""

    def __init__(self, queue):
        self.queue, self.submits = queue, 0

    def submit(self, buffers):
        self.submits += 1
        return self.queue.submit(buffers)

    def __getattr__(self, name):
        return getattr(self.queue, name)


class _CountingSubmit:
    """wgpu-native's wgpuQueueSubmit as the device's native recorder calls it, counted."""

    def __init__(self, submit):
        self.submit, self.submits = submit, 0

    def __call__(self, *args):
        self.submits += 1
        return self.submit(*args)


@pytest.fixture
def counted(device):
    """The device with its submissions counted: those of its native recorder (every call
    without timing, where wgpu-py's native backend is there) and of its queue."""
    queue, native = device.queue, device._native
    device.queue = _CountingQueue(queue)
    if native is not None:
        native.submit_fn = _CountingSubmit(native.submit_fn)
    try:
        yield _Submits(device.queue, native)
    finally:
        device.queue = queue
        if native is not None:
            native.submit_fn = native.submit_fn.submit


class _Submits:
    def __init__(self, queue, native):
        self.queue, self.native = queue, native

    @property
    def submits(self) -> int:
        return self.queue.submits + (0 if self.native is None else self.native.submit_fn.submits)


def made(dev):
    # What the device has created so far, and the storage buffers it holds now.
    return dict(dev.made), len(dev._buffers)


def test_a_library_call_submits_once(lib, counted):
    dev = lib.device
    x = (np.arange(20001) % 7).astype(np.uint32)
    xb, prefix, total = dev.buffer(x), dev.buffer(20001, "u32"), dev.buffer(1, "u32")
    library.scan(lib, xb, out=prefix)  # three steps
    library.reduce(lib, xb, out=total)  # two passes at this size
    dev.wait()
    before = counted.submits
    for _ in range(10):
        library.scan(lib, xb, out=prefix)
        library.reduce(lib, xb, out=total)
    assert counted.submits - before == 20  # one per call, each of two or three steps
    np.testing.assert_array_equal(prefix.read(), np.cumsum(x, dtype=np.uint32))
    assert total.read()[0] == x.sum()


def test_repeated_calls_make_no_bind_groups_or_buffers(lib):
    dev = lib.device
    rng = np.random.default_rng(3)
    host = rng.integers(0, 50, 4099).astype(np.int32)
    xb, prefix, total = dev.buffer(host), dev.buffer(4099, "i32"), dev.buffer(1, "i32")
    calls = [
        lambda: library.scan(lib, xb, out=prefix),
        lambda: library.scan(lib, xb, exclusive=True, out=prefix),
        lambda: library.reduce(lib, xb, "max", out=total),
        lambda: library.reduce(lib, host),  # an array in, a value out
        lambda: library.scan(lib, host),  # an array in, an array out
    ]
    for call in calls:
        call()
    first = made(dev)
    for _ in range(100):
        for call in calls:
            call()
    assert made(dev) == first  # reads included: they share one kept staging buffer
    np.testing.assert_array_equal(library.scan(lib, host), np.cumsum(host, dtype=np.int32))
    assert library.reduce(lib, host) == host.sum()
    assert total.read()[0] == host.max()


def test_uniforms_rewritten_in_place_give_each_call_its_own_values(lib):
    # The same buffers with other scalars (inclusive, exclusive) reuse the kept bind groups,
    # their uniform buffers rewritten, or left as they are when the scalars are the same.
    dev = lib.device
    x = (np.arange(3000) % 5).astype(np.uint32)
    xb, out = dev.buffer(x), dev.buffer(3000, "u32")
    inclusive = np.cumsum(x, dtype=np.uint32)
    exclusive = np.concatenate([[0], inclusive[:-1]]).astype(np.uint32)
    for flag in (False, True):
        library.scan(lib, xb, exclusive=flag, out=out)
    before = made(dev)
    for flag in (False, True, True, False, False, True):
        library.scan(lib, xb, exclusive=flag, out=out)
        np.testing.assert_array_equal(out.read(), exclusive if flag else inclusive)
    assert made(dev) == before


def test_kept_upload_buffers_rewritten_while_earlier_calls_run(lib):
    # Arrays go through one kept upload buffer per thread: rewriting it for the next call
    # while the last one's dispatches may still read it must not change that call's sums.
    dev = lib.device
    arrays = [np.full(5000, v, np.uint32) for v in range(1, 9)]
    outs = [dev.buffer(5000, "u32") for _ in arrays]
    totals = [dev.buffer(1, "u32") for _ in arrays]
    before = made(dev)
    for _ in range(2):
        for a, out, total in zip(arrays, outs, totals):
            library.scan(lib, a, out=out)
            library.reduce(lib, a, out=total)
        for a, out, total in zip(arrays, outs, totals):
            np.testing.assert_array_equal(out.read(), np.cumsum(a, dtype=np.uint32))
            assert total.read()[0] == a.sum()
        if _ == 0:
            before = made(dev)
    assert made(dev) == before


def test_threads_each_get_their_own_kept_buffers(lib):
    dev = lib.device
    errors: list[str] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        # DeviceBuffers of the same shapes in every thread: the same recipes' step kernels
        # but each thread's own copies, so no thread replays another's plan.
        xb, prefix, total = dev.buffer(3001, "u32"), dev.buffer(3001, "u32"), dev.buffer(1, "u32")
        for _ in range(20):
            x = rng.integers(0, 100, 3001).astype(np.uint32)
            if not np.array_equal(library.scan(lib, x), np.cumsum(x, dtype=np.uint32)):
                errors.append(f"scan in thread {seed}")
            if library.reduce(lib, x) != x.sum():
                errors.append(f"reduce in thread {seed}")
            xb.write(x)
            library.scan(lib, xb, out=prefix)
            library.reduce(lib, xb, out=total)
            if not np.array_equal(prefix.read(), np.cumsum(x, dtype=np.uint32)):
                errors.append(f"scan of buffers in thread {seed}")
            if total.read()[0] != x.sum():
                errors.append(f"reduce of buffers in thread {seed}")

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    dev.wait()


def test_inside_a_batch_arrays_get_buffers_of_their_own(lib):
    # Inside the caller's batch nothing is submitted before its end, so an array must not
    # go through a kept buffer that the next call would overwrite first.
    dev = lib.device
    arrays = [np.full(4000, v, np.uint32) for v in (1, 2, 3)]
    totals = [dev.buffer(1, "u32") for _ in arrays]
    prefixes = [dev.buffer(4000, "u32") for _ in arrays]
    with dev.batch():
        for a, total, prefix in zip(arrays, totals, prefixes):
            library.reduce(lib, a, out=total)
            library.scan(lib, a, out=prefix)
    for a, total, prefix in zip(arrays, totals, prefixes):
        assert total.read()[0] == a.sum()
        np.testing.assert_array_equal(prefix.read(), np.cumsum(a, dtype=np.uint32))


def test_large_arrays_are_not_kept(lib):
    # Past KEPT_BYTES an array gets a buffer (and so a bind group) for the call alone,
    # freed when the call ends.
    dev = lib.device
    n = KEPT_BYTES // 4 + 4
    x = np.ones(n, np.uint32)
    assert library.reduce(lib, x) == n
    before, held = dict(dev.made), len(dev._buffers)
    assert library.reduce(lib, x) == n
    assert dev.made["bind_groups"] > before["bind_groups"] and len(dev._buffers) == held
    # The one-off bind groups' uniform buffers come from the pool.
    assert dev.made["uniform_buffers"] == before["uniform_buffers"]


def test_replayed_calls_run_their_kept_plans(lib, monkeypatch):
    # A call like an earlier one on the same DeviceBuffers dispatches the plans its first
    # run made: no step goes through Kernel.dispatch (its argument checks) again.
    from vyre_build.runtime.kernel import Kernel

    dev = lib.device
    x = (np.arange(20001) % 3).astype(np.uint32)
    xb, prefix, total = dev.buffer(x), dev.buffer(20001, "u32"), dev.buffer(1, "u32")
    library.scan(lib, xb, out=prefix)
    library.reduce(lib, xb, out=total)
    checked = []
    dispatch = Kernel.dispatch
    monkeypatch.setattr(
        Kernel, "dispatch", lambda k, *a, **kw: checked.append(k.id) or dispatch(k, *a, **kw)
    )
    for _ in range(5):
        library.scan(lib, xb, out=prefix)
        library.reduce(lib, xb, out=total)
    assert checked == []
    np.testing.assert_array_equal(prefix.read(), np.cumsum(x, dtype=np.uint32))
    assert total.read()[0] == x.sum()
    library.scan(lib, xb, exclusive=True, out=prefix)  # another call: planned afresh
    assert checked == ["lib_scan_sums.u32", "lib_scan_block.u32", "lib_scan_block.u32"]


def run_host_bench(base: str) -> subprocess.CompletedProcess[str]:
    """bench/wgpu_host_bench.py against revision `base`, as small as it runs."""
    script = os.path.join(os.path.dirname(KERNELS), "bench", "wgpu_host_bench.py")
    args = ["--base", base, "--rounds", "1", "--calls", "2", "--sizes", "8"]
    return subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, timeout=300
    )


def test_the_bench_compares_with_a_base_revision(device):
    # bench/wgpu_host_bench.py: one line per case and size, the figures never asserted.
    root = os.path.dirname(KERNELS)
    git = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True)
    if git.returncode != 0:  # (an unpacked copy of the tree, as the device tier may run)
        pytest.skip("the bench compares with a git revision: this tree is no git checkout")
    proc = run_host_bench("HEAD")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "wgpu host cost per library call: HEAD vs this tree, median of 1 rounds of 2 calls"
    )
    names = [line.split(":")[0].strip() for line in lines[1:]]
    assert names == [
        f"{c} 8 {m}" for c in ("reduce", "scan", "reduce np", "scan np") for m in ("wall", "host")
    ]
    assert all(" us -> " in line and line.endswith("x") for line in lines[1:])


def test_the_bench_refuses_a_revision_it_cannot_read():
    # --base naming no revision of the checkout: one line saying why, no traceback
    proc = run_host_bench("no-such-revision")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(
        "wgpu_host_bench: no revision 'no-such-revision' to compare against in "
    ), proc.stderr
    assert proc.stderr.rstrip().endswith("--base needs a git checkout that holds that revision")


def test_the_native_recorder_gives_what_the_public_api_gives(lib):
    # Calls recorded through wgpu-native's functions (the default on wgpu-py's native
    # backend) and through wgpu-py's wrapper objects give the same results, in turn on one
    # device, with the same kept buffers and bind groups.
    dev = lib.device
    assert dev._native is not None  # wgpu-py's native backend: the recorder is there
    rng = np.random.default_rng(5)
    host = rng.random(50001, dtype=np.float32)
    xb, prefix, total = dev.buffer(host), dev.buffer(50001, "f32"), dev.buffer(1, "f32")
    native = dev._native
    results = []
    try:
        for recorder in (native, None, native):
            dev._native = recorder
            library.scan(lib, xb, out=prefix)
            library.reduce(lib, xb, out=total)
            results.append((prefix.read(), total.read()))
    finally:
        dev._native = native
    for scanned, summed in results[1:]:
        np.testing.assert_array_equal(scanned, results[0][0])
        np.testing.assert_array_equal(summed, results[0][1])
    np.testing.assert_allclose(results[0][0], np.cumsum(host, dtype=np.float64), rtol=1e-4)
    np.testing.assert_allclose(results[0][1][0], host.sum(dtype=np.float64), rtol=1e-5)


@pytest.mark.parametrize("recorder", ["native", "public"])
def test_a_wgpu_error_while_recording_is_a_device_error_and_the_device_goes_on(lib, recorder):
    # A bind group of another layout than the pipeline's: wgpu-native reports it while the
    # pass is recorded; both recorders raise it (as DeviceError through the device's
    # guard), and the next call runs.
    from vyre_build.runtime.backends.wgpu.native import _Set

    dev = lib.device
    gpu = dev.device
    shader = gpu.create_shader_module(
        code="@group(0) @binding(0) var<storage, read_write> a: array<u32>;\n"
        "@compute @workgroup_size(1) fn main() { a[0] = 1u; }"
    )
    pipe = gpu.create_compute_pipeline(layout="auto", compute={"module": shader})
    group = gpu.create_bind_group(layout=gpu.create_bind_group_layout(entries=[]), entries=[])
    jobs = [((pipe,), _Set(group, None, None), (1, 1, 1))]
    native = dev._native
    dev._native = native if recorder == "native" else None
    try:
        with pytest.raises(DeviceError, match="wgpu dispatch failed on .*") as info:
            dev._submit(jobs, True)
    finally:
        dev._native = native
    assert isinstance(info.value.__cause__, wgpu.GPUValidationError)
    x = np.arange(1000, dtype=np.uint32)
    assert library.reduce(lib, dev.buffer(x)) == x.sum()
