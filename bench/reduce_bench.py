"""Single-pass reduce: the library's kernel (kernels/lib_reduce.py lib_reduce_once) against a
candidate (bench/kernels/reduce_once_four.py) and torch, with the parts of a call timed apart
(issue 23: reduce at 1M and 16.7M values).

    python3 bench/reduce_bench.py            # the H200 run: f32, u32, i32 at 1M, 16.7M, 268M
    python3 bench/reduce_bench.py --quick    # small sizes, a smoke run (lavapipe here)
    python3 bench/reduce_bench.py --quick --backend cpu   # the rows on the cpu reference

Every row is a sum of the same values in one run, Vulkan GPU time per call (timestamps
around a batch of calls, so the barrier after each dispatch counts; the median of --rounds
rounds after a warm-up round), its ratio to torch.sum (CUDA events) and to `lib_once` where
both are given, and whether its result matches numpy (integers exactly, f32 within 1e-5 of
the largest sum). The kernels are dispatched directly, with the grid the row names
(`*`: the grid library.reduce gives lib_reduce_once, ceil(n / 4,096) workgroups, at most
1,024: four vec4s per invocation):

- floor: lib_reduce over no values, one workgroup: a dispatch and its barrier, what any
  one-dispatch call costs at least;
- pass1: lib_reduce's first pass alone (G partials, no memory model, no ticket): reading
  the input (not a whole reduce);
- two-pass: lib_reduce twice (wgpu's and lavapipe's path);
- lib_once: the library's lib_reduce_once (two loads per trip in each share, the last
  workgroup folding the partials one load per trip, an acq_rel ticket add and a storage
  barrier after it), what library.reduce runs on a Vulkan GPU;
- four G=...: the candidate at several grids: four loads per trip in each share and in the
  fold of the partials, a release ticket add and a storage barrier after it;
- four-acqrel: the candidate with lib_once's acq_rel add (FOUR_ACQ_REL): lib_once ->
  four-acqrel is the four loads per trip, four-acqrel -> four the release add (does it pay?);
- lib_once-i32tk, four-i32tk (u32 only): those kernels with their ticket an i32 buffer
  (I32_TICKET);
- library: library.reduce(x, "sum", out=...) itself (the path library.reduce_kernel names,
  at the end of the line).

The u32 and i32 sums are the same bits (integer adds wrap), so u32 against i32 on one
kernel shows whether a u32 gap is the element type's (issue 23: sum u32 16.7M ran 29.6 us
against f32's 22.3 on lib_reduce_once).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_env import cuda_torch  # noqa: E402
from library_bench import agree, calls_for, time_ours, time_torch, timed_device  # noqa: E402

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.runtime import load_kernel  # noqa: E402
from vyre_build import library  # noqa: E402
from vyre_build.runtime.kernel import Kernel  # noqa: E402

KERNELS = os.path.join(os.path.dirname(HERE), "kernels")
LIB = os.path.join(KERNELS, "lib_reduce.py")
FOUR = os.path.join(HERE, "kernels", "reduce_once_four.py")
WG = library.WG
SIZES = (1 << 20, 1 << 24, 1 << 28)
QUICK = (1 << 16, (1 << 20) + 4)
GRIDS = (64, 132, 256, 528, 1024)  # the candidate's grids besides the library's (132: H200 SMs)
NP = {"f32": np.float32, "u32": np.uint32, "i32": np.int32}


def say(line: str = "") -> None:
    print(line, flush=True)


# Kernels as the rows run them: (row name, file, root, kernel, edits of its text, the
# ticket's type, the types built). Edits are made to the file's text, so that a row follows
# its kernel.
LIB_ONCE = ("lib_once", LIB, KERNELS, "lib_reduce_once", (), "u32", ("u32", "i32", "f32"))
CAND = ("four", FOUR, HERE, "reduce_once_four", (), "u32", ("u32", "i32", "f32"))
I32_TICKET = (
    ('ticket: Buffer[u32, "rw"]', 'ticket: Buffer[i32, "rw"]'),
    ("last[0] = u32(t == groups - 1)", "last[0] = u32(u32(t) == groups - 1)"),
    ("\nWG = 256\n", "\nfrom vyre_build.lang import i32\n\nWG = 256\n"),
)
# lib_reduce_once's acq_rel add on the candidate's loads (both have its storage barrier)
FOUR_ACQ_REL = (('order="release")', 'order="acq_rel")'),)
ONCE = (
    LIB_ONCE,
    ("lib_once-i32tk", LIB, KERNELS, "lib_reduce_once", I32_TICKET, "i32", ("u32",)),
    CAND,
    ("four-acqrel", FOUR, HERE, "reduce_once_four", FOUR_ACQ_REL, "u32", ("u32", "i32", "f32")),
    ("four-i32tk", FOUR, HERE, "reduce_once_four", I32_TICKET, "i32", ("u32",)),
)


def load(dev, path: str, root: str, name: str, edits=(), kinds=tuple(NP)) -> dict[str, Any]:
    """kind -> the Kernel of `name`'s sum variant in `path`, with `edits` made to its text."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for old, new in edits:
        if text.count(old) != 1:
            raise SystemExit(f"reduce_bench: {old!r} is not once in {path}: update the edits")
        text = text.replace(old, new)
    code = "spirv" if dev.backend == "vulkan" else "kdesc"
    return {  # "sum_f32" -> "f32"
        k.stem.split(".")[1][4:]: load_kernel(k.meta, device=dev, **{code: getattr(k, code)})
        for k in compile_file(path, root=root, text=text, kernel=name)
        if k.stem.split(".")[1] in {f"sum_{t}" for t in kinds}
    }


