"""Checks the device keeps: on a Vulkan device with VK_EXT_robustness2's robustBufferAccess2
and nullDescriptor (lavapipe and NVIDIA list both), the runtime makes pipelines with the
SPIR-V's `vyre_checked` specialization constant (SpecId 3) false, so the module's own clamp,
compare and select around plain storage-buffer loads fold away, and the device gives the
pinned rule instead: zeros read past a binding's range. Stores keep their own check (a
dropped store that a compiler forwards to a later load would be read: lavapipe did).
Bindings are bound with whole elements (a null descriptor where none fits). A kernel with a
storage element the device's range rounding could split keeps its own checks, and so do a
debug build, atomics and memory-ordered accesses. Every result is compared with the same
kernel on a device made without robustness2 (VYRE_VULKAN_ROBUSTNESS2=0) and with numpy."""

from __future__ import annotations

import types

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.artifacts import CHECKED_SPEC_ID
from vyre_build.runtime import load_kernel

pytestmark = pytest.mark.gpu
vk = pytest.importorskip("vulkan")
vulkan_backend = pytest.importorskip("vyre_build.runtime.backends.vulkan.device")
from vyre_build.runtime.backends.vulkan import binding as vb  # noqa: E402
from vyre_build.runtime.backends.vulkan import pipelines as vp  # noqa: E402
from vyre_build.runtime.backends.vulkan import profile as vulkan_profile  # noqa: E402

R2 = vulkan_profile.ROBUSTNESS2_EXT
R2_FEATURES = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT

SOURCE = """
from vyre_build.lang import Buffer, f32, global_id, kernel, u32, vec4f

@kernel(workgroup_size=64)
def past(x: Buffer[f32], y: Buffer[f32, "w"], z: Buffer[f32, "w"], n: Buffer[u32, "w"], s: u32):
    i = global_id().x
    y[i] = x[i + s]  # reads past x's end from s on
    z[i + s] = 1.0  # writes past z's end from s on
    if i == 0:
        n[0] = len(x)

@kernel(workgroup_size=64)
def forward(acc: Buffer[u32, "rw"], o: Buffer[u32, "w"]):
    i = global_id().x
    acc[i] = i + 1000  # past acc's end: dropped
    o[i] = acc[i]  # so 0 there, not the value stored (lavapipe forwarded a dropped store)

@kernel(workgroup_size=64)
def past4(x: Buffer[vec4f], y: Buffer[vec4f, "w"], s: u32):
    i = global_id().x
    y[i] = x[i + s] * 2.0
"""


def _device(monkeypatch, robust: bool):
    import adapters

    adapters.require_adapter("vulkan")
    if robust:
        monkeypatch.delenv("VYRE_VULKAN_ROBUSTNESS2", raising=False)
    else:
        monkeypatch.setenv("VYRE_VULKAN_ROBUSTNESS2", "0")
    return vulkan_backend.VulkanDevice(pipeline_cache=False)


def _offered(dev) -> int:
    """The device's own answer: its robustStorageBufferAccessSizeAlignment where it offers
    robustBufferAccess2 and nullDescriptor (with robustBufferAccess), else 0."""
    exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(dev.physical, None)}
    if R2 not in exts:
        return 0
    props = vk.VkPhysicalDeviceRobustness2PropertiesEXT()
    vk.vkGetPhysicalDeviceProperties2(dev.physical, vk.VkPhysicalDeviceProperties2(pNext=props))
    feats = vk.VkPhysicalDeviceRobustness2FeaturesEXT()
    base = vk.VkPhysicalDeviceFeatures2(pNext=feats)
    vk.vkGetPhysicalDeviceFeatures2(dev.physical, base)
    ok = feats.robustBufferAccess2 and feats.nullDescriptor and base.features.robustBufferAccess
    return int(props.robustStorageBufferAccessSizeAlignment) if ok else 0


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("past") / "past.py"
    path.write_text(SOURCE)
    return {k.stem: k for k in compile_file(str(path), root=str(path.parent))}


def test_the_profile_reports_what_the_device_offers_and_the_setting_turns_it_off(monkeypatch):
    dev = _device(monkeypatch, True)
    try:
        offered = _offered(dev)
        assert dev.profile.robust_alignment == offered
        assert dev.pipelines.robust_alignment == offered
        assert any("robustBufferAccess2" in line for line in dev.profile.describe()) is bool(
            offered
        )
    finally:
        dev.close()
    dev = _device(monkeypatch, False)
    try:
        assert dev.profile.robust_alignment == 0 and dev.pipelines.robust_alignment == 0
    finally:
        dev.close()


