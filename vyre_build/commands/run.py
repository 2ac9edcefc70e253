"""`vyre-build run`: dispatch one kernel of a bundle on .npy inputs, write .npy outputs.

    vyre-build run BUNDLE KERNEL [--variant V] --input NAME=FILE.npy ...
                   [--scalar NAME=VALUE ...] [--alloc NAME=N[xM...] ...] [--grid X[,Y[,Z]]]
                   [--backend wgpu|vulkan|cpu] [--adapter INDEX|NAME] --out DIR
    vyre-build run --list-adapters [--backend B]

Each buffer the kernel writes is saved as DIR/NAME.npy. A "w"-only buffer not given
with --input is allocated zeroed with the shape from --alloc. Imports only the runtime.
"""

from __future__ import annotations

import os

from vyre_build.core.backends import BACKENDS
from vyre_build.core.files import open_regular
from vyre_build.core.errors import DispatchError
from vyre_build.commands import output_dir
from vyre_build.commands.helptext import add_command


def register(subparsers) -> None:
    p = add_command(subparsers, "run")
    p.add_argument("bundle", nargs="?", help="the .vyrebundle file")
    p.add_argument("kernel", nargs="?", help="kernel name or id (saxpy, add.f32)")
    p.add_argument("--variant", help="variant of KERNEL (or give the id add.f32)")
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="a buffer argument from a .npy file (repeatable)",
    )
    p.add_argument(
        "--scalar",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a scalar argument (repeatable); ints accept 0x..",
    )
    p.add_argument(
        "--alloc",
        action="append",
        default=[],
        metavar="NAME=SHAPE",
        help="allocate a write-only buffer: 1000 or 64x48 (repeatable)",
    )
    p.add_argument(
        "--grid", metavar="X[,Y[,Z]]", help="invocations per axis, overriding the kernel's grid"
    )
    p.add_argument(
        "--backend",
        choices=tuple(BACKENDS),
        help=f"default: $VYRE_BACKEND, else {BACKENDS.default.name}",
    )
    p.add_argument("--adapter", help="adapter index or name substring (see --list-adapters)")
    p.add_argument("--out", metavar="DIR", help="directory for the NAME.npy outputs")
    p.add_argument(
        "--list-adapters", action="store_true", help="list the adapters of --backend and exit"
    )
    p.set_defaults(func=run)


def _pairs(items: list[str], flag: str) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise DispatchError(f"{flag} {item!r}: expected NAME=VALUE")
        if name in out:
            raise DispatchError(f"{flag} {name!r} given twice")
        out[name] = value
    return out


def _ints(text: str, flag: str, sep: str) -> tuple:
    try:
        values = tuple(int(v, 0) for v in text.split(sep))
    except ValueError:
        raise DispatchError(f"{flag} {text!r}: expected integers separated by {sep!r}") from None
    return values


def _scalar(name: str, text: str, dtype: str):
    try:
        return float(text) if dtype in ("f32", "f16") else int(text, 0)
    except ValueError:
        kind = "a number" if dtype in ("f32", "f16") else "an integer"
        raise DispatchError(f"--scalar {name}={text!r}: expected {kind} ({dtype})") from None


def _load_npy(name: str, path: str):
    import numpy as np

    try:
        fd, _ = open_regular(path)  # a FIFO or a device is refused, never waited on
    except OSError as exc:
        raise DispatchError(
            f"--input {name}: cannot read {path!r}: {exc.strerror or exc}"
        ) from None
    with open(fd, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise DispatchError(
                f"--input {name}: {path!r} is not a .npy file (it lacks the .npy magic); save "
                "the array with numpy.save"
            )
        f.seek(0)
        try:
            return np.load(f, allow_pickle=False)
        except (OSError, ValueError) as exc:
            why = (
                "it holds Python objects, which run does not load: save a numeric array"
                if "allow_pickle" in str(exc)
                else str(exc)
            )
            raise DispatchError(f"--input {name}: cannot read {path!r} as .npy: {why}") from None


def run(args) -> int:
    from vyre_build.runtime import get_device, list_adapters, open_bundle

    adapter = args.adapter
    if adapter is not None and adapter.isdigit():
        adapter = int(adapter)
    if args.list_adapters:
        for i, name in enumerate(list_adapters(args.backend)):
            print(f"{i}: {name}")
        return 0
    missing = [
        what
        for what, given in (
            ("BUNDLE", args.bundle),
            ("KERNEL", args.kernel),
            ("--out DIR (where the NAME.npy outputs go)", args.out),
        )
        if not given
    ]
    if missing:
        raise DispatchError(
            f"vyre-build run needs {' and '.join(missing)} (or --list-adapters); e.g. "
            "vyre-build run dist/kernels.vyrebundle saxpy --input x=x.npy --input y=y.npy "
            "--scalar a=2.0 --out out"
        )
    name, variant = args.kernel, args.variant
    if variant is None and "." in name:
        name, _, variant = name.partition(".")
    inputs, scalars = _pairs(args.input, "--input"), _pairs(args.scalar, "--scalar")
    allocs = _pairs(args.alloc, "--alloc")
    device = get_device(args.backend, adapter)
    with open_bundle(args.bundle, device=device) as bundle:
        kernel = bundle.kernel(name, variant)
        kinds = {b.name: b for b in kernel.bindings}
        call = {}
        for flag, given in (("--input", inputs), ("--scalar", scalars), ("--alloc", allocs)):
            for arg in given:
                if arg not in kinds:
                    raise DispatchError(
                        f"Kernel {kernel.id!r}: {flag} {arg!r} names no "
                        f"argument; it takes {', '.join(kinds)}"
                    )
                if arg in call:
                    raise DispatchError(f"Kernel {kernel.id!r}: argument {arg!r} given twice")
                want = "scalar" if flag == "--scalar" else "buffer"
                if kinds[arg].kind != want:
                    raise DispatchError(
                        f"Kernel {kernel.id!r}: {arg!r} is a "
                        f"{kinds[arg].kind}; pass it with "
                        f"{'--scalar' if want == 'buffer' else '--input'}"
                    )
                if flag == "--input":
                    call[arg] = _load_npy(arg, given[arg])
                elif flag == "--scalar":
                    call[arg] = _scalar(arg, given[arg], kinds[arg].dtype)
                else:
                    call[arg] = _ints(given[arg], "--alloc", "x")
        grid = _ints(args.grid, "--grid", ",") if args.grid else None
        missing_w = [n for n, b in kinds.items() if n not in call and b.access == "w"]
        if missing_w:
            raise DispatchError(
                f"Kernel {kernel.id!r}: write-only buffer {missing_w[0]!r} "
                f"needs --input {missing_w[0]}=FILE.npy or "
                f"--alloc {missing_w[0]}=LENGTH"
            )
        results = kernel.dispatch(call, grid=grid)
    import numpy as np

    output_dir(args.out, "--out")
    for out_name in sorted(results):
        path = os.path.join(args.out, f"{out_name}.npy")
        np.save(path, results[out_name])
        print(f"wrote {path}")
    return 0