def lib_grid(n: int) -> int:
    # library._reduce_once's grid for n values in vec4s: 4 vec4s per invocation
    return max(1, min(library.MAX_PARTIALS, -(-(n // 4) // (WG * 4))))


def rows(dev, ks: dict, kind: str, x, n: int) -> list[tuple[str, Callable, Any]]:
    """(name, call, out buffer or None) of every row of one type and size; `ks` maps a row
    name (and "lib_reduce", "library") to kind -> Kernel or to the library's kernels."""
    lib_k = ks["lib_reduce"][kind]
    out = []

    def fresh(k):  # a Kernel of its own per row: each keeps the plan of its dispatch
        return Kernel(k.device, k.meta, k.code)

    base = dict(x4=x, x=x, n=n, vin=1)
    floor = fresh(lib_k)
    res = dev.buffer(1, kind)
    args = dict(base, partials=res, n=0, stride=WG)
    out.append(("floor", lambda k=floor, a=args: k.dispatch(a, grid=WG), None))

    g = lib_grid(n)
    parts = dev.buffer(-(-g // 4) * 4, kind)
    p1 = fresh(lib_k)
    args = dict(base, partials=parts, stride=g * WG)
    out.append((f"pass1 G={g}", lambda k=p1, a=args, g=g: k.dispatch(a, grid=g * WG), None))

    res = dev.buffer(1, kind)
    first, second = fresh(lib_k), fresh(lib_k)
    g4 = -(-g // 4) * 4
    a1 = dict(base, partials=parts, stride=g * WG)
    a2 = dict(x4=parts, x=parts, partials=res, n=g4, vin=1, stride=WG)

    def two(a1=a1, a2=a2, g=g):
        first.dispatch(a1, grid=g * WG)
        second.dispatch(a2, grid=WG)

    # one workgroup over the partials when G = 1 writes them straight to res
    if g == 1:
        only = fresh(lib_k)
        args = dict(base, partials=res, stride=WG)
        out.append(("two-pass", lambda k=only, a=args: k.dispatch(a, grid=WG), res))
    else:
        out.append(("two-pass", two, res))

    def once(k, g, label, tk):
        res = dev.buffer(1, kind)
        parts = dev.buffer(g, kind)
        ticket = dev.buffer(1, tk)
        args = dict(base, partials=parts, ticket=ticket, out=res, stride=g * WG)
        kern = fresh(k)
        out.append((label, lambda: kern.dispatch(args, grid=g * WG), res))

    for name, _, _, _, _, tk, _ in ONCE:
        if kind not in ks[name]:
            continue
        grids = [g]
        if name == CAND[0]:  # the candidate at its grids, no workgroup without a vec4
            grids = sorted({*(G for G in GRIDS if G <= max(1, -(-(n // 4) // WG))), g})
        for grid in grids:
            once(ks[name][kind], grid, f"{name} G={grid}{'*' if grid == g else ''}", tk)
    res = dev.buffer(1, kind)
    out.append(("library", lambda: library.reduce(ks["library"], x, "sum", out=res), res))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument("--sizes", default="", help="comma list of value counts (multiples of 4)")
    ap.add_argument("--types", default="f32,u32,i32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--number", type=int, default=0, help="calls per round (default: ~30 ms)")
    ap.add_argument(
        "--backend", default="vulkan", choices=("vulkan", "cpu"), help="cpu: a check of the rows"
    )
    args = ap.parse_args(argv)
    sizes = QUICK if args.quick else SIZES
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    if any(n % 4 for n in sizes):
        ap.error("--sizes: each count must be a multiple of 4 (the rows bind x as vec4s)")
    types = args.types.split(",")
    if set(types) - set(NP):
        ap.error(f"--types: choose from {sorted(NP)}")
    if args.quick:
        args.rounds, args.number = min(args.rounds, 2), args.number or 3
    torch = cuda_torch()
    dev = timed_device(args.backend)
    ks: dict[str, Any] = {"lib_reduce": load(dev, LIB, KERNELS, "lib_reduce")}
    ks.update((c[0], load(dev, *c[1:5], c[6])) for c in ONCE)
    # what library.reduce is given: the library's two kernels, their sum variants
    ks["library"] = {f"lib_reduce.sum_{t}": k for t, k in ks["lib_reduce"].items()}
    ks["library"].update((f"lib_reduce_once.sum_{t}", k) for t, k in ks["lib_once"].items())
    say(f"torch: {torch.cuda.get_device_name() if torch else 'absent (checked against numpy)'}")
    say("library picks: " + ", ".join(library.reduce_kernel(dev, "sum", t) for t in types))
    start = time.perf_counter()
    for kind in types:
        for n in sizes:
            rng = np.random.default_rng(n)
            if kind == "f32":
                data = rng.random(n, dtype=np.float32)
            else:
                data = rng.integers(0 if kind == "u32" else -2, 3, n).astype(NP[kind])
            want = np.array([data.sum(dtype=np.float64 if kind == "f32" else NP[kind])])
            ref = None
            if torch is not None:
                t = torch.from_numpy(data.view(np.int32) if kind == "u32" else data).cuda()
                dtype = torch.float32 if kind == "f32" else torch.int32
                call = lambda t=t, d=dtype: torch.sum(t, dtype=d)  # noqa: E731
                number = args.number or calls_for(call, torch.cuda.synchronize)
                ref = time_torch(torch, call, number, args.rounds)
                del t, call
                torch.cuda.empty_cache()
            x = dev.buffer(data)
            say(f"sum {kind} n={n}" + (f": torch {ref * 1e6:8.1f} us" if ref else ""))
            base_us = None
            for name, call, out in rows(dev, ks, kind, x, n):
                number = args.number or calls_for(call, dev.wait)
                gpu, wall = time_ours(dev, call, number, args.rounds)
                line = f"  {name:<22} {gpu * 1e6:9.1f} us  {4 * n / gpu / 1e9:7.1f} GB/s"
                line += f"  (host-inclusive {wall * 1e6:9.1f} us)"
                if ref is not None:
                    line += f"  vs torch {ref / gpu:6.3f}x"
                if name.startswith("lib_once G="):
                    base_us = gpu
                elif base_us is not None and out is not None:
                    line += f"  vs lib_once {base_us / gpu:6.3f}x"
                if out is not None:
                    rtol = 1e-5 if kind == "f32" else 0.0
                    ok, err = agree(out.read(), want, rtol)
                    line += "  matches" if ok else f"  MISMATCH (error {err:.3g})"
                if name == "library":
                    line += f"  [{library.reduce_kernel(dev, 'sum', kind)}]"
                say(line)
            x.release()
    say(f"total {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
