"""Fresh-process start-up, phase by phase, for bench/runtime_bench.py: the bundle path with
a cold and a warm persisted pipeline cache (and with only the driver's own cache), the
compile-from-source path, and `bundle.warm()` of the whole tree.

Run alone, it prints the two start-up figures of issue 23 for the code under --root
(default: this checkout), so that two checkouts can be compared on one machine:

    python bench/runtime_start.py [--backend vulkan|wgpu] [--repeat N] [--root DIR]
        [--base REV] [--threads 1,4,8]

`bundle.warm()` of the tree with a warm pipeline cache and the driver's cache off (with the
Vulkan layouts it made; the library imported, so that warm() leaves out the candidates no
pick on the device runs: each line says how many kernels it warmed and left unpicked),
the same with `warm(all=True)` (every kernel, as before picks), and the open of a bundle of
100 kernels (in this process), alone and with what the first kernel load reads of it (its
metadata and shader).

With --base REV, the same figures for that revision's vyre_build (git archive), the
processes of both interleaved, and their ratios; the warm() line splits off the driver's
vkCreateComputePipelines (Vulkan): the time some thread is in it (the union of the calls,
which overlap the calling thread's preparation where the tree creates on helper threads
while it loads), the rest of warm() (nothing being created), when the first call began,
and the calling thread's CPU outside the driver. --threads: warm() with those
most-threads settings of Vulkan pipeline creation (stream._THREADS, in older trees
pipelines._THREADS), to choose it on a device. --simulate MS: the driver's pipeline
creation replaced by a serial stand-in of MS per pipeline (releasing the GIL; the thread
counts of a 16-core host), to show on a host without NVIDIA's driver how warm() overlaps
a driver like it.

Every figure is the median over `repeat` fresh processes (after one discarded run that
writes bytecode caches and primes whichever cache the configuration keeps warm). "Driver
cache off" sets __GL_SHADER_DISK_CACHE=0 (NVIDIA) and MESA_SHADER_CACHE_DISABLE=true
(Mesa), so that a cold pipeline is compiled by the driver for real.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["root"])
import numpy as np
from vyre_build.runtime import get_device, load_kernel, open_bundle
if cfg["mode"] == "warm":
    from vyre_build import library  # its picks: what warm() leaves out (where the tree has them)
t1 = time.perf_counter()
driver = [0.0, 0.0]  # the driver's pipeline creation: wall (busy on any thread), caller's CPU
spans = []  # (start, end) of each driver call, on whichever thread
if cfg["backend"] == "vulkan":
    import threading
    try:  # the layered tree's module, else (--base of an older revision) the flat one's
        from vyre_build.runtime.backends.vulkan import pipelines as vp
    except ImportError:
        from vyre_build.runtime import vulkan_pipelines as vp
    try:  # overlapped creation: each slice's call, on helper threads and the caller
        from vyre_build.runtime.backends.vulkan import stream as vs
    except ImportError:
        vs = None
    owner = vs if vs is not None and hasattr(vs, "_THREADS") else vp
    if cfg.get("threads") and hasattr(owner, "_THREADS"):
        owner._THREADS = cfg["threads"]
    name = "create_slice" if vs is not None else "_create_in_parallel"
    timed = getattr(vs if vs is not None else vp, name, None)
    caller = threading.get_ident()
    if timed is not None and cfg.get("sim_ms"):  # a stand-in driver: see --simulate
        import os
        os.cpu_count = lambda: 16  # the H200 host's: its threads (the stand-in takes no CPU)
        gate, busy_until = threading.Lock(), [0.0]
        def timed(*a):  # (device, cache, slice), or (device, cache, infos, pipes, n) of older trees
            n = len(a[2].kernels) if len(a) == 3 else a[4]
            with gate:  # one pipeline after another, as NVIDIA's driver from a warm cache
                start = max(time.perf_counter(), busy_until[0])
                busy_until[0] = end = start + n * cfg["sim_ms"] * 1e-3
            while (left := end - time.perf_counter()) > 0:
                time.sleep(left)  # the GIL released, as in the real call
            return 0  # VK_SUCCESS, no pipeline made (nothing is dispatched after)
    if timed is not None:  # the driver's vkCreateComputePipelines, timed apart
        def _timed(*a, _f=timed):
            t, c = time.perf_counter(), time.thread_time()
            try:
                return _f(*a)
            finally:
                spans.append((t, time.perf_counter()))
                if threading.get_ident() == caller:
                    driver[1] += time.thread_time() - c
        setattr(vs if vs is not None else vp, name, _timed)
dev = get_device(cfg["backend"], pipeline_cache=cfg["cache"])
t2 = time.perf_counter()
created, warmed, unpicked = 0, 0, 0
if cfg["mode"] == "compile":
    from vyre_build.compiler import compile_file
    target = "wgsl" if cfg["backend"] == "wgpu" else "spirv"
    (k,) = compile_file(cfg["src"], root=cfg["kernels"], targets=(target, "kdesc"), kernel="saxpy")
    t3 = time.perf_counter()
    code = {"wgsl": k.wgsl} if target == "wgsl" else {"spirv": k.spirv}
    kern = load_kernel(k.meta, device=dev, **code)
else:
    bundle = open_bundle(cfg["bundle"], device=dev)
    t3 = time.perf_counter()
    if cfg["mode"] == "warm":
        driver[:] = [0.0, 0.0]
        del spans[:]
        tw, cw = time.perf_counter(), time.thread_time()
        w = bundle.warm(all=True) if cfg.get("all") else bundle.warm()
        warm_s, warm_cpu = time.perf_counter() - tw, time.thread_time() - cw
        end = 0.0  # the union of the calls' spans: while some thread was in the driver
        for a, b in sorted(spans):
            driver[0] += max(0.0, b - max(a, end))
            end = max(end, b)
        first = min((a for a, _ in spans), default=tw) - tw
        created, warmed = w.created, len(w.kernels)
        unpicked = len(getattr(w, "unpicked", ()))
    kern = bundle["saxpy"]
    kern.warm()
t4 = time.perf_counter()
if not cfg.get("sim_ms"):  # a stand-in driver made no pipeline to run
    x = np.arange(1000, dtype=np.float32)
    y = kern(x=x, y=np.ones(1000, np.float32), a=2.0).array("y")
    assert y[999] == 1999.0
t5 = time.perf_counter()
loaded = getattr(dev, "cache_loaded", 0)
layouts = len(getattr(getattr(dev, "pipelines", dev), "layouts", ()))  # older trees: dev.layouts
dev.close()  # saves the persisted pipeline cache: not timed
print(json.dumps({"inside": t5 - t0, "imports": t1 - t0, "device": t2 - t1, "open": t3 - t2,
                  "load": t4 - t3, "dispatch": t5 - t4, "created": created, "loaded": loaded,
                  "warmed": warmed, "unpicked": unpicked,
                  "layouts": layouts, "driver": driver[0],
                  "warm": warm_s if cfg["mode"] == "warm" else 0.0,
                  "first_call": first if cfg["mode"] == "warm" else 0.0,
                  "python_cpu": warm_cpu - driver[1] if cfg["mode"] == "warm" else 0.0}))
"""
OPEN_CHILD = r"""
import json, statistics, sys, time
cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["root"])
from vyre_build.runtime import open_bundle
def once():
    open_bundle(cfg["bundle"], device=None).close()
def first():  # the open and what the first kernel load reads: its metadata and shader
    bundle = open_bundle(cfg["bundle"], device=None)
    bundle.reader.kernel_meta("saxpy")
    bundle.reader.read_artifact("saxpy", ".spv")
    bundle.close()
out = {}
for name, fn in (("", once), ("first_", first)):
    for _ in range(20):
        fn()
    rounds = []
    for _ in range(cfg["rounds"]):
        t = time.perf_counter()
        fn()
        rounds.append(time.perf_counter() - t)
    out.update({name + "median": statistics.median(rounds), name + "best": min(rounds)})
print(json.dumps(out))
"""
PHASES = (
    ("interpreter start", "start"),
    ("numpy + runtime import", "imports"),
    ("backend import + device creation", "device"),
    ("bundle open | compile source", "open"),
    ("first kernel load (shader + pipeline)", "load"),
    ("first dispatch and result", "dispatch"),
    ("whole process", "wall"),
)
DRIVER_OFF = {"__GL_SHADER_DISK_CACHE": "0", "MESA_SHADER_CACHE_DISABLE": "true"}


