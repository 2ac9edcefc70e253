"""Results land in the caller's arrays, and inputs need not be the grid's length, on every
backend (wgpu, Vulkan, cpu): a numpy array passed for a "w"/"rw" buffer receives the
result (at once, or inside `device.batch()` when the batch ends) and is what the result
holds; a read-only one is refused; `@kernel(any_length=...)` lets a read-only buffer of
another length through. docs/runtime.md ("Arguments") states the rules.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest

from vyre_build.core.errors import DispatchError
from vyre_build.runtime import DeviceBuffer, load_kernel

SOURCE = """\
from vyre_build.lang import *


@kernel(workgroup_size=64, grid="x")
def hist(x: Buffer[u32], bins: Buffer[u32, "rw"]):
    i = global_id().x
    if i < len(x):
        atomic_add(bins, x[i] % len(bins), 1)


@kernel(workgroup_size=64)
def scale4(v: Buffer[vec4f, "rw"], s: f32):
    i = global_id().x
    if i < len(v):
        v[i] = v[i] * s


@kernel(workgroup_size=64)
def iota(out: Buffer[u32, "w"], start: u32):
    i = global_id().x
    if i < len(out):
        out[i] = start + i


@kernel(workgroup_size=64{option})
def add_bias(x: Buffer[f32], bias: Buffer[f32], out: Buffer[f32, "w"]):
    i = global_id().x
    if i < len(out):
        out[i] = x[i] + bias[i % len(bias)]
