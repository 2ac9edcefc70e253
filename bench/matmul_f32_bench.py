"""fp32 matmul against torch fp32 (allow_tf32 off): library.matmul as it routes, each
lib_matmul variant called directly with the library's bindings and grid, bench/kernels/
candidates of the same bindings, and the same design hand-written in GLSL (--glsl,
bench/glsl/sgemm.comp): whether the language or the design is short of issue 22's 0.8x.

    python3 bench/matmul_f32_bench.py [--sizes 2048,4096,8192] [--shapes 2048x8192x2048] [--rounds 5]
        [--variants f32,f32_pad,f32_k16] [--candidate F.py] [--glsl] [--rolled]
        [--backend vulkan|wgpu] [--robust] [--spirv F.spv,...]

--rolled: the --variants also built with their K step's inner loop (`for k in
unroll(u32(BK))`, copied by the compiler so that the step's shared-memory indices are
constants in the code each backend gets) written `range(u32(BK))`, a loop that naga and the
driver must unroll themselves, or not; stems "+rolled".

--spirv (Vulkan): also time these SPIR-V modules with lib_matmul.f32's bindings and grid,
such as bench/naga/lib_matmul.f32.spv, the module wgpu hands the driver for our WGSL
(captured by tools/naga_spirv/capture.py): naga's code on the Vulkan backend's dispatch.

--robust (Vulkan): the device created with robustBufferAccess on, as wgpu creates its own
Vulkan devices (WebGPU's safety: every buffer access bounds-checked by the driver), so that
the Vulkan figures read against the wgpu ones: whether the wgpu backend's gap is naga's
code or the driver's checks.

Ours: GPU timestamps around a batch of calls (wall time on wgpu); torch: CUDA events around
the same number of torch.matmul on float32 tensors. Prints TFLOP/s and torch time / ours,
and checks every output against torch's (|diff| <= 1e-3 |C|max; numpy's without torch).
The GLSL witnesses run the interior sizes only (multiples of 128).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = os.path.join(ROOT, "kernels")
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

from bench_env import cuda_torch  # noqa: E402
from library_bench import CODE, kernels_for, say, say_rate, time_ours, time_torch, timed_device  # noqa: E402

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.runtime import load_kernel  # noqa: E402

GLSL = ("sgemm", "sgemm_vecb", "sgemm_k16", "sgemm_k16_vecb", "sgemm_vecb_w48")


def direct_call(kern, a, b, c, m: int, k: int, n: int):
    """A call of a lib_matmul variant (or a kernel of its bindings) on (m x k) @ (k x n),
    with the library's grid: blocks of 64 * RM rows by 64 * RN columns (the variant's
    values, else lib_matmul's 2 and 2)."""
    values = kern.meta.variant_values or {}
    bm, bn = 64 * int(values.get("RM", 2)), 64 * int(values.get("RN", 2))
    grid = (-(-n // bn) * 256, -(-m // bm))
    return lambda: kern(a=a, b=b, b4=b, c=c, M=m, N=n, K=k, vb=int(n % 4 == 0), grid=grid)


def shapes_of(sizes: str, shapes: str) -> list[tuple[int, int, int]]:
    """(M, K, N) of each --sizes entry (square) and each --shapes MxKxN entry."""
    out = [(n, n, n) for n in (int(s) for s in sizes.split(",") if s)]
    for item in filter(None, shapes.split(",")):
        parts = item.lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise SystemExit(f"--shapes {item!r}: write MxKxN, three positive integers")
        out.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return out


MATMUL = os.path.join(KERNELS, "lib_matmul.py")


def robust_devices() -> None:
    """--robust: every Vulkan device the runtime creates from now on has robustBufferAccess
    on (VkPhysicalDeviceFeatures, in the VkPhysicalDeviceFeatures2 of its create-info)."""
    import vulkan as vk

    from vyre_build.runtime.backends.vulkan import profile

    make_info = profile.device_create_info

    def device_create_info(family, enable, keep):
        info = make_info(family, enable, keep)
        if info.pNext == vk.ffi.NULL:
            features = vk.ffi.new("VkPhysicalDeviceFeatures2*")
            features.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
            keep.append(features)
            info.pNext = features
        else:
            features = vk.ffi.cast("VkPhysicalDeviceFeatures2*", info.pNext)
        features.features.robustBufferAccess = vk.VK_TRUE
        return info

    profile.device_create_info = device_create_info


def rolled_text() -> str:
    """kernels/lib_matmul.py with its K steps' inner loops as `range` loops, not unrolled
    by the compiler."""
    with open(MATMUL) as f:
        text = f.read()
    loop = "for k in unroll(u32(BK)):"
    if text.count(loop) != 2:
        raise SystemExit("kernels/lib_matmul.py's K loops changed: --rolled cannot rewrite them")
    return text.replace(loop, "for k in range(u32(BK)):")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument(
        "--shapes", default="", help="comma list of MxKxN: non-square cases after --sizes"
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="f32", help="lib_matmul variants called directly")
    ap.add_argument(
        "--candidate",
        default="",
        help="also time bench/kernels/F (its variants; a comma list: each file)",
    )
    ap.add_argument("--glsl", action="store_true", help="also time bench/glsl/sgemm*.spv")
    ap.add_argument("--rolled", action="store_true", help="also the variants, inner loop rolled")
    ap.add_argument("--backend", default="vulkan", choices=("vulkan", "wgpu", "cpu"))
    ap.add_argument("--robust", action="store_true", help="Vulkan with robustBufferAccess on")
    ap.add_argument("--spirv", default="", help="comma list of SPIR-V files: time them too")
    args = ap.parse_args(argv)
    if args.robust:
        robust_devices()

    from vyre_build import library

    dev = timed_device(args.backend)
    code = CODE[args.backend]
    compiled = compile_file(os.path.join(KERNELS, "lib_matmul.py"), root=KERNELS)
    kernels = kernels_for(dev, compiled)  # those the device can run
    meta = next(k.meta for k in compiled if k.stem == "lib_matmul.f32")
    runs = {}
    for v in filter(None, args.variants.split(",")):
        if "lib_matmul." + v in kernels:
            runs["lib_matmul." + v] = kernels["lib_matmul." + v]
        else:
            say(f"  lib_matmul.{v}: not run ({dev.name} cannot run it)")
    if args.rolled:
        rolled = kernels_for(dev, compile_file(MATMUL, root=KERNELS, text=rolled_text()))
        for v in filter(None, args.variants.split(",")):
            if "lib_matmul." + v in rolled:
                runs[f"lib_matmul.{v}+rolled"] = rolled["lib_matmul." + v]
    for name in filter(None, args.candidate.split(",")):
        for k in compile_file(os.path.join(HERE, "kernels", name), root=ROOT):
            runs[k.stem] = load_kernel(k.meta, device=dev, **{code: getattr(k, code)})
    glsl = {}
    if args.glsl and args.backend == "vulkan":
        for name in GLSL:
            with open(os.path.join(HERE, "glsl", "prebuilt", name + ".spv"), "rb") as f:
                glsl["glsl." + name] = load_kernel(meta, device=dev, spirv=f.read())
    for path in filter(None, args.spirv.split(",")) if args.backend == "vulkan" else ():
        with open(path, "rb") as f:
            glsl["spirv." + os.path.basename(path)] = load_kernel(meta, device=dev, spirv=f.read())
    torch = cuda_torch()
    for m, k, n in shapes_of(args.sizes, args.shapes):
        label = str(n) if m == k == n else f"{m}x{k}x{n}"
        rng = np.random.default_rng(m * 31 + k * 7 + n)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        da, db = dev.buffer(a), dev.buffer(b)
        flop = 2.0 * m * k * n
        number = max(1, min(20, int(2e11 / flop)))
        th = None
        if torch is not None:
            torch.backends.cuda.matmul.allow_tf32 = False
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            want = torch.matmul(ta.double(), tb.double()).cpu().numpy()
            th = time_torch(torch, lambda ta=ta, tb=tb: torch.matmul(ta, tb), number, args.rounds)
            say(f"  torch fp32           n={label:<6} {flop / th / 1e12:7.2f} TFLOP/s")
        else:
            want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        calls = [("library.matmul", None)] + [(s, k) for s, k in runs.items()]
        calls += [(s, g) for s, g in glsl.items() if m == k == n and n % 128 == 0]
        for stem, kern in calls:
            c = dev.buffer((m, n), "f32")
            if kern is None:
                call = lambda c=c, da=da, db=db: library.matmul(kernels, da, db, out=c)  # noqa: E731
            else:
                call = direct_call(kern, da, db, c, m, k, n)
            ours, _ = time_ours(dev, call, number, args.rounds)
            got = c.read().reshape(m, n).astype(np.float64)
            ok = np.abs(got - want).max() <= 1e-3 * np.abs(want).max()
            say_rate(stem, label, flop, ours, th, ok, digits=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
