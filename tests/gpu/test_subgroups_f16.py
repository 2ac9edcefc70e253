"""Subgroup operations and f16, dispatched for real and judged by the CPU reference.

Every kernel runs on each backend and on `vyre_build.reference.execute` with the device's
own subgroup size (8 on lavapipe, 32 on NVIDIA), so no kernel or test assumes a size.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.reference import execute
from vyre_build.runtime import load_kernel

HEADER = "from vyre_build.lang import *\n\n"

SUBGROUPS = """
@kernel(workgroup_size=64)
def sg(x: Buffer[f32], k: Buffer[u32], out: Buffer[f32, "w"], bits: Buffer[vec4u, "w"],
       ints: Buffer[u32, "w"]):
    i = global_id().x
    v = x[i]
    u = k[i]
    s = subgroup_add(v) + subgroup_min(v) * 2.0 + subgroup_max(v) * 3.0
    s += subgroup_inclusive_add(v) * 5.0 + subgroup_exclusive_add(v) * 7.0
    s += subgroup_broadcast(v, 1) + subgroup_broadcast_first(v) * 11.0
    s += subgroup_shuffle(v, subgroup_invocation_id() ^ 3) + subgroup_shuffle_xor(v, 1) * 13.0
    lane = subgroup_invocation_id()
    up = subgroup_shuffle_up(v, 1)
    down = subgroup_shuffle_down(v, 1)
    # past the subgroup's edges shuffle_up/down are undefined on a GPU: not read there
    s += select(lane >= 1, up, 0.0) * 17.0 + select(lane + 1 < subgroup_size(), down, 0.0) * 19.0
    out[i] = s
    bits[i] = subgroup_ballot(v > 0.0)
    w = subgroup_add(u) ^ subgroup_and(u) ^ subgroup_or(u) ^ subgroup_xor(u) ^ subgroup_max(u)
    w += u32(subgroup_all(u < 1000)) + u32(subgroup_any(u > 900)) * 2 + u32(subgroup_elect()) * 4
    ints[i] = w + subgroup_size() * 1000000 + subgroup_exclusive_add(u) * 8
"""

HALVES = """
@kernel(workgroup_size=64)
def halves(x: Buffer[f16], y: Buffer[vec4h, "rw"], wide: Buffer[f32, "w"], n: Buffer[i32, "w"],
           a: f32):
    i = global_id().x
    if i < len(wide):
        h = x[i] * 2.0 + f16(a)
        v = y[i] * h + vec4h(0.5)
        y[i] = sqrt(abs(v)) - vec4h(f16(0.25))
        wide[i] = f32(h) + f32(v.x) * 0.5 + f32(fma(h, h, 1.5))
        n[i] = i32(h * 8.0) + i32(isnan(h)) * 1000
"""


PROBE = """
@kernel(workgroup_size=1, grid=1)
def probe(size: Buffer[u32, "w"]):
    size[0] = subgroup_size()
"""


def subgroup_size(device, tmp_path) -> int:
    """The size the device runs subgroups at (wgpu reports only a range): asked of it."""
    k = build(tmp_path, PROBE, "probe.py")
    return int(load_kernel(k.meta, device=device, **_code(device, k))(size=1)["size"][0])


def build(tmp_path, src: str, name: str = "k.py"):
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(src))
    (k,) = compile_file(str(path))
    return k


def run_both(device, tmp_path, k, args: dict, buffers: dict, scalars: dict, n: int):
    """(device results, reference results) of one dispatch over n invocations."""
    kern = load_kernel(k.meta, device=device, **_code(device, k))
    got = kern(**{name: v.copy() if isinstance(v, np.ndarray) else v for name, v in args.items()})
    size = subgroup_size(device, tmp_path)
    workgroups = (-(-n // k.meta["workgroup_size"][0]), 1, 1)
    want = execute(k.descriptor, buffers, scalars, workgroups, subgroup_size=size)
    return got, want


def _code(device, k) -> dict:
    return {"wgpu": {"wgsl": k.wgsl}, "vulkan": {"spirv": k.spirv}, "cpu": {"kdesc": k.kdesc}}[
        device.backend
    ]


@pytest.mark.gpu
def test_every_subgroup_operation_matches_the_reference(device, tmp_path):
    k = build(tmp_path, SUBGROUPS)
    assert k.meta["features"] == [
        "subgroup_arithmetic",
        "subgroup_ballot",
        "subgroup_basic",
        "subgroup_shuffle",
        "subgroup_shuffle_relative",
        "subgroup_vote",
    ]
    rng = np.random.default_rng(7)
    n = 256  # whole workgroups: every lane of every subgroup is active
    x = rng.integers(-8, 9, n).astype(np.float32) * 0.25  # exact sums in any order
    keys = rng.integers(0, 1000, n).astype(np.uint32)
    args = {"x": x, "k": keys, "out": n, "bits": n, "ints": n}
    buffers = {
        "x": x,
        "k": keys,
        "out": np.zeros(n, np.float32),
        "bits": np.zeros((n, 4), np.uint32),
        "ints": np.zeros(n, np.uint32),
    }
    got, want = run_both(device, tmp_path, k, args, buffers, {}, n)
    np.testing.assert_array_equal(np.asarray(got["out"]), want["out"])
    np.testing.assert_array_equal(np.asarray(got["bits"]).reshape(-1, 4), want["bits"])
    np.testing.assert_array_equal(np.asarray(got["ints"]), want["ints"])


@pytest.mark.gpu
def test_f16_buffers_math_and_conversions_match_the_reference(device, tmp_path):
    k = build(tmp_path, HALVES)
    assert k.meta["features"] == ["f16", "storage_16bit"]
    rng = np.random.default_rng(3)
    n = 300
    x = rng.uniform(-4, 4, n).astype(np.float16)
    y = rng.uniform(-2, 2, (n, 4)).astype(np.float16)
    args = {"x": x, "y": y, "wide": n, "n": n, "a": 0.5}
    buffers = {"x": x, "y": y, "wide": np.zeros(n, np.float32), "n": np.zeros(n, np.int32)}
    got, want = run_both(device, tmp_path, k, args, buffers, {"a": 0.5}, n)
    # f16 rounds per op on the device; numpy's f16 goes through f32: 2 f16 ulps apart at most
    np.testing.assert_allclose(
        np.asarray(got["y"], np.float32).reshape(-1),
        want["y"].astype(np.float32).reshape(-1),
        rtol=2e-3,
        atol=2e-3,
    )
    np.testing.assert_allclose(np.asarray(got["wide"]), want["wide"], rtol=2e-3, atol=2e-3)
    assert np.max(np.abs(np.asarray(got["n"]) - want["n"])) <= 1
