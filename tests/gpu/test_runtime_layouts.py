"""Vulkan layouts independent of the binding signature (docs/runtime.md, "Vulkan layouts"):
the tree's kernels share one set layout and one pipeline layout, made at device creation;
a kernel whose uniform block is elsewhere than the shared slot runs with it moved there;
one with a storage binding past the shared slots keeps a layout of its own; every one
computes the same results."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import SAXPY_META, SAXPY_SPVASM, assemble, tree_bundle  # noqa: E402, F401

from vyre_build.runtime import get_device, load_kernel, open_bundle  # noqa: E402

vulkan_backend = pytest.importorskip("vyre_build.runtime.backends.vulkan.device")
from vyre_build.runtime.backends.vulkan import pipelines as vulkan_pipelines  # noqa: E402


def _fresh_counted(monkeypatch, tmp_path):
    import adapters

    adapters.require_adapter("vulkan")
    calls = {"descriptor set layout": 0, "pipeline layout": 0}
    new = vulkan_backend.VulkanDevice._new

    def counting(self, what, kind, **fields):
        if what in calls:
            calls[what] += 1
        return new(self, what, kind, **fields)

    monkeypatch.setattr(vulkan_backend.VulkanDevice, "_new", counting)
    dev = get_device("vulkan", pipeline_cache=str(tmp_path / "plc"))
    return dev, calls


def saxpy_at(x: int, y: int, p: int) -> tuple[dict, bytes]:
    """saxpy's metadata and SPIR-V with x, y and the uniform block at bindings x, y, p."""
    meta = {
        **SAXPY_META,
        "bindings": [
            {**SAXPY_META["bindings"][0], "binding": x},
            {**SAXPY_META["bindings"][1], "binding": y},
            {**SAXPY_META["bindings"][2], "binding": p},
        ],
        "uniform": {"binding": p, "size": 16},
    }
    text = (
        SAXPY_SPVASM.replace("%x Binding 0", f"%x Binding {x}")
        .replace("%y Binding 1", f"%y Binding {y}")
        .replace("%p Binding 2", f"%p Binding {p}")
    )
    return meta, assemble(text)


def test_the_tree_warms_with_the_one_shared_layout(monkeypatch, tmp_path, tree_bundle):  # noqa: F811
    dev, calls = _fresh_counted(monkeypatch, tmp_path)
    try:
        made = dict(calls)
        bundle = open_bundle(tree_bundle, device=dev)
        warmed = bundle.warm()
        assert warmed.created >= len(warmed.kernels) > 50  # a pipeline per entry point
        # one set layout and one pipeline layout, both at device creation (12 of each,
        # one per binding signature, before)
        assert made == {"descriptor set layout": 1, "pipeline layout": 1}
        assert calls == made
        assert list(dev.pipelines.layouts) == ["shared"]
        y = bundle["saxpy"](x=np.arange(100, dtype=np.float32), y=np.ones(100, np.float32), a=3.0)
        np.testing.assert_array_equal(y.array("y"), 3 * np.arange(100, dtype=np.float32) + 1)
    finally:
        dev.close()


@pytest.mark.parametrize(
    "x, y, p, shared",
    [
        (0, 1, 2, True),  # the tree's layout: the uniform after the buffers
        (3, 0, 1, True),  # not contiguous, the uniform between the buffers
        (7, 5, 8, True),  # the uniform at the shared slot already
        (6, 2, 30, True),  # the uniform past the slot
        (9, 0, 2, False),  # a storage binding past the shared slots: a layout of its own
    ],
)
def test_every_binding_layout_computes_saxpy(monkeypatch, tmp_path, x, y, p, shared):
    dev, calls = _fresh_counted(monkeypatch, tmp_path)
    try:
        meta, code = saxpy_at(x, y, p)
        k = load_kernel(meta, device=dev, spirv=code)
        xs = np.arange(1000, dtype=np.float32)
        got = k(x=xs, y=np.full(1000, 2, np.float32), a=0.5).array("y")
        np.testing.assert_array_equal(got, 0.5 * xs + 2)
        if shared:
            assert list(dev.pipelines.layouts) == ["shared"]
            assert calls == {"descriptor set layout": 1, "pipeline layout": 1}
        else:
            key = ((0, False), (2, True), (9, False))
            assert list(dev.pipelines.layouts) == ["shared", key]
            assert calls == {"descriptor set layout": 2, "pipeline layout": 2}
    finally:
        dev.close()


def test_the_uniform_patch_leaves_what_it_cannot_read():
    _, code = saxpy_at(0, 1, 2)
    moved = vulkan_pipelines._patch_uniform(code, 2, 8)
    assert moved is not None and len(moved) == len(code) and moved != code
    assert vulkan_pipelines._patch_uniform(moved, 8, 2) == code
    assert vulkan_pipelines._patch_uniform(code, 2, 2) is code
    # no variable at the binding; the slot taken by a buffer; not SPIR-V; cut short
    assert vulkan_pipelines._patch_uniform(code, 5, 8) is None
    assert vulkan_pipelines._patch_uniform(code, 2, 1) is None
    assert vulkan_pipelines._patch_uniform(b"\0" * len(code), 2, 8) is None
    head = code[:20]  # the module header, then a capability running past the end
    assert (
        vulkan_pipelines._patch_uniform(head + ((3 << 16) | 17).to_bytes(4, "little"), 2, 8) is None
    )
    assert vulkan_pipelines._patch_uniform(head + bytes(4), 2, 8) is None  # a 0-word one
    assert vulkan_pipelines._patch_uniform(code[:-2], 2, 8) is None


def test_a_device_allowing_fewer_storage_buffers_gets_fewer_slots(monkeypatch):
    class Limits:
        maxPerStageDescriptorStorageBuffers = 4
        maxDescriptorSetStorageBuffers = 96
        maxPerStageResources = 128

    class Props:
        limits = Limits()

    made = []
    monkeypatch.setattr(
        vulkan_pipelines.Pipelines,
        "_make_layout",
        lambda self, kinds: made.append(kinds) or ("pl", "sl", (4, 1)),
    )
    created = []  # no persisted cache: one empty pipeline cache, through the device's `new`
    pipes = vulkan_pipelines.Pipelines(
        "vkdevice",
        lambda what, kind, **f: created.append(kind) or "cache",
        None,
        None,
        Props(),
        False,
    )
    assert created == ["PipelineCache"] and pipes.cache == "cache" and pipes.cache_file is None
    assert pipes.shared_slots == 4
    assert made == [[(0, "rw"), (1, "rw"), (2, "rw"), (3, "rw"), (4, "u")]]
    assert pipes._shared_fits([(0, "r"), (3, "rw"), (9, "u")])
    assert not pipes._shared_fits([(0, "r"), (4, "rw"), (5, "u")])
