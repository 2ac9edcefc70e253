"""Generated code against hand-written shaders and torch (issue 11's figures).

    python3 bench/codegen_bench.py --checks          # clamps/guards per kernel, before/after
    python3 bench/codegen_bench.py                   # the H200 figures (Vulkan), plus --checks

1. Checks: for every kernel of kernels/, the bounds checks (clamp/select on loads, guards
   on stores and atomics) and shared arrays zeroed on entry, without the range analysis's
   proofs and with them.
2. Ours vs hand-written GLSL (bench/glsl/*.comp, same algorithm, no safety rules, compiled
   with glslangValidator): GPU time per dispatch, same buffers, same grid, each from
   timestamps around a batch of dispatches, median of rounds; interleaved so drift hits both.
3. Natural elementwise kernels of kernels/ (scalar saxpy, add, gelu, sigmoid) vs torch:
   GPU time and host-inclusive time per op (the runtime dispatches the coarse entry where
   the sizes allow). torch: CUDA events for GPU time, wall time with a synchronize for host.
Every figure is a ratio against its baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.descriptor import validate  # noqa: E402
from vyre_build.descriptor.ranges import Proofs  # noqa: E402

KERNELS = os.path.join(ROOT, "kernels")
GLSL = os.path.join(HERE, "glsl")
GLSL_BUILD = os.path.join(GLSL, "build")  # glslangValidator output (carried to the H200)


def say(line: str = "") -> None:
    print(line, flush=True)


# --- 1. checks ---------------------------------------------------------------------------


def count_checks(desc, info) -> tuple[int, int, int]:
    """(memory accesses, accesses that keep a bounds check, shared arrays zeroed)."""
    accesses = checked = 0

    def walk(body):
        nonlocal accesses, checked
        for op in body.ops:
            if op.kind.name in ("LoadGlobal", "LoadShared", "StoreGlobal", "StoreShared", "Atomic"):
                accesses += 1
                checked += not info.in_bounds(op)
        for child in body.children:
            walk(child)

    walk(desc.body)
    shared = [s for s in desc.slots if s.memory_class == "Shared"]
    zeroed = sum(1 for s in shared if s.slot not in info.proofs.unzeroed)
    return accesses, checked, zeroed


def checks_table() -> None:
    say("Bounds checks and shared zeroing per kernel (without the range analysis -> with it)")
    say(f"{'kernel':<24}{'accesses':>9}{'checks':>16}{'zeroed':>12}")
    total = [0, 0, 0, 0, 0]
    for name in sorted(os.listdir(KERNELS)):
        if not name.endswith(".py"):
            continue
        for k in compile_file(os.path.join(KERNELS, name), root=KERNELS, targets=("kdesc",)):
            info = validate(k.descriptor)
            bare = dataclasses.replace(info, proofs=Proofs(frozenset(), frozenset()))
            n, before, zb = count_checks(k.descriptor, bare)
            _, after, za = count_checks(k.descriptor, info)
            for i, v in enumerate((n, before, after, zb, za)):
                total[i] += v
            say(f"{k.stem:<24}{n:>9}{before:>8} -> {after:<5}{zb:>6} -> {za}")
    n, b, a, zb, za = total
    say(
        f"{'all':<24}{n:>9}{b:>8} -> {a:<5}{zb:>6} -> {za}   ({b - a} checks and {zb - za} "
        "zeroings proved unnecessary)"
    )


# --- 2. ours vs hand-written GLSL ----------------------------------------------------------


def _reduce_args(rng, n):
    return {"x": rng.integers(0, 4, n).astype(np.uint32), "out": np.zeros(1, np.uint32)}, n


def _scan_args(rng, n):
    return {"x": rng.integers(0, 4, n).astype(np.uint32), "out": n}, n


def _matmul_args(rng, n):
    a = rng.random((n, n), np.float32)
    b = rng.random((n, n), np.float32)
    return {"a": a.ravel(), "b": b.ravel(), "c": n * n, "M": n, "N": n, "K": n}, None


def _transpose_args(rng, n):
    return {"src": rng.random(n * n, np.float32), "dst": n * n, "rows": n, "cols": n}, None


def _stencil_args(rng, n):
    return {"v": rng.random(n**3, np.float32), "out": n**3, "nx": n, "ny": n, "nz": n}, None


# (stem, file, GLSL, H200 sizes, --quick size, argument builder)
VERSUS = [
    ("reduce_sum.u32", "reduce.py", "reduce_sum.comp", (1 << 24, 1 << 26), 4096, _reduce_args),
    ("scan_inclusive", "scan.py", "scan.comp", (1 << 24, 1 << 26), 4096, _scan_args),
    ("matmul", "matmul.py", "matmul.comp", (2048, 4096), 64, _matmul_args),
    ("transpose", "transpose.py", "transpose.comp", (4096, 8192), 64, _transpose_args),
    ("laplacian3d", "stencil.py", "stencil.comp", (256, 384), 16, _stencil_args),
]


def glsl_spirv(comp: str) -> bytes:
    """The SPIR-V glslangValidator makes of bench/glsl/`comp` (built here once, kept)."""
    out = os.path.join(GLSL_BUILD, comp.replace(".comp", ".spv"))
    src = os.path.join(GLSL, comp)
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        tool = shutil.which("glslangValidator")
        if tool is None:
            raise SystemExit("glslangValidator is needed (apt-get install glslang-tools)")
        os.makedirs(GLSL_BUILD, exist_ok=True)
        subprocess.run(
            [tool, "-V", "--target-env", "vulkan1.1", "-o", out, src],
            check=True,
            capture_output=True,
        )
    with open(out, "rb") as f:
        return f.read()


def gpu_time(dev, kernel, args: dict, number: int) -> float | None:
    """GPU seconds per dispatch over one batch of `number` dispatches."""
    with dev.batch():
        for _ in range(number):
            kernel(**args)
    dev.wait()
    return None if dev.gpu_seconds is None else dev.gpu_seconds / number


def on_device(dev, args: dict, meta: dict) -> dict:
    """Arrays as DeviceBuffers (a length: a zeroed buffer of the binding's dtype), once."""
    out = dict(args)
    for b in meta["bindings"]:
        v = args[b["name"]]
        if b["kind"] == "buffer":
            out[b["name"]] = (
                dev.buffer(v) if isinstance(v, np.ndarray) else dev.buffer(v, b["dtype"])
            )
    return out


def same_outputs(ours, hand, args: dict) -> bool:
    """One call of each on fresh copies of the host arguments: the outputs agree."""

    def fresh():
        return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}

    a, b = ours(**fresh()), hand(**fresh())
    return all(np.allclose(np.asarray(a[k]), np.asarray(b[k]), rtol=1e-4, atol=1e-3) for k in a)


