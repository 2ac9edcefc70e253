"""Argument checking, grid and uniform packing for one call: pure host code over the
metadata record (docs/descriptor-conventions.md); raises DispatchError before the device."""

from __future__ import annotations

import math
import struct
from collections import namedtuple

import numpy as np

from vyre_build.errors import DispatchError

DTYPES = {"f32": np.dtype("<f4"), "i32": np.dtype("<i4"), "u32": np.dtype("<u4")}
NP_NAMES = {"f32": "float32", "i32": "int32", "u32": "uint32"}
_PACK = {"f32": "<f", "i32": "<i", "u32": "<I"}
_INT_RANGE = {"i32": (-(2**31), 2**31 - 1), "u32": (0, 2**32 - 1)}
_F32_MAX = float(np.finfo(np.float32).max)
# Vector element types: a vec4f buffer is a float32 array holding 4 values per element.
VECTORS = {f"vec{n}{t[0]}": (t, n) for t in DTYPES for n in (2, 4)}
# One storage-buffer binding of a call: `source` is a numpy array, a DeviceBuffer, or None
# for a "w" buffer the runtime allocates (zero-filled) with `shape`; `dtype` is the host
# scalar type and `count` the number of kernel elements (vectors count once).
BufferArg = namedtuple("BufferArg", "name binding dtype access source count shape")
# A checked call: buffers in binding order, packed uniform block, workgroup counts, and
# the names of the buffers the kernel writes (what a call returns).
Plan = namedtuple("Plan", "buffers uniform_binding uniform workgroups written")


def _fail(kid: str, message: str, arg: str | None = None) -> DispatchError:
    # "Kernel 'k': message"; with `arg`, "Kernel 'k': argument 'arg' message".
    if arg is not None:
        message = f"argument {arg!r} {message}"
    return DispatchError(f"Kernel {kid!r}: {message}")


def check_meta(meta: dict) -> None:
    """Refuse a metadata record that lacks what dispatch needs (names the field)."""
    if not isinstance(meta, dict):
        raise DispatchError(f"kernel metadata must be a dict, got {type(meta).__name__}")
    kid = meta.get("id") or meta.get("name") or "<unnamed>"
    for key in ("name", "workgroup_size", "bindings"):
        if key not in meta:
            raise _fail(kid, f"metadata has no {key!r} field")
    wg = meta["workgroup_size"]
    if (
        not isinstance(wg, (list, tuple))
        or not 1 <= len(wg) <= 3
        or not all(isinstance(v, int) and v >= 1 for v in wg)
    ):
        raise _fail(kid, f"metadata workgroup_size must be 1-3 positive ints, got {wg!r}")
    names = [b.get("name") for b in meta["bindings"]]
    for b, name in zip(meta["bindings"], names):
        kind, dtype, offset = b.get("kind"), b.get("dtype"), b.get("offset")
        if not isinstance(name, str) or names.count(name) > 1:
            why = f"binding name {name!r} is missing or repeated"
        elif dtype not in DTYPES and not (kind == "buffer" and dtype in VECTORS):
            why = f"binding {name!r} has unknown dtype {dtype!r}"
        elif kind not in ("buffer", "scalar"):
            why = f"binding {name!r} has unknown kind {kind!r}"
        elif kind == "buffer" and (
            b.get("access") not in ("r", "w", "rw") or not isinstance(b.get("binding"), int)
        ):
            why = f"buffer {name!r} needs access r|w|rw and a binding"
        elif kind == "scalar" and not (isinstance(offset, int) and offset % 4 == 0):
            why = f"scalar {name!r} needs a 4-byte aligned offset"
        elif kind == "scalar" and not isinstance(meta.get("uniform"), dict):
            why = f"has scalar {name!r} but no uniform block"
        else:
            continue
        raise _fail(kid, "metadata " + why)


def _describe(value) -> str:
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, np.dtype):
        return str(dtype) if dtype.isnative else dtype.str
    return type(value).__name__


def is_shape(shape) -> bool:
    """A non-empty tuple of positive ints."""
    return (
        isinstance(shape, tuple)
        and bool(shape)
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in shape)
    )


