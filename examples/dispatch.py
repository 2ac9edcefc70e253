"""Open the built bundle and dispatch prebuilt kernels, checking each against numpy.

    python examples/dispatch.py [dist/kernels.vyrebundle] [--backend wgpu|vulkan|cpu]

Nothing here compiles: the runtime reads WGSL / SPIR-V straight out of the bundle.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from vyre_build.core.errors import VyreError
from vyre_build.runtime import open_bundle


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", default="dist/kernels.vyrebundle")
    ap.add_argument("--backend", choices=("wgpu", "vulkan", "cpu"), default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    n = 100_003
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    ints = rng.integers(0, 1 << 31, n, dtype=np.uint32)
    x4, y4 = (rng.standard_normal((n // 4, 4), dtype=np.float32) for _ in range(2))
    try:
        t0 = time.perf_counter()
        with open_bundle(args.bundle, backend=args.backend) as bundle:
            print(
                f"opened {args.bundle}: {len(bundle)} kernels "
                f"({(time.perf_counter() - t0) * 1e3:.1f} ms)"
            )
            # Bundle is a Mapping of kernel id -> Kernel; .array(name, dtype) is typed.
            checks = [
                ("saxpy", bundle["saxpy"](x=x, y=y.copy(), a=2.5).array("y"), 2.5 * x + y),
                ("add.f32", bundle["add.f32"](a=x, b=y, out=n).array("out"), x + y),
                ("add.u32", bundle.kernel("add", "u32")(a=ints, b=ints, out=n)["out"], ints + ints),
                # vec4f buffers: float32 arrays of shape (n, 4), one 16-byte load per element
                ("saxpy4", bundle["saxpy4"](x=x4, y=y4.copy(), a=0.5).array("y"), 0.5 * x4 + y4),
            ]
        for name, got, want in checks:
            ok = (
                np.allclose(got, want, rtol=1e-6, atol=1e-6)
                if got.dtype == np.float32
                else np.array_equal(got, want)
            )
            print(f"{name:<10} n={n}: {'matches numpy' if ok else 'MISMATCH'}")
            if not ok:
                return 1
    except VyreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
