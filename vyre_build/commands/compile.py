"""`vyre-build compile FILE... [--kernel NAME] --target {wgsl,spirv,kdesc,all} -o DIR`."""

from __future__ import annotations

import os
import sys

from vyre_build.artifacts import META_SUFFIX, TARGET_SUFFIXES, TARGETS
from vyre_build.compiler import compile_file
from vyre_build.commands import output_dir, write_file


def register(sub) -> None:
    p = sub.add_parser(
        "compile",
        help="compile kernel files to WGSL / SPIR-V / .kdesc",
        description="Compile kernel files; writes DIR/<kernel>[.<variant>].<ext> "
        "and a .meta.json beside each.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="kernel source file(s)")
    p.add_argument("--kernel", help="compile only this kernel")
    p.add_argument(
        "--target",
        action="append",
        choices=TARGETS + ("all",),
        help="what to emit (repeatable; default all)",
    )
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--root", help="kernel tree root for imports (default: each file's directory)")
    p.add_argument("--spirv-opt", action="store_true", help="run spirv-opt -O on SPIR-V output")
    p.set_defaults(func=run)


def run(args) -> int:
    targets = args.target or ["all"]
    targets = TARGETS if "all" in targets else tuple(t for t in TARGETS if t in targets)
    options = {"spirv_opt": True} if args.spirv_opt else {}
    output_dir(args.out, "-o")
    for path in args.files:
        kernels = compile_file(
            path, root=args.root, targets=targets, options=options, kernel=args.kernel
        )
        if not kernels:
            print(
                f"note: {path} defines no @kernel (a helper-only file); nothing written",
                file=sys.stderr,
            )
        for k in kernels:
            for suffix, data in sorted(k.artifacts.items()):
                if suffix != META_SUFFIX and suffix not in {TARGET_SUFFIXES[t] for t in targets}:
                    continue
                write_file(os.path.join(args.out, k.stem + suffix), data)
    return 0
