"""Garbage collection of a cache directory: age limit, LRU size limit, orphan and temp sweep.

Guarantees: runs under the store's "gc" lock (one collector at a time); evicts records
by last access (the record's explicitly stamped mtime), oldest first; deletes a blob only
when no remaining record references it, and spares unreferenced blobs younger than a
grace period (a concurrent build writes blobs before their record); removes temp files
older than an hour (left by writers killed mid-write). Works on any object with the
`Store` interface; imports no store (the store imports this).
"""

from __future__ import annotations

import contextlib
import os
import time

from vyre_build.cache.layout import (
    cache_files,
    listdir,
    mtime,
    remove_entry,
    size_of,
    temp_files,
)
from vyre_build.cache.record import record_blobs
from vyre_build.core.errors import CacheError

__all__ = ["ORPHAN_GRACE_S", "STALE_TMP_S", "clear", "collect", "usage"]

ORPHAN_GRACE_S = 600.0  # an unreferenced blob younger than this may be a build in flight
STALE_TMP_S = 3600.0  # temp files older than this are leftovers of killed writers
SCAN_TTL_S = 7 * 86400.0  # scan memo and history files unwritten this long are dropped


def _entries(store) -> list[tuple]:
    """(last access, key, record bytes, blob hashes) of every intact record, oldest first."""
    entries = []
    for key in store.iter_keys():
        record = store.get_record(key)
        if record is None:
            continue
        try:
            st = os.lstat(store.record_path(key))
        except OSError:
            continue
        entries.append((st.st_mtime, key, st.st_size, record_blobs(record)))
    entries.sort()
    return entries


def collect(
    store,
    max_size: int | None = None,
    max_age_s: float | None = None,
    now: float | None = None,
) -> dict:
    """Evict records older than max_age_s (by last access), then least-recently-used
    records until records + referenced blobs fit in max_size bytes; then delete blobs
    no record references (older than a grace period, so in-flight builds keep theirs)
    and stale temp files. Returns what was removed and the bytes left in use."""
    if max_size is not None and max_size < 0:
        raise CacheError(f"--max-size must be >= 0 bytes, got {max_size}")
    if max_age_s is not None and max_age_s < 0:
        raise CacheError(f"--max-age must be >= 0 days, got {max_age_s / 86400}")
    now = time.time() if now is None else now
    with store.lock("gc"):
        entries = _entries(store)
        refs: dict[str, int] = {}
        for _, _, _, blobs in entries:
            for b in blobs:
                refs[b] = refs.get(b, 0) + 1
        blob_size = {b: size_of(store.blob_path(b)) for b in store.iter_blobs()}
        total = sum(e[2] for e in entries) + sum(blob_size.get(b, 0) for b in refs)
        evicted, freed_by_eviction = [], set()
        for stamp, key, rec_size, blobs in entries:
            too_old = max_age_s is not None and now - stamp > max_age_s
            too_big = max_size is not None and total > max_size
            if not (too_old or too_big):
                continue
            if remove_entry(store.record_path(key)) is not None:
                continue  # cannot be removed (read-only): it stays in use
            evicted.append(key)
            total -= rec_size
            for b in blobs:
                refs[b] -= 1
                if refs[b] == 0:
                    total -= blob_size.get(b, 0)
                    freed_by_eviction.add(b)
        removed_blobs, freed = 0, 0
        for b, size in sorted(blob_size.items()):
            if refs.get(b, 0) > 0:
                continue
            path = store.blob_path(b)
            if now - mtime(path, now) < ORPHAN_GRACE_S and b not in freed_by_eviction:
                continue
            if os.path.lexists(path) and remove_entry(path) is None:
                removed_blobs += 1
                freed += size
        tmp_removed = 0
        for path, stamp in list(temp_files(store.root)):
            if now - stamp > STALE_TMP_S and remove_entry(path) is None:
                tmp_removed += 1
        old_removed = _remove_old_memos(store, now, max_age_s)
    return {
        "evicted_entries": evicted,
        "removed_blobs": removed_blobs,
        "freed_blob_bytes": freed,
        "removed_tmp_files": tmp_removed,
        "removed_scan_entries": old_removed,
        "total_bytes_after": max(total, 0),
    }


def _remove_old_memos(store, now: float, max_age_s: float | None) -> int:
    """Scan memo files are rebuilt on demand: drop those unwritten for SCAN_TTL_S (or the
    age limit); a project moved or deleted leaves its memo behind."""
    limit = SCAN_TTL_S if max_age_s is None else min(max_age_s, SCAN_TTL_S)
    count = 0
    base = os.path.join(store.root, "scan")
    for name in listdir(base):
        path = os.path.join(base, name)
        legacy = os.path.isdir(path) and not os.path.islink(path)  # per-file memo, schema 2
        if (legacy or now - mtime(path, now) > limit) and remove_entry(path) is None:
            count += 1
    return count


def usage(store) -> dict:
    """Entry and blob counts, bytes on disk (records + blobs), and temp files (all, and
    those old enough to be leftovers of killed writers)."""
    keys, blobs = store.iter_keys(), store.iter_blobs()
    rec_bytes = sum(size_of(store.record_path(k)) for k in keys)
    blob_bytes = sum(size_of(store.blob_path(b)) for b in blobs)
    now = time.time()
    temps = [stamp for _, stamp in temp_files(store.root)]
    return {
        "entries": len(keys),
        "blobs": len(blobs),
        "record_bytes": rec_bytes,
        "blob_bytes": blob_bytes,
        "total_bytes": rec_bytes + blob_bytes,
        "temp_files": len(temps),
        "stale_temp_files": sum(1 for t in temps if now - t > STALE_TMP_S),
    }


def clear(store) -> dict:
    """Remove every record, blob, history and scan memo, and stale temp files, each judged
    by its name (`layout.cache_files`): whatever else is in the directory stays, and so do
    statistics, settings, locks and the marker. Returns the true counts of what went, and
    the paths left because no vyre cache holds such a file."""
    now = time.time()
    removed = dict.fromkeys(("record", "blob", "history", "scan", "temp"), 0)
    freed, failed, kept = 0, [], []
    with store.lock("gc"):
        for kind, path in list(cache_files(store.root)):
            if kind == "other":
                kept.append(path)
            elif kind == "unreadable":
                failed.append(f"{path}: cannot be read")
            elif kind in removed and (kind != "temp" or now - mtime(path, now) > STALE_TMP_S):
                size = size_of(path) if kind in ("record", "blob") else 0
                problem = remove_entry(path)
                if problem is not None:
                    failed.append(f"{path}: {problem}")
                    continue
                removed[kind] += 1
                freed += size
        for top in ("ac", "cas", "history", "scan"):  # the directories left empty
            base = os.path.join(store.root, top)
            for sub in [*(os.path.join(base, d) for d in listdir(base)), base]:
                with contextlib.suppress(OSError):
                    os.rmdir(sub)
    report = {
        "removed_entries": removed["record"],
        "removed_blobs": removed["blob"],
        "freed_bytes": freed,
        "removed_other_files": removed["history"] + removed["scan"] + removed["temp"],
        "kept": kept,
    }
    if failed:
        raise CacheError(
            f"cannot clear the cache {store.root} completely: {'; '.join(failed)}; removed "
            f"{report['removed_entries']} entries and {report['removed_blobs']} blobs. "
            "Make what is named removable (its permissions, a read-only mount), then clear "
            "again"
        )
    return report
