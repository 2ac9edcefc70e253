"""The short-row softmax and layer norm designs side by side, with torch, in one run: which
kernel library.softmax / layer_norm should run for rows of up to 1024 values (issue 22,
item 4: 1.0x torch or better at 4096x1024).

    python3 bench/norm_bench.py                 # the H200 run (Vulkan; add --backends vulkan,wgpu)
    python3 bench/norm_bench.py --quick         # small shapes, a smoke run (lavapipe here)

Designs (library.SHORT_DESIGNS, each forced through the tuning interface the library
reads, as `vyre-build tune` does):
  _warp  kernels/lib_norm_warp.py, the default until 2026-12-05: one subgroup per row, each of a
         lane's 8 vec4 loads under its own branches;
  _flat  kernels/lib_norm_flat.py, the default since then: the same rows per subgroup, the 8 loads straight-line
         (index clamped into the row, a select past its end), gamma/beta in one block;
  _pair  kernels/lib_norm_flat.py: two rows per subgroup, 16 loads in flight per lane;
  wide   kernels/lib_norm.py, one 256-wide workgroup per row (short_rows 0).
First, per shape, a copy of the same bytes (bench/kernels/copy_rows.py, one dispatch per
call as the library's; torch: Tensor.copy_): the floor of this runtime at that size, L2
residency and gaps between calls included, so a design near it is as fast as one dispatch
moving those bytes can be. Each line: GPU microseconds per call (Vulkan timestamps around
a batch of calls, median of --rounds), GB/s of the bytes that must move (read x once,
write once), the ratio against _warp measured in the same run and against torch (> 1:
faster), and whether the result matches torch (numpy without torch); _warp runs again
last ("_warp'"), so the spread of its two figures shows the drift within one shape. The winner is the design to name in
vyre_build/library/picks.py SHORT_ROWS (one line) or as the tuning candidate
kernels/tuning.yaml gives it (flat1024, pair1024).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_env import cuda_torch  # noqa: E402
from library_bench import (  # noqa: E402
    CODE,
    KERNELS,
    LIB_FILES,
    _layer_norm_ours,
    _layer_norm_want,
    _rows_data,
    _softmax_ours,
    _softmax_want,
    _torch_layer_norm,
    _torch_softmax,
    agree,
    calls_for,
    kernels_for,
    say,
    time_gpu_alone,
    time_ours,
    time_torch,
    timed_device,
)

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.runtime import load_kernel  # noqa: E402
from vyre_build import library  # noqa: E402
from vyre_build.runtime.tuning import Choice  # noqa: E402

SHAPES = ((4096, 1024), (16384, 1024), (4096, 512), (8192, 768), (1024, 1024))
QUICK = ((64, 1024), (33, 1000), (9, 32), (70, 5))
DESIGNS = (*library.SHORT_DESIGNS, "wide", "_warp'")  # _warp' : _warp again, for drift
FUNCS = {
    "softmax": (_softmax_ours, _torch_softmax, _softmax_want, 1e-5),
    "layer_norm": (_layer_norm_ours, _torch_layer_norm, _layer_norm_want, 1e-4),
}


def code_of(compiled, dev) -> dict:
    """The load_kernel argument of `compiled`'s code for `dev`'s backend."""
    name = CODE[dev.backend]
    return {name: getattr(compiled, name)}


class Forced(dict):
    """The library's kernels with the short-row design forced (wide: short_rows 0)."""

    def __init__(self, kernels, design):
        super().__init__(kernels)
        self.design = design.rstrip("'")

    def tunable_for(self, fn):
        return fn

    def tuned(self, name):
        if self.design == "wide":
            return Choice(name, "wide", None, {"short_rows": 0}, "forced", None)
        kid = f"lib_{name}{self.design}.f32"
        return Choice(name, self.design, kid, {"short_rows": 1024}, "forced", None)