def _check_buffer(kid: str, b: dict, value, device) -> BufferArg:
    name, access = b["name"], b["access"]
    dtype, per = VECTORS.get(b["dtype"], (b["dtype"], 1))
    want = NP_NAMES[dtype]
    if hasattr(value, "read") and hasattr(value, "access") and hasattr(value, "device"):
        if value.device is not device:
            raise _fail(
                kid,
                f"is a DeviceBuffer of another device ({value.device.backend}: "
                f"{value.device.name}); this kernel runs on {device.backend}: "
                f"{device.name}",
                name,
            )
        if value.released:
            raise _fail(kid, "is a released DeviceBuffer", name)
        if value.dtype != dtype:
            raise _fail(
                kid, f"must be a {want} buffer, got a {NP_NAMES[value.dtype]} DeviceBuffer", name
            )
        if access != "r" and value.access == "r":
            raise _fail(
                kid,
                f"is written by the kernel (access {access!r}) but the "
                "DeviceBuffer was created read-only",
                name,
            )
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
        source, count, shape = np.ascontiguousarray(value), int(value.size), tuple(value.shape)
    if count % per:
        raise _fail(
            kid,
            f"is a buffer of {b['dtype']}: it needs a multiple of {per} {want} values, got {count}",
            name,
        )
    if count * 4 > device.max_buffer_bytes:
        raise _fail(
            kid,
            f"is {count * 4} bytes, more than the device's storage buffer binding "
            f"limit of {device.max_buffer_bytes} bytes",
            name,
        )
    return BufferArg(name, b["binding"], dtype, access, source, count // per, shape)


def _check_scalar(kid: str, b: dict, value):
    name, dtype = b["name"], b["dtype"]
    if isinstance(value, (bool, np.bool_)):
        raise _fail(kid, f"must be a {dtype} scalar, got bool", name)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if dtype == "f32":
        if not isinstance(value, (int, float, np.integer, np.floating)):
            raise _fail(kid, f"must be a float scalar, got {_describe(value)}", name)
        value = float(value)
        if math.isfinite(value) and abs(value) > _F32_MAX:
            raise _fail(kid, f"= {value!r} is out of range for f32", name)
        return value
    if not isinstance(value, (int, np.integer)):
        raise _fail(kid, f"must be an integer ({dtype}), got {_describe(value)} {value!r}", name)
    lo, hi = _INT_RANGE[dtype]
    if not lo <= int(value) <= hi:
        raise _fail(kid, f"= {int(value)} is out of range for {dtype} [{lo}, {hi}]", name)
    return int(value)


def _invocations(kid: str, meta: dict, grid, buffers: dict, scalars: dict) -> list:
    if grid is not None:
        axes = (grid,) if isinstance(grid, int) else grid
        if (
            not isinstance(axes, (tuple, list))
            or not 1 <= len(axes) <= 3
            or not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                for v in axes
            )
        ):
            raise _fail(
                kid,
                "grid= must be a non-negative int or a tuple of 1-3 of them "
                f"(invocations per axis), got {grid!r}",
            )
        return [int(v) for v in axes]
    entries = list(meta.get("grid") or [])
    if not entries:
        written = [a.name for a in buffers.values() if a.access != "r"]
        if not written:
            raise _fail(
                kid, "no grid in the metadata and no written buffer to take it from; pass grid="
            )
        entries = written[:1]
    if len(entries) == 1 and entries[0] in buffers:
        # Grid from buffer B: read-only buffers of B's dtype are its elementwise peers and
        # must be at least as long, since a shorter one would silently read zeros.
        src = buffers[entries[0]]
        for arg in buffers.values():
            if (
                arg.name != src.name
                and arg.access == "r"
                and arg.dtype == src.dtype
                and arg.count < src.count
            ):
                raise _fail(
                    kid,
                    f"has {arg.count} elements but the grid covers {src.count} "
                    f"(the length of {src.name!r}); pass at least {src.count} or give "
                    "grid= explicitly",
                    arg.name,
                )
    axes = []
    for entry in entries:
        if isinstance(entry, int) and not isinstance(entry, bool):
            axes.append(entry)
        elif entry in buffers:
            axes.append(buffers[entry].count)
        elif entry not in scalars:
            raise _fail(kid, f"metadata grid entry {entry!r} names no parameter")
        elif isinstance(scalars[entry], float) or scalars[entry] < 0:
            raise _fail(
                kid,
                f"grid comes from scalar {entry!r} = {scalars[entry]!r}, which "
                "must be a non-negative integer",
            )
        else:
            axes.append(scalars[entry])
    return axes


def plan_call(meta: dict, args: dict, grid, device) -> Plan:
    """Check `args` against the bindings (`device` for limits) and compute the dispatch."""
    kid, bindings = meta.get("id") or meta["name"], meta["bindings"]
    names = [b["name"] for b in bindings]
    extra, missing = sorted(set(args) - set(names)), [n for n in names if n not in args]
    if extra:
        import difflib  # only on this error path: keeps the runtime's import small

        close = difflib.get_close_matches(extra[0], missing or names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise _fail(kid, f"unexpected argument {extra[0]!r}{hint}; it takes {', '.join(names)}")
    if missing:
        raise _fail(
            kid,
            f"missing argument{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}; it takes {', '.join(names)}",
        )
    buffers, scalars = {}, {}
    for b in bindings:  # in binding order, so the first bad argument is the one reported
        if b["kind"] == "buffer":
            buffers[b["name"]] = _check_buffer(kid, b, args[b["name"]], device)
        else:
            scalars[b["name"]] = _check_scalar(kid, b, args[b["name"]])
    invocations = _invocations(kid, meta, grid, buffers, scalars) + [1, 1]  # 3 or more
    wg = (*meta["workgroup_size"], 1, 1)[:3]
    workgroups = tuple(-(-n // w) for n, w in zip(invocations, wg))
    for axis, (n, count) in enumerate(zip(invocations, workgroups)):
        if count > device.max_workgroups:
            raise _fail(
                kid,
                f"grid needs {count} workgroups on axis {'xyz'[axis]} ({n} "
                f"invocations / {wg[axis]} per workgroup), more than the device limit "
                f"of {device.max_workgroups} (max_compute_workgroups_per_dimension)",
            )
    ordered = tuple(sorted(buffers.values(), key=lambda a: a.binding))
    uniform = pack_uniform(meta, scalars) if scalars else None
    written = tuple(a.name for a in ordered if a.access != "r")
    return Plan(
        ordered, meta["uniform"]["binding"] if scalars else None, uniform, workgroups, written
    )


def pack_uniform(meta: dict, scalars: dict) -> bytes:
    """Scalars little-endian at their metadata offsets, padded to a multiple of 16 bytes."""
    ends = [b["offset"] + 4 for b in meta["bindings"] if b["kind"] == "scalar"]
    size = max([int(meta["uniform"].get("size") or 0)] + ends)
    block = bytearray(-(-size // 16) * 16)
    for b in meta["bindings"]:
        if b["kind"] == "scalar":
            struct.pack_into(_PACK[b["dtype"]], block, b["offset"], scalars[b["name"]])
    return bytes(block)
