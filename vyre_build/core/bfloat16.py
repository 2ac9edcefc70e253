"""bfloat16 values as bit patterns: the one conversion every layer uses.

A bf16 is the high half of an f32 (sign, 8 exponent bits, 7 stored significand bits).
f32 -> bf16 rounds to nearest, ties to even (what OpFConvert gives on Vulkan devices and
what torch and ml_dtypes do); a NaN stays a NaN (quiet, sign kept); values past the largest
bf16 (3.3895e38) round to infinity. bf16 -> f32 is exact.

numpy has no bfloat16, so the host, the CPU reference and the runtime hold bf16 values as
their uint16 bit patterns. The array functions take and give numpy arrays (numpy is
imported by the caller); the scalar ones are standard library only (the SPIR-V emitter's
constants).
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["bits_of", "value_of", "from_f32", "to_f32", "as_bits"]


def bits_of(value: float) -> int:
    """The bf16 bit pattern nearest to f32 `value` (ties to even), as an int."""
    (u,) = struct.unpack("<I", struct.pack("<f", value))
    if (u & 0x7F800000) == 0x7F800000 and u & 0x007FFFFF:  # NaN: quiet, sign kept
        return (u >> 16) | 0x0040
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def value_of(bits: int) -> float:
    """The f32 value of bf16 bit pattern `bits` (exact)."""
    (f,) = struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))
    return float(f)


def from_f32(x: Any) -> Any:
    """uint16 bf16 bit patterns of a float32 array (rounded to nearest, ties to even)."""
    import numpy as np

    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = (u & 0x7F800000) == 0x7F800000
    nan &= (u & 0x007FFFFF) != 0
    rounded = (u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16
    out = np.where(nan, (u >> 16) | np.uint32(0x0040), rounded)
    return out.astype(np.uint16)


def to_f32(bits: Any) -> Any:
    """The float32 values of an array of uint16 bf16 bit patterns (exact)."""
    import numpy as np

    b = np.asarray(bits)
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def as_bits(array: Any) -> Any | None:
    """An array of bf16 values seen as its uint16 bit patterns: an ml_dtypes (JAX,
    TensorFlow) `bfloat16` array viewed, without importing ml_dtypes; None for any other
    dtype (a uint16 array is taken as bit patterns by the caller, not here)."""
    dtype = getattr(array, "dtype", None)
    # kind first: numpy's own dtypes are not "V", and dtype.name costs ~2 us (a call's path)
    if dtype is not None and dtype.kind == "V" and dtype.itemsize == 2 and dtype.name == "bfloat16":
        import numpy as np

        return array.view(np.uint16)
    return None
