"""The on-disk artifact store: blobs by blake3 of content, action records by key.

Layout under the cache root (default `cache/` at the project root):
    cas/<2 hex>/<blake3>      blobs: artifact bytes and the input sources they came from
    ac/<2 hex>/<key>.json     action records: manifest, outputs (name -> blob), checksum
    history/<h>.json          per output stem: the last keys it was built from (for `why`)
    stats.json                hit/miss counters, overall and per build
    locks/*.lock              fcntl locks for read-modify-write files (stats, history, gc)

Guarantees:
- Every write is a temp file in the destination directory, then `os.replace`, so a reader
  (or a build killed at any point) sees the old file or the whole new one, never a part.
- Every read re-hashes: a blob whose bytes do not hash to its name, or a record whose
  checksum or key does not match, is reported on stderr (naming blob and key), removed
  and treated as a miss; it is never served.
- Concurrent processes and threads may share one store: blobs are content-addressed (two
  writers write the same bytes), records are replaced whole, and the read-modify-write
  files are guarded by fcntl locks.
- A record's file mtime is its last-access stamp (set explicitly on every hit, so it does
  not depend on atime); `gc` evicts least-recently-used records first.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sys
import threading
import time

from vyre_build.cache.key import FILE_PART_KINDS, content_hash, key_from_manifest
from vyre_build.errors import CacheError
from vyre_build.files import atomic_write, canonical_json, temp_path

__all__ = ["RECORD_SCHEMA", "Store", "is_hex_hash"]

RECORD_SCHEMA = "vyre-action-record/1"
HISTORY_DEPTH = 8  # keys remembered per output stem
RECENT_BUILDS = 20
_HEX = frozenset("0123456789abcdef")


def is_hex_hash(text: str) -> bool:
    return len(text) == 64 and set(text) <= _HEX


def warn(message: str) -> None:
    print(f"vyre cache: warning: {message}", file=sys.stderr, flush=True)


class Store:
    """One cache directory. Cheap to construct; creates its directories on first write."""

    def __init__(self, root: str | os.PathLike):
        self.root = os.path.abspath(os.fspath(root))
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise CacheError(
                f"cache directory {self.root} exists and is not a directory; "
                "point VYRE_CACHE_DIR / $VYRECACHEDIR at a directory"
            )
        self._made: set[str] = set()
        self._counts_lock = threading.Lock()
        self.counts = {"hits": 0, "misses": 0, "corrupt": 0, "stored": 0}

    # --- paths and atomic writes ------------------------------------------------------
    def blob_path(self, digest: str) -> str:
        return os.path.join(self.root, "cas", digest[:2], digest)

    def record_path(self, key: str) -> str:
        return os.path.join(self.root, "ac", key[:2], key + ".json")

    def _history_path(self, stem: str) -> str:
        return os.path.join(self.root, "history", content_hash(stem.encode())[:32] + ".json")

    def _ensure_dir(self, path: str) -> None:
        if path not in self._made:
            try:
                if not os.path.isdir(path):  # a stat is ~100x cheaper than a failing mkdir
                    os.makedirs(path, exist_ok=True)
            except OSError as exc:
                raise CacheError(f"cannot create cache directory {path}: {exc.strerror}") from None
            self._made.add(path)

    def _write_atomic(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write `data` to `path` atomically (files.atomic_write), its directory made first."""
        self._ensure_dir(os.path.dirname(path))
        try:
            atomic_write(path, data, mode=mode)
        except OSError as exc:
            raise CacheError(f"cannot write {path}: {exc.strerror or exc}") from None

    @contextlib.contextmanager
    def lock(self, name: str):
        """Exclusive fcntl lock on locks/<name>.lock (between processes and threads)."""
        directory = os.path.join(self.root, "locks")
        self._ensure_dir(directory)
        fd = os.open(os.path.join(directory, name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def _count(self, name: str, n: int = 1) -> None:
        with self._counts_lock:
            self.counts[name] += n

    # --- blobs ------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        """Store `data` under its blake3; returns the hash. Existing blobs are not rewritten."""
        digest = content_hash(data)
        path = self.blob_path(digest)
        try:
            if os.stat(path).st_size == len(data):
                return digest
        except FileNotFoundError:
            pass
        self._write_atomic(path, data, mode=0o444)
        return digest

    def get_blob(self, digest: str, key: str | None = None) -> bytes | None:
        """The blob's bytes if present and intact; None if absent or corrupt (then removed)."""
        path = self.blob_path(digest)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        actual = content_hash(data)
        if actual != digest:
            where = f" (of key {key})" if key else ""
            warn(
                f"blob {digest}{where} is corrupt: its bytes hash to {actual}; "
                "removed, the entry will be rebuilt"
            )
            self._count("corrupt")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return None
        return data

    # --- action records ---------------------------------------------------------------
    @staticmethod
    def _checksum(record: dict) -> str:
        body = {k: v for k, v in record.items() if k != "checksum"}
        return content_hash(canonical_json(body))

    def put_record(
        self, key: str, manifest: dict, outputs: dict[str, bytes], info: dict | None = None
    ) -> dict:
        """Store every output as a blob, then the record (last, so a record is never
        visible before its blobs). Returns the record."""
        if key_from_manifest(manifest) != key:
            raise RuntimeError(f"key {key} does not match its manifest")
        out = {
            name: {"hash": self.put_blob(data), "size": len(data)}
            for name, data in sorted(outputs.items())
        }
        record = {
            "schema": RECORD_SCHEMA,
            "key": key,
            "manifest": manifest,
            "outputs": out,
            "info": info or {},
        }
        record["checksum"] = self._checksum(record)
        self._write_atomic(self.record_path(key), canonical_json(record) + b"\n")
        self._count("stored")
        return record

    def _drop_record(self, key: str, why: str) -> None:
        warn(f"action record {key} is corrupt ({why}); removed, the entry will be rebuilt")
        self._count("corrupt")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.record_path(key))

    def check_record(self, key: str, record) -> str | None:
        """None if `record` is an intact record of `key`, else what is wrong with it."""
        if not isinstance(record, dict) or record.get("schema") != RECORD_SCHEMA:
            return "not a " + RECORD_SCHEMA
        if record.get("checksum") != self._checksum(record):
            return "checksum mismatch"
        if record.get("key") != key:
            return f"it is filed under {key} but names key {record.get('key')}"
        try:
            if key_from_manifest(record["manifest"]) != key:
                return "its manifest does not hash to its key"
        except (TypeError, ValueError):
            return "its manifest is not canonical JSON"
        return None

    def get_record(self, key: str, *, report: bool = True) -> dict | None:
        """The intact record of `key`, or None (absent; or corrupt: then reported, removed)."""
        try:
            with open(self.record_path(key), "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        try:
            record = json.loads(raw)
        except ValueError:
            record = None
        problem = self.check_record(key, record)
        if problem is not None:
            if report:
                self._drop_record(key, problem)
            return None
        return record

    def touch(self, key: str) -> None:
        """Stamp the record as used now (LRU), independent of atime and mount options."""
        with contextlib.suppress(FileNotFoundError):
            os.utime(self.record_path(key))

    def lookup(self, key: str) -> dict[str, bytes] | None:
        """All outputs of `key`, each re-hashed, or None (a miss). Counts hits and misses."""
        record = self.get_record(key)
        outputs = None
        if record is not None:
            outputs = {}
            for name, ref in record["outputs"].items():
                data = self.get_blob(ref["hash"], key)
                if data is None:
                    outputs = None
                    break
                outputs[name] = data
        if outputs is None:
            self._count("misses")
            return None
        self.touch(key)
        self._count("hits")
        return outputs

    def link_blob(self, digest: str, dest: str) -> bool:
        """Hard-link blob `digest` (already verified by the caller) to `dest`, atomically
        replacing it; False where links are not possible (other filesystem, no support),
        so the caller writes a copy. Blobs are read-only, so a tool that opens an output
        for writing in place fails instead of changing the cache (reads re-hash anyway)."""
        tmp = temp_path(dest)
        try:
            os.link(self.blob_path(digest), tmp)
            os.replace(tmp, dest)
            return True
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return False

    def iter_keys(self):
        """Every record key in the store, sorted."""
        base = os.path.join(self.root, "ac")
        keys = []
        for sub in _listdir(base):
            for name in _listdir(os.path.join(base, sub)):
                if name.endswith(".json") and is_hex_hash(name[:-5]):
                    keys.append(name[:-5])
        return sorted(keys)

    def iter_blobs(self):
        """Every blob hash in the store, sorted."""
        base = os.path.join(self.root, "cas")
        return sorted(
            name
            for sub in _listdir(base)
            for name in _listdir(os.path.join(base, sub))
            if is_hex_hash(name)
        )

    def resolve_key(self, prefix: str) -> str:
        """The full key that starts with `prefix` (>= 4 hex chars); CacheError if none or many."""
        prefix = prefix.lower()
        if len(prefix) < 4 or not set(prefix) <= _HEX:
            raise CacheError(f"{prefix!r} is not a key: give at least 4 hex digits of one")
        if is_hex_hash(prefix):
            return prefix
        matches = [k for k in self.iter_keys() if k.startswith(prefix)]
        if len(matches) != 1:
            what = "no entry" if not matches else f"{len(matches)} entries"
            raise CacheError(
                f"key prefix {prefix} matches {what} in {self.root}; "
                "list keys with `vyre-build cache ls`"
            )
        return matches[0]

    # --- history of keys per output stem ------------------------------------------------
    def history(self, stem: str) -> list[str]:
        """Keys that `stem` was built from, oldest first (at most HISTORY_DEPTH)."""
        try:
            with open(self._history_path(stem), "rb") as f:
                data = json.loads(f.read())
            if data.get("stem") == stem:
                return [k for k in data.get("keys", []) if is_hex_hash(k)]
        except (FileNotFoundError, ValueError, AttributeError):
            pass
        return []

    def note_built(self, stems, key: str) -> None:
        """Remember that each of `stems` now comes from `key` (only writes on a change)."""
        for stem in stems:
            keys = self.history(stem)
            if keys and keys[-1] == key:
                continue
            with self.lock("history"):
                keys = [k for k in self.history(stem) if k != key] + [key]
                body = {"stem": stem, "keys": keys[-HISTORY_DEPTH:]}
                self._write_atomic(self._history_path(stem), canonical_json(body) + b"\n")

    # --- statistics -------------------------------------------------------------------
    def read_stats(self) -> dict:
        try:
            with open(os.path.join(self.root, "stats.json"), "rb") as f:
                data = json.loads(f.read())
            if isinstance(data, dict) and isinstance(data.get("overall"), dict):
                return data
        except (FileNotFoundError, ValueError):
            pass
        return {
            "overall": {"hits": 0, "misses": 0, "corrupt": 0, "stored": 0, "builds": 0},
            "last_build": None,
            "recent_builds": [],
        }

    def flush_stats(self, label: str = "") -> dict | None:
        """Add this process's counters into stats.json as one build; resets them."""
        with self._counts_lock:
            counts, self.counts = self.counts, {k: 0 for k in self.counts}
        if not any(counts.values()):
            return None
        build = dict(counts, label=label, pid=os.getpid(), finished=round(time.time(), 3))
        with self.lock("stats"):
            stats = self.read_stats()
            overall = stats["overall"]
            for name, n in counts.items():
                overall[name] = overall.get(name, 0) + n
            overall["builds"] = overall.get("builds", 0) + 1
            stats["last_build"] = build
            stats["recent_builds"] = (stats.get("recent_builds") or [])[-(RECENT_BUILDS - 1) :]
            stats["recent_builds"].append(build)
            self._write_atomic(os.path.join(self.root, "stats.json"), canonical_json(stats) + b"\n")
        return build

    def usage(self) -> dict:
        """Entry and blob counts and bytes on disk (records + blobs)."""
        rec_bytes = blob_bytes = 0
        keys, blobs = self.iter_keys(), self.iter_blobs()
        for k in keys:
            rec_bytes += _size(self.record_path(k))
        for b in blobs:
            blob_bytes += _size(self.blob_path(b))
        return {
            "entries": len(keys),
            "blobs": len(blobs),
            "record_bytes": rec_bytes,
            "blob_bytes": blob_bytes,
            "total_bytes": rec_bytes + blob_bytes,
        }

    # --- garbage collection ------------------------------------------------------------
    def gc(
        self, max_size: int | None = None, max_age_s: float | None = None, now: float | None = None
    ) -> dict:
        """LRU/age eviction; see `vyre_build.cache.gc.collect`."""
        from vyre_build.cache.gc import collect

        return collect(self, max_size, max_age_s, now)


def record_blobs(record: dict) -> list[str]:
    """Every blob a record references: its outputs and its stored input files, sorted."""
    blobs = {ref["hash"] for ref in record["outputs"].values()}
    for part in record["manifest"]["parts"]:
        if part["kind"] in FILE_PART_KINDS:
            blobs.add(part["hash"])
    return sorted(blobs)


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return []
        raise CacheError(f"cannot list cache directory {path}: {exc.strerror}") from None


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _mtime(path: str, default: float) -> float:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return default
