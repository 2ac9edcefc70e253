"""`vyre-build compile FILE... [--kernel NAME] --target {wgsl,spirv,kdesc,all} -o DIR`.

`-o -` prints instead of writing (vyre_build/commands/listing.py): WGSL with the source line of each
statement as a comment (the default target there), SPIR-V as spirv-dis text; .kdesc is
binary and only written to a folder.
"""

from __future__ import annotations

import os
import sys

from vyre_build.core.artifacts import META_SUFFIX, TARGET_SUFFIXES, TARGETS
from vyre_build.compiler import compile_file
from vyre_build.cache.config import find_sconstruct_dir
from vyre_build.commands import output_dir, write_file
from vyre_build.commands.helptext import add_command
from vyre_build.core.errors import VyreError
from vyre_build.core.targets import KDESC, SPIRV, WGSL


def register(sub) -> None:
    p = add_command(sub, "compile")
    p.add_argument("files", nargs="+", metavar="FILE", help="kernel source file(s)")
    p.add_argument("--kernel", help="compile only this kernel")
    p.add_argument(
        "--target",
        action="append",
        choices=(*TARGETS, "all"),
        help="what to emit (repeatable; default all)",
    )
    p.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="DIR",
        help="output directory (created if missing); - prints WGSL (the default target "
        "then) and SPIR-V text on stdout instead",
    )
    p.add_argument(
        "--root",
        help="the kernel tree: imports resolve in it and nothing outside it is read "
        "(default: the nearest folder above each file that holds an SConstruct, else the "
        "file's folder)",
    )
    p.add_argument("--spirv-opt", action="store_true", help="run spirv-opt -O on SPIR-V output")
    p.add_argument(
        "--debug",
        action="store_true",
        help="a debug build: print/assert kept, out-of-bounds accesses reported (docs/debugging.md)",
    )
    p.set_defaults(func=run)


def project_root(path: str) -> str:
    """The nearest folder at or above `path`'s that holds an SConstruct (the project), else
    `path`'s own folder: the tree that compiling `path` may read."""
    here = os.path.dirname(os.path.abspath(path))
    return find_sconstruct_dir(here) or here


def _display(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path))
    return os.path.abspath(path) if rel.startswith("..") else rel


def run(args) -> int:
    if args.out == "-":
        return print_listings(args)
    targets = args.target or ["all"]
    targets = tuple(t for t in TARGETS if "all" in targets or t in targets)
    options = {"spirv_opt": True} if args.spirv_opt else {}
    if args.debug:
        options["debug"] = True
    output_dir(args.out, "-o")
    if args.root is not None and not os.path.isdir(args.root):
        raise VyreError(f"error: --root {args.root}: not a directory")
    for path in args.files:
        folder = os.path.dirname(_display(path)).replace(os.sep, "/")
        where = {"debug_dir": folder} if args.debug and folder else {}
        kernels = compile_file(
            path,
            root=args.root or project_root(path),
            targets=targets,
            options={**options, **where},
            kernel=args.kernel,
            display_path=_display(path),
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


def print_listings(args) -> int:
    """`-o -`: every kernel instance's WGSL (source-line comments) and/or SPIR-V text on
    stdout, in file and then kernel order; notes on stderr."""
    from vyre_build.frontend import instances, load_module
    from vyre_build.commands.listing import spirv_text, wgsl_listing

    asked = args.target or [WGSL.name]
    if KDESC.name in asked or "all" in asked:
        raise VyreError(
            f"error: -o - prints WGSL and SPIR-V as text; a {KDESC.suffix} is binary: write it "
            f"with -o DIR (or ask for --target {WGSL.name} / --target {SPIRV.name})"
        )
    targets = tuple(t for t in TARGETS if t in asked)
    options = {"spirv_opt": True} if args.spirv_opt else {}
    if args.root is not None and not os.path.isdir(args.root):
        raise VyreError(f"error: --root {args.root}: not a directory")
    printed: list[str] = []
    for path in args.files:
        root, shown = args.root or project_root(path), _display(path)
        # The compile checks the file and gives the SPIR-V (and what has no WGSL).
        kernels = compile_file(
            path,
            root=root,
            targets=tuple(sorted({*targets, SPIRV.name})),
            options=options,
            kernel=args.kernel,
            display_path=shown,
        )
        if not kernels:
            print(
                f"note: {path} defines no @kernel (a helper-only file); nothing printed",
                file=sys.stderr,
            )
            continue
        module = load_module(path, root=root, display_path=shown)
        for k, (name, variant, env) in zip(kernels, instances(module, args.kernel)):
            if (k.name, k.variant) != (name, variant):  # both in instances' order
                raise RuntimeError(f"listing: {k.stem} is not {name}.{variant}")
            wgsl_skipped = WGSL.name in k.meta.get("skipped", {})
            spirv = SPIRV.name in targets or (wgsl_skipped and args.target is None)
            if WGSL.name in targets and wgsl_skipped:
                also = (
                    "; its SPIR-V follows"
                    if spirv
                    else f"; --target {SPIRV.name} prints its SPIR-V"
                )
                print(
                    f"note: {shown}: kernel {k.meta['id']!r} has no WGSL "
                    f"({k.meta['skipped'][WGSL.name]}){also}",
                    file=sys.stderr,
                )
            elif WGSL.name in targets:
                printed.append(wgsl_listing(module, name, variant, env))
            if spirv:
                printed.append(
                    f"; kernel {k.meta['id']!r} of {shown}: SPIR-V (spirv-dis)\n"
                    + spirv_text(k.spirv)
                )
    sys.stdout.write("\n".join(printed))
    return 0
