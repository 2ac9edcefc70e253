"""vyre_build.library against numpy on every backend (wgpu and Vulkan on lavapipe,
the cpu reference), through a bundle of kernels/lib_*.py.

Sizes hit the edges: 1 element, odd lengths, lengths that are not whole vec4s or whole
workgroups, several blocks and passes. The grid limits of library.py are lowered in some
tests (monkeypatch) so that every multi-step path runs at sizes the cpu reference takes
quickly. Integer results are exact; f32 within a tolerance stated beside each check.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from vyre_build.core.errors import DispatchError
from vyre_build.runtime import get_device, open_bundle
from vyre_build import library

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "kernels")
LIB_FILES = (
    "lib_reduce.py",
    "lib_scan.py",
    "lib_matmul.py",
    "lib_norm.py",
    "lib_norm_warp.py",
    "lib_norm_flat.py",
)
NP = {"u32": np.uint32, "i32": np.int32, "f32": np.float32}
# Lengths around vec4s (4), workgroups (256 invocations = 1024 values) and several blocks.
SIZES = (1, 3, 4, 5, 1023, 1024, 1025, 4099, 20001)


def build_library(path, files=LIB_FILES, targets=("wgsl", "spirv", "kdesc")):
    """kernels/`files` compiled for `targets` into one bundle at `path` (returned)."""
    from vyre_build.bundle import write_bundle
    from vyre_build.compiler import compile_file

    entries = []
    for file in files:
        for k in compile_file(os.path.join(KERNELS, file), root=KERNELS, targets=targets):
            arts = {s: b for s, b in k.artifacts.items() if s != ".meta.json"}
            entries.append({"meta": k.meta, "artifacts": arts})
    write_bundle(path, entries)
    return path


@pytest.fixture(scope="module")
def lib_bundle(tmp_path_factory):
    """kernels/lib_*.py compiled for every backend into one bundle."""
    return build_library(tmp_path_factory.mktemp("lib") / "lib.vyrebundle")


@pytest.fixture
def lib(backend, lib_bundle):
    with open_bundle(lib_bundle, backend=backend) as bundle:
        yield bundle


def values(kind: str, n, seed: int = 0, lo=None, hi=None):
    """Random values of `kind`: integers over the whole type (sums wrap), f32 in [-1, 1)."""
    rng = np.random.default_rng(seed)
    if kind == "f32":
        return rng.uniform(-1 if lo is None else lo, 1 if hi is None else hi, n).astype(np.float32)
    info = np.iinfo(NP[kind])
    return rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True).astype(NP[kind])


def want_scan(x, exclusive: bool):
    """numpy's prefix sums in x's dtype (integers wrap), f32 ones in f64."""
    flat = x.reshape(-1)
    wide = flat.dtype == np.float32
    sums = np.cumsum(flat.astype(np.float64)) if wide else np.cumsum(flat, dtype=flat.dtype)
    if exclusive:
        sums = np.concatenate([np.zeros(1, sums.dtype), sums[:-1]])
    return sums.reshape(x.shape)


def assert_scan(got, x, exclusive: bool, where: str):
    want = want_scan(x, exclusive)
    assert got.dtype == x.dtype and got.shape == x.shape, where
    if x.dtype == np.float32:
        # f32 sums of n values in [-1, 1): rounding grows with the running sum's size
        bound = 1e-5 * np.sqrt(np.arange(1, x.size + 1)).reshape(x.shape) + 1e-5
        assert np.all(np.abs(got - want) <= bound * np.maximum(1, np.abs(want))), where
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


# -- reduce ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["u32", "i32", "f32"])
def test_reduce_matches_numpy(lib, kind):
    for n in SIZES:
        x = values(kind, n, seed=n)
        for op in ("sum", "min", "max"):
            got = library.reduce(lib, x, op)
            where = f"reduce {op} {kind} n={n}"
            assert type(got) is NP[kind], where
            if op != "sum":
                assert got == getattr(np, op)(x), where
            elif kind == "f32":
                # a tree of f32 adds of n values in [-1, 1): well inside n * 1e-7
                assert abs(float(got) - float(x.astype(np.float64).sum())) <= 1e-6 * n, where
            else:
                assert got == x.sum(dtype=NP[kind]), where


def test_reduce_min_max_of_infinities_and_extremes(lib):
    x = np.array([np.inf, np.inf, np.inf], np.float32)
    assert library.reduce(lib, x, "min") == np.inf
    assert library.reduce(lib, -x, "max") == -np.inf
    ints = np.array([2**31 - 1, -(2**31), 5], np.int32)
    assert library.reduce(lib, ints, "min") == -(2**31)
    assert library.reduce(lib, ints, "max") == 2**31 - 1
    big = np.full(9, 2**32 - 1, np.uint32)
    assert library.reduce(lib, big, "min") == 2**32 - 1
    assert library.reduce(lib, big, "sum") == np.uint32((9 * (2**32 - 1)) % 2**32)


def test_reduce_f32_sum_is_the_same_every_run(lib):
    x = values("f32", 50001, seed=3, lo=-1e4, hi=1e4)
    first = library.reduce(lib, x, "sum")
    assert all(library.reduce(lib, x, "sum").tobytes() == first.tobytes() for _ in range(3))


def test_reduce_two_passes_with_few_partials(lib, monkeypatch):
    """Several workgroups per pass and a second pass over many partials."""
    monkeypatch.setattr(library, "MAX_PARTIALS", 6)  # 8 partials after rounding to vec4s
    for kind in ("u32", "f32"):
        x = values(kind, 30001, seed=5)
        got = library.reduce(lib, x, "max")
        assert got == x.max()


def test_reduce_device_buffers_in_and_out(lib):
    dev = lib.device
    for n in (1, 6, 1027):  # 6 and 1027 are no whole vec4s: the scalar path
        x = values("i32", n, seed=n)
        out = dev.buffer(1, "i32")
        assert library.reduce(lib, dev.buffer(x), "sum", out=out) is out
        assert out.read()[0] == x.sum(dtype=np.int32)
    grid = values("u32", (37, 41), seed=9)  # any shape: every value counts
    assert library.reduce(lib, grid, "max") == grid.max()


# -- scan ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["u32", "i32", "f32"])
def test_scan_matches_numpy(lib, kind):
    for n in SIZES:
        x = values(kind, n, seed=n)
        for exclusive in (False, True):
            got = library.scan(lib, x, exclusive=exclusive)
            assert_scan(got, x, exclusive, f"scan {kind} n={n} exclusive={exclusive}")


def test_scan_every_step_loop(lib, monkeypatch):
    """Blocks of several steps, and a second pass that scans the sums in several steps."""
    monkeypatch.setattr(library, "MAX_BLOCKS", 3)  # 13 vec4-steps of 256 -> 5 blocks of 3
    for kind in ("i32", "f32"):
        x = values(kind, 13 * 1024 - 7, seed=11)
        for exclusive in (False, True):
            got = library.scan(lib, x, exclusive=exclusive)
            assert_scan(got, x, exclusive, f"scan {kind} exclusive={exclusive}")
    monkeypatch.setattr(library, "MAX_BLOCKS", 1100)  # 1100 sums: pass 2 takes 2 steps
    x = values("u32", 1100 * 1024, seed=12) % np.uint32(7)
    assert_scan(library.scan(lib, x), x, False, "scan u32 1100 blocks")


@pytest.mark.parametrize("path", ["picked", "reduce-then-scan"])
def test_scan_carries_infinities_as_numpy_does(lib, monkeypatch, path):
    """An infinity stays an infinity in every later prefix (and +inf then -inf gives NaN),
    whichever subgroup lane, step or block it falls in: a lane's prefix is the exclusive sum
    of the lanes before it, never the inclusive one less its own value (inf - inf = NaN
    for every lane from the infinity's on). Small integers: every finite sum is exact."""
    if path == "reduce-then-scan":

        def two(kernels, device, kind, n=None):
            return f"lib_scan_sums.{kind}", f"lib_scan_block.{kind}"

        monkeypatch.setattr(library, "scan_runs", two)
    monkeypatch.setattr(library, "MAX_BLOCKS", 3)  # several blocks of several steps
    n = 13 * 1024 - 7
    x = (np.arange(n) % 5).astype(np.float32)
    for at in (0, 1, 37, 1024 + 8, 3 * 1024 + 256 * 4, n - 1):
        for sign in (1.0, -1.0):
            y = x.copy()
            y[at] = sign * np.inf
            for exclusive in (False, True):
                got = library.scan(lib, y, exclusive=exclusive)
                want = np.cumsum(y, dtype=np.float64)
                if exclusive:
                    want = np.concatenate(([0.0], want[:-1]))
                where = f"{path}: inf at {at} exclusive={exclusive}"
                np.testing.assert_array_equal(got, want.astype(np.float32), err_msg=where)
    y = x.copy()
    y[5], y[3000] = np.inf, -np.inf  # inf + -inf: NaN from 3000 on
    want = np.cumsum(y, dtype=np.float64).astype(np.float32)
    np.testing.assert_array_equal(library.scan(lib, y), want, err_msg=f"{path}: inf then -inf")


def test_scan_device_buffers_arrays_and_shapes(lib):
    dev = lib.device
    for n in (2, 7, 1030):  # not whole vec4s: scalar loads and stores
        x = values("u32", n, seed=n)
        out = dev.buffer(n, "u32")
        assert library.scan(lib, dev.buffer(x), out=out) is out
        assert_scan(out.read(), x, False, f"device buffers n={n}")
    x = values("i32", (3, 333), seed=2)  # flat order, result in x's shape
    into = np.zeros((3, 333), np.int32)
    assert library.scan(lib, x, exclusive=True, out=into) is into
    assert_scan(into, x, True, "2-D into an array")


@pytest.mark.backends("wgpu", "vulkan")
def test_scan_millions(lib):
    """A real grid: blocks of several steps and a two-step scan of the block sums."""
    n = 5_000_003
    x = values("u32", n, seed=1) % np.uint32(1000)
    assert_scan(library.scan(lib, x), x, False, "scan 5M")


# -- matmul ------------------------------------------------------------------------------


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 5, 7), (129, 17, 130), (128, 128, 128),
                                     (40, 300, 9)])  # fmt: skip
