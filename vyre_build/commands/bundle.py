"""`vyre-build bundle ls | show | verify | extract | warm`: inspect, unpack and warm bundles.

Every subcommand takes `--json` for machine-readable output (canonical: sorted keys).
A bundle that cannot be opened is reported with the reader's reason and exit code 1;
`verify` also exits 1 when it finds problems.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from vyre_build.bundle import (
    VERSION,
    BundleEntry,
    BundleReader,
    check_id,
    check_suffix,
    read_bundle,
)
from vyre_build.errors import BundleError
from vyre_build.commands import output_dir, write_file


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bundle",
        help="inspect, verify and unpack .vyrebundle files",
        description=__doc__.splitlines()[0],
    )
    sub = parser.add_subparsers(dest="bundle_command", required=True, metavar="ACTION")

    p = sub.add_parser("ls", help="list the kernels of a bundle")
    p.add_argument("bundle")
    p.set_defaults(func=cmd_ls)

    p = sub.add_parser("show", help="show one kernel's metadata and artifacts")
    p.add_argument("bundle")
    p.add_argument("kernel", metavar="KERNEL[.VARIANT]")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("verify", help="re-hash every artifact and check the layout")
    p.add_argument("bundle")
    p.set_defaults(func=cmd_verify)

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
        "warm", help="create every kernel's pipeline now, into the persisted pipeline cache"
    )
    p.add_argument("bundle")
    p.add_argument(
        "--backend", choices=("wgpu", "vulkan"), help="default: $VYRE_BACKEND, else wgpu"
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
    return "x".join(str(g) for g in grid) if isinstance(grid, list) and grid else "-"


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
    print(f"{len(entries)} kernel(s) in {args.bundle}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
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
        print(
            f"binding    {b.get('binding', '?'):>3}  {b.get('kind', '?'):<6} "
            f"{b.get('dtype', '?'):<4} {b.get('name', '?'):<16} {extra}"
        )
    if m.get("uniform"):
        print(f"uniform    binding {m['uniform'].get('binding')}, {m['uniform'].get('size')} bytes")
    if m.get("features"):
        print(f"features   {', '.join(m['features'])}")
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


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        with read_bundle(args.bundle) as reader:
            problems = reader.verify()
            count = len(reader.ids)
    except BundleError as exc:
        if not args.json:
            raise
        problems, count = [str(exc)], 0
    if args.json:
        _print_json(
            {"bundle": args.bundle, "ok": not problems, "kernels": count, "problems": problems}
        )
    elif problems:
        for p in problems:
            print(f"{args.bundle}: {p}", file=sys.stderr)
        print(f"{args.bundle}: {len(problems)} problem(s)", file=sys.stderr)
    else:
        print(f"{args.bundle}: ok ({count} kernel(s), every artifact verified)")
    return 1 if problems else 0


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

    from vyre_build.runtime import get_device, open_bundle

    adapter = int(args.adapter) if args.adapter and args.adapter.isdigit() else args.adapter
    device = get_device(args.backend, adapter)
    start = time.perf_counter()
    with open_bundle(args.bundle, device=device) as bundle:
        warmed = bundle.warm()
    seconds = time.perf_counter() - start
    saved = device.save_pipeline_cache()
    cache = getattr(device, "cache_file", None)
    where = cache.path if cache is not None else None
    if args.json:
        _print_json(
            {
                "bundle": args.bundle,
                "device": device.name,
                "backend": device.backend,
                "kernels": list(warmed.kernels),
                "created": warmed.created,
                "skipped": warmed.skipped,
                "seconds": round(seconds, 6),
                "pipeline_cache": where,
                "cache_loaded": getattr(device, "cache_loaded", 0),
                "saved": saved,
            }
        )
    else:
        for kid, why in sorted(warmed.skipped.items()):
            print(f"skipped {kid}: {why}")
        print(
            f"{len(warmed.kernels)} kernel(s) ready on {device.backend}: {device.name}, "
            f"{warmed.created} pipeline(s) created in {seconds * 1e3:.1f} ms"
        )
        if where is not None:
            print(f"pipeline cache {where}{' (saved)' if saved else ''}")
    return 0
