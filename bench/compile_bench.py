"""Compile-time benchmark: per kernel (and variant), frontend + lower + WGSL + SPIR-V, in ms.

    python bench/compile_bench.py [--repeat N] [--root kernels]

Each kernel file is compiled --repeat times in-process (after one warm-up so imports
are not counted); the best time per file is split over its kernels. Prints a table and
the average per kernel against the 5 ms target. A kernel WGSL cannot express (cooperative
matrices, bf16, device-scope memory orders: the wgsl target's refusal, as the compiler
asks it) has no WGSL (SPIR-V only): it is timed without the WGSL step, its file's "wgsl
ms" reads "-" when none of its kernels has WGSL, and the WGSL averages count only kernels
that have it.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.descriptor import encode  # noqa: E402
from vyre_build.emit.wgsl import emit_wgsl  # noqa: E402
from vyre_build.frontend import check_module, kernel_needs, load_module  # noqa: E402
from vyre_build.frontend.lower import lower  # noqa: E402
from vyre_build.emit.spirv import emit_spirv  # noqa: E402
from vyre_build.core.targets import TARGETS  # noqa: E402


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", "kernels"))
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.root, "*.py")))
    rows, n_total, n_wgsl = [], 0, 0
    tot = {"frontend": 0.0, "lower": 0.0, "kdesc": 0.0, "wgsl": 0.0, "spirv": 0.0, "all": 0.0}
    for path in files:
        compile_file(path, root=args.root)  # warm-up
        t_front, progs = best(
            lambda p=path: check_module(load_module(p, root=args.root)), args.repeat
        )
        if not progs:
            continue
        # lowering includes validation and the range analysis (descriptor.validate)
        t_lower, lowered = best(lambda ps=progs: [lower(p) for p in ps], args.repeat)
        t_kdesc, _ = best(lambda ls=lowered: [encode(d) for d, _ in ls], args.repeat)
        # what WGSL cannot express: SPIR-V only (the compiler skips WGSL for them, as here)
        module = load_module(path, root=args.root)
        wgsl = TARGETS["wgsl"]
        has_wgsl = [
            (d, i)
            for (d, i), p in zip(lowered, progs)
            if wgsl.refusal(kernel_needs(module, p.name)) is None
        ]
        t_wgsl, _ = best(lambda ls=has_wgsl: [emit_wgsl(d, i) for d, i in ls], args.repeat)
        t_spirv, _ = best(lambda ls=lowered: [emit_spirv(d, i) for d, i in ls], args.repeat)
        t_all, _ = best(lambda p=path: compile_file(p, root=args.root), args.repeat)
        n = len(progs)
        n_total += n
        n_wgsl += len(has_wgsl)
        for k, v in zip(tot, (t_front, t_lower, t_kdesc, t_wgsl, t_spirv, t_all)):
            tot[k] += v
        rows.append(
            (
                os.path.basename(path),
                n,
                t_front / n,
                t_lower / n,
                t_wgsl / len(has_wgsl) if has_wgsl else None,
                t_spirv / n,
                t_all / n,
            )
        )
    print(
        f"{'file':<20}{'kernels':>8}{'front ms':>10}{'lower ms':>10}{'wgsl ms':>10}{'spirv ms':>10}{'total ms':>10}"
    )
    for name, n, *ts in rows:
        print(
            f"{name:<20}{n:>8}"
            + "".join(f"{'-':>10}" if t is None else f"{t * 1e3:>10.3f}" for t in ts)
        )
    avg = {k: v / n_total * 1e3 for k, v in tot.items()}
    avg["wgsl"] = tot["wgsl"] / max(n_wgsl, 1) * 1e3
    print(f"\n{n_total} kernels (variants counted) in {len(rows)} files")
    if n_wgsl < n_total:
        print(f"{n_total - n_wgsl} of them SPIR-V only (what WGSL cannot express): no WGSL step")
    print("average per kernel: " + ", ".join(f"{k} {v:.3f} ms" for k, v in avg.items()))
    print(
        f"whole compile (frontend+lower+kdesc+WGSL+SPIR-V+metadata): {avg['all']:.3f} ms per kernel; "
        f"target 5 ms -> {avg['all'] / 5.0:.2f}x of budget"
    )
    print(
        f"WGSL-only path (frontend+lower+WGSL): "
        f"{avg['frontend'] + avg['lower'] + avg['wgsl']:.3f} ms per kernel"
    )
    spirv_sizes(args.root)
    return 0


# Our kernel -> the GLSL written to match it in bench/glsl/ (same algorithm and checks).
GLSL_PAIRS = (
    ("saxpy.py", "saxpy", "saxpy.comp"),
    ("reduce.py", "reduce_sum.u32", "reduce_sum.comp"),
    ("matmul.py", "matmul", "matmul.comp"),
)


def spirv_sizes(root: str) -> None:
    """Size of our .spv against glslangValidator -V for equivalent GLSL (target <= 1.5x)."""
    import shutil
    import subprocess
    import tempfile

    tool = shutil.which("glslangValidator")
    if tool is None:
        print("\nSPIR-V size vs glslang: skipped (apt-get install glslang-tools)")
        return
    print(f"\n{'kernel':<16}{'ours B':>8}{'glslang B':>11}{'ratio':>8}   (target <= 1.5x)")
    glsl_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "glsl")
    with tempfile.TemporaryDirectory() as tmp:
        for fname, stem, comp in GLSL_PAIRS:
            if not os.path.isfile(os.path.join(root, fname)):
                print(f"{stem:<16}{'skipped':>8} ({fname} is not in {root})")
                continue
            ours = next(
                k.spirv
                for k in compile_file(os.path.join(root, fname), root=root)
                if k.stem == stem
            )
            out = os.path.join(tmp, comp + ".spv")
            subprocess.run(
                [tool, "-V", "--target-env", "vulkan1.1", "-o", out, os.path.join(glsl_dir, comp)],
                check=True,
                capture_output=True,
            )
            theirs = os.path.getsize(out)
            print(f"{stem:<16}{len(ours):>8}{theirs:>11}{len(ours) / theirs:>8.2f}x")


if __name__ == "__main__":
    raise SystemExit(main())
