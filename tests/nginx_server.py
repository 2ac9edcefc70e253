"""A real HTTP cache server for the remote-tier tests: nginx with its WebDAV module, run
from a temp config on 127.0.0.1 (Debian's `nginx` package; `.ci/run` installs it).

Layout and access as a team would set it up: GET/HEAD anonymous, PUT with basic auth
(`ci` / `secret`), `dav_methods PUT; create_full_put_path on;`. Without nginx the tests
that need it skip, except under CI=true, where they fail (a CI image without it must
not pass silently).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

USER, PASSWORD = "ci", "secret"
PREFIX = "/vyre"

CONFIG = """\
{user}
worker_processes 1;
daemon off;
master_process off;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 128; }}
http {{
    access_log {root}/access.log;
    client_body_temp_path {root}/tmp;
    proxy_temp_path {root}/tmp;
    fastcgi_temp_path {root}/tmp;
    uwsgi_temp_path {root}/tmp;
    scgi_temp_path {root}/tmp;
    keepalive_requests {keepalive_requests};
    server {{
        listen 127.0.0.1:{port};
        location {prefix}/ {{
            alias {root}/dav/;
            dav_methods PUT;
            create_full_put_path on;
            client_max_body_size 64m;
            log_not_found off;
            limit_except GET HEAD {{
                auth_basic "vyre cache";
                auth_basic_user_file {root}/htpasswd;
            }}
        }}
    }}
}}
"""


def nginx_binary() -> str:
    """nginx's path, or skip (fail under CI=true) when it is not installed."""
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None
    )
    if found is None:
        message = "nginx is not installed (apt-get install -y nginx; .ci/run does)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """One nginx serving `root/dav` under http://127.0.0.1:<port>/vyre."""

    def __init__(self, root: Path, keepalive_requests: int = 1000):
        self.root = root
        self.dav = root / "dav"
        self.keepalive_requests = keepalive_requests
        self.proc: subprocess.Popen | None = None
        self.port = 0
        for d in (self.dav, root / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        (root / "htpasswd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")

    def url(self, user: str | None = None, password: str | None = None) -> str:
        auth = f"{user}:{password}@" if user is not None else ""
        return f"http://{auth}127.0.0.1:{self.port}{PREFIX}"

    def start(self) -> "Nginx":
        binary = nginx_binary()
        for _ in range(5):
            self.port = _free_port()
            conf = self.root / "nginx.conf"
            conf.write_text(
                CONFIG.format(
                    user="user root;" if os.geteuid() == 0 else "",
                    root=self.root,
                    port=self.port,
                    prefix=PREFIX,
                    keepalive_requests=self.keepalive_requests,
                )
            )
            self.proc = subprocess.Popen(
                [binary, "-e", str(self.root / "error.log"), "-p", str(self.root), "-c", str(conf)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                    return self
                except OSError:
                    time.sleep(0.02)
            self.stop()
        raise RuntimeError(f"nginx did not start: {(self.root / 'error.log').read_text()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def requests(self) -> list[str]:
        """Request lines of the access log ("GET /vyre/ac/... HTTP/1.1" 404), in order."""
        log = self.root / "access.log"
        if not log.exists():
            return []
        return [
            line.split('"')[1] + " " + line.split('"')[2].split()[0]
            for line in log.read_text().splitlines()
            if '"' in line
        ]

    def blob_files(self) -> list[Path]:
        return sorted((self.dav / "cas").glob("*")) if (self.dav / "cas").exists() else []

    def record_files(self) -> list[Path]:
        return sorted((self.dav / "ac").glob("*")) if (self.dav / "ac").exists() else []


@pytest.fixture(name="nginx")
def nginx_fixture(tmp_path):
    """A started nginx WebDAV cache server, stopped after the test."""
    server = Nginx(tmp_path / "nginx").start()
    yield server
    server.stop()


class BlackHole:
    """A TCP server that accepts connections and never answers: a remote that hangs.
    Counts the connections it accepted."""

    def __init__(self):
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._conns: list = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self._conns.append(conn)

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PREFIX}"

    def close(self) -> None:
        self.sock.close()
        for c in self._conns:
            c.close()
