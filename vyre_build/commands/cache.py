"""`vyre-build cache`: inspect and maintain the artifact cache.

    stats                     entries, bytes, hits/misses overall and of the last build
    ls                        every entry: key, source file, stems, size, last access
    show KEY                  the key manifest (each part with its own hash) and outputs
    why TARGET_OR_KEY [OTHER] which key parts differ between two builds of a target
    verify [--rebuild]        rehash every blob and record; --rebuild recompiles every
                              entry from its recorded inputs and reports differing bytes
    gc [--max-size N] [--max-age D]   evict least-recently-used entries
Every subcommand takes --json (machine-readable output on stdout) and --cache-dir.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

from vyre_build.build_step import rebuild_record, split_output_name
from vyre_build.cache import CACHE_DIR_ENV, default_cache_dir
from vyre_build.cache.key import content_hash, diff_manifests, manifest_parts
from vyre_build.cache.store import Store, is_hex_hash, record_blobs
from vyre_build.errors import CacheError

_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """'500M', '2g', '1048576' -> bytes (binary units)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", text.lower())
    if not m:
        raise CacheError(f"--max-size {text!r} is not a size; write e.g. 500M, 2G or 1048576")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])


def _store(args) -> Store:
    root = args.cache_dir or default_cache_dir(".")
    if not os.path.isdir(root):
        raise CacheError(
            f"no cache at {root}; build first, or pass --cache-dir / set {CACHE_DIR_ENV}"
        )
    return Store(root)


def _emit(args, data, lines) -> None:
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        for line in lines:
            print(line)


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def cmd_stats(args) -> int:
    store = _store(args)
    stats = store.read_stats()
    data = {
        "cache_dir": store.root,
        **store.usage(),
        "overall": stats["overall"],
        "last_build": stats["last_build"],
        "recent_builds": stats.get("recent_builds", []),
    }
    o, last = stats["overall"], stats["last_build"]
    lines = [
        f"cache {store.root}",
        f"  {data['entries']} entries, {data['blobs']} blobs, {data['total_bytes']} bytes",
        (
            f"  overall: {o.get('hits', 0)} hits, {o.get('misses', 0)} misses, "
            f"{o.get('corrupt', 0)} corrupt, {o.get('builds', 0)} builds"
        ),
    ]
    if last:
        lines.append(
            f"  last build: {last['hits']} hits, {last['misses']} misses, "
            f"{last['corrupt']} corrupt, {last['stored']} stored ({last['label']})"
        )
    _emit(args, data, lines)
    return 0


def _entries(store: Store) -> list[dict]:
    out = []
    for key in store.iter_keys():
        record = store.get_record(key)
        if record is None:
            continue
        st = os.stat(store.record_path(key))
        size = st.st_size + sum(o["size"] for o in record["outputs"].values())
        out.append(
            {
                "key": key,
                "source": record["info"].get("source"),
                "stems": record["info"].get("stems", []),
                "bytes": size,
                "last_access": st.st_mtime,
            }
        )
    return out


def cmd_ls(args) -> int:
    entries = _entries(_store(args))
    lines = [
        f"{e['key'][:16]}  {e['source'] or '?':24} {e['bytes']:>9}  "
        f"{_stamp(e['last_access'])}  {' '.join(e['stems'])}"
        for e in entries
    ]
    _emit(args, {"entries": entries}, lines or ["(empty)"])
    return 0


def _record(store: Store, key: str) -> dict:
    record = store.get_record(key)
    if record is None:
        raise CacheError(
            f"no entry {key} in {store.root} (evicted or never built); see `vyre-build cache ls`"
        )
    return record


