"""`vyre-build bundle ls | show | verify | extract | sign | warm`: inspect, check, unpack, sign.

Every subcommand takes `--json` for machine-readable output (canonical: sorted keys).
A bundle that cannot be opened is reported with the reader's reason and exit code 1;
`verify` also exits 1 when it finds problems, when none of its `--key`s signed the
bundle, or when `--rebuild-from` does not give the same bytes. `ls`, `show` and
`extract` honour $VYRE_TRUSTED_KEYS as the runtime does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from vyre_build.core.backends import BACKENDS
from vyre_build.bundle import (
    VERSION,
    BundleEntry,
    BundleReader,
    check_id,
    check_suffix,
    read_bundle,
)
from vyre_build.core.errors import BundleError, VyreError
from vyre_build.commands import output_dir, write_file
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


def _print_json(value) -> None:
    print(json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False))


def _entry_json(e: BundleEntry) -> dict:
    return {
        "id": e.id,
        "name": e.name,
        "variant": e.variant,
        "meta": e.meta,
        "artifacts": e.artifacts,
    }


def _fmt_grid(meta: dict) -> str:
    grid = meta.get("grid")
    if not (isinstance(grid, list) and grid):
        return "-"
    # invocations per axis: a number, or the buffer / scalar named (`n x rows`, not `nxrows`)
    sep = "x" if all(isinstance(g, int) for g in grid) else " x "
    return sep.join(str(g) for g in grid)


def _fmt_wg(meta: dict) -> str:
    wg = meta.get("workgroup_size")
    return "x".join(str(w) for w in wg) if isinstance(wg, list) and wg else "-"


def cmd_ls(args: argparse.Namespace) -> int:
    with read_bundle(args.bundle) as reader:
        entries = reader.entries()
    if args.json:
        _print_json(
            {
                "bundle": args.bundle,
                "version": VERSION,
                "kernels": [_entry_json(e) for e in entries],
            }
        )
        return 0
    rows = [("ID", "WORKGROUP", "GRID", "BINDINGS", "ARTIFACTS")]
    for e in entries:
        bindings = e.meta.get("bindings")
        rows.append(
            (
                e.id,
                _fmt_wg(e.meta),
                _fmt_grid(e.meta),
                str(len(bindings)) if isinstance(bindings, list) else "-",
                " ".join(f"{s}:{a['size']}" for s, a in sorted(e.artifacts.items())),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    debug = sum(isinstance(e.meta.get("debug"), dict) for e in entries)
    built = f" ({debug} of them a debug build: bundle show says more)" if debug else ""
    print(f"{len(entries)} kernel(s) in {args.bundle}{built}")
    return 0


def _fmt_debug(table: dict) -> str:
    """A debug build's line: its sites by kind and the debug buffer's binding."""
    sites = table.get("sites") if isinstance(table.get("sites"), list) else []
    kinds = [s.get("kind") for s in sites if isinstance(s, dict)]
    counts = ", ".join(f"{kinds.count(k)} {k}" for k in ("print", "assert", "bounds"))
    binding = table.get("binding")
    where = f"debug buffer at binding {binding}" if binding is not None else "no debug buffer"
    return f"debug ({counts} sites; {where})"


def cmd_show(args: argparse.Namespace) -> int:
    if args.kernel is None or args.device:
        from vyre_build.commands.tune import show_tuning

        return show_tuning(args)
    with read_bundle(args.bundle) as reader:
        e = reader.entry(args.kernel)
    if args.json:
        _print_json(_entry_json(e))
        return 0
    m = e.meta
    print(f"kernel     {e.id}  (name {e.name}, variant {e.variant or '-'})")
    print(f"workgroup  {_fmt_wg(m)}")
    print(f"grid       {_fmt_grid(m)}")
    for b in m.get("bindings") or []:
        extra = f"offset {b['offset']}" if "offset" in b else f"access {b.get('access', '?')}"
        extra += ", any length" if b.get("any_length") is True else ""
        print(
            f"binding    {b.get('binding', '?'):>3}  {b.get('kind', '?'):<6} "
            f"{b.get('dtype', '?'):<4} {b.get('name', '?'):<16} {extra}"
        )
    if m.get("uniform"):
        print(f"uniform    binding {m['uniform'].get('binding')}, {m['uniform'].get('size')} bytes")
    if m.get("features"):
        print(f"features   {', '.join(m['features'])}")
    if isinstance(m.get("debug"), dict):
        print(f"build      {_fmt_debug(m['debug'])}")
    skipped = m.get("skipped")
    for target, why in sorted(skipped.items()) if isinstance(skipped, dict) else ():
        print(f"skipped    {target}: {why}")  # the artifact this kernel has none of, and why
    if m.get("variant_values"):
        values = ", ".join(f"{k}={v}" for k, v in sorted(m["variant_values"].items()))
        print(f"variant    {values}")
    for suffix, a in sorted(e.artifacts.items()):
        print(
            f"artifact   {suffix:<7} {a['size']:>8} bytes at {a['offset']:<8} blake3 {a['blake3']}"
        )
    prov = m.get("provenance")
    if prov is not None:
        print("provenance " + json.dumps(prov, sort_keys=True, ensure_ascii=False))
    return 0


def _signature_json(reader: BundleReader) -> dict:
    sig, signer = reader.signature, reader.signer
    return {
        "signed": sig is not None,
        "key_id": sig.key_id if sig else None,
        "trusted": signer is not None if sig else False,
        "comment": signer.comment if signer else None,
    }


def _signature_text(reader: BundleReader) -> str:
    sig, signer = reader.signature, reader.signer
    if signer is not None:
        return f"signed by {signer.describe()}, a trusted key; signature verified"
    if sig is not None:
        return f"signed by key id {sig.key_id} (not checked against a trusted key: give --key PUB)"
    return "not signed"


def cmd_verify(args: argparse.Namespace) -> int:
    from vyre_build.bundle.keys import load_public_key

    options = {"spirv_opt": True} if args.spirv_opt else {}
    signature, rebuild = None, None
    keys = [load_public_key(p) for p in args.key] if args.key else None  # errors name the file
    try:
        with read_bundle(args.bundle, trusted_keys=keys) as reader:
            problems = reader.verify()
            count = len(reader.ids)
            signature = _signature_json(reader)
            sig_text = _signature_text(reader)
            if args.rebuild_from is not None:
                from vyre_build.build.rebuild import rebuild_and_compare

                rebuild = rebuild_and_compare(reader, args.rebuild_from, options=options)
                rebuild_lines = _rebuild_lines(rebuild)
    except BundleError as exc:
        if not args.json:
            raise
        problems, count = [str(exc)], 0
    failed = bool(problems) or (rebuild is not None and not _rebuild_ok(rebuild))
    if args.json:
        doc = {"bundle": args.bundle, "ok": not failed, "kernels": count, "problems": problems}
        doc["signature"] = signature
        if args.rebuild_from is not None:
            doc["rebuild"] = rebuild
        _print_json(doc)
        return 1 if failed else 0
    if problems:
        for p in problems:
            print(f"{args.bundle}: {p}", file=sys.stderr)
        print(f"{args.bundle}: {len(problems)} problem(s)", file=sys.stderr)
    else:
        print(f"{args.bundle}: ok ({count} kernel(s), every artifact verified)")
    print(f"{args.bundle}: {sig_text}")
    if rebuild is not None:
        print("\n".join(rebuild_lines))
    return 1 if failed else 0


def _rebuild_ok(r: dict) -> bool:
    return bool(r["identical"]) or (r["identical"] is None and r["same_kernels"])


def _artifact_text(d: dict) -> str:
    if d["bundle_size"] is None:
        return f"{d['suffix']} only in the rebuild"
    if d["rebuilt_size"] is None:
        return f"{d['suffix']} only in the bundle"
    return (
        f"{d['suffix']} differs from byte {d['first_offset']} "
        f"(bundle {d['bundle_size']} bytes, rebuilt {d['rebuilt_size']})"
    )


def _hash_text(m: dict) -> str:
    found = m["recorded_matches"]
    matches = f"the tree's {found} has that hash" if found else "no file of the tree has that hash"
    head = f"  kernel {m['kernel']!r}: recorded {m['kind']} hash {m['recorded']}"
    if m["kind"] == "import":
        return f"{head} is not among the imports of the tree's {m['tree_file']}; {matches}"
    if m["tree"] is None:
        return f"{head}: the tree builds no such kernel; {matches}"
    return f"{head} is not the tree's {m['tree_file']} (which hashes to {m['tree']}); {matches}"


def _rebuild_lines(r: dict) -> list[str]:
    """The text report of `rebuild_and_compare`."""
    from vyre_build.build.rebuild import identity_text

    head = f"{r['bundle']}: rebuilt from {r['source_dir']} with {identity_text(r['compiler'])}"
    kernels = [k for k in r["kernels"] if k["status"] != "not-in-bundle"]
    if r["identical"]:
        return [f"{head}: byte-identical ({len(kernels)} kernel(s); the signature aside)"]
    if r["identical"] is None and r["same_kernels"]:
        return [
            f"{head}: every kernel's artifacts and metadata identical ({len(kernels)} "
            "kernel(s); a version 1 bundle, so the file is not compared as a whole)"
        ]
    lines = [f"{head}: DIFFERS (targets {', '.join(r['targets'])})"]
    for k in r["kernels"]:
        name = f"  kernel {k['id']!r}" + (f" ({k['file']})" if k["file"] else "")
        if k["status"] == "missing-from-tree":
            lines.append(f"{name}: in the bundle, but the tree builds no such kernel")
        elif k["status"] == "not-in-bundle":
            lines.append(f"{name}: built by the tree, not in the bundle")
        elif k["status"] == "differs":
            parts = [_artifact_text(d) for d in k["artifacts"]]
            parts += ["metadata differs"] if k["meta_differs"] else []
            lines.append(f"{name}: " + "; ".join(parts))
    lines += [_hash_text(m) for m in r["source_mismatches"]]
    lines += [f"  {e}" for e in r["errors"]]
    bad = sum(k["status"] != "same" for k in r["kernels"])
    if bad == 0 and not r["errors"]:
        lines.append("  every kernel matches, but the file bytes differ (padding or layout)")
    lines.append(f"{bad} of {len(r['kernels'])} kernel(s) differ")
    return lines


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
