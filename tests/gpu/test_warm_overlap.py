"""`bundle.warm()` on Vulkan with pipeline creation overlapped with loading (helper
threads take each slice of create-infos while the caller loads the next kernels,
backends/vulkan/stream.py): the same pipelines and Warmed as without helpers; a kernel
loaded late that fails is skipped with its reason (or, with ids, raised as when loaded
alone); a slice the driver refuses names its kernel; an exception in a helper reaches the
caller; on any error no pipeline of the call is kept; no thread outlives warm()."""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import tree_bundle  # noqa: E402, F401

from vyre_build.bundle import read_bundle  # noqa: E402
from vyre_build.core.errors import BundleError, DeviceError  # noqa: E402
from vyre_build.runtime import open_bundle  # noqa: E402

pytestmark = pytest.mark.gpu
vk = pytest.importorskip("vulkan")
vulkan_backend = pytest.importorskip("vyre_build.runtime.backends.vulkan.device")
from vyre_build.runtime.backends.vulkan import pipelines as vp  # noqa: E402
from vyre_build.runtime.backends.vulkan import stream as vs  # noqa: E402


def _device() -> vulkan_backend.VulkanDevice:
    import adapters

    adapters.require_adapter("vulkan")
    return vulkan_backend.VulkanDevice(pipeline_cache=False)


def _helpers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "vyre-vk-pipelines"}


def _calls(monkeypatch, fail=None) -> list[tuple[tuple[str, ...], int]]:
    """Record each driver call's kernel ids and thread; `fail(ids)` may return a VkResult
    to give instead of the call, or raise."""
    calls, real = [], vs.create_slice

    def create(device, cache, sl):
        ids = tuple(m.id for m, _, _ in sl.kernels)
        calls.append((ids, threading.get_ident()))
        found = fail(ids) if fail is not None else None
        return real(device, cache, sl) if found is None else found

    monkeypatch.setattr(vs, "create_slice", create)
    monkeypatch.setattr(vp, "create_slice", create)  # a refused slice's kernels, alone
    return calls


@pytest.mark.parametrize("overlap", [False, True])
def test_warm_makes_the_same_pipelines_with_and_without_overlap(
    monkeypatch,
    tree_bundle,  # noqa: F811
    overlap,
):
    monkeypatch.setattr(vs, "_THREADS", 4 if overlap else 1)  # 1: no helper thread
    monkeypatch.setattr(vs.os, "cpu_count", lambda: 4)
    before = _helpers()
    seen: dict[bool, object] = {}
    for run in (False, True):  # the second, the other setting: compared
        if run:
            monkeypatch.setattr(vs, "_THREADS", 1 if overlap else 4)
        calls = _calls(monkeypatch)
        dev = _device()
        try:
            bundle = open_bundle(tree_bundle, device=dev)
            warmed = bundle.warm(all=True)
            assert warmed.created == len(dev._pipelines) == sum(len(c) for c, _ in calls)
            threads = {t for _, t in calls}
            helpers = vs._THREADS > 1
            assert (threads != {threading.get_ident()}) is helpers
            assert len(threads) <= vs._THREADS
            # slices of 2, 4, then 8 pipelines (a kernel's entry points kept together)
            assert [len(c) for c, _ in calls[:2]] in ([2, 4], [2, 5], [3, 4], [3, 5])
            assert all(len(c) <= 9 for c, _ in calls)
            seen[run] = (warmed, sorted((k[0], k[3], len(k[1])) for k in dev._pipelines))
            xs = np.arange(5000, dtype=np.float32)
            y = bundle["saxpy"](x=xs, y=np.ones(5000, np.float32), a=3.0).array("y")
            np.testing.assert_array_equal(y, 3 * xs + 1)
        finally:
            dev.close()
    assert seen[False] == seen[True]
    assert _helpers() == before


def _corrupt_last(tree_bundle, tmp_path) -> tuple[str, str]:  # noqa: F811
    # A copy of the tree's bundle whose last kernel's SPIR-V fails its blake3: (path, id).
    with read_bundle(tree_bundle) as reader:
        last = reader.ids[-1]
        info = reader.entry(last).artifacts[".spv"]
    data = bytearray(open(tree_bundle, "rb").read())
    data[info["offset"] + 40] ^= 0xFF
    path = tmp_path / "late.vyrebundle"
    path.write_bytes(bytes(data))
    return str(path), last


def test_a_corrupt_kernel_loaded_late_is_skipped_with_its_reason(
    tree_bundle,  # noqa: F811
    tmp_path,
):
    path, last = _corrupt_last(tree_bundle, tmp_path)
    before = _helpers()
    dev = _device()
    try:
        with open_bundle(path, device=dev) as alone:
            with pytest.raises(BundleError) as told:
                alone[last]
        bundle = open_bundle(path, device=dev)
        warmed = bundle.warm(all=True)
        assert warmed.skipped[last] == str(told.value)
        assert "blake3 mismatch" in warmed.skipped[last]
        assert last not in warmed.kernels and len(warmed.kernels) > 25
        assert _helpers() == before
    finally:
        dev.close()


def test_with_ids_a_kernel_failing_late_raises_and_keeps_no_pipeline(
    tree_bundle,  # noqa: F811
    tmp_path,
):
    path, last = _corrupt_last(tree_bundle, tmp_path)
    before = _helpers()
    dev = _device()
    try:
        with open_bundle(path, device=dev) as listing:  # another Bundle: nothing loaded
            ids = [k for k in listing.ids if k != last and listing[k].refusal is None]
        ids = ids[:40] + [last]
        bundle = open_bundle(path, device=dev)
        with pytest.raises(BundleError, match="blake3 mismatch") as told:
            bundle.warm(ids)
        with open_bundle(path, device=dev) as alone:
            with pytest.raises(BundleError) as again:
                alone[last]
        assert str(told.value) == str(again.value)
        assert not dev._pipelines  # those made before the failure were destroyed
        assert _helpers() == before
        assert bundle.warm(ids[:-1]).created > 40  # the device is fine
    finally:
        dev.close()


def test_a_refused_slice_names_its_kernel_and_keeps_no_pipeline(
    monkeypatch,
    tree_bundle,  # noqa: F811
):
    dev = _device()
    try:
        bundle = open_bundle(tree_bundle, device=dev)
        bad = bundle.runnable()[-3]
        refused = vk.VK_ERROR_UNKNOWN
        calls = _calls(monkeypatch, lambda ids: refused if bad in ids else None)
        before = _helpers()
        with pytest.raises(DeviceError) as told:
            bundle.warm(all=True)
        assert str(told.value).startswith(
            f"Kernel {bad!r}: the Vulkan driver refused the shader or its layout: "
        )
        assert (bad,) in [c for c, _ in calls]  # created alone after its slice was refused
        assert not dev._pipelines
        assert _helpers() == before
    finally:
        dev.close()


def test_an_exception_in_a_helper_reaches_the_caller(
    monkeypatch,
    tree_bundle,  # noqa: F811
):
    monkeypatch.setattr(vs.os, "cpu_count", lambda: 4)
    dev = _device()
    try:
        bundle = open_bundle(tree_bundle, device=dev)
        bad = bundle.runnable()[-5]

        def fail(ids):
            if bad in ids:
                raise MemoryError("the driver's allocation failed")

        calls = _calls(monkeypatch, fail)
        before = _helpers()
        with pytest.raises(MemoryError, match="the driver's allocation failed"):
            bundle.warm(all=True)
        assert any(t != threading.get_ident() for _, t in calls)  # helpers did run
        assert not dev._pipelines
        assert _helpers() == before
    finally:
        dev.close()
