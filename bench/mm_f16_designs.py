"""The staged fp16 matmul's design space, hand-written in GLSL (bench/glsl/mm_f16_x.comp),
against torch fp16 in one run: block shape, K step, one or two sets of panels, B's fragments
all at once or one at a time, 16- or 8-byte panel elements (`_e8`, the width the language
gives lib_mm_f16). Issue 22 asks whether the design or the language is short of 0.5x of
torch; this times the designs the language could express, with nothing of the language in
them, beside the library kernel itself (`library`, with its own block and grid) and a
bench/kernels/ candidate (`--candidate F`: its variants with f32 output), and prints each
one's registers and spills (--stats: pipeline statistics, where the driver reports them).

    python3 bench/mm_f16_designs.py [--sizes 4096,8192] [--rounds 3] [--designs a,b]
        [--candidate F] [--stats]

Each design is built from source here (glslangValidator and spirv-opt on PATH; prebuilt
copies in bench/glsl/prebuilt/mmx_*.spv are used where glslang is missing) and run with
lib_mm_f16.f32's bindings, its workgroup size replaced by the design's. Output: C as f32,
checked against torch (or numpy) at every size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from library_bench import say, say_rate, time_ours, time_torch  # noqa: E402

# name: (BM, BN, BK, NBUF, BONE[, WM, WN[, TB[, PAIR]]]): a subgroup's tile WM x WN, 64 x 64
# if not given; TB: B given transposed (N x K) and staged as A is (an "NT" product); PAIR:
# two K steps an iteration (K / BK even), the panel set a constant in each
DESIGNS = {
    "128x256_k32_b1": (128, 256, 32, 1, False),  # the library's design (mm_f16_lib_k32_wide)
    "128x256_k32_b1_bone": (128, 256, 32, 1, True),
    "128x256_k16_b2": (128, 256, 16, 2, False),  # the 16-deep double-buffered one
    "256x128_k32_b1": (256, 128, 32, 1, False),
    "128x128_k32_b1": (128, 128, 32, 1, False),  # 4 subgroups: two workgroups an SM
    "128x128_k32_b2": (128, 128, 32, 2, False),
    "128x128_k32_b2_bone": (128, 128, 32, 2, True),
    "128x128_k64_b1": (128, 128, 64, 1, False),
    "128x128_k32_b1_bone": (128, 128, 32, 1, True),
    "128x128_k16_b1": (128, 128, 16, 1, False),
    "64x256_k32_b1": (64, 256, 32, 1, False),  # 4 subgroups in a row
    # subgroup tiles of 64 x 32, 32 x 64 and 32 x 32: half or a quarter of the accumulators
    # (64 or 32 registers instead of 128), so that nothing spills; more subgroups a block
    "128x128_w64x32_k32_b1": (128, 128, 32, 1, False, 64, 32),
    "128x128_w32x64_k32_b1": (128, 128, 32, 1, False, 32, 64),
    "128x128_w64x32_k32_b2": (128, 128, 32, 2, False, 64, 32),
    "128x128_w64x32_k64_b1": (128, 128, 64, 1, False, 64, 32),
    "128x128_w32x32_k32_b1": (128, 128, 32, 1, False, 32, 32),
    "128x256_w64x32_k32_b1": (128, 256, 32, 1, False, 64, 32),
    "256x128_w64x32_k32_b1": (256, 128, 32, 1, False, 64, 32),
    "128x64_w64x32_k32_b1": (128, 64, 32, 1, False, 64, 32),
    "64x128_w32x64_k32_b1": (64, 128, 32, 1, False, 32, 64),
    # B transposed: fragments loaded column-major, contiguous along K as the tensor cores
    # hold B (a row-major B panel is contiguous along N)
    "128x128_k32_b1_tb": (128, 128, 32, 1, False, 64, 64, True),
    "128x256_k32_b1_tb": (128, 256, 32, 1, False, 64, 64, True),
    "128x128_k64_b1_tb": (128, 128, 64, 1, False, 64, 64, True),
    "128x128_k32_b2_tb": (128, 128, 32, 2, False, 64, 64, True),
    # two K steps an iteration (PAIR): the panel set a constant in each
    "128x128_k32_b2_pair": (128, 128, 32, 2, False, 64, 64, False, True),
    "128x128_k32_b1_pair": (128, 128, 32, 1, False, 64, 64, False, True),
    "128x256_k16_b2_pair": (128, 256, 16, 2, False, 64, 64, False, True),
    "128x128_k16_b2_pair": (128, 128, 16, 2, False, 64, 64, False, True),
    # _e8: panels and global loads of 8-byte elements (f16vec4, -DE8), as lib_mm_f16 has
    # them in the language (vec4h), where every other design moves 16-byte ones (uvec4)
    "128x256_k32_b1_e8": (128, 256, 32, 1, False),
    "128x128_k32_b1_e8": (128, 128, 32, 1, False),
    # _bounds: every global load under the language's bounds rule (-DBOUNDS: compare with
    # the length, clamp, select zeros), as lib_mm_f16's loads are
    "128x256_k32_b1_e8_bounds": (128, 256, 32, 1, False),
    "128x128_k32_b1_e8_bounds": (128, 128, 32, 1, False),
}


def shape(name: str) -> tuple[int, int, int, int, bool, int, int, bool, bool]:
    """(BM, BN, BK, NBUF, BONE, WM, WN, TB, PAIR) of design `name`."""
    d = DESIGNS[name]
    d = (*d, 64, 64) if len(d) == 5 else d
    return (*d, False, False)[:9]


def shared_bytes(name: str) -> int:
    """The shared memory design `name` declares: NBUF sets of A's and B's padded panels."""
    bm, bn, bk, nbuf, _, _, _, tb, _ = shape(name)
    pa = bm * (bk + 8) // 8
    pb = bn * (bk + 8) // 8 if tb else bk * (bn + 8) // 8
    return 16 * nbuf * (pa + pb)


SOURCE = os.path.join(HERE, "glsl", "mm_f16_x.comp")
PREBUILT = os.path.join(HERE, "glsl", "prebuilt")


def build(name: str, tmp: str) -> bytes:
    """The SPIR-V of one design: compiled from mm_f16_x.comp, else the prebuilt copy."""
    bm, bn, bk, nbuf, bone, wm, wn, tb, pair = shape(name)
    if shutil.which("glslangValidator") is None:
        with open(os.path.join(PREBUILT, f"mmx_{name}.spv"), "rb") as f:
            return f.read()
    raw, out = os.path.join(tmp, name + ".raw.spv"), os.path.join(tmp, name + ".spv")
    defs = [f"-DBM={bm}u", f"-DBN={bn}u", f"-DBK={bk}u", f"-DNBUF={nbuf}u"]
    defs += ["-DBONE"] if bone else []
    defs += [f"-DWM={wm}u", f"-DWN={wn}u"] if (wm, wn) != (64, 64) else []
    defs += ["-DTB"] if tb else []
    defs += ["-DPAIR"] if pair else []
    defs += ["-DE8"] if "_e8" in name else []
    defs += ["-DBOUNDS"] if name.endswith("_bounds") else []
    subprocess.run(
        ["glslangValidator", "-V", "--target-env", "vulkan1.3", *defs, "-o", raw, SOURCE],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    subprocess.run(
        ["spirv-opt", "--target-env=vulkan1.3", "--loop-unroll", "--scalar-replacement=0",
         "-O", raw, "-o", out],
        check=True,
    )  # fmt: skip
    with open(out, "rb") as f:
        return f.read()


def candidate(dev, file: str) -> dict:
    """{stem: (kernel, BM, BN, WG, False)} of bench/kernels/`file`'s variants with f32
    output, the block read from the module's constants."""
    import re

    from vyre_build.compiler import compile_file
    from vyre_build.runtime import load_kernel

    path = os.path.join(HERE, "kernels", file)
    with open(path) as f:
        text = f.read()
    block = [int(re.search(rf"^{c} = (\d+)", text, re.M).group(1)) for c in ("BM", "BN", "WG")]
    out = {}
    for k in compile_file(path, root=ROOT):  # imports kernels/
        if not k.stem.endswith(".f16"):
            out[k.stem] = (load_kernel(k.meta, device=dev, spirv=k.spirv), *block, False)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--designs",
        default=",".join(["library", *DESIGNS]),
        help="comma list of designs; `library`: lib_mm_f16.f32 itself (the language's)",
    )
    ap.add_argument(
        "--candidate",
        default="",
        help="also time bench/kernels/F's variants with f32 output (the library's bindings; "
        "its block from the module's BM, BN and WG)",
    )
    ap.add_argument("--stats", action="store_true", help="print registers and spills")
    args = ap.parse_args(argv)
    if args.stats:
        import pipeline_stats

        pipeline_stats.patch_for_statistics()
    from vyre_build.compiler import compile_file
    from vyre_build.core.errors import DeviceError
    from vyre_build.runtime import get_device, load_kernel

    dev = get_device("vulkan")
    if "cooperative_matrix" not in dev.profile.features:
        say(f"{dev.name}: no cooperative matrices: nothing to time")
        return 0
    kernels = os.path.join(ROOT, "kernels")
    lib = next(
        k for k in compile_file(os.path.join(kernels, "lib_mm_f16.py"), root=kernels)
        if k.stem == "lib_mm_f16.f32"
    )  # fmt: skip
    try:
        import torch

        have_torch = torch.cuda.is_available()
    except ImportError:
        have_torch = False
    say(f"{dev.name}: fp16 matmul designs (TFLOP/s; torch fp16 in the same run)")
    made = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.designs.split(","):
            if name == "library":  # the kernel of the language, with its own block and grid
                from vyre_build.library.matmuls import F16_BM, F16_BN, F16_WG

                kern = load_kernel(lib.meta, device=dev, spirv=lib.spirv)
                made[name] = (kern, F16_BM, F16_BN, F16_WG, False)
            else:
                bm, bn, _, _, _, wm, wn, tb, _ = shape(name)
                wg = 32 * (bm // wm) * (bn // wn)
                meta = dict(lib.meta, workgroup_size=[wg, 1, 1])
                meta.update(variant="mmx_" + name, id=f"{meta['name']}.mmx_{name}")
                meta["shared_bytes"] = max(shared_bytes(name), 16384)  # refused where too much
                try:
                    kern = load_kernel(meta, device=dev, spirv=build(name, tmp))
                except DeviceError as exc:
                    say(f"  {name}: not run: {exc}")
                    continue
                made[name] = (kern, bm, bn, wg, tb)
        if args.candidate:
            made.update(candidate(dev, args.candidate))
    if args.stats:  # every row's pipeline, designs, library and candidates alike
        for name, (kern, *_) in made.items():
            for line in pipeline_stats.described(dev, name, kern.pipeline[0]):
                say("  " + line)
    rng = np.random.default_rng(0)
    for n in map(int, args.sizes.split(",")):
        a = (rng.standard_normal((n, n)) * 0.5).astype(np.float16)
        b = (rng.standard_normal((n, n)) * 0.5).astype(np.float16)
        da, db = dev.buffer(a), dev.buffer(b)
        dbt = dev.buffer(np.ascontiguousarray(b.T)) if any(m[4] for m in made.values()) else None
        flop = 2.0 * n**3
        number = max(1, int(2e12 / flop))
        th = None
        if have_torch:
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            want = torch.matmul(ta.float(), tb.float()).cpu().numpy()
            th = time_torch(torch, lambda ta=ta, tb=tb: torch.matmul(ta, tb), number, args.rounds)
            say(f"  torch fp16          n={n:<6} {flop / th / 1e12:7.1f} TFLOP/s")
        else:
            want = np.matmul(a.astype(np.float32), b.astype(np.float32))
        for name, (kern, bm, bn, wg, tb) in made.items():
            c, h = dev.buffer(n * n, "f32"), dev.buffer(4, "f16")
            bb = dbt if tb else db
            call = dict(a=da, a4=da, b=bb, b4=bb, c=c, h=h, M=n, N=n, K=n, sa=0, sb=0, sc=0)
            call.update(va=1, vb=1, gx=n // bn * wg, gy=n // bm, gz=1)
            ours, _ = time_ours(dev, lambda call=call, kern=kern: kern(**call), number, args.rounds)
            got = c.read().reshape(n, n)
            ok = np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
            say_rate(name, n, flop, ours, th, ok)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
