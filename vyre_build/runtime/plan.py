"""What a call and a buffer are before a device runs them, as pure data and functions that
name no Device (device.py and calls.py both import them; this module imports neither):
the host dtype tables, the checks of `Device.buffer`'s arguments, a dispatch's pieces
past the per-axis limits, the Plan of a call (made by calls.py, dispatched by
Device.run) and what Device.run reads of the kernel it dispatches.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from vyre_build.bundle.metadata import SCALAR_DTYPES, VECTOR_DTYPES, KernelMeta
from vyre_build.core import bfloat16
from vyre_build.core.errors import DispatchError
from vyre_build.core.scalars import HOST_SCALARS

# The host dtype of each buffer scalar (little-endian, as devices store them), and its name.
DTYPES: dict[str, np.dtype[Any]] = {
    s.name: np.dtype(s.host).newbyteorder("<") for s in HOST_SCALARS
}
# what messages call each host type (bf16 travels as its uint16 bit patterns)
NP_NAMES = {s.name: s.host for s in HOST_SCALARS} | {"bf16": "bfloat16 (uint16 bits)"}
_KIND = {v: k for k, v in DTYPES.items()}


def host_array(value: Any) -> Any:
    """`value`, or an ml_dtypes bfloat16 array (JAX, TensorFlow) seen as the uint16 bit
    patterns the bf16 buffers hold (a view: writes land in the caller's array)."""
    bits = bfloat16.as_bits(value) if isinstance(value, np.ndarray) else None
    return value if bits is None else bits


# (pipeline, binding set, workgroup counts) of one dispatch (a split dispatch's piece has
# the pipeline specialised for its base workgroup).
Job = tuple[Any, Any, tuple[int, int, int]]


def is_shape(shape: object) -> bool:
    """A non-empty tuple of positive ints."""
    return (
        isinstance(shape, tuple)
        and bool(shape)
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in shape)
    )


def buffer_spec(
    data: npt.NDArray[Any] | int | tuple[int, ...], dtype: str | None
) -> tuple[str, tuple[int, ...], bytes | None]:
    """(host scalar type, shape, the bytes to upload or None to zero-fill) of a buffer
    made by `Device.buffer(data, dtype)`; DispatchError for arguments it refuses. A
    vector dtype allocates `data` vectors: the shape gains their component count."""
    data = host_array(data)
    if isinstance(data, np.ndarray):
        kind = _KIND.get(data.dtype)
        if kind is None or dtype not in (None, kind):
            raise DispatchError(
                f"Device.buffer: array must be float32, int32, uint32, float16 or bfloat16"
                f"{' matching dtype=' + repr(dtype) if dtype else ''}, "
                f"got {data.dtype}"
            )
        if data.size == 0:
            raise DispatchError(
                "Device.buffer: array is empty; a storage buffer needs >= 1 element"
            )
        return kind, tuple(data.shape), np.ascontiguousarray(data).tobytes()
    given = (data,) if isinstance(data, int) and not isinstance(data, bool) else data
    if dtype not in SCALAR_DTYPES and dtype not in VECTOR_DTYPES:
        raise DispatchError(
            f"Device.buffer: dtype must be f32, i32, u32, f16, bf16 or a vector "
            f"type (vec4f, ...) when allocating by length, got {dtype!r}"
        )
    if not is_shape(given) or not isinstance(given, tuple):
        raise DispatchError(
            f"Device.buffer: expected a numpy array, a positive length or a shape, got {data!r}"
        )
    shape: tuple[int, ...] = given
    scalar, per = VECTOR_DTYPES.get(dtype, (dtype, 1))
    return scalar, shape + ((per,) if per > 1 else ()), None


def split_dispatch(
    counts: tuple[int, int, int], limits: tuple[int, int, int]
) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """(base workgroup, workgroup counts) of each piece of a dispatch of `counts` workgroups
    cut to at most `limits` per axis, x fastest."""
    ranges = [
        [(b, min(limit, total - b)) for b in range(0, total, limit)]
        for total, limit in zip(counts, limits)
    ]
    return [
        ((bx, by, bz), (nx, ny, nz))
        for bz, nz in ranges[2]
        for by, ny in ranges[1]
        for bx, nx in ranges[0]
    ]


class Resident(Protocol):
    """A buffer already on a device: device.py's DeviceBuffer (which names its Device, so
    this module cannot name it), bound by Device.run as it is."""

    @property
    def dtype(self) -> str: ...

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def count(self) -> int: ...


class BufferArg(NamedTuple):
    """One storage-buffer binding of a call: `source` is a numpy array, a DeviceBuffer, or
    None for a "w" buffer the runtime allocates (zero-filled) with `shape`; `dtype` is the
    host scalar type and `elements` the number of kernel elements (vectors count once)."""

    name: str
    binding: int
    dtype: str
    access: str
    source: np.ndarray[Any, Any] | Resident | None
    elements: int
    shape: tuple[int, ...]


class Plan(NamedTuple):
    """A checked call: buffers in binding order, the packed uniform block, workgroup counts
    per axis, the names of the buffers the kernel writes (what a call returns), whether
    the counts exceed the device's per-axis limits (the backend splits it), and the entry
    point dispatched ("main", or the coarse one where the sizes allow)."""

    buffers: tuple[BufferArg, ...]
    uniform_binding: int | None
    uniform: bytes | None
    workgroups: tuple[int, int, int]
    written: tuple[str, ...]
    split: bool
    entry: str


class Dispatched(Protocol):
    """What Device.run reads of the kernel it dispatches (kernel.py's Kernel, made with
    a device: the refusal it may carry was raised before its plan was made)."""

    @property
    def meta(self) -> KernelMeta: ...

    @property
    def code(self) -> str | bytes: ...
