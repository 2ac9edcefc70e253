"""End to end: builds that scale with -j. Steps run in worker processes under -jN with
byte-identical outputs, and the scan's parse is the compile's: each kernel file is parsed
once per build (counted by a sitecustomize hook in every process of the build)."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import textwrap

import pytest
from scons_helpers import (
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

COUNTING = textwrap.dedent("""\
    import os
    from vyre_build.frontend import module as _module

    _parse = _module.ModuleLoader._parse


    def _counted(self, src, real):
        with open(os.environ["VYRE_TEST_PARSE_LOG"], "a") as f:
            f.write(f"{os.getpid()} {real}\\n")
        return _parse(self, src, real)


    _module.ModuleLoader._parse = _counted
    """)


def parses(tmp_path, root, cache, *args: str) -> tuple[collections.Counter, set]:
    """(parses per kernel file of the tree, pids that parsed) of one build."""
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(COUNTING)
    log = tmp_path / "parses.log"
    log.unlink(missing_ok=True)
    env = scons_env(cache, VYRE_TEST_PARSE_LOG=str(log))
    env["PYTHONPATH"] = os.pathsep.join([str(hook), env["PYTHONPATH"]])
    proc = subprocess.run(scons_cmd(*args), cwd=root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    counts, pids = collections.Counter(), set()
    for line in log.read_text().splitlines() if log.exists() else []:
        pid, path = line.split(" ", 1)
        if path.startswith(str(root)):
            counts[os.path.relpath(path, root)] += 1
            pids.add(pid)
    return counts, pids


def test_each_kernel_file_is_parsed_once_per_build(tmp_path):
    root = write_tree(tmp_path / "proj", n=40)
    files = sorted(f"kernels/{p.name}" for p in (root / "kernels").iterdir())
    counts, pids = parses(tmp_path, root, tmp_path / "c1", "-j1")
    assert sorted(counts) == files and set(counts.values()) == {1} and len(pids) == 1
    run_scons(root, tmp_path / "c1", "-c")
    counts, _ = parses(tmp_path, root, tmp_path / "c2", "-j2")
    kernels = [f for f in files if "helpers" not in f]
    assert sorted(counts) == files and all(counts[f] == 1 for f in kernels)
    # A helper is parsed once in each worker that loads a file importing it.
    assert all(1 <= counts[f] <= 2 for f in files if "helpers" in f)
    # Next build with one kernel edited: the scan memo answers the rest, nothing else parses.
    k7 = root / "kernels" / "k7.py"
    k7.write_text(k7.read_text().replace("x[i] * 8", "x[i] * 80"))
    counts, _ = parses(tmp_path, root, tmp_path / "c2", "-j2")
    assert dict(counts) == {"kernels/k7.py": 1}
    counts, _ = parses(tmp_path, root, tmp_path / "c2", "-j2")
    assert dict(counts) == {}  # a null build parses nothing


def test_workers_give_byte_identical_outputs_and_count_like_one_process(tmp_path):
    a = write_tree(tmp_path / "a", n=24)
    b = write_tree(tmp_path / "b", n=24)
    run_scons(a, tmp_path / "ca", "-j1")
    proc = run_scons(b, tmp_path / "cb", "-j3")
    assert outputs(a) == outputs(b) and len(compiled(proc)) == 24
    stats = cache_json(tmp_path / "cb", "stats")["last_build"]
    assert stats["misses"] == 24 and stats["stored"] == 24 and stats["local_misses"] == 24
    run_scons(b, tmp_path / "cb", "-c")
    run_scons(b, tmp_path / "cb", "-j3")
    assert cache_json(tmp_path / "cb", "stats")["last_build"]["local_hits"] == 24
    assert outputs(a) == outputs(b)
    assert cache_json(tmp_path / "cb", "verify", "--rebuild")["ok"]


def test_a_worker_killed_mid_build_is_one_warning_and_the_build_finishes(tmp_path):
    root = write_tree(tmp_path / "proj", n=40)
    reference = write_tree(tmp_path / "ref", n=40)
    run_scons(reference, tmp_path / "ref-cache")
    proc, _ = start_build(root, tmp_path / "cache", "-j2")
    found = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True)
    workers = [int(p) for p in found.stdout.split()]
    assert workers, "no worker processes"
    os.kill(workers[0], signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    lines = [line for line in err.splitlines() if "warning" in line]
    assert len(lines) <= 1 and all(
        "a build worker stopped (killed by signal 9)" in x for x in lines
    )
    assert outputs(root) == outputs(reference)
    assert cache_json(tmp_path / "cache", "verify")["ok"]
