"""Library kernels (vyre_build.library, kernels/lib_*.py) against torch on the GPU:
issue 12's figures for reduce, scan, fp32 matmul, softmax and layer norm.

    python3 bench/library_bench.py                     # the H200 run: every case, Vulkan and wgpu
    python3 bench/library_bench.py --quick             # small sizes, a smoke run (lavapipe here)
    python3 bench/library_bench.py --cases matmul_f32 --sizes 4096 --backends vulkan

Ours: each call is one library function on DeviceBuffers (out= included), as an
application keeping its data on the device calls it. "gpu": GPU timestamps around a
batch of `number` calls (Device.timing; wgpu where the adapter has timestamp-query, else
the batch's wall time, "wall"), so gaps between dispatches count; "ratio" is torch's time
over this one. A batch goes to the GPU in chunks while it is recorded, so where the host
takes longer per call than the GPU the figure is the host's. "host-inclusive": the wall time
per call of the same batches with the timestamps off, as an application's calls run (on
wgpu, timing records through wgpu-py's API instead of the runtime's native recorder), with
its own ratio ("host ratio": issue 23's wgpu target). "gpu alone" times the same calls
recorded whole before the batch is submitted: the device's own time per call, with its
ratio to torch's figure. torch: CUDA events around `number`
calls of torch.sum / torch.cumsum / torch.matmul (TF32 off) / torch.softmax /
F.layer_norm on the same values. Each figure is the median of --rounds rounds after a
warm-up round. Ratio = torch time / ours (> 1: faster than torch); GB/s counts the bytes
a kernel must move (read the input once, write the output once), TFLOP/s 2*M*N*K.
Every result is compared with torch's (numpy's without torch) and the line says so.
Targets (issue 12): reduce >= 1.0x, scan >= 1.2x, matmul >= 0.75x, softmax and layer
norm >= 1.0x. Softmax and layer norm lines end with the kernel that ran
(library.row_kernel: rows up to 1024 values take the subgroup-per-row kernel,
lib_norm_flat.py since 2026-12-05; issue 22's shapes 4096x1024, 8192x2048 and 16384x4096 by default);
softmax_256 and layer_norm_256 force lib_norm.py's 256-wide kernel on the same shapes (the
short-row designs side by side, and a copy of the same bytes: bench/norm_bench.py):

    python3 bench/library_bench.py --cases softmax,layer_norm,softmax_256,layer_norm_256

Reduce and scan run at 1M, 16.7M and 268M values (issue 23: single passes); each line ends
with the kernels the library picked on that device (library.reduce_kernel, scan_kernels:
the single pass with the Vulkan memory model, the look-back scan where the device also
gives forward progress, docs/runtime.md), so one run shows which path each figure is:

    python3 bench/library_bench.py --cases reduce_sum_f32,reduce_sum_u32,scan_f32,scan_i32
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from bench_env import cuda_torch  # noqa: E402  (bench/ is the script's folder)
from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.core.errors import DeviceError  # noqa: E402
from vyre_build.runtime import get_device, load_kernel  # noqa: E402
from vyre_build import library  # noqa: E402
from vyre_build.runtime.tuning import Choice  # noqa: E402

KERNELS = os.path.join(ROOT, "kernels")
LIB_FILES = (
    "lib_reduce.py",
    "lib_scan.py",
    "lib_matmul.py",
    "lib_norm.py",
    "lib_norm_warp.py",
    "lib_norm_flat.py",
)
CODE = {"wgpu": "wgsl", "vulkan": "spirv", "cpu": "kdesc"}


def say(line: str = "") -> None:
    print(line, flush=True)


def say_rate(
    stem: str, n: int | str, flop: float, ours: float, th: float | None, ok: bool, digits: int = 1
) -> None:
    """One matmul result line: `stem` at n x n (or a label), TFLOP/s of ours (seconds per call `ours`),
    the ratio to torch's seconds `th` (None: no torch), MISMATCH unless `ok`."""
    line = f"  {stem:<20} n={n:<6} {flop / ours / 1e12:7.{digits}f} TFLOP/s"
    if th is not None:
        line += f"   ratio {th / ours:.3f}x"
    say(line + ("" if ok else "   MISMATCH"))


