"""End-to-end cache integrity: corruption, concurrent builds, builds killed with SIGKILL."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time

import pytest
from scons_helpers import (
    cache_cli,
    cache_json,
    compiled,
    outputs,
    run_scons,
    scons_cmd,
    scons_env,
    start_build,
    write_tree,
)

pytestmark = pytest.mark.scons


def test_flipped_blob_byte_is_named_by_verify_and_rebuilt_right(project):
    root, cache = project
    run_scons(root, cache)
    good = outputs(root)
    entry = next(e for e in cache_json(cache, "ls")["entries"] if e["stems"] == ["k2"])
    record = cache_json(cache, "show", entry["key"][:12])
    blob = record["outputs"]["k2.spv"]["hash"]
    path = cache / "cas" / blob[:2] / blob
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    check = cache_cli(cache, "verify", check=False)
    assert check.returncode == 1
    assert f"CORRUPT blob {blob} (used by {entry['key']})" in check.stdout
    run_scons(root, cache, "-c")
    proc = run_scons(root, cache)
    assert f"blob {blob} (of key {entry['key']}) is corrupt" in proc.stderr
    last = cache_json(cache, "stats")["last_build"]
    assert last["misses"] == 1 and last["hits"] == 3 and last["corrupt"] == 1
    assert outputs(root) == good and compiled(proc) == [f"kernels/k{i}.py" for i in range(4)]
    assert cache_json(cache, "verify")["ok"]


def test_verify_rebuild_repairs_a_flipped_byte_and_a_build_reports_a_missing_blob(project):
    """The audit's repro: `verify --rebuild` found the blob and said FAILED ever after, and
    a build recompiled an entry whose blob was gone without a word."""
    root, cache = project
    run_scons(root, cache)
    good = outputs(root)
    entry = next(e for e in cache_json(cache, "ls")["entries"] if e["stems"] == ["k1"])
    record = cache_json(cache, "show", entry["key"])
    blob = record["outputs"]["k1.wgsl"]["hash"]
    path = cache / "cas" / blob[:2] / blob
    path.chmod(0o644)
    path.write_bytes(path.read_bytes()[::-1])
    text = cache_cli(cache, "verify", check=False).stdout.splitlines()
    assert text[-2].startswith("found 1 corrupt blob; nothing was changed: `vyre-build cache")
    report = cache_json(cache, "verify", "--rebuild")
    assert report["ok"] and report["repair"]["removed_blobs"] == [blob]
    assert [e["key"] for e in report["repair"]["rebuilt"]] == [entry["key"]]
    assert {r["status"] for r in report["rebuilds"]} == {"same"} and len(report["rebuilds"]) == 3
    assert cache_cli(cache, "verify").stdout.splitlines()[-1] == "OK"
    path.unlink()
    assert cache_json(cache, "verify", check=False)["bad_blobs"] == [
        {"blob": blob, "keys": [entry["key"]], "state": "missing"}
    ]
    run_scons(root, cache, "-c")
    proc = run_scons(root, cache)
    assert f"blob {blob} (of key {entry['key']}) is missing" in proc.stderr
    last = cache_json(cache, "stats")["last_build"]
    assert last["misses"] == 1 and last["corrupt"] == 1 and outputs(root) == good
    assert cache_json(cache, "verify")["ok"]


def test_verify_rebuild_recompiles_every_entry_identically(project):
    root, cache = project
    run_scons(root, cache)
    report = cache_json(cache, "verify", "--rebuild")
    assert report["ok"] and len(report["rebuilds"]) == 4
    assert {r["status"] for r in report["rebuilds"]} == {"same"}


def test_two_concurrent_builds_share_one_cache_safely(tmp_path):
    n = 200
    a = write_tree(tmp_path / "a", n=n)
    b = write_tree(tmp_path / "b", n=n)
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            scons_cmd("-j2"),
            cwd=root,
            env=scons_env(cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for root in (a, b)
    ]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert "corrupt" not in err
    assert outputs(a) == outputs(b) and len(outputs(a)) == 4 * n + 1
    report = cache_json(cache, "verify")
    assert report["ok"] and report["entries"] == n
    stats = cache_json(cache, "stats")["overall"]
    assert stats["hits"] + stats["misses"] == 2 * n and stats["builds"] == 2


def test_builds_killed_at_random_points_leave_no_corrupt_entry(tmp_path):
    root = write_tree(tmp_path / "proj", n=24)
    cache = tmp_path / "cache"
    rng = random.Random(20261129)
    helper = root / "kernels" / "helpers_b.py"
    checked = killed = 0
    # Kill points are drawn inside the span of the compiles of one full build on this
    # machine, counted from the first compile line, so the kills land among the stores
    # however fast or slow the machine is (and however long SCons takes to start).
    proc, first = start_build(root, tmp_path / "timing-cache", "-j2")
    proc.communicate(timeout=300)
    span = max(time.monotonic() - first, 0.1)
    it = 0
    # 20 rounds at least, and on until 20 builds were really killed mid-way (a round whose
    # build finished before its kill point still checks the cache), within 60 rounds.
    while it < 20 or (killed < 20 and it < 60):
        # New helper content each time: every dependent misses, so the kill lands mid-work.
        helper.write_text(helper.read_text().replace(f"* {it + 3}", f"* {it + 4}"))
        shutil.rmtree(root / "build", ignore_errors=True)
        proc, _ = start_build(root, cache, "-j2", stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.7 * span))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            killed += 1
        proc.communicate(timeout=60)
        if cache.exists():  # a kill before the first store leaves no cache to verify
            report = cache_json(cache, "verify", check=False)
            assert report["ok"], (it, report)
            checked += 1
        it += 1
    assert checked >= 15 and killed >= 20
    run_scons(root, cache)
    assert len(list((root / "build").iterdir())) == 24 * 4
    assert not [p for p in (root / "build").iterdir() if p.name.endswith(".vyre-tmp")]
    clean = tmp_path / "clean"
    write_tree(clean, n=24)
    (clean / "kernels" / "helpers_b.py").write_text(helper.read_text())
    run_scons(clean, tmp_path / "fresh_cache")
    assert outputs(clean)["dist/kernels.vyrebundle"] == outputs(root)["dist/kernels.vyrebundle"]
