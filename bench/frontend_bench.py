"""Frontend and whole-compile time over kernels/, this checkout against a baseline checkout.

    python3 bench/frontend_bench.py --baseline /path/to/other/checkout [--rounds 5]

Each round runs both trees in fresh processes, alternately (so machine noise hits both);
the best round of each is compared: the ratio is this checkout's time over the baseline's
(what the hostile-input limits and confinement checks cost).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = r"""
import glob, json, os, sys, time
root = sys.argv[1]
sys.path.insert(0, root)
from vyre_build.frontend import check_module, load_module
from vyre_build.compiler import compile_file
kernels = os.path.join(root, "kernels")
files = sorted(glob.glob(os.path.join(kernels, "*.py")))
def best(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter(); fn(); out.append(time.perf_counter() - t)
    return min(out)
compile_file(files[0], root=kernels)
fe = best(lambda: [check_module(load_module(p, root=kernels)) for p in files], 15)
full = best(lambda: [compile_file(p, root=kernels) for p in files], 5)
print(json.dumps({"frontend": fe, "compile": full, "files": len(files)}))
"""


def measure(root: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, root], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="another checkout (e.g. of main)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    runs = {"this": [], "baseline": []}
    for _ in range(args.rounds):
        runs["baseline"].append(measure(os.path.abspath(args.baseline)))
        runs["this"].append(measure(HERE))
    for key in ("frontend", "compile"):
        base = min(r[key] for r in runs["baseline"])
        this = min(r[key] for r in runs["this"])
        print(
            f"{key:9s} this {this * 1e3:7.1f} ms  baseline {base * 1e3:7.1f} ms  "
            f"ratio {this / base:.2f}x  ({runs['this'][0]['files']} files)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
