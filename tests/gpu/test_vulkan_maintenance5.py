"""VK_KHR_maintenance5 in the Vulkan backend: asked for by the device's extensions, API
version and feature (and not with VYRE_VULKAN_MAINTENANCE5=0), chained into device
creation when enabled; with it, pipelines are created from SPIR-V chained to each stage
(module VK_NULL_HANDLE) and no shader module is made; without it, one module per distinct
code. Mesa's lavapipe (22.x) lacks the extension, so the inline path runs here through a
stand-in for the driver's entry point that makes, from exactly what the stages carry, the
modules a maintenance5 driver would make inside, then calls the real driver: the same
pipelines, and the kernels compute the same results."""

from __future__ import annotations

import os
import sys
import threading
import types

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import tree_bundle  # noqa: E402, F401

from vyre_build.runtime import open_bundle  # noqa: E402

pytestmark = pytest.mark.gpu
vk = pytest.importorskip("vulkan")
vulkan_backend = pytest.importorskip("vyre_build.runtime.backends.vulkan.device")
from vyre_build.runtime.backends.vulkan import pipelines as vp  # noqa: E402
from vyre_build.runtime.backends.vulkan import profile as vulkan_profile  # noqa: E402
from vyre_build.runtime.backends.vulkan import stream as vulkan_stream  # noqa: E402

M5 = vulkan_profile.MAINTENANCE5_EXT
M5_FEATURES = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_5_FEATURES_KHR


def _device(**kw) -> vulkan_backend.VulkanDevice:
    import adapters

    adapters.require_adapter("vulkan")
    return vulkan_backend.VulkanDevice(pipeline_cache=False, **kw)


@pytest.mark.parametrize(
    "listed, version, env, wanted",
    [
        (True, (1, 3, 0), None, True),
        (True, (1, 4, 0), "1", True),
        (True, (1, 2, 0), None, False),  # needs 1.3 (its dynamic-rendering dependency)
        (False, (1, 3, 0), None, False),
        (True, (1, 3, 0), "0", False),  # turned off
    ],
)
def test_maintenance5_is_asked_for_by_extension_version_and_setting(
    monkeypatch, listed, version, env, wanted
):
    if env is None:
        monkeypatch.delenv("VYRE_VULKAN_MAINTENANCE5", raising=False)
    else:
        monkeypatch.setenv("VYRE_VULKAN_MAINTENANCE5", env)
    exts = {"VK_KHR_maintenance4", *([M5] if listed else [])}
    assert vulkan_profile.wants_maintenance5(exts, vk.VK_MAKE_VERSION(*version)) is wanted


def _chain(info) -> dict[int, object]:
    # sType -> struct of a create-info's pNext chain (a `vulkan` package struct value).
    out, at = {}, vk.ffi.cast("VkBaseOutStructure*", info.pNext)
    while at != vk.ffi.NULL:
        out[int(at.sType)] = at
        at = at.pNext
    return out


def test_device_creation_chains_the_feature_only_when_enabled():
    for on in (False, True):
        keep: list = []
        enable = vulkan_profile.Enable(extensions=[M5] if on else [], maintenance5=on)
        info = vulkan_profile.device_create_info(0, enable, keep)
        chain = _chain(info) if on else {}
        if on:
            found = vk.ffi.cast("VkPhysicalDeviceMaintenance5FeaturesKHR*", chain[M5_FEATURES])
            assert found.maintenance5 == 1
            names = [vk.ffi.string(info.ppEnabledExtensionNames[0]).decode()]
            assert names == [M5] and info.enabledExtensionCount == 1
        else:
            assert info.pNext == vk.ffi.NULL and info.enabledExtensionCount == 0


@pytest.mark.parametrize("feature", [0, 1])
def test_query_enables_maintenance5_by_the_feature_reported(monkeypatch, feature):
    """The device's answer decides: listed with the feature 0, it is not enabled."""
    dev = _device()
    try:
        props = vk.vkGetPhysicalDeviceProperties(dev.physical)
        if props.apiVersion < vk.VK_MAKE_VERSION(1, 3, 0):
            pytest.skip(f"{dev.name} offers Vulkan below 1.3")
        listed = vk.vkEnumerateDeviceExtensionProperties
        real_features = vk.vkGetPhysicalDeviceFeatures2
        fake_ext = types.SimpleNamespace(extensionName=M5)

        def extensions(physical, layer):
            names = [e.extensionName for e in listed(physical, layer)]  # decoded while held
            return [types.SimpleNamespace(extensionName=n) for n in names if n != M5] + [fake_ext]

        def features(physical, out):
            real_features(physical, out)  # the real answer; then this one's for maintenance5
            found = _chain(out)[M5_FEATURES]
            vk.ffi.cast("VkPhysicalDeviceMaintenance5FeaturesKHR*", found).maintenance5 = feature

        monkeypatch.delenv("VYRE_VULKAN_MAINTENANCE5", raising=False)
        monkeypatch.setattr(vulkan_profile.vk, "vkEnumerateDeviceExtensionProperties", extensions)
        monkeypatch.setattr(vulkan_profile.vk, "vkGetPhysicalDeviceFeatures2", features)
        _, enable = vulkan_profile.query(dev.physical, props, dev.name)
        assert enable.maintenance5 is bool(feature)
        assert (M5 in enable.extensions) is bool(feature)
    finally:
        dev.close()


