"""Debug-build cost: saxpy (kernels/saxpy.py) release vs debug build on each backend,
best of --repeat calls at --n elements, and the ratio (a debug build checks 3 accesses
per element and reads its debug buffer back after every call).

    python bench/debug_bench.py [--n 1048576] [--repeat 5] [--backends cpu,wgpu,vulkan]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.runtime import get_device, load_kernel  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels")
CODE = {"wgpu": "wgsl", "vulkan": "spirv", "cpu": "kdesc"}


def seconds(backend: str, debug: bool, n: int, repeat: int) -> float:
    (ck,) = compile_file(os.path.join(ROOT, "saxpy.py"), root=ROOT, options={"debug": debug})
    device = get_device(backend)
    k = load_kernel(ck.meta, device=device, **{CODE[backend]: getattr(ck, CODE[backend])})
    x = device.buffer(np.ones(n, np.float32))
    y = device.buffer(np.ones(n, np.float32))
    k(x=x, y=y, a=2.0)  # warm: pipeline made
    device.wait()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        k(x=x, y=y, a=2.0)
        device.wait()  # wgpu returns before the GPU is done; a debug call has waited
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1 << 20)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--backends", default="cpu,wgpu,vulkan")
    args = p.parse_args()
    print(f"saxpy, {args.n} elements, best of {args.repeat}")
    print(f"{'backend':<8} {'release s':>10} {'debug s':>10} {'debug/release':>14}")
    for backend in args.backends.split(","):
        rel = seconds(backend, False, args.n, args.repeat)
        dbg = seconds(backend, True, args.n, args.repeat)
        print(f"{backend:<8} {rel:>10.4f} {dbg:>10.4f} {dbg / rel:>14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
