"""fp16 cooperative-matrix matmul (kernels/lib_matmul_f16.py) against torch fp16 on the GPU.

    python bench/coop_bench.py [--quick] [--sizes 4096,8192] [--rounds 5]

Vulkan only (WGSL has no cooperative matrices). Ours: GPU timestamps around a batch of
dispatches (Device.timing), median of rounds; torch: CUDA events around the same number of
`torch.matmul` on half tensors (tensor cores, f32 accumulation inside cuBLAS). Prints
TFLOP/s of each and the ratio torch time / ours (target >= 0.5x). Outputs are checked
against torch's in float32 (|diff| <= 1e-2 * |C|max). --quick: a small size, any device
with the features (the cpu reference runs it too: --backend cpu).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(os.path.dirname(HERE), "kernels")
sys.path.insert(0, HERE)

from codegen_bench import gpu_time, say  # noqa: E402
from library_bench import time_torch  # noqa: E402

from vyre_build.compiler import compile_file  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backend", default="vulkan", choices=("vulkan", "cpu"))
    args = ap.parse_args(argv)
    from vyre_build.runtime import get_device, load_kernel

    dev = get_device(args.backend)
    dev.timing = True
    sizes = [128] if args.quick else [int(s) for s in args.sizes.split(",")]
    found = {
        k.stem: k for k in compile_file(os.path.join(KERNELS, "lib_matmul_f16.py"), root=KERNELS)
    }
    try:
        import torch

        have_torch = torch.cuda.is_available()
    except ImportError:
        torch, have_torch = None, False
    say(f"fp16 cooperative-matrix matmul on {dev.name} (subgroup {dev.profile.subgroup_size})")
    for stem, k in sorted(found.items()):
        code = {"vulkan": {"spirv": k.spirv}, "cpu": {"kdesc": k.kdesc}}[args.backend]
        kern = load_kernel(k.meta, device=dev, **code)
        for n in sizes:
            rng = np.random.default_rng(n)
            a = rng.standard_normal((n, n)).astype(np.float16)
            b = rng.standard_normal((n, n)).astype(np.float16)
            vec = {x["name"]: x["dtype"] == "vec4h" for x in k.meta["bindings"]}
            tile = 64  # C block per workgroup
            call = dict(
                a=dev.buffer(a.reshape(-1, 4) if vec["a"] else a.ravel()),
                b=dev.buffer(b.reshape(-1, 4) if vec["b"] else b.ravel()),
                c=dev.buffer(n * n, "f32"),
                m=n,
                n=n,
                k=n,
                gx=n // tile * 32,
                gy=n // tile,
            )
            number = 1 if args.quick else max(1, int(2e12 / (2 * n**3)))
            t0 = time.perf_counter()
            gpu_time(dev, kern, call, 1)  # warm-up (and the pipeline)
            times = [gpu_time(dev, kern, call, number) for _ in range(args.rounds)]
            wall = (time.perf_counter() - t0) / (args.rounds * number + 1)
            ours = statistics.median(times) if times[0] is not None else wall
            flop = 2.0 * n**3
            got = np.asarray(kern(**{**call, "c": n * n}).array("c")).reshape(n, n)
            line = f"  {stem:<18} n={n:<6} ours {flop / ours / 1e12:7.1f} TFLOP/s"
            if have_torch:
                ta = torch.from_numpy(a).cuda()
                tb = torch.from_numpy(b).cuda()
                want = torch.matmul(ta.float(), tb.float()).cpu().numpy()
                th = time_torch(
                    torch, lambda ta=ta, tb=tb: torch.matmul(ta, tb), number, args.rounds
                )
                ok = np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
                line += (
                    f"   torch fp16 {flop / th / 1e12:7.1f} TFLOP/s   ratio {th / ours:.3f}x"
                    f"   ({'matches torch' if ok else 'MISMATCH'})"
                )
            else:
                want = a.astype(np.float32) @ b.astype(np.float32)
                ok = np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
                line += f"   (no torch; {'matches numpy' if ok else 'MISMATCH'})"
            say(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