def cmd_show(args) -> int:
    store = _store(args)
    record = _record(store, store.resolve_key(args.key))
    parts = [p.to_json() | {"label": p.label} for p in manifest_parts(record["manifest"])]
    lines = [f"key {record['key']}", "manifest:"]
    for p in parts:
        value = f"  {json.dumps(p['value'], sort_keys=True)}" if "value" in p else ""
        lines.append(f"  {p['label']:32} {p['hash']}{value}")
    lines.append("outputs:")
    lines += [
        f"  {name:32} {o['hash']}  {o['size']} bytes"
        for name, o in sorted(record["outputs"].items())
    ]
    _emit(
        args,
        {
            "key": record["key"],
            "parts": parts,
            "outputs": record["outputs"],
            "info": record["info"],
        },
        lines,
    )
    return 0


def _stem_of(target: str) -> str:
    name = os.path.basename(target.rstrip("/"))
    split = split_output_name(name)
    return split[0] if split else name


def _resolve(store: Store, what: str) -> tuple[str, str | None]:
    """(key, stem or None) for a key (prefix) or a target: an output path or a stem."""
    if re.fullmatch(r"[0-9a-fA-F]{4,64}", what):
        try:
            return store.resolve_key(what), None
        except CacheError:
            if is_hex_hash(what.lower()):
                raise
    stem = _stem_of(what)
    keys = store.history(stem)
    if not keys:
        raise CacheError(
            f"{what!r} is neither a key in the cache nor a target built through "
            f"it (no history for stem {stem!r})"
        )
    return keys[-1], stem


def cmd_why(args) -> int:
    store = _store(args)
    new_key, stem = _resolve(store, args.target)
    if args.other is not None:
        old_key, _ = _resolve(store, args.other)
    else:
        if stem is None:
            stems = _record(store, new_key)["info"].get("stems", [])
            stem = stems[0] if stems else None
        keys = store.history(stem) if stem else []
        earlier = keys[: keys.index(new_key)] if new_key in keys else keys[:-1]
        if not earlier:
            raise CacheError(
                f"{args.target!r}: only one build of {stem or new_key} is "
                "recorded; nothing to compare (give two keys or targets)"
            )
        old_key = earlier[-1]
    diff = diff_manifests(_record(store, old_key)["manifest"], _record(store, new_key)["manifest"])
    lines = [f"{stem or args.target}: {old_key[:16]} -> {new_key[:16]}"]
    if not diff:
        lines.append("  same key parts (identical inputs)")
    for d in diff:
        if d["change"] == "changed":
            lines.append(f"  {d['part']} changed: {d['old'][:16]} -> {d['new'][:16]}")
            if "new_value" in d:
                lines.append(
                    f"    was {json.dumps(d['old_value'], sort_keys=True)}, "
                    f"now {json.dumps(d['new_value'], sort_keys=True)}"
                )
        else:
            lines.append(f"  {d['part']} {d['change']}")
    _emit(
        args,
        {"target": args.target, "stem": stem, "old": old_key, "new": new_key, "differences": diff},
        lines,
    )
    return 0


def _blob_state(store: Store, digest: str) -> str:
    """ "ok", "missing" or "corrupt", read-only (verify never deletes)."""
    try:
        with open(store.blob_path(digest), "rb") as f:
            return "ok" if content_hash(f.read()) == digest else "corrupt"
    except FileNotFoundError:
        return "missing"


