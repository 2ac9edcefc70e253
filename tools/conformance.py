"""Differential conformance run: random kernels on the CPU reference and every GPU path.

    python tools/conformance.py --programs 300 --seed 1 [--backends reference,wgpu,vulkan,wgpu-spirv]
                                [--jobs 2] [--only I] [--size small|full] [--no-denormals]
                                [--no-minimise]

Each program is generated from (seed, index), compiled, run on each backend and compared
with the first backend that ran (integers and bools bit for bit, floats under the policy
in tools/conform/floats.py). A new finding prints the seed and a minimised kernel with its
inputs and differing values; findings of already recorded bugs (tools/conform/known.py)
are counted apart. The last line is "N programs, M mismatches"; the exit status is 1 when
M > 0. docs/conformance.md has the details.

Float policy (tools/conform/floats.py has every rule): chains of exact ops (+ - * on
finite values, abs, min/max, rounding, casts, select) must match bit for bit, except where
Vulkan lets a compiler contract a*b+c into an fma or regroup a chain to fold a constant;
inexact ops get Vulkan's precision on bounded arguments, propagated to a per-output
tolerance; comparisons, rounding, casts to integers and bitcast take only exact values;
NaN/inf/denormal inputs reach only ops pinned for them; +-0 compare equal, and NaN equals
NaN of any payload.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # tools/conform
sys.path.insert(0, os.path.dirname(HERE))  # the checkout's vyre_build

from conform.backends import ALL  # noqa: E402
from conform.gen import Options  # noqa: E402
from conform.run import Config, main  # noqa: E402

SIZES = {
    "small": Options(max_depth=2, max_expr_depth=3, statements=6),
    "full": Options(),
}


def parse(argv):
    p = argparse.ArgumentParser(prog="conformance.py", description=__doc__.split("\n")[0])
    p.add_argument("--programs", type=int, default=100, help="how many programs (default 100)")
    p.add_argument("--seed", type=int, default=1, help="the run's seed (default 1)")
    p.add_argument(
        "--backends", default=",".join(ALL), help=f"comma-separated, from {','.join(ALL)}"
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--only", type=int, default=None, help="run only program INDEX of the seed")
    p.add_argument("--size", choices=sorted(SIZES), default="full", help="program size")
    p.add_argument(
        "--no-denormals",
        action="store_true",
        help="no denormal inputs (for devices that flush them)",
    )
    p.add_argument("--no-minimise", action="store_true", help="report findings unminimised")
    p.add_argument(
        "--shrink-seconds",
        type=float,
        default=None,
        help="time the minimiser may spend on one finding (default 240)",
    )
    p.add_argument(
        "--subgroup-size",
        type=int,
        default=8,
        help="the devices' subgroup size, which the reference runs with (lavapipe: 8, NVIDIA: 32)",
    )
    args = p.parse_args(argv)
    backends = tuple(b for b in args.backends.split(",") if b)
    bad = [b for b in backends if b not in ALL]
    if bad or not backends:
        p.error(
            f"--backends: unknown backend {bad[0] if bad else '(none)'!r}; choose from {', '.join(ALL)}"
        )
    if args.programs < 1 or args.jobs < 1:
        p.error(f"--programs and --jobs must be >= 1, got {args.programs} and {args.jobs}")
    if args.shrink_seconds is not None and not 0 <= args.shrink_seconds <= 86400:
        p.error(f"--shrink-seconds must be from 0 to 86400, got {args.shrink_seconds}")
    if args.only is not None and args.only < 0:
        p.error(f"--only must be >= 0, got {args.only}")
    if args.subgroup_size not in (1, 2, 4, 8, 16, 32, 64, 128):
        p.error(f"--subgroup-size must be a power of two from 1 to 128, got {args.subgroup_size}")
    from dataclasses import replace

    opts = replace(
        SIZES[args.size], denormals=not args.no_denormals, subgroup_size=args.subgroup_size
    )
    return Config(
        seed=args.seed,
        programs=args.programs,
        backends=backends,
        jobs=args.jobs,
        opts=opts,
        only=args.only,
        minimise=not args.no_minimise,
        **({} if args.shrink_seconds is None else {"shrink_seconds": args.shrink_seconds}),
    )


if __name__ == "__main__":
    config = parse(sys.argv[1:])
    try:
        sys.exit(main(config))
    except KeyboardInterrupt:
        print("conformance.py: interrupted; workers stopped", file=sys.stderr)
        sys.exit(130)
