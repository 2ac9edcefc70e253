"""A device's profile: identity, the features kernels may need and the limits they meet."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.core.errors import DeviceError
from vyre_build.core.features import (
    BF16,
    VULKAN_MEMORY_MODEL,
    VULKAN_MEMORY_MODEL_DEVICE_SCOPE,
    COOPERATIVE_MATRIX,
    SUBGROUP_FEATURES,
    cooperative_matrix,
    is_feature,
)

__all__ = ["CooperativeMatrixType", "DeviceProfile", "check_kernel", "missing_features"]


@dataclass(frozen=True)
class CooperativeMatrixType:
    """One M x N x K multiply-add shape a device reports (VK_KHR_cooperative_matrix):
    A (M x K) and B (K x N) of `a_type`/`b_type`, C and the result (M x N) of
    `c_type`/`result_type`, at `scope` ("subgroup", "workgroup", ...)."""

    m: int
    n: int
    k: int
    a_type: str
    b_type: str
    c_type: str
    result_type: str
    saturating: bool = False
    scope: str = "subgroup"

    @property
    def feature(self) -> str | None:
        """Its feature name, when kernels can name it (same A/B and C/result types, at
        subgroup scope, known component types), else None."""
        if (
            self.scope != "subgroup"
            or self.a_type != self.b_type
            or self.c_type != self.result_type
        ):
            return None
        try:
            return cooperative_matrix(self.a_type, self.c_type, self.m, self.n, self.k)
        except ValueError:
            return None


@dataclass(frozen=True)
class DeviceProfile:
    """What one device offers kernels. `features` are the names of vyre_build.core.features
    that kernels may use on it (enabled on the device); the rest describes it.

    Sizes are in bytes; `max_workgroup_size` and `max_workgroup_count` are per axis (x, y,
    z); `subgroup_size` is the device's fixed size when it reports one, and
    `subgroup_size_range` the sizes it can run (min, max) when it reports those.
    """

    backend: str
    adapter: str
    device_type: str
    vendor_id: int
    device_id: int
    driver: str
    driver_version: int
    api_version: str
    subgroup_size: int | None
    subgroup_size_range: tuple[int, int] | None
    subgroup_operations: tuple[str, ...]
    f16: bool
    storage_16bit: bool
    bf16: bool
    cooperative_matrices: tuple[CooperativeMatrixType, ...]
    max_workgroup_size: tuple[int, int, int]
    max_workgroup_invocations: int
    max_workgroup_count: tuple[int, int, int]
    max_shared_memory: int
    max_storage_buffer_binding: int
    features: frozenset[str]
    # Vulkan: the device keeps the bounds rule of storage-buffer loads and stores
    # (robustBufferAccess2: zeros read and writes dropped past a binding's range, rounded up
    # to this many bytes), so kernels run with their own load checks off where the rounding
    # cannot show (docs/runtime.md, "Checks the device keeps"); 0: the kernels keep them.
    robust_alignment: int = 0

    def as_json(self) -> dict[str, Any]:
        """The profile as JSON data (tuples as lists, features sorted)."""
        out: dict[str, Any] = _plain(dataclasses.asdict(self))
        out["features"] = sorted(self.features)
        return out

    def describe(self) -> list[str]:
        """The profile as text lines, one fact a line."""
        sub = (
            f"size {self.subgroup_size}"
            if self.subgroup_size
            else "size unknown"
            if self.subgroup_operations
            else "none"
        )
        if self.subgroup_size_range:
            sub += f" (range {self.subgroup_size_range[0]}..{self.subgroup_size_range[1]})"
        ops = [o.removeprefix("subgroup_") for o in self.subgroup_operations]
        coop = [
            f"{c.a_type}x{c.b_type}+{c.c_type}->{c.result_type} {c.m}x{c.n}x{c.k}"
            for c in self.cooperative_matrices
        ]
        xyz = "x".join
        return [
            f"adapter      {self.adapter}",
            f"ids          vendor 0x{self.vendor_id:04x}, device 0x{self.device_id:04x}",
            f"driver       {self.driver} (version {self.driver_version:#x}), API {self.api_version}",
            f"subgroups    {sub}{': ' + ', '.join(ops) if ops else ''}",
            f"16-bit       f16 arithmetic {_yes(self.f16)}, 16-bit storage "
            f"{_yes(self.storage_16bit)}, bf16 {_yes(self.bf16)}",
            f"coop matrix  {', '.join(coop) if coop else 'none'}",
            f"workgroup    size {xyz(map(str, self.max_workgroup_size))}, "
            f"{self.max_workgroup_invocations} invocations, "
            f"count {xyz(map(str, self.max_workgroup_count))}",
            f"memory       shared {self.max_shared_memory} bytes, storage binding "
            f"{self.max_storage_buffer_binding} bytes",
            f"features     {', '.join(sorted(self.features)) or 'none'}",
            *(
                [
                    "bounds       kept by the device (robustBufferAccess2, ranges rounded to "
                    f"{self.robust_alignment} bytes)"
                ]
                if self.robust_alignment
                else []
            ),
        ]


def _plain(value: Any) -> Any:
    # JSON data of asdict's output: tuples (and frozensets) as lists.
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list, frozenset)):
        return [_plain(v) for v in value]
    return value


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def features_of(
    subgroup_operations: tuple[str, ...],
    f16: bool,
    storage_16bit: bool,
    cooperative_matrices: tuple[CooperativeMatrixType, ...],
    memory_model: bool = False,
    memory_model_device_scope: bool = False,
    bf16: bool = False,
) -> frozenset[str]:
    """The feature names a device with these capabilities (all enabled) offers
    (`memory_model`, `memory_model_device_scope`: Vulkan's vulkanMemoryModel and
    vulkanMemoryModelDeviceScope, or the reference's equivalent)."""
    names = {op for op in subgroup_operations if op in SUBGROUP_FEATURES}
    names |= {VULKAN_MEMORY_MODEL} if memory_model else set()
    names |= (
        {VULKAN_MEMORY_MODEL_DEVICE_SCOPE} if memory_model and memory_model_device_scope else set()
    )
    names |= {"f16"} if f16 else set()
    names |= {BF16} if bf16 else set()
    names |= {"storage_16bit"} if storage_16bit else set()
    shapes = {c.feature for c in cooperative_matrices if c.feature is not None}
    names |= shapes | ({COOPERATIVE_MATRIX} if shapes else set())
    return frozenset(names)


def missing_features(needed: tuple[str, ...], offered: frozenset[str]) -> list[str]:
    """The names of `needed` not in `offered`, each unknown one marked as such."""
    return [
        name if is_feature(name) else f"{name!r} (a feature this runtime does not know)"
        for name in needed
        if name not in offered
    ]


def check_kernel(meta: KernelMeta, profile: DeviceProfile, device: str) -> None:
    """DeviceError unless a device of `profile` can run `meta`: its features, workgroup
    size and declared shared memory; the messages name the device as `device` ("the wgpu
    device NAME")."""
    missing = missing_features(meta.features, profile.features)
    if missing:
        raise DeviceError(
            f"Kernel {meta.id!r} needs {', '.join(missing)}, which {device} does not offer"
        )
    wg = meta.workgroup_size
    for axis, (side, most) in enumerate(zip(wg, profile.max_workgroup_size)):
        if side > most:
            raise DeviceError(
                f"Kernel {meta.id!r} has workgroup size {side} on {'xyz'[axis]}, more than "
                f"{device} allows ({most})"
            )
    invocations = math.prod(wg)
    if invocations > profile.max_workgroup_invocations:
        raise DeviceError(
            f"Kernel {meta.id!r} has {invocations} invocations per workgroup, more than "
            f"{device} allows ({profile.max_workgroup_invocations})"
        )
    if meta.shared_bytes > profile.max_shared_memory:
        raise DeviceError(
            f"Kernel {meta.id!r} declares {meta.shared_bytes} bytes of shared memory "
            f"(shared_bytes), more than {device} allows ({profile.max_shared_memory})"
        )
    size = profile.subgroup_size
    if COOPERATIVE_MATRIX in meta.features and size and invocations % size:
        # a cooperative matrix needs every invocation of its subgroup
        raise DeviceError(
            f"Kernel {meta.id!r} uses cooperative matrices with {invocations} invocations "
            f"per workgroup, not a multiple of the subgroup size {size} of {device}"
        )
