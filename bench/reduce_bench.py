"""Single-pass reduce (kernels/lib_reduce.py lib_reduce_once) against its previous design and
torch, with the parts of a call timed apart (issue 23: reduce at 1M and 16.7M values).

    python3 bench/reduce_bench.py            # the H200 run: f32, u32, i32 at 1M, 16.7M, 268M
    python3 bench/reduce_bench.py --quick    # small sizes, a smoke run (lavapipe here)

Every row is a sum of the same values in one run, Vulkan GPU time per call (timestamps
around a batch of calls, so the barrier after each dispatch counts; the median of --rounds
rounds after a warm-up round), its ratio to torch.sum (CUDA events) and to `old` where
both are given, and whether its result matches numpy (integers exactly, f32 within 1e-5 of
the largest sum). The kernels are dispatched directly, with the grid the row names:

- floor: lib_reduce over no values, one workgroup: a dispatch and its barrier, what any
  one-dispatch call costs at least;
- pass1: lib_reduce's first pass alone (G partials, no memory model, no ticket): reading
  the input (not a whole reduce);
- two-pass: lib_reduce twice (wgpu's and lavapipe's path);
- old: bench/kernels/reduce_once_old.py, the previous lib_reduce_once (two loads per trip,
  the last workgroup folding the partials one load per trip, an acq_rel ticket add and a
  storage barrier after it), at the grid the library gave it (ceil(n / 1024) workgroups, at most 1,024);
- new G=...: lib_reduce_once at several grids (`*`: the one library.reduce picks);
- i32tk (u32 only): lib_reduce_once with its ticket an i32 buffer, at the library's grid
  (I32_TICKET);
- acqrel: lib_reduce_once with the previous kernel's acq_rel ticket add and storage barrier
  after it (ACQ_REL): old -> acqrel is the four loads per trip, acqrel -> new the lighter
  synchronisation;
- library: library.reduce(x, "sum", out=...) itself (the path library.reduce_kernel names,
  at the end of the line).

The u32 and i32 sums are the same bits (integer adds wrap), so u32 against i32 on one
kernel shows whether a u32 gap is the element type's (issue 23: sum u32 16.7M ran 29.6 us
against f32's 22.3 on the same kernel).
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

from library_bench import agree, calls_for, time_ours, time_torch  # noqa: E402

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.runtime import get_device, library, load_kernel  # noqa: E402
from vyre_build.runtime.kernel import Kernel  # noqa: E402

KERNELS = os.path.join(os.path.dirname(HERE), "kernels")
WG = library.WG
SIZES = (1 << 20, 1 << 24, 1 << 28)
QUICK = (1 << 16, (1 << 20) + 4)
GRIDS = (64, 132, 256, 528, 1024)  # new's grids besides the library's (132: the H200's SMs)
NP = {"f32": np.float32, "u32": np.uint32, "i32": np.int32}


def say(line: str = "") -> None:
    print(line, flush=True)


def load(dev, path: str, root: str) -> dict[str, Any]:
    code = "spirv" if dev.backend == "vulkan" else "kdesc"
    return {
        k.stem: load_kernel(k.meta, device=dev, **{code: getattr(k, code)})
        for k in compile_file(path, root=root)
        if k.stem.split(".")[1].startswith("sum_")
    }


# Candidates made from kernels/lib_reduce.py's lib_reduce_once by text edits, so that they
# follow the library kernel: (row name, edits, the ticket's type, the variants built).
I32_TICKET = (
    "i32tk",
    (
        ('ticket: Buffer[u32, "rw"]', 'ticket: Buffer[i32, "rw"]'),
        ("last[0] = u32(t == groups - 1)", "last[0] = u32(u32(t) == groups - 1)"),
        ("\nWG = 256\n", "\nfrom vyre_build.lang import i32\n\nWG = 256\n"),
    ),
    "i32",
    ("sum_u32",),
)
# The acq_rel add and storage barrier of the previous kernel on the new loads: which of the
# two changes (four loads per trip; a release add and a plain barrier) moves the time.
ACQ_REL = (
    "acqrel",
    (
        ('order="release")', 'order="acq_rel")'),
        ("    barrier()\n    # every workgroup", "    storage_barrier()\n    # every workgroup"),
        ("\nWG = 256\n", "\nfrom vyre_build.lang import storage_barrier\n\nWG = 256\n"),
    ),
    "u32",
    ("sum_u32", "sum_i32", "sum_f32"),
)


def edited(dev, name: str, edits, ticket: str, stems) -> dict[str, tuple[str, Any]]:
    """variant -> (ticket type, Kernel) of lib_reduce_once with `edits` made to its file."""
    path = os.path.join(KERNELS, "lib_reduce.py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for old, new in edits:
        if text.count(old) != 1:
            raise SystemExit(f"reduce_bench: {old!r} is not once in {path}: update {name}")
        text = text.replace(old, new)
    code = "spirv" if dev.backend == "vulkan" else "kdesc"
    return {
        k.stem.split(".")[1]: (ticket, load_kernel(k.meta, device=dev, **{code: getattr(k, code)}))
        for k in compile_file(path, root=KERNELS, text=text, kernel="lib_reduce_once")
        if k.stem.split(".")[1] in stems
    }


def old_grid(n: int) -> int:
    # the grid the library gave the previous lib_reduce_once: 4 vec4s per invocation
    return max(1, min(library.MAX_PARTIALS, -(-(n // 4) // (WG * 4))))


def rows(
    dev, ks: dict, old: dict, cands: dict, kind: str, x, n: int
) -> list[tuple[str, Callable, Any]]:
    """(name, call, out buffer or None) of every row of one type and size."""
    tid = f"sum_{kind}"
    lib_k, once_k, old_k = ks[f"lib_reduce.{tid}"], ks[f"lib_reduce_once.{tid}"], old[tid]
    out = []

    def fresh(k):  # a Kernel of its own per row: each keeps the plan of its dispatch
        return Kernel(k.device, k.meta, k.code)

    base = dict(x4=x, x=x, n=n, vin=1)
    floor = fresh(lib_k)
    res = dev.buffer(1, kind)
    args = dict(base, partials=res, n=0, stride=WG)
    out.append(("floor", lambda k=floor, a=args: k.dispatch(a, grid=WG), None))

    g = old_grid(n)
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

    def once(k, g, label, tk="u32"):
        res = dev.buffer(1, kind)
        parts = dev.buffer(g, kind)
        ticket = dev.buffer(1, tk)
        args = dict(base, partials=parts, ticket=ticket, out=res, stride=g * WG)
        kern = fresh(k)
        out.append((label, lambda: kern.dispatch(args, grid=g * WG), res))

    once(old_k, g, f"old G={g}")
    picked = library._once_groups(n // 4)
    for grid in sorted({*GRIDS, picked}):
        if grid <= max(1, -(-(n // 4) // WG)):  # no workgroup without a vec4
            once(once_k, grid, f"new G={grid}{'*' if grid == picked else ''}")
    for name, kernels in cands.items():
        if tid in kernels:
            ticket, k = kernels[tid]
            once(k, picked, f"{name} G={picked}*", ticket)
    res = dev.buffer(1, kind)
    out.append(("library", lambda: library.reduce(ks, x, "sum", out=res), res))
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
    try:
        import torch

        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    dev = get_device(args.backend)
    dev.timing = True
    ks = load(dev, os.path.join(KERNELS, "lib_reduce.py"), KERNELS)
    old = {
        k.split(".")[1]: v
        for k, v in load(dev, os.path.join(HERE, "kernels", "reduce_once_old.py"), HERE).items()
    }
    cands = {c[0]: edited(dev, *c) for c in (I32_TICKET, ACQ_REL)}
    p = dev.profile
    say(f"{args.backend}: {dev.name} (subgroup size {p.subgroup_size or p.subgroup_size_range})")
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
            old_us = None
            for name, call, out in rows(dev, ks, old, cands, kind, x, n):
                number = args.number or calls_for(call, dev.wait)
                gpu, wall = time_ours(dev, call, number, args.rounds)
                line = f"  {name:<14} {gpu * 1e6:9.1f} us  {4 * n / gpu / 1e9:7.1f} GB/s"
                line += f"  (host-inclusive {wall * 1e6:9.1f} us)"
                if ref is not None:
                    line += f"  vs torch {ref / gpu:6.3f}x"
                if name.startswith("old"):
                    old_us = gpu
                elif old_us is not None and out is not None:
                    line += f"  vs old {old_us / gpu:6.3f}x"
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
