"""End to end: the cache as a user meets it: found from anywhere inside the project,
configured by vyre.toml, counted like ccache (per tier, hit rate, size and limit), zeroed,
cleared, kept under its size limit by LRU, and `why` showing the last change as a diff."""

from __future__ import annotations

import pytest
from scons_helpers import cache_cli, cache_json, compiled, outputs, run_scons, write_tree

pytestmark = pytest.mark.scons


def cli(cwd, *args: str, check: bool = True):
    """`vyre-build cache ...` run in `cwd` with no cache dir given: found as SCons finds it."""
    return cache_cli(None, *args, check=check, cwd=cwd)


def test_the_cli_finds_the_cache_scons_uses_from_anywhere_in_the_project(tmp_path):
    root = write_tree(tmp_path / "proj", n=2)
    run_scons(root, None)
    assert (root / "cache" / "stats.json").exists()
    for where in (root, root / "kernels", root / "build"):
        out = cli(where, "stats").stdout
        assert out.splitlines()[0] == f"Cache directory:   {root / 'cache'} (from default)"
    (root / "vyre.toml").write_text('[cache]\ndir = "../shared-cache"\n')
    run_scons(root, None, "-c")
    run_scons(root, None)
    assert (tmp_path / "shared-cache" / "stats.json").exists()
    stats = cache_json(None, "stats", cwd=root / "kernels")
    assert stats["cache_dir"] == str(tmp_path / "shared-cache")
    assert stats["cache_dir_source"] == f"dir in [cache] of {root / 'vyre.toml'}"
    outside = cli(tmp_path, "stats", check=False)
    assert outside.returncode == 1 and outside.stderr == (
        f"no cache at {tmp_path / 'cache'} (from default); build first, or pass --cache-dir "
        "/ set VYRE_CACHE_DIR\n"
    )


def test_stats_per_tier_with_hit_rate_size_and_limit_then_zero_and_clear(project):
    root, cache = project
    run_scons(root, cache)
    run_scons(root, cache, "-c")
    k2 = root / "kernels" / "k2.py"
    k2.write_text(k2.read_text().replace("x[i] * 3", "x[i] * 7"))
    run_scons(root, cache)
    stats = cache_json(cache, "stats")
    last = stats["last_build"]
    assert (last["hits"], last["misses"], last["local_hits"], last["local_misses"]) == (3, 1, 3, 1)
    assert stats["last_build_rates"]["overall"] == 0.75 and stats["overall"]["builds"] == 2
    assert stats["overall"]["misses"] == 5 and stats["max_size"] == 5 << 30
    assert stats["entries"] == 5 and stats["total_bytes"] > 0
    text = cache_cli(cache, "stats").stdout.splitlines()
    assert "  Hits:               3 / 4      ( 75.00 %)" in text
    assert "  Misses:             1 / 4      ( 25.00 %)" in text
    assert any(line.startswith("  Cache size:") and "/ 5.0 GiB" in line for line in text)
    assert "  Entries:         5 (" in "\n".join(text)
    assert cache_cli(cache, "zero").stdout == "Statistics zeroed\n"
    zeroed = cache_json(cache, "stats")
    assert zeroed["last_build"] is None and zeroed["overall"]["builds"] == 0
    assert zeroed["entries"] == 5  # zero keeps the entries
    cleared = cache_cli(cache, "clear").stdout
    assert (
        cleared.startswith("Removed 5 entries and ") and cache_json(cache, "stats")["entries"] == 0
    )
    run_scons(root, cache, "-c")
    proc = run_scons(root, cache)
    assert cache_json(cache, "stats")["last_build"]["misses"] == 4 and len(compiled(proc)) == 4


def test_the_size_limit_from_vyre_toml_evicts_least_recently_used_after_builds(project):
    root, cache = project
    run_scons(root, cache)
    size = cache_json(cache, "stats")["total_bytes"]
    # Room for about three of the four entries: the least recently used one goes.
    (root / "vyre.toml").write_text(f'[cache]\nmax-size = "{size * 3 // 4}"\n')
    k2 = root / "kernels" / "k2.py"
    k2.write_text(k2.read_text().replace("x[i] * 3", "x[i] * 8"))
    run_scons(root, cache)
    stats = cache_json(cache, "stats", cwd=root)  # the limit as the project sets it
    assert stats["total_bytes"] <= size * 3 // 4 and stats["max_size"] == size * 3 // 4
    left = [e["stems"] for e in cache_json(cache, "ls")["entries"]]
    assert ["k2"] in left and len(left) < 5  # the entry just built is kept


def test_why_shows_the_last_change_as_a_diff_even_after_a_cache_hit(project):
    root, cache = project
    run_scons(root, cache)
    k3 = root / "kernels" / "k3.py"
    original = k3.read_text()
    k3.write_text(original.replace("x[i] * 4", "x[i] * 9"))
    run_scons(root, cache)
    k3.write_text(original)  # back: a cache hit of the first key
    proc = run_scons(root, cache)
    assert cache_json(cache, "stats")["last_build"]["hits"] == 1
    why = cache_cli(cache, "why", str(root / "build" / "k3.wgsl")).stdout.splitlines()
    assert compiled(proc) == ["kernels/k3.py"]
    # The last change is the revert (9 -> 4), not the edit before it.
    assert why[1:] == [
        "source k3.py changed:",
        "--- a/k3.py",
        "+++ b/k3.py",
        "@@ -5,4 +5,4 @@",
        ' def k3(x: Buffer[u32], y: Buffer[u32, "w"]):',
        "     i = global_id().x",
        "     if i < len(y):",
        "-        y[i] = x[i] * 9",
        "+        y[i] = x[i] * 4",
    ]
    data = cache_json(cache, "why", "k3", cwd=root)  # a bare stem: the one output so named
    assert data["output"] == "build/k3" and [d["part"] for d in data["differences"]] == [
        "source k3.py"
    ]
    sc = root / "SConstruct"
    sc.write_text(
        sc.read_text().replace("toolpath=", 'VYREOPTIONS={"spirv_opt": False}, toolpath=')
    )
    run_scons(root, cache)
    lines = cache_cli(cache, "why", str(root / "build" / "k3.spv")).stdout.splitlines()
    assert lines[1:] == ['options changed: was {}, now {"spirv_opt": false}']
    assert outputs(root)["build/k3.wgsl"]
