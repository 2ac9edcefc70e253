"""The remote tier against a real nginx WebDAV server (and a server that hangs, and one
that answers errors): layout, checks of every download, credentials, one warning per
failure kind, and no request after the server was found down."""

from __future__ import annotations

import http.server
import sys
import threading
from pathlib import Path

import pytest

from vyre_build.cache.key import content_hash, make_action_key
from vyre_build.cache.record import make_record
from vyre_build.cache.remote import RemoteCache
from vyre_build.core.errors import CacheError
from vyre_build.core.files import canonical_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nginx_server import PASSWORD, USER, BlackHole, nginx_fixture  # noqa: E402, F401 - fixture

IDENT = {"version": "0.1.0", "source_hash": "ab" * 32}


def entry(i: int = 0):
    """(record, outputs, inputs) of a small made-up entry."""
    source = f"# kernel k{i}\n".encode()
    key = make_action_key(
        identity=IDENT,
        source=("k.py", source),
        imports=[("h.py", b"# helper\n")],
        variants=[],
        targets=["wgsl"],
        options={},
    )
    outputs = {f"k{i}.wgsl": f"// wgsl {i}\n".encode(), f"k{i}.meta.json": b"{}\n"}
    refs = {n: {"hash": content_hash(d), "size": len(d)} for n, d in outputs.items()}
    record = make_record(key.key, key.manifest, refs, {"source": "k.py", "stems": [f"k{i}"]})
    return record, outputs, {"k.py": source, "h.py": b"# helper\n"}


def warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line]


def fill(nginx, *entries) -> None:
    writer = RemoteCache(nginx.url(USER, PASSWORD))
    for record, outputs, inputs in entries:
        writer.upload(record, outputs, inputs)
    assert writer.finish()["uploads"] == len(entries)


def test_upload_then_fetch_uses_the_documented_layout(nginx, capsys):
    record, outputs, inputs = entry()
    writer = RemoteCache(nginx.url(USER, PASSWORD))
    assert writer.mode == "read-write" and writer.credentials_from == "the URL"
    writer.upload(record, outputs, inputs)
    writer.upload(record, outputs, inputs)  # blobs already sent are not sent again
    counts = writer.finish()
    assert counts["uploads"] == 2 and counts["upload_errors"] == 0
    key = record["key"]
    assert (nginx.dav / "ac" / key).read_bytes() == canonical_json(record) + b"\n"
    names = {p.name for p in nginx.blob_files()}
    assert names == {content_hash(d) for d in [*outputs.values(), *inputs.values()]}
    puts = [r for r in nginx.requests() if r.startswith("PUT /vyre/cas/")]
    assert len(puts) == 4  # 2 outputs + 2 inputs, each once
    assert [r for r in nginx.requests() if r.startswith("HEAD")] == []  # small inputs: PUT
    big = {"big.py": b"#" * (64 << 10 | 1)}
    again = RemoteCache(nginx.url(USER, PASSWORD))
    again.upload(record, outputs, big)
    again.upload(record, outputs, big)
    assert again.finish()["uploads"] == 2
    digest = content_hash(big["big.py"])
    assert [r for r in nginx.requests() if r.startswith("HEAD")] == [
        f"HEAD /vyre/cas/{digest} HTTP/1.1 404"
    ]  # a large input is asked for first, and only once
    reader = RemoteCache(nginx.url())
    assert reader.mode == "read-only" and reader.credentials_from is None
    got = reader.fetch(key)
    assert got is not None and got[1] == outputs and got[0] == record
    assert reader.fetch("0" * 64) is None
    assert reader.finish() == {
        "remote_hits": 1,
        "remote_misses": 1,
        "remote_errors": 0,
        "remote_corrupt": 0,
        "uploads": 0,
        "upload_errors": 0,
    }
    assert warnings(capsys) == []


def test_mode_is_read_only_unless_set_or_credentials_are_given(nginx, tmp_path, monkeypatch):
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    assert RemoteCache(nginx.url()).mode == "read-only"
    assert RemoteCache(nginx.url(), mode="read-write").mode == "read-write"
    assert RemoteCache(nginx.url(USER, PASSWORD), mode="read-only").mode == "read-only"
    env = {"VYRE_REMOTE_CACHE_AUTH": f"{USER}:{PASSWORD}", "NETRC": str(tmp_path / "none")}
    from_env = RemoteCache(nginx.url(), environ=env)
    assert from_env.mode == "read-write" and from_env.credentials_from == "VYRE_REMOTE_CACHE_AUTH"
    record, outputs, inputs = entry()
    read_only = RemoteCache(nginx.url(USER, PASSWORD), mode="read-only")
    read_only.upload(record, outputs, inputs)
    assert read_only.finish()["uploads"] == 0 and nginx.record_files() == []
    from_env.upload(record, outputs, inputs)
    assert from_env.finish()["uploads"] == 1


def test_netrc_credentials_and_an_unreadable_netrc(nginx, tmp_path, capsys):
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {USER} password {PASSWORD}\n")
    netrc.chmod(0o600)
    remote = RemoteCache(nginx.url(), environ={"NETRC": str(netrc)})
    assert remote.mode == "read-write" and remote.credentials_from == str(netrc)
    record, outputs, inputs = entry()
    remote.upload(record, outputs, inputs)
    assert remote.finish()["uploads"] == 1
    netrc.write_text("machine 127.0.0.1 login ci password\n  hunter2secret junk\n")
    broken = RemoteCache(nginx.url(), environ={"NETRC": str(netrc)})
    assert broken.mode == "read-only"
    out = warnings(capsys)
    assert len(out) == 1 and out[0].startswith(
        f"vyre cache: warning: cannot read credentials from {netrc} (line "
    )
    assert out[0].endswith("); not used") and "hunter2secret" not in out[0]


