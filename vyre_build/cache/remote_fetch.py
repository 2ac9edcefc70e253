"""Reads of the remote tier: an entry fetched from the server, every byte checked before
it is used.

`RemoteFetch` is a mixin of `RemoteCache` (remote.py), which holds the connection, the
counters and the warnings it uses. Guarantees: every download is checked (the record's
checksum, key and shape; that its outputs are the ones the step expects; each blob's
blake3 and size) before it is used or kept locally: a wrong byte or a wrong set of
outputs is never served, it is reported, counted and the entry rebuilt. A blob is
streamed while it is hashed, past SPOOL_BYTES into an anonymous temp file, so memory never
holds more than that of an unchecked download whatever the server sends or a record
claims, and a record naming a blob over `max_blob` bytes is not downloaded (one warning
per build). An entry's blobs are asked for at once, on FETCH_THREADS threads (each its
own connection); after a failure, the blobs not yet asked for are not.
"""

from __future__ import annotations

import tempfile
import threading

import blake3

from vyre_build.cache.layout import BadEntry, load_json
from vyre_build.cache.record import MAX_RECORD_BYTES, check_record, output_set_problem
from vyre_build.cache.transport import TooBig, Unreachable
from vyre_build.cache.config import format_size

__all__ = ["MAX_BLOB_ENV", "RemoteFetch"]

MAX_BLOB_ENV = "VYRE_REMOTE_CACHE_MAX_BLOB_SIZE"
FETCH_THREADS = 4  # a kernel has 3-5 outputs
# A download is held in memory up to this size, then in an anonymous temp file (making one
# costs ~400 us here, against ~3 us for memory: most blobs are a few KiB).
SPOOL_BYTES = 1 << 20