def test_the_device_uses_maintenance5_exactly_where_it_was_enabled(monkeypatch):
    monkeypatch.delenv("VYRE_VULKAN_MAINTENANCE5", raising=False)
    dev = _device()
    try:
        props = vk.vkGetPhysicalDeviceProperties(dev.physical)
        exts = {
            e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(dev.physical, None)
        }
        _, enable = vulkan_profile.query(dev.physical, props, dev.name)
        assert dev.pipelines.inline_modules is enable.maintenance5
        if not vulkan_profile.wants_maintenance5(exts, props.apiVersion):
            assert not dev.pipelines.inline_modules  # lavapipe 22.x: shader modules made
    finally:
        dev.close()
    monkeypatch.setenv("VYRE_VULKAN_MAINTENANCE5", "0")
    dev = _device()
    try:
        assert not dev.pipelines.inline_modules
    finally:
        dev.close()


class _Lib:
    """The cffi library as pipelines.py calls it, counting shader modules made. With
    `inline`, vkCreateComputePipelines checks that every stage carries its SPIR-V chained
    (module VK_NULL_HANDLE), records that code, makes its module from that very create-info
    (as a maintenance5 driver does inside) and calls the real driver with it."""

    def __init__(self, real, inline: bool):
        self.real, self.inline = real, inline
        self.modules, self.codes, self.lock = 0, [], threading.Lock()

    def __getattr__(self, name):
        return getattr(self.real, name)

    def vkCreateShaderModule(self, *args):  # noqa: N802
        with self.lock:
            self.modules += 1
        return self.real.vkCreateShaderModule(*args)

    def vkCreateComputePipelines(self, dev, cache, n, infos, alloc, pipes):  # noqa: N802
        if not self.inline:
            return self.real.vkCreateComputePipelines(dev, cache, n, infos, alloc, pipes)
        ffi, size = vk.ffi, vk.ffi.sizeof("VkComputePipelineCreateInfo")
        copy, made = ffi.new("VkComputePipelineCreateInfo[]", n), []
        try:
            for k in range(n):
                ffi.memmove(copy + k, infos + k, size)
                stage = copy[k].stage
                assert stage.module == ffi.NULL
                chained = ffi.cast("VkShaderModuleCreateInfo*", stage.pNext)
                assert chained.sType == vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
                assert chained.pNext == ffi.NULL and chained.codeSize % 4 == 0
                with self.lock:
                    self.codes.append(bytes(ffi.buffer(chained.pCode, chained.codeSize)))
                out = ffi.new("VkShaderModule*")
                assert self.real.vkCreateShaderModule(dev, chained, ffi.NULL, out) == vp.SUCCESS
                made.append(out[0])
                stage.module, stage.pNext = out[0], ffi.NULL
            return self.real.vkCreateComputePipelines(dev, cache, n, copy, alloc, pipes)
        finally:
            for m in made:
                self.real.vkDestroyShaderModule(dev, m, ffi.NULL)


def _with_lib(monkeypatch, lib: _Lib) -> None:
    # pipelines.py and stream.py (the driver's pipeline calls) read vk.lib at each use: a
    # module stand-in giving `lib` for them.
    stand_in = types.SimpleNamespace(**{k: getattr(vk, k) for k in dir(vk) if k != "lib"})
    stand_in.lib = lib
    monkeypatch.setattr(vp, "vk", stand_in)
    monkeypatch.setattr(vulkan_stream, "vk", stand_in)


@pytest.mark.parametrize("inline", [False, True])
def test_warm_creates_the_same_working_pipelines_with_or_without_modules(
    monkeypatch,
    tree_bundle,  # noqa: F811
    inline,
):
    dev = _device()
    try:
        lib = _Lib(vk.lib, inline)
        _with_lib(monkeypatch, lib)
        dev.pipelines.inline_modules = inline
        bundle = open_bundle(tree_bundle, device=dev)
        warmed = bundle.warm(bundle.runnable()[::2])  # half now, the rest in a second batch
        assert warmed.created > len(warmed.kernels) > 25  # coarse entries share a module
        if inline:
            assert lib.modules == 0  # none made by the runtime
            assert len(lib.codes) == warmed.created
            # each stage's code: the kernel's, its uniform block moved to the shared slot
            laid = {
                dev.pipelines._layouts(bundle[k].meta, bundle[k].code)[0] for k in warmed.kernels
            }
            assert set(lib.codes) == laid
        else:  # one module per kernel's code: its entry points share it
            assert lib.modules == len(warmed.kernels)
        xs = np.arange(5000, dtype=np.float32)
        y = bundle["saxpy"](x=xs, y=np.ones(5000, np.float32), a=3.0).array("y")
        np.testing.assert_array_equal(y, 3 * xs + 1)
        out = np.zeros(5000, np.float32)
        got = bundle["add.f32"](a=xs, b=xs, out=out).array("out")
        np.testing.assert_array_equal(got, 2 * xs)
        before = lib.modules
        more = bundle.warm(all=True)
        assert more.created > 0
        added = set(more.kernels) - set(warmed.kernels)
        assert lib.modules - before == (0 if inline else len(added))
    finally:
        dev.close()
