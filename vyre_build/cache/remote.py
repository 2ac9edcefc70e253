"""The remote tier: a cache shared over plain HTTP, in the layout Bazel's remote caches use.

    GET/HEAD/PUT <url>/ac/<key>        the action record (the same canonical JSON as the
                                       local store's ac/<2 hex>/<key>.json)
    GET/HEAD/PUT <url>/cas/<blake3>    a blob: an artifact's bytes or an input file's
                                       (HEAD: is a large input there already)

Any server that stores what is PUT and returns it on GET serves (nginx with WebDAV,
bazel-remote, a bucket behind a proxy). Reads are anonymous unless credentials are given;
credentials come from the URL (`http://user:password@host/prefix`, split as urllib does:
`cache.url`), else $VYRE_REMOTE_CACHE_AUTH (`user:password`), else ~/.netrc (or $NETRC)
for the host, and are sent as HTTP basic auth; no message ever shows them. The mode is
read-only unless set to read-write, or credentials are given.

Guarantees: every download is checked (the record's checksum, key and shape; that its
outputs are the ones the step expects; each blob's blake3 and size) before it is used or
kept locally: a wrong byte or a wrong set of outputs is never served, it is reported,
counted and the entry rebuilt. A blob is streamed while it is hashed, past SPOOL_BYTES
into an anonymous temp file, so memory never holds more than that of an unchecked
download whatever the server sends or a record claims, and a record naming a blob over
`max_blob` bytes is not downloaded (one warning per build). A
server that is down, slow, trickling or answering errors costs at most one timeout: each
request ends by a deadline for the whole exchange; the first failure is one warning and
a count, then this process stops asking it (the build goes on with the local cache).
Refused uploads (bad credentials, no PUT) are one warning and stop uploads only. Uploads
run on a background thread (records after their blobs, so a record is never visible
before its blobs), drained at the end of the build (`finish`). Connections are kept
alive, one per thread.

HTTP: `cache.transport.KeepAlive` (http.client, persistent connections, one per thread).
"""

from __future__ import annotations

import base64
import netrc
import os
import queue
import sys
import tempfile
import threading
import urllib.parse

import blake3

from vyre_build.cache.key import content_hash
from vyre_build.cache.layout import BadEntry, load_json
from vyre_build.cache.record import MAX_RECORD_BYTES, check_record, output_set_problem
from vyre_build.cache.stats import REMOTE_COUNTERS as COUNTERS
from vyre_build.cache.transport import KeepAlive, TooBig, Unreachable
from vyre_build.cache.url import parse_remote_url
from vyre_build.cache.config import DEFAULT_REMOTE_MAX_BLOB, format_size
from vyre_build.core.errors import CacheError
from vyre_build.core.files import canonical_json

__all__ = ["AUTH_ENV", "MAX_BLOB_ENV", "RemoteCache"]

AUTH_ENV = "VYRE_REMOTE_CACHE_AUTH"
MAX_BLOB_ENV = "VYRE_REMOTE_CACHE_MAX_BLOB_SIZE"
FETCH_THREADS = 4  # a kernel has 3-5 outputs
HEAD_FIRST_BYTES = 64 << 10  # a smaller blob is PUT at once: one request either way
# A download is held in memory up to this size, then in an anonymous temp file (making one
# costs ~400 us here, against ~3 us for memory: most blobs are a few KiB).
SPOOL_BYTES = 1 << 20


def _print(message: str) -> None:
    print(f"vyre cache: warning: {message}", file=sys.stderr, flush=True)


# Warnings said once per build (the others, corrupt downloads, are each reported).
ONCE = ("unreachable", "reads", "uploads", "netrc", "outputs", "size")


