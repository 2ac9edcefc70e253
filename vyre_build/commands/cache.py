"""`vyre-build cache`: inspect and maintain the artifact cache.

    stats                     hits, misses and hit rates per tier (last build, overall),
                              size and limit, entries, corrupt entries, temp files
    zero                      reset the statistics
    clear                     remove every entry and blob (statistics stay; files that
                              are no cache entries are left as they are)
    ls                        every entry: key, source file, stems, size, last access
    show KEY                  the key manifest (each part with its own hash) and outputs
    why TARGET [OTHER]        what changed between the last two builds of an output:
                              a unified diff of its sources, then the other key parts
    verify [--repair] [--rebuild]
                              rehash every blob and record and report what is corrupt or
                              missing; --repair removes it and rebuilds the entries that
                              used it from their recorded inputs; --rebuild recompiles
                              every entry and reports differing bytes (and repairs)
    gc [--max-size N] [--max-age D]   evict least-recently-used entries past the limits
                              (default: the configured ones, 5G), remove stale temp files
    config                    every setting, its value and where it came from
ccache's options do the same: -s (stats), -z (zero), -C (clear), -p (config), and
-M SIZE sets the size limit in the project's vyre.toml (0: unlimited).
Every subcommand takes --json (machine-readable output on stdout) and --cache-dir; the
cache is found as SCons finds it (vyre_build.cache.config), from anywhere inside the project.
A directory that is not a vyre cache (vyre_build.cache.layout.not_a_cache) is refused,
with nothing created or removed in it; an empty one reads as an empty cache.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import vyre_build.cache.stats as cache_stats
from vyre_build.cache.gc import STALE_TMP_S
from vyre_build.cache.key import manifest_parts
from vyre_build.cache.layout import EMPTY, BadEntry, not_a_cache
from vyre_build.cache.store import Store
from vyre_build.cache.why import explain
from vyre_build.commands.helptext import add_command
from vyre_build.cache.config import CACHE_DIR_ENV, format_size, load_config, parse_size
from vyre_build.core.errors import CacheError
from vyre_build.core.targets import WGSL


def _open(args, *, change: bool = False) -> tuple[Store, object]:
    """The store of --cache-dir (else the configured one), refused with a CacheError unless
    it is a vyre cache (layout.not_a_cache) or, to be read only, an empty directory.
    `change`: the command writes or removes files, so the store must be a cache and
    writable (a cache made before the marker gets the marker now)."""
    cfg = load_config()
    root = os.path.abspath(args.cache_dir) if args.cache_dir else cfg.cache_dir
    where = "--cache-dir" if args.cache_dir else cfg.sources["cache_dir"]
    elsewhere = (
        "pass --cache-dir the cache builds use (`vyre-build cache config` shows it) or set "
        + CACHE_DIR_ENV
    )
    if not os.path.lexists(root):
        raise CacheError(
            f"no cache at {root} (from {where}); build first, or pass --cache-dir / set "
            + CACHE_DIR_ENV
        )
    if not os.path.isdir(root):
        raise CacheError(f"{root} (from {where}) is not a directory, so not a cache; {elsewhere}")
    try:
        problem = not_a_cache(root)
    except OSError as exc:
        raise CacheError(
            f"cannot read the cache directory {root} (from {where}): {exc.strerror or exc}; "
            f"make it readable (chmod u+rx), or {elsewhere}"
        ) from None
    if problem == EMPTY and change:  # read, it is an empty cache: a build makes it one
        raise CacheError(
            f"no cache at {root} (from {where}) yet: the directory is empty, nothing was "
            f"changed; build first, or {elsewhere}"
        )
    if problem not in (None, EMPTY):
        raise CacheError(
            f"{root} (from {where}) is not a vyre cache: {problem}; nothing was changed. "
            f"{elsewhere[0].upper()}{elsewhere[1:]}"
        )
    store = Store(root, project=cfg.project_root)
    if change:
        store.require_cache()
    return store, cfg


def _store(args, *, change: bool = False) -> Store:
    return _open(args, change=change)[0]


def _emit(args, data, lines) -> None:
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        for line in lines:
            print(line)


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _ratio(n: int, total: int) -> str:
    return f"{n:>6} / {total:<6} ({100.0 * n / total:6.2f} %)" if total else f"{n:>6}"


def _count_lines(c: dict) -> list[str]:
    """One build's (or the overall) counters as ccache shows them."""
    lookups = c["hits"] + c["misses"]
    local = c["local_hits"] + c["local_misses"]
    remote = c["remote_hits"] + c["remote_misses"]
    lines = [
        f"  Hits:          {_ratio(c['hits'], lookups)}",
        f"  Misses:        {_ratio(c['misses'], lookups)}",
        "  Local storage:",
        f"    Hits:        {_ratio(c['local_hits'], local)}",
        f"    Misses:      {_ratio(c['local_misses'], local)}",
        f"    Corrupt:     {c['corrupt']:>6}",
        f"    Stored:      {c['stored']:>6} ({format_size(c['stored_bytes'])})",
    ]
    if c["store_errors"]:
        lines.append(f"    Write errors:{c['store_errors']:>6}")
    if remote or c["remote_errors"] or c["uploads"] or c["upload_errors"]:
        lines += [
            "  Remote storage:",
            f"    Hits:        {_ratio(c['remote_hits'], remote)}",
            f"    Misses:      {_ratio(c['remote_misses'], remote)}",
            f"    Corrupt:     {c['remote_corrupt']:>6}",
            f"    Errors:      {c['remote_errors']:>6}",
            f"    Uploads:     {c['uploads']:>6} ({c['upload_errors']} refused)",
        ]
    return lines


