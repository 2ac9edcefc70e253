"""A hostile or broken remote cache server for the tests, on 127.0.0.1 only.

`HostileServer` speaks just enough HTTP/1.1 (keep-alive, Content-Length bodies) to be a
cache server: a PUT stores its body under its path (with basic auth when credentials are
set, else 401), a GET or HEAD answers from what is stored (404 when absent). Per path, or
for every path, a scripted `Answer` replaces that: any status and body, a Content-Length
that lies (or none: the body ends when the connection closes), bytes trickled with a
pause between them, or junk sent on after the body. Every request is logged with its
Authorization header; `cut` counts answers the client hung up on before they were sent
whole.

Every loop is bounded (an answer is at most `Answer.junk` + its body, each send waits at
most a few seconds) and `close()` stops the server and every connection, so a test that
fails never leaves a thread spinning.
"""

from __future__ import annotations

import base64
import socket
import socketserver
import threading
import time
from dataclasses import dataclass

PREFIX = "/vyre"
_SEND_TIMEOUT_S = 5.0


@dataclass
class Answer:
    """A scripted answer.

    status/body: what is answered. length: the Content-Length sent ("auto": the body's
    true length; None: no header, the body ends when the connection closes; an int: a
    lie). trickle: seconds between single bytes (of the whole answer, or of the body only
    with `trickle_body`). junk: bytes of junk sent after the body (a body longer than
    its Content-Length, or endless without one)."""

    status: int = 200
    body: bytes = b""
    length: int | str | None = "auto"
    trickle: float = 0.0
    trickle_body: bool = False
    junk: int = 0


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class HostileServer:
    """A scripted HTTP cache server on 127.0.0.1 (see the module)."""

    def __init__(self, user: str | None = None, password: str | None = None):
        self.auth = None
        if user is not None:
            self.auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.answers: dict[str, Answer] = {}  # path under the prefix ("ac/<key>") or "*"
        self.stored: dict[str, bytes] = {}
        self.log: list[tuple[str, str, str | None]] = []  # (method, path, Authorization)
        self.cut = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                owner._serve(self.request)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def url(self, userinfo: str | None = None) -> str:
        """http://[userinfo@]127.0.0.1:<port>/vyre (userinfo as written, not quoted)."""
        auth = f"{userinfo}@" if userinfo is not None else ""
        return f"http://{auth}127.0.0.1:{self.port}{PREFIX}"

    def requests(self, method: str | None = None) -> list[str]:
        """'GET ac/<key>' lines of the requests so far (of one method, if given)."""
        with self._lock:
            return [f"{m} {p}" for m, p, _ in self.log if method in (None, m)]

    def credentials(self) -> list[str]:
        """The user:password of every request that sent basic auth, decoded."""
        with self._lock:
            heads = [a for _, _, a in self.log if a and a.startswith("Basic ")]
        return [base64.b64decode(a[6:]).decode() for a in heads]

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def __enter__(self) -> "HostileServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- serving ----------------------------------------------------------------------
    def _serve(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.append(conn)
        conn.settimeout(_SEND_TIMEOUT_S)
        reader = conn.makefile("rb")
        try:
            while not self._stop.is_set():
                request = self._read_request(reader)
                if request is None:
                    return
                if not self._answer(conn, *request):
                    return
        except OSError:
            return
        finally:
            reader.close()

    def _read_request(self, reader):
        line = reader.readline(8192)
        if not line.strip():
            return None
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = {}
        for _ in range(100):
            h = reader.readline(8192)
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = reader.read(int(headers.get("content-length", "0")))
        path = target[len(PREFIX) + 1 :] if target.startswith(PREFIX + "/") else target
        with self._lock:
            self.log.append((method, path, headers.get("authorization")))
        return method, path, headers, body

    def _answer(self, conn, method: str, path: str, headers: dict, body: bytes) -> bool:
        """Send one answer; False when the connection is to be closed."""
        scripted = self.answers.get(path) or self.answers.get("*")
        if method == "PUT" and scripted is None:
            if self.auth is not None and headers.get("authorization") != self.auth:
                scripted = Answer(401, b"")
            else:
                with self._lock:
                    self.stored[path] = body
                scripted = Answer(201, b"")
        if scripted is None:
            data = self.stored.get(path)
            scripted = Answer(404, b"") if data is None else Answer(200, data)
        reason = {200: "OK", 201: "Created", 401: "Unauthorized", 404: "Not Found"}.get(
            scripted.status, "Whatever"
        )
        length = len(scripted.body) if scripted.length == "auto" else scripted.length
        head = f"HTTP/1.1 {scripted.status} {reason}\r\n"
        if length is not None:
            head += f"Content-Length: {length}\r\n"
        else:
            head += "Connection: close\r\n"
        head = (head + "\r\n").encode()
        body = b"" if method == "HEAD" else scripted.body
        try:
            if scripted.trickle and not scripted.trickle_body:
                self._trickle(conn, head + body, scripted.trickle)
            else:
                conn.sendall(head)
                if scripted.trickle:
                    self._trickle(conn, body, scripted.trickle)
                else:
                    conn.sendall(body)
            sent = 0
            while sent < scripted.junk and not self._stop.is_set():
                n = min(64 << 10, scripted.junk - sent)
                conn.sendall(b"\xa5" * n)
                sent += n
        except OSError:
            with self._lock:
                self.cut += 1
            return False
        return length is not None

    def _trickle(self, conn, data: bytes, pause: float) -> None:
        for i in range(len(data)):
            if self._stop.is_set():
                raise ConnectionAbortedError("the server is closing")
            conn.sendall(data[i : i + 1])
            time.sleep(pause)
