"""Which library kernel each library function runs, per device and tuning record: the one
place that decides it, asked by the functions' calls (library/__init__.py) and by
`Bundle.warm()` (through `library_picks`, which the library registers with the runtime when
it is imported), so that warm() creates the pipelines of the kernels the calls will run on
that device and leaves out the others (docs/runtime.md, "Warming").

- reduce: the single pass (lib_reduce_once) or the two passes (lib_reduce), by the device
  (`reduce_kernel`);
- scan: the look-back (LOOK_BACK_KERNEL, or LOOK_BACK_WIDE from LOOK_WIDE_LEAST values) or
  reduce-then-scan (lib_scan_sums, lib_scan_block), by the device and the size
  (`scan_kernels`); lib_scan_once, lib_scan_look.acquire and lib_scan_pipe are run by no
  call (kept for comparison; lib_scan_pipe, timed on an H100, is level with the look-back at
  1-2M values and 0.45-0.73x its speed from 4M up: bench/RESULTS.md, 2026-12-06);
- matmul: the tuned candidate's kernel, else lib_matmul.f32 (library/tuning.py);
- matmul_f16: lib_mm_f16.f32 and .f16, and lib_matmul_f16 where a record picks it;
- matmul_bf16: lib_mm_bf16.f32 and .bf16;
- softmax, layer_norm: the short-row kernel (SHORT_ROWS, or the tuned one) up to the tuned
  longest short row, lib_{fn}.f32 past it (`row_kernel`).

A mapping of kernels without the kernel a device would take (a bundle built from an older
tree) gets what it holds: the two passes, reduce-then-scan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vyre_build.core.backends import BACKENDS
from vyre_build.core.features import VULKAN_MEMORY_MODEL, VULKAN_MEMORY_MODEL_DEVICE_SCOPE
from vyre_build.core.targets import MEMORY_ORDER
from vyre_build.library.call import fail
from vyre_build.library.tuning import library_choice
from vyre_build.runtime.bundles import Bundle, Pick
from vyre_build.runtime.device import Device

__all__ = [
    "LIBRARY_KERNELS",
    "f16_runs",
    "kernel_ids",
    "look_back_items",
    "library_picks",
    "matmul_runs",
    "reduce_kernel",
    "reduce_runs",
    "row_kernel",
    "row_runs",
    "scan_kernels",
    "scan_runs",
]

# softmax, layer_norm: (longest row, kernel suffix, rows per workgroup) of the short-row
# kernels (lib_norm_warp.py: one subgroup per row, several rows per 256-wide workgroup, 8
# vec4s per lane in registers at 32 lanes, read once); longer rows go to lib_norm.py (256
# invocations per row), which moves a 4096-value row at HBM bandwidth (H200: 1.3x torch)
# but leaves short rows latency-bound. They replace lib_norm_short.py's one row per
# 32-wide workgroup (0.40-0.60x torch at 4096x1024 on the H200: too few rows in flight).
# SHORT_ROWS: (longest row, kernel suffix) of the short-row kernel that runs with no tuning
# record; the suffix is one of SHORT_DESIGNS (kernel suffix: rows per workgroup at 32 lanes),
# the designs a tuning candidate may name: _warp (lib_norm_warp.py), _flat (lib_norm_flat.py:
# the same rows with straight-line loads) and _pair (lib_norm_flat.py: two rows per
# subgroup). bench/norm_bench.py times them side by side; the default is this one word:
# _flat since 2026-12-05 (an H100, 4096x1024, the device's own time per call: layer norm
# _flat 11.2 us, _pair 9.7, _warp 17.4-18.0, torch 18.3; softmax _flat 8.0, _pair 8.6,
# _warp 9.1-10.1, torch 10.4). The driver gives _warp's layer norm 105 registers per
# invocation, _flat's 80 (bench/pipeline_stats.py): 2 workgroups per SM against 3;
# _pair, faster alone, takes 128 and 23 KiB of shared memory, so it stays a candidate.
SHORT_ROWS = ((1024, "_flat"),)
SHORT_DESIGNS = {"_warp": 8, "_flat": 8, "_pair": 16}
_NUMERIC = ("f32", "i32", "u32")
_OPS = ("sum", "min", "max")
# The kernel ids each function uses ({op}: the reduction, {t}: the element type).
LIBRARY_KERNELS = {
    "reduce": ("lib_reduce.{op}_{t}", "lib_reduce_once.{op}_{t}"),
    "scan": (
        "lib_scan_sums.{t}",
        "lib_scan_block.{t}",
        "lib_scan_look.{t}",
        "lib_scan_look.wide_{t}",
        "lib_scan_look.acquire_{t}",
        "lib_scan_once.{t}",
        "lib_scan_pipe.{t}",
    ),
    "matmul": (
        "lib_matmul.f32",
        "lib_matmul.f32_pad",
        "lib_matmul.f32_64",
        "lib_matmul.f32_64p",
        "lib_matmul.f32_128x64",
        "lib_matmul.f32_64x128",
        "lib_matmul.f32_k16",
        "lib_matmul.f32_k16p",
    ),
    "matmul_f16": ("lib_matmul_f16", "lib_mm_f16.f32", "lib_mm_f16.f16"),
    "matmul_bf16": ("lib_mm_bf16.f32", "lib_mm_bf16.bf16"),
    "softmax": tuple(f"lib_softmax{s}.f32" for s in ("", *SHORT_DESIGNS)),
    "layer_norm": tuple(f"lib_layer_norm{s}.f32" for s in ("", *SHORT_DESIGNS)),
}


def kernel_ids() -> tuple[str, ...]:
    """Every kernel id the library's functions use on some device, sorted (`bundle.warm()`
    makes those they run on its device: library_picks)."""
    ids = {
        template.format(op=op, t=t)
        for templates in LIBRARY_KERNELS.values()
        for template in templates
        for op in _OPS
        for t in _NUMERIC
    }
    return tuple(sorted(ids))


# The device features the single passes need (their device-scope release/acquire).
SINGLE_PASS_FEATURES = frozenset({VULKAN_MEMORY_MODEL, VULKAN_MEMORY_MODEL_DEVICE_SCOPE})


def reduce_kernel(device: Device, op: str = "sum", dtype: str = "f32") -> str:
    """The kernel id that `reduce` runs on `device`: the single pass (lib_reduce_once, one
    dispatch: the last workgroup to finish combines the partials, found with a device-scope
    acq_rel ticket) where the device has the Vulkan memory model with device scope
    (SINGLE_PASS_FEATURES: GPU Vulkan devices that offer it, the cpu reference), else the
    two passes of lib_reduce (wgpu: WGSL has no release/acquire; lavapipe, where the memory
    model's modules run about 3x slower). A Bundle without the single-pass
    kernel (built from an older tree) gets the two passes.

    Arguments:
        device: a runtime Device.
        op: "sum", "min" or "max".
        dtype: "f32", "i32" or "u32".
    Returns:
        The kernel id, e.g. "lib_reduce_once.sum_f32" or "lib_reduce.sum_f32".
    """
    if not isinstance(device, Device):
        raise fail("reduce_kernel", f"device must be a Device, got {type(device).__name__}")
    if op not in _OPS:
        raise fail("reduce_kernel", f"op must be 'sum', 'min' or 'max', got {op!r}")
    if dtype not in _NUMERIC:
        raise fail("reduce_kernel", f"dtype must be 'f32', 'i32' or 'u32', got {dtype!r}")
    once = SINGLE_PASS_FEATURES <= device.profile.features and _single_pass_pays(device)
    return f"lib_reduce{'_once' if once else ''}.{op}_{dtype}"


def _single_pass_pays(device: Device) -> bool:
    # A Vulkan driver on the CPU (lavapipe) runs modules under the Vulkan memory model about
    # 3x slower (lib_reduce_once 22 ms, the two passes 7.4 ms, 2^20 f32 here): it keeps the
    # two passes. A backend with no GPU driver (the cpu reference, the judge of both) takes
    # the single pass.
    p = device.profile
    return not BACKENDS[device.backend].gpu or p.device_type != "CPU"


# Vendors whose Vulkan drivers run a dispatch's started workgroups to completion while
# others wait on them (docs/runtime.md, "Forward progress"): NVIDIA, AMD.
FORWARD_PROGRESS_VENDORS = frozenset({0x10DE, 0x1002})
# Of those, the vendors where the look-back was measured faster than reduce-then-scan:
# NVIDIA. The first look-back kernel (lib_scan_once: one invocation walks back per tile)
# lost to the two passes on the H200 (237 us against 70 us at 16.7M f32, 2026-12-02);
# lib_scan_look (a subgroup walks back, a lane per predecessor, over tiles of 8,192 values
# scanned before the walk) beats them on an H100 (driver 580, bench/scan_bench.py,
# bench/RESULTS.md 2026-12-05 14:3x): f32 30.8 us against 98.0 us at 1M (3.2x), 82.2
# against 101.8 at 16.7M (1.24x), i32 the same; at 268M 1.02-1.04x. AMD keeps the two
# passes until a run there says otherwise. The cpu reference, the judge, runs the look-back.
LOOK_BACK_PAYS_VENDORS: frozenset[int] = frozenset({0x10DE})
# Of those, the vendors whose GPUs start a dispatch's workgroups in id order, which the
# library's look-back kernels assume (WGID in kernels/lib_scan.py: a tile is its
# workgroup's id, so every tile it waits for belongs to a workgroup that has started;
# CUB's single-pass scan takes its tile from blockIdx.x on the same assumption): NVIDIA.
# AMD's rocPRIM draws an ordered id instead; a vendor joins LOOK_BACK_PAYS_VENDORS only
# with this (tests/gpu/test_memory_order_dispatch.py).
IN_ORDER_VENDORS: frozenset[int] = frozenset({0x10DE})
# The look-back kernel scan_kernels names ({t}: the element type): "lib_scan_look.{t}" (the
# tile from the workgroup id, each status value as two tagged halves read with relaxed
# loads), "lib_scan_look.acquire_{t}" (a ticket per tile, flags read with acquire loads, no
# fence; lavapipe runs that form wrong: tiles after the first never finish), or
# "lib_scan_once.{t}" (the first design, kept for comparison); and each kernel's vec4s per
# invocation per tile.
LOOK_BACK_KERNEL = "lib_scan_look.{t}"
LOOK_BACK_ITEMS = {  # kernels/lib_scan.py: lib_scan_look's HELD, lib_scan_once's ITEMS
    "lib_scan_look.{t}": 8,
    "lib_scan_look.acquire_{t}": 8,
    "lib_scan_look.wide_{t}": 16,
    "lib_scan_once.{t}": 4,
}


# LOOK_BACK_ITEMS by kernel id, each template formatted once
_ITEMS_BY_ID = {tpl.format(t=t): n for tpl, n in LOOK_BACK_ITEMS.items() for t in _NUMERIC}


def look_back_items(kid: str) -> int:
    """The vec4s per invocation per tile of look-back kernel `kid` (LOOK_BACK_ITEMS), e.g.
    16 for "lib_scan_look.wide_f32"; KeyError for another id."""
    return _ITEMS_BY_ID[kid]


# The look-back over tiles twice as wide (kernels/lib_scan.py's lib_scan_look variants
# wide_*: 16 vec4s per invocation in registers, HELD = 16), which scans of LOOK_WIDE_LEAST values or more take on a device with the
# LOOK_WIDE_SHARED bytes of shared memory it declares. On an H100 (driver 580, 2026-12-05
# 23:2x UTC, bench/scan_bench.py, one run), lib_scan_look.wide against lib_scan_look, f32: 12.0
# against 11.0 us at 1M (too few tiles of 16,384 values to fill the GPU), 14.0 against 14.5
# at 2M, 19.5 against 21.8 at 4M, 72.1 against 81.4 at 16.7M (0.97x torch), 253 against 305
# at 67M, 978 against 1196 at 268M (1.04x torch; reduce-then-scan 1102); i32 alike (13.8
# against 14.0 at 2M, 967 against 1092 at 268M). Built with workgroups of 128 (tiles of
# 8,192) it lost at every size (79.8 us at 16.7M); 512 passes the portable limit.
LOOK_BACK_WIDE = "lib_scan_look.wide_{t}"
LOOK_WIDE_LEAST = 1 << 21
LOOK_WIDE_SHARED = 17424
# The most values a GPU's f32 scan takes lib_scan_look for (without LOOK_BACK_WIDE); past
# it, reduce-then-scan.
# bench/scan_bench.py on an H100 (driver 580, 2026-12-05 18:2x UTC), look-back against
# reduce-then-scan in one run: f32 2.42x at 1M, 1.17x at 4M, 1.05x at 16.7M, then 0.97x at
# 67M, 0.94x at 134M and 268M; i32 1.02-3.2x at every size up to 268M (its look-back runs
# 1095 us at 268M against f32's 1198). The H200 alike at 268M (f32 977 us, i32 886 us,
# reduce-then-scan 825-901). So f32 scans past 2^25 values take reduce-then-scan; integer
# scans keep the look-back. The cpu reference takes the look-back at any size.
# Stale on the H100 since (2026-12-07 01:5x UTC, bench/RESULTS.md): with each tile's total
# posted before its scan the 8-vec4 look-back beats reduce-then-scan 1.34x at 67M and 1.32x
# at 268M (f32); kept until an H200 run, whose last figures (before four changes to the
# look-back) had the two level. It applies only to a bundle without LOOK_BACK_WIDE.
LOOK_BACK_MOST = 1 << 25
LOOK_BACK_LIMITED = frozenset({"f32"})  # the element types LOOK_BACK_MOST applies to


def scan_kernels(
    device: Device, dtype: str = "f32", n: int | None = None, *, wide: bool = True
) -> tuple[str, ...]:
    """The kernel ids that `scan` runs on `device`, in dispatch order: the single pass with
    decoupled look-back where the device has the Vulkan memory model with device scope,
    gives forward progress between workgroups, starts them in id order and the look-back
    pays (a Vulkan device of FORWARD_PROGRESS_VENDORS, IN_ORDER_VENDORS and
    LOOK_BACK_PAYS_VENDORS: NVIDIA; or the cpu reference, whose schedule gives it): LOOK_BACK_WIDE (lib_scan_look.wide_*) for LOOK_WIDE_LEAST values or more
    on a device with LOOK_WIDE_SHARED bytes of shared memory, else LOOK_BACK_KERNEL
    (lib_scan_look); else reduce-then-scan (lib_scan_sums, lib_scan_block: wgpu,
    lavapipe/llvmpipe and every other device, and a GPU's f32 scans of more than
    LOOK_BACK_MOST values that lib_scan_look would take). A Bundle without the single-pass
    kernel gets reduce-then-scan.

    Arguments:
        device: a runtime Device.
        dtype: "f32", "i32" or "u32".
        n: the number of values scanned; None: the pick for sizes below LOOK_WIDE_LEAST.
        wide: False: the pick without LOOK_BACK_WIDE (a bundle built without it).
    Returns:
        The ids, e.g. ("lib_scan_look.f32",) or ("lib_scan_sums.f32", "lib_scan_block.f32").
    """
    if not isinstance(device, Device):
        raise fail("scan_kernels", f"device must be a Device, got {type(device).__name__}")
    if dtype not in _NUMERIC:
        raise fail("scan_kernels", f"dtype must be 'f32', 'i32' or 'u32', got {dtype!r}")
    p = device.profile
    backend = BACKENDS[device.backend]
    # The vendor's word counts for a backend whose code can say release/acquire (Vulkan's
    # SPIR-V; not wgpu's WGSL); a backend that gives forward progress itself (the cpu
    # reference) needs none.
    progress = backend.forward_progress or (
        not backend.artifact.lacks((MEMORY_ORDER,))
        and p.vendor_id in FORWARD_PROGRESS_VENDORS
        and p.vendor_id in LOOK_BACK_PAYS_VENDORS
        and p.vendor_id in IN_ORDER_VENDORS
    )
    two = (f"lib_scan_sums.{dtype}", f"lib_scan_block.{dtype}")
    if not progress or not SINGLE_PASS_FEATURES <= p.features:
        return two
    if wide and n is not None and n >= LOOK_WIDE_LEAST:
        if p.max_shared_memory >= LOOK_WIDE_SHARED:
            return (LOOK_BACK_WIDE.format(t=dtype),)
    large = n is not None and n > LOOK_BACK_MOST and dtype in LOOK_BACK_LIMITED
    if large and not backend.forward_progress:
        return two
    return (LOOK_BACK_KERNEL.format(t=dtype),)


def row_kernel(fn: str, cols: int) -> str:
    """The kernel id that softmax or layer_norm runs for rows of `cols` values: the
    subgroup-per-row kernel (lib_norm_flat.py) up to 1,024 values, lib_norm.py's past that
    (SHORT_ROWS).

    Arguments:
        fn: "softmax" or "layer_norm".
        cols: the row length (x's last axis), at least 1.
    Returns:
        The kernel id, e.g. "lib_softmax_flat.f32" for rows of 1024 values.
    """
    if fn not in ("softmax", "layer_norm"):
        raise fail("row_kernel", f"fn must be 'softmax' or 'layer_norm', got {fn!r}")
    if isinstance(cols, bool) or not isinstance(cols, int) or cols < 1:
        raise fail("row_kernel", f"cols must be an integer >= 1, got {cols!r}")
    return _row_kernel(fn, cols)[0]


def _row_kernel(
    fn: str, cols: int, short_rows: int | None = None, kernel: str | None = None
) -> tuple[str, int]:
    # (kernel id, rows per workgroup) of `fn` for rows of `cols` values; `short_rows`: a
    # tuned longest row for the short-row kernel (docs/tuning.md), else SHORT_ROWS's;
    # `kernel`: a tuned short-row kernel (one of SHORT_DESIGNS), else SHORT_ROWS's.
    shorts = SHORT_ROWS if short_rows is None else ((short_rows, SHORT_ROWS[0][1]),)
    suffix = next((s for longest, s in shorts if cols <= longest), "")
    if suffix and kernel is not None:
        suffix = kernel[len(f"lib_{fn}") : -len(".f32")]
    return f"lib_{fn}{suffix}.f32", SHORT_DESIGNS.get(suffix, 1)


# -- what a call runs: asked by the call and by library_picks ------------------------------


def reduce_runs(kernels: Mapping[str, Any], device: Device, op: str, kind: str) -> str:
    """The kernel id `reduce` (op, kind) runs from `kernels` on `device`: reduce_kernel's
    pick where the mapping holds it, else the two passes (lib_reduce)."""
    kid = reduce_kernel(device, op, kind)
    return kid if kid in kernels else f"lib_reduce.{op}_{kind}"


def scan_runs(
    kernels: Mapping[str, Any], device: Device, kind: str, n: int | None = None
) -> tuple[str, ...]:
    """The kernel ids `scan` of `kind` over `n` values runs from `kernels` on `device`, in
    dispatch order: scan_kernels's pick where the mapping holds it (its pick without
    LOOK_BACK_WIDE where the mapping lacks that), else reduce-then-scan."""
    for wide in (True, False):
        chosen = scan_kernels(device, kind, n, wide=wide)
        if all(kid in kernels for kid in chosen):
            return chosen
    return (f"lib_scan_sums.{kind}", f"lib_scan_block.{kind}")


def matmul_runs(kernels: Mapping[str, Any]) -> tuple[str, dict[str, int]]:
    """(the kernel id `matmul` runs: the tuned candidate's, else lib_matmul.f32; its host
    parameters, library/tuning.py)."""
    tuned_kid, tuned = library_choice(kernels, "matmul")
    return tuned_kid or "lib_matmul.f32", tuned


def f16_runs(kernels: Mapping[str, Any], kind: str, fits: bool) -> str:
    """The kernel id `matmul_f16` runs for output `kind` ("f32", "f16"): the unstaged
    lib_matmul_f16 where a tuning record picks it, the output is f32 and the shape `fits`
    it (library.DIRECT_TILE), else the staged lib_mm_f16.{kind}."""
    direct = kind == "f32" and fits
    direct = direct and library_choice(kernels, "matmul_f16")[0] == "lib_matmul_f16"
    return "lib_matmul_f16" if direct else f"lib_mm_f16.{kind}"


def row_runs(kernels: Mapping[str, Any], fn: str, cols: int) -> tuple[str, int]:
    """(kernel id, rows per workgroup) that `fn` (softmax, layer_norm) runs for rows of
    `cols` values: the tuned pick's (short-row kernel, longest short row), else
    SHORT_ROWS's."""
    tuned, params = library_choice(kernels, fn)
    return _row_kernel(fn, cols, params["short_rows"], tuned)


def _among(kernels: Bundle, fn: str, op: str = "sum", t: str = "f32") -> tuple[str, ...]:
    # The kernel ids of `fn` for `op` and `t` (LIBRARY_KERNELS), and those its tunable's
    # candidates name (a matmul candidate may name any kernel).
    ids = [template.format(op=op, t=t) for template in LIBRARY_KERNELS[fn]]
    name = kernels.tunable_for(fn)
    if name is not None:
        candidates = kernels.reader.tuning["tunables"][name]["candidates"].values()
        ids += [c["kernel"] for c in candidates if c["kernel"] is not None]
    return tuple(dict.fromkeys(ids))


# a scan of each size class: below LOOK_WIDE_LEAST, from it, past LOOK_BACK_MOST
SCAN_SIZES = (None, LOOK_WIDE_LEAST, LOOK_BACK_MOST + 1)


def library_picks(kernels: Bundle) -> list[Pick]:
    """What the library's functions run from bundle `kernels` on its device, as their calls
    pick it (the functions above): per function, and per op and element type where the
    kernel depends on them, its kernels and those of them a call may run. Registered with
    the runtime (`register_picks`), for `Bundle.warm()`."""
    device = kernels.device
    out = [
        Pick(f"library.reduce ({op}, {t})", _among(kernels, "reduce", op, t),
             (reduce_runs(kernels, device, op, t),))
        for op in _OPS
        for t in _NUMERIC
    ]  # fmt: skip
    out += [
        Pick(
            f"library.scan ({t})",
            _among(kernels, "scan", t=t),
            # the pick of each size class
            tuple(dict.fromkeys(k for n in SCAN_SIZES for k in scan_runs(kernels, device, t, n))),
        )
        for t in _NUMERIC
    ]
    out.append(Pick("library.matmul", _among(kernels, "matmul"), (matmul_runs(kernels)[0],)))
    f16 = {f16_runs(kernels, kind, fits) for kind in ("f32", "f16") for fits in (True, False)}
    out.append(Pick("library.matmul_f16", _among(kernels, "matmul_f16"), tuple(sorted(f16))))
    bf16 = LIBRARY_KERNELS["matmul_bf16"]  # no tuned choice: the staged kernel of each output
    out.append(Pick("library.matmul_bf16", _among(kernels, "matmul_bf16"), bf16))
    for fn in ("softmax", "layer_norm"):
        longest = library_choice(kernels, fn)[1]["short_rows"]
        rows = {row_runs(kernels, fn, cols)[0] for cols in (1, longest + 1)}
        out.append(Pick(f"library.{fn}", _among(kernels, fn), tuple(sorted(rows))))
    return out
