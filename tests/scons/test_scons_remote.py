"""End to end: the remote tier through real scons builds and a real nginx WebDAV server.

A CI-like build (read-write, credentials from the environment) fills the server; a clone
of the tree in another directory with an empty local cache, read-only, builds with no
compile and keeps the hits locally; a server stopped mid-build, a tampered blob and bad
credentials each cost one warning and never fail the build or change a byte.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scons_helpers import (
    cache_json,
    compiled,
    outputs,
    run_scons,
    start_build,
    scons_env,
    warning_lines,
    write_tree,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nginx_server import PASSWORD, USER, nginx_fixture  # noqa: E402, F401 - fixture

pytestmark = pytest.mark.scons

N = 12


def ci_env(nginx) -> dict:
    return {"VYRE_REMOTE_CACHE": nginx.url(), "VYRE_REMOTE_CACHE_AUTH": f"{USER}:{PASSWORD}"}


def clone(src: Path, dest: Path) -> Path:
    shutil.copytree(src / "kernels", dest / "kernels")
    shutil.copy(src / "SConstruct", dest / "SConstruct")
    return dest


def last_build(cache: Path) -> dict:
    return cache_json(cache, "stats")["last_build"]


@pytest.mark.parametrize("jobs", ["-j1", "-j2"])
def test_ci_fills_the_server_and_a_clone_builds_with_no_compile(nginx, tmp_path, jobs):
    ci = write_tree(tmp_path / "ci", n=N)
    proc = run_scons(ci, tmp_path / "ci-cache", jobs, env=ci_env(nginx))
    assert warning_lines(proc) == []
    stats = last_build(tmp_path / "ci-cache")
    assert stats["misses"] == N and stats["uploads"] == N and stats["remote_misses"] == N
    assert len(nginx.record_files()) == N
    # A teammate's clone elsewhere: empty local cache, the URL from the project's config
    # file, no credentials, so read-only.
    dev = clone(ci, tmp_path / "elsewhere" / "dev")
    (dev / "vyre.toml").write_text(f'[remote]\nurl = "{nginx.url()}"\n')
    puts_before = [r for r in nginx.requests() if r.startswith("PUT")]
    proc = run_scons(dev, tmp_path / "dev-cache", jobs)
    assert warning_lines(proc) == [] and len(compiled(proc)) == N  # actions ran...
    stats = last_build(tmp_path / "dev-cache")
    assert stats["misses"] == 0 and stats["remote_hits"] == N  # ...no compile did
    assert stats["uploads"] == 0 and [r for r in nginx.requests() if r.startswith("PUT")] == (
        puts_before
    )
    assert outputs(dev) == outputs(ci)
    # The remote hits were kept locally: verified, and served with the server gone.
    assert cache_json(tmp_path / "dev-cache", "verify")["ok"]
    nginx.stop()
    run_scons(dev, tmp_path / "dev-cache", "-c")
    proc = run_scons(dev, tmp_path / "dev-cache", jobs, env={"VYRE_REMOTE_CACHE": ""})
    stats = last_build(tmp_path / "dev-cache")
    assert stats["local_hits"] == N and stats["misses"] == 0 and outputs(dev) == outputs(ci)


def test_a_server_stopped_mid_build_costs_one_warning(nginx, tmp_path):
    root = write_tree(tmp_path / "proj", n=40)
    reference = write_tree(tmp_path / "ref", n=40)
    run_scons(reference, tmp_path / "ref-cache")
    proc, _ = start_build(root, tmp_path / "cache", "-j1", **ci_env(nginx))
    nginx.stop()  # the build is at its first kernel: the other 39 meet a dead server
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    # One warning; its reason depends on where the stop caught the exchange: a refused
    # connection, one the stopping server reset mid-request, closed while the request was
    # being written, or closed before any response came (each seen in CI here).
    (line,) = [line for line in err.splitlines() if line]
    reasons = (
        "Connection refused",
        "the connection was closed (ConnectionResetError)",
        "the connection was closed (BrokenPipeError)",
        "the connection was closed (RemoteDisconnected)",
    )
    assert line in [
        f"vyre cache: warning: remote cache {nginx.url()} is unreachable ({why}); this build "
        "goes on with the local cache only"
        for why in reasons
    ], line
    stats = last_build(tmp_path / "cache")
    assert stats["remote_errors"] >= 1 and stats["misses"] == 40
    assert outputs(root) == outputs(reference)
    assert cache_json(tmp_path / "cache", "verify")["ok"]


def test_a_tampered_blob_on_the_server_is_not_served(nginx, tmp_path):
    ci = write_tree(tmp_path / "ci", n=N)
    run_scons(ci, tmp_path / "ci-cache", env=ci_env(nginx))
    entry = next(
        e for e in cache_json(tmp_path / "ci-cache", "ls")["entries"] if e["stems"] == ["k5"]
    )
    blob = cache_json(tmp_path / "ci-cache", "show", entry["key"])["outputs"]["k5.spv"]["hash"]
    path = nginx.dav / "cas" / blob
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    dev = clone(ci, tmp_path / "dev")
    proc = run_scons(dev, tmp_path / "dev-cache", env={"VYRE_REMOTE_CACHE": nginx.url()})
    [warning] = warning_lines(proc)
    assert warning.startswith(
        f"vyre cache: warning: remote blob {blob} (of key {entry['key']}) from {nginx.url()} "
        "is corrupt: its bytes hash to "
    )
    assert warning.endswith("; not used, the entry will be rebuilt")
    stats = last_build(tmp_path / "dev-cache")
    assert stats["remote_corrupt"] == 1 and stats["misses"] == 1 and stats["remote_hits"] == N - 1
    assert outputs(dev) == outputs(ci)
    assert cache_json(tmp_path / "dev-cache", "verify")["ok"]


def test_bad_credentials_are_one_clear_warning_never_shown(nginx, tmp_path):
    root = write_tree(tmp_path / "proj", n=N)
    url = nginx.url(USER, "not-the-password")
    proc = run_scons(root, tmp_path / "cache", "-j2", env={"VYRE_REMOTE_CACHE": url})
    assert warning_lines(proc) == [
        f"vyre cache: warning: remote cache {nginx.url()} refused an upload (HTTP 401 "
        "Unauthorized): check the credentials (from the URL); no more uploads in this build"
    ]
    assert "not-the-password" not in proc.stdout + proc.stderr
    stats = cache_json(tmp_path / "cache", "stats")
    assert stats["last_build"]["upload_errors"] >= 1 and stats["last_build"]["misses"] == N
    assert nginx.record_files() == [] and len(outputs(root)) == 4 * N + 1
    shown = subprocess.run(
        [sys.executable, "-m", "vyre_build", "cache", "stats"],
        cwd=root,
        env=scons_env(tmp_path / "cache", VYRE_REMOTE_CACHE=url),
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"Remote storage:    {nginx.url()} " in shown.stdout
    assert "not-the-password" not in shown.stdout + shown.stderr