class RemoteCache:
    """One remote cache server, for one build.

    Arguments:
        url: `http(s)://[user:password@]host[:port]/prefix`.
        mode: "read-only" or "read-write"; None: read-write only if credentials are found.
        timeout: seconds each request may take in all (connect, send, headers, body).
        max_blob: the largest blob downloaded, in bytes (None: no limit); a record naming
            a larger one is a miss.
        environ: where $VYRE_REMOTE_CACHE_AUTH and $NETRC are read (default os.environ).
        notify: called with (kind, text) of each warning instead of printing it (a worker
            process hands them to the build process, which says each kind once).
    """

    def __init__(
        self,
        url: str,
        *,
        mode: str | None = None,
        timeout: float = 5.0,
        max_blob: int | None = DEFAULT_REMOTE_MAX_BLOB,
        environ=None,
        notify=None,
    ):
        self._given = (url, mode, timeout, max_blob)
        parts = parse_remote_url(url)
        self.scheme, self.host, self.port = parts.scheme, parts.host, parts.port
        self.prefix = parts.prefix
        self.url = parts.shown
        self.timeout = float(timeout)
        self.max_blob = max_blob
        self._notify = notify
        self._said: set[str] = set()
        self._lock = threading.Lock()
        environ = os.environ if environ is None else environ
        self.credentials_from, auth = self._credentials(parts, environ)
        self._headers = {"Authorization": "Basic " + auth} if auth else {}
        if mode not in (None, "read-only", "read-write"):
            raise CacheError(f"remote cache mode {mode!r} is not read-only or read-write")
        self.mode = mode or ("read-write" if auth else "read-only")
        self.counts = dict.fromkeys(COUNTERS, 0)
        self._http = KeepAlive(self.scheme, self.host, self.port, self.timeout)
        self._pool = None
        self._down = self._reads_off = self._uploads_off = False
        self._sent: set[str] = set()
        self._queue: queue.Queue = queue.Queue()
        self._uploader: threading.Thread | None = None

    # --- credentials ------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: tuple, notify=None) -> "RemoteCache":
        """The remote of another process's `config()` (a worker's own connection)."""
        url, mode, timeout, max_blob = config
        return cls(url, mode=mode, timeout=timeout, max_blob=max_blob, notify=notify)

    def _credentials(self, parts, environ) -> tuple[str | None, str | None]:
        """(where they came from, base64 user:password), or (None, None)."""
        if parts.user is not None:
            return "the URL", _basic(parts.user, parts.password or "")
        if environ.get(AUTH_ENV):
            user, _, password = environ[AUTH_ENV].partition(":")
            return AUTH_ENV, _basic(user, password)
        path = environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
        if not os.path.isfile(path):
            return None, None
        try:
            found = netrc.netrc(path).authenticators(self.host)
        except netrc.NetrcParseError as exc:  # its message may quote a token: not shown
            self.say("netrc", f"cannot read credentials from {path} (line {exc.lineno}); not used")
            return None, None
        except OSError:
            return None, None
        if not found:
            return None, None
        return path, _basic(found[0] or "", found[2] or "")

    # --- state and warnings -------------------------------------------------------------
    def say(self, kind: str, message: str) -> None:
        """Warn (kinds in ONCE at most once per build), or hand it to `notify`."""
        if self._notify is not None:
            self._notify(kind, message)
            return
        with self._lock:
            if kind in ONCE and kind in self._said:
                return
            self._said.add(kind)
        _print(message)

    def config(self) -> tuple:
        """(url, mode, timeout, max_blob) as given: what a worker process builds its own
        from (`from_config`)."""
        return self._given

    def state(self) -> dict:
        """What this process learned about the server: down, reads off, uploads off."""
        return {"down": self._down, "reads_off": self._reads_off, "uploads_off": self._uploads_off}

    def merge_state(self, state: dict) -> None:
        """Adopt what another process learned (its warning was already said)."""
        with self._lock:
            self._down |= bool(state.get("down"))
            self._reads_off |= bool(state.get("reads_off"))
            self._uploads_off |= bool(state.get("uploads_off"))

    def add_counts(self, counts: dict) -> None:
        with self._lock:
            for name, n in counts.items():
                self.counts[name] = self.counts.get(name, 0) + n

    @property
    def readable(self) -> bool:
        return not (self._down or self._reads_off)

    @property
    def writable(self) -> bool:
        return self.mode == "read-write" and not (self._down or self._uploads_off)

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n

    def take_counts(self) -> dict:
        with self._lock:
            counts, self.counts = self.counts, dict.fromkeys(COUNTERS, 0)
        return counts

    def _unreachable(self, exc: Unreachable) -> None:
        with self._lock:
            first, self._down = not self._down, True
            self.counts["remote_errors"] += 1
        if first:
            self.say(
                "unreachable",
                f"remote cache {self.url} is unreachable ({exc.reason}); "
                "this build goes on with the local cache only",
            )

    def _refused(self, method: str, status: int, reason: str) -> None:
        """A non-2xx answer that is not a miss: server errors stop the remote, refused
        reads stop reads, refused uploads stop uploads; one warning each."""
        answer = f"HTTP {status} {reason}".rstrip()
        if status >= 500 or status < 400:
            self._unreachable(Unreachable(f"it answered {answer}"))
            return
        if method in ("GET", "HEAD"):
            with self._lock:
                first, self._reads_off = not self._reads_off, True
                self.counts["remote_errors"] += 1
            hint = self._credential_hint() if status in (401, 403) else "is it a cache server?"
            if first:
                self.say(
                    "reads",
                    f"remote cache {self.url} refused a read ({answer}): {hint}; "
                    "no more remote reads in this build",
                )
            return
        with self._lock:
            first, self._uploads_off = not self._uploads_off, True
            self.counts["upload_errors"] += 1
        if status in (401, 403):
            hint = self._credential_hint()
        else:
            hint = "does the server accept PUT (nginx: dav_methods PUT)?"
        if first:
            self.say(
                "uploads",
                f"remote cache {self.url} refused an upload ({answer}): {hint}; "
                "no more uploads in this build",
            )

    def _credential_hint(self) -> str:
        if self.credentials_from is None:
            return f"no credentials were given (set {AUTH_ENV}, put them in ~/.netrc or the URL)"
        return f"check the credentials (from {self.credentials_from})"

    def _request(
        self, method: str, name: str, body: bytes | None = None, limit: int = 0, into=None
    ):
        path = urllib.parse.quote(f"{self.prefix}/{name}")
        return self._http.request(method, path, self._headers, body, limit, into)

    # --- reads ------------------------------------------------------------------------
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

    # --- uploads ----------------------------------------------------------------------
    def upload(self, record: dict, outputs: dict[str, bytes], inputs: dict[str, bytes]) -> None:
        """Queue an entry for upload: input blobs (a large one HEAD first: an unchanged
        input is often there already), output blobs, then the record. Returns at once."""
        if not self.writable:
            return
        blobs = [(content_hash(d), d, len(d) > HEAD_FIRST_BYTES) for d in inputs.values()]
        blobs += [(ref["hash"], outputs[n], False) for n, ref in record["outputs"].items()]
        body = canonical_json(record) + b"\n"
        with self._lock:
            if self._uploader is None:
                self._uploader = threading.Thread(
                    target=self._upload_loop, name="vyre-remote-upload", daemon=True
                )
                self._uploader.start()
        self._queue.put((record["key"], body, blobs))

    def _upload_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            if self.writable:
                self._upload_one(*item)

    def _put(self, name: str, body: bytes | None, method: str = "PUT") -> bool | None:
        """True when stored (or, for HEAD, present), False when absent, None on failure."""
        try:
            status, reason, _ = self._request(method, name, body=body)
        except TooBig:  # a 2xx answer with a body (which says nothing we read): done
            return True
        except Unreachable as exc:
            self._unreachable(exc)
            return None
        if 200 <= status < 300:
            return True
        if method == "HEAD" and status == 404:
            return False
        self._refused("PUT", status, reason)  # a HEAD here is a step of an upload
        return None

    def _upload_one(self, key: str, body: bytes, blobs) -> None:
        for digest, data, head_first in blobs:
            with self._lock:
                if digest in self._sent:
                    continue
            found = self._put(f"cas/{digest}", None, "HEAD") if head_first else False
            if found is None or (not found and not self._put(f"cas/{digest}", data)):
                return
            with self._lock:
                self._sent.add(digest)
        if self._put(f"ac/{key}", body):
            self._count("uploads")

    def finish(self) -> dict:
        """Wait for the queued uploads, close the connections; returns the counters."""
        with self._lock:
            uploader = self._uploader
        if uploader is not None:
            self._queue.put(None)
            uploader.join()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._http.close()
        return self.take_counts()


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


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
