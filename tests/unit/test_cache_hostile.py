"""The remote tier against a hostile or broken server on 127.0.0.1 (tests/hostile_server.py,
started and stopped by each test): one that trickles its answers, lies about sizes, serves
hash-valid records with the wrong outputs, and the URLs that carry credentials.

Each test is issue 26's repro (defects 1-4) with its exact message: a request is bounded
by one deadline for the whole exchange and the server is asked nothing after a failure; a
record naming a huge blob is refused unread and a download is streamed (memory stays
small whatever the server sends); a record whose outputs are not the step's is a miss,
never kept locally, and `cache verify` reports such a local record; a password holding
`@`, `/`, `:` or `%40` never shows in a message, `cache stats` or its JSON.
"""

from __future__ import annotations

import json
import threading
import time
import tracemalloc

import pytest

from hostile_server import Answer, HostileServer
from vyre_build.cache.key import content_hash, make_action_key
from vyre_build.cache.record import make_record, output_set_problem
from vyre_build.cache.remote import RemoteCache
from vyre_build.cache.store import Store
from vyre_build.cache.url import parse_remote_url, redact_url
from vyre_build.cache.config import DEFAULT_REMOTE_MAX_BLOB, ConfigError, load_config
from vyre_build.core.errors import CacheError
from vyre_build.core.files import canonical_json

IDENT = {"version": "0.1.0", "source_hash": "cd" * 32}
TARGETS = ("kdesc", "spirv", "wgsl")


def entry(i: int = 0, targets=TARGETS, drop=(), add=None, sizes=None):
    """(record, outputs) of a made-up saxpy<i> entry; `drop`: output names left out of the
    record, `add`: extra {name: bytes}, `sizes`: {name: size} the record claims."""
    key = make_action_key(
        identity=IDENT,
        source=("saxpy.py", f"# saxpy {i}\n".encode()),
        imports=[],
        variants=[],
        targets=targets,
        options={},
    )
    suffix = {"kdesc": ".kdesc", "spirv": ".spv", "wgsl": ".wgsl"}
    outputs = {f"saxpy{i}{suffix[t]}": f"{t} of saxpy {i}\n".encode() for t in targets}
    outputs[f"saxpy{i}.meta.json"] = b'{"id": "saxpy"}\n'
    outputs.update(add or {})
    outputs = {n: d for n, d in outputs.items() if n not in drop}
    refs = {n: {"hash": content_hash(d), "size": len(d)} for n, d in outputs.items()}
    for name, size in (sizes or {}).items():
        refs[name]["size"] = size
    record = make_record(
        key.key, key.manifest, refs, {"source": "saxpy.py", "stems": [f"saxpy{i}"]}
    )
    return record, outputs


def serve(server: HostileServer, record: dict, outputs: dict) -> None:
    server.stored[f"ac/{record['key']}"] = canonical_json(record) + b"\n"
    for name, ref in record["outputs"].items():
        if name in outputs:
            server.stored[f"cas/{ref['hash']}"] = outputs[name]


def warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line]


def wait_for(condition) -> None:
    """Wait (bounded) for a server thread to catch up; the assertion follows it."""
    for _ in range(200):
        if condition():
            return
        time.sleep(0.01)


@pytest.fixture(name="server")
def server_fixture():
    with HostileServer() as server:
        yield server


# --- 1. a trickling server: one deadline per request, then no more requests -------------