def versus_glsl(rounds: int, number: int, quick: bool) -> None:
    from vyre_build.runtime import get_device, load_kernel

    dev = get_device("vulkan")
    dev.timing = True
    say(f"\nOurs vs hand-written GLSL, GPU time per dispatch on {dev.name} (target <= 1.03x)")
    rng = np.random.default_rng(0)
    for stem, file, comp, sizes, small, build in VERSUS:
        found = {k.stem: k for k in compile_file(os.path.join(KERNELS, file), root=KERNELS)}
        k = found[stem]
        meta = {key: v for key, v in k.meta.items() if key != "coarse"}
        ours = load_kernel(meta, spirv=k.spirv, device=dev)
        hand = load_kernel(meta, spirv=glsl_spirv(comp), device=dev)
        for n in (small,) if quick else sizes:
            args, _ = build(rng, n)
            dargs = on_device(dev, args, meta)
            times = {"ours": [], "glsl": []}
            for _ in range(rounds):
                for name, kern in (("ours", ours), ("glsl", hand)):
                    t = gpu_time(dev, kern, dargs, number)
                    if t is not None:
                        times[name].append(t)
            if not times["ours"]:
                say(f"  {stem:<16} n={n}: no GPU timestamps on this device")
                continue
            o, h = statistics.median(times["ours"]), statistics.median(times["glsl"])
            agree = "outputs agree" if same_outputs(ours, hand, args) else "OUTPUTS DIFFER"
            say(
                f"  {stem:<16} n={n:<10} ours {o * 1e6:9.1f} us   GLSL {h * 1e6:9.1f} us   "
                f"ratio {o / h:.3f}x   ({agree})"
            )


