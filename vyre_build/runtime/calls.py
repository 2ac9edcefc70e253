"""Call planning: argument checks, the dispatch grid and the uniform block of one call, as
pure host code over a checked KernelMeta; raises DispatchError before the device."""

from __future__ import annotations

import math
import struct
from typing import Any, Union

import numpy as np

from vyre_build.bundle.metadata import SCALAR_DTYPES, VECTOR_DTYPES, Binding, KernelMeta
from vyre_build.core.errors import DispatchError
from vyre_build.runtime.device import Device, DeviceBuffer
from vyre_build.runtime.plan import DTYPES, NP_NAMES, BufferArg, Plan, host_array, is_shape

_PACK = {"f32": "<f", "i32": "<i", "u32": "<I", "f16": "<e"}
_INT_RANGE = {"i32": (-(2**31), 2**31 - 1), "u32": (0, 2**32 - 1)}
_FLOAT_MAX = {"f32": float(np.finfo(np.float32).max), "f16": float(np.finfo(np.float16).max)}
_MAX_INVOCATIONS = 2**32 - 1  # per axis: a global id is a u32
Grid = Union[int, tuple[int, ...], None]
Scalar = Union[int, float]


def _fail(kid: str, message: str, arg: str | None = None) -> DispatchError:
    # "Kernel 'k': message"; with `arg`, "Kernel 'k': argument 'arg' message".
    if arg is not None:
        message = f"argument {arg!r} {message}"
    return DispatchError(f"Kernel {kid!r}: {message}")


def _describe(value: object) -> str:
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, np.dtype):
        return str(dtype) if dtype.isnative else dtype.str
    return type(value).__name__


def _not_scalar(value: object) -> str:
    # What a value given for a scalar parameter is, where it is not a number.
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        kind = "a DeviceBuffer" if isinstance(value, DeviceBuffer) else "an array"
        return f"{kind} of {_describe(value)}, shape {shape} (a scalar parameter takes one number)"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} (a scalar parameter takes one number)"
    if value is None or isinstance(value, (str, bytes)):
        return "None" if value is None else type(value).__name__
    return f"{_describe(value)} {value!r}"


def _check_device_buffer(kid: str, b: Binding, value: DeviceBuffer, device: Device) -> None:
    name, want = b.name, NP_NAMES[host_type(b.dtype)[0]]
    if value.device is not device:
        raise _fail(
            kid,
            f"is a DeviceBuffer of another device ({value.device.backend}: "
            f"{value.device.name}); this kernel runs on {device.backend}: {device.name}",
            name,
        )
    if value.released:
        raise _fail(kid, "is a released DeviceBuffer", name)
    if value.dtype != host_type(b.dtype)[0]:
        raise _fail(
            kid, f"must be a {want} buffer, got a {NP_NAMES[value.dtype]} DeviceBuffer", name
        )
    if b.access != "r" and value.access == "r":
        raise _fail(
            kid,
            f"is written by the kernel (access {b.access!r}) but the DeviceBuffer was "
            "created read-only",
            name,
        )


def host_type(dtype: str) -> tuple[str, int]:
    """(host scalar type, values per element) of a buffer dtype."""
    return VECTOR_DTYPES.get(dtype, (dtype, 1))


