"""Scan memo: the stems and dependencies of a kernel file, kept across builds.

SCons asks for every kernel file's stems (to declare outputs) and imports (to scan) on
every run, even a null build; parsing each file for that dominates a large null build.
This memo stores, per (compiler identity, path, content), the stems, the dependency list
and the content hash of every file the answer depends on (each dependency and every
variants YAML that could be read). A lookup re-hashes those files, so an answer is only
reused when every file it came from is unchanged; otherwise it is recomputed.

Guarantees: a memo entry is written atomically and carries a checksum; a corrupt or
stale entry is ignored (and a corrupt one removed), never used.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading

from vyre_build.cache.key import content_hash
from vyre_build.artifacts import VARIANTS_FILES
from vyre_build.files import canonical_json
from vyre_build.cache.store import Store
from vyre_build.frontend.limits import MAX_SOURCE_BYTES

__all__ = ["ScanMemo"]

SCAN_SCHEMA = "vyre-scan/2"


class ScanMemo:
    """Scan answers of one compiler identity, stored under `<cache>/scan/`."""

    def __init__(self, store: Store, identity_text: str):
        self.store = store
        self.identity_text = identity_text
        self._hashes: dict[tuple, str | None] = {}
        self._lock = threading.Lock()

    def file_hash(self, path: str) -> str | None:
        """blake3 of a file's bytes, or None if it does not exist (memoised by stat)."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
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
        except FileNotFoundError:
            digest = None
        with self._lock:
            self._hashes[memo_key] = digest
        return digest

    def _path(self, source: str, source_hash: str) -> str:
        h = content_hash(f"{self.identity_text}\0{source}\0{source_hash}".encode())
        return os.path.join(self.store.root, "scan", h[:2], h + ".json")

    def _checked_files(self, source: str, deps: list[str]) -> list[str]:
        dirs = sorted({os.path.dirname(p) for p in [source, *deps]})
        extra = [os.path.join(d, v) for d in dirs for v in VARIANTS_FILES]
        return sorted(set(deps) | set(extra))

    def lookup(self, source: str) -> dict | None:
        """{"stems": [...], "deps": [...]} if remembered and every input is unchanged."""
        source_hash = self.file_hash(source)
        if source_hash is None:
            return None
        path = self._path(source, source_hash)
        try:
            with open(path, "rb") as f:
                raw = f.read()
            # Line 1: blake3 of the rest (cheaper to check than re-serialising the JSON).
            checksum, _, body = raw.partition(b"\n")
            if checksum.decode("ascii", "replace") != content_hash(body):
                raise ValueError("checksum")
            entry = json.loads(body)
            if entry.get("schema") != SCAN_SCHEMA:
                raise ValueError("schema")
        except FileNotFoundError:
            return None
        except (ValueError, AttributeError, TypeError):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return None
        for dep, digest in entry["checks"].items():
            if self.file_hash(dep) != digest:
                return None
        return {"stems": entry["stems"], "deps": entry["deps"]}

    def save(self, source: str, source_hash: str | None, stems: list[str], deps: list[str]) -> None:
        """Remember the answer for `source`, whose hash was `source_hash` before it was
        parsed, with the hashes of every file the answer depends on."""
        if source_hash is None or self.file_hash(source) != source_hash:
            return  # edited while being parsed: the answer may be of the old text
        checks = {p: self.file_hash(p) for p in self._checked_files(source, deps)}
        body = canonical_json(
            {
                "schema": SCAN_SCHEMA,
                "source": source,
                "stems": list(stems),
                "deps": list(deps),
                "checks": checks,
            }
        )
        self.store._write_atomic(
            self._path(source, source_hash), content_hash(body).encode() + b"\n" + body
        )
