"""Tuned vs default vs torch: the library's fp32 matmul and its fp16 matmul (matmul_f16, f16
inputs, f32 sums and output) on the candidate a tuning record picked for this device, on the
tunable's default candidate, and torch.matmul (fp32 with TF32 off; fp16 on fp16 tensors).

    python3 bench/tuning_bench.py --tune               # the H200 run: tune, then every shape
    python3 bench/tuning_bench.py --quick              # small shapes, a smoke run (lavapipe)
    python3 bench/tuning_bench.py --bundle dist/kernels.vyrebundle --shapes 4096x4096x4096
    python3 bench/tuning_bench.py --sections fp16      # the fp16 lines only
    python3 bench/tuning_bench.py --candidates --sections fp32   # every candidate too

BUNDLE (default: the library bundle of this install, copied to --work so that --tune does
not rewrite the user cache) carries the tunables of kernels/tuning.yaml; --tune runs
`vyre-build tune --only matmul,matmul_f16` on it for --backend first (its record is merged
into the copy). Shapes are MxKxN (A is M x K, B is K x N). Ours: one library call on
DeviceBuffers (out= given) per call, timed by the device's timestamps around `number` calls
(Device.timing), median of --rounds rounds after a warm-up; torch: CUDA events likewise.
Each line gives TFLOP/s (2*M*N*K) of the tuned pick, of the default and of torch,
tuned/default (> 1: tuning paid) and torch/tuned (> 1: faster than torch). Results are
compared with torch's fp32 product (numpy's without torch; for fp16, of the fp16 inputs,
whose products f32 holds exactly) and the line says so. A device without cooperative
matrices (lavapipe) gets a line saying the fp16 section was skipped, and why. Nothing is
asserted: the numbers are printed.

--candidates adds, under each shape, a line per candidate of the tunable (forced, as `tune`
runs it): its TFLOP/s, candidate/default (> 1: faster than the default) and torch/candidate,
or the device's refusal (a candidate declaring more shared memory than the device has).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys

from bench_env import cuda_torch, tree_pythonpath  # bench/ is the script's folder

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from vyre_build.core.errors import VyreError  # noqa: E402
from vyre_build.runtime import get_device, open_bundle  # noqa: E402
from vyre_build import library  # noqa: E402
from vyre_build.library.bundle import library_bundle_path  # noqa: E402
from vyre_build.runtime.tuning import Choice, Forced  # noqa: E402

from library_bench import time_torch  # noqa: E402  (bench/ is the script's folder)

SHAPES = "2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,512x4096x4096"
QUICK = "128x128x128,256x512x128"


def say(line: str = "") -> None:
    print(line, flush=True)


def _shape(text: str) -> tuple[int, int, int]:
    try:
        m, k, n = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise SystemExit(
            f"tuning_bench: shape {text!r} is not MxKxN (e.g. 4096x11008x4096)"
        ) from None
    return m, k, n


def _ours(dev, fn, kernels, a, b, out, number: int, rounds: int) -> float:
    times = []
    for r in range(rounds + 1):  # round 0: warm-up
        with dev.batch():
            for _ in range(number):
                fn(kernels, a, b, out=out)
        if r:
            times.append(dev.gpu_seconds / number if dev.gpu_seconds else float("nan"))
    return statistics.median(times)


def _torch_time(torch, a, b, number: int, rounds: int) -> float:
    out = torch.empty((a.shape[0], b.shape[1]), device="cuda", dtype=a.dtype)
    return time_torch(torch, lambda: torch.matmul(a, b, out=out), number, rounds)


SECTIONS = {"fp32": ("matmul", np.float32), "fp16": ("matmul_f16", np.float16)}


def _default(bundle, name: str) -> Forced:
    """The bundle with tunable `name` forced to its default candidate."""
    t = bundle.reader.tuning["tunables"][name]
    cand = t["candidates"][t["default"]]
    return Forced(
        bundle, Choice(name, t["default"], cand["kernel"], cand["params"], "forced", None)
    )


def _forced(bundle, name: str, cname: str) -> Forced:
    """The bundle with tunable `name` forced to candidate `cname`."""
    cand = bundle.reader.tuning["tunables"][name]["candidates"][cname]
    return Forced(bundle, Choice(name, cname, cand["kernel"], cand["params"], "forced", None))


def _check(got, want, against: str = "") -> str:
    """'ok' or 'MISMATCH' (`against` after it), and the largest error relative to the
    largest magnitude of `want` (at least 1): within 1e-4 is ok."""
    err = float(np.abs(got - want).max() / max(1.0, float(np.abs(want).max())))
    return f"{'ok' if err < 1e-4 else 'MISMATCH'}{against} (rel {err:.1e})"


def _section(
    dev, bundle, torch, section: str, shapes, number: int, rounds: int, every: bool = False
) -> None:
    """The lines of one section: every shape, tuned vs default vs torch."""
    name, dtype = SECTIONS[section]
    fn = getattr(library, name)
    tuned = bundle.tuned(name)
    say()
    if tuned is None:
        say(f"{section}: skipped: the bundle declares no {name} tunable (kernels/tuning.yaml)")
        return
    default = _default(bundle, name)
    t = bundle.reader.tuning["tunables"][name]
    say(
        f"{section} (library.{name}): tuned pick {tuned.candidate} ({tuned.how}), default "
        f"{t['default']}"
    )
    rng = np.random.default_rng(0)
    for row, (m, k, n) in enumerate(shapes):
        a_np = rng.uniform(-1, 1, (m, k)).astype(dtype)
        b_np = rng.uniform(-1, 1, (k, n)).astype(dtype)
        a, b, out = dev.buffer(a_np), dev.buffer(b_np), dev.buffer((m, n), "f32")
        try:
            t_tuned = _ours(dev, fn, bundle, a, b, out, number, rounds)
        except VyreError as exc:
            say(f"{section}: skipped on this device: {exc}")
            return
        if row == 0:  # the header once the device has run it
            say(f"{'shape MxKxN':<18} {'tuned TF/s':>10} {'default TF/s':>12} {'torch TF/s':>10} "
                f"{'tuned/default':>13} {'torch/tuned':>11}  check")  # fmt: skip
        got = out.read().reshape(m, n)
        t_default = _ours(dev, fn, default, a, b, out, number, rounds)
        flops = 2.0 * m * n * k
        if torch is not None:
            ta, tb = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
            t_torch = _torch_time(torch, ta, tb, number, rounds)
            want = torch.matmul(ta.float(), tb.float()).cpu().numpy()
        else:
            t_torch = float("nan")
            want = (
                a_np.astype(np.float64) @ b_np.astype(np.float64) if m * n * k <= 1 << 30 else None
            )
        if want is None:
            check = "not checked (no torch; too large for numpy here)"
        else:
            check = _check(got, want, f" vs {'torch' if torch else 'numpy'}")
        say(
            f"{f'{m}x{k}x{n}':<18} {flops / t_tuned / 1e12:>10.2f} {flops / t_default / 1e12:>12.2f} "
            f"{flops / t_torch / 1e12:>10.2f} {t_default / t_tuned:>12.2f}x {t_torch / t_tuned:>10.2f}x  {check}"
        )
        for cname in t["candidates"] if every else ():
            try:
                secs = _ours(dev, fn, _forced(bundle, name, cname), a, b, out, number, rounds)
            except VyreError as exc:
                say(f"  {cname:<16} refused: {exc}")
                continue
            got = out.read().reshape(m, n)
            if want is None:
                ok = "not checked"
            else:
                ok = _check(got, want)
            say(
                f"  {cname:<16} {flops / secs / 1e12:>8.2f} TF/s  {t_default / secs:>5.2f}x "
                f"default  torch/it {t_torch / secs:>5.2f}x  {ok}"
            )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", help="a bundle with the matmul tunables (default: the library's)")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "tuning_bench"))
    p.add_argument("--backend", default="vulkan")
    p.add_argument("--tune", action="store_true", help="run `vyre-build tune` on it first")
    p.add_argument("--shapes", default=None, help=f"MxKxN,... (default {SHAPES})")
    p.add_argument("--quick", action="store_true", help=f"shapes {QUICK}, 1 round")
    p.add_argument("--sections", default="fp32,fp16", help="fp32, fp16 or both (the default)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--number", type=int, default=3, help="calls per timed round")
    p.add_argument(
        "--candidates", action="store_true", help="time every candidate of the tunable too"
    )
    args = p.parse_args()
    shapes = [_shape(s) for s in (args.shapes or (QUICK if args.quick else SHAPES)).split(",")]
    sections = args.sections.split(",")
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown or not sections:
        raise SystemExit(
            f"tuning_bench: --sections {args.sections!r}: the sections are fp32 and fp16"
        )
    rounds = 1 if args.quick else args.rounds
    os.makedirs(args.work, exist_ok=True)
    path = os.path.join(args.work, "tuned.vyrebundle")
    shutil.copyfile(args.bundle or library_bundle_path(), path)
    if args.tune:
        cmd = [sys.executable, "-m", "vyre_build", "tune", path, "--backend", args.backend]
        with open_bundle(path, device=get_device("cpu"), trusted_keys=False) as b:
            declared = b.reader.tuning["tunables"]
        names = [SECTIONS[s][0] for s in sections if SECTIONS[s][0] in declared]
        if not names:
            raise SystemExit(
                f"tuning_bench: {path} declares no matmul tunable (kernels/tuning.yaml)"
            )
        cmd += ["--only", ",".join(names)]
        env = dict(os.environ, PYTHONPATH=tree_pythonpath(ROOT))
        done = subprocess.run(cmd, env=env, text=True, capture_output=True)
        sys.stderr.write(done.stderr)
        say(done.stdout.rstrip())
        if done.returncode:
            return done.returncode
    torch = cuda_torch()
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
    dev = get_device(args.backend)
    dev.timing = True
    bundle = open_bundle(path, device=dev, trusted_keys=False)
    say(f"{args.backend}: {dev.name}")
    say(
        f"torch: {torch.cuda.get_device_name() if torch else 'absent (results checked against numpy)'}"
    )
    for section in sections:
        _section(dev, bundle, torch, section, shapes, args.number, rounds, args.candidates)
    bundle.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
