"""`vyre-build tune BUNDLE`: measure every tunable's candidates on one device and record
the winners (vyre_build/library/tuner.py), into the bundle or into a record file.

Guarantees: the bundle is rewritten atomically, with its kernels' bytes unchanged and the
other devices' records kept (a record of the same device is replaced); a signed bundle is
re-signed with --sign-key, and refused before anything runs when no key is given; a record
file holds {"format": "vyretuning", "records": [...]} and is merged into likewise.
"""

from __future__ import annotations

import argparse
import os
import sys

from vyre_build.core.backends import BACKENDS, REFERENCE
from vyre_build.bundle import read_bundle
from vyre_build.bundle.tuning import device_text, merge_records, read_records, record_file_bytes
from vyre_build.commands import write_file
from vyre_build.commands.helptext import add_command
from vyre_build.core.errors import VyreError
from vyre_build.core.files import canonical_json


def register(subparsers) -> None:
    p = add_command(subparsers, "tune")
    p.add_argument("bundle")
    p.add_argument(
        "--backend",
        choices=tuple(BACKENDS),
        help=f"default: $VYRE_BACKEND, else {BACKENDS.default.name}",
    )
    p.add_argument("--adapter", help="adapter index or name substring (vyre-build devices)")
    p.add_argument(
        "--time-limit", type=float, metavar="S", help="stop starting candidates after S seconds"
    )
    p.add_argument("--rounds", type=int, default=7, help="timed calls per candidate (default 7)")
    p.add_argument(
        "--record", metavar="FILE", help="merge the record into FILE, not into the bundle"
    )
    p.add_argument("--sign-key", metavar="KEYFILE", help="re-sign the bundle with this secret key")
    p.add_argument(
        "--only",
        metavar="NAME[,NAME]",
        help="tune these tunables only (the record's other entries for this device are kept)",
    )
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.set_defaults(func=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    from vyre_build.runtime import get_device, open_bundle
    from vyre_build.library.tuner import tune_bundle

    if args.rounds < 1:
        raise VyreError(f"error: --rounds must be at least 1, got {args.rounds}")
    if args.time_limit is not None and not args.time_limit > 0:
        raise VyreError(
            f"error: --time-limit must be a positive number of seconds, got {args.time_limit:g}"
        )
    key = None
    if args.sign_key:
        from vyre_build.bundle.keys import load_secret_key

        key = load_secret_key(args.sign_key)  # a bad key is refused before anything runs
    with read_bundle(args.bundle, trusted_keys=False) as reader:
        if not reader.tuning["tunables"]:
            raise VyreError(
                f"{args.bundle}: declares no tunables: nothing to tune (declare them in the kernel "
                "tree's tuning.yaml and build the bundle with them: docs/tuning.md)"
            )
        only = args.only.split(",") if args.only else None
        unknown = sorted(set(only or ()) - set(reader.tuning["tunables"]))
        if unknown:
            raise VyreError(
                f"error: --only {unknown[0]}: {args.bundle} has no such tunable (it has "
                f"{', '.join(sorted(reader.tuning['tunables']))})"
            )
        if args.record is None and reader.signature is not None and key is None:
            raise VyreError(
                f"{args.bundle}: refusing to write a record into a bundle signed by key id "
                f"{reader.signature.key_id} without a key: its signature would no longer hold; "
                "give --sign-key KEYFILE to re-sign it, or --record FILE to keep the record aside"
            )
    # a record file that cannot be merged into is refused before anything runs
    old = read_records(args.record) if args.record and os.path.exists(args.record) else []
    backend = args.backend or os.environ.get("VYRE_BACKEND") or BACKENDS.default.name
    device = get_device(backend, args.adapter)
    say = lambda line: print(line, file=sys.stderr, flush=True)
    with (
        open_bundle(args.bundle, device=device, trusted_keys=False) as bundle,
        open_bundle(
            args.bundle, device=get_device(REFERENCE.name), trusted_keys=False
        ) as reference,
    ):
        say(
            f"tuning {len(only or bundle.reader.tuning['tunables'])} tunable(s) on {device_text(_identity(device))}"
        )
        record = tune_bundle(
            bundle,
            reference,
            rounds=args.rounds,
            time_limit=args.time_limit,
            progress=say,
            only=only,
        )
    if args.record is not None:
        write_file(args.record, record_file_bytes(merge_records(old, [record])))
        where = args.record
    else:
        _write_into_bundle(args.bundle, record, key)
        where = args.bundle
    if args.json:
        print(canonical_json(record).decode("utf-8"))
    else:
        for name, pick in sorted(record["picks"].items()):
            dropped = f" ({len(pick['dropped'])} dropped)" if pick["dropped"] else ""
            print(f"{name}: {pick['candidate']}{dropped}")
        for name, why in sorted(record["untuned"].items()):
            print(f"{name}: not tuned: {why}")
        signed = (
            f", signed by {key.public.describe()}"
            if key is not None and args.record is None
            else ""
        )
        print(f"record for {device_text(record['device'])} written into {where}{signed}")
    return 0


def _identity(device) -> dict:
    from vyre_build.runtime.tuning import device_identity

    return device_identity(device.profile)


def _write_into_bundle(path: str, record: dict, key) -> None:
    """Rewrite the bundle at `path` with `record` merged into its tuning records."""
    from vyre_build.bundle import write_bundle

    with read_bundle(path, trusted_keys=False) as reader:
        problems = reader.verify()
        if problems:
            raise VyreError(
                f"{path}: refusing to rewrite a bundle with {len(problems)} problem(s): "
                f"{problems[0]} (see `vyre-build bundle verify`)"
            )
        entries = [
            {"meta": e.meta, "artifacts": {s: reader.read_artifact(e.id, s) for s in e.artifacts}}
            for e in reader.entries()
        ]
        tuning = {
            "tunables": reader.tuning["tunables"],
            "records": merge_records(reader.tuning["records"], [record]),
        }
    write_bundle(path, entries, sign_key=key, tuning=tuning)


def show_tuning(args: argparse.Namespace) -> int:
    """`bundle show BUNDLE [--device]`: the tunables and records, or this device's picks."""
    with read_bundle(args.bundle) as reader:
        tuning = reader.tuning
    tunables, records = tuning["tunables"], tuning["records"]
    if args.device:
        from vyre_build.runtime import get_device
        from vyre_build.runtime.tuning import choose, device_identity

        backend = args.backend or os.environ.get("VYRE_BACKEND") or BACKENDS.default.name
        profile = get_device(backend, args.adapter).profile
        picks = {name: choose(tuning, name, profile) for name in sorted(tunables)}
        if args.json:
            doc = {
                "device": device_identity(profile),
                "picks": {n: c._asdict() for n, c in picks.items() if c is not None},
            }
            print(canonical_json(doc).decode("utf-8"))
            return 0
        print(f"device     {device_text(device_identity(profile))}")
        for name, c in picks.items():
            assert c is not None
            why = f"{c.how} match: the record of {c.device}" if c.device else c.how
            print(f"tuned      {name}: {c.candidate} ({why})")
        if not tunables:
            print(f"{args.bundle} declares no tunables")
        return 0
    if args.json:
        print(canonical_json({"bundle": args.bundle, **tuning}).decode("utf-8"))
        return 0
    for name, t in sorted(tunables.items()):
        what = f"library.{t['library']}" if t["library"] else "kernels"
        cands = ", ".join(
            c + (f" ({k['kernel']})" if k["kernel"] and not t["library"] else "")
            for c, k in t["candidates"].items()
        )
        print(f"tunable    {name} ({what}): {cands}; default {t['default']}")
    for rec in records:
        print(f"record     {device_text(rec['device'])}, {rec['clock']} clock")
        for name, pick in sorted(rec["picks"].items()):
            times = ", ".join(f"{c} {s * 1e3:.4g} ms" for c, s in sorted(pick["seconds"].items()))
            dropped = "".join(f"; {c} dropped: {why}" for c, why in sorted(pick["dropped"].items()))
            print(f"  {name}: {pick['candidate']} ({times}{dropped})")
        for name, why in sorted(rec["untuned"].items()):
            print(f"  {name}: not tuned: {why}")
    print(f"{len(tunables)} tunable(s), {len(records)} tuning record(s) in {args.bundle}")
    return 0