@dataclass
class Case:
    """One benchmark: sizes at full scale and for --quick, the host data of a size, our
    call and torch's, how results are compared, and the work of one call."""

    name: str
    sizes: tuple
    quick: tuple
    parse: Callable[[str], Any]  # a --sizes entry -> a size
    data: Callable[[np.random.Generator, Any], dict]
    ours: Callable[[dict, Any, dict], Callable[[], Any]]  # (kernels, device, data) -> call
    torch: Callable[[Any, dict], Callable[[], Any]]  # (torch, tensors) -> call
    want: Callable[[dict], np.ndarray]  # numpy's result, when there is no torch
    work: Callable[[Any], tuple[float, str]]  # size -> (amount per call, unit)
    rtol: float  # |ours - reference| <= rtol * max |reference| (0: exact)
    kernel: Callable[[Any], str] | None = None  # size -> the kernel id our call runs
    path: Callable[[Any, Any], str] | None = None  # (device, size) -> the kernels it runs


# -- the cases ------------------------------------------------------------------------------


def _vector(kind: str):
    # Small integers (sums stay exact and unwrapped), floats in [0, 1).
    def make(rng, n):
        if kind == "f32":
            return {"x": rng.random(n, dtype=np.float32)}
        return {"x": rng.integers(0 if kind == "u32" else -2, 3, n).astype(np.dtype(kind[0] + "4"))}

    return make


def _bytes(per_element: int):
    return lambda n: (per_element * _count(n), "GB/s")


def _count(size) -> int:
    return int(np.prod(size))


def _reduce_ours(kind):
    def make(lib, dev, d):
        x, out = dev.buffer(d["x"]), dev.buffer(1, kind)
        return lambda: library.reduce(lib, x, "sum", out=out), out

    return make


def _torch_sum(kind):
    def make(torch, t):
        dtype = torch.int32 if kind != "f32" else torch.float32
        return lambda: torch.sum(t["x"], dtype=dtype)

    return make


def _scan_ours(kind):
    def make(lib, dev, d):
        x, out = dev.buffer(d["x"]), dev.buffer(d["x"].size, kind)
        return lambda: library.scan(lib, x, out=out), out

    return make


def _torch_cumsum(kind):
    def make(torch, t):
        dtype = torch.int32 if kind != "f32" else torch.float32
        out = torch.empty_like(t["x"], dtype=dtype)
        return lambda: torch.cumsum(t["x"], 0, dtype=dtype, out=out)

    return make


def _matmul_data(rng, n):
    return {
        "a": rng.uniform(-1, 1, (n, n)).astype(np.float32),
        "b": rng.uniform(-1, 1, (n, n)).astype(np.float32),
    }


def _matmul_ours(lib, dev, d):
    a, b = dev.buffer(d["a"]), dev.buffer(d["b"])
    out = dev.buffer(d["a"].shape, "f32")
    return lambda: library.matmul(lib, a, b, out=out), out


def _rows_data(rng, shape):
    rows, cols = shape
    return {
        "x": rng.uniform(-4, 4, (rows, cols)).astype(np.float32),
        "gamma": rng.uniform(0.5, 1.5, cols).astype(np.float32),
        "beta": rng.uniform(-1, 1, cols).astype(np.float32),
    }


def _softmax_ours(lib, dev, d):
    x, out = dev.buffer(d["x"]), dev.buffer(d["x"].shape, "f32")
    return lambda: library.softmax(lib, x, out=out), out


def _layer_norm_ours(lib, dev, d):
    x, out = dev.buffer(d["x"]), dev.buffer(d["x"].shape, "f32")
    g, b = dev.buffer(d["gamma"]), dev.buffer(d["beta"])
    return lambda: library.layer_norm(lib, x, g, b, 1e-5, out=out), out


def _layer_norm_want(d):
    x = d["x"].astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * d["gamma"] + d["beta"]


