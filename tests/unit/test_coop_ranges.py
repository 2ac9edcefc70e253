"""The range analysis on cooperative-matrix fragments of shared arrays: a load or store
whose every offset (an interval, and a power of two it is a multiple of) fits the array
under the fragment rule is proved, and the SPIR-V drops its guard; one misaligned or one
that may run past the end keeps it, and the reference still gives the pinned result."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from spirv_tools import missing, pinned

from vyre_build.compiler import compile_file
from vyre_build.descriptor import validate
from vyre_build.reference import execute

SRC = """
from vyre_build.lang import *

@kernel(workgroup_size=64, grid=64)
def k(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "w"]):
    t = shared(f16, 512)
    out = shared(f32, 528)
    lid = local_id().x
    for i in range(u32(8)):
        t[lid + 64 * i] = a[lid + 64 * i]
    barrier()
    w = subgroup_id() % 2
    fb = coop_load_b(b, 0, 16, 16, 16)
    fa = coop_load_a(t, w * 256 + OFF, 16, 16, 16)
    coop_store(coop_mma(fa, fb, coop_fill(f32, 16, 16, 0.0)), out, w * 256 + SOFF, 16)
    barrier()
    for i in range(u32(8)):
        c[lid + 64 * i] = out[lid + 64 * i]
"""


def fragments(tmp_path, off: int, soff: int):
    path = tmp_path / "k.py"
    path.write_text(SRC.replace("+ OFF", f"+ {off}").replace("+ SOFF", f"+ {soff}"))
    (k,) = compile_file(str(path))
    info = validate(k.descriptor)
    names = {s.slot: s.name for s in k.descriptor.slots}
    found = []
    for op in k.descriptor.body.ops:
        if op.kind.name in ("OpaqueExpr", "OpaqueNode") and "coop" in str(op.kind.args[:2]):
            if "fill" not in str(op.kind.args[:2]) and "mma" not in str(op.kind.args[:2]):
                found.append((names[op.operands[0]], info.in_bounds(op)))
    return k, found


@pytest.mark.parametrize(
    "off, soff, proved",
    [
        (0, 0, [("b", False), ("t", True), ("out", True)]),
        # 4 halves is not 16 bytes: the load may not be aligned, its guard stays
        (4, 0, [("b", False), ("t", False), ("out", True)]),
        # 256 + 16 + 15 * 16 + 16 > 512: past the end for w == 1
        (16, 0, [("b", False), ("t", False), ("out", True)]),
        (0, 16, [("b", False), ("t", True), ("out", True)]),  # 528: just fits
        (0, 2, [("b", False), ("t", True), ("out", False)]),  # 8 bytes: misaligned
        (0, 20, [("b", False), ("t", True), ("out", False)]),  # 532 > 528
    ],
)
def test_shared_fragments_are_proved_only_where_every_offset_fits(tmp_path, off, soff, proved):
    k, found = fragments(tmp_path, off, soff)
    assert found == proved
    if missing("spirv-val"):
        pytest.skip("spirv-val (the test extra's pinned tool) not installed; CI=true requires it")
    spv = tmp_path / "k.spv"
    spv.write_bytes(k.spirv)
    proc = subprocess.run(
        [pinned("spirv-val"), "--target-env", "vulkan1.1", str(spv)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    # each unproved fragment opens one branch more than the all-proved module has
    assert merges(tmp_path, k) - merges(tmp_path, fragments(tmp_path, 0, 0)[0]) == sum(
        not p for name, p in found if name != "b"
    )


def merges(tmp_path, k) -> int:
    spv = tmp_path / "m.spv"
    spv.write_bytes(k.spirv)
    dis = subprocess.run([pinned("spirv-dis"), str(spv)], capture_output=True, text=True)
    return dis.stdout.count("OpSelectionMerge")


@pytest.mark.parametrize("off, soff", [(0, 0), (4, 0), (16, 0), (0, 16), (0, 2)])
def test_the_reference_gives_the_pinned_result_either_way(tmp_path, off, soff):
    k, _ = fragments(tmp_path, off, soff)
    rng = np.random.default_rng(off + soff)
    a = rng.integers(-4, 5, 512).astype(np.float16)
    b = rng.integers(-4, 5, 256).astype(np.float16)
    got = execute(k.descriptor, {"a": a, "b": b, "c": np.zeros(512, np.float32)}, {}, (64, 1, 1))
    want = np.zeros(528)
    fb = b.reshape(16, 16).astype(np.float64)
    for w in range(2):  # two subgroups of 32 (the reference's default size)
        o = w * 256 + off
        if o % 8 == 0 and o + 15 * 16 + 16 <= 512:
            fa = a[o : o + 256].reshape(16, 16).astype(np.float64)
        else:
            fa = np.zeros((16, 16))
        if soff % 4 == 0:  # else the store is dropped (f32 rows of 16: 4-element alignment)
            want[w * 256 + soff : w * 256 + soff + 256] = (fa @ fb).ravel()
    np.testing.assert_array_equal(got["c"], want[:512].astype(np.float32))