def test_matmul_matches_numpy(lib, m, k, n):
    rng = np.random.default_rng(m * k * n)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    got = library.matmul(lib, a, b)
    assert got.dtype == np.float32 and got.shape == (m, n)
    # K f32 FMAs of products in [-1, 1]: within K * 2^-23 of the f64 product
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=k * 2.0**-22)


def test_matmul_device_buffers(lib):
    dev = lib.device
    a = values("f32", 6 * 10, seed=1).reshape(6, 10)
    b = values("f32", 10 * 3, seed=2).reshape(10, 3)
    out = dev.buffer((6, 3), "f32")
    assert library.matmul(lib, dev.buffer(a), dev.buffer(b), out=out) is out
    np.testing.assert_allclose(out.read(), a @ b, rtol=0, atol=1e-5)


# -- softmax and layer norm -----------------------------------------------------------------

# Rows of every kernel (library.row_kernel): the short-row one (SHORT_ROWS) up to 1024
# values, the 256-wide one past that; around the threshold, whole vec4s or not, one value.
ROW_SHAPES = [(1, 1), (3, 5), (7,), (2, 3, 12), (2, 1023), (5, 1024), (3, 1025), (2, 1028),
              (2, 2047), (2, 2048), (2, 2049), (2, 3001), (3, 4100)]  # fmt: skip


