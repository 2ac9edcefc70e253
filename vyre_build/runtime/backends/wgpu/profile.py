"""The wgpu backend's adapters and their DeviceProfile: what `vyre-build devices` lists and
a device's `profile` reports (no device is created to read them)."""

from __future__ import annotations

from typing import Any

import wgpu

from vyre_build.core.features import SUBGROUP_FEATURES
from vyre_build.runtime.profile import DeviceProfile, features_of

# Asked for in full (the shared memory a kernel may declare with shared_bytes, too).
_LIMITS = (
    "max-storage-buffer-binding-size",
    "max-buffer-size",
    "max-compute-workgroup-storage-size",
)
_BUFFER_LIMITS = _LIMITS[:2]
# WGSL's `subgroups` extension: every class but clustered operations.
_WGSL_SUBGROUP_OPS = tuple(op for op in SUBGROUP_FEATURES if op != "subgroup_clustered")


def _describe(adapter: Any) -> str:
    info = adapter.info
    return (
        f"{info.get('device') or info.get('vendor') or 'unknown'} "
        f"[{info.get('adapter_type', '?')}, {info.get('backend_type', '?')}]"
    )


def list_adapters() -> list[str]:
    """A description of every adapter wgpu can see, in wgpu's order."""
    return [_describe(a) for a in wgpu.gpu.enumerate_adapters_sync()]


def profile_of(adapter: Any, features: Any, limits: Any) -> DeviceProfile:
    """The profile of a device on `adapter` with `features` and `limits` (an adapter's
    own, for what a new device could have; a device's, for what it has)."""
    info = adapter.info
    has = {str(f) for f in features}
    ops = _WGSL_SUBGROUP_OPS if "subgroup" in has else ()
    f16 = "shader-f16" in has  # WGSL f16 covers arithmetic and 16-bit storage
    # wgpu-py 0.32 spells the subgroup size range "stackgroup_*"; later versions "subgroup_*".
    count = int(limits["max-compute-workgroups-per-dimension"])
    low = info.get("subgroup_min_size", info.get("stackgroup_min_size"))
    high = info.get("subgroup_max_size", info.get("stackgroup_max_size"))
    return DeviceProfile(
        backend="wgpu",
        adapter=_describe(adapter),
        device_type=str(info.get("adapter_type", "?")),
        vendor_id=int(info.get("vendor_id") or 0),
        device_id=int(info.get("device_id") or 0),
        driver=str(info.get("description") or info.get("backend_type") or "?"),
        driver_version=0,
        api_version=f"WebGPU (wgpu-py {wgpu.__version__}, {info.get('backend_type', '?')})",
        subgroup_size=None,
        subgroup_size_range=(int(low), int(high)) if ops and low and high else None,
        subgroup_operations=ops,
        f16=f16,
        storage_16bit=f16,
        bf16=False,
        cooperative_matrices=(),
        max_workgroup_size=(
            int(limits["max-compute-workgroup-size-x"]),
            int(limits["max-compute-workgroup-size-y"]),
            int(limits["max-compute-workgroup-size-z"]),
        ),
        max_workgroup_invocations=int(limits["max-compute-invocations-per-workgroup"]),
        max_workgroup_count=(count, count, count),
        max_shared_memory=int(limits["max-compute-workgroup-storage-size"]),
        max_storage_buffer_binding=int(min(limits[k] for k in _BUFFER_LIMITS)),
        features=features_of(ops, f16, f16, ()),
    )


def adapter_profiles() -> list[DeviceProfile]:
    """The DeviceProfile of every adapter wgpu can see (no device is created)."""
    return [profile_of(a, a.features, a.limits) for a in wgpu.gpu.enumerate_adapters_sync()]