@pytest.mark.parametrize("part", ["whole answer", "body only", "blob"])
def test_a_trickling_server_costs_one_deadline_and_is_asked_no_more(server, capsys, part):
    record, outputs = entry()
    serve(server, record, outputs)
    raw = server.stored[f"ac/{record['key']}"]
    if part == "blob":  # the record comes at once, one of its blobs a byte at a time
        ref = record["outputs"]["saxpy0.spv"]["hash"]
        server.answers[f"cas/{ref}"] = Answer(body=outputs["saxpy0.spv"], trickle=0.05)
    else:  # the 2,216-byte record of the repro: each byte well within the deadline
        body = raw + b" " * (2216 - len(raw))
        server.answers["*"] = Answer(body=body, trickle=0.05, trickle_body=part == "body only")
    remote = RemoteCache(server.url(), timeout=0.5)
    assert remote.fetch(record["key"]) is None
    asked = len(server.requests())
    for i in range(1, 5):  # later steps of the build ask the server nothing
        assert remote.fetch(entry(i)[0]["key"]) is None
    assert not remote.readable and not remote.writable
    assert remote.finish()["remote_errors"] == 1
    assert len(server.requests()) == asked
    wait_for(lambda: server.cut == 1)
    assert server.cut == 1  # the client hung up; the answer was never sent whole
    assert warnings(capsys) == [
        f"vyre cache: warning: remote cache {remote.url} is unreachable (no answer within "
        "0.5 s); this build goes on with the local cache only"
    ]


def test_the_deadline_comes_from_the_configuration(server, tmp_path, capsys):
    server.answers["*"] = Answer(body=b"x" * 2216, trickle=0.05)
    cfg = load_config(
        tmp_path,
        environ={
            "VYRE_REMOTE_CACHE": server.url(),
            "VYRE_REMOTE_CACHE_TIMEOUT": "0.5",
            "VYRE_CONFIG": str(tmp_path / "none.toml"),
        },
    )
    remote = RemoteCache(cfg.remote_url, timeout=cfg.remote_timeout_s)
    assert remote.fetch("a" * 64) is None and remote.fetch("b" * 64) is None
    assert server.requests() == ["GET ac/" + "a" * 64]
    assert "is unreachable (no answer within 0.5 s)" in warnings(capsys)[0]


def test_a_worker_process_adopts_the_failure(server, capsys):
    """What one process learned (the server is down) stops the others' requests too."""
    server.answers["*"] = Answer(body=b"x" * 100, trickle=0.05)
    notes: list = []
    first = RemoteCache(server.url(), timeout=0.3, notify=lambda k, m: notes.append(k))
    assert first.fetch("a" * 64) is None and notes == ["unreachable"]
    other = RemoteCache.from_config(first.config())
    other.merge_state(first.state())
    assert other.fetch("b" * 64) is None
    assert server.requests() == ["GET ac/" + "a" * 64] and warnings(capsys) == []


# --- 2. sizes: refused unread past the limit, streamed below it -------------------------


def test_a_record_claiming_a_huge_blob_is_refused_unread_with_one_warning(server, capsys):
    huge = 2_684_354_560  # 2.5 GiB
    bad = [entry(i, sizes={f"saxpy{i}.spv": huge}) for i in range(2)]
    for record, outputs in bad:
        serve(server, record, outputs)
    remote = RemoteCache(server.url())
    assert remote.max_blob == DEFAULT_REMOTE_MAX_BLOB == 64 << 20
    assert [remote.fetch(r["key"]) for r, _ in bad] == [None, None]
    assert server.requests() == [f"GET ac/{r['key']}" for r, _ in bad]  # no blob asked for
    counts = remote.finish()
    assert counts["remote_misses"] == 2 and counts["remote_errors"] == 0
    assert warnings(capsys) == [
        f"vyre cache: warning: remote action record {bad[0][0]['key']} from {remote.url} "
        f"names output saxpy0.spv of {huge} bytes, over the 64.0 MiB download limit "
        "(max-blob-size in [remote], VYRE_REMOTE_CACHE_MAX_BLOB_SIZE); not downloaded, "
        "the entry will be rebuilt"
    ]