def test_row_shapes_reach_every_row_kernel():
    for fn in ("softmax", "layer_norm"):
        used = {library.row_kernel(fn, shape[-1]) for shape in ROW_SHAPES}
        assert used == {f"lib_{fn}{s}.f32" for s in (library.SHORT_ROWS[0][1], "")}


def want_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def want_layer_norm(x, gamma, beta, eps):
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta


@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
def test_softmax_matches_numpy(lib, shape):
    x = values("f32", shape, seed=len(shape), lo=-20, hi=20)
    got = library.softmax(lib, x)
    assert got.dtype == np.float32 and got.shape == shape
    # f32 exp and sums: a few ulps of each probability, relative
    np.testing.assert_allclose(got, want_softmax(x), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("cols", [4, 1030, 3000])  # each row kernel
def test_softmax_is_stable_for_large_and_infinite_values(lib, cols):
    lowest = np.finfo(np.float32).min
    x = np.full((4, cols), -np.inf, np.float32)  # -inf contributes exp(-inf) = 0
    x[0, :4] = [1000.0, 1000.0, 990.0, -3.0e38]
    x[1, -4:] = [88.0, 89.0, 90.0, 91.0]
    x[2, :] = lowest  # all -FLT_MAX: uniform, not a NaN
    x[3, :] = np.linspace(-3.0e38, 3.0e38, cols, dtype=np.float32)
    got = library.softmax(lib, x)
    np.testing.assert_allclose(got, want_softmax(x), rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(got[2], np.float32(1 / cols), rtol=2e-6)


@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
def test_layer_norm_matches_numpy(lib, shape):
    cols = shape[-1]
    x = values("f32", shape, seed=cols, lo=-3, hi=5) + np.float32(100)  # far from 0
    gamma = values("f32", cols, seed=1, lo=0.5, hi=2)
    beta = values("f32", cols, seed=2)
    got = library.layer_norm(lib, x, gamma, beta, eps=1e-5)
    assert got.dtype == np.float32 and got.shape == shape
    # f32 moments of values near 100 shifted by the row's first: about 1e-5 of a unit
    np.testing.assert_allclose(got, want_layer_norm(x, gamma, beta, 1e-5), rtol=0, atol=2e-4)


@pytest.mark.parametrize("cols", [8, 1500, 2100])  # each row kernel
def test_row_kernels_take_more_rows_than_one_dispatch(lib, monkeypatch, cols):
    monkeypatch.setattr(library.rows, "MAX_ROWS", 2)  # 5 rows: the loop over rows, 2 apart
    x = values("f32", (5, cols), seed=4, lo=-4, hi=4)
    ones, zeros = np.ones(cols, np.float32), np.zeros(cols, np.float32)
    np.testing.assert_allclose(library.softmax(lib, x), want_softmax(x), rtol=2e-5, atol=1e-7)
    got = library.layer_norm(lib, x, ones, zeros, eps=0.0)
    np.testing.assert_allclose(got, want_layer_norm(x, 1, 0, 0.0), rtol=0, atol=2e-5)


@pytest.mark.parametrize("cols", [1, 5, 7, 37, 1000, 1024, 2048, 2049, 2052])
def test_layer_norm_of_constant_rows_is_beta(lib, cols):
    # Every value equals the mean, so the deviations, the variance and (x - mean) * r are
    # 0 and the result is beta exactly. A mean computed as sum / n is not exact: 0.1 * 37
    # / 37 != 0.1 in f32, and GPUs divide to 2.5 ulp (the H200 gave -2^20 * 5 / 5 !=
    # -2^20), which made such rows beta +- gamma; the kernels subtract the row's first
    # value before summing.
    x = np.empty((4, cols), np.float32)
    x[0], x[1], x[2], x[3] = 7.25, -(2.0**20), 0.1, 7.3
    gamma, beta = values("f32", cols, seed=1), values("f32", cols, seed=2)
    got = library.layer_norm(lib, x, gamma, beta, eps=1e-5)
    np.testing.assert_array_equal(got, np.broadcast_to(beta, x.shape))


class _Design(dict):
    """The library's kernels with softmax's and layer norm's short-row kernel tuned to
    `suffix` (library.SHORT_DESIGNS), through the tuning interface the library reads."""

    def __init__(self, kernels, suffix):
        super().__init__(kernels)
        self.suffix = suffix

    def tunable_for(self, fn):
        return fn

    def tuned(self, name):
        from vyre_build.runtime.tuning import Choice

        kid = f"lib_{name}{self.suffix}.f32"
        return Choice(name, self.suffix, kid, {"short_rows": 1024}, "forced", None)


# Every short-row design at the edges of vec4s, of subgroups (8, 32 lanes), of the
# registers (1024 at 32 lanes) and of the rows per workgroup (8 or 16 at 32 lanes, 32 or
# 64 at lavapipe's 8): row counts 1, 7, 9 and one past several workgroups.
DESIGN_COLS = (1, 3, 4, 5, 31, 32, 33, 1023, 1024)
DESIGN_ROWS = (1, 7, 9, 70)


def check_design(lib, suffix, cols, rows):
    """Softmax and layer norm of every design against numpy, constant rows exactly beta."""
    kernels = _Design(lib, suffix)
    assert library._row_kernel("softmax", cols, 1024, f"lib_softmax{suffix}.f32")[0] == (
        f"lib_softmax{suffix}.f32"
    )
    x = values("f32", (rows, cols), seed=cols * 100 + rows, lo=-20, hi=20)
    got = library.softmax(kernels, x)
    np.testing.assert_allclose(got, want_softmax(x), rtol=2e-5, atol=1e-7)
    x = values("f32", (rows, cols), seed=cols, lo=-3, hi=5) + np.float32(100)
    gamma = values("f32", cols, seed=1, lo=0.5, hi=2)
    beta = values("f32", cols, seed=2)
    got = library.layer_norm(kernels, x, gamma, beta, eps=1e-5)
    np.testing.assert_allclose(got, want_layer_norm(x, gamma, beta, 1e-5), rtol=0, atol=2e-4)
    flat = np.empty((rows, cols), np.float32)
    flat[:] = np.array([7.25, -(2.0**20), 0.1, 7.3], np.float32)[np.arange(rows) % 4, None]
    got = library.layer_norm(kernels, flat, gamma, beta, eps=1e-5)
    np.testing.assert_array_equal(got, np.broadcast_to(beta, flat.shape))


@pytest.mark.parametrize("suffix", list(library.SHORT_DESIGNS))
@pytest.mark.parametrize("cols", DESIGN_COLS)
def test_every_short_row_design_matches_numpy(lib, suffix, cols):
    for rows in DESIGN_ROWS:
        check_design(lib, suffix, cols, rows)


@pytest.mark.parametrize("suffix", list(library.SHORT_DESIGNS))
def test_every_short_row_design_takes_more_rows_than_one_dispatch(lib, monkeypatch, suffix):
    monkeypatch.setattr(library.rows, "MAX_ROWS", 1)  # one workgroup: the loop over rows
    for cols in (5, 8, 1024):
        check_design(lib, suffix, cols, 37)


@pytest.mark.parametrize("lanes", [1, 4, 32, 64])
@pytest.mark.parametrize("suffix", list(library.SHORT_DESIGNS))
def test_every_short_row_design_at_any_subgroup_size(lib_bundle, lanes, suffix):
    """The cpu reference at subgroup sizes where rows fit the registers (32, 64 lanes: up
    to 1024 and 2048 values) and where they do not (1, 4): the strided path."""
    with open_bundle(lib_bundle, device=get_device("cpu", subgroup_size=lanes)) as lib:
        for cols in (1, 5, 33, 1024) if lanes < 32 else DESIGN_COLS:
            check_design(lib, suffix, cols, 9 if lanes < 32 else 37)


def test_row_kernels_on_device_buffers(lib):
    dev = lib.device
    for cols in (12, 7, 2051):  # vec4 rows; scalar rows; the 256-wide kernel's scalar rows
        x = values("f32", (3, cols), seed=cols)
        out = dev.buffer((3, cols), "f32")
        assert library.softmax(lib, dev.buffer(x), out=out) is out
        np.testing.assert_allclose(out.read(), want_softmax(x), rtol=2e-5, atol=1e-7)
        g, b = dev.buffer(np.full(cols, 2, np.float32)), dev.buffer(np.ones(cols, np.float32))
        assert library.layer_norm(lib, dev.buffer(x), g, b, eps=1e-3, out=out) is out
        want = want_layer_norm(x, 2.0, 1.0, 1e-3)
        np.testing.assert_allclose(out.read(), want, rtol=0, atol=2e-5)


# -- batches and refusals that need the kernels ---------------------------------------------


def test_calls_chain_inside_the_callers_batch(lib):
    dev = lib.device
    x = values("u32", 3000, seed=6) % np.uint32(100)
    xb, prefix, total = dev.buffer(x), dev.buffer(3000, "u32"), dev.buffer(1, "u32")
    with dev.batch():
        library.scan(lib, xb, out=prefix)
        library.reduce(lib, prefix, "max", out=total)
    np.testing.assert_array_equal(prefix.read(), np.cumsum(x, dtype=np.uint32))
    assert total.read()[0] == x.sum()


def test_refusals_that_need_the_kernels(lib, backend):
    dev = lib.device
    x = np.ones(8, np.float32)
    with dev.batch():
        with pytest.raises(DispatchError) as e:
            library.scan(lib, x)
    assert str(e.value) == (
        "library.scan: called inside device.batch(): pass out= a DeviceBuffer (reading a "
        "result back waits for the batch's end)"
    )
    cases = [
        (
            lambda: library.reduce(lib, x, out=np.zeros(1, np.float32)),
            "library.reduce: out must be a DeviceBuffer of float32, shape (1,), got an array "
            "of float32, shape (1,)",
        ),
        (
            lambda: library.scan(lib, x, out=dev.buffer(7, "f32")),
            "library.scan: out must be an array or a DeviceBuffer of float32, shape (8,), got "
            "a DeviceBuffer of float32, shape (7,)",
        ),
        (
            lambda: library.scan(lib, x, out=np.zeros(8, np.int32)),
            "library.scan: out must be an array or a DeviceBuffer of float32, shape (8,), got "
            "an array of int32, shape (8,)",
        ),
        (
            lambda: library.reduce(lib, x, out=dev.buffer(np.ones(1, np.float32), read_only=True)),
            "library.reduce: out must be a DeviceBuffer of float32, shape (1,), got a "
            "DeviceBuffer of float32, shape (1,) (read-only)",
        ),
        (
            lambda: library.matmul(lib, dev.buffer(x), x.reshape(2, 4)),
            "library.matmul: a must be 2-D, got shape (8,)",
        ),
    ]
    released = dev.buffer(x)
    released.release()
    cases.append(
        (lambda: library.softmax(lib, released), "library.softmax: x is a released DeviceBuffer")
    )
    # another device: the cpu one (a second cpu device, of 8 lanes, on the cpu backend)
    foreign = get_device("cpu", subgroup_size=8 if backend == "cpu" else None).buffer(x)
    cases.append(
        (
            lambda: library.reduce(lib, foreign),
            f"library.reduce: x is a DeviceBuffer of another device (cpu: "
            f"{foreign.device.name}); the kernels run on {backend}: {dev.name}",
        )
    )
    for run, message in cases:
        with pytest.raises(DispatchError) as e:
            run()
        assert str(e.value) == message


@pytest.mark.backends("cpu")
@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16, 32, 64, 128])
def test_no_kernel_assumes_a_subgroup_size(backend, lib_bundle, lanes):
    """The cpu reference at every subgroup size a device may have (8 on lavapipe, 32 on
    NVIDIA), on lengths that are not multiples of 4, of 32 or of a workgroup."""
    with open_bundle(lib_bundle, device=get_device("cpu", subgroup_size=lanes)) as lib:
        x = values("i32", 3001, seed=lanes)
        assert library.reduce(lib, x, "sum") == x.sum(dtype=np.int32)
        assert library.reduce(lib, x, "min") == x.min()
        assert_scan(library.scan(lib, x, exclusive=True), x, True, f"scan at {lanes} lanes")
        f = values("f32", 1057, seed=lanes)
        assert_scan(library.scan(lib, f), f, False, f"f32 scan at {lanes} lanes")
        a, b = values("f32", (33, 37), seed=1), values("f32", (37, 29), seed=2)
        np.testing.assert_allclose(library.matmul(lib, a, b), a @ b, rtol=1e-5, atol=1e-5)
        # each row kernel (_warp: registers at cols <= 32 lanes, strided past; the 256-wide
        # one), on more rows than one workgroup holds at 32 lanes
        for cols in (5, 37, 100, 257, 1023, 1024, 2051, 2052):
            rows = values("f32", (11, cols), seed=cols)
            got = library.softmax(lib, rows)
            np.testing.assert_allclose(got, want_softmax(rows), rtol=2e-5)
            ones, zeros = np.ones(cols, np.float32), np.zeros(cols, np.float32)
            got = library.layer_norm(lib, rows, ones, zeros)
            np.testing.assert_allclose(got, want_layer_norm(rows, 1, 0, 1e-5), rtol=0, atol=2e-5)
            flat = np.full((11, cols), 0.1, np.float32)  # a constant row: exactly beta
            got = library.layer_norm(lib, flat, ones, np.full(cols, 0.5, np.float32))
            np.testing.assert_array_equal(got, np.full((11, cols), 0.5, np.float32))


