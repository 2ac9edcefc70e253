"""End to end: real scons builds against a hostile cache server on 127.0.0.1
(tests/hostile_server.py, in this process; the build in a subprocess).

Issue 26's repros through a whole build: a server that trickles its answers costs the
build one deadline per process (set short in the configuration) and one warning, and is
asked nothing after that; hash-valid records with the wrong outputs are misses (one
warning for the build), are never kept locally, and a build with the remote removed
afterwards is all local hits.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from scons_helpers import cache_json, outputs, run_scons, warning_lines, write_tree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostile_server import Answer, HostileServer  # noqa: E402

from vyre_build.cache.record import make_record  # noqa: E402
from vyre_build.core.files import canonical_json  # noqa: E402

pytestmark = pytest.mark.scons

N = 8


def last_build(cache: Path) -> dict:
    return cache_json(cache, "stats")["last_build"]


@pytest.mark.parametrize("jobs", ["-j1", "-j2"])
def test_a_trickling_server_costs_the_build_one_deadline(tmp_path, jobs):
    root = write_tree(tmp_path / "proj", n=N)
    with HostileServer() as server:
        server.answers["*"] = Answer(body=b"x" * 2216, trickle=0.05)
        env = {"VYRE_REMOTE_CACHE": server.url(), "VYRE_REMOTE_CACHE_TIMEOUT": "0.5"}
        proc = run_scons(root, tmp_path / "cache", jobs, env=env)
        asked = server.requests()
    assert warning_lines(proc) == [
        f"vyre cache: warning: remote cache {server.url()} is unreachable (no answer within "
        "0.5 s); this build goes on with the local cache only"
    ]
    # At most one request per process of the build (-j2: the SCons process and 2 workers).
    assert 1 <= len(asked) <= (1 if jobs == "-j1" else 3)
    stats = last_build(tmp_path / "cache")
    assert stats["misses"] == N and stats["remote_hits"] == 0
    assert len(outputs(root)) == 4 * N + 1
    assert cache_json(tmp_path / "cache", "verify")["ok"]


def test_records_with_the_wrong_outputs_are_misses_and_never_kept(tmp_path):
    ci = write_tree(tmp_path / "ci", n=N)
    with HostileServer("ci", "secret") as server:
        env = {"VYRE_REMOTE_CACHE": server.url(), "VYRE_REMOTE_CACHE_AUTH": "ci:secret"}
        run_scons(ci, tmp_path / "ci-cache", env=env)
        assert last_build(tmp_path / "ci-cache")["uploads"] == N
        entries = {
            e["stems"][0]: e["key"] for e in cache_json(tmp_path / "ci-cache", "ls")["entries"]
        }
        # The server's records of k5 (without k5.spv) and k6 (an extra output), hash-valid.
        for stem, change in (("k5", "drop"), ("k6", "add")):
            key = entries[stem]
            record = cache_json(tmp_path / "ci-cache", "show", key)
            good = (tmp_path / "ci-cache" / "ac" / key[:2] / f"{key}.json").read_bytes()
            manifest = json.loads(good)["manifest"]
            refs = dict(record["outputs"])
            if change == "drop":
                del refs[f"{stem}.spv"]
            else:
                refs[f"{stem}.x.wgsl"] = refs[f"{stem}.wgsl"]
            bad = make_record(key, manifest, refs, record["info"])
            server.stored[f"ac/{key}"] = canonical_json(bad) + b"\n"
        dev = write_tree(tmp_path / "elsewhere" / "dev", n=N)  # a clone, elsewhere
        proc = run_scons(dev, tmp_path / "dev-cache", env={"VYRE_REMOTE_CACHE": server.url()})
    [warning] = warning_lines(proc)
    assert warning in [
        f"vyre cache: warning: remote action record {entries['k5']} from {server.url()} is "
        "corrupt: its outputs are not those of its step (missing k5.spv); not used, the entry "
        "will be rebuilt",
        f"vyre cache: warning: remote action record {entries['k6']} from {server.url()} is "
        "corrupt: its outputs are not those of its step (k6.x.wgsl not expected); not used, "
        "the entry will be rebuilt",
    ]
    stats = last_build(tmp_path / "dev-cache")
    assert stats["remote_corrupt"] == 2 and stats["misses"] == 2
    assert stats["remote_hits"] == N - 2
    assert outputs(dev) == outputs(ci)
    assert cache_json(tmp_path / "dev-cache", "verify")["ok"]
    # The remote gone, the local cache serves every step: nothing wrong was kept.
    run_scons(dev, tmp_path / "dev-cache", "-c")
    proc = run_scons(dev, tmp_path / "dev-cache", env={"VYRE_REMOTE_CACHE": ""})
    assert warning_lines(proc) == []
    stats = last_build(tmp_path / "dev-cache")
    assert stats["local_hits"] == N and stats["misses"] == 0 and outputs(dev) == outputs(ci)