def test_the_size_limit_comes_from_the_configuration(server, tmp_path, capsys):
    env = {"VYRE_REMOTE_CACHE": server.url(), "VYRE_CONFIG": str(tmp_path / "none.toml")}
    cfg = load_config(tmp_path, environ={**env, "VYRE_REMOTE_CACHE_MAX_BLOB_SIZE": "16"})
    assert cfg.remote_max_blob == 16 and cfg.sources["remote_max_blob"] == (
        "VYRE_REMOTE_CACHE_MAX_BLOB_SIZE"
    )
    (tmp_path / "vyre.toml").write_text('[remote]\nmax-blob-size = "unlimited"\n')
    assert load_config(tmp_path, environ=env).remote_max_blob is None
    (tmp_path / "vyre.toml").write_text('[remote]\nmax-blob-size = "lots"\n')
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, environ=env)
    assert str(err.value) == (
        f"max-blob-size in [remote] of {tmp_path / 'vyre.toml'} 'lots' is not a size; "
        "write e.g. 500M, 2G, 1048576 or unlimited"
    )
    record, outputs = entry()  # its blobs are 15 to 17 bytes
    serve(server, record, outputs)
    remote = RemoteCache(cfg.remote_url, max_blob=cfg.remote_max_blob)
    assert remote.fetch(record["key"]) is None
    assert (
        "names output saxpy0.kdesc of 17 bytes, over the 16 bytes download limit"
        in (warnings(capsys)[0])
    )
    assert RemoteCache(server.url(), max_blob=17).fetch(record["key"])[1] == outputs


def test_a_download_is_streamed_whatever_the_server_sends(server, capsys):
    size = 24 << 20  # under the limit: downloaded, hashed on the way, found wrong
    record, outputs = entry(sizes={"saxpy0.spv": size})
    serve(server, record, outputs)
    ref = record["outputs"]["saxpy0.spv"]["hash"]
    server.answers[f"cas/{ref}"] = Answer(body=b"\xa5" * size)
    remote = RemoteCache(server.url(), timeout=30)
    tracemalloc.start()
    try:
        assert remote.fetch(record["key"]) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20  # never a buffer of the claimed size
    actual = content_hash(b"\xa5" * size)
    assert warnings(capsys) == [
        f"vyre cache: warning: remote blob {ref} (of key {record['key']}) from {remote.url} "
        f"is corrupt: its bytes hash to {actual}; not used, the entry will be rebuilt"
    ]


@pytest.mark.parametrize(
    "answer, problem",
    [
        (Answer(length=2_684_354_560), "it is larger than the 17 bytes of its record"),
        (Answer(length=None, junk=8 << 20), "it is larger than the 17 bytes of its record"),
        (Answer(length=4), "it has 4 bytes, its record says 17"),
    ],
    ids=["claims 2.5 GiB", "endless, no length", "shorter than its record"],
)
def test_a_blob_whose_server_lies_about_its_size(server, capsys, answer, problem):
    record, outputs = entry()
    serve(server, record, outputs)
    ref = record["outputs"]["saxpy0.spv"]
    assert ref["size"] == 17
    answer.body = outputs["saxpy0.spv"]
    server.answers[f"cas/{ref['hash']}"] = answer
    remote = RemoteCache(server.url())
    assert remote.fetch(record["key"]) is None
    assert warnings(capsys) == [
        f"vyre cache: warning: remote blob {ref['hash']} (of key {record['key']}) from "
        f"{remote.url} is corrupt: {problem}; not used, the entry will be rebuilt"
    ]
    del server.answers[f"cas/{ref['hash']}"]  # the server keeps answering after it
    assert remote.fetch(record["key"])[1] == outputs
    assert remote.finish()["remote_corrupt"] == 1


# --- 3. a hash-valid record with the wrong outputs -------------------------------------


EXPECTED = ["saxpy0.kdesc", "saxpy0.meta.json", "saxpy0.spv", "saxpy0.wgsl"]


