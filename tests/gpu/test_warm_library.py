"""Bundle.warm() of the library's kernels on real devices (Vulkan on lavapipe, the cpu
reference): it makes the pipelines of the kernels the library's calls run on that device
and leaves out the others (library/picks.py, which the calls ask too); every call after
it finds its pipeline made; warm(all=True) makes the rest."""

from __future__ import annotations

import numpy as np
import pytest

from test_library import build_library

from vyre_build import library
from vyre_build.core.backends import BACKENDS
from vyre_build.library import picks
from vyre_build.runtime import open_bundle

NUMERIC = ("f32", "i32", "u32")
MODEL = {"vulkan_memory_model", "vulkan_memory_model_device_scope"}


def runs(backend, profile) -> set[str]:
    """What a device of `profile` runs of kernels/lib_*.py, written out from the profile
    (not asked of library/picks.py): a GPU Vulkan device with the memory model at device
    scope takes the single-pass reduce (the H200), lavapipe keeps the two passes (its
    memory-model modules run ~3x slower); an NVIDIA GPU with that model takes the scan's
    look-back (lib_scan_look.wide_* for long scans), every other device reduce-then-scan; the cpu
    reference takes both single passes."""
    if backend == "cpu":
        return {
            *(f"lib_reduce_once.{op}_{t}" for op in ("sum", "min", "max") for t in NUMERIC),
            *(f"lib_scan_look.{w}{t}" for w in ("", "wide_") for t in NUMERIC),
        }
    gpu_model = MODEL <= profile.features and profile.device_type != "CPU"
    once = "_once" if gpu_model else ""
    rts = {f"lib_scan_{p}.{t}" for p in ("sums", "block") for t in NUMERIC}
    # NVIDIA: the look-back, its wide tiles for long scans where the device has their shared
    # memory, else reduce-then-scan for f32 past LOOK_BACK_MOST values
    nvidia = gpu_model and profile.vendor_id == 0x10DE
    looks = {f"lib_scan_look.{t}" for t in NUMERIC}
    if profile.max_shared_memory >= library.LOOK_WIDE_SHARED:  # the wide tiles' shared_bytes
        looks |= {f"lib_scan_look.wide_{t}" for t in NUMERIC}
    else:
        looks |= {"lib_scan_sums.f32", "lib_scan_block.f32"}
    scans = looks if nvidia else rts
    return {
        *(f"lib_reduce{once}.{op}_{t}" for op in ("sum", "min", "max") for t in NUMERIC),
        *scans,
    }


# ... and on both, the default matmul and the two row kernels of each norm
EVERYWHERE = {"lib_matmul.f32", "lib_softmax.f32", "lib_softmax_flat.f32"}
EVERYWHERE |= {"lib_layer_norm.f32", "lib_layer_norm_flat.f32"}


@pytest.fixture(scope="module")
def lib_bundle(tmp_path_factory):
    return build_library(tmp_path_factory.mktemp("warmlib") / "lib.vyrebundle")


def fresh(backend, tmp_path):
    """A device of this test's own (not the shared one), so that its pipelines are these."""
    keywords = {"pipeline_cache": str(tmp_path / "plc")} if backend == "vulkan" else {}
    return BACKENDS[backend].device_class()(None, **keywords)


def made(device) -> set[str]:
    """The ids of the kernels with a pipeline on `device`."""
    return {key[0] for key in device._pipelines}


def run_every_call(bundle) -> None:
    """Each library function once per kernel it may run here: every op and type, short and
    long rows; checked against numpy."""
    rng = np.random.default_rng(1)
    for t, dtype in zip(NUMERIC, (np.float32, np.int32, np.uint32)):
        x = (rng.uniform(-50, 50, 3001) if t == "f32" else rng.integers(0, 50, 3001)).astype(dtype)
        for op in ("sum", "min", "max"):
            want = getattr(np, op)(x.astype(np.float64))
            np.testing.assert_allclose(library.reduce(bundle, x, op), want, rtol=1e-5, atol=1e-2)
        want = np.cumsum(x, dtype=np.float64)
        np.testing.assert_allclose(library.scan(bundle, x), want, rtol=1e-5, atol=1e-2)
    a, b = rng.standard_normal((33, 20), np.float32), rng.standard_normal((20, 17), np.float32)
    np.testing.assert_allclose(library.matmul(bundle, a, b), a @ b, rtol=1e-4, atol=1e-4)
    for cols in (8, 1500):  # the short-row kernel, then the 256-wide one
        x = rng.standard_normal((3, cols)).astype(np.float32)
        e = np.exp(x - x.max(-1, keepdims=True))
        np.testing.assert_allclose(library.softmax(bundle, x), e / e.sum(-1, keepdims=True), 1e-5)
        ones, zeros = np.ones(cols, np.float32), np.zeros(cols, np.float32)
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        want = (x - mean) / np.sqrt(var + 1e-5)
        got = library.layer_norm(bundle, x, ones, zeros)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.backends("vulkan", "cpu")
def test_warm_makes_what_the_library_runs_here_and_every_call_finds_it(
    backend, lib_bundle, tmp_path
):
    dev = fresh(backend, tmp_path)
    try:
        with open_bundle(lib_bundle, device=dev) as bundle:
            warmed = bundle.warm()
            here = runs(backend, dev.profile)
            assert set(warmed.kernels) == here | EVERYWHERE
            assert warmed.skipped == {}
            assert set(warmed.unpicked) == set(bundle.ids) - set(warmed.kernels)
            assert made(dev) == set(warmed.kernels) and warmed.created == len(dev._pipelines)
            two = (
                "lib_reduce.sum_f32" if "lib_reduce.sum_f32" in here else "lib_reduce_once.sum_f32"
            )
            other = (
                "lib_reduce_once.sum_f32" if two == "lib_reduce.sum_f32" else "lib_reduce.sum_f32"
            )
            assert warmed.unpicked[other] == f"library.reduce (sum, f32) runs {two} on this device"
            assert warmed.unpicked["lib_matmul.f32_64"] == (
                "library.matmul runs lib_matmul.f32 on this device"
            )
            pipelines = len(dev._pipelines)
            run_every_call(bundle)
            assert len(dev._pipelines) == pipelines  # every call's pipeline was made by warm()
            everything = bundle.warm(all=True)
            assert everything.unpicked == {} and made(dev) == set(everything.kernels)
            assert set(everything.kernels) | set(everything.skipped) == set(bundle.ids)
            assert everything.created == len(dev._pipelines) - pipelines > 0
    finally:
        dev.close()


@pytest.mark.backends("vulkan")
def test_warm_follows_the_device_choice_the_calls_make(lib_bundle, tmp_path, monkeypatch):
    """One function decides for both: where the single-pass reduce is made to pay (as on a
    GPU with the memory model), warm() makes lib_reduce_once and the calls run it."""
    monkeypatch.setattr(picks, "_single_pass_pays", lambda device: True)
    dev = fresh("vulkan", tmp_path)
    try:
        if not picks.SINGLE_PASS_FEATURES <= dev.profile.features:
            pytest.skip("the device has no Vulkan memory model: no single pass")
        with open_bundle(lib_bundle, device=dev) as bundle:
            warmed = bundle.warm()
            assert "lib_reduce_once.max_u32" in warmed.kernels
            assert "lib_reduce.max_u32" in warmed.unpicked
            pipelines = len(dev._pipelines)
            x = np.arange(5000, dtype=np.uint32)
            assert library.reduce(bundle, x, "max") == 4999
            assert len(dev._pipelines) == pipelines
    finally:
        dev.close()
