"""The device-feature vocabulary shared by the compiler and the runtime.

A kernel's metadata lists the features it needs as `"features": [sorted names]` (absent or
empty: none); a runtime Device reports the ones it has in `Device.profile.features`. Names:

- subgroup operation classes: `subgroup_basic`, `subgroup_vote`, `subgroup_arithmetic`,
  `subgroup_ballot`, `subgroup_shuffle`, `subgroup_shuffle_relative`, `subgroup_clustered`,
  `subgroup_quad` (Vulkan's VkSubgroupFeatureFlagBits, in compute shaders);
- `f16` (16-bit float arithmetic), `bf16` (bfloat16 values: loads, stores, conversions,
  VK_KHR_shader_bfloat16), `storage_16bit` (16-bit values in storage buffers);
- `cooperative_matrix` (any cooperative-matrix type or op: VK_KHR_cooperative_matrix) and
  `cooperative_matrix.<a_type>.<acc_type>.<M>x<N>x<K>`, e.g.
  `cooperative_matrix.f16.f32.16x16x16`: A and B of `a_type`, C and the result of
  `acc_type` (VK_KHR_cooperative_matrix, subgroup scope).

Standard library only: the compiler, the bundle tools and the runtime all import it.
"""

from __future__ import annotations

import re

__all__ = [
    "COMPONENT_TYPES",
    "COOPERATIVE_MATRIX",
    "MATRIX_DIMS",
    "MATRIX_ACCUMULATORS",
    "MATRIX_ELEMENTS",
    "BF16",
    "F16",
    "FEATURES",
    "STORAGE_16BIT",
    "SUBGROUP_FEATURES",
    "VULKAN_MEMORY_MODEL",
    "VULKAN_MEMORY_MODEL_DEVICE_SCOPE",
    "cooperative_matrix",
    "is_feature",
    "parse_cooperative_matrix",
]

# In VkSubgroupFeatureFlagBits order (bit 0 upwards).
SUBGROUP_FEATURES = (
    "subgroup_basic",
    "subgroup_vote",
    "subgroup_arithmetic",
    "subgroup_ballot",
    "subgroup_shuffle",
    "subgroup_shuffle_relative",
    "subgroup_clustered",
    "subgroup_quad",
)
F16 = "f16"
BF16 = "bf16"  # bfloat16 values (VK_KHR_shader_bfloat16 shaderBFloat16Type)
STORAGE_16BIT = "storage_16bit"
COOPERATIVE_MATRIX = "cooperative_matrix"
VULKAN_MEMORY_MODEL = "vulkan_memory_model"
VULKAN_MEMORY_MODEL_DEVICE_SCOPE = "vulkan_memory_model_device_scope"
FEATURES = frozenset(
    (
        *SUBGROUP_FEATURES,
        F16,
        BF16,
        STORAGE_16BIT,
        COOPERATIVE_MATRIX,
        VULKAN_MEMORY_MODEL,
        VULKAN_MEMORY_MODEL_DEVICE_SCOPE,
    )
)
# Matrix component types, as metadata and profiles spell them.
COMPONENT_TYPES = ("f16", "bf16", "f32", "f64", "s8", "u8", "s16", "u16", "s32", "u32")
# What the compiler's cooperative matrices may be (descriptor.types builds its types from
# this): A and B of f16 or bf16, accumulators of f16 or f32 (bf16 products: f32 only,
# MATRIX_ACCUMULATORS), rows and cols 8, 16 or 32.
MATRIX_ELEMENTS = {"a": ("f16", "bf16"), "b": ("f16", "bf16"), "acc": ("f16", "f32")}
MATRIX_ACCUMULATORS = {"f16": ("f16", "f32"), "bf16": ("f32",)}  # A/B element -> accumulators
MATRIX_DIMS = (8, 16, 32)
_PREFIX = "cooperative_matrix"
_COOP_RE = re.compile(
    rf"{_PREFIX}\.({'|'.join(COMPONENT_TYPES)})\.({'|'.join(COMPONENT_TYPES)})"
    r"\.([1-9][0-9]{0,3})x([1-9][0-9]{0,3})x([1-9][0-9]{0,3})"
)


def cooperative_matrix(a_type: str, acc_type: str, m: int, n: int, k: int) -> str:
    """The feature name of an M x N x K cooperative-matrix multiply-add with A/B of
    `a_type` and C/result of `acc_type` (ValueError for a type not in COMPONENT_TYPES)."""
    for t in (a_type, acc_type):
        if t not in COMPONENT_TYPES:
            raise ValueError(f"unknown matrix component type {t!r}; one of {COMPONENT_TYPES}")
    return f"{_PREFIX}.{a_type}.{acc_type}.{m}x{n}x{k}"


def parse_cooperative_matrix(name: str) -> tuple[str, str, int, int, int] | None:
    """(a_type, acc_type, M, N, K) of a cooperative-matrix feature name, else None."""
    match = _COOP_RE.fullmatch(name)
    if match is None:
        return None
    a, acc, m, n, k = match.groups()
    return a, acc, int(m), int(n), int(k)


def is_feature(name: object) -> bool:
    """Whether `name` is a feature name of this vocabulary."""
    return isinstance(name, str) and (
        name in FEATURES or parse_cooperative_matrix(name) is not None
    )
