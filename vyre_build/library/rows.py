"""library.softmax and layer_norm (re-exported by vyre_build.library, whose docstring
says what every function shares): a row kernel picked by row length
(kernels/lib_norm_flat.py up to 1,024 values, lib_norm.py past it: picks.row_runs)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, overload

from vyre_build.runtime.device import DeviceBuffer
from vyre_build.runtime.kernel import Kernel
from vyre_build.library.bundle import split_kernels
from vyre_build.library.call import MISS, Array, Call, Out, again, fail, kind_of, shape_of
from vyre_build.library.picks import row_runs

WG = 256  # the workgroup size of every library kernel
MAX_ROWS = 65535  # softmax, layer_norm: workgroups per dispatch (WebGPU's per-axis limit)


# -- row softmax and layer norm ------------------------------------------------------------


def _rows(fn: str, x: Array) -> tuple[int, int]:
    # (rows, cols) of x: the last axis is a row, every other axis counts rows.
    shape = shape_of(x)
    if not shape:
        raise fail(fn, "x must have at least one axis, got a 0-d array")
    return math.prod(shape[:-1]), shape[-1]


@overload
def softmax(kernels: Mapping[str, Kernel], x: Array, *, out: Out = None) -> Any: ...


@overload
def softmax(x: Array, *, out: Out = None) -> Any: ...


def softmax(*args: Any, **kwargs: Any) -> Any:
    """Softmax along the last axis: exp(x - max) / sum(exp(x - max)) per row.

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding the kernel for x's row
            length (`row_kernel("softmax", cols)`: lib_softmax_flat.f32 or .f32).
        x: float32, a numpy array or DeviceBuffer of any shape (its last axis is a row).
        out: a float32 array or DeviceBuffer of x's shape to write the result into.
    Returns:
        The result as a numpy array of x's shape, or `out` when given.
    """
    kernels, rest = split_kernels("softmax", args, kwargs)
    return _softmax(kernels, *rest, **kwargs)


def _softmax(kernels: Mapping[str, Kernel], x: Array, *, out: Out = None) -> Any:
    """`softmax` with its kernels given."""
    if isinstance(out, DeviceBuffer) and again("softmax", kernels, (), (x, out)) is not MISS:
        return out
    kind_of("softmax", "x", x, ("f32",))
    rows, cols = _rows("softmax", x)
    kid, per = row_runs(kernels, "softmax", cols)
    call = Call("softmax", kernels, [kid])
    if isinstance(out, DeviceBuffer) and call.replay((), (x, out)) is not MISS:
        return out
    call.place("x", x)
    call.output(out, "f32", shape_of(x))
    args, grid, ob = _row_args(call, x, out, rows, cols, per)
    steps = [call.step(kid, 0, args, grid)]
    call.run(steps)
    call.remember((), (x, out), steps, None)
    return call.result(ob, out, rows * cols, shape_of(x))


@overload
def layer_norm(
    kernels: Mapping[str, Kernel],
    x: Array,
    gamma: Array,
    beta: Array,
    eps: float = 1e-5,
    *,
    out: Out = None,
) -> Any: ...


@overload
def layer_norm(
    x: Array, gamma: Array, beta: Array, eps: float = 1e-5, *, out: Out = None
) -> Any: ...


def layer_norm(*args: Any, **kwargs: Any) -> Any:
    """Layer norm along the last axis: (x - mean) / sqrt(var + eps) * gamma + beta per
    row, with the biased variance (as torch.nn.functional.layer_norm).

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding the kernel for x's row
            length (`row_kernel("layer_norm", cols)`: lib_layer_norm_flat.f32 or .f32).
        x: float32, a numpy array or DeviceBuffer of any shape (its last axis is a row).
        gamma, beta: float32 of shape (cols,), numpy arrays or DeviceBuffers.
        eps: added to the variance; a finite float >= 0.
        out: a float32 array or DeviceBuffer of x's shape to write the result into.
    Returns:
        The result as a numpy array of x's shape, or `out` when given.
    """
    kernels, rest = split_kernels("layer_norm", args, kwargs)
    return _layer_norm(kernels, *rest, **kwargs)


def _layer_norm(
    kernels: Mapping[str, Kernel],
    x: Array,
    gamma: Array,
    beta: Array,
    eps: float = 1e-5,
    *,
    out: Out = None,
) -> Any:
    """`layer_norm` with its kernels given."""
    front, buffers = (type(eps), eps), (x, gamma, beta, out)
    if isinstance(out, DeviceBuffer) and again("layer_norm", kernels, front, buffers) is not MISS:
        return out
    kind_of("layer_norm", "x", x, ("f32",))
    rows, cols = _rows("layer_norm", x)
    for name, value in (("gamma", gamma), ("beta", beta)):
        kind_of("layer_norm", name, value, ("f32",))
        if shape_of(value) != (cols,):
            raise fail(
                "layer_norm", f"{name} must have shape ({cols},) (x's rows), got {shape_of(value)}"
            )
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < 3e38:
        raise fail("layer_norm", f"eps must be a finite float >= 0, got {eps!r}")
    kid, per = row_runs(kernels, "layer_norm", cols)
    call = Call("layer_norm", kernels, [kid])
    if isinstance(out, DeviceBuffer) and call.replay((float(eps),), buffers, front) is not MISS:
        return out
    for name, value in (("x", x), ("gamma", gamma), ("beta", beta)):
        call.place(name, value)
    call.output(out, "f32", shape_of(x))
    args, grid, ob = _row_args(call, x, out, rows, cols, per)
    for name, value in (("gamma", gamma), ("beta", beta)):
        buf, vec = call.upload(value)
        args[name + "4"], args[name] = call.pair(buf, vec, "f32", False)
    steps = [call.step(kid, 0, {**args, "eps": float(eps)}, grid)]
    call.run(steps)
    call.remember((float(eps),), buffers, steps, None)
    return call.result(ob, out, rows * cols, shape_of(x))


def _row_args(
    call: Call, x: Array, out: Out, rows: int, cols: int, per: int
) -> tuple[dict[str, Any], int, DeviceBuffer]:
    # A row kernel's arguments over x (vec4 bindings when rows are whole vec4s), its grid
    # (a workgroup of WG per `per` rows, up to MAX_ROWS workgroups; the kernel takes the
    # rest `row_stride` workgroups' rows apart), and the buffer the result goes to.
    vec = cols % 4 == 0
    xb, _ = call.upload(x)
    ob, _ = call.target(out, "f32", rows * cols)
    x4, xs = call.pair(xb, vec, "f32", False)
    o4, os_ = call.pair(ob, vec, "f32", True)
    stride = min(-(-rows // per), MAX_ROWS)
    args = dict(x4=x4, x=xs, out4=o4, out=os_, rows=rows, cols=cols, vec=int(vec))
    return {**args, "row_stride": stride}, stride * WG, ob
