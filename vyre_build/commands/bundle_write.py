"""`vyre-build bundle sign` and `bundle extract`: the bundle subcommands that write files.

`sign` rewrites a bundle (in place, or to `-o`) signed with an Ed25519 secret key, its
kernels and tuning data unchanged; `extract` writes every artifact to DIR as
<id><suffix>, and `<id>.meta.json` where the bundle holds none.

Guarantees: a bundle with problems is never signed; nothing is written under a name that
is not a plain file name inside DIR (`_safe_target`), and every name is checked and every
artifact read and verified before the first file is written, so a bad bundle writes
nothing. Files are written atomically (commands.write_file).
"""

from __future__ import annotations

import argparse
import json
import os

from vyre_build.bundle import BundleReader, check_id, check_suffix, read_bundle
from vyre_build.commands import output_dir, write_file
from vyre_build.commands.bundle_show import _print_json
from vyre_build.core.errors import BundleError, VyreError

__all__ = ["cmd_extract", "cmd_sign", "extract"]


def cmd_sign(args: argparse.Namespace) -> int:
    from vyre_build.bundle import write_bundle
    from vyre_build.bundle.keys import load_secret_key

    key = load_secret_key(args.key)
    if args.output is not None:
        folder = os.path.dirname(args.output)
        if not args.output or os.path.isdir(args.output):
            raise VyreError(
                f"error: -o {args.output!r}: give the signed bundle's file path (leave -o out "
                "to sign the bundle in place)"
            )
        if folder and not os.path.isdir(folder):
            raise VyreError(f"error: -o {args.output}: folder {folder} does not exist")
    out = args.output or args.bundle
    with read_bundle(args.bundle, trusted_keys=False) as reader:
        problems = reader.verify()
        if problems:
            raise BundleError(
                f"{args.bundle}: refusing to sign a bundle with {len(problems)} problem(s): "
                f"{problems[0]} (see `vyre-build bundle verify`)"
            )
        before = reader.signature
        entries = [
            {"meta": e.meta, "artifacts": {s: reader.read_artifact(e.id, s) for s in e.artifacts}}
            for e in reader.entries()
        ]
        tuning = reader.tuning  # the tuning data is kept, and signed with the rest
    size = write_bundle(out, entries, sign_key=key, tuning=tuning)
    replaced = (
        f"; replaced the signature by key id {before.key_id}"
        if before is not None and before.public != key.public.raw
        else ""
    )
    if args.json:
        _print_json(
            {
                "bundle": out,
                "key_id": key.public.key_id,
                "comment": key.public.comment,
                "size": size,
                "replaced": before.key_id if replaced else None,
            }
        )
    else:
        print(f"{out}: signed by {key.public.describe()} ({size} bytes){replaced}")
    return 0


def _safe_target(directory: str, ident: str, suffix: str) -> str:
    """The path DIR/<id><suffix>, refused unless it is a plain file name inside DIR."""
    check_id(ident)
    check_suffix(suffix)
    filename = ident + suffix
    if (
        os.path.isabs(filename)
        or ".." in filename
        or "/" in filename
        or os.sep in filename
        or (os.altsep and os.altsep in filename)
    ):
        raise BundleError(f"refusing to extract {filename!r}: not a plain file name")
    return os.path.join(directory, filename)


def extract(reader: BundleReader, directory: str) -> list[str]:
    """Write every verified artifact, and `<id>.meta.json`, under `directory`; return the names.

    Every name is checked before anything is written, so a bad bundle writes nothing.
    """
    plan = []
    for e in reader.entries():
        for suffix in sorted(e.artifacts):
            plan.append((_safe_target(directory, e.id, suffix), e.id, suffix))
        if ".meta.json" not in e.artifacts:
            meta = (
                json.dumps(e.meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
            )
            plan.append((_safe_target(directory, e.id, ".meta.json"), e.id, meta.encode()))
    # Read and verify everything first: a corrupt artifact must not leave a partial tree.
    payloads = [
        (path, reader.read_artifact(ident, what) if isinstance(what, str) else what)
        for path, ident, what in plan
    ]
    output_dir(directory, "-o")
    for path, data in payloads:
        write_file(path, data)
    return [os.path.basename(path) for path, _ in payloads]


def cmd_extract(args: argparse.Namespace) -> int:
    with read_bundle(args.bundle) as reader:
        names = extract(reader, args.output)
    if args.json:
        _print_json({"bundle": args.bundle, "directory": args.output, "files": names})
    else:
        for n in names:
            print(os.path.join(args.output, n))
        print(f"{len(names)} file(s) written to {args.output}")
    return 0