def test_device_creation_chains_robustness2_with_robust_buffer_access():
    for a in (0, 1, 4):
        keep: list = []
        enable = vulkan_profile.Enable(extensions=[R2] if a else [], robust_alignment=a)
        info = vulkan_profile.device_create_info(0, enable, keep)
        if not a:
            assert info.pNext == vk.ffi.NULL and info.enabledExtensionCount == 0
            continue
        chain, at = {}, vk.ffi.cast("VkBaseOutStructure*", info.pNext)
        while at != vk.ffi.NULL:
            chain[int(at.sType)] = at
            at = at.pNext
        found = vk.ffi.cast("VkPhysicalDeviceRobustness2FeaturesEXT*", chain[R2_FEATURES])
        assert found.robustBufferAccess2 == 1 and found.nullDescriptor == 1
        f2 = vk.ffi.cast(
            "VkPhysicalDeviceFeatures2*",
            chain[vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2],
        )
        assert f2.features.robustBufferAccess == 1  # robustBufferAccess2 needs it
        assert vk.ffi.string(info.ppEnabledExtensionNames[0]).decode() == R2


def _meta(*dtypes, debug=None):
    bufs = [types.SimpleNamespace(dtype=d) for d in dtypes]
    return types.SimpleNamespace(buffers=bufs, debug=debug)


@pytest.mark.parametrize(
    "alignment, dtypes, debug, wanted",
    [
        (0, ("f32",), None, False),  # the device keeps nothing
        (1, ("f32", "f16"), None, True),
        (4, ("f32", "vec4h", "vec2h"), None, True),
        (4, ("f32", "f16"), None, False),  # a range of odd halves rounds up past one
        (4, ("bf16",), None, False),
        (1, ("f32",), object(), False),  # a debug build reports its own
    ],
)
def test_which_kernels_leave_the_rule_to_the_device(alignment, dtypes, debug, wanted):
    pipes = types.SimpleNamespace(robust_alignment=alignment)
    assert vp.Pipelines.device_checks(pipes, _meta(*dtypes, debug=debug)) is wanted


def test_the_specialization_names_the_base_and_the_switch():
    keep: list = []
    assert vp._specialization(None, False, keep) == vk.ffi.NULL
    spec = vp._specialization(None, True, keep)
    assert spec.mapEntryCount == 1 and spec.pMapEntries[0].constantID == CHECKED_SPEC_ID
    assert vk.ffi.cast("uint32_t*", spec.pData)[0] == vk.VK_FALSE
    spec = vp._specialization((3, 0, 7), True, keep)
    ids = [spec.pMapEntries[k].constantID for k in range(spec.mapEntryCount)]
    data = vk.ffi.cast("uint32_t*", spec.pData)
    assert ids == [0, 1, 2, CHECKED_SPEC_ID] and spec.dataSize == 16
    assert [data[k] for k in range(4)] == [3, 0, 7, vk.VK_FALSE]
    spec = vp._specialization((1, 2, 3), False, keep)
    assert spec.mapEntryCount == 3


def test_bindings_are_bound_with_whole_elements():
    assert vb._whole(24, None) == 24  # the kernels keep the rule: as it is
    assert vb._whole(24, 16) == 16 and vb._whole(32, 16) == 32
    assert vb._whole(6, 8) == 0  # not one vec4h: a null descriptor


def test_the_module_carries_the_switch_and_wgsl_does_not(kernels):
    k = kernels["past"]
    words = np.frombuffer(k.spirv, dtype=np.uint32)
    # OpDecorate %id SpecId 3: opcode 71 with 4 words, decoration 1 (SpecId)
    decorations = [
        words[i + 3]
        for i in range(5, len(words) - 3)
        if words[i] == (4 << 16 | 71) and words[i + 2] == 1
    ]
    assert CHECKED_SPEC_ID in decorations
    assert "vyre_checked" not in k.wgsl