@pytest.mark.parametrize("declared", [True, False], ids=["declared outputs", "implied"])
def test_a_record_with_the_wrong_outputs_is_a_miss_warned_once(server, capsys, declared):
    lacking = entry(0, drop=["saxpy0.spv"])
    extra = entry(0, add={"saxpy0.x.wgsl": b"// more\n"})
    remote = RemoteCache(server.url())
    serve(server, *lacking)
    assert remote.fetch(lacking[0]["key"], EXPECTED if declared else None) is None
    serve(server, *extra)
    assert remote.fetch(extra[0]["key"], EXPECTED if declared else None) is None
    good = entry(0)
    serve(server, *good)
    assert remote.fetch(good[0]["key"], EXPECTED if declared else None)[1] == good[1]
    counts = remote.finish()
    assert counts["remote_corrupt"] == 2 and counts["remote_hits"] == 1
    if declared:  # the names alone decide: no blob of a wrong record is downloaded
        blobs = [r for r in server.requests() if r.startswith("GET cas/")]
        assert len(blobs) == 4
    assert warnings(capsys) == [
        f"vyre cache: warning: remote action record {lacking[0]['key']} from {remote.url} "
        "is corrupt: its outputs are not those of its step (missing saxpy0.spv); not used, "
        "the entry will be rebuilt"
    ]


def test_output_set_problems_name_what_is_missing_and_extra():
    record, outputs = entry(0, drop=["saxpy0.spv"], add={"saxpy0.x.wgsl": b"1"})
    assert output_set_problem(record, EXPECTED) == (
        "its outputs are not those of its step (missing saxpy0.spv; saxpy0.x.wgsl not expected)"
    )
    assert output_set_problem(record, read=outputs.get) == (
        "its outputs are not those of its step (missing saxpy0.spv; saxpy0.x.wgsl not expected)"
    )
    # A kernel whose metadata says it gets no WGSL (cooperative matrices) has none.
    coop, coop_outputs = entry(0, drop=["saxpy0.wgsl"])
    assert output_set_problem(coop, read=coop_outputs.get) == (
        "its outputs are not those of its step (missing saxpy0.wgsl)"
    )
    coop_outputs["saxpy0.meta.json"] = b'{"skipped": {"wgsl": "uses cooperative matrices"}}'
    assert output_set_problem(coop, read=coop_outputs.get) is None
    good, good_outputs = entry(0)
    assert output_set_problem(good, EXPECTED) is None
    assert output_set_problem(good, read=good_outputs.get) is None
    # A record stored through the Store API without build info implies no outputs.
    assert output_set_problem(dict(good, info={}), read=good_outputs.get) is None
    bad_stems = dict(good, info={"stems": "saxpy0"})
    assert output_set_problem(bad_stems, read=good_outputs.get) == "its info has malformed stems"


SAXPY = """\
from vyre_build.lang import Buffer, f32, global_id, kernel


@kernel(workgroup_size=64)
def saxpy(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32):
    i = global_id().x
    if i < len(y):
        y[i] = a * x[i] + y[i]
"""
SAXPY_OUTPUTS = ["saxpy.kdesc", "saxpy.meta.json", "saxpy.spv", "saxpy.wgsl"]


def test_a_build_treats_the_repro_record_as_a_miss_and_never_keeps_it(server, tmp_path, capsys):
    """The repro: a hash-valid remote record of saxpy that lacks saxpy.spv."""
    from vyre_build.build.step import build_kernel_file

    src = tmp_path / "kernels" / "saxpy.py"
    src.parent.mkdir()
    src.write_text(SAXPY)
    first = Store(tmp_path / "first")
    built = build_kernel_file(str(src), str(tmp_path / "out1"), store=first)
    good = first.get_record(built.key.key)
    refs = {n: r for n, r in good["outputs"].items() if n != "saxpy.spv"}
    bad = make_record(good["key"], good["manifest"], refs, good["info"])
    outputs = {n: first.get_blob(r["hash"]) for n, r in refs.items()}
    serve(server, bad, outputs)
    store = Store(tmp_path / "second")
    remote = RemoteCache(server.url())
    result = build_kernel_file(
        str(src), str(tmp_path / "out2"), store=store, remote=remote, expected=SAXPY_OUTPUTS
    )
    assert not result.hit and result.tier is None  # compiled here, not the bad record
    assert sorted(p.name for p in (tmp_path / "out2").iterdir()) == SAXPY_OUTPUTS
    assert sorted(store.get_record(built.key.key)["outputs"]) == SAXPY_OUTPUTS
    assert remote.finish()["remote_corrupt"] == 1
    assert warnings(capsys) == [
        f"vyre cache: warning: remote action record {built.key.key} from {remote.url} is "
        "corrupt: its outputs are not those of its step (missing saxpy.spv); not used, the "
        "entry will be rebuilt"
    ]


