"""The library kernels of kernels/lib_*.py as one call each: reduce, scan, matmul, softmax
and layer_norm over numpy arrays or DeviceBuffers.

    from vyre_build.runtime import library, open_bundle

    with open_bundle("dist/kernels.vyrebundle") as bundle:
        total = library.reduce(bundle, x, op="sum")  # a numpy scalar
        prefix = library.scan(bundle, x, exclusive=True)  # a numpy array
        c = library.matmul(bundle, a, b)

Each function takes the kernels as a Bundle (or any mapping of kernel id -> Kernel, such as
a dict of `load_kernel` results), finds its kernels by id (LIBRARY_KERNELS), picks the
grids, keeps its small temporaries per device and thread, and runs its passes in one
`device.batch()`, or in the caller's open batch (the result must then go to `out=`, a
DeviceBuffer). Wrong kernels, types, shapes and sizes are refused with a DispatchError
before anything reaches the device.
"""

from __future__ import annotations

import collections
import contextlib
import math
import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from vyre_build.errors import DispatchError
from vyre_build.runtime.buffers import DTYPES, NP_NAMES, DeviceBuffer
from vyre_build.runtime.device import Device
from vyre_build.runtime.kernel import Kernel

__all__ = [
    "LIBRARY_KERNELS",
    "kernel_ids",
    "layer_norm",
    "matmul",
    "reduce",
    "scan",
    "softmax",
]

Array = Union[npt.NDArray[Any], DeviceBuffer]
Out = Union[npt.NDArray[Any], DeviceBuffer, None]
WG = 256  # the workgroup size of every library kernel
TILE = 128  # lib_matmul: the side of the block of C one workgroup computes
MAX_PARTIALS = 1024  # reduce: workgroups of the first pass (about one wave on an H200)
MAX_BLOCKS = 4096  # scan: blocks, so that one workgroup scans their sums in <= 4 steps
MAX_ROWS = 65535  # softmax, layer_norm: workgroups per dispatch (WebGPU's per-axis limit)
_U32_MAX = 2**32 - 1
_KINDS = {v: k for k, v in DTYPES.items() if k != "f16"}
_NUMERIC = ("f32", "i32", "u32")
_OPS = ("sum", "min", "max")
# The kernel ids each function uses ({op}: the reduction, {t}: the element type), and the
# kernel file that defines each kernel.
LIBRARY_KERNELS = {
    "reduce": ("lib_reduce.{op}_{t}",),
    "scan": ("lib_scan_sums.{t}", "lib_scan_block.{t}"),
    "matmul": ("lib_matmul.f32",),
    "softmax": ("lib_softmax.f32",),
    "layer_norm": ("lib_layer_norm.f32",),
}
_FILES = {
    "lib_reduce": "lib_reduce.py",
    "lib_scan_sums": "lib_scan.py",
    "lib_scan_block": "lib_scan.py",
    "lib_matmul": "lib_matmul.py",
    "lib_softmax": "lib_norm.py",
    "lib_layer_norm": "lib_norm.py",
}


def kernel_ids() -> tuple[str, ...]:
    """Every kernel id the functions here use, sorted (e.g. for `bundle.warm(...)`)."""
    ids = {
        template.format(op=op, t=t)
        for templates in LIBRARY_KERNELS.values()
        for template in templates
        for op in _OPS
        for t in _NUMERIC
    }
    return tuple(sorted(ids))


def _fail(fn: str, message: str) -> DispatchError:
    return DispatchError(f"library.{fn}: {message}")


def _describe(value: object) -> str:
    # What a refused argument is, in the words of the messages.
    if isinstance(value, DeviceBuffer):
        ro = " (read-only)" if value.access == "r" else ""
        return f"a DeviceBuffer of {NP_NAMES[value.dtype]}, shape {value.shape}{ro}"
    if isinstance(value, np.ndarray):
        dtype = str(value.dtype) if value.dtype.isnative else value.dtype.str
        ro = "" if value.flags.writeable else " (read-only)"
        return f"an array of {dtype}, shape {tuple(value.shape)}{ro}"
    return type(value).__name__


def _kind(fn: str, name: str, value: object, kinds: tuple[str, ...]) -> str:
    """The element type of array argument `name`: a non-empty numpy array or a DeviceBuffer
    holding one of `kinds` (refused otherwise; nothing here needs the device)."""
    if isinstance(value, DeviceBuffer):
        kind = value.dtype
    elif isinstance(value, np.ndarray):
        kind = _KINDS.get(value.dtype, "")
        if kind in kinds and value.size == 0:
            raise _fail(fn, f"{name} is empty")
    else:
        raise _fail(
            fn, f"{name} must be a numpy array or a DeviceBuffer, got {type(value).__name__}"
        )
    if kind not in kinds:
        allowed = ", ".join(NP_NAMES[k] for k in kinds[:-1])
        allowed = f"{allowed} or {NP_NAMES[kinds[-1]]}" if allowed else NP_NAMES[kinds[-1]]
        raise _fail(fn, f"{name} must be {allowed}, got {_describe(value)}")
    return kind