@pytest.mark.parametrize("robust", [True, False])
def test_past_the_end_gives_zeros_and_drops_writes(monkeypatch, kernels, robust):
    made: list = []  # (base, unchecked) of each specialization the pipelines get
    real = vp._specialization
    monkeypatch.setattr(
        vp, "_specialization", lambda b, u, keep: made.append((b, u)) or real(b, u, keep)
    )
    dev = _device(monkeypatch, robust)
    try:
        k = load_kernel(kernels["past"].meta, device=dev, spirv=kernels["past"].spirv)
        unchecked = bool(robust and dev.profile.robust_alignment)
        assert dev.pipelines.device_checks(k.meta) is unchecked
        _ = k.pipeline
        assert made == [(None, unchecked)]  # the pipeline made with vyre_checked false, or not
        x = np.arange(1, 129, dtype=np.float32)
        # 1 << 30 and 1 << 31: byte offsets that wrap 32 bits (lavapipe read element 0)
        for s in (0, 64, 100, 128, 5000, 1 << 30, 1 << 31):
            out = k(x=x, y=128, z=np.zeros(128, np.float32), n=1, s=s, grid=128)
            want = np.zeros(128, np.float32)
            want[: max(0, 128 - s)] = x[s:]
            np.testing.assert_array_equal(out["y"], want)
            np.testing.assert_array_equal(out["z"], (np.arange(128) >= s) & (s < 128))
            assert int(out["n"][0]) == 128
        k4 = load_kernel(kernels["past4"].meta, device=dev, spirv=kernels["past4"].spirv)
        x4 = np.arange(1, 4 * 40 + 1, dtype=np.float32)
        for s in (0, 10, 40, 41, 1 << 28, 1 << 31):
            got = k4(x=x4, y=40, s=s, grid=40)["y"].reshape(-1)
            want = np.zeros(160, np.float32)
            want[: max(0, 160 - 4 * s)] = 2.0 * x4[4 * s :]
            np.testing.assert_array_equal(got, want)
    finally:
        dev.close()


def test_a_binding_with_no_whole_element_is_bound_as_a_null_descriptor(monkeypatch, kernels):
    """Not reachable through a call (arguments hold whole elements), but bound so if it
    were: the set is written with VK_NULL_HANDLE and freed again."""
    dev = _device(monkeypatch, True)
    try:
        if not dev.profile.robust_alignment:
            pytest.skip(f"{dev.name} does not keep the bounds rule (no robustBufferAccess2)")
        k = load_kernel(kernels["past4"].meta, device=dev, spirv=kernels["past4"].spirv)
        pipe = k.pipeline
        assert pipe[5] == {0: 16, 1: 16}  # vec4f: 16-byte elements
        buf = dev.buffer(np.zeros(8, np.float32))
        live = buf._live()
        entry = dev._bind(pipe, [(0, live, 8), (1, live, 32)], pipe[4], bytes(16))
        dev._unbind(entry)
    finally:
        dev.close()


def test_a_driver_that_refuses_robustness2_loses_only_it(monkeypatch, kernels):
    import adapters

    adapters.require_adapter("vulkan")
    monkeypatch.delenv("VYRE_VULKAN_ROBUSTNESS2", raising=False)
    probe = vulkan_backend.VulkanDevice(pipeline_cache=False)  # the device's own answer
    offered = _offered(probe)
    probe.close()
    if not offered:
        pytest.skip("the device offers no robustBufferAccess2: nothing to refuse")
    real = vulkan_profile.device_create_info

    def refuses_robustness2(family, enable, keep):
        if enable.robust_alignment:  # as a driver refusing the chain would
            enable = vulkan_profile.Enable(extensions=["VK_VYRE_no_such_extension"])
        return real(family, enable, keep)

    monkeypatch.setattr(vulkan_profile, "device_create_info", refuses_robustness2)
    with pytest.warns(RuntimeWarning, match="made without robustBufferAccess2 \\(the kernels"):
        dev = vulkan_backend.VulkanDevice(pipeline_cache=False)
    try:
        assert dev.profile.robust_alignment == 0 and dev.pipelines.robust_alignment == 0
        assert "storage_16bit" in dev.profile.features  # the rest kept
        k = load_kernel(kernels["past"].meta, device=dev, spirv=kernels["past"].spirv)
        assert not dev.pipelines.device_checks(k.meta)
        out = k(x=np.ones(64, np.float32), y=64, z=np.zeros(64, np.float32), n=1, s=32, grid=64)
        np.testing.assert_array_equal(out["y"], np.arange(64) < 32)
    finally:
        dev.close()


@pytest.mark.parametrize("robust", [True, False])
def test_a_store_past_the_end_is_not_read_back(monkeypatch, kernels, robust):
    dev = _device(monkeypatch, robust)
    try:
        k = load_kernel(kernels["forward"].meta, device=dev, spirv=kernels["forward"].spirv)
        for n in (1, 3, 16, 33, 64):
            out = k(acc=np.zeros(n, np.uint32), o=64, grid=64)
            want = np.where(np.arange(64) < n, np.arange(64) + 1000, 0).astype(np.uint32)
            np.testing.assert_array_equal(out["o"], want)
            np.testing.assert_array_equal(out["acc"], want[:n])
    finally:
        dev.close()