def floor(shape, backends, lib, floors, torch, args) -> None:
    """The same bytes copied (bench/kernels/copy_rows.py; torch: Tensor.copy_): what one
    dispatch moving them costs at this size, L2 residency and gaps between calls included."""
    x = _rows_data(np.random.default_rng(0), shape)["x"]
    nbytes = 8 * x.size
    if torch is not None:
        t = torch.from_numpy(x).cuda()
        o = torch.empty_like(t)
        call = lambda: o.copy_(t)  # noqa: E731
        ref = time_torch(
            torch, call, args.number or calls_for(call, torch.cuda.synchronize), args.rounds
        )
        say(
            f"  copy       {str(shape):<13} torch        {ref * 1e6:8.1f} us {nbytes / ref / 1e9:7.1f} GB/s"
        )
        del t, o, call
    for backend in backends:
        dev, _ = lib[backend]
        xb, ob = dev.buffer(x.reshape(-1, 4)), dev.buffer(x.size // 4 * 4, "f32")
        grid = min(-(-x.size // 4 // 256), 65535) * 256

        def call(k=floors[backend], a={"x4": xb, "out4": ob}, g=grid):  # noqa: B006
            return k.dispatch(a, grid=g)

        gpu, _ = time_ours(dev, call, args.number or calls_for(call, dev.wait), args.rounds)
        ok = np.array_equal(ob.read().reshape(-1), x.reshape(-1))
        say(
            f"  [{backend:<6}] copy       {str(shape):<13} floor  {gpu * 1e6:8.1f} us "
            f"{nbytes / gpu / 1e9:7.1f} GB/s  {'matches' if ok else 'MISMATCH'}  [copy_rows4]"
        )
        del call


def run_shape(fn, shape, backends, lib, torch, args) -> None:
    ours_of, torch_of, want_of, rtol = FUNCS[fn]
    data = _rows_data(np.random.default_rng(0), shape)
    nbytes = 8 * shape[0] * shape[1]
    ref, want = None, None
    if torch is not None:
        t = {k: torch.from_numpy(v).cuda() for k, v in data.items()}
        call = torch_of(torch, t)
        ref = time_torch(
            torch, call, args.number or calls_for(call, torch.cuda.synchronize), args.rounds
        )
        want = call().cpu().numpy()
        say(
            f"  {fn:<10} {str(shape):<13} torch        {ref * 1e6:8.1f} us {nbytes / ref / 1e9:7.1f} GB/s"
        )
        del t, call
        torch.cuda.empty_cache()
    else:
        want = want_of(data)
    for backend in backends:
        dev, kernels = lib[backend]
        base = None
        for design in DESIGNS:
            forced = Forced(kernels, design)
            call, out = ours_of(forced, dev, data)
            number = args.number or calls_for(call, dev.wait)
            gpu, _ = time_ours(dev, call, number, args.rounds)
            alone = time_gpu_alone(dev, call, number, args.rounds)
            ok, err = agree(out.read(), np.asarray(want), rtol)
            base = gpu if base is None else base
            kid = library._row_kernel(
                fn,
                shape[1],
                0 if forced.design == "wide" else 1024,
                None if forced.design == "wide" else forced.tuned(fn).kernel,
            )[0]
            line = (
                f"  [{backend:<6}] {fn:<10} {str(shape):<13} {design:<6} {gpu * 1e6:8.1f} us "
                f"{nbytes / gpu / 1e9:7.1f} GB/s  vs _warp {base / gpu:5.2f}x"
            )
            if ref is not None:
                line += f"  vs torch {ref / gpu:5.3f}x"
            if alone is not None:  # the device's own time (library_bench.time_gpu_alone)
                line += f"  alone {alone * 1e6:6.1f} us"
                line += f" ({ref / alone:5.3f}x)" if ref is not None else ""
            line += "  matches" if ok else f"  MISMATCH (max error {err:.3g})"
            say(line + f"  [{kid}]")
            del call, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small shapes: a smoke run")
    ap.add_argument("--shapes", default="", help="comma list of ROWSxCOLS")
    ap.add_argument("--funcs", default="softmax,layer_norm")
    ap.add_argument("--backends", default="vulkan")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-floor", action="store_true", help="skip the copy of the same bytes")
    ap.add_argument("--number", type=int, default=0, help="calls per round (default: ~30 ms)")
    args = ap.parse_args(argv)
    shapes = QUICK if args.quick else SHAPES
    if args.shapes:
        shapes = tuple(tuple(int(v) for v in s.lower().split("x")) for s in args.shapes.split(","))
    funcs = args.funcs.split(",")
    unknown = set(funcs) - set(FUNCS)
    if unknown:
        ap.error(f"unknown --funcs {sorted(unknown)}; choose from {sorted(FUNCS)}")
    torch = cuda_torch()
    norm = [f for f in LIB_FILES if f.startswith("lib_norm")]
    compiled = [k for f in norm for k in compile_file(os.path.join(KERNELS, f), root=KERNELS)]
    lib = {}
    for b in args.backends.split(","):
        dev = timed_device(b)
        lib[b] = (dev, kernels_for(dev, compiled))
    say(f"torch: {torch.cuda.get_device_name() if torch else 'absent (checked against numpy)'}")
    bench_kernels = os.path.join(HERE, "kernels")
    (copy,) = compile_file(os.path.join(bench_kernels, "copy_rows.py"), root=bench_kernels)
    floors = {b: load_kernel(copy.meta, device=lib[b][0], **code_of(copy, lib[b][0])) for b in lib}
    start = time.perf_counter()
    for shape in shapes:
        if not args.no_floor and shape[1] % 4 == 0:
            floor(shape, list(lib), lib, floors, torch, args)
    for fn in funcs:
        for shape in shapes:
            run_shape(fn, shape, list(lib), lib, torch, args)
    say(f"total {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
