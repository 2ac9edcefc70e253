"""The CPU reference's speed through the runtime's cpu backend (`backend="cpu"`).

    python bench/reference_bench.py [--repeat N] [--size N]

1. saxpy (kernels/saxpy.py) over 1M elements (--size) through the cpu backend: numpy
   arrays in and out, and DeviceBuffers kept across calls; the target is 0.5 s a call,
   and numpy's own `a * x + y` in the same run is the baseline.
2. Every case of tests/gpu/reference.py at its test sizes (the whole kernels/ tree),
   each result checked against the numpy reference; the target is 10 s for all of them
   (compiling is timed apart: it is the compiler's cost, not the reference's).
3. Contended atomics (bench/kernels/contention.py, issue 20): a compare-exchange retry
   loop and a spin lock in which every invocation contends for one cell, at 16,384
   invocations (--contention); the target is 5 s a call, each result checked. In lockstep
   they would cost time quadratic in the invocations (over 5 minutes here).

Every figure is measured in this run; a ratio below 1 is within the target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "gpu")]

import numpy as np  # noqa: E402

import reference  # noqa: E402
from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.runtime import get_device, load_kernel  # noqa: E402

KERNELS = os.path.join(ROOT, "kernels")
BENCH_KERNELS = os.path.join(HERE, "kernels")
SAXPY_TARGET_S, TREE_TARGET_S, CONTENTION_TARGET_S = 0.5, 10.0, 5.0


def median_time(fn, repeat: int) -> float:
    """Median seconds of one call of `fn` over `repeat` calls, after one untimed call."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_saxpy(n: int, repeat: int) -> None:
    (k,) = compile_file(os.path.join(KERNELS, "saxpy.py"), root=KERNELS, targets=("kdesc",))
    device = get_device("cpu")
    saxpy = load_kernel(k.meta, kdesc=k.kdesc, device=device)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = 2.5
    want = np.float32(a) * x + y  # before the call: the cpu backend writes y in place
    got = saxpy(x=x, y=y, a=a).array("y", np.float32)
    assert np.array_equal(got, want), "saxpy on the cpu backend is wrong"
    arrays = median_time(lambda: saxpy(x=x, y=y, a=a), repeat)
    bx, by = device.buffer(x, read_only=True), device.buffer(y)
    kept = median_time(lambda: saxpy(x=bx, y=by, a=a), repeat)
    base = median_time(lambda: np.float32(a) * x + y, max(repeat, 20))
    print(f"saxpy, {n} elements, median of {repeat} calls on {device.name}:")
    print(
        f"  numpy arrays in and out   {arrays * 1e3:8.1f} ms   {arrays / SAXPY_TARGET_S:5.2f}x "
        f"the {SAXPY_TARGET_S} s target   {arrays / base:6.1f}x numpy's a * x + y"
    )
    print(
        f"  kept DeviceBuffers        {kept * 1e3:8.1f} ms   {kept / SAXPY_TARGET_S:5.2f}x "
        f"the {SAXPY_TARGET_S} s target   {kept / base:6.1f}x numpy's a * x + y"
    )
    print(f"  numpy a * x + y (f32)     {base * 1e3:8.1f} ms   (the baseline)")


def bench_tree() -> None:
    t = time.perf_counter()
    kernels = {}
    for file in sorted({c.file for c in reference.CASES}):
        for k in compile_file(os.path.join(KERNELS, file), root=KERNELS, targets=("kdesc",)):
            kernels[k.stem] = k
    compile_s = time.perf_counter() - t
    device = get_device("cpu")
    rng = np.random.default_rng(20240601)
    run_s, calls, wrong, slowest = 0.0, 0, [], []
    t = time.perf_counter()
    loaded = {
        c.stem: load_kernel(kernels[c.stem].meta, kdesc=kernels[c.stem].kdesc, device=device)
        for c in reference.CASES
    }
    load_s = time.perf_counter() - t
    for case in reference.CASES:
        spent = 0.0
        for size in case.sizes:
            args = case.inputs(rng, size)
            want = case.reference(args)
            t = time.perf_counter()
            got = loaded[case.stem](**args)
            spent += time.perf_counter() - t
            calls += 1
            for name, expected in want.items():
                actual = np.asarray(got[name]).reshape(-1)
                if not np.allclose(actual, expected.reshape(-1), rtol=case.rtol, atol=case.atol):
                    wrong.append(f"{case.stem} size={size} {name}")
        run_s += spent
        slowest.append((spent, case.stem))
    total = load_s + run_s
    print(f"kernels/ at the test sizes: {len(reference.CASES)} cases, {calls} calls:")
    print(
        f"  decode + validate (load)  {load_s * 1e3:8.1f} ms\n"
        f"  dispatches                {run_s * 1e3:8.1f} ms\n"
        f"  load + dispatches         {total:8.2f} s    {total / TREE_TARGET_S:5.2f}x the "
        f"{TREE_TARGET_S} s target\n"
        f"  (compiling the files      {compile_s:8.2f} s, not counted)"
    )
    top = ", ".join(f"{stem} {s * 1e3:.0f} ms" for s, stem in sorted(slowest, reverse=True)[:5])
    print(f"  slowest cases: {top}")
    print(
        f"  results off the numpy reference: {len(wrong)}{': ' + ', '.join(wrong) if wrong else ''}"
    )


def bench_contention(n: int) -> None:
    compiled = compile_file(
        os.path.join(BENCH_KERNELS, "contention.py"), root=BENCH_KERNELS, targets=("kdesc",)
    )
    device = get_device("cpu")
    kernels = {k.meta["id"]: load_kernel(k.meta, kdesc=k.kdesc, device=device) for k in compiled}

    def zero() -> np.ndarray:  # one per argument: a call writes its arrays in place
        return np.zeros(1, np.uint32)

    every = np.arange(n, dtype=np.uint32)
    print(f"contended atomics, {n} invocations on one cell, one call each:")
    for name, args, seen, count in (
        ("cas_count", {"tickets": n, "counter": zero()}, "tickets", "counter"),
        ("spin_lock", {"order": n, "lock": zero(), "total": zero()}, "order", "total"),
    ):
        t = time.perf_counter()
        got = kernels[name](**args)
        spent = time.perf_counter() - t
        right = got[count].tolist() == [n] and np.array_equal(np.sort(got[seen]), every)
        print(
            f"  {name:<24}  {spent:8.2f} s    {spent / CONTENTION_TARGET_S:5.2f}x the "
            f"{CONTENTION_TARGET_S} s target   {'right' if right else 'WRONG'}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="timed calls per figure (median)")
    ap.add_argument("--size", type=int, default=1 << 20, help="saxpy elements")
    ap.add_argument(
        "--contention", type=int, default=1 << 14, help="invocations of the contended kernels"
    )
    args = ap.parse_args()
    bench_saxpy(args.size, args.repeat)
    bench_tree()
    bench_contention(args.contention)
    return 0


if __name__ == "__main__":
    sys.exit(main())
