"""fp16 and bf16 cooperative-matrix matmul against torch fp16 / bf16: library.matmul_f16 as it routes
(matmul_f16.f32: kernels/lib_matmul_f16.py, fragments straight from buffers, for the shapes it
fits; matmul_f16.f16: kernels/lib_mm_f16.py, staged tiles) and the staged f32 kernel alone
(lib_mm_f16.f32).

    python bench/coop_bench.py [--quick] [--sizes 2048,4096,8192] [--batched 64x512]
                               [--rounds 5] [--narrow] [--scalar] [--candidate F] [--opt] [--glsl]
                               [--backend vulkan|cpu]

Vulkan only (WGSL has no cooperative matrices). Ours: GPU timestamps around a batch of
library calls on DeviceBuffers (time_ours: median of rounds); torch: CUDA events around the
same number of `torch.matmul` (`torch.bmm` for the batch) on half tensors (tensor cores,
f32 accumulation inside cuBLAS). Each size runs both outputs: f32 (ours only: torch's
half matmul gives f16) and f16, the like-for-like line, then the staged kernel with f32
output. Prints TFLOP/s of each and the
ratio torch time / ours (issue 22's target: >= 0.5x at 4096 and 8192). Outputs are
checked against torch's in float32 (|diff| <= 1e-2 * |C|max). --quick: small sizes on any
device with the features (the cpu reference runs it too: --backend cpu). --glsl: the same
design hand-written in GLSL (bench/glsl/mm_f16.comp, prebuilt with glslang 13), with 8-byte
and with 16-byte (WIDE) global loads: what the language costs, and what wider loads would
give; and the library's 128 x 256 design (bench/glsl/mm_f16_lib.comp, every fixed loop
unrolled and the fragment arrays split into registers by spirv-opt), 16-deep (the library's
kernel before 2026-12-05, 0f6e9b5) and 32-deep (_k32: the library's), with 8-byte and
16-byte (_wide) shared panels. --opt: the staged kernel built with the `spirv_opt` option
(spirv-opt -O over our module, as the GLSL's modules are): whether what the GLSL gains is
what spirv-opt does (locals into SSA values, fragments out of function variables) or the
code itself. --candidate F: bench/kernels/F, a candidate of the library's 128 x 256 design
with the library's bindings and grid (its variants f32 and f16; mm_f16_split.py, the split
K loop, was one: it became the library's on 2026-12-05). --narrow:
bench/kernels/mm_f16_narrow.py, an earlier library kernel (a 128 x 128 block of 4 subgroups, 32-deep K steps; lib_mm_f16 now computes 128 x 256 blocks of 8).
--scalar: bench/kernels/mm_f16_scalar.py, the 128 x 128 design with f16 (not vec4h) shared
panels, as llama.cpp. On a device with bf16 (VK_KHR_shader_bfloat16 and bf16 cooperative
matrices) each size also runs library.matmul_bf16 (kernels/lib_mm_bf16.py, f32 and bf16
output) against torch's bf16 matmul on the same values rounded to bf16.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # the root the bench/kernels/ candidates import kernels/ from
KERNELS = os.path.join(ROOT, "kernels")
sys.path.insert(0, HERE)

from codegen_bench import say  # noqa: E402
from library_bench import time_ours, time_torch  # noqa: E402

from vyre_build.compiler import compile_file  # noqa: E402

LIB = ("lib_mm_f16.py", "lib_matmul_f16.py")  # library.matmul_f16's kernels
BF16 = "lib_mm_bf16.py"  # library.matmul_bf16's
OPT = {"spirv_opt": True}  # --opt: the build option that runs spirv-opt -O on a module


def glsl_kernel(dev, meta, name, a, b, n):
    """A call of bench/glsl/prebuilt/`name`.spv on `a` and `b` with `meta`'s bindings
    (mm_f16.comp: mm_f16_narrow.f32's, n a multiple of 128; mm_f16_lib.comp: lib_mm_f16.f32's,
    n a multiple of 256)."""
    from vyre_build.runtime import load_kernel

    with open(os.path.join(HERE, "glsl", "prebuilt", name + ".spv"), "rb") as f:
        kern = load_kernel(meta, device=dev, spirv=f.read())
    c, h = dev.buffer(n * n, "f32"), dev.buffer(4, "f16")
    call = dict(a=a, a4=a, b=b, b4=b, c=c, h=h, M=n, N=n, K=n, sa=0, sb=0, sc=0, va=1, vb=1)
    call.update(gx=n, gy=n // 128, gz=1)
    return (lambda: kern(**call)), c


def staged_call(dev, kern, a, b, out, shape, width):
    """A call of a staged kernel (kernels/lib_mm_f16.py: blocks `width` = 256 wide;
    bench/kernels/mm_f16_narrow.py and mm_f16_scalar.py: 128) on `a` and `b` into `out` (its variant's type), with
    the library's scalars for `shape` ((n, n) or (z, n, n))."""
    z, n = (shape[0] if len(shape) == 3 else 1), shape[-1]
    sink = dev.buffer(4, "f16" if out.dtype == "f32" else "f32")
    c, h = (out, sink) if out.dtype == "f32" else (sink, out)
    stride = n * n if z > 1 else 0
    call = dict(a=a, a4=a, b=b, b4=b, c=c, h=h, M=n, N=n, K=n, sa=stride, sb=stride, sc=n * n)
    call.update(va=int(n % 4 == 0), vb=int(n % 4 == 0), gx=-(-n // width) * width, gy=-(-n // 128))
    call.update(gz=z)
    return lambda: kern(**call)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument("--batched", default="64x512", help="ZxN: Z products of N x N x N ('' none)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--narrow", action="store_true", help="also time bench/kernels/mm_f16_narrow.py (128 x 128)"
    )
    ap.add_argument(
        "--scalar", action="store_true", help="also time bench/kernels/mm_f16_scalar.py"
    )
    ap.add_argument(
        "--candidate", default="", help="also time bench/kernels/F (the library's 256-wide design)"
    )
    ap.add_argument(
        "--opt", action="store_true", help="also time lib_mm_f16.f32 built with spirv_opt (-O)"
    )
    ap.add_argument(
        "--glsl", action="store_true", help="also time bench/glsl/mm_f16.comp (and its WIDE build)"
    )
    ap.add_argument("--backend", default="vulkan", choices=("vulkan", "cpu"))
    args = ap.parse_args(argv)
    from vyre_build.runtime import get_device
    from vyre_build import library

    dev = get_device(args.backend)
    dev.timing = True
    from vyre_build.runtime import load_kernel

    kernels, meta = {}, None
    found = [compile_file(os.path.join(KERNELS, f), root=KERNELS) for f in (*LIB, BF16)]
    for k in found[0] + found[1] + found[2]:
        code = {"spirv": k.spirv} if args.backend == "vulkan" else {"kdesc": k.kdesc}
        kernels[k.stem] = load_kernel(k.meta, device=dev, **code)
    if args.opt:  # the library kernel through spirv-opt -O (the build's spirv_opt option)
        for k in compile_file(os.path.join(KERNELS, LIB[0]), root=KERNELS, options=OPT):
            code = {"spirv": k.spirv} if args.backend == "vulkan" else {"kdesc": k.kdesc}
            kernels[k.stem + " -O"] = load_kernel(k.meta, device=dev, **code)
    wide = {}  # the bench/kernels/ candidates (by stem)
    for f in ("mm_f16_narrow.py", "mm_f16_scalar.py", *filter(None, [args.candidate])):
        for k in compile_file(os.path.join(HERE, "kernels", f), root=ROOT):  # imports kernels/
            meta = k.meta if k.stem == "mm_f16_narrow.f32" else meta  # the GLSL's design
            code = {"spirv": k.spirv} if args.backend == "vulkan" else {"kdesc": k.kdesc}
            wide[k.stem] = load_kernel(k.meta, device=dev, **code)
    try:
        import torch

        have_torch = torch.cuda.is_available()
    except ImportError:
        torch, have_torch = None, False
    say(f"fp16 cooperative-matrix matmul on {dev.name} (subgroup {dev.profile.subgroup_size})")
    cases = [(1, n) for n in ([128] if args.quick else [int(s) for s in args.sizes.split(",")])]
    if args.batched:
        z, n = (int(x) for x in args.batched.split("x"))
        cases.append((2, 128) if args.quick else (z, n))
    for z, n in cases:
        rng = np.random.default_rng(n + z)
        shape = (z, n, n) if z > 1 else (n, n)
        a = rng.standard_normal(shape).astype(np.float16)
        b = rng.standard_normal(shape).astype(np.float16)
        da, db = dev.buffer(a), dev.buffer(b)
        flop = 2.0 * z * n**3
        number = 1 if args.quick else max(1, int(2e12 / flop))
        # each run its own output: the check must see what that kernel wrote
        runs = []
        for out_dtype in ("float32", "float16"):
            out = dev.buffer(shape, "f32" if out_dtype == "float32" else "f16")
            runs.append(("matmul_f16." + out.dtype, out_dtype, out))
        runs.append(("lib_mm_f16.f32", "staged", dev.buffer(shape, "f32")))
        if args.opt:
            runs.append(("lib_mm_f16.f32 -O", "staged", dev.buffer(shape, "f32")))
        if args.narrow:
            runs += [(f"mm_f16_narrow.{t}", "narrow", dev.buffer(shape, t)) for t in ("f32", "f16")]
        if args.scalar:
            runs += [(f"mm_f16_scalar.{t}", "scalar", dev.buffer(shape, t)) for t in ("f32", "f16")]
        if args.candidate:
            stem = args.candidate.removesuffix(".py")
            runs += [(f"{stem}.{t}", "w256", dev.buffer(shape, t)) for t in ("f32", "f16")]
        if args.glsl and z == 1 and n % 128 == 0 and args.backend == "vulkan":
            runs += [("glsl.mm_f16", "mm_f16", None), ("glsl.mm_f16_wide", "mm_f16_wide", None)]
            if n % 256 == 0:
                for name in (
                    "mm_f16_lib",
                    "mm_f16_lib_wide",
                    "mm_f16_lib_k32",
                    "mm_f16_lib_k32_wide",
                ):
                    runs += [("glsl." + name, name, None)]
        th = want = None
        if have_torch:
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            mm = torch.bmm if z > 1 else torch.matmul
            want = mm(ta.float(), tb.float()).cpu().numpy()
            th = time_torch(torch, lambda mm=mm, ta=ta, tb=tb: mm(ta, tb), number, args.rounds)
        else:
            want = np.matmul(a.astype(np.float32), b.astype(np.float32))
        for stem, out_dtype, out in runs:
            if out_dtype == "staged":
                call = staged_call(dev, kernels[stem], da, db, out, shape, 256)
            elif out_dtype == "narrow":
                call = staged_call(dev, wide[stem], da, db, out, shape, 128)
            elif out_dtype == "scalar":
                call = staged_call(dev, wide[stem], da, db, out, shape, 128)
            elif out_dtype == "w256":
                call = staged_call(dev, wide[stem], da, db, out, shape, 256)
            elif out_dtype.startswith("mm_f16_lib"):
                lib_meta = next(k.meta for k in found[0] if k.stem == "lib_mm_f16.f32")
                call, out = glsl_kernel(dev, lib_meta, out_dtype, da, db, n)
            elif out_dtype.startswith("mm_f16"):
                call, out = glsl_kernel(dev, meta, out_dtype, da, db, n)
            else:

                def call(out=out, out_dtype=out_dtype, da=da, db=db):
                    library.matmul_f16(kernels, da, db, out=out, out_dtype=out_dtype)

            ours, _ = time_ours(dev, call, number, args.rounds)
            got = out.read().astype(np.float32).reshape(shape)
            report(stem, shape, ours, th, "fp16", got, want)
        if "bf16" in dev.profile.features:
            bf16_case(dev, library, kernels, torch if have_torch else None, a, b, shape, number,
                      args.rounds)  # fmt: skip
        else:
            say(f"  matmul_bf16: not run ({dev.name} has no bf16)")
    return 0


def bf16_case(dev, library, kernels, torch, a, b, shape, number, rounds) -> None:
    """library.matmul_bf16 (f32 and bf16 output) on `a` and `b` rounded to bf16, against
    torch's bf16 matmul (f32 accumulation in cuBLAS; its output is bf16)."""
    from vyre_build.core import bfloat16

    z = shape[0] if len(shape) == 3 else 1
    a16, b16 = (bfloat16.from_f32(x.astype(np.float32)).reshape(shape) for x in (a, b))
    fa, fb = bfloat16.to_f32(a16), bfloat16.to_f32(b16)
    da, db = dev.buffer(a16), dev.buffer(b16)
    th = None
    if torch is not None:
        ta, tb = (torch.from_numpy(x).cuda().bfloat16() for x in (fa, fb))
        mm = torch.bmm if z > 1 else torch.matmul
        want = mm(ta.float(), tb.float()).cpu().numpy()
        th = time_torch(torch, lambda: mm(ta, tb), number, rounds)
    else:
        want = np.matmul(fa, fb)
    for out_dtype, kind in (("float32", "f32"), ("bfloat16", "bf16")):
        out = dev.buffer(shape, kind)

        def call(out=out, out_dtype=out_dtype):
            library.matmul_bf16(kernels, da, db, out=out, out_dtype=out_dtype)

        ours, _ = time_ours(dev, call, number, rounds)
        got = out.read().reshape(shape)
        got = bfloat16.to_f32(got) if kind == "bf16" else got
        report("matmul_bf16." + kind, shape, ours, th, "bf16", got, want)


def report(stem, shape, ours, th, torch_type, got, want) -> None:
    """One result line: TFLOP/s of ours (seconds per call `ours`) and of torch (`th`, None:
    no torch), their ratio, and whether `got` matches `want` (|diff| <= 1e-2 |want|max)."""
    z, n = (shape[0] if len(shape) == 3 else 1), shape[-1]
    flop = 2.0 * z * n**3
    ok = np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
    size = f"n={n}" if z == 1 else f"n={z}x{n}"
    line = f"  {stem:<18} {size:<8} ours {flop / ours / 1e12:7.1f} TFLOP/s"
    if th is not None:
        line += (
            f"   torch {torch_type} {flop / th / 1e12:7.1f} TFLOP/s   ratio {th / ours:.3f}x"
            f"   ({'matches torch' if ok else 'MISMATCH'})"
        )
    else:
        line += f"   (no torch; {'matches numpy' if ok else 'MISMATCH'})"
    say(line)


if __name__ == "__main__":
    raise SystemExit(main())
