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
Reads: `cache.remote_fetch`; uploads: `cache.remote_upload`.
"""

from __future__ import annotations

import base64
import netrc
import os
import queue
import sys
import threading
import urllib.parse

from vyre_build.cache.remote_fetch import MAX_BLOB_ENV, RemoteFetch
from vyre_build.cache.remote_upload import RemoteUpload
from vyre_build.cache.stats import REMOTE_COUNTERS as COUNTERS
from vyre_build.cache.transport import KeepAlive, Unreachable
from vyre_build.cache.url import parse_remote_url
from vyre_build.cache.config import DEFAULT_REMOTE_MAX_BLOB
from vyre_build.core.errors import CacheError

__all__ = ["AUTH_ENV", "MAX_BLOB_ENV", "RemoteCache"]

AUTH_ENV = "VYRE_REMOTE_CACHE_AUTH"


def _print(message: str) -> None:
    print(f"vyre cache: warning: {message}", file=sys.stderr, flush=True)


# Warnings said once per build (the others, corrupt downloads, are each reported).
ONCE = ("unreachable", "reads", "uploads", "netrc", "outputs", "size")


class RemoteCache(RemoteFetch, RemoteUpload):
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

    # --- the end of a build -----------------------------------------------------------
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


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