def _softmax_want(d):
    e = np.exp(d["x"] - d["x"].max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _torch_softmax(torch, t):
    return lambda: torch.softmax(t["x"], -1)


def _torch_layer_norm(torch, t):
    f = torch.nn.functional
    return lambda: f.layer_norm(t["x"], (t["x"].shape[-1],), t["gamma"], t["beta"], 1e-5)


def _row_kernel(fn):
    return lambda size: library.row_kernel(fn, size[1])


def _long_kernel(fn):
    return lambda size: f"lib_{fn}.f32"


class _WideRows(dict):
    """The library's kernels with softmax's and layer norm's short_rows tuned to 0 (every
    row on the 256-wide kernel), through the tuning interface the library reads."""

    def tunable_for(self, fn: str) -> str:
        return fn

    def tuned(self, name: str) -> Choice:
        return Choice(name, "wide", None, {"short_rows": 0}, "forced", None)


def _long_rows(make):
    # The *_256 cases: every row on lib_norm.py's 256-wide kernel (no short-row kernels),
    # the baseline the short-row kernels and their thresholds are judged against.
    def wrapped(lib, dev, d):
        return make(_WideRows(lib), dev, d)

    return wrapped


def _shape(text: str) -> tuple[int, int]:
    rows, cols = text.lower().split("x")
    return int(rows), int(cols)


M1, M16, M268 = 1_048_576, 16_777_216, 268_435_456
# Issue 12's and 22's row shapes (1024 values: the subgroup-per-row kernel; 4096: the
# 256-wide one) and 2048 values, past the short kernel's threshold; softmax_256 and layer_norm_256
# run every shape on the 256-wide kernel, to compare.
ROW_SIZES = ((4096, 1024), (8192, 2048), (16384, 4096))
ROW_QUICK = ((64, 1024), (33, 1000), (16, 2047), (9, 3001))
CASES = [
    *(
        Case(
            f"reduce_sum_{k}",
            (M1, M16, M268),
            (1 << 16, 1_000_003),
            int,
            _vector(k),
            _reduce_ours(k),
            _torch_sum(k),
            lambda d: np.array([d["x"].sum(dtype=d["x"].dtype)]),
            _bytes(4),
            1e-5 if k == "f32" else 0.0,
            path=lambda dev, n, k=k: library.reduce_kernel(dev, "sum", k),
        )
        for k in ("f32", "u32")
    ),
    *(
        Case(
            f"scan_{k}",
            (M1, M16, M268),
            (1 << 16, 1_000_003),
            int,
            _vector(k),
            _scan_ours(k),
            _torch_cumsum(k),
            lambda d: np.cumsum(d["x"], dtype=np.float64 if d["x"].dtype == np.float32 else None),
            _bytes(8),
            1e-4 if k == "f32" else 0.0,
            path=lambda dev, n, k=k: " + ".join(library.scan_kernels(dev, k, n)),
        )
        for k in ("f32", "i32")
    ),
    Case(
        "matmul_f32",
        (2048, 4096, 8192),
        (64, 200),
        int,
        _matmul_data,
        _matmul_ours,
        lambda torch, t: lambda: torch.matmul(t["a"], t["b"]),
        lambda d: d["a"] @ d["b"],
        lambda n: (2.0 * n**3, "TFLOP/s"),
        1e-4,
    ),
    *(
        Case(
            fn + suffix,
            ROW_SIZES,
            ROW_QUICK,
            _shape,
            _rows_data,
            _long_rows(ours) if suffix else ours,
            theirs,
            want,
            _bytes(8),
            rtol,
            _long_kernel(fn) if suffix else _row_kernel(fn),
        )
        for fn, ours, theirs, want, rtol in (
            ("softmax", _softmax_ours, _torch_softmax, _softmax_want, 1e-5),
            ("layer_norm", _layer_norm_ours, _torch_layer_norm, _layer_norm_want, 1e-4),
        )
        for suffix in ("", "_256")
    ),
]


# -- timing -------------------------------------------------------------------------------


def time_ours(dev, call, number: int, rounds: int) -> tuple[float, float]:
    """(GPU seconds per call, or wall where the backend has no timestamps; wall seconds
    per call, host included), medians over rounds after a warm-up round."""
    gpu, wall = [], []
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        with dev.batch():
            for _ in range(number):
                call()
        dev.wait()
        if r:
            wall.append((time.perf_counter() - t0) / number)
            if dev.gpu_seconds is not None:
                gpu.append(dev.gpu_seconds / number)
    w = statistics.median(wall)
    return (statistics.median(gpu) if gpu else w), w


def time_host(dev, call, number: int, rounds: int) -> float:
    """Wall seconds per call of a batch of `number` calls, host included, with the device's
    timestamps off: the path an application's calls take (on wgpu, Device.timing records
    through wgpu-py's API instead of the native recorder). Median over rounds after a
    warm-up round."""
    timing, dev.timing = dev.timing, False
    try:
        return time_ours(dev, call, number, rounds)[1]
    finally:
        dev.timing = timing


def time_gpu_alone(dev, call, number: int, rounds: int) -> float | None:
    """GPU seconds per call with each batch recorded whole before it is submitted (no
    chunk goes early), so that the GPU never waits for the host: what the dispatches take
    on the device, the gaps between them included (median over rounds after a warm-up
    round); None where the backend has no timestamps. time_ours's figure is this one where
    the host keeps up, and the host's time per call where it does not."""
    gpu = []
    for r in range(rounds + 1):
        with dev.batch() as batch:
            batch.chunk = 1 << 30
            for _ in range(number):
                call()
        dev.wait()
        if r and dev.gpu_seconds is not None:
            gpu.append(dev.gpu_seconds / number)
    return statistics.median(gpu) if gpu else None


def time_torch(torch, call, number: int, rounds: int) -> float:
    """GPU seconds per call from CUDA events, median over rounds after a warm-up round."""
    times = []
    for r in range(rounds + 1):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(number):
            call()
        end.record()
        torch.cuda.synchronize()
        if r:
            times.append(start.elapsed_time(end) / 1e3 / number)
    return statistics.median(times)


def calls_for(run: Callable[[], Any], wait: Callable[[], Any], budget: float = 0.03) -> int:
    """How many calls fill about `budget` seconds (5 to 1000), from the wall time of 5
    calls after a first one (which may create pipelines or load libraries): the fastest
    of three such sets, so that one slow moment does not set a case's batches small."""
    run()
    wait()
    per_call = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(5):
            run()
        wait()
        per_call = min(per_call, (time.perf_counter() - t0) / 5)
    return max(5, min(1000, int(budget / max(per_call, 1e-7))))


# -- the run --------------------------------------------------------------------------------


def timed_device(backend: str):
    """get_device(backend) with its timestamps on (Device.timing), after a line naming it and
    its subgroup size."""
    dev = get_device(backend)
    dev.timing = True
    p = dev.profile
    say(f"{backend}: {dev.name} (subgroup size {p.subgroup_size or p.subgroup_size_range})")
    return dev


def kernels_for(dev, compiled) -> dict:
    # Every kernel the device can run: the single passes have no WGSL, and need the Vulkan
    # memory model (the library then takes the multi-pass path: library.reduce_kernel).
    out = {}
    for k in compiled:
        code = getattr(k, CODE[dev.backend])
        if code is None:
            continue
        try:
            out[k.stem] = load_kernel(k.meta, device=dev, **{CODE[dev.backend]: code})
        except DeviceError:
            continue
    return out


def agree(ours: np.ndarray, want: np.ndarray, rtol: float) -> tuple[bool, float]:
    """Whether ours is within rtol * max|want| of want everywhere, and the worst error."""
    ours = ours.reshape(-1).astype(np.float64)
    want = want.reshape(-1).astype(np.float64)
    err = float(np.max(np.abs(ours - want))) if ours.size else 0.0
    return err <= rtol * max(1.0, float(np.max(np.abs(want)))), err


def run_case(case: Case, size, backends, lib, torch, args) -> None:
    rng = np.random.default_rng(0)
    data = case.data(rng, size)
    amount, unit = case.work(size)
    scale = 1e12 if unit == "TFLOP/s" else 1e9
    ref_time, want, torch_line = None, None, ""
    if torch is not None:
        # u32 values go to torch as int32 (same bits; its uint32 support is partial)
        tensors = {
            k: torch.from_numpy(v.view(np.int32) if v.dtype == np.uint32 else v).cuda()
            for k, v in data.items()
        }
        call = case.torch(torch, tensors)
        number = args.number or calls_for(call, torch.cuda.synchronize)
        ref_time = time_torch(torch, call, number, args.rounds)
        want = call().cpu().numpy()
        torch_line = f"torch {amount / ref_time / scale:9.1f} {unit}"
        del tensors, call
        torch.cuda.empty_cache()
    else:
        want = case.want(data)
    for backend in backends:
        dev = lib[backend][0]
        call, out = case.ours(lib[backend][1], dev, data)
        number = args.number or calls_for(call, dev.wait)
        ours, _ = time_ours(dev, call, number, args.rounds)
        kind = "gpu" if dev.gpu_seconds is not None else "wall"
        wall = time_host(dev, call, number, args.rounds)
        alone = time_gpu_alone(dev, call, number, args.rounds)
        got = out.read()
        ok, err = agree(got, np.asarray(want), case.rtol)
        line = (
            f"  [{backend:<6}] {case.name:<15} {str(size):<14} ours {amount / ours / scale:9.1f} "
            f"{unit} ({kind} {ours * 1e6:9.1f} us, host-inclusive {wall * 1e6:9.1f} us, "
            f"{number} calls a batch)"
        )
        if ref_time is not None:
            line += f" | {torch_line} ({ref_time * 1e6:9.1f} us) ratio {ref_time / ours:6.3f}x"
            line += f" host ratio {ref_time / wall:6.3f}x"
        if alone is not None:
            line += f" | gpu alone {alone * 1e6:8.1f} us" + (
                f" ({ref_time / alone:6.3f}x)" if ref_time is not None else ""
            )
        line += f"   {'matches ' + ('torch' if torch else 'numpy') if ok else 'MISMATCH'}"
        line += "" if ok else f" (max error {err:.3g})"
        if case.path is not None:  # the path the library picks on this device
            line += f"   [{case.path(dev, size)}]"
        say(line + (f"   [{case.kernel(size)}]" if case.kernel else ""))
        del call, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument(
        "--cases", default="", help="comma list of: " + ", ".join(c.name for c in CASES)
    )
    ap.add_argument("--sizes", default="", help="comma list (n, a matmul side, or ROWSxCOLS)")
    ap.add_argument("--backends", default="vulkan,wgpu")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--number", type=int, default=0, help="calls per round (default: ~20 ms)")
    args = ap.parse_args(argv)
    by_name = {c.name: c for c in CASES}
    named = list(dict.fromkeys(filter(None, args.cases.split(","))))
    unknown = set(named) - set(by_name)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; choose from {list(by_name)}")
    # the cases in the order given (a case's place in a run can matter: clocks, caches)
    chosen = [by_name[name] for name in named] if named else list(CASES)
    torch = cuda_torch()
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    compiled = [k for f in LIB_FILES for k in compile_file(os.path.join(KERNELS, f), root=KERNELS)]
    backends = args.backends.split(",")
    lib = {}
    for b in backends:
        dev = timed_device(b)
        lib[b] = (dev, kernels_for(dev, compiled))
    say(
        f"torch: {torch.cuda.get_device_name() if torch else 'absent (results checked against numpy)'}"
    )
    start = time.perf_counter()
    for case in chosen:
        sizes = case.quick if args.quick else case.sizes
        if args.sizes:
            sizes = tuple(case.parse(s) for s in args.sizes.split(","))
        for size in sizes:
            run_case(case, size, backends, lib, torch, args)
    say(f"total {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