def test_a_tampered_blob_or_record_is_reported_and_never_served(nginx, capsys):
    record, outputs, inputs = entry()
    fill(nginx, (record, outputs, inputs))
    ref = record["outputs"]["k0.wgsl"]["hash"]
    blob = nginx.dav / "cas" / ref
    data = bytearray(blob.read_bytes())
    data[0] ^= 0x20
    blob.write_bytes(bytes(data))
    reader = RemoteCache(nginx.url())
    assert reader.fetch(record["key"]) is None
    actual = content_hash(bytes(data))
    assert warnings(capsys) == [
        f"vyre cache: warning: remote blob {ref} (of key {record['key']}) from {reader.url} "
        f"is corrupt: its bytes hash to {actual}; not used, the entry will be rebuilt"
    ]
    blob.write_bytes(bytes(data) + b"more")  # longer than its record says: not read whole
    assert reader.fetch(record["key"]) is None
    assert "is larger than the 10 bytes of its record" in warnings(capsys)[0]
    rec = nginx.dav / "ac" / record["key"]
    rec.write_bytes(rec.read_bytes().replace(b'"k0.wgsl"', b'"../../evil"'))
    assert reader.fetch(record["key"]) is None
    assert warnings(capsys) == [
        f"vyre cache: warning: remote action record {record['key']} from {reader.url} is "
        "corrupt: checksum mismatch; not used, the entry will be rebuilt"
    ]
    rec.write_bytes(b"[" * 100000)
    assert reader.fetch(record["key"]) is None
    assert "its JSON is nested too deeply" in warnings(capsys)[0]
    counts = reader.finish()
    assert counts["remote_corrupt"] == 4 and counts["remote_hits"] == 0


def test_bad_credentials_are_one_warning_and_never_shown(nginx, capsys):
    remote = RemoteCache(nginx.url(USER, "wrong-pw"))
    for i in range(3):
        remote.upload(*entry(i))
    counts = remote.finish()
    assert counts["upload_errors"] == 1 and counts["uploads"] == 0
    assert warnings(capsys) == [
        f"vyre cache: warning: remote cache {remote.url} refused an upload (HTTP 401 "
        "Unauthorized): check the credentials (from the URL); no more uploads in this build"
    ]
    assert "wrong-pw" not in remote.url and nginx.record_files() == []
    anonymous = RemoteCache(nginx.url(), mode="read-write", environ={})
    anonymous.upload(*entry())
    anonymous.finish()
    assert "no credentials were given (set VYRE_REMOTE_CACHE_AUTH" in warnings(capsys)[0]


def test_a_stopped_server_is_one_warning_and_asked_no_more(nginx, capsys):
    remote = RemoteCache(nginx.url())
    assert remote.fetch("1" * 64) is None  # a miss: the connection is kept alive
    nginx.stop()
    assert remote.fetch("2" * 64) is None and remote.fetch("3" * 64) is None
    assert not remote.readable and not remote.writable
    assert warnings(capsys) == [
        f"vyre cache: warning: remote cache {remote.url} is unreachable (Connection "
        "refused); this build goes on with the local cache only"
    ]
    assert remote.finish()["remote_errors"] == 1


def test_a_server_that_hangs_costs_one_timeout(capsys):
    hole = BlackHole()
    try:
        remote = RemoteCache(hole.url(), timeout=0.3)
        for i in range(5):
            assert remote.fetch(f"{i}" * 64) is None
        remote.upload(*entry())  # read-only anyway; and the server is down
        assert remote.finish()["remote_errors"] == 1
        assert hole.accepted == 1  # one request waited; none was sent after it
    finally:
        hole.close()
    assert warnings(capsys) == [
        f"vyre cache: warning: remote cache {remote.url} is unreachable (no answer within "
        "0.3 s); this build goes on with the local cache only"
    ]


class _Failing(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_server_answering_errors_is_one_warning(capsys):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        remote = RemoteCache(f"http://127.0.0.1:{server.server_address[1]}/c")
        assert remote.fetch("1" * 64) is None and remote.fetch("2" * 64) is None
        assert remote.finish()["remote_errors"] == 1
    finally:
        server.shutdown()
    assert warnings(capsys) == [
        f"vyre cache: warning: remote cache {remote.url} is unreachable (it answered HTTP "
        "503 Service Unavailable); this build goes on with the local cache only"
    ]


def test_connections_are_reused_and_renewed_when_the_server_closes_them(tmp_path, capsys):
    from nginx_server import Nginx

    server = Nginx(tmp_path / "ng", keepalive_requests=3).start()
    try:
        entries = [entry(i) for i in range(4)]
        fill(server, *entries)
        remote = RemoteCache(server.url())
        for record, outputs, _ in entries:
            got = remote.fetch(record["key"])
            assert got is not None and got[1] == outputs
        assert remote.finish()["remote_hits"] == 4
    finally:
        server.stop()
    assert warnings(capsys) == []


def test_bad_urls_are_named_without_their_credentials():
    with pytest.raises(CacheError) as err:
        RemoteCache("ftp://user:hunter2@host/x")
    assert str(err.value) == "remote cache URL 'ftp://host/x' is not http(s)://host/..."
    with pytest.raises(CacheError, match="has a bad port"):
        RemoteCache("http://u:hunter2@host:99999/x")
    assert RemoteCache("http://u:p@cache.example:8080/team/").url == (
        "http://cache.example:8080/team"
    )
