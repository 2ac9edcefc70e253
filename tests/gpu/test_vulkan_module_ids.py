"""VK_EXT_shader_module_identifier in the Vulkan backend (module_ids.py, pipelines.py): with
a persisted pipeline cache, a pipeline whose module's identifier is known is made from the
identifier alone (VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT), one the
driver's cache lacks is made from its SPIR-V, and the identifiers persist beside the cache.

Mesa's lavapipe lacks the extension, so the logic runs here through a stand-in driver: its
identifier query gives a hash of the code, and its vkCreateComputePipelines keeps, as a
driver's pipeline cache would, the code of every identifier it has made a pipeline of,
making a pipeline named by a known identifier from that code (the real driver's call) and
answering VK_PIPELINE_COMPILE_REQUIRED for any other. Where the real device has the
extension (NVIDIA), fresh processes check the real thing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import types
import warnings

import blake3
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import tree_bundle  # noqa: E402, F401

from vyre_build.core.errors import PipelineCacheWarning  # noqa: E402
from vyre_build.runtime import open_bundle  # noqa: E402

pytestmark = pytest.mark.gpu
vk = pytest.importorskip("vulkan")
vulkan_backend = pytest.importorskip("vyre_build.runtime.backends.vulkan.device")
from vyre_build.runtime.backends.vulkan import module_ids as mids  # noqa: E402
from vyre_build.runtime.backends.vulkan import pipelines as vp  # noqa: E402
from vyre_build.runtime.backends.vulkan import profile as vulkan_profile  # noqa: E402
from vyre_build.runtime.backends.vulkan import stream as vulkan_stream  # noqa: E402

UUID = bytes(range(16))
assert mids.FAIL_ON_COMPILE == vk.VK_PIPELINE_CREATE_2_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT_KHR
ID_INFO = vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_MODULE_IDENTIFIER_CREATE_INFO_EXT
MODULE_INFO = vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
FAIL = mids.FAIL_ON_COMPILE
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ident(code: bytes) -> bytes:
    return b"id" + blake3.blake3(b"stand-in" + code).digest()[:18]


class _Driver:
    """The cffi library as pipelines.py and stream.py call it, standing in for a driver
    with the extension (see the module's text). `cached`: identifier -> code of the
    pipelines it holds; `by_id` / `by_code`: stages made each way; `refused`: stages named
    by an identifier it lacked."""

    def __init__(self, real):
        self.real, self.lock = real, threading.Lock()
        self.cached: dict[bytes, bytes] = {}
        self.by_id = self.by_code = self.refused = 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def query(self, device, info, out) -> None:
        code = bytes(vk.ffi.buffer(info.pCode, info.codeSize))
        ident = _ident(code)
        out.identifierSize = len(ident)
        vk.ffi.memmove(out.identifier, ident, len(ident))

    def vkCreateComputePipelines(self, dev, cache, n, infos, alloc, pipes):  # noqa: N802
        ffi, size = vk.ffi, vk.ffi.sizeof("VkComputePipelineCreateInfo")
        copy, made, keep, slots = ffi.new("VkComputePipelineCreateInfo[]", n), [], [], []
        refused = 0
        try:
            for k in range(n):
                stage = infos[k].stage
                chained = ffi.cast("VkBaseInStructure*", stage.pNext)
                if chained != ffi.NULL and chained.sType == ID_INFO:
                    assert stage.module == ffi.NULL and infos[k].flags & FAIL
                    named = ffi.cast("VkPipelineShaderStageModuleIdentifierCreateInfoEXT*", chained)
                    ident = bytes(ffi.buffer(named.pIdentifier, named.identifierSize))
                    code = self.cached.get(ident)
                    if code is None:
                        refused += 1
                        pipes[k] = ffi.NULL
                        continue
                    with self.lock:
                        self.by_id += 1
                else:
                    assert not infos[k].flags & FAIL
                    if stage.module == ffi.NULL:  # maintenance5: the code chained
                        info = ffi.cast("VkShaderModuleCreateInfo*", chained)
                        assert info.sType == MODULE_INFO
                        code = bytes(ffi.buffer(info.pCode, info.codeSize))
                    else:
                        code = None  # a module made by the runtime: no identifier kept
                    with self.lock:
                        self.by_code += 1
                        if code is not None:
                            self.cached[_ident(code)] = code
                at = len(slots)
                ffi.memmove(copy + at, infos + k, size)
                if code is not None:
                    words = ffi.from_buffer(code)
                    info = ffi.new(
                        "VkShaderModuleCreateInfo*",
                        {
                            "sType": MODULE_INFO,
                            "codeSize": len(code),
                            "pCode": ffi.cast("uint32_t*", words),
                        },
                    )
                    out = ffi.new("VkShaderModule*")
                    assert self.real.vkCreateShaderModule(dev, info, ffi.NULL, out) == vp.SUCCESS
                    keep += [words, info]
                    made.append(out[0])
                    copy[at].stage.module, copy[at].stage.pNext = out[0], ffi.NULL
                copy[at].flags &= ~FAIL
                slots.append(k)
            with self.lock:
                self.refused += refused
            got = ffi.new("VkPipeline[]", max(1, len(slots)))
            result = (
                self.real.vkCreateComputePipelines(dev, cache, len(slots), copy, alloc, got)
                if slots
                else vp.SUCCESS
            )
            for at, k in enumerate(slots):
                pipes[k] = got[at]
            if result == vp.SUCCESS and refused:
                return vk.VK_PIPELINE_COMPILE_REQUIRED
            return result
        finally:
            for m in made:
                self.real.vkDestroyShaderModule(dev, m, ffi.NULL)


def _stand_in(monkeypatch, driver: _Driver) -> None:
    stand_in = types.SimpleNamespace(**{k: getattr(vk, k) for k in dir(vk) if k != "lib"})
    stand_in.lib = driver
    monkeypatch.setattr(vp, "vk", stand_in)
    monkeypatch.setattr(vulkan_stream, "vk", stand_in)


def _device(cache_dir, driver: _Driver) -> vulkan_backend.VulkanDevice:
    import adapters

    adapters.require_adapter("vulkan")
    dev = vulkan_backend.VulkanDevice(pipeline_cache=str(cache_dir))
    dev.pipelines.inline_modules = True  # the code chained to each stage, as on NVIDIA
    path = dev.pipelines.cache_file.path
    ids = mids.ModuleIds(dev.dev, UUID, path + ".ids", path + ".lock")
    ids._query = driver.query
    dev.pipelines.ids = ids
    return dev


def _dispatch(bundle) -> None:
    xs = np.arange(5000, dtype=np.float32)
    y = bundle["saxpy"](x=xs, y=np.ones(5000, np.float32), a=3.0).array("y")
    np.testing.assert_array_equal(y, 3 * xs + 1)
    got = bundle["add.f32"](a=xs, b=xs, out=np.zeros(5000, np.float32)).array("out")
    np.testing.assert_array_equal(got, 2 * xs)


def test_cached_pipelines_are_made_from_identifiers_and_missing_ones_from_code(
    monkeypatch,
    tmp_path,
    tree_bundle,  # noqa: F811
):
    driver = _Driver(vk.lib)
    _stand_in(monkeypatch, driver)
    # A first process: every pipeline from its code, and their identifiers learned and saved.
    dev = _device(tmp_path, driver)
    try:
        bundle = open_bundle(tree_bundle, device=dev)
        ids = [k for k in bundle.runnable() if not k.startswith("lib_mm")][:24]
        first = bundle.warm(ids)
        assert first.created >= len(ids) and driver.by_id == 0
        assert driver.by_code == first.created
        _dispatch(bundle)
        learned = dict(dev.pipelines.ids.known)
        assert len(learned) == len(set(driver.cached)) > 0
        assert dev.save_pipeline_cache()
        assert os.path.isfile(dev.pipelines.cache_file.path + ".ids")
    finally:
        dev.close()
    # A second process: every pipeline of the same kernels from its identifier.
    driver.by_code = 0
    dev = _device(tmp_path, driver)
    try:
        assert dev.pipelines.ids.known == learned  # loaded from the file
        bundle = open_bundle(tree_bundle, device=dev)
        again = bundle.warm(ids)
        assert again.created == first.created
        assert driver.by_id == again.created and driver.by_code == 0
        assert (dev.pipelines.ids.hits, dev.pipelines.ids.misses) == (again.created, 0)
        _dispatch(bundle)
    finally:
        dev.close()
    # The driver's cache lost half the pipelines (a driver update, the cache file removed):
    # those are refused by identifier, made from their code and their identifiers learned
    # again; the rest still come from identifiers.
    lost = sorted(driver.cached)[::2]
    for ident in lost:
        del driver.cached[ident]
    driver.by_id = driver.by_code = driver.refused = 0
    dev = _device(tmp_path, driver)
    try:
        bundle = open_bundle(tree_bundle, device=dev)
        third = bundle.warm(ids)
        assert third.created == first.created
        assert driver.refused > 0 and driver.by_code == driver.refused
        assert driver.by_id + driver.by_code == third.created
        pids = dev.pipelines.ids
        assert (pids.hits, pids.misses) == (driver.by_id, driver.refused)
        assert pids.known == learned  # relearned from the code
        _dispatch(bundle)
    finally:
        dev.close()


def test_a_corrupt_identifier_file_is_reported_and_every_pipeline_made_from_code(
    monkeypatch,
    tmp_path,
    tree_bundle,  # noqa: F811
):
    driver = _Driver(vk.lib)
    _stand_in(monkeypatch, driver)
    dev = _device(tmp_path, driver)
    try:
        bundle = open_bundle(tree_bundle, device=dev)
        bundle.warm(["saxpy", "add.f32"])
        assert dev.save_pipeline_cache()
        path = dev.pipelines.cache_file.path + ".ids"
    finally:
        dev.close()
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0x40
    open(path, "wb").write(bytes(data))
    driver.by_code = driver.by_id = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dev = _device(tmp_path, driver)
    try:
        assert any(
            issubclass(w.category, PipelineCacheWarning) and "blake3 mismatch" in str(w.message)
            for w in caught
        )
        assert dev.pipelines.ids.known == {}
        bundle = open_bundle(tree_bundle, device=dev)
        made = bundle.warm(["saxpy", "add.f32"])
        assert driver.by_id == 0 and driver.by_code == made.created
        _dispatch(bundle)
        assert dev.save_pipeline_cache() or True  # nothing new for the cache itself
    finally:
        dev.close()


@pytest.mark.parametrize(
    "listed, version, env, wanted",
    [
        (True, (1, 3, 0), None, True),
        (True, (1, 2, 0), None, False),  # pipelineCreationCacheControl is core in 1.3
        (False, (1, 3, 0), None, False),
        (True, (1, 3, 0), "0", False),  # turned off
    ],
)
def test_identifiers_are_asked_for_by_extension_version_and_setting(
    monkeypatch, listed, version, env, wanted
):
    if env is None:
        monkeypatch.delenv("VYRE_VULKAN_MODULE_IDS", raising=False)
    else:
        monkeypatch.setenv("VYRE_VULKAN_MODULE_IDS", env)
    exts = {"VK_KHR_maintenance4", *([vulkan_profile.MODULE_ID_EXT] if listed else [])}
    assert vulkan_profile.wants_module_ids(exts, vk.VK_MAKE_VERSION(*version)) is wanted


def test_device_creation_chains_both_features_when_enabled():
    keep: list = []
    enable = vulkan_profile.Enable(extensions=[vulkan_profile.MODULE_ID_EXT], module_ids=UUID)
    info = vulkan_profile.device_create_info(0, enable, keep)
    found, at = {}, vk.ffi.cast("VkBaseOutStructure*", info.pNext)
    while at != vk.ffi.NULL:
        found[int(at.sType)] = at
        at = at.pNext
    ids = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_MODULE_IDENTIFIER_FEATURES_EXT
    ccc = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_CREATION_CACHE_CONTROL_FEATURES
    feat = vk.ffi.cast("VkPhysicalDeviceShaderModuleIdentifierFeaturesEXT*", found[ids])
    assert feat.shaderModuleIdentifier == 1
    ctl = vk.ffi.cast("VkPhysicalDevicePipelineCreationCacheControlFeatures*", found[ccc])
    assert ctl.pipelineCreationCacheControl == 1


_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from vyre_build.runtime import get_device, open_bundle
import numpy as np
dev = get_device("vulkan", pipeline_cache=sys.argv[2])
ids = dev.pipelines.ids
if ids is None:
    print(json.dumps({"off": True})); raise SystemExit
b = open_bundle(sys.argv[3], device=dev)
w = b.warm(json.loads(sys.argv[4]))
xs = np.arange(5000, dtype=np.float32)
y = b["saxpy"](x=xs, y=np.ones(5000, np.float32), a=3.0).array("y")
print(json.dumps({"created": w.created, "hits": ids.hits, "misses": ids.misses,
                  "known": len(ids.known), "right": bool((y == 3 * xs + 1).all())}))
"""


def test_the_device_makes_cached_pipelines_from_identifiers_in_a_fresh_process(
    tmp_path,
    tree_bundle,  # noqa: F811
):
    """On a device with the extension (NVIDIA): the second process makes every pipeline
    from its identifier, and a third, whose pipeline cache file is gone, makes them from
    their code (each refused by identifier) with the same results."""
    import adapters

    adapters.require_adapter("vulkan")
    kernels = json.dumps(["saxpy", "add.f32", "reduce_sum.f32", "lib_scan_look.f32"])
    env = dict(os.environ, __GL_SHADER_DISK_CACHE="0", MESA_SHADER_CACHE_DISABLE="true")

    def child() -> dict:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, ROOT, str(tmp_path), str(tree_bundle), kernels],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = child()
    if first.get("off"):
        pytest.skip("the Vulkan device has no VK_EXT_shader_module_identifier")
    assert first["right"] and first["hits"] == 0 and first["known"] > 0
    second = child()
    assert second["right"] and second["created"] == first["created"]
    assert (second["hits"], second["misses"]) == (second["created"], 0)
    for name in os.listdir(tmp_path):
        if name.endswith(".bin"):
            os.unlink(tmp_path / name)  # the pipelines go; the identifiers stay
    third = child()
    assert third["right"] and (third["hits"], third["misses"]) == (0, third["created"])
