"""Build benchmark: N synthetic kernels through scons + the vyre tool, each figure a ratio
measured in this one run (same machine, same load).

    python bench/build_bench.py            # N = 1000
    python bench/build_bench.py --n 200 --json

Prints:
  null build, vyre tool vs plain SCons with N trivial Command nodes of the same shape
      (one source -> 4 targets each, plus one bundle node)              target <= 1.2x
  rebuild after `scons -c`, served from the cache, vs the cold build    target >= 20x,
      and its time per kernel                                           <= 2 ms
      (also with hard-linked outputs, and SCons's own floor for the same graph)
  cold build -j2 vs -j1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

VYRE_SCONSTRUCT = """\
import vyre_build.scons_tool
env = Environment(tools=["vyre"], toolpath=[vyre_build.scons_tool.toolpath()])
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


def scons(root: Path, cache: Path, *args: str) -> float:
    """Run scons in `root`; returns wall seconds; raises on failure."""
    env = dict(
        os.environ,
        VYRE_CACHE_DIR=str(cache),
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    )
    env.pop("SCONSFLAGS", None)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "SCons", "-Q", *args],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"scons {' '.join(args)} failed in {root}:\n{proc.stderr}")
    return elapsed


def best(runs: int, fn) -> float:
    return min(fn() for _ in range(runs))


def cache_stats(cache: Path) -> dict:
    with open(cache / "stats.json", "rb") as f:
        return json.load(f)["last_build"]


def run(n: int, repeats: int, workdir: Path) -> dict:
    vyre = make_tree(workdir / "vyre", n, VYRE_SCONSTRUCT)
    plain = make_tree(workdir / "plain", n, PLAIN_SCONSTRUCT)
    cache = workdir / "cache"
    r: dict = {"n": n}
    r["cold_j1_s"] = scons(vyre, cache, "-j1")
    r["null_vyre_s"] = best(repeats, lambda: scons(vyre, cache))
    scons(plain, cache)
    r["null_plain_s"] = best(repeats, lambda: scons(plain, cache))

    def clean_then_build() -> float:
        scons(vyre, cache, "-c")
        return scons(vyre, cache)

    r["cached_rebuild_s"] = best(repeats, clean_then_build)
    last = cache_stats(cache)
    if last["misses"] or last["hits"] != n:
        raise SystemExit(f"rebuild after clean was not served from the cache: {last}")
    # The same with outputs hard-linked to the cache blobs ($VYRELINKOUTPUTS).
    sconstruct = vyre / "SConstruct"
    sconstruct.write_text(VYRE_SCONSTRUCT.replace("toolpath=", "VYRELINKOUTPUTS=True, toolpath="))
    r["cached_rebuild_linked_s"] = best(repeats, clean_then_build)
    sconstruct.write_text(VYRE_SCONSTRUCT)

    def plain_clean_then_build() -> float:
        scons(plain, cache, "-c")
        return scons(plain, cache)

    # SCons's own floor for this graph: the same nodes, actions that only write the files.
    r["plain_rebuild_s"] = best(repeats, plain_clean_then_build)
    scons(vyre, cache, "-c")
    shutil.rmtree(cache)
    r["cold_j2_s"] = scons(vyre, cache, "-j2")
    r["null_ratio"] = r["null_vyre_s"] / r["null_plain_s"]
    r["cache_speedup"] = r["cold_j1_s"] / r["cached_rebuild_s"]
    r["cached_ms_per_kernel"] = r["cached_rebuild_s"] / n * 1e3
    r["cache_speedup_linked"] = r["cold_j1_s"] / r["cached_rebuild_linked_s"]
    r["cached_linked_ms_per_kernel"] = r["cached_rebuild_linked_s"] / n * 1e3
    r["j2_speedup"] = r["cold_j1_s"] / r["cold_j2_s"]
    r["cached_vs_plain_rebuild"] = r["cached_rebuild_s"] / r["plain_rebuild_s"]
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="number of kernel files (default 1000)")
    ap.add_argument("--repeats", type=int, default=3, help="best of this many for warm runs")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the generated trees")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error("--n must be >= 1")
    workdir = Path(tempfile.mkdtemp(prefix="vyre-bench-"))
    try:
        r = run(args.n, args.repeats, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(r, indent=2, sort_keys=True))
        return 0
    print(f"{args.n} kernels, {os.cpu_count()} CPUs")
    print(
        f"null build: vyre {r['null_vyre_s']:.2f} s vs plain SCons {r['null_plain_s']:.2f} s"
        f" = {r['null_ratio']:.2f}x  (target <= 1.2x)"
    )
    print(
        f"rebuild after scons -c from the cache: {r['cached_rebuild_s']:.2f} s vs cold "
        f"{r['cold_j1_s']:.2f} s = {r['cache_speedup']:.1f}x faster, "
        f"{r['cached_ms_per_kernel']:.2f} ms/kernel  (targets >= 20x, <= 2 ms)"
    )
    print(
        f"  same with VYRELINKOUTPUTS=True (hard links to cache blobs): "
        f"{r['cached_rebuild_linked_s']:.2f} s = {r['cache_speedup_linked']:.1f}x faster, "
        f"{r['cached_linked_ms_per_kernel']:.2f} ms/kernel"
    )
    print(
        f"  SCons floor: plain SCons rebuild after -c, trivial actions writing the same "
        f"files: {r['plain_rebuild_s']:.2f} s (cached rebuild = "
        f"{r['cached_vs_plain_rebuild']:.2f}x that)"
    )
    print(
        f"cold build: -j2 {r['cold_j2_s']:.2f} s vs -j1 {r['cold_j1_s']:.2f} s = "
        f"{r['j2_speedup']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
