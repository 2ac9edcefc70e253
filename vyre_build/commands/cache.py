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

This module: the parser, ccache's options and the subcommands that change the cache;
the store a subcommand works on: cache_open.py; stats, ls, show and why: cache_inspect.py;
verify: cache_verify.py; config and -M: cache_config.py.
"""

from __future__ import annotations

import argparse
import os
import sys

import vyre_build.cache.stats as cache_stats
from vyre_build.commands.cache_inspect import cmd_ls, cmd_show, cmd_stats, cmd_why
from vyre_build.commands.cache_open import _emit, _open, _store
from vyre_build.commands.helptext import add_command
from vyre_build.cache.config import CACHE_DIR_ENV, format_size, load_config, parse_size
from vyre_build.core.errors import CacheError
from vyre_build.core.targets import WGSL


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
