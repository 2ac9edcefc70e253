"""`vyre-build cache stats`, `ls`, `show` and `why`: the subcommands that report on the cache.

stats: hits, misses and hit rates per tier as ccache shows them (the last build and
overall), the size against its limit, entries, temp files and the configured remote; ls:
every entry; show: an entry's key manifest, part by part, and its outputs; why: what
changed between the last two builds of an output (vyre_build.cache.why). Guarantees: each
opens the store without claiming it (`cache_open._open`), so it works on a cache this
process cannot write and reads an empty directory as an empty cache; `ls` reads records
without removing any (one it cannot read is left out); `stats` reads the remote's
settings and where its credentials come from, shows no credentials and connects nowhere.
"""

from __future__ import annotations

import json
import os
import time

import vyre_build.cache.stats as cache_stats
from vyre_build.cache.gc import STALE_TMP_S
from vyre_build.cache.key import manifest_parts
from vyre_build.cache.layout import BadEntry
from vyre_build.cache.store import Store
from vyre_build.cache.why import explain
from vyre_build.cache.config import format_size
from vyre_build.commands.cache_open import _emit, _open, _store
from vyre_build.core.errors import CacheError

__all__ = ["cmd_ls", "cmd_show", "cmd_stats", "cmd_why"]


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
