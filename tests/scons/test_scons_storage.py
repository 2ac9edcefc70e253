"""End to end: builds over a cache whose storage misbehaves: a read-only mount serves
hits, stores nothing and warns once; a full disk is one warning, leaves nothing corrupt
and the next build succeeds. Both need mount(8) (root, as in CI); where mounting is
refused they skip, and test_cache_storage.py covers the same paths by injection."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scons_helpers import cache_json, compiled, outputs, run_scons, warning_lines, write_tree

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_cache_storage import mounted_tmpfs, read_only_view  # noqa: E402

pytestmark = pytest.mark.scons


def test_a_warm_cache_on_a_read_only_mount_serves_hits_and_warns_once(tmp_path):
    root = write_tree(tmp_path / "proj", n=6)
    run_scons(root, tmp_path / "cache", "-j2")
    good = outputs(root)
    before = cache_json(tmp_path / "cache", "stats")
    with read_only_view(tmp_path / "cache", tmp_path / "ro") as mounted:
        if not mounted:
            pytest.skip("read-only bind mounts need root here")
        ro = tmp_path / "ro"
        run_scons(root, ro, "-c")
        k4 = root / "kernels" / "k4.py"
        k4.write_text(k4.read_text().replace("x[i] * 5", "x[i] * 50"))
        for jobs in ("-j1", "-j2"):
            proc = run_scons(root, ro, jobs)
            assert warning_lines(proc) == [
                f"vyre cache: warning: cache {ro} is on a read-only file system: serving hits, "
                "storing nothing more in this build"
            ]
            assert "Traceback" not in proc.stderr and compiled(proc)
            run_scons(root, ro, "-c")
        assert cache_json(ro, "verify")["ok"]
        assert cache_json(ro, "stats")["overall"] == before["overall"]  # nothing written
    proc = run_scons(root, tmp_path / "cache")
    assert warning_lines(proc) == []
    after = outputs(root)
    assert {k: v for k, v in after.items() if "k4." not in k and "dist" not in k} == {
        k: v for k, v in good.items() if "k4." not in k and "dist" not in k
    }


def test_a_full_disk_under_the_cache_is_one_warning_and_nothing_corrupt(tmp_path):
    root = write_tree(tmp_path / "proj", n=16)
    reference = write_tree(tmp_path / "ref", n=16)
    run_scons(reference, tmp_path / "ref-cache")
    with mounted_tmpfs(tmp_path / "small", "96k") as mounted:
        if not mounted:
            pytest.skip("mounting a small tmpfs needs root here")
        cache = tmp_path / "small" / "cache"
        proc = run_scons(root, cache, "-j2")
        [warning] = warning_lines(proc)
        assert warning.startswith(f"vyre cache: warning: cache {cache} is full (No space left")
        assert outputs(root) == outputs(reference)
        report = cache_json(cache, "verify")
        assert report["ok"] and 0 < report["entries"] < 16
        assert not [p for p in cache.rglob(".tmp.*")]
        run_scons(root, cache, "-c")
        proc = run_scons(root, cache)  # the next build: served where entries fit
        assert proc.returncode == 0 and outputs(root) == outputs(reference)
        assert len(warning_lines(proc)) <= 1 and cache_json(cache, "verify")["ok"]
