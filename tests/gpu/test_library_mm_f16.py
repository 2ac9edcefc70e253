"""library.matmul_f16 (kernels/lib_mm_f16.py: staged cooperative-matrix tiles) against numpy.

Inputs are small integers over 4 and 2 (exact in f16), so every product and every partial
sum is exact in f32 and the result must equal numpy's f64 product bit for bit (for f16
output: that product rounded once to f16). Sizes hit every edge of the kernel's 128 x 256
block and 32-deep K step (1 x 1 x 1, odd sizes, K and N not multiples of 4: the scalar
load path), batches with a shared operand, subgroups narrower than 32. The reference is
slow, so sizes stay small; the devices without cooperative matrices (lavapipe, wgpu)
refuse the kernel by name.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from vyre_build.core.errors import DeviceError, DispatchError
from vyre_build.runtime import get_device, open_bundle
from vyre_build import library

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_library import build_library  # noqa: E402

SIZES = [
    (1, 1, 1),
    (17, 33, 15),
    (130, 70, 47),
    (128, 128, 64),
    (40, 136, 36),
    (128, 132, 96),
    (128, 256, 32),  # one whole block: unguarded interior loads, direct f32 stores
    (128, 256, 80),  # a whole block over three K steps, the last one partial
    (128, 256, 128),  # three steps in the unguarded loop, the last in the guarded one
    (20, 257, 16),  # one column past a block
]


@pytest.fixture(scope="module")
def mm_bundle(tmp_path_factory):
    path = tmp_path_factory.mktemp("mm_f16") / "mm.vyrebundle"
    return build_library(path, ("lib_mm_f16.py", "lib_matmul_f16.py"), targets=("spirv", "kdesc"))


def values(rng, shape, scale):
    return (rng.integers(-4, 5, shape) / scale).astype(np.float16)


def product(a, b, out_dtype="float32"):
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    return exact.astype(np.float32 if out_dtype == "float32" else np.float16)


def runs(bundle, kid):
    needed = bundle.reader.kernel_meta(kid).features
    return all(f in bundle.device.profile.features for f in needed)


@pytest.mark.parametrize("out_dtype", ["float32", "float16"])
@pytest.mark.parametrize("m, n, k", SIZES)
def test_matmul_f16_matches_numpy_or_is_refused(backend, mm_bundle, m, n, k, out_dtype):
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a, b = values(rng, (m, k), 4), values(rng, (k, n), 2)
    with open_bundle(mm_bundle, backend=backend) as bundle:
        kid = "lib_mm_f16." + out_dtype.replace("float", "f")
        if not runs(bundle, kid) or not runs(
            bundle, "lib_matmul_f16"
        ):  # lavapipe and wgpu: refused by name
            with pytest.raises(DeviceError, match="needs cooperative_matrix"):
                library.matmul_f16(bundle, a, b, out_dtype=out_dtype)
            return
        got = library.matmul_f16(bundle, a, b, out_dtype=out_dtype)
        assert got.dtype == np.dtype(out_dtype) and got.shape == (m, n)
        np.testing.assert_array_equal(got, product(a, b, out_dtype))


def test_batches_and_a_shared_operand_on_the_reference(mm_bundle):
    """A batch of 3 on both sides, then a 2-D b shared by a batched a, then a 2-D a shared
    by a batched b: each entry is its own product (grid z, batch strides, stride 0)."""
    rng = np.random.default_rng(3)
    a, b = values(rng, (3, 20, 40), 4), values(rng, (3, 40, 36), 2)
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        got = library.matmul_f16(bundle, a, b)
        assert got.shape == (3, 20, 36)
        np.testing.assert_array_equal(got, product(a, b))
        np.testing.assert_array_equal(library.matmul_f16(bundle, a, b[1]), product(a, b[1]))
        half = library.matmul_f16(bundle, a[2], b, out_dtype="float16")
        np.testing.assert_array_equal(half, product(a[2], b, "float16"))
        # whole blocks in a batch: each entry's unguarded K loop reads its own operands
        a, b = values(rng, (2, 128, 96), 4), values(rng, (2, 96, 256), 2)
        np.testing.assert_array_equal(library.matmul_f16(bundle, a, b), product(a, b))


def test_device_buffers_in_and_out_take_the_scalar_path_where_rows_are_not_vec4s(mm_bundle):
    """DeviceBuffers of any shape run as they are (no padding): 33 halves of b's rows and a
    buffer of an odd length are read through the scalar path; out= is written in place and
    nothing past C is touched (its own length)."""
    rng = np.random.default_rng(5)
    a, b = values(rng, (9, 7), 4), values(rng, (7, 33), 2)
    dev = get_device("cpu")
    with open_bundle(mm_bundle, device=dev) as bundle:
        out = dev.buffer((9, 33), "f32")
        assert library.matmul_f16(bundle, dev.buffer(a), dev.buffer(b), out=out) is out
        np.testing.assert_array_equal(out.read().reshape(9, 33), product(a, b))
        # the same call again replays its dispatch on the same buffers: same values
        assert library.matmul_f16(bundle, dev.buffer(a), dev.buffer(b), out=out) is out
        np.testing.assert_array_equal(out.read().reshape(9, 33), product(a, b))


def test_subgroups_narrower_than_32_compute_the_same_values(mm_bundle):
    """With 8 lanes, 16 subgroups share the 4 quarters of a block: equal stores."""
    rng = np.random.default_rng(8)
    a, b = values(rng, (130, 47), 4), values(rng, (47, 70), 2)
    with open_bundle(mm_bundle, device=get_device("cpu", subgroup_size=8)) as bundle:
        np.testing.assert_array_equal(library.matmul_f16(bundle, a, b), product(a, b))


def test_subgroups_wider_than_32_are_refused(mm_bundle):
    a = np.ones((4, 4), np.float16)
    with open_bundle(mm_bundle, device=get_device("cpu", subgroup_size=64)) as bundle:
        with pytest.raises(DispatchError) as info:
            library.matmul_f16(bundle, a, a)
    assert str(info.value) == (
        "library.matmul_f16: the device (cpu: vyre reference (CPU)) has subgroups of 64 "
        "invocations; lib_mm_f16.f32 needs subgroups of at most 32: use library.matmul on "
        "float32 values there"
    )


@pytest.mark.parametrize(
    "a, b, kwargs, message",
    [
        ((2, 3, 4, 5), (5, 6), {}, "a must be 2-D or 3-D (a batch), got shape (2, 3, 4, 5)"),
        (
            (3, 4),
            (5, 6),
            {},
            "a is (3, 4) and b is (5, 6): a's columns (4) must equal b's rows (5)",
        ),
        (
            (2, 3, 4),
            (3, 4, 6),
            {},
            "a is (2, 3, 4) and b is (3, 4, 6): their batches (2 and 3) must be equal",
        ),
        (
            (3, 4),
            (4, 6),
            {"out_dtype": "bfloat16"},
            "out_dtype must be 'float32' or 'float16', got 'bfloat16'",
        ),
    ],
)
def test_bad_arguments_are_refused_by_name(mm_bundle, a, b, kwargs, message):
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        with pytest.raises(DispatchError) as info:
            library.matmul_f16(bundle, np.ones(a, np.float16), np.ones(b, np.float16), **kwargs)
    assert str(info.value) == "library.matmul_f16: " + message


def test_a_batch_past_the_grid_limit_is_refused(mm_bundle, monkeypatch):
    monkeypatch.setattr(library.matmuls, "MAX_BATCH", 2)
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        with pytest.raises(DispatchError) as info:
            library.matmul_f16(bundle, np.ones((3, 2, 2), np.float16), np.ones((2, 2), np.float16))
    assert str(info.value) == "library.matmul_f16: a batch of 3 is more than 2 (split it)"


def candidate_call(dev, kernel, a, b, out_dtype, width):
    """A bench/kernels/ candidate (mm_f16_narrow.py and mm_f16_scalar.py: 128 x 128 blocks;
    `coop_bench --candidate`'s of the library's design: 128 x 256) on the reference, as coop_bench calls it: the library's
    bindings and scalars, grid x in blocks of `width`."""
    z, m, k = a.shape
    n = b.shape[-1]
    half = out_dtype == "float16"
    c = dev.buffer(4 if half else z * m * n, "f32")
    h = dev.buffer(z * m * n if half else 4, "f16")
    # uploaded as the library does: flat, padded to whole vec4s
    da, db = (dev.buffer(np.resize(x.ravel(), -(-x.size // 4) * 4)) for x in (a, b))
    gx, gy = -(-n // width) * width, -(-m // 128)
    kernel(a=da, a4=da, b=db, b4=db, c=c, h=h, M=m, N=n, K=k, sa=m * k, sb=k * n, sc=m * n,
           va=int(k % 4 == 0), vb=int(n % 4 == 0), gx=gx, gy=gy, gz=z)  # fmt: skip
    return (h if half else c).read().reshape(z, m, n)


@pytest.mark.parametrize(
    "name, width",
    [("mm_f16_narrow", 128), ("mm_f16_scalar", 128)],
)
@pytest.mark.parametrize("out_dtype", ["float32", "float16"])
@pytest.mark.parametrize(
    "z, m, n, k",
    [
        (1, 1, 1, 1),
        (1, 130, 70, 47),
        (2, 20, 300, 40),
        (1, 128, 256, 64),
        (1, 129, 257, 97),
        (2, 128, 256, 100),
    ],
)
def test_the_bench_candidates_match_numpy_on_the_reference(z, m, n, k, out_dtype, name, width):
    from vyre_build.compiler import compile_file
    from vyre_build.runtime import load_kernel

    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))  # imports kernels/
    found = compile_file(os.path.join(root, "bench", "kernels", name + ".py"), root=root)
    (meta, kdesc) = next(
        (x.meta, x.kdesc) for x in found if x.stem == name + "." + out_dtype.replace("float", "f")
    )
    dev = get_device("cpu")
    rng = np.random.default_rng(z + m + n + k)
    a, b = values(rng, (z, m, k), 4), values(rng, (z, k, n), 2)
    got = candidate_call(dev, load_kernel(meta, device=dev, kdesc=kdesc), a, b, out_dtype, width)
    np.testing.assert_array_equal(got, product(a, b, out_dtype))


@pytest.mark.parametrize(
    "a, b, out_dtype, kid",
    [
        ((48, 32), (32, 128), "float32", "lib_mm_f16.f32"),  # whole fragments: staged too
        ((2, 64, 16), (16, 64), "float32", "lib_mm_f16.f32"),  # a batch of whole blocks
        ((2, 48, 16), (16, 64), "float32", "lib_mm_f16.f32"),  # rows would spill into z + 1
        ((48, 32), (32, 120), "float32", "lib_mm_f16.f32"),  # N not a multiple of 64
        ((48, 32), (32, 128), "float16", "lib_mm_f16.f16"),  # f16 output: staged only
    ],
)
def test_each_shape_runs_the_kernel_that_fits_it(mm_bundle, a, b, out_dtype, kid):
    """With no tuning record every shape runs the staged lib_mm_f16 (faster on the H200
    than lib_matmul_f16, which only a record picks: tests/unit/test_tuning.py): a mapping
    without the other kernel still runs the call and gives numpy's exact product; without
    the staged one, the refusal names it."""
    rng = np.random.default_rng(len(a) + a[-1])
    x, y = values(rng, a, 4), values(rng, b, 2)
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        only = {kid: bundle[kid]}
        got = library.matmul_f16(only, x, y, out_dtype=out_dtype)
        np.testing.assert_array_equal(got, product(x, y, out_dtype))
        other = {k: bundle[k] for k in bundle if k != kid}
        with pytest.raises(DispatchError) as info:
            library.matmul_f16(other, x, y, out_dtype=out_dtype)
    where = "lib_matmul_f16.py" if kid == "lib_matmul_f16" else "lib_mm_f16.py"
    assert str(info.value) == (
        f"library.matmul_f16: no kernel {kid!r} in the kernels given (build kernels/{where} "
        "into them)"
    )
