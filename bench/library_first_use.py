"""`library.reduce(x)` without a bundle, in fresh processes: the first call of an
environment (it builds the library into the user cache), a later process (it opens that
bundle), and the same call with the repo's built bundle given (dist/kernels.vyrebundle,
when present), for comparison. Median over `--repeat` processes each; times are from the
process's start of `import vyre_build.runtime` to the first result.

    python3 bench/library_first_use.py [--backend cpu] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench_env import tree_pythonpath  # bench/ is the script's folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from vyre_build import library
from vyre_build.runtime import open_bundle
x = np.arange(1, 1001, dtype=np.float32)
if sys.argv[1]:
    with open_bundle(sys.argv[1]) as bundle:
        value = library.reduce(bundle, x)
else:
    value = library.reduce(x)
print(json.dumps({"s": time.perf_counter() - t0, "value": float(value),
                  "compiler": "vyre_build.compiler" in sys.modules}))
"""


def once(cache: str, backend: str, bundle: str = "") -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": cache, "VYRE_BACKEND": backend}
    env["PYTHONPATH"] = tree_pythonpath(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, bundle], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    first, later, given = [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as cache:
            run = once(cache, args.backend)
            assert run["compiler"] and run["value"] == 500500.0
            first.append(run["s"])
            run = once(cache, args.backend)
            assert not run["compiler"] and run["value"] == 500500.0
            later.append(run["s"])
            built = os.path.join(ROOT, "dist", "kernels.vyrebundle")
            if os.path.isfile(built):
                given.append(once(cache, args.backend, built)["s"])
    f, w = statistics.median(first), statistics.median(later)
    print(f"backend {args.backend}, median of {args.repeat} fresh processes:")
    print(f"  first call of an environment (builds the library): {f:.3f} s")
    print(f"  a later process (opens it, no compiler imported):  {w:.3f} s  ({f / w:.1f}x faster)")
    if given:
        g = statistics.median(given)
        print(f"  the repo's bundle given instead:                   {g:.3f} s  ({w / g:.2f}x)")


if __name__ == "__main__":
    main()
