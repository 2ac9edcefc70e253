"""The library kernels of kernels/lib_*.py as one call each: reduce, scan, matmul, softmax
and layer_norm over numpy arrays or DeviceBuffers.

    from vyre_build import library
    from vyre_build.runtime import open_bundle

    total = library.reduce(x, op="sum")  # a numpy scalar, on the default device
    with open_bundle("dist/kernels.vyrebundle") as bundle:
        total = library.reduce(bundle, x, op="sum")  # the same, with the kernels given
        prefix = library.scan(bundle, x, exclusive=True)  # a numpy array
        c = library.matmul(bundle, a, b)
        h = library.matmul_f16(bundle, a16, b16)  # tensor cores: Vulkan or cpu; any sizes, batched

Each function takes the kernels as a Bundle (or any mapping of kernel id -> Kernel, such as
a dict of `load_kernel` results) as its optional first argument; without it, the library
that ships with the package, on the device of the first DeviceBuffer given, else the
default device ($VYRE_BACKEND; library/bundle.py).
It finds its kernels by id (LIBRARY_KERNELS), picks the
grids, keeps its small temporaries per device and thread, and runs its passes in one
`device.batch()`, or in the caller's open batch (the result must then go to `out=`, a
DeviceBuffer). Wrong kernels, types, shapes and sizes are refused with a DispatchError
before anything reaches the device. A call like an earlier one on the same DeviceBuffers
(out= included) runs that call's dispatches again without checking or planning them
(outside a batch, by submitting again what that call submitted: Device.resubmit).
The machinery: library/call.py (a call: uploads, steps, replay), library/checks.py (argument
checks), library/kept.py (scratch buffers and recipes kept between calls).
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Mapping
from typing import Any, overload


from vyre_build.runtime.bundles import register_picks
from vyre_build.runtime.device import Device, DeviceBuffer
from vyre_build.runtime.kernel import Kernel
from vyre_build.library.bundle import split_kernels
from vyre_build.library.tuning import library_choice
from vyre_build.library.picks import (  # the names read as library.X: picks.py's
    FORWARD_PROGRESS_VENDORS as FORWARD_PROGRESS_VENDORS,
    IN_ORDER_VENDORS as IN_ORDER_VENDORS,
    LIBRARY_KERNELS,
    LOOK_BACK_ITEMS as LOOK_BACK_ITEMS,
    LOOK_BACK_KERNEL as LOOK_BACK_KERNEL,
    LOOK_BACK_MOST as LOOK_BACK_MOST,
    LOOK_BACK_PAYS_VENDORS as LOOK_BACK_PAYS_VENDORS,
    LOOK_BACK_WIDE as LOOK_BACK_WIDE,
    LOOK_WIDE_LEAST as LOOK_WIDE_LEAST,
    LOOK_WIDE_SHARED as LOOK_WIDE_SHARED,
    SHORT_DESIGNS as SHORT_DESIGNS,
    SHORT_ROWS as SHORT_ROWS,
    SINGLE_PASS_FEATURES as SINGLE_PASS_FEATURES,
    _NUMERIC,
    _OPS,
    _row_kernel as _row_kernel,
    kernel_ids,
    library_picks,
    look_back_items,
    reduce_kernel,
    reduce_runs,
    row_kernel,
    scan_kernels,
    scan_runs,
)
from vyre_build.library.call import (
    MISS,
    again,
    Array,
    Call,
    Out,
    fail,
    kind_of,
    shape_of,
)

# lib_scan_pipe (a bench candidate no pick takes): its workgroups a call, each taking
# tiles in turn
PIPE_GROUPS = 264

__all__ = [
    "LIBRARY_KERNELS",
    "kernel_ids",
    "layer_norm",
    "matmul",
    "matmul_bf16",
    "matmul_f16",
    "reduce",
    "reduce_kernel",
    "row_kernel",
    "scan",
    "scan_kernels",
    "softmax",
]

WG = 256  # the workgroup size of every library kernel
MAX_PARTIALS = 1024  # reduce: workgroups of the first pass (about one wave on an H200)
MAX_BLOCKS = 1024  # scan: blocks (one wave on an H200; their sums scanned in one step)
# Which kernel each function runs on a device (reduce_kernel, scan_kernels, row_kernel,
# the tuned picks) is library/picks.py's, which Bundle.warm() asks too:
register_picks("library", library_picks)


# -- reduce and scan -----------------------------------------------------------------------


@overload
def reduce(
    kernels: Mapping[str, Kernel], x: Array, op: str = "sum", *, out: DeviceBuffer | None = None
) -> Any: ...


@overload
def reduce(x: Array, op: str = "sum", *, out: DeviceBuffer | None = None) -> Any: ...


def reduce(*args: Any, **kwargs: Any) -> Any:
    """Reduce every value of `x` to one: its sum (integers wrap), minimum or maximum.

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding lib_reduce.{op}_{type}.
        x: a float32, int32 or uint32 numpy array or DeviceBuffer, any shape.
        op: "sum", "min" or "max" (NaNs are not propagated, as on GPUs).
        out: a DeviceBuffer of shape (1,) and x's type to write the result into.
    Returns:
        The result as a numpy scalar of x's type, or `out` when given. An f32 sum is the
        same on every run on one device: partials in a fixed order, no float atomics.
    """
    kernels, rest = split_kernels("reduce", args, kwargs)
    return _reduce(kernels, *rest, **kwargs)


def _reduce(
    kernels: Mapping[str, Kernel], x: Array, op: str = "sum", *, out: DeviceBuffer | None = None
) -> Any:
    """`reduce` with its kernels given."""
    if out is not None and again("reduce", kernels, (op,), (x, out)) is not MISS:
        return out
    if op not in _OPS:
        raise fail("reduce", f"op must be 'sum', 'min' or 'max', got {op!r}")
    kind = kind_of("reduce", "x", x, _NUMERIC)
    kid = f"lib_reduce.{op}_{kind}"
    device = _device_of(kernels, kid)
    once = kid if device is None else reduce_runs(kernels, device, op, kind)
    if once != kid:
        return _reduce_once(kernels, once, x, op, kind, out)
    call = Call("reduce", kernels, [kid])
    partials = library_choice(kernels, "reduce")[1]["partials"]  # tuned: docs/tuning.md
    tuned = (partials,)
    res: Any = MISS
    if out is not None or not call.in_batch():
        res = call.replay(tuned, (x, out), (op,))
    if res is MISS:
        first, res, vectors = _reduce_input(call, x, kind, out)
        groups = min(partials, -(-vectors // (WG * 4)))
        if groups <= 1:
            steps = [call.step(kid, 0, {**first, "partials": res, "stride": WG}, WG)]
        else:
            groups = -(-groups // 4) * 4  # the second pass reads the partials as vec4s
            parts = call.scratch("partials", kind, groups)
            stride = groups * WG
            last = dict(x4=parts, x=parts, partials=res, n=groups, vin=1, stride=WG)
            steps = [
                call.step(kid, 0, {**first, "partials": parts, "stride": stride}, stride),
                call.step(kid, 1, last, WG),
            ]
        call.run(steps)
        call.remember(tuned, (x, out), steps, res)
    return out if out is not None else res.read()[0]


def _reduce_input(
    call: Call, x: Array, kind: str, out: DeviceBuffer | None
) -> tuple[dict[str, Any], DeviceBuffer, int]:
    # What both reduce paths start with: x placed and uploaded (its vec4 view where it has
    # one), the one-value result buffer, and how many loads (vec4s or values) cover x.
    n = call.place("x", x)
    call.output(out, kind, (1,), arrays=False)
    xb, vin = call.upload(x)
    x4, xs = call.pair(xb, vin, kind, False)
    res = out if out is not None else call.scratch("reduce", kind, 1)
    return dict(x4=x4, x=xs, n=n, vin=int(vin)), res, n // 4 if vin else n


def _device_of(kernels: Mapping[str, Kernel], kid: str) -> Device | None:
    # The device of kernels[kid], where the mapping holds that Kernel; None otherwise (then
    # the multi-pass path runs, and Call refuses the missing `kid`).
    found = kernels.get(kid) if isinstance(kernels, Mapping) else None
    return found.device if isinstance(found, Kernel) else None


def _reduce_once(
    kernels: Mapping[str, Kernel],
    kid: str,
    x: Array,
    op: str,
    kind: str,
    out: DeviceBuffer | None,
) -> Any:
    # `reduce` in one dispatch of lib_reduce_once (see reduce_kernel).
    call = Call("reduce", kernels, [kid])
    res: Any = MISS
    if out is not None or not call.in_batch():
        res = call.replay((), (x, out), (op,))
    if res is MISS:
        first, res, vectors = _reduce_input(call, x, kind, out)
        groups = max(1, min(MAX_PARTIALS, -(-vectors // (WG * 4))))
        parts = call.scratch("partials", kind, groups)
        ticket = call.scratch("reduce ticket", "u32", 1)  # 0, and set back to 0 by each call
        args = dict(first, partials=parts, ticket=ticket, out=res)
        steps = [call.step(kid, 0, {**args, "stride": groups * WG}, groups * WG)]
        call.run(steps)
        call.remember((), (x, out), steps, res)
    return out if out is not None else res.read()[0]


@overload
def scan(
    kernels: Mapping[str, Kernel], x: Array, *, exclusive: bool = False, out: Out = None
) -> Any: ...


@overload
def scan(x: Array, *, exclusive: bool = False, out: Out = None) -> Any: ...


def scan(*args: Any, **kwargs: Any) -> Any:
    """The prefix sums of `x` in flat (C) order over the whole array: inclusive
    (out[i] = x[0] + ... + x[i]) or exclusive (x[0] + ... + x[i-1], out[0] = 0).

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding lib_scan_sums.{type} and
            lib_scan_block.{type}.
        x: a float32, int32 or uint32 numpy array or DeviceBuffer, any shape (integer sums
            wrap, as numpy's cumsum in that dtype).
        exclusive: exclusive instead of inclusive sums.
        out: an array or DeviceBuffer of x's type and shape to write the sums into.
    Returns:
        The sums as a numpy array of x's shape, or `out` when given.
    """
    kernels, rest = split_kernels("scan", args, kwargs)
    return _scan(kernels, *rest, **kwargs)


def _scan_once(
    kernels: Mapping[str, Kernel],
    kid: str,
    x: Array,
    kind: str,
    exclusive: bool,
    out: Out,
    items: int | None = None,
    groups: int | None = None,
) -> Any:
    # `scan` in one dispatch of a look-back kernel, lib_scan_look or lib_scan_once (see
    # scan_kernels); `items`: the vec4s per invocation per tile of a kernel of
    # lib_scan_look's protocol that LOOK_BACK_ITEMS does not name (a bench candidate);
    # `groups`: lib_scan_pipe's workgroups (PIPE_GROUPS if not given).
    call = Call("scan", kernels, [kid])
    front = (type(exclusive), exclusive)
    if isinstance(out, DeviceBuffer) and call.replay((exclusive,), (x, out), front) is not MISS:
        return out
    n = call.place("x", x)
    shape = shape_of(x)
    call.output(out, kind, shape)
    vectors = -(-n // 4)
    look = kid.split(".")[0]
    wg = call.k[kid].workgroup_size[0]  # WG, or a bench candidate's (bench/scan_bench.py)
    tiles = -(-vectors // (wg * (items or look_back_items(kid))))
    xb, vin = call.upload(x)
    ob, vout = call.target(out, kind, n)
    x4, xs = call.pair(xb, vin, kind, False)
    o4, os_ = call.pair(ob, vout, kind, True)
    args = dict(x4=x4, x=xs, out4=o4, out=os_, n=n, vin=int(vin), vout=int(vout))
    args.update(tiles=tiles, exclusive=int(exclusive))
    # a workgroup a tile, drawing one ticket each: a call draws `tiles` tickets
    grid, period = tiles * wg, tiles
    if look == "lib_scan_pipe":
        # `groups` workgroups (at most one a tile) take `rounds` tickets each
        g = min(tiles, groups or PIPE_GROUPS)
        rounds = -(-tiles // g)
        grid, period = g * wg, g * rounds
        args.update(rounds=rounds, period=period)
    if look != "lib_scan_once":
        # per tile its status in one 16-byte slot (its flag, aggregate and inclusive
        # prefix; or, in the PACKED form, its aggregate and inclusive prefix as tagged
        # halves), then the tickets drawn (or, in the WGID form, the epoch): kept across
        # calls, together; one buffer per kernel and ticket period, so that every call on
        # a buffer keeps its protocol and draws as many as the epoch arithmetic expects
        args["state"] = call.scratch(_look_back_state_name(kid, period), "u32", 4 * tiles + 1)
    else:
        args.update(
            agg=call.scratch("scan aggregates", kind, tiles),
            pre=call.scratch("scan prefixes", kind, tiles),
            # a flag per tile, then the next tile and the epoch: kept across calls, together
            flags=call.scratch("scan flags", "u32", tiles + 2),
        )
    steps = [call.step(kid, 0, args, grid)]
    call.run(steps)
    call.remember((exclusive,), (x, out), steps, None)
    return call.result(ob, out, n, shape)


def _look_back_state_name(kid: str, period: int) -> str:
    """The name of the scratch buffer a look-back kernel `kid` keeps its tiles' status and
    its count or epoch in, across calls of ticket period `period` (_scan_once)."""
    return f"scan look-back state, {kid}, period {period}"


def _scan(
    kernels: Mapping[str, Kernel], x: Array, *, exclusive: bool = False, out: Out = None
) -> Any:
    """`scan` with its kernels given."""
    front = (type(exclusive), exclusive)
    if isinstance(out, DeviceBuffer) and again("scan", kernels, front, (x, out)) is not MISS:
        return out
    if not isinstance(exclusive, bool):
        raise fail("scan", f"exclusive must be True or False, got {exclusive!r}")
    kind = kind_of("scan", "x", x, _NUMERIC)
    sums_id, block_id = f"lib_scan_sums.{kind}", f"lib_scan_block.{kind}"
    device = _device_of(kernels, block_id)
    size = math.prod(shape_of(x))
    runs = (sums_id, block_id) if device is None else scan_runs(kernels, device, kind, size)
    if len(runs) == 1:  # the look-back
        return _scan_once(kernels, runs[0], x, kind, exclusive, out)
    call = Call("scan", kernels, [sums_id, block_id])
    max_blocks = library_choice(kernels, "scan")[1]["blocks"]  # tuned: docs/tuning.md
    params = (exclusive, max_blocks)
    if isinstance(out, DeviceBuffer) and call.replay(params, (x, out), front) is not MISS:
        return out
    n = call.place("x", x)
    shape = shape_of(x)
    call.output(out, kind, shape)
    vectors = -(-n // 4)
    per_block = max(1, -(-vectors // (WG * max_blocks)))
    blocks = -(-vectors // (WG * per_block))
    xb, vin = call.upload(x)
    ob, vout = call.target(out, kind, n)
    x4, xs = call.pair(xb, vin, kind, False)
    o4, os_ = call.pair(ob, vout, kind, True)
    zero = call.scratch("zero", kind, 4)
    data = dict(x4=x4, x=xs, out4=o4, out=os_, n=n, vin=int(vin), vout=int(vout))
    data.update(per_block=per_block, exclusive=int(exclusive))
    if blocks == 1:
        steps = [call.step(block_id, 0, {**data, "offsets": zero}, WG)]
    else:
        padded = -(-blocks // 4) * 4
        sums = call.scratch("scan sums", kind, padded)
        offsets = call.scratch("scan offsets", kind, padded)
        sink = call.scratch("sink", kind, 4)
        first = dict(x4=x4, x=xs, sums=sums, n=n, vin=int(vin), per_block=per_block)
        middle = dict(x4=sums, x=sums, out4=offsets, out=sink, offsets=zero, n=blocks)
        middle.update(vin=1, vout=1, per_block=-(-padded // (4 * WG)), exclusive=1)
        steps = [
            call.step(sums_id, 0, first, blocks * WG),
            call.step(block_id, 1, middle, WG),
            call.step(block_id, 2, {**data, "offsets": offsets}, blocks * WG),
        ]
    call.run(steps)
    call.remember((exclusive, max_blocks), (x, out), steps, None)
    return call.result(ob, out, n, shape)


# -- matmul, softmax and layer norm: library/matmuls.py and library/rows.py --------------

from vyre_build.library.matmuls import (  # noqa: E402  (after the picks are registered)
    DIRECT_TILE as DIRECT_TILE,
    MAX_BATCH as MAX_BATCH,
    TILE as TILE,
    matmul as matmul,
    matmul_bf16 as matmul_bf16,
    matmul_f16 as matmul_f16,
)
from vyre_build.library.rows import MAX_ROWS as MAX_ROWS, layer_norm, softmax  # noqa: E402


def _show_arguments(*functions: Any) -> None:
    # help() and inspect.signature show each function's call without a bundle (its overload
    # without `kernels`, which the docstring says may come first), not (*args, **kwargs).
    # typing.get_overloads is Python 3.11's: on 3.10 they stay as they are.
    get = getattr(typing, "get_overloads", None)
    if get is None:
        return
    for fn in functions:
        plain = (s for s in map(inspect.signature, get(fn)) if "kernels" not in s.parameters)
        sig = next(plain, None)
        if sig is not None:
            setattr(fn, "__signature__", sig)  # noqa: B010


_show_arguments(reduce, scan, matmul, matmul_f16, matmul_bf16, softmax, layer_norm)