def _fresh(config: dict, env: dict) -> dict:
    """The phases (seconds) of one fresh process running CHILD with `config`."""
    full = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    full.update(env)
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(config)],
        capture_output=True,
        text=True,
        env=full,
        check=False,
    )
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"start-up child failed: {done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["wall"], out["start"] = wall, wall - out["inside"]
    return out


def _medians(runs: list) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def driver_cache(backend: str, tmp: str, name: str = "driver") -> dict:
    """The environment turning the driver's own shader disk cache on, in a folder of tmp."""
    driver_dir = os.path.join(tmp, f"{name}-{backend}")
    os.makedirs(driver_dir, exist_ok=True)  # NVIDIA's cache writes only into a folder that exists
    return {
        "__GL_SHADER_DISK_CACHE": "1",
        "__GL_SHADER_DISK_CACHE_PATH": driver_dir,
        "__GL_SHADER_DISK_CACHE_SKIP_CLEANUP": "1",
        "MESA_SHADER_CACHE_DIR": driver_dir,
    }


def configurations(backend: str, tmp: str) -> list:
    """(label, mode, pipeline_cache setting, env, fresh cache dir per run) per path."""
    driver_on = driver_cache(backend, tmp)
    warm_dir = os.path.join(tmp, f"plc-{backend}")
    out = [("bundle, cold (no caches)", "bundle", "fresh", DRIVER_OFF)]
    if backend == "vulkan":
        out.append(("bundle, warm pipeline cache", "bundle", warm_dir, DRIVER_OFF))
    out.append(("bundle, driver cache only", "bundle", False, driver_on))
    out.append(("compile + cold pipeline", "compile", "fresh", DRIVER_OFF))
    return out


