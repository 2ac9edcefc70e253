"""Garbage collection of a cache directory: age limit, LRU size limit, orphan sweep.

Guarantees: runs under the store's "gc" lock (one collector at a time); evicts records
by last access (the record's explicitly stamped mtime), oldest first; deletes a blob only
when no remaining record references it, and spares unreferenced blobs younger than a
grace period (a concurrent build writes blobs before their record); never touches a
record or blob that a concurrent build could still be writing under another name.
"""

from __future__ import annotations

import contextlib
import os
import time

from vyre_build.cache.store import Store, _listdir, _mtime, _size, record_blobs
from vyre_build.errors import CacheError

__all__ = ["collect"]

ORPHAN_GRACE_S = 600.0  # an unreferenced blob younger than this may be a build in flight
STALE_TMP_S = 3600.0  # temp files older than this are leftovers of killed writers
SCAN_TTL_S = 7 * 86400.0  # scan memo entries unused (unwritten) this long are dropped


def collect(
    store: Store,
    max_size: int | None = None,
    max_age_s: float | None = None,
    now: float | None = None,
) -> dict:
    """Evict records older than max_age_s (by last access), then least-recently-used
    records until records + referenced blobs fit in max_size bytes; then delete blobs
    no record references (older than a grace period, so in-flight builds keep theirs)
    and stale temp files. Returns what was removed."""
    if max_size is not None and max_size < 0:
        raise CacheError(f"--max-size must be >= 0 bytes, got {max_size}")
    if max_age_s is not None and max_age_s < 0:
        raise CacheError(f"--max-age must be >= 0 days, got {max_age_s / 86400}")
    now = time.time() if now is None else now
    with store.lock("gc"):
        entries = []  # (last access, key, record bytes, blob hashes)
        for key in store.iter_keys():
            record = store.get_record(key)
            if record is None:
                continue
            try:
                st = os.stat(store.record_path(key))
            except FileNotFoundError:
                continue
            entries.append((st.st_mtime, key, st.st_size, record_blobs(record)))
        entries.sort()
        refs: dict[str, int] = {}
        for _, _, _, blobs in entries:
            for b in blobs:
                refs[b] = refs.get(b, 0) + 1
        blob_size = {b: _size(store.blob_path(b)) for b in store.iter_blobs()}
        total = sum(e[2] for e in entries) + sum(blob_size.get(b, 0) for b in refs)
        evicted = []
        for stamp, key, rec_size, blobs in entries:
            too_old = max_age_s is not None and now - stamp > max_age_s
            too_big = max_size is not None and total > max_size
            if not (too_old or too_big):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(store.record_path(key))
            evicted.append(key)
            total -= rec_size
            for b in blobs:
                refs[b] -= 1
                if refs[b] == 0:
                    total -= blob_size.get(b, 0)
        removed_blobs, freed = [], 0
        freed_by_eviction = _evicted_refs(entries, evicted)
        for b, size in sorted(blob_size.items()):
            if refs.get(b, 0) > 0:
                continue
            path = store.blob_path(b)
            if now - _mtime(path, now) < ORPHAN_GRACE_S and b not in freed_by_eviction:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed_blobs.append(b)
                freed += size
        tmp_removed = _remove_stale_tmp(store, now)
        scan_removed = _remove_old_scans(store, now, max_age_s)
    return {
        "evicted_entries": evicted,
        "removed_blobs": len(removed_blobs),
        "freed_blob_bytes": freed,
        "removed_tmp_files": tmp_removed,
        "removed_scan_entries": scan_removed,
        "total_bytes_after": max(total, 0),
    }


def _remove_old_scans(store, now: float, max_age_s: float | None) -> int:
    """Scan memo entries are rebuilt on demand: drop those older than the age limit
    (or SCAN_TTL_S); an edited file leaves its old entry behind."""
    limit = SCAN_TTL_S if max_age_s is None else min(max_age_s, SCAN_TTL_S)
    count = 0
    base = os.path.join(store.root, "scan")
    for sub in _listdir(base):
        for name in _listdir(os.path.join(base, sub)):
            path = os.path.join(base, sub, name)
            if now - _mtime(path, now) > limit:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    count += 1
    return count


def _remove_stale_tmp(store, now: float) -> int:
    count = 0
    for top in ("cas", "ac", "history", "scan"):
        base = os.path.join(store.root, top)
        dirs = [base] + [os.path.join(base, d) for d in _listdir(base)]
        for d in dirs:
            for name in _listdir(d):
                path = os.path.join(d, name)
                if name.startswith(".tmp.") and now - _mtime(path, now) > STALE_TMP_S:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                        count += 1
    return count


def _evicted_refs(entries, evicted) -> set[str]:
    gone = set(evicted)
    return {b for _, key, _, blobs in entries if key in gone for b in blobs}
