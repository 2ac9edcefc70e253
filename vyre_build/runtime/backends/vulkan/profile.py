"""What a Vulkan physical device offers, and the features and extensions a device is created
with so that kernels can use them: subgroups (nothing to enable; their operations and
stages are checked), shaderFloat16 and storageBuffer16BitAccess (Vulkan 1.1/1.2 feature
chains), vulkanMemoryModel and vulkanMemoryModelDeviceScope (Vulkan 1.2: the
vulkan_memory_model features of memory-ordered kernels), VK_KHR_cooperative_matrix and
VK_KHR_shader_bfloat16 where the device has them, and VK_KHR_maintenance5 (its
`maintenance5` feature: pipelines made from SPIR-V without a VkShaderModule) where a
Vulkan 1.3 device offers it, unless $VYRE_VULKAN_MAINTENANCE5 is "0"; VK_EXT_robustness2's
robustBufferAccess2 and nullDescriptor (with robustBufferAccess), where offered, unless
$VYRE_VULKAN_ROBUSTNESS2 is "0": the device then keeps the bounds rule of storage-buffer
loads and stores (zeros read and writes dropped past a binding's range), so pipelines are
made with the modules' own load checks off (`vyre_checked`, pipelines.py)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

import vulkan as vk

from vyre_build.core.errors import DeviceError
from vyre_build.core.features import SUBGROUP_FEATURES
from vyre_build.runtime.profile import CooperativeMatrixType, DeviceProfile, features_of
from vyre_build.runtime.backends.vulkan.results import VulkanCallError, invoke

_NO_DRIVER = "install a Vulkan driver (e.g. Mesa lavapipe, package mesa-vulkan-drivers)"
_INSTANCE: list[Any] = []
# Adapter types in the order a default device prefers them.
TYPES = {
    vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete GPU",
    vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated GPU",
    vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual GPU",
    vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "CPU",
}
COOP_EXT, BF16_EXT = "VK_KHR_cooperative_matrix", "VK_KHR_shader_bfloat16"
MAINTENANCE5_EXT = "VK_KHR_maintenance5"  # needs Vulkan 1.3 (or VK_KHR_dynamic_rendering)
ROBUSTNESS2_EXT = "VK_EXT_robustness2"
# VkComponentTypeKHR -> the names vyre_build.core.features uses (bf16 and fp8 from later headers).
_COMPONENT = {
    0: "f16",
    1: "f32",
    2: "f64",
    3: "s8",
    4: "s16",
    5: "s32",
    6: "s64",
    7: "u8",
    8: "u16",
    9: "u32",
    10: "u64",
    1000141000: "bf16",
    1000491002: "e4m3",
    1000491003: "e5m2",
}
_SCOPE = {1: "device", 2: "workgroup", 3: "subgroup", 5: "queue family"}
_BF16_FEATURES = 1000141000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR


def instance() -> Any:
    """The process's VkInstance (Vulkan 1.3 asked for; devices may offer less)."""
    if not _INSTANCE:
        app = vk.VkApplicationInfo(
            pApplicationName="vyre_build",
            applicationVersion=1,
            pEngineName="vyre_build",
            engineVersion=1,
            apiVersion=vk.VK_MAKE_VERSION(1, 3, 0),
        )
        try:
            _INSTANCE.append(
                invoke(vk.vkCreateInstance, vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
            )
        except (VulkanCallError, OSError) as exc:
            raise DeviceError(f"no Vulkan instance: {exc}; {_NO_DRIVER}") from exc
    return _INSTANCE[0]


def physical_devices() -> list[tuple[Any, Any, str]]:
    """(physical device, properties, description) per Vulkan device, in the loader's order."""
    devices = _call("physical device listing", vk.vkEnumeratePhysicalDevices, instance())
    props = [vk.vkGetPhysicalDeviceProperties(p) for p in devices]  # deviceName comes decoded
    return [
        (p, d, f"{d.deviceName} [{TYPES.get(d.deviceType, 'other')}, Vulkan]")
        for p, d in zip(devices, props)
    ]


def _call(what: str, fn: Any, *args: Any) -> Any:
    # fn(*args) of the `vulkan` package, a failure raised as a DeviceError naming `what`.
    try:
        return invoke(fn, *args)
    except VulkanCallError as exc:
        raise DeviceError(f"Vulkan {what} failed: {exc}") from exc


def _version(v: int) -> str:
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def _xyz(values: Any) -> tuple[int, int, int]:
    return int(values[0]), int(values[1]), int(values[2])


def _text(chars: Any) -> str:
    return bytes(vk.ffi.string(chars)).decode("utf-8", "replace")


@dataclass
class Enable:
    """What a logical device is created with: extensions and feature structs to chain."""

    extensions: list[str] = field(default_factory=list)
    vulkan11: dict[str, int] = field(default_factory=dict)
    vulkan12: dict[str, int] = field(default_factory=dict)
    cooperative_matrix: bool = False
    bf16: dict[str, int] = field(default_factory=dict)
    # VK_KHR_maintenance5's feature: a pipeline's stage may carry its SPIR-V in a chained
    # VkShaderModuleCreateInfo instead of a VkShaderModule (pipelines.py).
    maintenance5: bool = False
    # VK_EXT_robustness2's robustBufferAccess2 and nullDescriptor, with robustBufferAccess:
    # the device's robustStorageBufferAccessSizeAlignment (1 or 4), 0 where not enabled.
    robust_alignment: int = 0


def _linked(make: Any, chain: list[Any], **fields: Any) -> Any:
    # make(**fields) with pNext the last struct of `chain`, appended to it.
    if chain:
        fields["pNext"] = chain[-1]
    chain.append(make(**fields))
    return chain[-1]


def _bf16_struct(**fields: Any) -> Any:
    # VkPhysicalDeviceShaderBfloat16FeaturesKHR is newer than the `vulkan` package's
    # headers; VkPhysicalDeviceMultiviewFeatures has its layout (sType, pNext, 3 VkBool32).
    s = vk.ffi.new("VkPhysicalDeviceMultiviewFeatures*")
    s.sType = _BF16_FEATURES
    for k, v in fields.items():
        if k == "pNext" and vk.ffi.typeof(v).kind == "struct":
            v = vk.ffi.addressof(v)  # the `vulkan` package's structs are values
        setattr(s, k, v)
    return s


def _cooperative_matrices(physical: Any) -> tuple[CooperativeMatrixType, ...]:
    name = b"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"
    proc = vk.lib.vkGetInstanceProcAddr(instance(), name)
    if proc == vk.ffi.NULL:
        return ()
    fn = vk.ffi.cast("PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", proc)
    count = vk.ffi.new("uint32_t*")
    if fn(physical, count, vk.ffi.NULL) != vk.VK_SUCCESS or not count[0]:
        return ()
    props = vk.ffi.new("VkCooperativeMatrixPropertiesKHR[]", count[0])
    for i in range(count[0]):
        props[i].sType = vk.VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
    if fn(physical, count, props) not in (vk.VK_SUCCESS, vk.VK_INCOMPLETE):
        return ()
    return tuple(
        CooperativeMatrixType(
            m=p.MSize,
            n=p.NSize,
            k=p.KSize,
            a_type=_COMPONENT.get(p.AType, f"type{p.AType}"),
            b_type=_COMPONENT.get(p.BType, f"type{p.BType}"),
            c_type=_COMPONENT.get(p.CType, f"type{p.CType}"),
            result_type=_COMPONENT.get(p.ResultType, f"type{p.ResultType}"),
            saturating=bool(p.saturatingAccumulation),
            scope=_SCOPE.get(p.scope, f"scope{p.scope}"),
        )
        for p in (props[i] for i in range(count[0]))
    )


def query(physical: Any, props: Any, description: str) -> tuple[DeviceProfile, Enable]:
    """The profile of `physical` with everything enabled that vyre_build kernels can use,
    and what device creation must enable for it."""
    listed = _call("extension listing", vk.vkEnumerateDeviceExtensionProperties, physical, None)
    exts = {e.extensionName for e in listed}
    modern = props.apiVersion >= vk.VK_MAKE_VERSION(1, 2, 0)
    # Properties: subgroups (1.1), driver name (1.2), subgroup size range (1.3).
    chain: list[Any] = []
    sub = _linked(vk.VkPhysicalDeviceSubgroupProperties, chain)
    drv = _linked(vk.VkPhysicalDeviceDriverProperties, chain) if modern else None
    size = (
        _linked(vk.VkPhysicalDeviceSubgroupSizeControlProperties, chain)
        if props.apiVersion >= vk.VK_MAKE_VERSION(1, 3, 0) or "VK_EXT_subgroup_size_control" in exts
        else None
    )
    robust = ROBUSTNESS2_EXT in exts and os.environ.get("VYRE_VULKAN_ROBUSTNESS2", "") != "0"
    r2p = _linked(vk.VkPhysicalDeviceRobustness2PropertiesEXT, chain) if robust else None
    vk.vkGetPhysicalDeviceProperties2(physical, _linked(vk.VkPhysicalDeviceProperties2, chain))
    # Features: 16-bit storage (1.1), f16 arithmetic and the memory model (1.2), matrices.
    fchain: list[Any] = []
    f11 = _linked(vk.VkPhysicalDeviceVulkan11Features, fchain) if modern else None
    f12 = _linked(vk.VkPhysicalDeviceVulkan12Features, fchain) if modern else None
    coop = (
        _linked(vk.VkPhysicalDeviceCooperativeMatrixFeaturesKHR, fchain)
        if COOP_EXT in exts
        else None
    )
    m5 = (
        _linked(vk.VkPhysicalDeviceMaintenance5FeaturesKHR, fchain)
        if wants_maintenance5(exts, props.apiVersion)
        else None
    )
    bf16 = _linked(_bf16_struct, fchain) if BF16_EXT in exts else None
    r2f = _linked(vk.VkPhysicalDeviceRobustness2FeaturesEXT, fchain) if robust else None
    base = None
    if fchain:
        base = _linked(vk.VkPhysicalDeviceFeatures2, fchain)
        vk.vkGetPhysicalDeviceFeatures2(physical, base)
    enable = Enable()
    if (
        r2p is not None
        and r2f is not None
        and base is not None
        and r2f.robustBufferAccess2
        and r2f.nullDescriptor
        and base.features.robustBufferAccess
        and int(r2p.robustStorageBufferAccessSizeAlignment) in (1, 4)
    ):
        enable.extensions.append(ROBUSTNESS2_EXT)
        enable.robust_alignment = int(r2p.robustStorageBufferAccessSizeAlignment)
    if f11 is not None and f12 is not None:
        enable.vulkan11 = {
            k: 1
            for k in ("storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess")
            if getattr(f11, k)
        }
        enable.vulkan12 = {
            k: 1
            for k in (
                "shaderFloat16",
                "shaderInt8",
                "shaderSubgroupExtendedTypes",
                "vulkanMemoryModel",
                "vulkanMemoryModelDeviceScope",
            )
            if getattr(f12, k)
        }
    matrices: tuple[CooperativeMatrixType, ...] = ()
    if coop is not None and coop.cooperativeMatrix:
        enable.extensions.append(COOP_EXT)
        enable.cooperative_matrix = True
        try:
            matrices = _cooperative_matrices(physical)
        except Exception:  # noqa: BLE001 - a driver answer we cannot read: none offered
            matrices = ()
    has_bf16 = bf16 is not None and bool(bf16.multiview)  # shaderBFloat16Type
    if bf16 is not None and has_bf16:
        enable.extensions.append(BF16_EXT)
        enable.bf16 = {
            "multiview": 1,
            "multiviewGeometryShader": int(bf16.multiviewGeometryShader),  # DotProduct
            "multiviewTessellationShader": int(bf16.multiviewTessellationShader),  # CoopMatrix
        }
    if m5 is not None and m5.maintenance5:
        enable.extensions.append(MAINTENANCE5_EXT)
        enable.maintenance5 = True
    if not enable.bf16.get("multiviewTessellationShader"):  # no bf16 cooperative matrices
        matrices = tuple(m for m in matrices if "bf16" not in (m.a_type, m.c_type))
    compute = bool(sub.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT)
    operations = tuple(
        name
        for bit, name in enumerate(SUBGROUP_FEATURES)
        if compute and sub.supportedOperations & (1 << bit)
    )
    f16 = bool(enable.vulkan12.get("shaderFloat16"))
    storage16 = bool(enable.vulkan11.get("storageBuffer16BitAccess"))
    limits = props.limits
    profile = DeviceProfile(
        backend="vulkan",
        adapter=description,
        device_type=TYPES.get(props.deviceType, "other"),
        vendor_id=int(props.vendorID),
        device_id=int(props.deviceID),
        driver=(
            f"{_text(drv.driverName)} {_text(drv.driverInfo)}".strip()
            if drv is not None
            else _version(props.driverVersion)
        ),
        driver_version=int(props.driverVersion),
        api_version=_version(props.apiVersion),
        subgroup_size=int(sub.subgroupSize) or None,
        subgroup_size_range=(
            (int(size.minSubgroupSize), int(size.maxSubgroupSize)) if size is not None else None
        ),
        subgroup_operations=operations,
        f16=f16,
        storage_16bit=storage16,
        bf16=has_bf16,
        cooperative_matrices=matrices,
        max_workgroup_size=_xyz(limits.maxComputeWorkGroupSize),
        max_workgroup_invocations=int(limits.maxComputeWorkGroupInvocations),
        max_workgroup_count=_xyz(limits.maxComputeWorkGroupCount),
        max_shared_memory=int(limits.maxComputeSharedMemorySize),
        max_storage_buffer_binding=int(limits.maxStorageBufferRange),
        robust_alignment=enable.robust_alignment,
        features=features_of(
            operations,
            f16,
            storage16,
            matrices,
            bool(enable.vulkan12.get("vulkanMemoryModel")),
            bool(enable.vulkan12.get("vulkanMemoryModelDeviceScope")),
            has_bf16,
        ),
    )
    return profile, enable


def wants_maintenance5(extensions: set[str], api_version: int) -> bool:
    """Whether to ask a device for VK_KHR_maintenance5's feature: it lists the extension,
    offers Vulkan 1.3 (which holds VK_KHR_dynamic_rendering, the extension's other need)
    and $VYRE_VULKAN_MAINTENANCE5 is not "0" (to compare with shader modules made)."""
    return (
        MAINTENANCE5_EXT in extensions
        and api_version >= vk.VK_MAKE_VERSION(1, 3, 0)
        and os.environ.get("VYRE_VULKAN_MAINTENANCE5", "") != "0"
    )


def without_optional(profile: DeviceProfile) -> DeviceProfile:
    """`profile` of a device created with no optional features (subgroups need none)."""
    ops = profile.subgroup_operations
    return dataclasses.replace(
        profile,
        f16=False,
        storage_16bit=False,
        bf16=False,
        cooperative_matrices=(),
        features=features_of(ops, False, False, ()),
        robust_alignment=0,
    )


def without_robustness(enable: Enable) -> Enable:
    """`enable` without VK_EXT_robustness2 (the kernels keep their own bounds checks)."""
    return dataclasses.replace(
        enable,
        extensions=[e for e in enable.extensions if e != ROBUSTNESS2_EXT],
        robust_alignment=0,
    )


def device_create_info(family: int, enable: Enable, keep: list[Any]) -> Any:
    """A VkDeviceCreateInfo with one compute queue of `family` and `enable`'s features;
    every nested struct is appended to `keep` (it must outlive vkCreateDevice)."""
    chain: list[Any] = []
    if enable.vulkan11 or enable.vulkan12:
        _linked(vk.VkPhysicalDeviceVulkan11Features, chain, **enable.vulkan11)
        _linked(vk.VkPhysicalDeviceVulkan12Features, chain, **enable.vulkan12)
    if enable.cooperative_matrix:
        _linked(vk.VkPhysicalDeviceCooperativeMatrixFeaturesKHR, chain, cooperativeMatrix=1)
    if enable.maintenance5:
        _linked(vk.VkPhysicalDeviceMaintenance5FeaturesKHR, chain, maintenance5=1)
    if enable.bf16:
        _linked(_bf16_struct, chain, **enable.bf16)
    base: dict[str, Any] = {}
    if enable.robust_alignment:
        _linked(
            vk.VkPhysicalDeviceRobustness2FeaturesEXT,
            chain,
            robustBufferAccess2=1,
            nullDescriptor=1,
        )
        base["features"] = vk.VkPhysicalDeviceFeatures(robustBufferAccess=1)
        keep.append(base["features"])
    priorities = [1.0]
    queues = [vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family, pQueuePriorities=priorities)]
    fields: dict[str, Any] = {"pQueueCreateInfos": queues}
    if chain:
        fields["pNext"] = _linked(vk.VkPhysicalDeviceFeatures2, chain, **base)
    if enable.extensions:
        fields["ppEnabledExtensionNames"] = enable.extensions
    keep += [chain, priorities, queues, enable.extensions]
    return vk.VkDeviceCreateInfo(**fields)