# -- fp16 matmul on cooperative matrices -------------------------------------------------


@pytest.fixture(scope="module")
def f16_bundle(tmp_path_factory):
    from vyre_build.bundle import write_bundle
    from vyre_build.compiler import compile_file

    (k,) = compile_file(os.path.join(KERNELS, "lib_matmul_f16.py"), root=KERNELS)
    arts = {s: b for s, b in k.artifacts.items() if s != ".meta.json"}
    assert ".wgsl" not in arts
    path = tmp_path_factory.mktemp("f16") / "f16.vyrebundle"
    write_bundle(path, [{"meta": k.meta, "artifacts": arts}])
    return path


# library.matmul_f16 (lib_mm_f16) itself: test_library_mm_f16.py


def test_a_bundle_holding_the_f16_matmul_iterates_on_every_device(backend, f16_bundle):
    """The README's bundle holds lib_matmul_f16: values() and items() list it on a device
    without cooperative matrices too; calling or warming it there is refused by name."""
    from vyre_build.core.errors import DeviceError

    with open_bundle(f16_bundle, backend=backend) as bundle:
        (kernel,) = bundle.values()
        assert [kid for kid, _ in bundle.items()] == ["lib_matmul_f16"] == list(bundle)
        needed = bundle.reader.kernel_meta("lib_matmul_f16").features
        runs = all(f in bundle.device.profile.features for f in needed)
        assert bundle.runnable() == (["lib_matmul_f16"] if runs else [])
        assert (kernel.refusal is None) == runs
        if not runs:
            with pytest.raises(DeviceError) as info:
                kernel.warm()
            assert (
                str(info.value) == kernel.refusal and "needs cooperative_matrix" in kernel.refusal
            )
            assert bundle.warm().skipped == {"lib_matmul_f16": kernel.refusal}