def startup(
    backend: str,
    root: str,
    tree_bundle: str,
    tree_count: int,
    repeat: int,
    say: Callable[[str], None],
) -> None:
    """Print the per-phase medians of each configuration, then the issue's ratios."""
    base = {
        "root": root,
        "backend": backend,
        "bundle": tree_bundle,
        "src": os.path.join(root, "kernels", "saxpy.py"),
        "kernels": os.path.join(root, "kernels"),
    }
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="vyre-start-") as tmp:
        runs_of: dict = {}
        for label, mode, cache, env in configurations(backend, tmp):
            runs = []
            for i in range(repeat + 1):
                setting = (
                    os.path.join(tmp, f"fresh-{backend}-{label[:6]}-{i}")
                    if cache == "fresh"
                    else cache
                )
                runs.append(_fresh({**base, "mode": mode, "cache": setting}, env))
            runs_of[label] = runs[1:]
            results[label] = _medians(runs[1:])
        warm_dir = os.path.join(tmp, f"plc-warm-{backend}")
        both_dir = os.path.join(tmp, f"plc-both-{backend}")
        for label, cache, env in (
            ("warm(), warm pipeline cache", warm_dir, DRIVER_OFF),
            (
                "warm(), warm pipeline and driver caches",
                both_dir,
                driver_cache(backend, tmp, "drv2"),
            ),
            ("warm(), cold", "fresh", DRIVER_OFF),
        ):
            if backend != "vulkan" and cache != "fresh":
                continue
            runs = []
            for i in range(repeat + 1):
                setting = os.path.join(tmp, f"warmcold-{i}") if cache == "fresh" else cache
                runs.append(_fresh({**base, "mode": "warm", "cache": setting}, env))
            results[label] = _medians(runs[1:])
    labels = [lab for lab in results if not lab.startswith("warm()")]
    say(
        f"[{backend}] fresh process to the first saxpy result, median of {repeat} (ms), "
        "driver shader cache off unless named:"
    )
    say(f"    {'phase':40s} " + " | ".join(f"{lab:>28s}" for lab in labels))
    for name, key in PHASES:
        say(f"    {name:40s} " + " | ".join(f"{results[lab][key] * 1e3:28.2f}" for lab in labels))
    cold, comp = results["bundle, cold (no caches)"], results["compile + cold pipeline"]
    warm = results.get("bundle, warm pipeline cache")
    best = warm or results["bundle, driver cache only"]
    which = "warm pipeline cache" if warm else "driver cache only (wgpu has no pipeline cache API)"
    say(
        f"[{backend}] first kernel load from the bundle, {which}: {best['load'] * 1e3:.3f} ms "
        f"(cold {cold['load'] * 1e3:.3f} ms: {cold['load'] / best['load']:.1f}x faster; "
        f"target <= 1 ms)"
    )
    say(
        f"[{backend}] compile + cold pipeline vs bundle kernel load ({which}): "
        f"{(comp['open'] + comp['load']) * 1e3:.2f} ms vs {best['load'] * 1e3:.3f} ms = "
        f"{(comp['open'] + comp['load']) / best['load']:.1f}x (target >= 20x); with the bundle "
        f"open counted: {(comp['open'] + comp['load']) / (best['open'] + best['load']):.1f}x"
    )
    say(
        f"[{backend}] whole process, compile path vs bundle path ({which}): "
        f"{comp['wall'] / best['wall']:.2f}x (interpreter, imports and device creation are "
        "the same on both paths)"
    )
    for label in (
        "warm(), warm pipeline cache",
        "warm(), warm pipeline and driver caches",
        "warm(), cold",
    ):
        if label in results:
            r = results[label]
            say(
                f"[{backend}] bundle.warm() of the tree ({r['warmed']:.0f} of its {tree_count} "
                f"kernels, {r['unpicked']:.0f} unpicked), {label[8:]}: "
                f"{(r['load']) * 1e3:.2f} ms ({r['created']:.0f} pipelines created, "
                f"{r['loaded']:.0f} cache bytes loaded)"
                + (" (target <= 10 ms)" if "warm pipeline" in label else "")
            )
    if warm is not None and "warm(), cold" in results:
        w, c = results["warm(), warm pipeline cache"], results["warm(), cold"]
        say(f"[{backend}] bundle.warm() cold / warm pipeline cache: {c['load'] / w['load']:.1f}x")


