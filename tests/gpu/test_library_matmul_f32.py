"""library.matmul (kernels/lib_matmul.py: 128 x 128 register tiles, 16-deep swizzled
shared panels) exactly against numpy on every backend.

Inputs are small integers over 4 and 2, so every product and partial sum is exact in f32
and the kernel must give numpy's f64 product bit for bit, whatever its order of FMAs.
Sizes hit each edge: 1 x 1 x 1, N not a multiple of 4 (scalar loads of B, scalar stores),
K not a multiple of the 16-deep step, more than one 128 x 128 block on each axis.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from vyre_build.runtime import get_device, open_bundle
from vyre_build import library

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_library import build_library  # noqa: E402

SIZES = [(1, 1, 1), (17, 15, 33), (130, 47, 70), (129, 40, 132), (64, 33, 256)]


@pytest.fixture(scope="module")
def mm_bundle(tmp_path_factory):
    return build_library(tmp_path_factory.mktemp("mm32") / "mm.vyrebundle", ("lib_matmul.py",))


def exact(rng, m, k, n):
    a = (rng.integers(-4, 5, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-4, 5, (k, n)) / 2).astype(np.float32)
    return a, b, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


@pytest.mark.parametrize("m, k, n", SIZES)
def test_matmul_is_exact(backend, mm_bundle, m, k, n):
    a, b, want = exact(np.random.default_rng(m + 3 * k + 7 * n), m, k, n)
    with open_bundle(mm_bundle, backend=backend) as bundle:
        got = library.matmul(bundle, a, b)
        assert got.dtype == np.float32 and got.shape == (m, n)
        np.testing.assert_array_equal(got, want)
        dev = bundle.device
        out = dev.buffer((m, n), "f32")  # a DeviceBuffer of any length: stores as it allows
        assert library.matmul(bundle, dev.buffer(a), dev.buffer(b), out=out) is out
        np.testing.assert_array_equal(out.read().reshape(m, n), want)


@pytest.mark.parametrize("lanes", [8, 32, 64])
def test_matmul_assumes_no_subgroup_size(mm_bundle, lanes):
    a, b, want = exact(np.random.default_rng(lanes), 130, 47, 70)
    with open_bundle(mm_bundle, device=get_device("cpu", subgroup_size=lanes)) as bundle:
        np.testing.assert_array_equal(library.matmul(bundle, a, b), want)
