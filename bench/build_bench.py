"""Build benchmark: N synthetic kernels through scons + the vyre tool, each figure a ratio
against a baseline measured in this same run, on this machine.

    python bench/build_bench.py                 # N = 1000, best of 3 (cold) / 5 (warm)
    python bench/build_bench.py --n 200 --repeats 2 --json
    python bench/build_bench.py --workdir /dev/shm/vyre-bench   # tmpfs: no disk noise

Prints (each the best of --repeats runs, the two sides interleaved so that a busy moment
of a shared machine hits both; wall time, and the CPU time of the build's processes):
  remote-hit build of a fresh clone (empty local cache, nginx WebDAV on 127.0.0.1,
      read-only) vs a local-hit build of a fresh clone (warm local cache)   target <= 1.5x
  cold build -j2 vs -j1                                                      target >= 1.7x
  rebuild after `scons -c` from the cache vs SCons's own floor: plain SCons with trivial
      actions writing the same files for the same graph                     target <= 1.2x
  null build vs plain SCons with the same graph                              target <= 1.2x
  cold build uploading to the remote (read-write) vs the same build with no remote,
      both -j2                                                               target <= 1.1x
The remote figures need nginx (Debian's package); without it they are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_env import tree_pythonpath  # bench/ is the script's folder

REPO = Path(__file__).resolve().parents[1]

VYRE_SCONSTRUCT = """\
import vyre_build.build.scons_tool
env = Environment(tools=["vyre"], toolpath=[vyre_build.build.scons_tool.toolpath()])
VariantDir("build", "kernels", duplicate=0)
env.VyreBundle("dist/kernels.vyrebundle", env.VyreKernelDir("build"))
"""

# The same graph with trivial actions: what SCons itself costs for N such nodes.
PLAIN_SCONSTRUCT = """\
def touch(target, source, env):
    for t in target:
        with open(str(t), "wb") as f:
            f.write(b"x")
    return 0

env = Environment(tools=[])
VariantDir("build", "kernels", duplicate=0)
outs = []
for src in sorted(Glob("build/k*.py"), key=str):
    stem = src.name[:-3]
    outs += env.Command([f"build/{stem}{s}" for s in (".wgsl", ".spv", ".kdesc", ".meta.json")],
                        src, touch)
env.Command("dist/kernels.vyrebundle", outs, touch)
"""

HELPERS = """\
from vyre_build.lang import f32, u32

SCALE = 2.0


def scale(v: f32) -> f32:
    return v * SCALE


def mix(v: u32) -> u32:
    return (v ^ (v >> 7)) * 3
"""


def kernel(i: int) -> str:
    """A small kernel; every third one imports the shared helper file."""
    if i % 3 == 0:
        return (
            f"from vyre_build.lang import Buffer, f32, global_id, kernel\n\n"
            f"from .helpers import scale\n\n\n@kernel(workgroup_size=64)\n"
            f'def k{i}(x: Buffer[f32], y: Buffer[f32, "rw"]):\n'
            f"    i = global_id().x\n    if i < len(y):\n"
            f"        y[i] = scale(x[i]) + {i}.0\n"
        )
    return (
        f"from vyre_build.lang import Buffer, global_id, kernel, u32\n\n\n"
        f"@kernel(workgroup_size=64)\n"
        f'def k{i}(x: Buffer[u32], y: Buffer[u32, "w"]):\n'
        f"    i = global_id().x\n    if i < len(y):\n"
        f"        y[i] = (x[i] ^ {i}) * {i % 7 + 1}\n"
    )


def make_tree(root: Path, n: int, sconstruct: str) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "helpers.py").write_text(HELPERS)
    for i in range(n):
        (root / "kernels" / f"k{i}.py").write_text(kernel(i))
    (root / "SConstruct").write_text(sconstruct)
    return root


def clone(src: Path, dest: Path) -> Path:
    """A fresh clone: the sources only, in another directory (no build/, no .sconsign)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src / "kernels", dest / "kernels")
    shutil.copy(src / "SConstruct", dest / "SConstruct")
    return dest


# Runs SCons and records the CPU time of the SCons process itself (its workers not
# included): under -jN its serial part, which bounds the speed-up on any number of cores.
WRAPPER = """\
import resource, sys
import SCons.Script
out, sys.argv = sys.argv[1], ["scons", *sys.argv[2:]]
try:
    SCons.Script.main()
finally:
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as f:
        f.write(str(r.ru_utime + r.ru_stime))
"""


class Timing:
    """Wall seconds, CPU seconds of the build's processes (workers included) and of the
    SCons process alone, of a run."""

    def __init__(self, wall: float, cpu: float, main_cpu: float = 0.0):
        self.wall, self.cpu, self.main_cpu = wall, cpu, main_cpu


