"""`vyre-build bundle ls` and `bundle show KERNEL`: a bundle's kernels and one kernel's
metadata and artifacts, as text or (`--json`) JSON, and `_print_json`, the JSON printer of
every bundle subcommand (bundle.py registers them).

Guarantees: JSON output is canonical (sorted keys, two-space indent, no ASCII escaping);
the text tables read only the metadata a bundle holds, printing "-" (or "?") for what a
kernel's metadata leaves out. `show` with no kernel, or with `--device`, is
`commands.tune.show_tuning`'s. A bundle that cannot be opened raises the reader's
BundleError.
"""

from __future__ import annotations

import argparse
import json

from vyre_build.bundle import VERSION, BundleEntry, read_bundle

__all__ = ["cmd_ls", "cmd_show"]


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
