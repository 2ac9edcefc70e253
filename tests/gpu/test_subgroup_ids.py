"""`subgroup_id()` and `num_subgroups()` on every backend, judged by the CPU reference at the
device's own subgroup size; the SPIR-V passes spirv-val (SubgroupId / NumSubgroups) and the
WGSL naga (@builtin(subgroup_id) / @builtin(num_subgroups), the subgroups extension)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit")
)
from test_spirv import needs_val, spirv_val  # noqa: E402
from test_subgroups_f16 import _code, build, subgroup_size  # noqa: E402

from vyre_build.reference import execute  # noqa: E402
from vyre_build.runtime import load_kernel  # noqa: E402

pytestmark = pytest.mark.gpu

IDS = """
@kernel(workgroup_size={wg})
def ids(out: Buffer[u32, "w"], same: Buffer[u32, "w"]):
    i = global_id().x
    s = subgroup_id()
    out[i] = s * 65536 + num_subgroups() * 256 + subgroup_invocation_id()
    # the same in every lane of its subgroup, and the lane count adds up
    same[i] = u32(subgroup_broadcast_first(s) == s) + subgroup_add(u32(1)) * 2
"""


@pytest.mark.parametrize("wg", [64, 12])
def test_subgroup_id_and_num_subgroups_match_the_reference(device, tmp_path, wg):
    k = build(tmp_path, IDS.format(wg=wg), f"ids{wg}.py")
    assert k.meta["features"] == ["subgroup_arithmetic", "subgroup_ballot", "subgroup_basic"]
    n = 4 * wg
    got = load_kernel(k.meta, device=device, **_code(device, k))(out=n, same=n)
    size = subgroup_size(device, tmp_path)
    want = execute(
        k.descriptor,
        {"out": np.zeros(n, np.uint32), "same": np.zeros(n, np.uint32)},
        {},
        (4, 1, 1),
        subgroup_size=size,
    )
    np.testing.assert_array_equal(np.asarray(got["out"]), want["out"])
    np.testing.assert_array_equal(np.asarray(got["same"]), want["same"])
    sid, count = want["out"] >> 16, (want["out"] >> 8) & 255
    assert (count == -(-wg // size)).all() and sid.max() == -(-wg // size) - 1
    assert (want["same"] & 1).all()


@needs_val
def test_the_spirv_declares_the_builtins_and_validates(tmp_path):
    k = build(tmp_path, IDS.format(wg=64))
    spirv_val(k.spirv, tmp_path, "ids")
    assert "@builtin(subgroup_id) sgix: u32" in k.wgsl
    assert "((63u + sgsz) / sgsz)" in k.wgsl  # num_subgroups(), derived


BRANCHES = """
@kernel(workgroup_size=64)
def branches(x: Buffer[f32], out: Buffer[f32, "w"]):
    i = global_id().x
    s = subgroup_id()
    v = x[i]
    if s % 2 == 0:  # subgroup-uniform control: each subgroup takes one side
        v = subgroup_add(v)
    else:
        v = subgroup_max(v) * 2.0
    if subgroup_any(v > 40.0):
        v += subgroup_broadcast_first(x[i])
    for r in range(s, num_subgroups()):
        v += subgroup_min(x[r])
    out[i] = v
"""


def test_subgroup_operations_under_subgroup_uniform_control(device, tmp_path):
    k = build(tmp_path, BRANCHES, "branches.py")
    assert k.wgsl is not None  # naga takes subgroup ops under such control
    n = 256
    x = np.random.default_rng(11).integers(-8, 9, n).astype(np.float32)  # exact in any order
    got = load_kernel(k.meta, device=device, **_code(device, k))(x=x, out=n)
    want = execute(
        k.descriptor,
        {"x": x, "out": np.zeros(n, np.float32)},
        {},
        (n // 64, 1, 1),
        subgroup_size=subgroup_size(device, tmp_path),
    )
    np.testing.assert_array_equal(np.asarray(got["out"]), want["out"])
