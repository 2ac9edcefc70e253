"""Host cost of one library call on wgpu (issue 23, item 3): this tree against a base
revision, each in its own process, their rounds interleaved.

    python3 bench/wgpu_host_bench.py                      # base: d47e83a, sizes 4096
    python3 bench/wgpu_host_bench.py --base HEAD~3 --sizes 4096,65536 --rounds 7

Each case calls one library function `--calls` times on the default library (wgpu, the
first adapter: lavapipe here) and waits once at the end: wall time per call, host
included ("wall"), and the CPU time of the calling thread per call ("host": the host
cost itself; lavapipe runs the dispatches on threads of its own, and a wait for them
costs no CPU time of the caller, so the GPU time of lavapipe's dispatches is not in it).
"reduce"/"scan": on DeviceBuffers with out= (an application keeping its data on the
device); "reduce np"/"scan np": a numpy array in, a numpy result out. Each figure is the
median of --rounds rounds, each round a fresh process per side after a warm-up of 20
calls. Ratio = base time / this tree's time (> 1: this tree is faster). The base tree is
`git archive`d into a temporary folder (vyre_build/ and kernels/ only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_env import tree_pythonpath  # bench/ is the script's folder

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASE = "d47e83a"  # the tree before issue 23's host-cost work
CASES = ("reduce", "scan", "reduce np", "scan np")


def worker(sizes: list[int], calls: int) -> dict[str, float]:
    """Seconds per call of each case and size, in the vyre_build first on sys.path: wall
    time and the calling thread's CPU time."""
    import numpy as np

    from vyre_build.runtime import get_device
    from vyre_build import library

    dev = get_device("wgpu")
    times: dict[str, float] = {}
    rng = np.random.default_rng(0)
    for n in sizes:
        host = rng.random(n, dtype=np.float32)
        x = dev.buffer(host)
        one, full = dev.buffer(1, "f32"), dev.buffer(n, "f32")
        run = {
            "reduce": lambda x=x, one=one: library.reduce(x, out=one),
            "scan": lambda x=x, full=full: library.scan(x, out=full),
            "reduce np": lambda host=host: library.reduce(host),
            "scan np": lambda host=host: library.scan(host),
        }
        for case in CASES:
            call = run[case]
            for _ in range(20):
                call()
            dev.wait()
            start, cpu = time.perf_counter(), time.thread_time()
            for _ in range(calls):
                call()
            dev.wait()
            times[f"{case} {n} wall"] = (time.perf_counter() - start) / calls
            times[f"{case} {n} host"] = (time.thread_time() - cpu) / calls
    return times


def side(tree: str, sizes: str, calls: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": tree_pythonpath(tree), "VYRE_BACKEND": "wgpu"}
    args = [sys.executable, os.path.abspath(__file__), "--worker", "--sizes", sizes]
    done = subprocess.run(
        [*args, "--calls", str(calls)], env=env, cwd=tree, capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(f"the worker in {tree} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE, help="the revision compared against")
    parser.add_argument("--sizes", default="4096", help="element counts, comma-separated")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        sys.path.insert(0, os.getcwd())
        print(json.dumps(worker(sizes, args.calls)))
        return
    with tempfile.TemporaryDirectory() as base:
        got = subprocess.run(
            ["git", "-C", ROOT, "archive", args.base, "vyre_build", "kernels"],
            capture_output=True,
        )
        if got.returncode != 0:
            why = got.stderr.decode(errors="replace").strip().splitlines()
            sys.exit(
                f"wgpu_host_bench: no revision {args.base!r} to compare against in {ROOT} "
                f"(git: {why[-1] if why else 'exit status ' + str(got.returncode)}); "
                "--base needs a git checkout that holds that revision"
            )
        subprocess.run(["tar", "-x", "-C", base], input=got.stdout, check=True)
        runs: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
        for _ in range(args.rounds):
            runs["base"].append(side(base, args.sizes, args.calls))
            runs["this"].append(side(ROOT, args.sizes, args.calls))
    print(f"wgpu host cost per library call: {args.base} vs this tree, ", end="")
    print(f"median of {args.rounds} rounds of {args.calls} calls")
    for key in runs["this"][0]:
        before = statistics.median(r[key] for r in runs["base"])
        after = statistics.median(r[key] for r in runs["this"])
        print(
            f"  {key:>21}: {before * 1e6:8.1f} us -> {after * 1e6:8.1f} us per call, "
            f"ratio {before / after:.2f}x"
        )


if __name__ == "__main__":
    main()
