"""The scalar types, one row each, with every spelling of them in one place: the kernel
language's name, the descriptor DataType, the WGSL spelling, the bytes per element on the
host and the host (numpy) dtype. The type vocabulary (`vyre_build.descriptor.types`) builds
its scalar and vector rows from these; the metadata reader (`bundle/metadata.py`), the
runtime's buffer dtypes (`runtime/plan.py`) and the CPU reference (`reference/values.py`) read
their host sizes and dtypes from here instead of tables of their own.

Standard library only: the runtime imports it without the compiler (and without numpy's
types: `host` is a numpy dtype *name*, `numpy.dtype(row.host)` the dtype).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "HOST_ORDER",
    "HOST_SCALARS",
    "SCALARS",
    "Scalar",
    "VECTOR_COUNTS",
    "vector_name",
]


@dataclass(frozen=True)
class Scalar:
    name: str  # "u32": the kernel language's, the IR's and the metadata's name
    datatype: str  # the descriptor DataType variant ("U32")
    kind: str  # "uint" | "sint" | "float" | "bool"
    wgsl: str  # WGSL type spelling
    size: int  # bytes per element in a host buffer (0: not host-shareable)
    host: str  # the numpy dtype name of a value on the host ("uint32"; "bool" for bool)
    letter: str  # a vector's name is "vec" + count + this letter ("": no vectors)
    # arithmetic, comparisons and math are defined on it; bf16 is not: a storage and
    # cooperative-matrix type that converts to and from f32 (SPV_KHR_bfloat16 has no more)
    arith: bool = True


SCALARS: tuple[Scalar, ...] = (
    Scalar("bool", "Bool", "bool", "bool", 0, "bool", ""),
    Scalar("i32", "I32", "sint", "i32", 4, "int32", "i"),
    Scalar("u32", "U32", "uint", "u32", 4, "uint32", "u"),
    Scalar("f32", "F32", "float", "f32", 4, "float32", "f"),
    # WGSL `enable f16;`, SPIR-V Float16 (+16-bit storage)
    Scalar("f16", "F16", "float", "f16", 2, "float16", "h"),
    # bfloat16 (SPIR-V BFloat16KHR; WGSL has none): 8 exponent bits like f32, 8 significant
    # bits. numpy has no bfloat16, so the host holds its bit patterns as uint16 (an
    # ml_dtypes.bfloat16 array is taken as those bits; runtime.bf16 converts).
    Scalar("bf16", "BF16", "float", "", 2, "uint16", "bf", arith=False),
)
# No 3-component vectors: their storage alignment differs from host packing.
VECTOR_COUNTS = (2, 4)
# The scalars a host buffer or uniform may hold, in the order the metadata, its errors and
# the runtime list them.
HOST_ORDER = ("f32", "i32", "u32", "f16", "bf16")
_BY_NAME = {s.name: s for s in SCALARS}
HOST_SCALARS: tuple[Scalar, ...] = tuple(_BY_NAME[n] for n in HOST_ORDER)


def vector_name(scalar: Scalar, count: int) -> str:
    """The vector type of `count` components of `scalar`: "vec4f"."""
    return f"vec{count}{scalar.letter}"
