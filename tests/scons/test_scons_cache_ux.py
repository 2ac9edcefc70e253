"""End to end: the cache as a user meets it: found from anywhere inside the project,
configured by vyre.toml, counted like ccache (per tier, hit rate, size and limit), zeroed,
cleared, kept under its size limit by LRU, and `why` showing the last change as a diff."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from scons_helpers import (
    SCONSTRUCT,
    cache_cli,
    cache_json,
    compiled,
    outputs,
    run_scons,
    steps,
    write_tree,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nginx_server import PASSWORD, USER, nginx_fixture  # noqa: E402, F401 - fixture

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


def test_each_step_says_what_it_did_and_the_build_ends_with_a_summary(project):
    root, cache = project
    first = run_scons(root, cache)
    assert steps(first) == {f"kernels/k{i}.py": "compiled" for i in range(4)}
    assert first.stdout.splitlines()[-1] == "vyre: 4 kernel files: 4 compiled"
    run_scons(root, cache, "-c")
    k2 = root / "kernels" / "k2.py"
    k2.write_text(k2.read_text().replace("x[i] * 3", "x[i] * 5"))
    again = run_scons(root, cache)
    assert steps(again) == {
        "kernels/k0.py": "local hit",
        "kernels/k1.py": "local hit",
        "kernels/k2.py": "compiled",
        "kernels/k3.py": "local hit",
    }
    assert "vyre: local hit kernels/k0.py -> build" in again.stdout.splitlines()
    assert again.stdout.splitlines()[-1] == "vyre: 4 kernel files: 1 compiled, 3 cache hits"
    k2.write_text(k2.read_text().replace("x[i] * 5", "x[i] * 6"))
    edit = run_scons(root, cache)
    assert edit.stdout.splitlines()[-1] == "vyre: 4 kernel files: 1 compiled, 3 up to date"
    null = run_scons(root, cache)
    assert steps(null) == {} and "vyre: " not in null.stdout  # nothing ran: no summary
    assert run_scons(root, cache, "-s", "-c").stdout == ""
    assert run_scons(root, cache, "-s").stdout == ""  # -s: SCons's silence holds


def test_long_builds_count_n_of_N_and_a_set_vyrecomstr_wins(tmp_path):
    root = write_tree(tmp_path / "proj", n=12)
    cache = tmp_path / "cache"
    proc = run_scons(root, cache, "-j2")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("vyre: [")]
    assert [line.split("]")[0] for line in lines] == [f"vyre: [{n}/12" for n in range(1, 13)]
    assert sorted(line.split("] ")[1] for line in lines) == sorted(
        f"compiled kernels/k{i}.py -> build" for i in range(12)
    )
    assert proc.stdout.splitlines()[-1] == "vyre: 12 kernel files: 12 compiled"
    # N counts the steps to run, not the kernel files: 10 of 12 lost their outputs.
    for i in range(2, 12):
        (root / "build" / f"k{i}.wgsl").unlink()
    part = run_scons(root, cache, "-j2")
    counted = [line.split("]")[0] for line in part.stdout.splitlines() if "] " in line]
    assert counted == [f"vyre: [{n}/10" for n in range(1, 11)]
    assert part.stdout.splitlines()[-1] == "vyre: 12 kernel files: 10 cache hits, 2 up to date"
    # What the command line asks for, and what it needs: k2 itself, and dist/ (the
    # bundle, which needs every kernel).
    k2 = root / "kernels" / "k2.py"
    k2.write_text(k2.read_text().replace("x[i] * 3", "x[i] * 30"))
    asked = run_scons(root, cache, "build/k2.wgsl", "dist")
    assert asked.stdout.splitlines()[-1] == "vyre: 12 kernel files: 1 compiled, 11 up to date"
    # Only the asked-for kernel counts: one of one is no long build.
    run_scons(root, cache, "-c")
    one = run_scons(root, cache, "build/k3.wgsl")
    assert one.stdout.splitlines() == [
        "vyre: local hit kernels/k3.py -> build",
        "vyre: 1 kernel file: 1 cache hit",
    ]
    (root / "SConstruct").write_text(
        SCONSTRUCT.replace(
            "toolpath=[vyre_build.build.scons_tool.toolpath()])",
            "toolpath=[vyre_build.build.scons_tool.toolpath()],\n"
            '                  VYRECOMSTR="KERNEL $SOURCE ($VYRESTEP)")',
        )
    )
    run_scons(root, cache, "-c")
    own = run_scons(root, cache, "build/k3.wgsl")
    assert own.stdout.splitlines() == [
        "KERNEL kernels/k3.py (local hit)",
        "vyre: 1 kernel file: 1 cache hit",
    ]


def test_cache_config_shows_every_setting_and_its_origin(tmp_path):
    root = write_tree(tmp_path / "proj", n=1)
    root.joinpath("SConstruct").write_text(
        SCONSTRUCT.replace(
            "toolpath=[vyre_build.build.scons_tool.toolpath()])",
            "toolpath=[vyre_build.build.scons_tool.toolpath()],\n"
            "                  VYRECACHEMAXAGE=7, VYRELINKOUTPUTS=True)",
        )
    )
    (root / "vyre.toml").write_text('[cache]\nmax-size = "3G"\n')
    run_scons(root, None, env={"VYRE_REMOTE_CACHE_TIMEOUT": "2"})
    out = cache_cli(None, "config", cwd=root).stdout.splitlines()
    toml = root / "vyre.toml"
    built = "(the last build's SConstruct)"
    rows = [re.fullmatch(r"(\S+) +=  ?(.*?) +\((.*)\)", line).groups() for line in out]
    assert rows == [
        ("cache.dir", str(root / "cache"), "default"),
        ("cache.max-size", "3.0 GiB", f"max-size in [cache] of {toml}"),
        ("cache.max-age", "7 days", f"construction variable $VYRECACHEMAXAGE {built}"),
        ("remote.url", "none", "default"),
        ("remote.mode", "read-write with credentials, else read-only", "default"),
        ("remote.timeout", "5 s", "default"),
        ("build.link-outputs", "on", f"construction variable $VYRELINKOUTPUTS {built}"),
        ("build.workers", "the -j count", "default"),
    ]
    # aligned as ccache aligns them: the values and the origins each in one column
    assert len({line.index(" = ") for line in out}) == 1
    assert len({line.index("  (") for line in out}) == 1
    timeout = cache_cli(None, "config", cwd=root, env={"VYRE_REMOTE_CACHE_TIMEOUT": "2"})
    assert "remote.timeout     = 2 s" in timeout.stdout
    assert "(environment variable VYRE_REMOTE_CACHE_TIMEOUT)" in timeout.stdout
    env_set = cache_json(None, "config", cwd=root)
    assert (
        cache_cli(None, "-p", "--json", cwd=root).stdout
        == json.dumps(env_set, indent=2, sort_keys=True) + "\n"
    )


def test_ccache_options_stats_zero_clear_and_max_size(project):
    root, cache = project
    run_scons(root, cache)
    assert cache_cli(cache, "-s").stdout == cache_cli(cache, "stats").stdout
    assert cache_cli(None, "-z", "--cache-dir", str(cache)).stdout == "Statistics zeroed\n"
    assert cache_cli(cache, "-C").stdout.startswith("Removed 4 entries and ")
    toml = root / "vyre.toml"
    toml.write_text('# ours\n[remote]\nurl = "https://cache.example.com/vyre"\n')
    set_size = cache_cli(None, "-M", "10G", cwd=root / "kernels").stdout
    assert set_size == f"Set cache size limit to 10.0 GiB (max-size in [cache] of {toml})\n"
    assert toml.read_text() == (
        '# ours\n[remote]\nurl = "https://cache.example.com/vyre"\n\n[cache]\nmax-size = "10G"\n'
    )
    cache_cli(None, "-M", "0", cwd=root)
    assert 'max-size = "unlimited"' in toml.read_text() and "10G" not in toml.read_text()
    bad = cache_cli(None, "-M", "lots", cwd=root, check=False)
    assert (bad.returncode, bad.stderr) == (
        1,
        "-M 'lots' is not a size; write e.g. 500M, 2G, 1048576 or unlimited\n",
    )
    both = cache_cli(cache, "-s", "ls", check=False)
    assert both.stderr == (
        "vyre-build cache: give either a ccache option or the subcommand 'ls', not both\n"
    )


def test_a_clone_says_remote_hit_per_step_and_counts_them(nginx, tmp_path):
    ci = write_tree(tmp_path / "ci", n=12)
    auth = {"VYRE_REMOTE_CACHE": nginx.url(), "VYRE_REMOTE_CACHE_AUTH": f"{USER}:{PASSWORD}"}
    run_scons(ci, tmp_path / "ci-cache", env=auth)
    dev = tmp_path / "dev"
    shutil.copytree(ci / "kernels", dev / "kernels")
    shutil.copy(ci / "SConstruct", dev / "SConstruct")
    remote = {"VYRE_REMOTE_CACHE": nginx.url()}
    proc = run_scons(dev, tmp_path / "dev-cache", "-j2", env=remote)
    assert steps(proc) == {f"kernels/k{i}.py": "remote hit" for i in range(12)}
    counted = [line.split("]")[0] for line in proc.stdout.splitlines() if "] " in line]
    assert counted == [f"vyre: [{n}/12" for n in range(1, 13)]
    assert proc.stdout.splitlines()[-1] == "vyre: 12 kernel files: 12 cache hits (12 remote)"
    # A clean rebuild: the remote hits were kept locally.
    run_scons(dev, tmp_path / "dev-cache", "-c")
    k3 = dev / "kernels" / "k3.py"
    k3.write_text(k3.read_text().replace("x[i] * 4", "x[i] * 40"))
    mixed = run_scons(dev, tmp_path / "dev-cache", env=remote)
    assert steps(mixed)["kernels/k3.py"] == "compiled"
    assert steps(mixed)["kernels/k4.py"] == "local hit"
    assert mixed.stdout.splitlines()[-1] == "vyre: 12 kernel files: 1 compiled, 11 cache hits"


def test_a_failed_step_says_failed_and_the_summary_counts_it(project):
    root, cache = project
    k1 = root / "kernels" / "k1.py"
    k1.write_text(k1.read_text().replace("mix_b(x[i])", "mix_b(x[i]) + nope"))
    proc = run_scons(root, cache, "-k", check=False)
    assert proc.returncode == 2
    assert steps(proc) == {
        "kernels/k0.py": "compiled",
        "kernels/k1.py": "failed",
        "kernels/k2.py": "compiled",
        "kernels/k3.py": "compiled",
    }
    assert proc.stdout.splitlines()[-1] == "vyre: 4 kernel files: 3 compiled, 1 failed"
    assert "error: unknown name 'nope'" in proc.stderr
    # without -k SCons stops at the failure: the files it did not reach are not counted as
    # up to date, and the line says how to build them
    proc = run_scons(root, cache, "-j1", check=False)
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[-1] == (
        "vyre: 1 kernel file: 1 failed; scons stopped at the first failure (scons -k builds "
        "the other files)"
    )