def scons(root: Path, cache: Path | None, *args: str, **env_extra: str) -> Timing:
    """Run scons in `root`; raises on failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VYRE_")}
    env["PYTHONPATH"] = tree_pythonpath(str(REPO))
    env["VYRE_CACHE_DIR"] = str(cache) if cache is not None else str(root / "no-cache")
    env["VYRE_CONFIG"] = os.devnull + ".none"
    env.pop("SCONSFLAGS", None)
    env.update(env_extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    main_file = root.parent / f".main-cpu-{os.getpid()}"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(main_file), "-Q", *args],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"scons {' '.join(args)} failed in {root}:\n{proc.stderr}")
    if "warning" in proc.stderr:
        raise SystemExit(f"scons {' '.join(args)} in {root} warned:\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    main_cpu = float(main_file.read_text())
    main_file.unlink()
    return Timing(wall, cpu, main_cpu)


def last_build(cache: Path) -> dict:
    with open(cache / "stats.json", "rb") as f:
        return json.load(f)["last_build"]


def interleaved(repeats: int, *sides) -> list[Timing]:
    """Best (lowest wall, lowest CPU) of `repeats` runs of each side, run in turns."""
    best: list[list[float]] = [[float("inf")] * 3 for _ in sides]
    for _ in range(repeats):
        for i, side in enumerate(sides):
            t = side()
            for j, value in enumerate((t.wall, t.cpu, t.main_cpu)):
                best[i][j] = min(best[i][j], value)
    return [Timing(*b) for b in best]


def expect(cache: Path, **want) -> None:
    last = last_build(cache)
    for name, n in want.items():
        if last[name] != n:
            raise SystemExit(f"expected {name}={n} in the last build, got {last}")


def run(n: int, repeats: int, cold_repeats: int, workdir: Path, jobs: str) -> dict:
    vyre = make_tree(workdir / "vyre", n, VYRE_SCONSTRUCT)
    plain = make_tree(workdir / "plain", n, PLAIN_SCONSTRUCT)
    r: dict = {"n": n, "cpus": os.cpu_count(), "repeats": repeats, "jobs": jobs}
    cache = workdir / "cache"

    def cold(j: str, **env) -> Timing:
        scons(vyre, cache, "-c")
        shutil.rmtree(cache, ignore_errors=True)
        (vyre / ".sconsign.dblite").unlink(missing_ok=True)
        t = scons(vyre, cache, j, **env)
        expect(cache, misses=n)
        return t

    r["cold_j1"], r["cold_j2"] = interleaved(cold_repeats, lambda: cold("-j1"), lambda: cold("-j2"))

    # Warm: the null build and the rebuild after -c, each against plain SCons.
    scons(vyre, cache)
    scons(plain, None)

    def rebuild(tree: Path, c) -> Timing:
        scons(tree, c, "-c")
        return scons(tree, c, jobs)

    r["null_vyre"], r["null_plain"] = interleaved(
        repeats, lambda: scons(vyre, cache, jobs), lambda: scons(plain, None, jobs)
    )
    r["rebuild_vyre"], r["rebuild_plain"] = interleaved(
        repeats, lambda: rebuild(vyre, cache), lambda: rebuild(plain, None)
    )
    expect(cache, local_hits=n, misses=0)
    r["remote"] = _remote(vyre, workdir, n, repeats, cold_repeats, jobs)
    return r


def _remote(vyre: Path, workdir: Path, n: int, repeats: int, cold_repeats: int, jobs: str):
    sys.path.insert(0, str(REPO / "tests"))
    from nginx_server import PASSWORD, USER, Nginx

    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        return None
    server = Nginx(workdir / "nginx").start()
    try:
        ci_cache = workdir / "ci-cache"
        rw = {"VYRE_REMOTE_CACHE": server.url(), "VYRE_REMOTE_CACHE_AUTH": f"{USER}:{PASSWORD}"}

        def cold(**env) -> Timing:
            scons(vyre, ci_cache, "-c")
            shutil.rmtree(ci_cache, ignore_errors=True)
            for d in (server.dav / "ac", server.dav / "cas"):
                shutil.rmtree(d, ignore_errors=True)
            return scons(vyre, ci_cache, "-j2", **env)

        out: dict = {}
        out["cold_upload"], out["cold_plain"] = interleaved(
            cold_repeats, lambda: cold(**rw), lambda: cold()
        )
        cold(**rw)  # the CI build that fills the server for the clones below
        expect(ci_cache, uploads=n)

        def local_hit() -> Timing:
            tree = clone(vyre, workdir / "clone-local")
            return scons(tree, ci_cache, jobs)

        def remote_hit() -> Timing:
            tree = clone(vyre, workdir / "clone-remote")
            fresh = workdir / "clone-remote-cache"
            shutil.rmtree(fresh, ignore_errors=True)
            t = scons(tree, fresh, jobs, VYRE_REMOTE_CACHE=server.url())
            expect(fresh, remote_hits=n, misses=0)
            return t

        out["local_hit"], out["remote_hit"] = interleaved(repeats, local_hit, remote_hit)
        return out
    finally:
        server.stop()


def ratios(r: dict) -> dict:
    def both(a: Timing, b: Timing) -> dict:
        return {"wall": a.wall / b.wall, "cpu": a.cpu / b.cpu}

    out = {
        "cold_j2_speedup": both(r["cold_j1"], r["cold_j2"]),
        "rebuild_vs_scons_floor": both(r["rebuild_vyre"], r["rebuild_plain"]),
        "null_vs_plain_scons": both(r["null_vyre"], r["null_plain"]),
    }
    out["cold_j2_bound"] = r["cold_j1"].wall / r["cold_j2"].main_cpu
    if r["remote"] is not None:
        out["remote_vs_local_hit"] = both(r["remote"]["remote_hit"], r["remote"]["local_hit"])
        out["upload_overhead"] = both(r["remote"]["cold_upload"], r["remote"]["cold_plain"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="number of kernel files (default 1000)")
    ap.add_argument("--repeats", type=int, default=5, help="best of this many warm runs")
    ap.add_argument("--cold-repeats", type=int, default=3, help="best of this many cold runs")
    ap.add_argument("--jobs", default="-j1", help="-j of the warm builds (default -j1)")
    ap.add_argument("--workdir", default=None, help="where the trees go (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the generated trees")
    args = ap.parse_args(argv)
    if args.n < 1 or args.repeats < 1 or args.cold_repeats < 1:
        ap.error("--n, --repeats and --cold-repeats must be >= 1")
    base = Path(args.workdir) if args.workdir else None
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="vyre-bench-", dir=base))
    try:
        r = run(args.n, args.repeats, args.cold_repeats, workdir, args.jobs)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    q = ratios(r)
    if args.json:

        def plain(v):
            if isinstance(v, Timing):
                return {"wall_s": v.wall, "cpu_s": v.cpu, "scons_process_cpu_s": v.main_cpu}
            return {k: plain(x) for k, x in v.items()} if isinstance(v, dict) else v

        print(json.dumps({"figures": plain(r), "ratios": q}, indent=2, sort_keys=True))
        return 0

    def line(label: str, a: Timing, b: Timing, ratio: dict, target: str) -> None:
        print(
            f"{label}: {a.wall:.2f} s vs {b.wall:.2f} s = {ratio['wall']:.2f}x wall "
            f"(CPU {a.cpu:.2f} s vs {b.cpu:.2f} s = {ratio['cpu']:.2f}x)  target {target}"
        )

    print(
        f"{args.n} kernels, {os.cpu_count()} CPUs, warm builds {args.jobs}, best of "
        f"{args.repeats} (cold: {args.cold_repeats})"
    )
    if r["remote"] is not None:
        m = r["remote"]
        line(
            "remote-hit build of a fresh clone vs local-hit build",
            m["remote_hit"],
            m["local_hit"],
            q["remote_vs_local_hit"],
            "<= 1.5x",
        )
    else:
        print("remote-hit build: nginx not installed, left out")
    c = q["cold_j2_speedup"]
    j1, j2 = r["cold_j1"], r["cold_j2"]
    print(
        f"cold build -j1 vs -j2: {j1.wall:.2f} s vs {j2.wall:.2f} s = {c['wall']:.2f}x faster "
        f"(CPU {j1.cpu:.2f} s vs {j2.cpu:.2f} s, of which the SCons process "
        f"{j2.main_cpu:.2f} s: -j2 cannot beat {j1.wall / j2.main_cpu:.2f}x here)  target >= 1.7x"
    )
    line(
        "rebuild after scons -c from the cache vs SCons's floor",
        r["rebuild_vyre"],
        r["rebuild_plain"],
        q["rebuild_vs_scons_floor"],
        "<= 1.2x",
    )
    line(
        "null build vs plain SCons",
        r["null_vyre"],
        r["null_plain"],
        q["null_vs_plain_scons"],
        "<= 1.2x",
    )
    if r["remote"] is not None:
        m = r["remote"]
        line(
            "cold -j2 build uploading (read-write) vs no remote",
            m["cold_upload"],
            m["cold_plain"],
            q["upload_overhead"],
            "<= 1.1x",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