def _open_times(root: str, bundle: str, rounds: int) -> dict:
    """Median and best seconds of opening `bundle` (no device) in a fresh process running
    the vyre_build of `root`, over `rounds` opens after 20 discarded ones."""
    full = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cfg = json.dumps({"root": root, "bundle": bundle, "rounds": rounds})
    done = subprocess.run(
        [sys.executable, "-c", OPEN_CHILD, cfg], capture_output=True, text=True, env=full
    )
    if done.returncode != 0:
        raise RuntimeError(f"bundle open child failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _base_tree(rev: str, into: str) -> str:
    """vyre_build/ of revision `rev` of this checkout, `git archive`d into `into`."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    archive = subprocess.run(
        ["git", "-C", here, "archive", rev, "vyre_build"], capture_output=True, check=True
    ).stdout
    os.makedirs(into, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return into


def main(argv: list[str] | None = None) -> int:
    """`bundle.warm()` of the tree (warm pipeline cache, driver cache off) and the open of a
    bundle of 100 kernels, medians over fresh processes / rounds, for the code of --root,
    and with --base for that revision too (interleaved, same bundles: ratios of one run)."""
    import argparse

    p = argparse.ArgumentParser(description="bundle.warm() and bundle open, for one checkout")
    p.add_argument("--backend", default="vulkan", choices=("vulkan", "wgpu"))
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--base", default="", help="a git revision to compare with (git archive)")
    p.add_argument(
        "--threads",
        default="",
        help="Vulkan: also warm() with these most-threads settings of pipeline creation "
        "(comma list, e.g. 1,4,8), this tree only",
    )
    p.add_argument(
        "--simulate",
        type=float,
        default=0.0,
        metavar="MS",
        help="Vulkan: replace the driver's pipeline creation by a stand-in taking MS per "
        "pipeline, one after another on any thread, with the GIL released (as NVIDIA's "
        "from a warm cache: the H200's 8.23 ms for 88 pipelines is about 0.094), so that "
        "a host without that driver shows how warm()'s Python overlaps it (with the "
        "H200 host's 16 cores for the thread counts); no pipeline is made, so nothing "
        "is dispatched",
    )
    a = p.parse_args(argv)
    root = os.path.abspath(a.root)
    sys.path.insert(0, root)
    sys.path.insert(1, os.path.join(root, "bench"))
    import runtime_bench  # the bundles it builds: the tree's kernels, and 100 of them

    with tempfile.TemporaryDirectory(prefix="vyre-start-") as tmp:
        tree, hundred = os.path.join(tmp, "tree.vyrebundle"), os.path.join(tmp, "h.vyrebundle")
        count = len(runtime_bench.build_bundle(tree, count=0))
        runtime_bench.build_bundle(hundred)
        sides = {"this": root, "this, warm(all=True)": root}
        if a.base:
            sides["base"] = _base_tree(a.base, os.path.join(tmp, "base"))
        warm_runs: dict[str, list] = {k: [] for k in sides}
        opened = [k for k in sides if not k.endswith("all=True)")]  # one open per tree
        open_runs: dict[str, list] = {k: [] for k in opened}
        for i in range(a.repeat + 1):  # interleaved; the first of each side discarded
            for side, where in sides.items():
                cfg = {"root": where, "backend": a.backend, "bundle": tree, "mode": "warm"}
                cfg["cache"] = os.path.join(tmp, f"plc-{list(sides).index(side)}")
                cfg["all"] = side.endswith("all=True)")
                cfg["sim_ms"] = a.simulate
                run = _fresh(cfg, DRIVER_OFF)
                if i:
                    warm_runs[side].append(run)
        for _ in range(3):
            for side in opened:
                open_runs[side].append(_open_times(sides[side], hundred, max(a.repeat, 20) * 5))
        for side in sides:
            r = _medians(warm_runs[side])
            each = ", ".join(f"{x['warm'] * 1e3:.2f}" for x in warm_runs[side])
            split = (
                f"; driver's vkCreateComputePipelines busy {r['driver'] * 1e3:.2f} ms (on "
                f"any thread), the rest (nothing being created: Python, shader modules) "
                f"{(r['warm'] - r['driver']) * 1e3:.2f} ms, first call at "
                f"{r['first_call'] * 1e3:.2f} ms; CPU of the calling thread outside the "
                f"driver {r['python_cpu'] * 1e3:.2f} ms"
                if r["driver"]
                else ""
            )
            print(
                f"[{a.backend}] {side}: bundle.warm() of the tree ({r['warmed']:.0f} of its "
                f"{count} kernels, {r['unpicked']:.0f} left unpicked), warm pipeline cache, "
                f"driver cache off, median of {a.repeat}: "
                f"{r['warm'] * 1e3:.2f} ms (runs {each}; {r['created']:.0f} pipelines, "
                f"{r['layouts']:.0f} layouts on the device{split}) (target <= 10 ms)"
            )
            if side not in open_runs:
                continue
            o = statistics.median(x["median"] for x in open_runs[side])
            best = min(x["best"] for x in open_runs[side])
            first = statistics.median(x["first_median"] for x in open_runs[side])
            print(
                f"[{a.backend}] {side}: bundle open (100 kernels): {o * 1e3:.3f} ms median "
                f"(best {best * 1e3:.3f} ms; target <= 1 ms); with the first kernel's "
                f"metadata and shader read: {first * 1e3:.3f} ms"
            )
        w = {k: _medians(v) for k, v in warm_runs.items()}
        every = w["this, warm(all=True)"]
        print(
            f"[{a.backend}] this tree, warm(all=True) -> warm(): {every['warmed']:.0f} -> "
            f"{w['this']['warmed']:.0f} kernels ({every['created']:.0f} -> "
            f"{w['this']['created']:.0f} pipelines), {every['warm'] * 1e3:.2f} -> "
            f"{w['this']['warm'] * 1e3:.2f} ms ({every['warm'] / w['this']['warm']:.2f}x)"
        )
        if a.base:
            o = {k: statistics.median(x["median"] for x in v) for k, v in open_runs.items()}
            f = {k: statistics.median(x["first_median"] for x in v) for k, v in open_runs.items()}
            print(
                f"[{a.backend}] {a.base} -> this tree: warm() of {w['base']['warmed']:.0f} -> "
                f"{w['this']['warmed']:.0f} kernels ({w['base']['created']:.0f} -> "
                f"{w['this']['created']:.0f} pipelines) {w['base']['warm'] * 1e3:.2f} -> "
                f"{w['this']['warm'] * 1e3:.2f} ms ({w['base']['warm'] / w['this']['warm']:.2f}x"
                f"), outside the driver's pipeline creation "
                f"{(w['base']['warm'] - w['base']['driver']) * 1e3:.2f} -> "
                f"{(w['this']['warm'] - w['this']['driver']) * 1e3:.2f} ms (CPU "
                f"{w['base']['python_cpu'] * 1e3:.2f} -> {w['this']['python_cpu'] * 1e3:.2f} "
                f"ms: {w['base']['python_cpu'] / w['this']['python_cpu']:.2f}x); bundle open "
                f"{o['base'] * 1e3:.3f} -> {o['this'] * 1e3:.3f} ms "
                f"({o['base'] / o['this']:.2f}x), with the first kernel's metadata and "
                f"shader {f['base'] * 1e3:.3f} -> {f['this'] * 1e3:.3f} ms "
                f"({f['base'] / f['this']:.2f}x)"
            )
        for threads in [int(t) for t in a.threads.split(",") if t] * (a.backend == "vulkan"):
            cfg = {"root": root, "backend": a.backend, "bundle": tree, "mode": "warm"}
            cfg.update(cache=os.path.join(tmp, "plc-0"), threads=threads)
            r = _medians([_fresh(cfg, DRIVER_OFF) for _ in range(a.repeat)])
            print(
                f"[{a.backend}] this, pipeline creation on at most {threads} threads: "
                f"warm() {r['warm'] * 1e3:.2f} ms, of which vkCreateComputePipelines "
                f"{r['driver'] * 1e3:.2f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