def _remote_info(cfg) -> dict:
    """The configured remote as a build would use it: its URL without credentials (parsed
    as the connection parses it), its mode and why, and where its credentials come from."""
    from vyre_build.cache.remote import RemoteCache  # reads credentials, connects nowhere

    remote = RemoteCache(
        cfg.remote_url,
        mode=cfg.remote_mode,
        timeout=cfg.remote_timeout_s,
        max_blob=cfg.remote_max_blob,
    )
    if cfg.remote_mode:
        mode = f"{cfg.remote_mode}, set by {cfg.sources['remote_mode']}"
    elif remote.credentials_from is not None:
        mode = f"read-write, with credentials from {remote.credentials_from}"
    else:
        mode = "read-only, no credentials given"
    return {
        "url": remote.url,
        "mode": mode,
        "source": cfg.sources["remote_url"],
        "credentials": remote.credentials_from,
        "timeout_s": remote.timeout,
        "max_blob_size": remote.max_blob,
    }


def cmd_stats(args) -> int:
    store, cfg = _open(args)
    stats = cache_stats.read_stats(store)
    usage = store.usage()
    last, overall = stats["last_build"], stats["overall"]
    source = "--cache-dir" if args.cache_dir else cfg.sources["cache_dir"]
    remote = _remote_info(cfg) if cfg.remote_url else None
    data = {
        "cache_dir": store.root,
        "cache_dir_source": source,
        **usage,
        "max_size": cfg.max_size,
        "max_age_s": cfg.max_age_s,
        "overall": overall,
        "overall_rates": cache_stats.hit_rates(overall),
        "last_build": last,
        "last_build_rates": cache_stats.hit_rates(last) if last else None,
        "since": stats["since"],
        "recent_builds": stats["recent_builds"],
        "remote": remote,
    }
    lines = [f"Cache directory:   {store.root} (from {source})"]
    if last:
        lines.append(f"Last build ({last['label'] or 'scons'}, {_stamp(last['finished'])}):")
        lines += _count_lines(last)
    else:
        lines.append("Last build:        none recorded")
    lines.append(f"Overall ({overall['builds']} builds since {_stamp(stats['since'])}):")
    lines += _count_lines(overall)
    limit = cfg.max_size
    share = f" ({100.0 * usage['total_bytes'] / limit:.2f} %)" if limit else ""
    lines += [
        "Local storage:",
        f"  Cache size:      {format_size(usage['total_bytes'])} / "
        f"{format_size(limit)}{share} (limit from {cfg.sources['max_size']})",
        f"  Entries:         {usage['entries']} ({usage['blobs']} blobs)",
        f"  Temp files:      {usage['temp_files']} ({usage['stale_temp_files']} older than "
        f"{STALE_TMP_S / 3600:g} h, removed by `vyre-build cache gc`)",
    ]
    if remote:
        lines.append(
            f"Remote storage:    {remote['url']} ({remote['mode']}; from {remote['source']})"
        )
    _emit(args, data, lines)
    return 0


def cmd_zero(args) -> int:
    store = _store(args, change=True)
    cache_stats.zero_stats(store)
    _emit(args, {"zeroed": True}, ["Statistics zeroed"])
    return 0