"""


@functools.cache
def _compiled(option: str) -> dict:
    import tempfile

    from vyre_build.compiler import compile_file

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/writes.py"
        with open(path, "w", encoding="utf-8") as f:
            f.write(SOURCE.format(option=option))
        return {k.name: k for k in compile_file(path, display_path="writes.py")}


def kernel(device, name: str, option: str = ', any_length="bias"'):
    k = _compiled(option)[name]
    code = {"wgpu": {"wgsl": k.wgsl}, "vulkan": {"spirv": k.spirv}, "cpu": {"kdesc": k.kdesc}}
    return load_kernel(k.meta, device=device, **code[device.backend])


def values(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1000, n).astype(np.uint32)


def test_a_written_array_receives_the_result(device):
    hist = kernel(device, "hist")
    x, bins = values(1000), np.zeros(256, np.uint32)
    x_before = x.copy()
    r = hist(x=x, bins=bins)
    want = np.bincount(x % 256, minlength=256).astype(np.uint32)
    np.testing.assert_array_equal(bins, want)
    assert r["bins"] is bins and r.array("bins", np.uint32) is bins
    hist(x=x, bins=bins)  # "rw": the next call starts from what the last one left
    np.testing.assert_array_equal(bins, 2 * want)
    np.testing.assert_array_equal(x, x_before)  # read-only arguments are never written
    # A length still gives a new array; a DeviceBuffer is written where it is.
    made = kernel(device, "iota")(out=8, start=3)["out"]
    np.testing.assert_array_equal(made, np.arange(3, 11, dtype=np.uint32))
    held = device.buffer(np.zeros(256, np.uint32))
    assert hist(x=x, bins=held)["bins"] is held
    np.testing.assert_array_equal(held.read(), want)


def test_vector_buffers_as_n4_or_flat_arrays(device):
    scale4 = kernel(device, "scale4")
    for v in (np.ones((100, 4), np.float32), np.ones(400, np.float32)):
        r = scale4(v=v, s=2.5)
        assert r["v"] is v and v.shape in ((100, 4), (400,))
        np.testing.assert_array_equal(v, np.full(v.shape, 2.5, np.float32))


def test_non_contiguous_and_partly_written_arrays(device):
    iota = kernel(device, "iota")
    base = np.full(20, 9, np.uint32)
    strided = base[::2]
    assert iota(out=strided, start=100)["out"] is strided
    np.testing.assert_array_equal(base[::2], np.arange(100, 110, dtype=np.uint32))
    np.testing.assert_array_equal(base[1::2], np.full(10, 9, np.uint32))  # untouched
    fortran = np.zeros((3, 4), np.uint32, order="F")
    iota(out=fortran, start=0)  # the kernel sees the values in row-major order
    np.testing.assert_array_equal(fortran, np.arange(12, dtype=np.uint32).reshape(3, 4))
    # Elements outside the grid keep the array's own values ("w" included).
    out = np.full(100, 7, np.uint32)
    iota(out=out, start=0, grid=40)  # one workgroup of 64
    np.testing.assert_array_equal(out[:64], np.arange(64, dtype=np.uint32))
    np.testing.assert_array_equal(out[64:], np.full(36, 7, np.uint32))


def test_a_read_only_array_is_refused_before_the_device(device):
    hist = kernel(device, "hist")
    bins = np.zeros(256, np.uint32)
    bins.flags.writeable = False
    with pytest.raises(DispatchError) as info:
        hist(x=values(10), bins=bins)
    assert str(info.value) == (
        "Kernel 'hist': argument 'bins' is a read-only array (flags.writeable is False) but "
        "the kernel writes it (access 'rw') and a call writes its result back into the array "
        "passed; pass a writable array (bins.copy()), or a DeviceBuffer"
    )
    frozen_x = values(10)
    frozen_x.flags.writeable = False  # a read-only input is fine
    hist(x=frozen_x, bins=np.zeros(256, np.uint32))


def test_in_a_batch_arrays_receive_their_results_when_it_ends(device):
    hist = kernel(device, "hist")
    x = values(500, seed=1)
    want = np.bincount(x % 256, minlength=256).astype(np.uint32)
    bins, again, later = (np.zeros(256, np.uint32) for _ in range(3))
    with device.batch():
        r = hist(x=x, bins=bins)
        chained = r["bins"]
        assert isinstance(chained, DeviceBuffer)  # the buffer the batch's dispatches write
        hist(x=x, bins=chained)  # chained: the second call adds to the first's result
        assert not bins.any()  # nothing lands before the batch ends
        # The same array twice: each call uploads it as it is now, and the last one wins.
        hist(x=x, bins=again)
        hist(x=x, bins=again)
        s = hist(x=x, bins=later)
    np.testing.assert_array_equal(bins, 2 * want)
    assert r["bins"] is bins and r.array("bins") is bins
    np.testing.assert_array_equal(chained.read(), 2 * want)  # still usable after the batch
    np.testing.assert_array_equal(again, want)
    assert s["bins"] is later
    np.testing.assert_array_equal(later, want)
    # Leaving with an exception writes no array back; the results keep their DeviceBuffers.
    lost = np.zeros(256, np.uint32)
    with pytest.raises(ValueError, match="user code"), device.batch():
        t = hist(x=x, bins=lost)
        raise ValueError("user code")
    assert not lost.any() and isinstance(t["bins"], DeviceBuffer)


def test_plan_reuse_and_threads_keep_each_callers_array(device):
    hist = kernel(device, "hist")
    x = values(300, seed=2)
    bx = device.buffer(x, read_only=True)
    want = np.bincount(x % 256, minlength=256).astype(np.uint32)
    held = device.buffer(256, "u32")
    hist(x=bx, bins=held)
    hist(x=bx, bins=held)  # the reused plan
    mine = np.zeros(256, np.uint32)
    assert hist(x=bx, bins=mine)["bins"] is mine  # an array after the cached call: checked anew
    np.testing.assert_array_equal(mine, want)
    frozen = np.zeros(256, np.uint32)
    frozen.flags.writeable = False
    with pytest.raises(DispatchError, match="read-only array"):
        hist(x=bx, bins=frozen)
    np.testing.assert_array_equal(held.read(), 2 * want)

    results: dict[int, np.ndarray] = {}
    failures: list[BaseException] = []

    def work(n: int) -> None:
        try:
            own = np.zeros(256, np.uint32)
            for _ in range(n):
                hist(x=x, bins=own)
            results[n] = own
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    for n, own in results.items():
        np.testing.assert_array_equal(own, n * want)


def test_any_length_lets_a_shorter_input_through(device):
    x = np.arange(3000, dtype=np.float32)
    bias = np.linspace(-1, 1, 100, dtype=np.float32)
    with pytest.raises(DispatchError) as info:
        kernel(device, "add_bias", option="")(x=x, bias=bias, out=3000)
    assert str(info.value) == (
        "Kernel 'add_bias': argument 'bias' has 100 elements but the grid covers 3000 (the "
        "length of 'out'); pass at least 3000 or give grid= explicitly (a kernel that does not "
        "index 'bias' by the grid index declares @kernel(..., any_length=\"bias\"))"
    )
    out = np.empty(3000, np.float32)
    kernel(device, "add_bias")(x=x, bias=bias, out=out)
    np.testing.assert_array_equal(out, x + np.tile(bias, 30))
    # x is still held to the grid's length: the option names bias only.
    with pytest.raises(DispatchError, match="argument 'x' has 10 elements but the grid"):
        kernel(device, "add_bias")(x=x[:10], bias=bias, out=out)
