"""`vyre-build bundle ls | show | verify | extract | sign | warm`: inspect, check, unpack, sign.

Every subcommand takes `--json` for machine-readable output (canonical: sorted keys).
A bundle that cannot be opened is reported with the reader's reason and exit code 1;
`verify` also exits 1 when it finds problems, when none of its `--key`s signed the
bundle, or when `--rebuild-from` does not give the same bytes. `ls`, `show` and
`extract` honour $VYRE_TRUSTED_KEYS as the runtime does.

This module registers the subcommands and runs `warm`; the others live one module each:
bundle_show.py (ls, show), bundle_verify.py (verify), bundle_write.py (sign, extract).
"""

from __future__ import annotations

import argparse

from vyre_build.core.backends import BACKENDS
from vyre_build.commands.bundle_show import _print_json, cmd_ls, cmd_show
from vyre_build.commands.bundle_verify import cmd_verify
from vyre_build.commands.bundle_write import cmd_extract, cmd_sign
from vyre_build.commands.helptext import add_command


def register(subparsers) -> None:
    parser = add_command(subparsers, "bundle")
    sub = parser.add_subparsers(dest="bundle_command", required=True, metavar="ACTION")

    p = sub.add_parser("ls", help="list the kernels of a bundle")
    p.add_argument("bundle")
    p.set_defaults(func=cmd_ls)

    p = sub.add_parser(
        "show", help="show one kernel's metadata and artifacts, or the bundle's tuning records"
    )
    p.add_argument("bundle")
    p.add_argument(
        "kernel", metavar="KERNEL[.VARIANT]", nargs="?", help="omitted: the tunables and records"
    )
    p.add_argument(
        "--device",
        action="store_true",
        help="what each tunable runs on this device (--backend, --adapter) and why",
    )
    p.add_argument(
        "--backend", choices=tuple(BACKENDS), help="with --device: default $VYRE_BACKEND"
    )
    p.add_argument("--adapter", help="with --device: adapter index or name substring")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "verify", help="re-hash every artifact, check the layout, the signature, the origin"
    )
    p.add_argument("bundle")
    p.add_argument(
        "--key",
        action="append",
        metavar="PUB",
        help="a trusted public key file (repeatable): refuse unless one of them signed the "
        "bundle (default: $VYRE_TRUSTED_KEYS)",
    )
    p.add_argument(
        "--rebuild-from",
        metavar="SRC_DIR",
        help="rebuild the bundle from this kernel tree with the recorded compiler and "
        "compare byte for byte",
    )
    p.add_argument(
        "--spirv-opt",
        action="store_true",
        help="with --rebuild-from: the bundle was built with the spirv_opt option",
    )
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("sign", help="sign a bundle with a secret key (Ed25519)")
    p.add_argument("bundle")
    p.add_argument("--key", required=True, metavar="KEYFILE", help="the secret key file")
    p.add_argument(
        "-o", "--output", metavar="OUT", help="write the signed bundle here (default: in place)"
    )
    p.set_defaults(func=cmd_sign)

    p = sub.add_parser("extract", help="write every artifact to DIR as <id><suffix>")
    p.add_argument("bundle")
    p.add_argument(
        "-o",
        "--output",
        default=".",
        metavar="DIR",
        help="directory to write into (created if missing; default: .)",
    )
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser(
        "warm",
        help="create the pipelines of the kernels this device runs now, into the persisted "
        "pipeline cache",
    )
    p.add_argument("bundle")
    p.add_argument(
        "--all",
        action="store_true",
        help="every kernel, also the candidates no pick on this device runs",
    )
    p.add_argument(
        "--backend",
        choices=tuple(BACKENDS),  # cpu too, as $VYRE_BACKEND allows: it loads every kernel
        help=f"default: $VYRE_BACKEND, else {BACKENDS.default.name}",
    )
    p.add_argument("--adapter", help="adapter index or name substring (vyre-build devices)")
    p.set_defaults(func=cmd_warm)

    for action in sub.choices.values():
        action.add_argument("--json", action="store_true", help="print JSON instead of text")


def cmd_warm(args: argparse.Namespace) -> int:
    import time

    import vyre_build.library  # noqa: F401 - registers the library's picks (library/picks.py)
    from vyre_build.runtime import get_device, open_bundle

    adapter = int(args.adapter) if args.adapter and args.adapter.isdigit() else args.adapter
    device = get_device(args.backend, adapter)
    start = time.perf_counter()
    with open_bundle(args.bundle, device=device) as bundle:
        warmed = bundle.warm(all=args.all)
    seconds = time.perf_counter() - start
    saved = device.save_pipeline_cache()
    where, loaded = device.pipeline_cache_state()
    if args.json:
        _print_json(
            {
                "bundle": args.bundle,
                "device": device.name,
                "backend": device.backend,
                "kernels": list(warmed.kernels),
                "created": warmed.created,
                "skipped": warmed.skipped,
                "unpicked": warmed.unpicked,
                "seconds": round(seconds, 6),
                "pipeline_cache": where,
                "cache_loaded": loaded,
                "saved": saved,
            }
        )
    else:
        for kid, why in sorted(warmed.skipped.items()):
            print(f"skipped {kid}: {why}")
        if warmed.unpicked:
            print(
                f"left out {len(warmed.unpicked)} kernel(s) no pick on this device runs "
                "(--all warms them too; --json lists each with its pick)"
            )
        print(
            f"{len(warmed.kernels)} kernel(s) ready on {device.backend}: {device.name}, "
            f"{warmed.created} pipeline(s) created in {seconds * 1e3:.1f} ms"
        )
        if where is not None:
            print(f"pipeline cache {where}{' (saved)' if saved else ''}")
    return 0
