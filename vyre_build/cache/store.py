"""The local artifact store: blobs by blake3 of content, action records by key.

Layout: see `vyre_build.cache.layout`; the write side (the claim of the directory, atomic
writes, refusals, locks) is `vyre_build.cache.writer`. Guarantees:
- Every write is a temp file in the destination directory, then `os.replace`, so a reader
  (or a build killed at any point) sees the old file or the whole new one, never a part.
- Every read re-hashes: a blob whose bytes do not hash to its name, a record whose
  checksum, key or shape is wrong, or anything that is not a regular file where an entry
  should be (a directory, a FIFO, a link, a file over the size limit) is reported on
  stderr (naming blob and key), removed and treated as a miss; it is never served.
- A store writes only into a vyre cache: before its first write, a new or empty
  directory gets the marker (`layout.MARKER`), as does a cache made before the marker;
  any other directory is never written to (one warning, then as a read-only store), nor
  collected or cleared.
- A store that cannot be written (read-only mount, permissions, disk full) still serves
  hits: the first failed write is one warning, and the store writes nothing more in this
  process. A failed write leaves no temp file and no record without its blobs.
- Concurrent processes and threads may share one store: blobs are content-addressed (two
  writers write the same bytes), records are replaced whole, and the read-modify-write
  files (stats, history, scan memo) are guarded by fcntl locks.
- A record's file mtime is its last-access stamp (set explicitly on every hit, so it does
  not depend on atime); `gc` evicts least-recently-used records first.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

import vyre_build.cache.gc as _gc
import vyre_build.cache.stats as _stats
from vyre_build.cache.history import History
from vyre_build.cache.key import content_hash, key_from_manifest
from vyre_build.cache.layout import (
    BadEntry,
    is_hex_hash,
    listdir,
    load_json,
    read_entry,
    remove_entry,
)
from vyre_build.cache.record import (
    MAX_RECORD_BYTES,
    check_record,
    make_record,
    output_set_problem,
)
from vyre_build.cache.writer import StoreWriter
from vyre_build.core.errors import CacheError
from vyre_build.core.files import canonical_json, temp_path

__all__ = ["AUTO_GC_INTERVAL_S", "MAX_BLOB_BYTES", "Store", "is_hex_hash", "warn"]

MAX_BLOB_BYTES = 1 << 30  # an artifact over 1 GiB is not one of ours
AUTO_GC_INTERVAL_S = 86400.0  # a full collection at least daily sweeps killed writers' temps
_HEX = frozenset("0123456789abcdef")


def warn(message: str) -> None:
    print(f"vyre cache: warning: {message}", file=sys.stderr, flush=True)


class Store(StoreWriter):
    """One cache directory. Cheap to construct; creates its directories on first write.

    Arguments:
        root: the cache directory.
        project: the project root whose builds this store records (`history`), if any.
        warn: called with each warning's text (default: printed on stderr).
    """

    def __init__(self, root: str | os.PathLike, *, project: str | None = None, warn=warn):
        self.root = os.path.abspath(os.fspath(root))
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise CacheError(
                f"cache directory {self.root} exists and is not a directory; "
                "point VYRE_CACHE_DIR / $VYRECACHEDIR at a directory"
            )
        self._warn = warn
        self._made: set[str] = set()
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self.writable = True
        self.write_failure: str | None = None  # the warning of the first failed write
        self.write_problem: str | None = None  # its first part: what is wrong, where
        self.foreign: str | None = None  # why the root is not a vyre cache, once claimed
        self._claimed = False
        self._claim_lock = threading.Lock()
        self.counts = dict.fromkeys(_stats.COUNTERS, 0)
        self.builds = History(self, project)
        self._fresh = not os.path.lexists(os.path.join(self.root, "ac"))

    # --- paths, warnings, counters ------------------------------------------------------
    def blob_path(self, digest: str) -> str:
        return os.path.join(self.root, "cas", digest[:2], digest)

    def record_path(self, key: str) -> str:
        return os.path.join(self.root, "ac", key[:2], key + ".json")

    def warn_once(self, kind: str, message: str) -> None:
        """Warn about `kind` once per store (a broken disk is one line, not one per file)."""
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        self._warn(message)

    def warn(self, message: str) -> None:
        self._warn(message)

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] = self.counts.get(name, 0) + n

    def take_counts(self) -> dict:
        """This process's counters since the last call (reset to zero)."""
        with self._lock:
            counts, self.counts = self.counts, dict.fromkeys(_stats.COUNTERS, 0)
        return counts

    # --- blobs ------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str | None:
        """Store `data` under its blake3; returns the hash, or None if it could not be
        written. A regular file of the right size there is kept (reads re-hash anyway)."""
        digest = content_hash(data)
        path = self.blob_path(digest)
        try:
            st = os.lstat(path)
            if st.st_size == len(data) and os.path.isfile(path) and not os.path.islink(path):
                return digest
        except OSError:
            pass
        if not self.write_file(path, data, mode=0o444):
            return None
        self.count("stored_bytes", len(data))
        return digest

    def _drop(self, path: str, what: str, problem: str) -> None:
        self.count("corrupt")
        failed = remove_entry(path)
        tail = "removed" if failed is None else f"could not remove it ({failed})"
        self._warn(f"{what} is corrupt: {problem}; {tail}, the entry will be rebuilt")

    def get_blob(
        self, digest: str, key: str | None = None, size: int | None = None, *, named=False
    ) -> bytes | None:
        """The blob's bytes if present and intact; None if absent or unusable (then
        reported and removed). `size`, when the record gives it, bounds the read.
        `named`: the record of `key` names this blob, so its absence is damage too
        (reported and counted as corrupt, unless the record went as well: evicted)."""
        path = self.blob_path(digest)
        where = f"blob {digest}" + (f" (of key {key})" if key else "")
        try:
            data = read_entry(path, MAX_BLOB_BYTES if size is None else size)
        except BadEntry as exc:
            self._drop(path, where, exc.problem)
            return None
        if data is None:
            if named and key is not None and os.path.lexists(self.record_path(key)):
                self.count("corrupt")
                self._warn(
                    f"{where} is missing: its action record names it but the cache has no "
                    "such blob; the entry will be rebuilt"
                )
            return None
        actual = content_hash(data)
        if actual != digest:
            self._drop(path, where, f"its bytes hash to {actual}")
            return None
        return data

    # --- action records ---------------------------------------------------------------
    def put_record(
        self, key: str, manifest: dict, outputs: dict[str, bytes], info: dict | None = None
    ) -> dict | None:
        """Store every output as a blob, then the record (last, so a record is never
        visible before its blobs). Returns the record, or None if it was not stored."""
        if key_from_manifest(manifest) != key:
            raise RuntimeError(f"key {key} does not match its manifest")
        refs = {}
        for name, data in sorted(outputs.items()):
            digest = self.put_blob(data)
            if digest is None:
                return None
            refs[name] = {"hash": digest, "size": len(data)}
        record = make_record(key, manifest, refs, info)
        body = canonical_json(record) + b"\n"
        if not self.write_file(self.record_path(key), body):
            return None
        self.count("stored")
        self.count("stored_bytes", len(body))
        return record

    def put_record_bytes(self, key: str, body: bytes) -> bool:
        """Store an already-checked record's bytes (its blobs must be stored first)."""
        if not self.write_file(self.record_path(key), body):
            return False
        self.count("stored")
        self.count("stored_bytes", len(body))
        return True

    def read_record(self, key: str) -> dict:
        """The record of `key` as stored (intact or not); raises BadEntry with the problem,
        FileNotFoundError when absent. Reads only: for `verify`."""
        data = read_entry(self.record_path(key), MAX_RECORD_BYTES)
        if data is None:
            raise FileNotFoundError(self.record_path(key))
        record = load_json(data)
        problem = check_record(key, record, data)
        if problem is not None:
            raise BadEntry(problem)
        return record

    def get_record(self, key: str, *, report: bool = True) -> dict | None:
        """The intact record of `key`, or None (absent; or corrupt: then reported, removed)."""
        try:
            return self.read_record(key)
        except FileNotFoundError:
            return None
        except BadEntry as exc:
            if report:
                self._drop(self.record_path(key), f"action record {key}", exc.problem)
            return None

    def touch(self, key: str) -> None:
        """Stamp the record as used now (LRU), independent of atime and mount options.
        Best effort: a store others own or mounted read-only keeps its old stamps."""
        if self.writable:
            with contextlib.suppress(OSError):
                os.utime(self.record_path(key))

    def lookup(self, key: str, expected=None) -> dict[str, bytes] | None:
        """All outputs of `key`, each re-hashed, or None (a miss). Counts local hits/misses.
        `expected`: the output names the step declares; a record with others is corrupt
        (reported, removed)."""
        record = self.get_record(key)
        if record is not None and expected is not None:
            problem = output_set_problem(record, expected)
            if problem is not None:
                self._drop(self.record_path(key), f"action record {key}", problem)
                record = None
        outputs = None
        if record is not None:
            outputs = {}
            for name, ref in record["outputs"].items():
                data = self.get_blob(ref["hash"], key, ref["size"], named=True)
                if data is None:
                    outputs = None
                    break
                outputs[name] = data
        if outputs is None:
            self.count("local_misses")
            return None
        self.touch(key)
        self.count("local_hits")
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

    # --- listing ----------------------------------------------------------------------
    def iter_keys(self) -> list[str]:
        """Every record key in the store, sorted (a file under another prefix than its
        name's is no entry: no lookup finds it)."""
        base = os.path.join(self.root, "ac")
        return sorted(
            name[:-5]
            for sub in listdir(base)
            for name in listdir(os.path.join(base, sub))
            if name.endswith(".json") and is_hex_hash(name[:-5]) and name[:2] == sub
        )

    def iter_blobs(self) -> list[str]:
        """Every blob hash in the store, sorted."""
        base = os.path.join(self.root, "cas")
        return sorted(
            name
            for sub in listdir(base)
            for name in listdir(os.path.join(base, sub))
            if is_hex_hash(name) and name[:2] == sub
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

    # --- history and the end of a build -------------------------------------------------
    def note_built(self, names, key: str) -> None:
        """Remember that each output of `names` (see history.output_name) came from `key`."""
        self.builds.note(names, key)

    def history(self, name: str) -> list[str]:
        """Keys output `name` was built from, oldest first (at most HISTORY_DEPTH)."""
        return self.builds.keys(name)

    def finish_build(
        self,
        label: str = "",
        extra: dict | None = None,
        max_size: int | None = None,
        max_age_s: float | None = None,
    ) -> dict | None:
        """End of a build: write its history and counters (with `extra`, e.g. the remote
        tier's) as one build in stats.json, then collect if the store is over `max_size`
        or went a day without a collection. Returns the build's counters, None if it
        counted nothing (a null build writes nothing)."""
        self.builds.flush()
        counts = self.take_counts()
        for name, n in (extra or {}).items():
            counts[name] = counts.get(name, 0) + n
        if not any(counts.values()):
            return None
        stats = _stats.record_build(self, counts, label, fresh=self._fresh)
        self._fresh = False
        if self.writable and (max_size is not None or max_age_s is not None):
            last, size = stats["last_gc"], stats["size_bytes"]
            due = last is None or time.time() - last > AUTO_GC_INTERVAL_S
            if due or (max_size is not None and (size is None or size > max_size)):
                report = self.gc(max_size, max_age_s)
                _stats.note_gc(self, report["total_bytes_after"])
        return stats["last_build"]

    # --- maintenance (vyre_build.cache.gc) ------------------------------------------------
    def usage(self) -> dict:
        """Entries, blobs, bytes on disk and temp files left by killed writers."""
        return _gc.usage(self)

    def gc(
        self, max_size: int | None = None, max_age_s: float | None = None, now: float | None = None
    ) -> dict:
        """LRU/age eviction and the sweep of stale temp files; see `gc.collect`."""
        self.require_cache()
        return _gc.collect(self, max_size, max_age_s, now)

    def clear(self) -> dict:
        """Remove every entry (records, blobs, history, scan memo); statistics stay."""
        self.require_cache()
        return _gc.clear(self)

    def read_json(self, path: str, limit: int = MAX_RECORD_BYTES):
        """A store file's JSON, or None when absent or unusable (the caller starts afresh)."""
        try:
            data = read_entry(path, limit)
            return None if data is None else load_json(data)
        except BadEntry:
            return None
