"""Scan memo: the stems and dependencies of each kernel file, kept across builds.

SCons asks for every kernel file's stems (to declare outputs) and imports (to scan) on
every run, even a null build; parsing each file for that dominates a large null build.
This memo stores, per project and compiler identity, one file holding for each kernel
file its content hash, stems, the targets some stems get no artifact of (a kernel using
cooperative matrices has no WGSL), dependency list and the content hash of every file the
answer depends on (each dependency and every variants YAML that could be read). A lookup
re-hashes those files, so an answer is only reused while every file it came from is
unchanged; otherwise it is recomputed. The file is read once per build and written once
at its end (`flush`), not once per kernel file.

Guarantees: the memo file is written atomically under the store's "scan" lock and its
first line is blake3 of the rest; a corrupt file is ignored (and rebuilt), never used.
"""

from __future__ import annotations

import os
import stat
import threading

from vyre_build.core.artifacts import VARIANTS_FILES
from vyre_build.cache.key import content_hash
from vyre_build.cache.layout import BadEntry, load_json, read_entry
from vyre_build.core.files import canonical_json
from vyre_build.core.limits import MAX_SOURCE_BYTES

__all__ = ["ScanMemo"]

SCAN_SCHEMA = "vyre-scan/4"  # 4: "skipped" per entry
MAX_MEMO_BYTES = 256 << 20


class ScanMemo:
    """Scan answers of one project and compiler identity, in `<cache>/scan/<h>.json`."""

    def __init__(self, store, identity_text: str, project: str | None = None):
        self.store = store
        name = content_hash(f"{identity_text}\0{project or ''}".encode())
        self.path = os.path.join(store.root, "scan", name + ".json")
        self.identity_text, self.project = identity_text, project
        self._hashes: dict[tuple, str | None] = {}
        self._lock = threading.Lock()
        self._entries: dict | None = None
        self._changed: dict[str, dict] = {}
        self._used: set[str] = set()

    def file_hash(self, path: str) -> str | None:
        """blake3 of a file's bytes, or None if it does not exist (memoised by stat)."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
            return None  # never opened (a FIFO would block); the compiler reports it
        memo_key = (path, st.st_mtime_ns, st.st_size, st.st_ino)
        with self._lock:
            if memo_key in self._hashes:
                return self._hashes[memo_key]
        try:
            with open(path, "rb") as f:
                digest = content_hash(f.read())
        except OSError:
            digest = None
        with self._lock:
            self._hashes[memo_key] = digest
        return digest

    def _read_file(self) -> dict:
        try:
            raw = read_entry(self.path, MAX_MEMO_BYTES)
            if raw is None:
                return {}
            # Line 1: blake3 of the rest (cheaper to check than re-serialising the JSON).
            checksum, _, body = raw.partition(b"\n")
            if checksum.decode("ascii", "replace") != content_hash(body):
                return {}
            doc = load_json(body)
        except BadEntry:
            return {}
        if not isinstance(doc, dict) or doc.get("schema") != SCAN_SCHEMA:
            return {}
        entries = doc.get("entries")
        return entries if isinstance(entries, dict) else {}

    def _load(self) -> dict:
        with self._lock:
            if self._entries is None:
                self._entries = self._read_file()
            return self._entries

    def _checked_files(self, source: str, deps: list[str]) -> list[str]:
        dirs = sorted({os.path.dirname(p) for p in [source, *deps]})
        extra = [os.path.join(d, v) for d in dirs for v in VARIANTS_FILES]
        return sorted(set(deps) | set(extra))

    def lookup(self, source: str) -> dict | None:
        """{"stems": [...], "deps": [...], "skipped": {stem: {target: why}}} if remembered
        and every input is unchanged."""
        entry = self._load().get(source)
        with self._lock:
            self._used.add(source)
        try:
            if entry is None or self.file_hash(source) != entry["hash"]:
                return None
            for dep, digest in entry["checks"].items():
                if self.file_hash(dep) != digest:
                    return None
            skipped = entry["skipped"]
            if not isinstance(skipped, dict) or not all(
                isinstance(v, dict) and all(isinstance(w, str) for w in v.values())
                for v in skipped.values()
            ):
                return None
            return {
                "stems": list(entry["stems"]),
                "deps": list(entry["deps"]),
                "skipped": {stem: dict(v) for stem, v in skipped.items()},
            }
        except (KeyError, TypeError, AttributeError):
            return None  # a malformed entry: recomputed and replaced

    def save(
        self,
        source: str,
        source_hash: str | None,
        stems: list[str],
        deps: list[str],
        skipped: dict | None = None,
    ) -> None:
        """Remember the answer for `source`, whose hash was `source_hash` before it was
        parsed, with the hashes of every file the answer depends on (written by `flush`)."""
        if source_hash is None or self.file_hash(source) != source_hash:
            return  # edited while being parsed: the answer may be of the old text
        checks = {p: self.file_hash(p) for p in self._checked_files(source, deps)}
        entry = {
            "hash": source_hash,
            "stems": list(stems),
            "deps": list(deps),
            "skipped": dict(skipped or {}),
            "checks": checks,
        }
        with self._lock:
            self._changed[source] = entry

    def flush(self) -> None:
        """Merge this build's new answers into the memo file; entries of kernel files that
        no longer exist are dropped."""
        with self._lock:
            changed, self._changed = self._changed, {}
            used = set(self._used)
        if not changed:
            return
        with self.store.lock("scan"):
            entries = self._read_file()
            entries.update(changed)
            entries = {src: e for src, e in entries.items() if src in used or os.path.exists(src)}
            body = canonical_json(
                {
                    "schema": SCAN_SCHEMA,
                    "identity": self.identity_text,
                    "project": self.project,
                    "entries": entries,
                }
            )
            self.store.write_file(self.path, content_hash(body).encode() + b"\n" + body)
        with self._lock:
            self._entries = entries
