"""Cache statistics, like ccache's: counters per tier for the last build and overall.

stats.json holds {"overall": counters + "builds", "last_build": counters + label and time,
"recent_builds": the last 20, "since": when the counters were last zeroed, "size_bytes":
the store's size as last measured plus what builds stored since (the automatic gc runs
when it passes the limit), "last_gc": when a full collection last ran}. It is updated
under the store's "stats" lock, once per build; an unreadable file starts afresh.
"""

from __future__ import annotations

import os
import time

from vyre_build.core.files import canonical_json

__all__ = [
    "COUNTERS",
    "REMOTE_COUNTERS",
    "empty_stats",
    "hit_rates",
    "note_gc",
    "read_stats",
    "record_build",
    "zero_stats",
]

STATS_SCHEMA = "vyre-cache-stats/2"
RECENT_BUILDS = 20
# The remote tier's counters (kept by cache.remote).
REMOTE_COUNTERS = (
    "remote_hits",
    "remote_misses",
    "remote_errors",
    "remote_corrupt",
    "uploads",
    "upload_errors",
)
# Every per-build counter; `hits` counts both tiers, `misses` the entries compiled.
COUNTERS = (
    "hits",
    "misses",
    "local_hits",
    "local_misses",
    *REMOTE_COUNTERS,
    "corrupt",
    "stored",
    "stored_bytes",
    "store_errors",
)


def empty_stats(now: float | None = None) -> dict:
    return {
        "schema": STATS_SCHEMA,
        "overall": dict.fromkeys((*COUNTERS, "builds"), 0),
        "last_build": None,
        "recent_builds": [],
        "since": round(time.time() if now is None else now, 3),
        "size_bytes": None,
        "last_gc": None,
    }


def _path(store) -> str:
    return os.path.join(store.root, "stats.json")


def read_stats(store) -> dict:
    """stats.json, with every counter present (0 where an older file lacks it)."""
    data = store.read_json(_path(store))
    stats = empty_stats()
    if not isinstance(data, dict) or not isinstance(data.get("overall"), dict):
        return stats
    for name in stats["overall"]:
        value = data["overall"].get(name, 0)
        stats["overall"][name] = value if isinstance(value, int) else 0
    for name in ("since", "size_bytes", "last_gc"):
        if isinstance(data.get(name), (int, float)) and not isinstance(data.get(name), bool):
            stats[name] = data[name]
    builds = [b for b in data.get("recent_builds") or [] if isinstance(b, dict)]
    stats["recent_builds"] = [_complete(b) for b in builds[-RECENT_BUILDS:]]
    if isinstance(data.get("last_build"), dict):
        stats["last_build"] = _complete(data["last_build"])
    return stats


def _complete(build: dict) -> dict:
    out = {
        name: build.get(name, 0) if isinstance(build.get(name, 0), int) else 0 for name in COUNTERS
    }
    out["label"] = str(build.get("label", ""))
    out["finished"] = (
        build.get("finished") if isinstance(build.get("finished"), (int, float)) else 0
    )
    return out


def _write(store, stats: dict) -> bool:
    return store.write_file(_path(store), canonical_json(stats) + b"\n")


def record_build(store, counts: dict, label: str = "", *, fresh: bool = False) -> dict:
    """Add one build's counters into stats.json; returns the stats as written. `fresh`:
    the store was empty before this build, so its size is what the build stored."""
    now = time.time()
    build = {name: int(counts.get(name, 0)) for name in COUNTERS}
    build.update(label=label, finished=round(now, 3))
    with store.lock("stats"):
        stats = read_stats(store)
        for name in COUNTERS:
            stats["overall"][name] += build[name]
        stats["overall"]["builds"] += 1
        stats["last_build"] = build
        stats["recent_builds"] = stats["recent_builds"][-(RECENT_BUILDS - 1) :] + [build]
        if stats["size_bytes"] is not None:
            stats["size_bytes"] += build["stored_bytes"]
        elif fresh:
            stats["size_bytes"], stats["last_gc"] = build["stored_bytes"], round(now, 3)
        _write(store, stats)
    return stats


def note_gc(store, total_bytes: int) -> None:
    """Remember the size a full collection measured, and when it ran."""
    with store.lock("stats"):
        stats = read_stats(store)
        stats["size_bytes"] = int(total_bytes)
        stats["last_gc"] = round(time.time(), 3)
        _write(store, stats)


def zero_stats(store) -> dict:
    """Reset every counter (like `ccache -z`); the tracked size and gc time stay."""
    with store.lock("stats"):
        old = read_stats(store)
        stats = empty_stats()
        stats["size_bytes"], stats["last_gc"] = old["size_bytes"], old["last_gc"]
        _write(store, stats)
    return stats


def hit_rates(counts: dict) -> dict:
    """Hit rates (0..1, or None with no lookups): overall, local and remote tiers."""

    def rate(hits: int, misses: int):
        return None if hits + misses == 0 else hits / (hits + misses)

    return {
        "overall": rate(counts.get("hits", 0), counts.get("misses", 0)),
        "local": rate(counts.get("local_hits", 0), counts.get("local_misses", 0)),
        "remote": rate(counts.get("remote_hits", 0), counts.get("remote_misses", 0)),
    }
