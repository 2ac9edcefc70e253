"""library.matmul_bf16 (kernels/lib_mm_bf16.py: staged bf16 cooperative-matrix tiles)
against numpy, on every backend that can run it, and refused by name on the others.

Inputs are small integers over 4 and 2 (exact in bf16), so every product and every partial
sum is exact in f32 and the result must equal numpy's f64 product bit for bit (for bf16
output: that product rounded once to nearest even, `core.bfloat16.from_f32`). Sizes hit
every edge of the kernel's 128 x 256 block and 32-deep K step, batches with a shared
operand, subgroups narrower than 32. Devices without bf16 cooperative matrices (lavapipe,
wgpu) refuse the kernel naming what they lack; the H200 runs it (the device tier).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from vyre_build import library
from vyre_build.core import bfloat16
from vyre_build.core.errors import DeviceError, DispatchError
from vyre_build.runtime import get_device, open_bundle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_library import build_library  # noqa: E402

SIZES = [
    (1, 1, 1),
    (17, 33, 15),
    (130, 70, 47),
    (40, 136, 36),
    (128, 256, 32),  # one whole block: direct f32 fragment stores
    (20, 257, 16),  # one column past a block
]


@pytest.fixture(scope="module")
def mm_bundle(tmp_path_factory):
    path = tmp_path_factory.mktemp("mm_bf16") / "mm.vyrebundle"
    return build_library(path, ("lib_mm_bf16.py",), targets=("spirv", "kdesc"))


def values(rng, shape, scale):
    """bf16 bit patterns of small integers over `scale` (exact in bf16), and their f32."""
    x = (rng.integers(-4, 5, shape) / scale).astype(np.float32)
    return bfloat16.from_f32(x).reshape(shape), x


def product(a, b, out_dtype="float32"):
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    return exact if out_dtype == "float32" else bfloat16.from_f32(exact).reshape(exact.shape)


def runs(bundle, kid):
    needed = bundle.reader.kernel_meta(kid).features
    return all(f in bundle.device.profile.features for f in needed)


@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("m, n, k", SIZES)
def test_matmul_bf16_matches_numpy_or_is_refused(backend, mm_bundle, m, n, k, out_dtype):
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    (a, fa), (b, fb) = values(rng, (m, k), 4), values(rng, (k, n), 2)
    kid = "lib_mm_bf16." + ("f32" if out_dtype == "float32" else "bf16")
    with open_bundle(mm_bundle, backend=backend) as bundle:
        if not runs(bundle, kid):  # lavapipe and wgpu: refused, naming what they lack
            with pytest.raises(DeviceError, match=f"Kernel '{kid}' needs (bf16|cooperative)"):
                library.matmul_bf16(bundle, a, b, out_dtype=out_dtype)
            return
        got = library.matmul_bf16(bundle, a, b, out_dtype=out_dtype)
        want = product(fa, fb, out_dtype)
        assert got.dtype == want.dtype and got.shape == (m, n)
        np.testing.assert_array_equal(got, want)


def test_batches_and_a_shared_operand_on_the_reference(mm_bundle):
    rng = np.random.default_rng(3)
    (a, fa), (b, fb) = values(rng, (3, 20, 40), 4), values(rng, (3, 40, 36), 2)
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        got = library.matmul_bf16(bundle, a, b)
        assert got.shape == (3, 20, 36)
        np.testing.assert_array_equal(got, product(fa, fb))
        np.testing.assert_array_equal(library.matmul_bf16(bundle, a, b[1]), product(fa, fb[1]))
        half = library.matmul_bf16(bundle, a[2], b, out_dtype="bfloat16")
        np.testing.assert_array_equal(half, product(fa[2], fb, "bfloat16"))


def test_ml_dtypes_arrays_go_in_and_come_back_as_bfloat16(mm_bundle):
    """An ml_dtypes.bfloat16 array (JAX's, TensorFlow's) is taken as its bits, without the
    package importing ml_dtypes; bf16 output comes back in that dtype."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(4)
    (_, fa), (_, fb) = values(rng, (9, 24), 4), values(rng, (24, 10), 2)
    a, b = fa.astype(ml_dtypes.bfloat16), fb.astype(ml_dtypes.bfloat16)
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        np.testing.assert_array_equal(library.matmul_bf16(bundle, a, b), product(fa, fb))
        half = library.matmul_bf16(bundle, a, b, out_dtype="bfloat16")
        assert half.dtype == np.dtype(ml_dtypes.bfloat16)
        want = product(fa, fb).astype(ml_dtypes.bfloat16)  # ml_dtypes' own rounding
        np.testing.assert_array_equal(half.view(np.uint16), want.view(np.uint16))


def test_rounding_to_bf16_output_is_to_nearest_even(mm_bundle):
    """Sums that fall between two bf16 values: 1 + 2^-8 (a tie: to the even 1.0), 1 + 3 *
    2^-8 (a tie: up to 1 + 2^-6), 1 + 2^-8 + 2^-10 (above the tie: up)."""
    sums = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-10], np.float32)
    # a (3 x 2) of [1, s - 1] times b (2 x 1) of ones: row i sums to sums[i], exactly
    fa = np.stack([np.ones(3, np.float32), sums - 1], axis=1)
    a, b = bfloat16.from_f32(fa).reshape(3, 2), bfloat16.from_f32(np.ones((2, 1), np.float32))
    assert np.array_equal(bfloat16.to_f32(a), fa)  # the inputs themselves are exact
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        got = library.matmul_bf16(bundle, a, b.reshape(2, 1), out_dtype="bfloat16")
    assert bfloat16.to_f32(got).ravel().tolist() == [1.0, 1 + 2**-6, 1 + 2**-7]


def test_subgroups_narrower_than_32_compute_the_same_values(mm_bundle):
    rng = np.random.default_rng(8)
    (a, fa), (b, fb) = values(rng, (130, 47), 4), values(rng, (47, 70), 2)
    with open_bundle(mm_bundle, device=get_device("cpu", subgroup_size=8)) as bundle:
        np.testing.assert_array_equal(library.matmul_bf16(bundle, a, b), product(fa, fb))


@pytest.mark.parametrize(
    "a, b, kwargs, message",
    [
        ((3, 4), (5, 6), {}, "a is (3, 4) and b is (5, 6): a's columns (4) must equal b's rows (5)"),
        ((3, 4), (4, 6), {"out_dtype": "float16"}, "out_dtype must be 'float32' or 'bfloat16', got 'float16'"),
        ("f16", (4, 6), {}, "a must be bfloat16 (uint16 bits), got an array of float16, shape (3, 4)"),
    ],
)  # fmt: skip
def test_bad_arguments_are_refused_by_name(mm_bundle, a, b, kwargs, message):
    x = np.ones((3, 4), np.float16) if a == "f16" else np.ones(a, np.uint16)
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        with pytest.raises(DispatchError) as info:
            library.matmul_bf16(bundle, x, np.ones(b, np.uint16), **kwargs)
    assert str(info.value) == "library.matmul_bf16: " + message
