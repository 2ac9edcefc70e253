"""`@kernel(shared_bytes=N)` on real devices: a kernel using more than 16 KiB of shared
memory runs where the device has it (lavapipe: 32768 bytes) and is refused, before any
pipeline is made, where it has less. The frontend and metadata: tests/unit/test_shared_bytes.py."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import DeviceError
from vyre_build.runtime import load_kernel

pytestmark = pytest.mark.gpu

# Every invocation writes 128 values of one big shared array, then reads another's.
BIG = """\
from vyre_build.lang import *

N = {n}


@kernel(workgroup_size=64, shared_bytes={declared})
def big(x: Buffer[f32], out: Buffer[f32, "w"]):
    a = shared(f32, N)
    i = local_id().x
    per = u32(N) // 64
    for k in range(per):
        a[k * 64 + i] = x[workgroup_id().x * u32(N) + k * 64 + i]
    barrier()
    acc = 0.0
    for k in range(per):
        acc += a[k * 64 + (63 - i)] * f32(k + 1)
    out[global_id().x] = acc
"""


def build(tmp_path, n: int, declared: int):
    path = tmp_path / "big.py"
    path.write_text(BIG.format(n=n, declared=declared))
    (k,) = compile_file(str(path))
    return k


def code(device, k) -> dict:
    return {"wgpu": {"wgsl": k.wgsl}, "vulkan": {"spirv": k.spirv}, "cpu": {"kdesc": k.kdesc}}[
        device.backend
    ]


def test_more_than_16_kib_runs_where_the_device_has_it(device, tmp_path):
    have = device.profile.max_shared_memory
    if have < 32768:
        pytest.skip(f"{device.name} has {have} bytes of shared memory, fewer than 32768")
    n = 8192  # 32768 bytes
    k = build(tmp_path, n, 32768)
    assert k.meta["shared_bytes"] == 32768
    x = np.random.default_rng(5).integers(-8, 9, 2 * n).astype(np.float32)
    got = np.asarray(load_kernel(k.meta, device=device, **code(device, k))(x=x, out=128)["out"])
    tiles = x.reshape(2, n // 64, 64)[:, :, ::-1]  # [group, k, 63 - i]
    want = (tiles * np.arange(1, n // 64 + 1, dtype=np.float32)[None, :, None]).sum(1)
    np.testing.assert_array_equal(got, want.reshape(-1))


def test_a_declaration_past_the_device_is_refused(device, tmp_path):
    have = device.profile.max_shared_memory
    if have + 1024 > 1 << 20:
        pytest.skip(f"{device.name} offers more than any kernel may declare ({have})")
    k = build(tmp_path, 64, have + 1024)
    made = len(device._pipelines)
    with pytest.raises(DeviceError) as info:
        load_kernel(k.meta, device=device, **code(device, k))
    assert str(info.value) == (
        f"Kernel 'big' declares {have + 1024} bytes of shared memory (shared_bytes), more "
        f"than the {device.backend} device {device.name} allows ({have})"
    )
    assert len(device._pipelines) == made