def _shape(value: Array) -> tuple[int, ...]:
    return value.shape if isinstance(value, DeviceBuffer) else tuple(value.shape)


class _Call:
    """One library call: its kernels (all on one device) and the checks of its arguments
    against that device, all made before anything reaches it."""

    def __init__(self, fn: str, kernels: object, ids: list[str]):
        if not isinstance(kernels, Mapping):
            raise _fail(
                fn,
                "kernels must be a Bundle or a mapping of kernel id -> Kernel, got "
                f"{type(kernels).__name__}",
            )
        self.fn = fn
        self.k: dict[str, Kernel] = {}
        for kid in ids:
            if kid not in kernels:
                where = _FILES[kid.split(".")[0]]
                raise _fail(
                    fn, f"no kernel {kid!r} in the kernels given (build kernels/{where} into them)"
                )
            found = kernels[kid]
            if not isinstance(found, Kernel):
                raise _fail(fn, f"kernels[{kid!r}] is a {type(found).__name__}, not a Kernel")
            if self.k and found.device is not self.device:
                raise _fail(fn, f"kernels {ids[0]!r} and {kid!r} are on different devices")
            self.k[kid] = found
            self.device: Device = found.device

    def where(self) -> str:
        return f"{self.device.backend}: {self.device.name}"

    def place(self, name: str, value: Array) -> int:
        """The element count of array argument `name` (type checked by _kind), refused when
        it is a DeviceBuffer of another device or released, or too large."""
        if isinstance(value, DeviceBuffer):
            if value.released:
                raise _fail(self.fn, f"{name} is a released DeviceBuffer")
            if value.device is not self.device:
                raise _fail(
                    self.fn,
                    f"{name} is a DeviceBuffer of another device ({value.device.backend}: "
                    f"{value.device.name}); the kernels run on {self.where()}",
                )
        count = math.prod(_shape(value))
        if count > _U32_MAX:
            raise _fail(self.fn, f"{name} has {count} elements, more than {_U32_MAX}")
        padded = -(-count // 4) * 16  # uploaded as whole vec4s of 4-byte values
        if isinstance(value, np.ndarray) and padded > self.device.max_buffer_bytes:
            raise _fail(
                self.fn,
                f"{name} needs {padded} bytes, more than the device's storage buffer "
                f"limit of {self.device.max_buffer_bytes} bytes",
            )
        return count

    def output(self, out: object, kind: str, shape: tuple[int, ...], arrays: bool = True) -> None:
        """Refuse `out` unless it is None, or a writable numpy array (if `arrays`) or
        DeviceBuffer (of this device) of `kind` in `shape`; inside the caller's batch, a
        DeviceBuffer."""
        what = "an array or a DeviceBuffer" if arrays else "a DeviceBuffer"
        want = f"{what} of {NP_NAMES[kind]}, shape {shape}"
        if not isinstance(out, DeviceBuffer) and self.in_batch():
            raise _fail(
                self.fn,
                "called inside device.batch(): pass out= a DeviceBuffer (reading a result "
                "back waits for the batch's end)",
            )
        if out is None:
            return
        if isinstance(out, np.ndarray) and arrays:
            if out.dtype != DTYPES[kind] or out.shape != shape or not out.flags.writeable:
                raise _fail(self.fn, f"out must be {want}, got {_describe(out)}")
            return
        if not isinstance(out, DeviceBuffer):
            raise _fail(self.fn, f"out must be {want}, got {_describe(out)}")
        self.place("out", out)
        if out.dtype != kind or out.shape != shape or out.access == "r":
            raise _fail(self.fn, f"out must be {want}, got {_describe(out)}")

    def in_batch(self) -> bool:
        return self.device._current_batch() is not None

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """The caller's open batch, else a new one, waited for on exit."""
        if self.in_batch():
            yield
        else:
            with self.device.batch():
                yield

    # -- buffers --

    def upload(self, value: Array) -> tuple[DeviceBuffer, bool]:
        """(a DeviceBuffer of `value`'s values, whether it can be bound as vec4s): an array
        is uploaded padded to whole vec4s, a DeviceBuffer used as it is."""
        if isinstance(value, DeviceBuffer):
            return value, value.count % 4 == 0
        flat = np.ascontiguousarray(value).reshape(-1)
        if flat.size % 4:
            flat = np.concatenate([flat, np.zeros(-flat.size % 4, flat.dtype)])
        return self.device.buffer(flat), True

    def target(self, out: Out, kind: str, count: int) -> tuple[DeviceBuffer, bool]:
        """(the DeviceBuffer the result is written to, whether as vec4s): `out` itself when
        it is a DeviceBuffer, else a new one padded to whole vec4s."""
        if isinstance(out, DeviceBuffer):
            return out, out.count % 4 == 0
        return self.device.buffer(-(-count // 4) * 4, kind), True

    def pair(
        self, buf: DeviceBuffer, vec: bool, kind: str, written: bool
    ) -> tuple[DeviceBuffer, DeviceBuffer]:
        """(vec4 binding, scalar binding) of `buf`. A read buffer is bound twice where it
        holds whole vec4s; a written one only once, the unused binding going to a scratch
        sink (no backend then sees one buffer written through two bindings)."""
        if not written:
            return (buf if vec else self.scratch("zero", kind, 4)), buf
        sink = self.scratch("sink", kind, 4)
        return (buf, sink) if vec else (sink, buf)

    def scratch(self, purpose: str, kind: str, count: int) -> DeviceBuffer:
        """A DeviceBuffer of `count` values kept for this device, thread and purpose:
        "zero" ones are never written; the others hold what the last call left there."""
        key = (threading.get_ident(), purpose, kind, count)
        with _SCRATCH_LOCK:
            kept = _SCRATCH.setdefault(self.device, collections.OrderedDict())
            found = kept.get(key)
            if found is not None and not found.released:
                kept.move_to_end(key)
                return found
        made = self.device.buffer(count, kind)
        with _SCRATCH_LOCK:
            kept[key] = made
            while len(kept) > _SCRATCH_KEPT:
                kept.popitem(last=False)
        return made

    def result(self, buf: DeviceBuffer, out: Out, count: int, shape: tuple[int, ...]) -> Any:
        """`out` when it is the DeviceBuffer written, else the first `count` values of
        `buf` in `shape`, copied into `out` when it is an array."""
        if out is buf:
            return out
        values = buf.read().reshape(-1)[:count].reshape(shape)
        if isinstance(out, np.ndarray):
            out[...] = values
            return out
        return values


# Per device: (thread, purpose, type, count) -> DeviceBuffer, least recently used dropped
# (a dropped one still in use stays alive until its call ends: the call holds it).
_SCRATCH: weakref.WeakKeyDictionary[Device, collections.OrderedDict[tuple[Any, ...], DeviceBuffer]]
_SCRATCH = weakref.WeakKeyDictionary()
_SCRATCH_KEPT = 32
_SCRATCH_LOCK = threading.Lock()


# -- reduce and scan -----------------------------------------------------------------------


def reduce(
    kernels: Mapping[str, Kernel], x: Array, op: str = "sum", *, out: DeviceBuffer | None = None
) -> Any:
    """Reduce every value of `x` to one: its sum (integers wrap), minimum or maximum.

    Arguments:
        kernels: a Bundle (or a mapping of id -> Kernel) holding lib_reduce.{op}_{type}.
        x: a float32, int32 or uint32 numpy array or DeviceBuffer, any shape.
        op: "sum", "min" or "max" (NaNs are not propagated, as on GPUs).
        out: a DeviceBuffer of shape (1,) and x's type to write the result into.
    Returns:
        The result as a numpy scalar of x's type, or `out` when given. An f32 sum is the
        same on every run on one device: partials in a fixed order, no float atomics.
    """
    if op not in _OPS:
        raise _fail("reduce", f"op must be 'sum', 'min' or 'max', got {op!r}")
    kind = _kind("reduce", "x", x, _NUMERIC)
    kid = f"lib_reduce.{op}_{kind}"
    call = _Call("reduce", kernels, [kid])
    n = call.place("x", x)
    call.output(out, kind, (1,), arrays=False)
    kern = call.k[kid]
    with call.batch():
        xb, vin = call.upload(x)
        x4, xs = call.pair(xb, vin, kind, False)
        res = out if out is not None else call.scratch("reduce", kind, 1)
        vectors = n // 4 if vin else n
        groups = min(MAX_PARTIALS, -(-vectors // (WG * 4)))
        if groups <= 1:
            kern(x4=x4, x=xs, partials=res, n=n, vin=int(vin), stride=WG, grid=WG)
        else:
            groups = -(-groups // 4) * 4  # the second pass reads the partials as vec4s
            parts = call.scratch("partials", kind, groups)
            stride = groups * WG
            kern(x4=x4, x=xs, partials=parts, n=n, vin=int(vin), stride=stride, grid=stride)
            kern(x4=parts, x=parts, partials=res, n=groups, vin=1, stride=WG, grid=WG)
    return out if out is not None else res.read()[0]


def scan(
    kernels: Mapping[str, Kernel], x: Array, *, exclusive: bool = False, out: Out = None
) -> Any:
    """The prefix sums of `x` in flat (C) order over the whole array: inclusive
    (out[i] = x[0] + ... + x[i]) or exclusive (x[0] + ... + x[i-1], out[0] = 0).

    Arguments:
        kernels: a Bundle (or a mapping of id -> Kernel) holding lib_scan_sums.{type} and
            lib_scan_block.{type}.
        x: a float32, int32 or uint32 numpy array or DeviceBuffer, any shape (integer sums
            wrap, as numpy's cumsum in that dtype).
        exclusive: exclusive instead of inclusive sums.
        out: an array or DeviceBuffer of x's type and shape to write the sums into.
    Returns:
        The sums as a numpy array of x's shape, or `out` when given.
    """
    if not isinstance(exclusive, bool):
        raise _fail("scan", f"exclusive must be True or False, got {exclusive!r}")
    kind = _kind("scan", "x", x, _NUMERIC)
    call = _Call("scan", kernels, [f"lib_scan_sums.{kind}", f"lib_scan_block.{kind}"])
    n = call.place("x", x)
    shape = _shape(x)
    call.output(out, kind, shape)
    sums_k, block_k = call.k[f"lib_scan_sums.{kind}"], call.k[f"lib_scan_block.{kind}"]
    vectors = -(-n // 4)
    per_block = max(1, -(-vectors // (WG * MAX_BLOCKS)))
    blocks = -(-vectors // (WG * per_block))
    with call.batch():
        xb, vin = call.upload(x)
        ob, vout = call.target(out, kind, n)
        x4, xs = call.pair(xb, vin, kind, False)
        o4, os_ = call.pair(ob, vout, kind, True)
        zero = call.scratch("zero", kind, 4)
        common = dict(x4=x4, x=xs, out4=o4, out=os_, n=n, vin=int(vin), vout=int(vout))
        if blocks == 1:
            block_k(**common, offsets=zero, per_block=per_block, exclusive=int(exclusive), grid=WG)
        else:
            padded = -(-blocks // 4) * 4
            sums = call.scratch("scan sums", kind, padded)
            offsets = call.scratch("scan offsets", kind, padded)
            sums_k(x4=x4, x=xs, sums=sums, n=n, vin=int(vin), per_block=per_block, grid=blocks * WG)
            block_k(
                x4=sums,
                x=sums,
                out4=offsets,
                out=call.scratch("sink", kind, 4),
                n=blocks,
                vin=1,
                vout=1,
                offsets=zero,
                per_block=-(-padded // (4 * WG)),
                exclusive=1,
                grid=WG,
            )
            block_k(
                **common,
                offsets=offsets,
                per_block=per_block,
                exclusive=int(exclusive),
                grid=blocks * WG,
            )
    return call.result(ob, out, n, shape)


# -- matmul --------------------------------------------------------------------------------


def matmul(kernels: Mapping[str, Kernel], a: Array, b: Array, *, out: Out = None) -> Any:
    """C = A @ B in f32 (fp32 FMAs, no TF32), row-major, any sizes.

    Arguments:
        kernels: a Bundle (or a mapping of id -> Kernel) holding lib_matmul.f32.
        a: float32 of shape (M, K), a numpy array or a DeviceBuffer made with that shape.
        b: float32 of shape (K, N), likewise.
        out: a float32 array or DeviceBuffer of shape (M, N) to write C into.
    Returns:
        C as a numpy array of shape (M, N), or `out` when given.
    """
    for name, value in (("a", a), ("b", b)):
        _kind("matmul", name, value, ("f32",))
        if len(_shape(value)) != 2:
            raise _fail("matmul", f"{name} must be 2-D, got shape {_shape(value)}")
    (m, k), (k2, n) = _shape(a), _shape(b)
    if k != k2:
        raise _fail(
            "matmul",
            f"a is {(m, k)} and b is {(k2, n)}: a's columns ({k}) must equal b's rows ({k2})",
        )
    call = _Call("matmul", kernels, ["lib_matmul.f32"])
    call.place("a", a)
    call.place("b", b)
    call.output(out, "f32", (m, n))
    with call.batch():
        ab, _ = call.upload(a)
        bb, _ = call.upload(b)
        cb = out if isinstance(out, DeviceBuffer) else call.device.buffer((m, n), "f32")
        call.k["lib_matmul.f32"](
            a=ab, b=bb, c=cb, M=m, N=n, K=k, grid=(-(-n // TILE) * WG, -(-m // TILE))
        )
    return call.result(cb, out, m * n, (m, n))


# fp16 matmul on cooperative matrices (matmul_f16) belongs here, on the same _Call helpers.


# -- row softmax and layer norm ------------------------------------------------------------


def _rows(fn: str, x: Array) -> tuple[int, int]:
    # (rows, cols) of x: the last axis is a row, every other axis counts rows.
    shape = _shape(x)
    if not shape:
        raise _fail(fn, "x must have at least one axis, got a 0-d array")
    return math.prod(shape[:-1]), shape[-1]


def softmax(kernels: Mapping[str, Kernel], x: Array, *, out: Out = None) -> Any:
    """Softmax along the last axis: exp(x - max) / sum(exp(x - max)) per row.

    Arguments:
        kernels: a Bundle (or a mapping of id -> Kernel) holding lib_softmax.f32.
        x: float32, a numpy array or DeviceBuffer of any shape (its last axis is a row).
        out: a float32 array or DeviceBuffer of x's shape to write the result into.
    Returns:
        The result as a numpy array of x's shape, or `out` when given.
    """
    _kind("softmax", "x", x, ("f32",))
    rows, cols = _rows("softmax", x)
    call = _Call("softmax", kernels, ["lib_softmax.f32"])
    call.place("x", x)
    call.output(out, "f32", _shape(x))
    with call.batch():
        args, ob = _row_buffers(call, x, out, rows * cols, cols)
        call.k["lib_softmax.f32"](**args)
    return call.result(ob, out, rows * cols, _shape(x))


def layer_norm(
    kernels: Mapping[str, Kernel],
    x: Array,
    gamma: Array,
    beta: Array,
    eps: float = 1e-5,
    *,
    out: Out = None,
) -> Any:
    """Layer norm along the last axis: (x - mean) / sqrt(var + eps) * gamma + beta per
    row, with the biased variance (as torch.nn.functional.layer_norm).

    Arguments:
        kernels: a Bundle (or a mapping of id -> Kernel) holding lib_layer_norm.f32.
        x: float32, a numpy array or DeviceBuffer of any shape (its last axis is a row).
        gamma, beta: float32 of shape (cols,), numpy arrays or DeviceBuffers.
        eps: added to the variance; a finite float >= 0.
        out: a float32 array or DeviceBuffer of x's shape to write the result into.
    Returns:
        The result as a numpy array of x's shape, or `out` when given.
    """
    _kind("layer_norm", "x", x, ("f32",))
    rows, cols = _rows("layer_norm", x)
    for name, value in (("gamma", gamma), ("beta", beta)):
        _kind("layer_norm", name, value, ("f32",))
        if _shape(value) != (cols,):
            raise _fail(
                "layer_norm", f"{name} must have shape ({cols},) (x's rows), got {_shape(value)}"
            )
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < 3e38:
        raise _fail("layer_norm", f"eps must be a finite float >= 0, got {eps!r}")
    call = _Call("layer_norm", kernels, ["lib_layer_norm.f32"])
    for name, value in (("x", x), ("gamma", gamma), ("beta", beta)):
        call.place(name, value)
    call.output(out, "f32", _shape(x))
    with call.batch():
        args, ob = _row_buffers(call, x, out, rows * cols, cols)
        for name, value in (("gamma", gamma), ("beta", beta)):
            buf, vec = call.upload(value)
            args[name + "4"], args[name] = call.pair(buf, vec, "f32", False)
        call.k["lib_layer_norm.f32"](**args, eps=float(eps))
    return call.result(ob, out, rows * cols, _shape(x))


def _row_buffers(
    call: _Call, x: Array, out: Out, count: int, cols: int
) -> tuple[dict[str, Any], DeviceBuffer]:
    # The arguments of a row kernel over x (rows of `cols`): vec4 bindings when rows are
    # whole vec4s; and the buffer the result goes to.
    rows = count // cols
    vec = cols % 4 == 0
    xb, _ = call.upload(x)
    ob, _ = call.target(out, "f32", count)
    x4, xs = call.pair(xb, vec, "f32", False)
    o4, os_ = call.pair(ob, vec, "f32", True)
    stride = min(rows, MAX_ROWS)
    args = dict(x4=x4, x=xs, out4=o4, out=os_, rows=rows, cols=cols, vec=int(vec))
    return {**args, "row_stride": stride, "grid": stride * WG}, ob