def _check_buffer(kid: str, b: Binding, value: object, device: Device) -> BufferArg:
    name, access = b.name, b.access or "r"
    dtype, per = host_type(b.dtype)
    want = NP_NAMES[dtype]
    source: np.ndarray[Any, Any] | DeviceBuffer | None
    if not isinstance(value, (DeviceBuffer, np.ndarray, int, tuple)):
        try:
            adopted = device.adopt(value, dtype, access)
        except ValueError as exc:
            raise _fail(kid, str(exc), name) from None
        if adopted is not None:
            value = adopted
    value = host_array(value)  # a bfloat16 array: its bits
    if isinstance(value, DeviceBuffer):
        _check_device_buffer(kid, b, value, device)
        source, count, shape = value, value.count, value.shape
    elif isinstance(value, (int, tuple)) and not isinstance(value, bool):
        shape, source = ((value,) if isinstance(value, int) else value), None
        if access != "w":
            raise _fail(
                kid,
                f"is read by the kernel (access {access!r}): pass a {want} array, not a length",
                name,
            )
        if not is_shape(shape):
            raise _fail(
                kid,
                f"argument {name!r}: an output length must be a positive int or a "
                f"shape of positive ints, got {value!r}",
            )
        # An output length counts vectors; a shape is the host array's, whose last axis is
        # the component count (added when missing: (n,) and (n, 4) both mean n vec4s).
        if per > 1 and (len(shape) == 1 or shape[-1] != per):
            shape += (per,)
        count = math.prod(shape)
    else:
        if not isinstance(value, np.ndarray) or value.dtype != DTYPES[dtype]:
            raise _fail(kid, f"must be a {want} array, got {_describe(value)}", name)
        if value.size == 0:
            raise _fail(kid, "is empty; a storage buffer needs >= 1 element", name)
        if access != "r" and not value.flags.writeable:
            # A call writes a written buffer's result back into the array passed.
            instead = "a length, " if access == "w" else ""
            raise _fail(
                kid,
                f"is a read-only array (flags.writeable is False) but the kernel writes it "
                f"(access {access!r}) and a call writes its result back into the array "
                f"passed; pass a writable array ({name}.copy()), {instead}or a DeviceBuffer",
                name,
            )
        source, count, shape = np.ascontiguousarray(value), int(value.size), tuple(value.shape)
    if count % per:
        raise _fail(
            kid,
            f"is a buffer of {b.dtype}: it needs a multiple of {per} {want} values, got {count}",
            name,
        )
    nbytes = count * SCALAR_DTYPES[dtype]
    if nbytes > device.max_buffer_bytes:
        raise _fail(
            kid,
            f"is {nbytes} bytes, more than the device's storage buffer binding "
            f"limit of {device.max_buffer_bytes} bytes",
            name,
        )
    return BufferArg(name, b.binding, dtype, access, source, count // per, shape)


def _check_scalar(kid: str, b: Binding, value: object) -> Scalar:
    name, dtype = b.name, b.dtype
    if isinstance(value, (bool, np.bool_)):
        raise _fail(kid, f"must be a {dtype} scalar, got bool", name)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if dtype in _FLOAT_MAX:
        if not isinstance(value, (int, float, np.integer, np.floating)):
            raise _fail(kid, f"must be a float scalar, got {_not_scalar(value)}", name)
        top = _FLOAT_MAX[dtype]
        # Compared before converting: a huge int or a long double would overflow float().
        if (isinstance(value, (int, np.integer)) and abs(int(value)) > top) or (
            isinstance(value, np.floating) and np.isfinite(value) and abs(value) > top
        ):
            raise _fail(kid, f"= {_show_number(value)} is out of range for {dtype}", name)
        number = float(value)
        if math.isfinite(number) and abs(number) > top:
            raise _fail(kid, f"= {number!r} is out of range for {dtype}", name)
        return number
    if not isinstance(value, (int, np.integer)):
        raise _fail(kid, f"must be an integer ({dtype}), got {_not_scalar(value)}", name)
    lo, hi = _INT_RANGE[dtype]
    if not lo <= int(value) <= hi:
        raise _fail(kid, f"= {_show_number(value)} is out of range for {dtype} [{lo}, {hi}]", name)
    return int(value)


def _show_number(value: object) -> str:
    # A bounded text of an out-of-range number (no int-to-str of a huge integer).
    if isinstance(value, (int, np.integer)):
        number = int(value)
        return str(number) if abs(number) < 10**30 else f"an integer of {number.bit_length()} bits"
    if isinstance(value, np.floating):
        return np.format_float_scientific(value, precision=6, trim="-")
    return repr(value)


def _grid_override(kid: str, grid: object) -> list[int]:
    axes = (grid,) if isinstance(grid, int) else grid
    if (
        not isinstance(axes, (tuple, list))
        or not 1 <= len(axes) <= 3
        or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0 for v in axes
        )
    ):
        raise _fail(
            kid,
            "grid= must be a non-negative int or a tuple of 1-3 of them "
            f"(invocations per axis), got {grid!r}",
        )
    return [int(v) for v in axes]


def _invocations(
    kid: str,
    meta: KernelMeta,
    grid: object,
    buffers: dict[str, BufferArg],
    scalars: dict[str, Scalar],
) -> list[int]:
    if grid is not None:
        return _grid_override(kid, grid)
    entries: list[int | str] = list(meta.grid)
    if not entries:
        written = [a.name for a in buffers.values() if a.access != "r"]
        if not written:
            raise _fail(
                kid, "no grid in the metadata and no written buffer to take it from; pass grid="
            )
        entries = [written[0]]
    if len(entries) == 1 and entries[0] in buffers:
        # Grid from buffer B: read-only buffers of B's element type are taken to be indexed
        # by the grid index, so they must be at least as long (a shorter one would silently
        # read zeros), unless the kernel declares them any_length.
        src = buffers[str(entries[0])]
        types = {b.name: b.dtype for b in meta.buffers}
        free = {b.name for b in meta.buffers if b.any_length}
        for arg in buffers.values():
            if (
                arg.name != src.name
                and arg.access == "r"
                and arg.name not in free
                and types[arg.name] == types[src.name]
                and arg.elements < src.elements
            ):
                raise _fail(
                    kid,
                    f"has {arg.elements} elements but the grid covers {src.elements} "
                    f"(the length of {src.name!r}); pass at least {src.elements} or give "
                    f"grid= explicitly (a kernel that does not index {arg.name!r} by the "
                    f'grid index declares @kernel(..., any_length="{arg.name}"))',
                    arg.name,
                )
    axes = []
    for entry in entries:
        if isinstance(entry, int):
            axes.append(entry)
        elif entry in buffers:
            axes.append(buffers[entry].elements)
        elif int(scalars[entry]) < 0:
            raise _fail(
                kid,
                f"grid comes from scalar {entry!r} = {scalars[entry]!r}, which "
                "must be a non-negative integer",
            )
        else:
            axes.append(int(scalars[entry]))
    return axes


