"""Every kernel of kernels/ compiled, dispatched on each backend (the cpu one, the
reference, included) and compared with numpy.

Integer kernels must match exactly; float kernels within the tolerance stated next to
each case in tests/gpu/reference.py (`tolerance_note` says why). Sizes include ones that
are not multiples of the workgroup size. Kept small: lavapipe runs on shared CPU cores.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # reference.py sits beside this file (no package __init__)

import reference  # noqa: E402  (needs the sys.path entry above)
import reference_2d  # noqa: E402
import reference_extra  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
KERNELS = os.path.join(ROOT, "kernels")
# The code each backend consumes, and the compile target that produces it.
TARGET = {"wgpu": "wgsl", "vulkan": "spirv", "cpu": "kdesc"}
# Mandelbrot counts are chaotic on the set's boundary: one ulp of difference in a
# backend's rounding (e.g. a fused multiply-add) can change a pixel's count there.
MANDELBROT_MIN_EQUAL = 0.99


def kernel_files() -> list[str]:
    """Kernel source files of the tree, sorted."""
    return sorted(f for f in os.listdir(KERNELS) if f.endswith(".py"))


@functools.cache
def compiled(file: str, target: str) -> dict:
    """stem -> CompiledKernel for one kernel file, compiled once per target."""
    from vyre_build.compiler import compile_file

    kernels = compile_file(os.path.join(KERNELS, file), root=KERNELS, targets=(target, "kdesc"))
    return {k.stem: k for k in kernels}


@functools.cache
def loaded(file: str, stem: str, backend: str):
    """The runtime Kernel for one stem on `backend`'s default device (pipeline kept)."""
    from vyre_build.runtime import load_kernel

    found = compiled(file, TARGET[backend])
    assert stem in found, f"{file} compiled to {sorted(found)}, not {stem!r}"
    k = found[stem]
    code = {"wgpu": {"wgsl": k.wgsl}, "vulkan": {"spirv": k.spirv}, "cpu": {"kdesc": k.kdesc}}
    return load_kernel(k.meta, backend=backend, **code[backend])


def assert_outputs(case: reference.KernelCase, size, got: dict, want: dict) -> None:
    """Each expected buffer matches in dtype, length and value (exact or case tolerance)."""
    for name, expected in want.items():
        assert name in got, f"{case.stem} size={size}: no output {name!r} (got {sorted(got)})"
        actual = np.asarray(got[name]).reshape(-1)
        expected = np.asarray(expected).reshape(-1)  # vector outputs are (n, 4) on the host
        where = f"{case.stem} size={size} output {name!r}"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype}"
        assert actual.shape == expected.shape, f"{where}: shape {actual.shape}"
        if case.rtol == 0.0 and case.atol == 0.0:
            np.testing.assert_array_equal(actual, expected, err_msg=where)
        else:
            np.testing.assert_allclose(
                actual,
                expected,
                rtol=case.rtol,
                atol=case.atol,
                err_msg=f"{where} ({case.tolerance_note})",
            )


@pytest.mark.parametrize("case", reference.CASES, ids=lambda c: c.stem)
def test_kernel_matches_numpy(case: reference.KernelCase, backend: str):
    kern = loaded(case.file, case.stem, backend)
    rng = np.random.default_rng(20240601)
    for size in case.sizes:
        args = case.inputs(rng, size)
        want = case.reference(args)
        got = kern(**args)
        assert_outputs(case, size, got, want)


@pytest.mark.parametrize("n", [1, 2, 256, 1024])
def test_bitonic_steps_sort(backend: str, n: int):
    """The host loop over (j, k) of bitonic_step sorts, chained on device in one batch."""
    from vyre_build.runtime import get_device

    kern = loaded("bitonic.py", "bitonic_step", backend)
    data = np.random.default_rng(n).integers(-1000, 1000, size=n).astype(np.int32)
    buf = get_device(backend).buffer(data)
    with kern.device.batch():
        for j, k in reference_2d.bitonic_schedule(n):
            kern(data=buf, j=j, k=k)
    np.testing.assert_array_equal(buf.read(), np.sort(data))


def test_reduce_f32_total(backend: str):
    """Per-workgroup f32 partials, added on the host in order, give the total sum."""
    kern = loaded("reduce.py", "reduce_sum_f32", backend)
    x = np.random.default_rng(5).uniform(-1, 1, 3001).astype(np.float32)
    partials = kern(x=x, partials=-(-x.size // 256))["partials"]
    # 12 partials of <= 256 terms each, f32 tree order vs an f64 sum
    assert abs(float(partials.astype(np.float64).sum()) - float(x.astype(np.float64).sum())) < 1e-3


@pytest.mark.parametrize("shape", [(1, 1, 10), (37, 23, 64), (64, 48, 200)])
def test_mandelbrot(backend: str, shape):
    """Escape counts equal the f32 numpy reference on at least 99% of pixels, and every
    count is within [0, max_iter] (see MANDELBROT_MIN_EQUAL for why not all)."""
    kern = loaded("mandelbrot.py", "mandelbrot", backend)
    args = reference_2d.mandel_inputs(None, shape)
    want = reference_2d.mandelbrot_ref(args)
    got = kern(**args)["counts"].reshape(-1)
    assert got.dtype == np.uint32 and got.shape == want.shape
    assert int(got.max()) <= args["max_iter"]
    equal = float(np.mean(got == want))
    assert equal >= MANDELBROT_MIN_EQUAL, f"only {equal:.4f} of pixels match for {shape}"


def test_histogram_accumulates_into_bins(backend: str):
    """bins is read-write: the counts land in the array passed, and a second call adds to
    the counts of the first."""
    kern = loaded("histogram.py", "histogram", backend)
    data = bytes(range(256)) * 3 + b"\x07" * 5
    words = reference.pack_bytes(data)
    bins = np.zeros(256, np.uint32)
    assert kern(words=words, bins=bins, n=len(data))["bins"] is bins
    expected = np.full(256, 3, np.uint32)
    expected[7] += 5
    np.testing.assert_array_equal(bins, expected)
    kern(words=words, bins=bins, n=len(data))
    np.testing.assert_array_equal(bins, 2 * expected)


@pytest.mark.parametrize("n", [1, 63, 65, 1000])
def test_atomic_stats(backend: str, n: int):
    """Every atomic op: min/max/add/sub/or/xor/and exact; the exchange leaves one of the
    keys; compare-exchange inserts every key exactly once into the open-addressing set."""
    kern = loaded("atomics.py", "atomic_stats", backend)
    args = reference_extra.atomic_stats_inputs(np.random.default_rng(n), n)
    want = reference_extra.atomic_stats_ref(args)
    got = reference_extra.canonical_atomic_stats(args, kern(**args))
    for name, expected in want.items():
        np.testing.assert_array_equal(got[name], expected, err_msg=f"atomic_stats n={n} {name}")


def test_every_kernel_has_a_reference():
    """Each stem the tree compiles to is covered by CASES or a dedicated test above."""
    from vyre_build.compiler import list_kernels

    from vyre_build.library import kernel_ids

    # kernels/lib_*.py run through vyre_build.library: tests/gpu/test_library.py
    dedicated = {"mandelbrot", "atomic_stats", *kernel_ids()}
    stems = {
        s for f in kernel_files() for s in list_kernels(os.path.join(KERNELS, f), root=KERNELS)
    }
    covered = {c.stem for c in reference.CASES} | dedicated
    assert stems - covered == set(), f"kernels without a numpy reference: {stems - covered}"
    assert covered - stems == set(), f"references for missing kernels: {covered - stems}"
