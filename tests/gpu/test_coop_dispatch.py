"""Cooperative matrices, dispatched where the device has them and refused where not.

The cpu backend (the reference) runs every shape the compiler makes, so the kernels'
results are checked against numpy here on every machine; a Vulkan device with
VK_KHR_cooperative_matrix (the H200) runs them too; lavapipe and wgpu have none and must
refuse the kernel by name, feature and device before creating anything.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import DeviceError
from vyre_build.runtime import load_kernel

# One 16x16 output tile per workgroup, straight from the buffers (M, N, K multiples of 16).
DIRECT = """
@kernel(workgroup_size=32, grid=("lanes",))
def mm_direct(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "w"], m: u32, n: u32, k: u32,
              lanes: u32):
    tile = workgroup_id().x
    row = tile // (n // 16) * 16
    col = tile % (n // 16) * 16
    acc = coop_fill(f32, 16, 16, 0.0)
    for kk in range(0, k, 16):
        fa = coop_load_a(a, row * k + kk, k, 16, 16)
        fb = coop_load_b(b, kk * n + col, n, 16, 16)
        acc = coop_mma(fa, fb, acc)
    coop_store(acc, c, row * n + col, n)
"""

# Any M, N, K: tiles staged through shared memory with bounds-checked loads (zeros past the
# edges), the result stored to shared and copied out with bounds checks.
STAGED = """
T = 16

@kernel(workgroup_size=64, grid=("lanes",))
def mm_staged(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "w"], m: u32, n: u32, k: u32,
              lanes: u32):
    sa = shared(f16, 256)
    sb = shared(f16, 256)
    sc = shared(f32, 256)
    lid = local_id().x
    tiles_n = (n + T - 1) // T
    row = workgroup_id().x // tiles_n * T
    col = workgroup_id().x % tiles_n * T
    acc = coop_fill(f32, 16, 16, 0.0)
    for kk in range(0, k, T):
        for e in range(lid, 256, 64):
            r = e // T
            q = e % T
            sa[e] = select(row + r < m and kk + q < k, a[(row + r) * k + kk + q], f16(0.0))
            sb[e] = select(kk + r < k and col + q < n, b[(kk + r) * n + col + q], f16(0.0))
        barrier()
        acc = coop_mma(coop_load_a(sa, 0, T, 16, 16), coop_load_b(sb, 0, T, 16, 16), acc)
        barrier()
    coop_store(acc, sc, 0, T)
    barrier()
    for e in range(lid, 256, 64):
        r = e // T
        q = e % T
        if row + r < m and col + q < n:
            c[(row + r) * n + col + q] = sc[e]
"""

# The schema's MatrixMma shape (16x8x16) with an f16 accumulator read from C: C += A x B.
HALF = """
@kernel(workgroup_size=32, grid=32)
def mm_half(a: Buffer[f16], b: Buffer[f16], c: Buffer[f16, "rw"]):
    acc = coop_load_acc(c, 0, 8, 16, 8)
    acc = coop_mma(coop_load_a(a, 0, 16, 16, 16), coop_load_b(b, 0, 8, 16, 8), acc)
    coop_store(acc, c, 0, 8)
"""


def build(tmp_path, src: str):
    path = tmp_path / "mm.py"
    path.write_text("from vyre_build.lang import *\n\n" + textwrap.dedent(src))
    (k,) = compile_file(str(path))
    assert k.wgsl is None and k.meta["skipped"] == {
        "wgsl": "needs cooperative matrices: SPIR-V only"
    }
    return k


def load(device, k):
    code = {"wgpu": {"wgsl": k.wgsl}, "vulkan": {"spirv": k.spirv}, "cpu": {"kdesc": k.kdesc}}
    return load_kernel(k.meta, device=device, **code[device.backend])


def runs_or_refuses(device, k):
    """The loaded kernel where the device offers its features; else the refusal, checked."""
    missing = [f for f in k.meta["features"] if f not in device.profile.features]
    if not missing:
        return load(device, k)
    with pytest.raises(DeviceError) as info:
        load(device, k)
    assert str(info.value) == (
        f"Kernel {k.meta['id']!r} needs {', '.join(missing)}, which the {device.backend} "
        f"device {device.name} does not offer"
    )
    return None


def operands(rng, m, n, k):
    a = rng.integers(-4, 5, (m, k)).astype(np.float16) * np.float16(0.25)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16) * np.float16(0.5)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)  # exact in f32 at these sizes


@pytest.mark.gpu
def test_direct_fragments_from_buffers(device, tmp_path):
    k = build(tmp_path, DIRECT)
    assert k.meta["features"] == [
        "cooperative_matrix",
        "cooperative_matrix.f16.f32.16x16x16",
        "f16",
        "storage_16bit",
    ]
    kern = runs_or_refuses(device, k)
    if kern is None:
        return
    rng = np.random.default_rng(1)
    m, n, kk = 48, 32, 64
    a, b, want = operands(rng, m, n, kk)
    lanes = (m // 16) * (n // 16) * 32
    got = kern(a=a.ravel(), b=b.ravel(), c=m * n, m=m, n=n, k=kk, lanes=lanes).array("c")
    np.testing.assert_array_equal(np.asarray(got).reshape(m, n), want.astype(np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, kk", [(16, 16, 16), (37, 21, 50), (5, 70, 3)])
def test_staged_through_shared_memory_at_any_size(device, tmp_path, m, n, kk):
    k = build(tmp_path, STAGED)
    kern = runs_or_refuses(device, k)
    if kern is None:
        return
    rng = np.random.default_rng(m * n * kk)
    a, b, want = operands(rng, m, n, kk)
    tiles = -(-m // 16) * -(-n // 16)
    got = kern(a=a.ravel(), b=b.ravel(), c=m * n, m=m, n=n, k=kk, lanes=tiles * 64).array("c")
    np.testing.assert_array_equal(np.asarray(got).reshape(m, n), want.astype(np.float32))


@pytest.mark.gpu
def test_the_schema_shape_with_an_f16_accumulator(device, tmp_path):
    k = build(tmp_path, HALF)
    assert "cooperative_matrix.f16.f16.16x8x16" in k.meta["features"]
    kern = runs_or_refuses(device, k)
    if kern is None:
        return
    rng = np.random.default_rng(5)
    a, b, prod = operands(rng, 16, 8, 16)
    c = rng.integers(-8, 9, (16, 8)).astype(np.float16)
    got = kern(a=a.ravel(), b=b.ravel(), c=c.ravel().copy()).array("c")
    want = (prod + c).astype(np.float16)  # small integers and quarters: exact in f16
    np.testing.assert_array_equal(np.asarray(got).reshape(16, 8), want)
