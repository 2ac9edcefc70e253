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
The machinery (checks, scratch buffers, recipes): library/call.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, overload


from vyre_build.runtime.bundles import register_picks
from vyre_build.runtime.device import Device, DeviceBuffer
from vyre_build.runtime.kernel import Kernel
from vyre_build.runtime.plan import host_array
from vyre_build.library.bundle import split_kernels
from vyre_build.library.tuning import library_choice
from vyre_build.library.picks import (  # the names read as library.X: picks.py's
    FORWARD_PROGRESS_VENDORS as FORWARD_PROGRESS_VENDORS,
    LIBRARY_KERNELS,
    LOOK_BACK_ITEMS,
    LOOK_BACK_KERNEL as LOOK_BACK_KERNEL,
    LOOK_BACK_MOST as LOOK_BACK_MOST,
    LOOK_BACK_PAYS_VENDORS as LOOK_BACK_PAYS_VENDORS,
    SHORT_DESIGNS as SHORT_DESIGNS,
    SHORT_ROWS as SHORT_ROWS,
    SINGLE_PASS_FEATURES as SINGLE_PASS_FEATURES,
    _NUMERIC,
    _OPS,
    _row_kernel as _row_kernel,
    f16_runs,
    kernel_ids,
    library_picks,
    matmul_runs,
    reduce_kernel,
    reduce_runs,
    row_kernel,
    row_runs,
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
TILE = 128  # lib_matmul: the side of the block of C one workgroup computes
MAX_PARTIALS = 1024  # reduce: workgroups of the first pass (about one wave on an H200)
MAX_BLOCKS = 1024  # scan: blocks (one wave on an H200; their sums scanned in one step)
MAX_ROWS = 65535  # softmax, layer_norm: workgroups per dispatch (WebGPU's per-axis limit)
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
    kernels: Mapping[str, Kernel], kid: str, x: Array, kind: str, exclusive: bool, out: Out
) -> Any:
    # `scan` in one dispatch of a look-back kernel, lib_scan_look or lib_scan_once (see
    # scan_kernels).
    call = Call("scan", kernels, [kid])
    front = (type(exclusive), exclusive)
    if isinstance(out, DeviceBuffer) and call.replay((exclusive,), (x, out), front) is not MISS:
        return out
    n = call.place("x", x)
    shape = shape_of(x)
    call.output(out, kind, shape)
    vectors = -(-n // 4)
    look = kid.split(".")[0]
    tiles = -(-vectors // (WG * LOOK_BACK_ITEMS[look]))
    xb, vin = call.upload(x)
    ob, vout = call.target(out, kind, n)
    x4, xs = call.pair(xb, vin, kind, False)
    o4, os_ = call.pair(ob, vout, kind, True)
    args = dict(x4=x4, x=xs, out4=o4, out=os_, n=n, vin=int(vin), vout=int(vout))
    args.update(tiles=tiles, exclusive=int(exclusive))
    if look == "lib_scan_look":
        # per tile its flag, aggregate and inclusive prefix (4 words: one tile's status in
        # one 16-byte slot), then the tickets drawn: kept across calls, together
        args["state"] = call.scratch("scan look-back state", "u32", 4 * tiles + 1)
    else:
        args.update(
            agg=call.scratch("scan aggregates", kind, tiles),
            pre=call.scratch("scan prefixes", kind, tiles),
            # a flag per tile, then the next tile and the epoch: kept across calls, together
            flags=call.scratch("scan flags", "u32", tiles + 2),
        )
    steps = [call.step(kid, 0, args, tiles * WG)]
    call.run(steps)
    call.remember((exclusive,), (x, out), steps, None)
    return call.result(ob, out, n, shape)


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


# -- matmul --------------------------------------------------------------------------------


def _matmul_sizes(fn: str, a: Array, b: Array, kind: str) -> tuple[int, int, int]:
    # (M, K, N) of A @ B: both 2-D of `kind`, A's columns equal to B's rows.
    for name, value in (("a", a), ("b", b)):
        kind_of(fn, name, value, (kind,))
        if len(shape_of(value)) != 2:
            raise fail(fn, f"{name} must be 2-D, got shape {shape_of(value)}")
    (m, k), (k2, n) = shape_of(a), shape_of(b)
    if k != k2:
        raise fail(
            fn,
            f"a is {(m, k)} and b is {(k2, n)}: a's columns ({k}) must equal b's rows ({k2})",
        )
    return m, k, n


@overload
def matmul(kernels: Mapping[str, Kernel], a: Array, b: Array, *, out: Out = None) -> Any: ...


@overload
def matmul(a: Array, b: Array, *, out: Out = None) -> Any: ...


def matmul(*args: Any, **kwargs: Any) -> Any:
    """C = A @ B in f32 (fp32 FMAs, no TF32), row-major, any sizes.

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding lib_matmul.f32.
        a: float32 of shape (M, K), a numpy array or a DeviceBuffer made with that shape.
        b: float32 of shape (K, N), likewise.
        out: a float32 array or DeviceBuffer of shape (M, N) to write C into.
    Returns:
        C as a numpy array of shape (M, N), or `out` when given.
    """
    kernels, rest = split_kernels("matmul", args, kwargs)
    return _matmul(kernels, *rest, **kwargs)


def _matmul(kernels: Mapping[str, Kernel], a: Array, b: Array, *, out: Out = None) -> Any:
    """`matmul` with its kernels given."""
    m, k, n = _matmul_sizes("matmul", a, b, "f32")
    kid, tuned = matmul_runs(kernels)  # docs/tuning.md
    wg = tuned["wg"]
    # the block of C one workgroup computes: tile_m x tile_n, either one 0 meaning `tile`
    bm, bn = tuned["tile_m"] or tuned["tile"], tuned["tile_n"] or tuned["tile"]
    call = Call("matmul", kernels, [kid])
    if isinstance(out, DeviceBuffer) and call.replay((bm, bn, wg), (a, b, out)) is not MISS:
        return out
    call.place("a", a)
    call.place("b", b)
    call.output(out, "f32", (m, n))
    ab, _ = call.upload(a)
    bb, _ = call.upload(b)
    cb = out if isinstance(out, DeviceBuffer) else call.device.buffer((m, n), "f32")
    grid = (-(-n // bn) * wg, -(-m // bm))
    steps = [call.step(kid, 0, dict(a=ab, b=bb, c=cb, M=m, N=n, K=k), grid)]
    call.run(steps)
    call.remember((bm, bn, wg), (a, b, out), steps, None)
    return call.result(cb, out, m * n, (m, n))


# lib_matmul_f16 (64 x 64 blocks of one 32-wide workgroup, fragments straight from the
# buffers) runs the f32-output shapes it fits where a tuning record picks it; the staged
# lib_mm_f16 (128 x 256 blocks of 8 subgroups, every shape, f16 output too) is the default:
# on the H200 124-141 TFLOP/s at 2048-8192 against the unstaged kernel's 40-49
# (bench/RESULTS.md, measured as bench/kernels/mm_f16_wide.py then).
DIRECT_TILE = (16, 64, 16)  # M, N, K multiples it needs (M of 64 in a batch)
DIRECT_BLOCK, DIRECT_WG = 64, 32
F16_BM, F16_BN = 128, 256  # lib_mm_f16: the block of C one workgroup computes (M x N)
F16_WG = 256  # its workgroup size: 8 subgroups of 32
F16_WIDEST = 32  # the widest subgroup it runs on (8 subgroups per workgroup)
MAX_BATCH = 65535  # matmul_f16: workgroups on the grid's z axis (one per batch entry)
_F16_OUT = {"float32": "f32", "float16": "f16"}


@overload
def matmul_f16(
    kernels: Mapping[str, Kernel], a: Array, b: Array, *, out: Out = None, out_dtype: str = ...
) -> Any: ...


@overload
def matmul_f16(a: Array, b: Array, *, out: Out = None, out_dtype: str = ...) -> Any: ...


def matmul_f16(*args: Any, **kwargs: Any) -> Any:
    """C = A @ B with float16 A and B and float32 accumulation, on cooperative matrices
    (tensor cores): a Vulkan device with VK_KHR_cooperative_matrix, or the cpu reference.
    Any sizes (edges are handled in the kernel, nothing is padded on the host), and batched:
    a leading batch axis on either operand (a 2-D operand is shared by every batch entry).

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding lib_mm_f16.f32
            (float32 output) or lib_mm_f16.f16 (float16 output).
        a: float16 of shape (M, K) or (Z, M, K); b: float16 of shape (K, N) or (Z, K, N);
            numpy arrays or DeviceBuffers made with those shapes.
        out: an array or DeviceBuffer of shape (M, N) (or (Z, M, N)) and out_dtype to
            write C into.
        out_dtype: "float32" (the default) or "float16" (the f32 sums rounded once).
    Returns:
        C as a numpy array of shape (M, N) or (Z, M, N), or `out` when given.
    """
    kernels, rest = split_kernels("matmul_f16", args, kwargs)
    return _matmul_f16(kernels, *rest, **kwargs)


def _f16_sizes(
    a: Array, b: Array, fn: str = "matmul_f16", kind: str = "f16"
) -> tuple[int, int, int, int, bool, bool]:
    # (Z, M, K, N, a batched, b batched) of A @ B, batched or not.
    for name, value in (("a", a), ("b", b)):
        kind_of(fn, name, value, (kind,))
        if len(shape_of(value)) not in (2, 3):
            raise fail(fn, f"{name} must be 2-D or 3-D (a batch), got shape {shape_of(value)}")
    sa, sb = shape_of(a), shape_of(b)
    (m, k), (k2, n) = sa[-2:], sb[-2:]
    if k != k2:
        raise fail(fn, f"a is {sa} and b is {sb}: a's columns ({k}) must equal b's rows ({k2})")
    za, zb = (s[0] if len(s) == 3 else None for s in (sa, sb))
    if za is not None and zb is not None and za != zb:
        raise fail(fn, f"a is {sa} and b is {sb}: their batches ({za} and {zb}) must be equal")
    z = za or zb or 1
    if z > MAX_BATCH:
        raise fail(fn, f"a batch of {z} is more than {MAX_BATCH} (split it)")
    return z, m, k, n, za is not None, zb is not None


def _matmul_f16(
    kernels: Mapping[str, Kernel],
    a: Array,
    b: Array,
    *,
    out: Out = None,
    out_dtype: str = "float32",
) -> Any:
    """`matmul_f16` with its kernels given."""
    if out_dtype not in _F16_OUT:
        raise fail("matmul_f16", f"out_dtype must be 'float32' or 'float16', got {out_dtype!r}")
    z, m, k, n, za, zb = _f16_sizes(a, b)
    kind = _F16_OUT[out_dtype]
    # rows past M of one batch entry are the next entry's: a batch needs whole blocks
    rows = DIRECT_BLOCK if za or zb else DIRECT_TILE[0]
    fits = m % rows == 0 and n % DIRECT_TILE[1] == 0 and k % DIRECT_TILE[2] == 0
    # the staged kernel by default (H200: 97-102 TFLOP/s against the unstaged one's 40-49,
    # bench/RESULTS.md); the unstaged one where a tuning record picks it (docs/tuning.md)
    # and it fits; f16 output always the staged lib_mm_f16.f16
    kid = f16_runs(kernels, kind, fits)
    return _matmul16("matmul_f16", "f16", kernels, kid, a, b, out, kind, (z, m, k, n, za, zb))


def _matmul16(
    fn: str,
    elem: str,
    kernels: Mapping[str, Kernel],
    kid: str,
    a: Array,
    b: Array,
    out: Out,
    kind: str,
    sizes: tuple[int, int, int, int, bool, bool],
) -> Any:
    """One call of `fn` (matmul_f16, matmul_bf16: inputs of `elem`) on kernel `kid`: the
    staged lib_mm_f16 / lib_mm_bf16 (each operand also bound as vec4s, a4 and b4, where its
    rows are whole vec4s), or the unstaged lib_matmul_f16; output of `kind`."""
    z, m, k, n, za, zb = sizes
    call = Call(fn, kernels, [kid])
    if isinstance(out, DeviceBuffer) and call.replay((kind,), (a, b, out)) is not MISS:
        return out
    width = call.device.profile.subgroup_size
    if width is not None and width > F16_WIDEST:
        raise fail(
            fn,
            f"the device ({call.where()}) has subgroups of {width} invocations; {kid} needs "
            f"subgroups of at most {F16_WIDEST}: use library.matmul on float32 values there",
        )
    call.place("a", a)
    call.place("b", b)
    shape = (z, m, n) if za or zb else (m, n)
    call.output(out, kind, shape)
    ab, a_vec = call.upload(a)
    bb, b_vec = call.upload(b)
    cb = out if isinstance(out, DeviceBuffer) else call.device.buffer(shape, kind)
    args: dict[str, Any] = dict(sa=m * k if za else 0, sb=k * n if zb else 0, sc=m * n)
    if kid == "lib_matmul_f16":
        grid = (n // DIRECT_BLOCK * DIRECT_WG, -(-m // DIRECT_BLOCK), z)
        args.update(a=ab, b=bb, c=cb, m=m, n=n, k=k)
    else:
        grid = (-(-n // F16_BN) * F16_WG, -(-m // F16_BM), z)
        sink = call.scratch("sink", elem if kind == "f32" else "f32", 4)
        zero = call.scratch("zero", elem, 4)  # the vec4 binding of an operand without vec4s
        args.update(a=ab, a4=ab if a_vec else zero, b=bb, b4=bb if b_vec else zero, M=m, N=n, K=k)
        args.update(c=cb if kind == "f32" else sink, h=sink if kind == "f32" else cb)
        # vec4 loads need whole vec4s: rows (and batch entries) of a multiple of 4 values
        args.update(va=int(a_vec and k % 4 == 0), vb=int(b_vec and n % 4 == 0))
    args.update(gx=grid[0], gy=grid[1], gz=grid[2])
    steps = [call.step(kid, 0, args, grid)]
    call.run(steps)
    call.remember((kind,), (a, b, out), steps, None)
    return call.result(cb, out, z * m * n, shape)


_BF16_OUT = {"float32": "f32", "bfloat16": "bf16"}


@overload
def matmul_bf16(
    kernels: Mapping[str, Kernel], a: Array, b: Array, *, out: Out = None, out_dtype: str = ...
) -> Any: ...


@overload
def matmul_bf16(a: Array, b: Array, *, out: Out = None, out_dtype: str = ...) -> Any: ...


def matmul_bf16(*args: Any, **kwargs: Any) -> Any:
    """C = A @ B with bfloat16 A and B and float32 accumulation, on cooperative matrices
    (tensor cores): a Vulkan device with VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16
    (bf16 16x16x16 fragments), or the cpu reference. Any sizes (edges are handled in the
    kernel, lib_mm_bf16), and batched like `matmul_f16`.

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding lib_mm_bf16.f32
            (float32 output) or lib_mm_bf16.bf16 (bfloat16 output).
        a: bfloat16 of shape (M, K) or (Z, M, K); b: bfloat16 of shape (K, N) or (Z, K, N):
            ml_dtypes.bfloat16 arrays (JAX's, TensorFlow's), uint16 arrays of bf16 bit
            patterns (vyre_build.core.bfloat16.from_f32 makes them), or DeviceBuffers of
            bf16.
        out: an array or DeviceBuffer of shape (M, N) (or (Z, M, N)) and out_dtype to
            write C into.
        out_dtype: "float32" (the default) or "bfloat16" (the f32 sums rounded once to
            nearest even).
    Returns:
        C as a numpy array of shape (M, N) or (Z, M, N) (bfloat16 output: uint16 bit
        patterns, or the dtype of `a` where that is ml_dtypes' bfloat16), or `out` when
        given.
    """
    kernels, rest = split_kernels("matmul_bf16", args, kwargs)
    return _matmul_bf16(kernels, *rest, **kwargs)


def _matmul_bf16(
    kernels: Mapping[str, Kernel],
    a: Array,
    b: Array,
    *,
    out: Out = None,
    out_dtype: str = "float32",
) -> Any:
    """`matmul_bf16` with its kernels given."""
    fn = "matmul_bf16"
    if out_dtype not in _BF16_OUT:
        raise fail(fn, f"out_dtype must be 'float32' or 'bfloat16', got {out_dtype!r}")
    named = getattr(a, "dtype", None)  # an ml_dtypes bfloat16 array: the result is one too
    a, b, out = (host_array(v) for v in (a, b, out))
    sizes = _f16_sizes(a, b, fn, "bf16")
    kind = _BF16_OUT[out_dtype]
    got = _matmul16(fn, "bf16", kernels, f"lib_mm_bf16.{kind}", a, b, out, kind, sizes)
    if kind == "bf16" and out is None and named is not None and named.name == "bfloat16":
        return got.view(named)
    return got


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
            length (`row_kernel("softmax", cols)`: lib_softmax_warp.f32 or .f32).
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
            length (`row_kernel("layer_norm", cols)`: lib_layer_norm_warp.f32 or .f32).
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