class RemoteFetch:
    """`RemoteCache`'s reads: `fetch` and the checked, streamed download of its blobs."""

    def _corrupt(self, what: str, problem: str, kind: str = "corrupt") -> None:
        self._count("remote_corrupt")
        self._count("remote_misses")
        self.say(
            kind,
            f"remote {what} from {self.url} is corrupt: {problem}; not used, "
            "the entry will be rebuilt",
        )

    def _get(self, name: str, limit: int) -> bytes | None:
        """The body of a 200 answer; None on a miss or a failure (counted, warned)."""
        try:
            return self._body(self._request("GET", name, limit=limit))
        except Unreachable as exc:
            return self._body(exc)

    def _body(self, answer) -> bytes | None:
        """A GET's (status, reason, data) or Unreachable as the body or None (counted)."""
        if isinstance(answer, Unreachable):
            self._unreachable(answer)
            return None
        status, reason, data = answer
        if status == 404:
            self._count("remote_misses")
            return None
        if status != 200:
            self._refused("GET", status, reason)
            return None
        return data

    def fetch(self, key: str, expected=None) -> tuple[dict, dict[str, bytes]] | None:
        """(record, {output name: bytes}) of `key` from the server, every byte checked; None
        on a miss, a corrupt entry or a failure (each counted).

        expected: the output names the step declares (SCons: its targets); a record with
            other outputs is corrupt. None: the outputs must be the ones the record itself
            implies (`record.output_set_problem`)."""
        if not self.readable:
            return None
        try:
            raw = self._get(f"ac/{key}", MAX_RECORD_BYTES)
        except TooBig:
            self._corrupt(f"action record {key}", f"it is over {MAX_RECORD_BYTES} bytes")
            return None
        if raw is None:
            return None
        try:
            record = load_json(raw)
        except BadEntry as exc:
            self._corrupt(f"action record {key}", exc.problem)
            return None
        problem = check_record(key, record, raw)
        if problem is None and expected is not None:
            problem = output_set_problem(record, expected)
            if problem is not None:  # said once a build: a bad server is one line
                self._corrupt(f"action record {key}", problem, "outputs")
                return None
        if problem is not None:
            self._corrupt(f"action record {key}", problem)
            return None
        refs = sorted(record["outputs"].items())
        if self.max_blob is not None:
            for name, ref in refs:
                if ref["size"] > self.max_blob:
                    self._count("remote_misses")
                    self.say(
                        "size",
                        f"remote action record {key} from {self.url} names output {name} of "
                        f"{ref['size']} bytes, over the {format_size(self.max_blob)} download "
                        f"limit (max-blob-size in [remote], {MAX_BLOB_ENV}); not downloaded, "
                        "the entry will be rebuilt",
                    )
                    return None
        outputs = self._download(key, refs)
        if outputs is None:
            return None
        if expected is None:
            problem = output_set_problem(record, read=outputs.get)
            if problem is not None:
                self._corrupt(f"action record {key}", problem, "outputs")
                return None
        self._count("remote_hits")
        return record, outputs

    def _download(self, key: str, refs) -> dict[str, bytes] | None:
        """{name: bytes} of every blob, each checked; None (the first failure counted and
        warned) if one is missing, wrong or the server fails."""
        # The blobs are asked for at once (each thread its own connection): a remote hit
        # waits about two round trips, not one per output. After a failure the blobs not
        # yet asked for are not asked for.
        failed = threading.Event()
        answers = list(self._fetchers().map(lambda ref: self._blob(ref, failed), refs))
        outputs = {}
        for (name, ref), (kind, value) in zip(refs, answers):
            if kind == "skipped":
                continue  # another blob failed: reported below or above
            if kind == "corrupt":
                self._corrupt(f"blob {ref['hash']} (of key {key})", value)
                return None
            if kind == "answer":
                self._body(value)  # a miss, a refusal or the server down: counted
                return None
            outputs[name] = value
        return outputs if len(outputs) == len(refs) else None

    def _blob(self, ref: tuple[str, dict], failed: threading.Event) -> tuple[str, object]:
        """One blob, streamed while hashed (into memory up to SPOOL_BYTES, then into an
        anonymous temp file) and handed on only once checked: ("ok", bytes), ("corrupt", problem), ("answer", a non-200 answer or
        Unreachable), or ("skipped", None) once another blob of the entry failed."""
        if failed.is_set():
            return "skipped", None
        try:
            result = self._stream(ref[1])
        except _TempFileError as exc:  # no room in $TMPDIR: this build downloads no more
            result = "answer", Unreachable(f"cannot write a temp file: {exc}")
        if result[0] != "ok":
            failed.set()
        return result

    def _stream(self, want: dict) -> tuple[str, object]:
        try:
            f = tempfile.SpooledTemporaryFile(SPOOL_BYTES, prefix="vyre-remote-")
        except OSError as exc:
            raise _TempFileError(exc.strerror or str(exc)) from None
        with f:
            sink = _HashingWriter(f)
            try:
                answer = self._request("GET", f"cas/{want['hash']}", limit=want["size"], into=sink)
            except TooBig:
                return "corrupt", f"it is larger than the {want['size']} bytes of its record"
            except Unreachable as exc:
                return "answer", exc
            if answer[0] != 200:
                return "answer", answer
            if sink.size != want["size"]:
                return "corrupt", f"it has {sink.size} bytes, its record says {want['size']}"
            actual = sink.hasher.hexdigest()
            if actual != want["hash"]:
                return "corrupt", f"its bytes hash to {actual}"
            f.seek(0)
            return "ok", f.read()

    def _fetchers(self):
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="vyre-fetch")
            return self._pool


class _TempFileError(Exception):
    """The temp file a download streams to cannot be made or written (not an OSError, so
    that the transport does not take it for the server's failure)."""


class _HashingWriter:
    """A file that hashes what is written to it and counts it."""

    def __init__(self, file):
        self.file, self.hasher, self.size = file, blake3.blake3(), 0

    def write(self, chunk: bytes) -> None:
        self.hasher.update(chunk)
        try:
            self.file.write(chunk)
        except OSError as exc:
            raise _TempFileError(exc.strerror or str(exc)) from None
        self.size += len(chunk)