def cmd_clear(args) -> int:
    store = _store(args, change=True)
    report = store.clear()
    lines = [
        f"Removed {report['removed_entries']} entries and {report['removed_blobs']} blobs "
        f"({format_size(report['freed_bytes'])}) from {store.root}"
    ]
    if report["kept"]:
        n = len(report["kept"])
        shown = ", ".join(report["kept"][:5]) + (", ..." if n > 5 else "")
        what = f"{n} files that are no cache entries, as they were"
        if n == 1:
            what = "1 file that is no cache entry, as it was"
        lines.append(f"Left {what}: {shown}")
    _emit(args, report, lines)
    return 0


def _entries(store: Store) -> list[dict]:
    out = []
    for key in store.iter_keys():
        try:
            record = store.read_record(key)
            st = os.lstat(store.record_path(key))
        except (BadEntry, OSError):
            continue
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
        f"{e['key'][:16]}  {str(e['source'] or '?'):24} {e['bytes']:>9}  "
        f"{_stamp(e['last_access'])}  {' '.join(map(str, e['stems']))}"
        for e in entries
    ]
    _emit(args, {"entries": entries}, lines or ["(empty)"])
    return 0


def cmd_show(args) -> int:
    store = _store(args)
    key = store.resolve_key(args.key)
    record = store.get_record(key)
    if record is None:
        raise CacheError(
            f"no entry {key} in {store.root} (evicted or never built); see `vyre-build cache ls`"
        )
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
    data = {"key": key, "parts": parts, "outputs": record["outputs"], "info": record["info"]}
    _emit(args, data, lines)
    return 0


def cmd_why(args) -> int:
    store = _store(args)
    result = explain(store, args.target, args.other)
    lines = [f"{result['output'] or args.target}: {result['old'][:16]} -> {result['new'][:16]}"]
    if not result["differences"]:
        lines.append("  same key parts (identical inputs)")
    for d in result["differences"]:
        if "diff" in d:
            lines.append(f"{d['part']} {d['change']}:")
            if d["diff"] is None:
                lines.append(f"  {d['old'] or '-'} -> {d['new'] or '-'} (text not in the cache)")
            else:
                lines += d["diff"].rstrip("\n").split("\n")
        elif d["change"] == "changed" and "new_value" in d:
            lines.append(
                f"{d['part']} changed: was {json.dumps(d['old_value'], sort_keys=True)}, "
                f"now {json.dumps(d['new_value'], sort_keys=True)}"
            )
        else:
            lines.append(f"{d['part']} {d['change']}")
    _emit(args, result, lines)
    return 0


def cmd_verify(args) -> int:
    from vyre_build.commands.cache_verify import verify

    repair = args.repair or args.rebuild
    ok, data, lines = verify(
        _store(args, change=repair),
        repair_it=repair,
        rebuild=args.rebuild,
        cache_dir=args.cache_dir,
    )
    _emit(args, data, lines)
    return 0 if ok else 1


def cmd_gc(args) -> int:
    store, cfg = _open(args, change=True)
    max_size = (
        parse_size(args.max_size, "--max-size") if args.max_size is not None else cfg.max_size
    )
    if args.max_age is not None and not 0 <= args.max_age < float("inf"):
        raise CacheError(f"--max-age must be a number of days >= 0, got {args.max_age}")
    max_age = args.max_age * 86400.0 if args.max_age is not None else cfg.max_age_s
    report = store.gc(max_size=max_size, max_age_s=max_age)
    cache_stats.note_gc(store, report["total_bytes_after"])
    lines = [
        f"evicted {len(report['evicted_entries'])} entries, removed "
        f"{report['removed_blobs']} blobs ({report['freed_blob_bytes']} bytes) and "
        f"{report['removed_tmp_files']} stale temp files; "
        f"{report['total_bytes_after']} bytes in use (limit {format_size(max_size)})"
    ]
    _emit(args, report, lines)
    return 0


def cmd_config(args) -> int:
    from vyre_build.commands.cache_config import config_lines, describe

    cfg = load_config()
    if args.cache_dir:
        cache_dir, source = os.path.abspath(args.cache_dir), "--cache-dir"
    else:
        cache_dir, source = cfg.cache_dir, cfg.sources["cache_dir"]
    rows = describe(cfg, cache_dir, source)
    _emit(args, {"settings": rows}, config_lines(rows))
    return 0