# --- 3. elementwise vs torch ------------------------------------------------------------------

ELEMENTWISE = [
    ("saxpy", "saxpy.py"),
    ("add.f32", "add.py"),
    ("gelu", "activations.py"),
    ("sigmoid", "activations.py"),
]


def _torch_op(torch, stem, x, y, o):
    import torch.nn.functional as F

    return {
        "saxpy": lambda: y.add_(x, alpha=2.0),
        "add.f32": lambda: torch.add(x, y, out=o),
        "gelu": lambda: o.copy_(F.gelu(x, approximate="tanh")),
        "sigmoid": lambda: torch.sigmoid(x, out=o),
    }[stem]


def elementwise_vs_torch(rounds: int, number: int, quick: bool) -> None:
    from vyre_build.runtime import get_device, load_kernel

    try:
        import torch
    except ImportError:
        say("\nElementwise vs torch: skipped (no torch)")
        return
    if not torch.cuda.is_available():
        say("\nElementwise vs torch: skipped (torch has no CUDA device)")
        return
    dev = get_device("vulkan")
    dev.timing = True
    say(
        f"\nNatural elementwise kernels vs torch on {dev.name} (target >= 0.95x; "
        "ratio = torch time / ours; 'base' is the one-element entry, 'auto' the runtime's "
        "choice: the coarse entry where sizes allow)"
    )
    sizes = (1 << 16,) if quick else (16_777_216, 67_108_864)
    for stem, file in ELEMENTWISE:
        k = {k.stem: k for k in compile_file(os.path.join(KERNELS, file), root=KERNELS)}[stem]
        base_meta = {key: v for key, v in k.meta.items() if key != "coarse"}
        kernels = {
            "auto": load_kernel(k.meta, spirv=k.spirv, device=dev),
            "base": load_kernel(base_meta, spirv=k.spirv, device=dev),
        }
        for n in sizes:
            x = np.random.default_rng(1).random(n, np.float32)
            args = {}
            for b in k.meta["bindings"]:
                args[b["name"]] = dev.buffer(x.copy()) if b["kind"] == "buffer" else 2.0
            tx = torch.rand(n, device="cuda")
            ty, to = torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
            op = _torch_op(torch, stem, tx, ty, to)
            tg, th = [], []
            for r in range(rounds + 1):
                start, end = (
                    torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True),
                )
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                start.record()
                for _ in range(number):
                    op()
                end.record()
                torch.cuda.synchronize()
                if r:  # round 0 warms up
                    th.append((time.perf_counter() - t0) / number)
                    tg.append(start.elapsed_time(end) / 1e3 / number)
            tgm, thm = statistics.median(tg), statistics.median(th)
            moved = 4 * n * (3 if stem in ("saxpy", "add.f32") else 2)
            for label, kern in kernels.items():
                gpu, host = [], []
                for r in range(rounds + 1):
                    t0 = time.perf_counter()
                    g = gpu_time(dev, kern, args, number)
                    if r:
                        host.append((time.perf_counter() - t0) / number)
                        if g is not None:
                            gpu.append(g)
                og = statistics.median(gpu) if gpu else float("nan")
                oh = statistics.median(host)
                say(
                    f"  {stem:<8} {label:<4} n={n:<9} GPU ours {moved / og / 1e12:5.2f} TB/s, "
                    f"torch {moved / tgm / 1e12:5.2f} TB/s: {tgm / og:.3f}x   "
                    f"host-inclusive {thm / oh:.3f}x"
                )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checks", action="store_true", help="only the checks table (no device)")
    p.add_argument("--quick", action="store_true", help="small sizes (lavapipe)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--number", type=int, default=20)
    args = p.parse_args(argv)
    checks_table()
    if args.checks:
        return 0
    versus_glsl(args.rounds, args.number, args.quick)
    elementwise_vs_torch(args.rounds, args.number, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