def workgroup_counts(
    kid: str,
    invocations: list[int],
    workgroup_size: tuple[int, int, int],
    limits: tuple[int, int, int],
    no_split: str | None,
) -> tuple[tuple[int, int, int], bool]:
    """Workgroups per axis for `invocations`, and whether they exceed `limits` (the device's
    maximum per axis) so that the dispatch must be split; `no_split` says why this kernel
    or device cannot be split (a DispatchError naming the limit then), None if it can."""
    invocations = (invocations + [1, 1])[:3]
    counts = tuple(-(-n // w) for n, w in zip(invocations, workgroup_size))
    split = False
    for axis, (n, count, limit) in enumerate(zip(invocations, counts, limits)):
        if n > _MAX_INVOCATIONS:
            raise _fail(
                kid,
                f"grid has {n} invocations on axis {'xyz'[axis]}, more than "
                f"{_MAX_INVOCATIONS} (a global id is a u32)",
            )
        if count > limit:
            if no_split is not None:
                raise _fail(
                    kid,
                    f"grid needs {count} workgroups on axis {'xyz'[axis]} ({n} invocations / "
                    f"{workgroup_size[axis]} per workgroup), more than the device's limit of "
                    f"{limit} on {'xyz'[axis]}, and {no_split}",
                )
            split = True
    return (counts[0], counts[1], counts[2]), split


def plan_call(
    meta: KernelMeta, args: dict[str, object], grid: object, device: Device, no_split: str | None
) -> Plan:
    """Check `args` against the bindings (`device` for limits) and compute the dispatch."""
    kid = meta.id
    names = [b.name for b in meta.bindings]
    extra = sorted((k for k in args if k not in names), key=str)
    missing = [n for n in names if n not in args]
    if extra:
        import difflib  # only on this error path: keeps the runtime's import small

        bad = extra[0]
        close = (
            difflib.get_close_matches(bad, missing or names, n=1) if isinstance(bad, str) else []
        )
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise _fail(kid, f"unexpected argument {bad!r}{hint}; it takes {', '.join(names)}")
    if missing:
        raise _fail(
            kid,
            f"missing argument{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}; it takes {', '.join(names)}",
        )
    buffers: dict[str, BufferArg] = {}
    scalars: dict[str, Scalar] = {}
    for b in meta.bindings:  # in binding order, so the first bad argument is the one reported
        if b.kind == "buffer":
            buffers[b.name] = _check_buffer(kid, b, args[b.name], device)
        else:
            scalars[b.name] = _check_scalar(kid, b, args[b.name])
    invocations = _invocations(kid, meta, grid, buffers, scalars)
    entry = "main"
    if device.coarse_entries:
        entry, invocations = _entry(meta, grid, buffers, invocations)
    workgroups, split = workgroup_counts(
        kid, invocations, meta.workgroup_size, device.max_workgroup_count, no_split
    )
    ordered = tuple(sorted(buffers.values(), key=lambda a: a.binding))
    uniform = pack_uniform(meta, scalars) if meta.uniform is not None else None
    written = tuple(a.name for a in ordered if a.access != "r")
    binding = meta.uniform.binding if meta.uniform is not None else None
    return Plan(ordered, binding, uniform, workgroups, written, split, entry)


def _entry(
    meta: KernelMeta, grid: object, buffers: dict[str, BufferArg], invocations: list[int]
) -> tuple[str, list[int]]:
    # The coarse entry (each invocation handles `factor` elements) when the grid is the
    # default one over buffers all of one length, a multiple of the factor: then an
    # invocation's elements are in or out of bounds together, as the plain entry's are.
    coarse = meta.coarse
    if coarse is None or grid is not None or len(meta.grid) > 1:
        return "main", invocations
    if meta.grid and meta.grid[0] not in buffers:
        return "main", invocations
    lengths = {a.elements for a in buffers.values()}
    if len(lengths) != 1 or invocations[0] not in lengths or invocations[0] % coarse.factor:
        return "main", invocations
    return coarse.entry, [invocations[0] // coarse.factor]


def pack_uniform(meta: KernelMeta, scalars: dict[str, Scalar]) -> bytes:
    """The uniform block of the metadata's size, each scalar little-endian at its offset."""
    assert meta.uniform is not None  # noqa: S101 - callers pass kernels with scalars
    block = bytearray(meta.uniform.size)
    for b in meta.scalars:
        struct.pack_into(_PACK[b.dtype], block, b.offset or 0, scalars[b.name])
    return bytes(block)