def test_a_local_record_with_the_wrong_outputs_is_reported_by_verify_and_rebuilt(tmp_path, capsys):
    from vyre_build.build.step import build_kernel_file
    from vyre_build.cli import main

    src = tmp_path / "kernels" / "saxpy.py"
    src.parent.mkdir()
    src.write_text(SAXPY)
    store = Store(tmp_path / "c")
    key = build_kernel_file(str(src), str(tmp_path / "out"), store=store).key.key
    good = store.get_record(key)
    # What an older client kept from a bad remote: the record without saxpy.spv.
    refs = {n: r for n, r in good["outputs"].items() if n != "saxpy.spv"}
    bad = make_record(key, good["manifest"], refs, good["info"])
    (tmp_path / "c" / "ac" / key[:2] / f"{key}.json").chmod(0o644)
    store.put_record_bytes(key, canonical_json(bad) + b"\n")
    problem = "its outputs are not those of its step (missing saxpy.spv)"
    cd = ["--cache-dir", str(tmp_path / "c")]
    assert main(["cache", "verify", *cd]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert f"  CORRUPT record {key}: {problem}" in lines and lines[-1] == "FAILED"
    assert lines[-2].startswith("found 1 corrupt record; nothing was changed: ")
    assert main(["cache", "verify", *cd, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["corrupt_records"] == [
        {"key": key, "problem": problem}
    ]
    # A build's lookup finds it wrong too: reported, removed, rebuilt right.
    again = build_kernel_file(str(src), str(tmp_path / "out"), store=store, expected=SAXPY_OUTPUTS)
    assert not again.hit and sorted(store.get_record(key)["outputs"]) == SAXPY_OUTPUTS
    assert warnings(capsys) == [
        f"vyre cache: warning: action record {key} is corrupt: {problem}; removed, the "
        "entry will be rebuilt"
    ]
    assert main(["cache", "verify", *cd]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "OK"


MM = """\
from vyre_build.lang import *
@kernel(workgroup_size=32, grid=32)
def mm(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "w"]):
    acc = coop_mma(coop_load_a(a, 0, 16, 16, 16), coop_load_b(b, 0, 16, 16, 16), coop_fill(f32, 16, 16, 0.0))
    coop_store(acc, c, 0, 16)
"""


def test_a_kernel_that_gets_no_wgsl_has_the_right_outputs(server, tmp_path, capsys):
    """Its metadata says it skips WGSL: no output-set check takes that for a lack."""
    from vyre_build.build.step import build_kernel_file
    from vyre_build.cli import main

    src = tmp_path / "kernels" / "mm.py"
    src.parent.mkdir()
    src.write_text(MM)
    store = Store(tmp_path / "c")
    key = build_kernel_file(str(src), str(tmp_path / "out"), store=store).key.key
    record = store.get_record(key)
    assert sorted(record["outputs"]) == ["mm.kdesc", "mm.meta.json", "mm.spv"]
    assert main(["cache", "verify", "--cache-dir", str(tmp_path / "c")]) == 0
    serve(server, record, {n: store.get_blob(r["hash"]) for n, r in record["outputs"].items()})
    remote = RemoteCache(server.url())
    assert sorted(remote.fetch(key)[1]) == ["mm.kdesc", "mm.meta.json", "mm.spv"]
    assert remote.finish()["remote_hits"] == 1
    said = capsys.readouterr()
    assert said.out.splitlines()[-1] == "OK" and said.err == ""


# --- 4. credentials: parsed once, redacted at the last @ --------------------------------

SECRET = "S3cr3t"
PASSWORDS = {  # as written in the URL -> as sent
    "p@ss-S3cr3t": "p@ss-S3cr3t",
    "p:ss-S3cr3t": "p:ss-S3cr3t",
    "p%40ss-S3cr3t": "p@ss-S3cr3t",
    "p%2Fss-S3cr3t": "p/ss-S3cr3t",
}


def stats(monkeypatch, tmp_path, capsys, url: str, *extra) -> tuple[int, str, str]:
    from vyre_build.cli import main

    (tmp_path / "cache").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path)  # no project config of the checkout's
    monkeypatch.setenv("VYRE_REMOTE_CACHE", url)
    monkeypatch.setenv("VYRE_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("VYRE_REMOTE_CACHE_AUTH", raising=False)
    monkeypatch.delenv("VYRE_REMOTE_CACHE_MODE", raising=False)
    rc = main(["cache", "stats", "--cache-dir", str(tmp_path / "cache"), *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("written", sorted(PASSWORDS))
def test_a_password_never_shows_and_is_sent_as_written(written, tmp_path, monkeypatch, capsys):
    with HostileServer("ci", PASSWORDS[written]) as server:
        url = server.url(f"ci:{written}")
        remote = RemoteCache(url, environ={})
        assert remote.url == f"http://127.0.0.1:{server.port}/vyre"
        assert remote.mode == "read-write" and remote.credentials_from == "the URL"
        remote.upload(*entry(), {})
        assert remote.finish()["uploads"] == 1
        assert set(server.credentials()) == {f"ci:{PASSWORDS[written]}"}
        rc, out, err = stats(monkeypatch, tmp_path, capsys, url)
        assert rc == 0 and err == ""
        assert out.splitlines()[-1] == (
            f"Remote storage:    {remote.url} (read-write, with credentials from the URL; "
            "from VYRE_REMOTE_CACHE)"
        )
        rc, out, _ = stats(monkeypatch, tmp_path, capsys, url, "--json")
        shown = json.loads(out)["remote"]
        assert shown["url"] == remote.url and shown["credentials"] == "the URL"
        assert SECRET not in out and "ss-" not in out
        wrong = RemoteCache(server.url(f"ci:{written}x"), environ={})
        wrong.upload(*entry(), {})
        wrong.finish()
        server.close()
        gone = RemoteCache(url)
        assert gone.fetch("a" * 64) is None
    said = warnings(capsys)
    assert said == [
        f"vyre cache: warning: remote cache {remote.url} refused an upload (HTTP 401 "
        "Unauthorized): check the credentials (from the URL); no more uploads in this build",
        f"vyre cache: warning: remote cache {remote.url} is unreachable (Connection refused); "
        "this build goes on with the local cache only",
    ]
    assert SECRET not in repr(parse_remote_url(url)) and SECRET not in redact_url(url)


def test_the_repro_url_is_shown_without_its_password(tmp_path, monkeypatch, capsys):
    url = "http://ci:p@ss-S3cr3t@127.0.0.1:9/vyre"
    for extra in ([], ["--json"]):
        rc, out, err = stats(monkeypatch, tmp_path, capsys, url, *extra)
        assert rc == 0 and SECRET not in out + err and "ss-" not in out + err
        if not extra:
            assert out.splitlines()[-1] == (
                "Remote storage:    http://127.0.0.1:9/vyre (read-write, with credentials "
                "from the URL; from VYRE_REMOTE_CACHE)"
            )
    assert json.loads(out)["remote"]["url"] == "http://127.0.0.1:9/vyre"
    rc, out, _ = stats(monkeypatch, tmp_path, capsys, "http://127.0.0.1:9/vyre")
    assert out.splitlines()[-1] == (
        "Remote storage:    http://127.0.0.1:9/vyre (read-only, no credentials given; from "
        "VYRE_REMOTE_CACHE)"
    )


@pytest.mark.parametrize(
    "url, message",
    [
        (
            "http://ci:p/ss-S3cr3t@127.0.0.1:9/vyre",
            "remote cache URL 'http://127.0.0.1:9/vyre' has an '@' after its host: in a "
            "password, write '/' as %2F, '?' as %3F and '#' as %23",
        ),
        (
            "http://ci:99/ss-S3cr3t@127.0.0.1:9/vyre",  # urllib: host "ci", port 99
            "remote cache URL 'http://127.0.0.1:9/vyre' has an '@' after its host: in a "
            "password, write '/' as %2F, '?' as %3F and '#' as %23",
        ),
        (
            "http://ci:p#ss-S3cr3t@127.0.0.1:9/vyre",
            "remote cache URL 'http://127.0.0.1:9/vyre' has an '@' after its host: in a "
            "password, write '/' as %2F, '?' as %3F and '#' as %23",
        ),
        (
            "http://ci:p@ss:S3cr3t@127.0.0.1:99999/vyre",
            "remote cache URL 'http://127.0.0.1:99999/vyre' has a bad port",
        ),
        (
            "ftp://ci:p@ss-S3cr3t@127.0.0.1/vyre",
            "remote cache URL 'ftp://127.0.0.1/vyre' is not http(s)://host/...",
        ),
    ],
    ids=["slash", "slash making a port", "hash", "bad port", "not http"],
)
def test_a_bad_url_is_named_without_its_password(url, message, tmp_path, monkeypatch, capsys):
    with pytest.raises(CacheError) as err:
        RemoteCache(url)
    assert str(err.value) == message
    rc, out, err_text = stats(monkeypatch, tmp_path, capsys, url)
    assert rc == 1 and out == "" and SECRET not in err_text
    if not url.startswith("ftp"):  # the config names the variable, then the same words
        assert err_text == f"VYRE_REMOTE_CACHE: {message}\n"


def test_redaction_covers_the_last_at_of_the_authority():
    assert redact_url("http://a@b@c:1/p") == "http://c:1/p"
    assert redact_url("https://u:%40@[::1]:8/x") == "https://[::1]:8/x"
    assert redact_url("http://host/plain") == "http://host/plain"
    assert redact_url("ci:p@ss@host") == "ci:host"  # no scheme: still nothing of it
    parsed = parse_remote_url("https://ci:p%40ss@Cache.Example:8443/team/")
    assert (parsed.host, parsed.port, parsed.prefix) == ("cache.example", 8443, "/team")
    assert (parsed.user, parsed.password) == ("ci", "p@ss")
    assert parsed.shown == "https://cache.example:8443/team"


def test_the_hostile_server_stops_its_trickle_when_closed():
    server = HostileServer()
    server.answers["*"] = Answer(body=b"x" * 10_000, trickle=0.01)
    remote = RemoteCache(server.url(), timeout=0.2)
    done = threading.Event()
    threading.Thread(target=lambda: (remote.fetch("a" * 64), done.set()), daemon=True).start()
    done.wait(10)
    server.close()
    assert done.is_set() and server.requests() == ["GET ac/" + "a" * 64]


def test_an_upload_answered_with_a_body_is_stored():
    """A server whose 201 carries a page (or a huge Content-Length) is not a failure."""
    with HostileServer() as server:
        server.answers["*"] = Answer(201, b"<html>Created</html>" * 100)
        remote = RemoteCache(server.url(), mode="read-write", environ={})
        remote.upload(*entry(), {})
        assert remote.finish()["uploads"] == 1
        assert len(server.requests("PUT")) == 5  # 4 blobs, then the record