def cmd_verify(args) -> int:
    store = _store(args)
    corrupt_records, blob_users, intact = [], {}, []
    for key in store.iter_keys():
        try:
            with open(store.record_path(key), "rb") as f:
                record = json.loads(f.read())
        except (ValueError, FileNotFoundError):
            record = None
        problem = store.check_record(key, record)
        if problem:
            corrupt_records.append({"key": key, "problem": problem})
            continue
        intact.append(record)
        for b in record_blobs(record):
            blob_users.setdefault(b, []).append(key)
    blobs = sorted(set(store.iter_blobs()) | set(blob_users))
    bad_blobs = []
    for digest in blobs:
        state = _blob_state(store, digest)
        if state != "ok":
            bad_blobs.append({"blob": digest, "state": state, "keys": blob_users.get(digest, [])})
    rebuilds = []
    if args.rebuild:
        bad = {k for b in bad_blobs for k in b["keys"]}
        for record in intact:
            if record["key"] not in bad:
                rebuilds.append(rebuild_record(store, record))
    differing = [r for r in rebuilds if r["status"] != "same"]
    ok = not corrupt_records and not bad_blobs and not differing
    lines = [
        (
            f"verified {len(blobs)} blobs and {len(intact) + len(corrupt_records)} entries "
            f"in {store.root}"
        )
    ]
    lines += [f"  CORRUPT record {r['key']}: {r['problem']}" for r in corrupt_records]
    lines += [
        f"  {b['state'].upper()} blob {b['blob']} (used by {', '.join(b['keys']) or 'no entry'})"
        for b in bad_blobs
    ]
    if args.rebuild:
        lines.append(f"rebuilt {len(rebuilds)} entries: {len(rebuilds) - len(differing)} identical")
        for r in differing:
            lines.append(f"  {r['status'].upper()} {r['key']} {r['detail']}".rstrip())
            lines += [
                f"    {d['output']}: first differing byte at {d['first_offset']} "
                f"(stored {d['stored_size']} bytes, rebuilt {d['rebuilt_size']})"
                for d in r["differences"]
            ]
    lines.append("OK" if ok else "FAILED")
    _emit(
        args,
        {
            "ok": ok,
            "blobs": len(blobs),
            "entries": len(intact) + len(corrupt_records),
            "corrupt_records": corrupt_records,
            "bad_blobs": bad_blobs,
            "rebuilds": rebuilds if args.rebuild else None,
        },
        lines,
    )
    return 0 if ok else 1


def cmd_gc(args) -> int:
    store = _store(args)
    max_size = parse_size(args.max_size) if args.max_size is not None else None
    max_age = args.max_age * 86400.0 if args.max_age is not None else None
    report = store.gc(max_size=max_size, max_age_s=max_age)
    lines = [
        (
            f"evicted {len(report['evicted_entries'])} entries, removed "
            f"{report['removed_blobs']} blobs ({report['freed_blob_bytes']} bytes) and "
            f"{report['removed_tmp_files']} stale temp files; "
            f"{report['total_bytes_after']} bytes in use"
        )
    ]
    _emit(args, report, lines)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "cache", help="inspect and maintain the artifact cache", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="cache_command", required=True, metavar="SUBCOMMAND")

    def add(name, func, help_text):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print JSON on stdout")
        p.add_argument(
            "--cache-dir",
            default=None,
            help=f"cache directory (default ${CACHE_DIR_ENV}, else ./cache)",
        )
        p.set_defaults(func=func)
        return p

    add("stats", cmd_stats, "entry count, size, hit/miss counters")
    add("ls", cmd_ls, "list entries")
    add("show", cmd_show, "print an entry's key manifest").add_argument(
        "key", help="a key or a unique prefix of one (>= 4 hex digits)"
    )
    p = add("why", cmd_why, "which key parts differ between two builds of a target")
    p.add_argument("target", help="an output path or stem (e.g. build/saxpy.wgsl), or a key")
    p.add_argument(
        "other",
        nargs="?",
        help="compare with this key or target instead of the target's previous build",
    )
    add(
        "verify", cmd_verify, "rehash every blob; --rebuild also recompiles and compares"
    ).add_argument(
        "--rebuild",
        action="store_true",
        help="recompile every entry from its stored inputs, report differences",
    )
    p = add("gc", cmd_gc, "evict least-recently-used entries past the limits")
    p.add_argument("--max-size", default=None, help="size limit, e.g. 500M or 2G")
    p.add_argument(
        "--max-age", type=float, default=None, help="evict entries not used for this many days"
    )


if __name__ == "__main__":  # pragma: no cover - `python -m vyre_build cache` is the entry
    sys.exit("run as: vyre-build cache ...")
