"""library.matmul (kernels/lib_matmul.py: register tiles in double-buffered shared panels)
exactly against numpy on every backend, in every variant the matmul tunable may pick.

Inputs are small integers over 4 and 2, so every product and partial sum is exact in f32
and the kernel must give numpy's f64 product bit for bit, whatever its order of FMAs.
Sizes hit each edge: 1 x 1 x 1, N not a multiple of 4 (scalar loads of B, scalar stores),
K not a multiple of the 16-deep step, more than one 128 x 128 block on each axis, blocks
inside C that take the fast K loop (vec4 loads of B) before the guarded rest.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from vyre_build.runtime import get_device, open_bundle
from vyre_build import library
from vyre_build.runtime.tuning import Choice

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_library import build_library  # noqa: E402

SIZES = [(1, 1, 1), (17, 15, 33), (130, 47, 70), (129, 40, 132), (64, 33, 256), (256, 72, 128)]


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


# The variants kernels/tuning.yaml offers (and the default), with the block (rows, columns) each computes.
VARIANTS = {
    "lib_matmul.f32": (128, 128),  # the default
    "lib_matmul.f32_pad": (128, 128),
    "lib_matmul.f32_64": (64, 64),
    "lib_matmul.f32_64p": (64, 64),
    "lib_matmul.f32_128x64": (128, 64),
    "lib_matmul.f32_64x128": (64, 128),
    "lib_matmul.f32_k16": (128, 128),
    "lib_matmul.f32_k16p": (128, 128),
}
# Edges of 64- and 128-wide blocks, N not a multiple of 4, K = 1, K off the 8- and 16-deep steps;
# then blocks inside C with vec4 rows, whose unguarded K loop takes two steps an iteration:
# an odd and an even count of such steps for 8- and 16-deep steps alike, one step, none.
EDGES = [(1, 1, 1), (63, 65, 127), (65, 1, 63), (129, 17, 65), (127, 33, 129), (64, 16, 64)]
EDGES += [(128, 24, 128), (128, 48, 128), (256, 80, 256), (128, 136, 132), (128, 8, 128)]


class Pick(dict):
    """A mapping of kernels whose matmul tunable picks `kid` with blocks of `block`."""

    def __init__(self, bundle, kid, block):
        super().__init__({kid: bundle[kid]})
        params = {"tile": 128, "tile_m": block[0], "tile_n": block[1], "wg": 256}
        self.choice = Choice("matmul", kid, kid, params, "forced", None)

    def tunable_for(self, fn):
        return "matmul" if fn == "matmul" else None

    def tuned(self, name):
        return self.choice


@pytest.mark.parametrize("kid", sorted(VARIANTS))
@pytest.mark.parametrize("m, k, n", EDGES)
def test_every_variant_is_exact(backend, mm_bundle, kid, m, k, n):
    a, b, want = exact(np.random.default_rng(m + 5 * k + 11 * n), m, k, n)
    with open_bundle(mm_bundle, backend=backend) as bundle:
        need, have = (
            bundle.reader.kernel_meta(kid).shared_bytes,
            bundle.device.profile.max_shared_memory,
        )
        if need > have:  # lavapipe: 32 KiB, less than f32_k16p's
            pytest.skip(f"{kid} declares {need} bytes of shared memory, {backend} has {have}")
        kernels = Pick(bundle, kid, VARIANTS[kid])
        np.testing.assert_array_equal(library.matmul(kernels, a, b), want)
        dev = bundle.device
        out = dev.buffer((m, n), "f32")
        assert library.matmul(kernels, dev.buffer(a), dev.buffer(b), out=out) is out
        np.testing.assert_array_equal(out.read().reshape(m, n), want)


@pytest.fixture(scope="module")
def deep_tall_bundle(tmp_path_factory):
    """A copy of kernels/lib_matmul.py with one variant the docstring allows but the tree
    does not declare: RM = 2, RN = 1, BK = 16 (A's panel 512 vec4s in rows of 32, B's 256 in
    rows of 16: the panels differ in shape, so B keeps its own indices)."""
    import shutil

    from vyre_build.bundle import write_bundle
    from vyre_build.compiler import compile_file

    src = os.path.join(os.path.dirname(__file__), "..", "..", "kernels")
    root = tmp_path_factory.mktemp("mmdeep")
    for name in ("lib_matmul.py", "lib_common.py"):
        shutil.copy(os.path.join(src, name), root / name)
    (root / "variants.yaml").write_text(
        "lib_matmul.py:\n  lib_matmul:\n"
        "    f32_128x64_k16: {T: f32, V: vec4f, RN: 1, BK: 16, SB: 24576}\n"
    )
    compiled = compile_file(str(root / "lib_matmul.py"), root=str(root))
    entries = [
        {"meta": k.meta, "artifacts": {s: b for s, b in k.artifacts.items() if s != ".meta.json"}}
        for k in compiled
    ]
    assert [e["meta"]["id"] for e in entries] == ["lib_matmul.f32_128x64_k16"]
    path = root / "deep.vyrebundle"
    write_bundle(path, entries)
    return path


@pytest.mark.parametrize("m, k, n", EDGES)
def test_a_128x64_block_16_deep_is_exact(backend, deep_tall_bundle, m, k, n):
    kid = "lib_matmul.f32_128x64_k16"
    a, b, want = exact(np.random.default_rng(m + 3 * k + 5 * n), m, k, n)
    with open_bundle(deep_tall_bundle, backend=backend) as bundle:
        assert bundle[kid].meta.shared_bytes == 24576  # 16 KiB of A's panel, 8 of B's
        np.testing.assert_array_equal(library.matmul(Pick(bundle, kid, (128, 64)), a, b), want)


def test_a_variant_with_the_wrong_tile_is_wrong(mm_bundle):
    """The check above can fail: the 64-wide kernel run on a 128-wide grid leaves C's
    blocks partly unwritten (zeros where numpy has values)."""
    a, b, want = exact(np.random.default_rng(1), 129, 17, 130)
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        got = library.matmul(Pick(bundle, "lib_matmul.f32_64", (128, 128)), a, b)
        assert not np.array_equal(got, want)


def test_the_padded_variants_declare_their_shared_memory(mm_bundle):
    """The padded and 16-deep 128-wide variants need more than the portable 16 KiB and their
    metadata says so (a device with less refuses them: the tuning test below)."""
    with open_bundle(mm_bundle, device=get_device("cpu")) as bundle:
        assert bundle["lib_matmul.f32"].meta.shared_bytes == 16384
        assert bundle["lib_matmul.f32_64"].meta.shared_bytes == 16384
        assert bundle["lib_matmul.f32_pad"].meta.shared_bytes == 17408
        assert bundle["lib_matmul.f32_64p"].meta.shared_bytes == 17408
        assert bundle["lib_matmul.f32_k16"].meta.shared_bytes == 32768
        assert bundle["lib_matmul.f32_k16p"].meta.shared_bytes == 33792


def test_tuning_refuses_the_candidates_a_device_cannot_run(mm_bundle, tmp_path):
    """On a device with the portable 16 KiB of shared memory (WebGPU's default) the tuner
    drops the padded candidates with the runtime's refusal, times the others and picks one
    of them; the library then runs the pick."""
    import dataclasses

    import yaml

    from vyre_build.bundle import read_bundle, write_bundle
    from vyre_build.runtime.backends.cpu import CpuDevice
    from vyre_build.library.tuner import tune_bundle

    with open(os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "tuning.yaml")) as f:
        declared = yaml.safe_load(f)["matmul"]
    cands = {
        name: {"kernel": c.pop("kernel"), "params": c} for name, c in declared["candidates"].items()
    }
    assert set(cands) == {
        "tile128", "tile128p", "k16", "k16p", "tile64", "tile64p", "tile128x64", "tile64x128"
    }  # fmt: skip
    case = {"inputs": {"a": {"shape": [70, 33], "dtype": "f32", "fill": "uniform"},
                       "b": {"shape": [33, 130], "dtype": "f32", "fill": "uniform"}},
            "tolerance": 1e-4}  # fmt: skip
    tunable = {"library": "matmul", "default": "tile128", "candidates": cands, "case": case}
    with read_bundle(mm_bundle) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
        ]
    path = tmp_path / "tuned.vyrebundle"
    write_bundle(path, entries, tuning={"tunables": {"matmul": tunable}, "records": []})
    small = CpuDevice()
    small.profile = dataclasses.replace(small.profile, max_shared_memory=16384)
    with open_bundle(path, device=small) as b, open_bundle(path, device=get_device("cpu")) as ref:
        record = tune_bundle(b, ref, rounds=1)
    pick = record["picks"]["matmul"]
    assert sorted(pick["seconds"]) == ["tile128", "tile128x64", "tile64", "tile64x128"]
    refused = {
        "tile128p": ("lib_matmul.f32_pad", 17408),
        "tile64p": ("lib_matmul.f32_64p", 17408),
        "k16": ("lib_matmul.f32_k16", 32768),
        "k16p": ("lib_matmul.f32_k16p", 33792),
    }
    assert sorted(pick["dropped"]) == sorted(refused)
    for name, (kid, declared) in refused.items():
        assert pick["dropped"][name] == (
            f"failed: Kernel '{kid}' declares {declared} bytes of shared memory (shared_bytes), "
            f"more than the cpu device {small.name} allows (16384)"
        )
    assert pick["candidate"] in pick["seconds"]