def cmd_max_size(args) -> int:
    from vyre_build.commands.cache_config import set_max_size

    lines, data = set_max_size(args.set_max_size)
    _emit(args, data, lines)
    return 0


# ccache's options -> the subcommand each one is
ALIASES = {"stats": cmd_stats, "zero": cmd_zero, "clear": cmd_clear, "config": cmd_config}


def cmd_alias(args) -> int:
    """`cache -s/-z/-C/-p/-M SIZE`, ccache's spelling of a subcommand."""
    if args.set_max_size is not None:
        return cmd_max_size(args)
    if args.alias is None:
        raise CacheError(
            "vyre-build cache: give a subcommand (stats, zero, clear, ls, show, why, verify, "
            "gc, config) or one of ccache's options -s, -z, -C, -p, -M SIZE; see --help"
        )
    return ALIASES[args.alias](args)


def _only_subcommand(func):
    """`func` refusing a ccache option given with a subcommand (`cache -s ls`)."""

    def run(args) -> int:
        if args.alias is not None or args.set_max_size is not None:
            raise CacheError(
                f"vyre-build cache: give either a ccache option or the subcommand "
                f"{args.cache_command!r}, not both"
            )
        return func(args)

    return run


def register(subparsers) -> None:
    parser = add_command(subparsers, "cache")
    sub = parser.add_subparsers(dest="cache_command", metavar="SUBCOMMAND")
    ccache = parser.add_mutually_exclusive_group()
    for short, long, name in (
        ("-s", "--show-stats", "stats"),
        ("-z", "--zero-stats", "zero"),
        ("-C", "--clear", "clear"),
        ("-p", "--show-config", "config"),
    ):
        ccache.add_argument(
            short,
            long,
            dest="alias",
            action="store_const",
            const=name,
            help=f"as ccache {short}: the same as `cache {name}`",
        )
    ccache.add_argument(
        "-M",
        "--max-size",
        dest="set_max_size",
        metavar="SIZE",
        help="set the size limit (e.g. 10G; 0: unlimited) in the project's vyre.toml",
    )
    parser.set_defaults(func=cmd_alias, alias=None, set_max_size=None)
    where_help = (
        f"cache directory (default ${CACHE_DIR_ENV}, the config files, "
        "else cache/ at the project root)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON on stdout")
    parser.add_argument("--cache-dir", default=None, help=where_help)

    def add(name, func, help_text):
        p = sub.add_parser(name, help=help_text, description=help_text)
        # SUPPRESS: `cache --json stats` keeps what the cache parser read.
        p.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON on stdout"
        )
        p.add_argument("--cache-dir", default=argparse.SUPPRESS, help=where_help)
        p.set_defaults(func=_only_subcommand(func))
        return p

    add("stats", cmd_stats, "hits, misses and hit rates per tier, size and limit, entries")
    add("zero", cmd_zero, "reset the statistics")
    add("clear", cmd_clear, "remove every entry and blob (statistics stay)")
    add("ls", cmd_ls, "list entries")
    add("show", cmd_show, "print an entry's key manifest").add_argument(
        "key", help="a key or a unique prefix of one (>= 4 hex digits)"
    )
    p = add("why", cmd_why, "what changed between the last two builds of an output")
    p.add_argument(
        "target", help=f"an output path or stem (e.g. build/saxpy{WGSL.suffix}), or a key"
    )
    p.add_argument(
        "other",
        nargs="?",
        help="compare with this key or output instead of the target's previous build",
    )
    p = add(
        "verify",
        cmd_verify,
        "rehash every blob and record; --repair rebuilds what is damaged, --rebuild "
        "recompiles every entry and compares",
    )
    p.add_argument(
        "--repair",
        action="store_true",
        help="remove corrupt records and blobs, rebuild the entries that used them from "
        "their stored inputs (or remove them where that cannot be done)",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="recompile every entry from its stored inputs, report differences (repairs "
        "as --repair does)",
    )
    p = add("gc", cmd_gc, "evict least-recently-used entries past the limits")
    p.add_argument("--max-size", default=None, help="size limit, e.g. 500M, 2G or unlimited")
    p.add_argument(
        "--max-age", type=float, default=None, help="evict entries not used for this many days"
    )
    add("config", cmd_config, "every setting, its value and where it came from")


if __name__ == "__main__":  # pragma: no cover - `python -m vyre_build cache` is the entry
    sys.exit("run as: vyre-build cache ...")
