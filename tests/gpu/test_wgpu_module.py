"""The wgpu backend's shader modules without naga's bounds checks
(vyre_build/runtime/backends/wgpu/module.py): trusted where wgpu-native offers it, the
ordinary checked creation with VYRE_WGPU_CHECKED=1 or for SPIR-V, and the same results
either way, the pinned out-of-bounds semantics included (ours, in the legal form)."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.backends import BACKENDS
from vyre_build.runtime import load_kernel
from vyre_build.runtime.backends.wgpu import module as wgpu_module

pytestmark = pytest.mark.gpu

SRC = """\
from vyre_build.lang import Buffer, barrier, f32, global_id, kernel, local_id, shared, u32


@kernel(workgroup_size=64)
def edges(x: Buffer[f32], y: Buffer[f32, "w"], n: u32, shift: u32):
    s = shared(f32, 64)
    i = global_id().x
    s[local_id().x] = x[i + shift]  # past x's end: 0
    barrier()
    y[i] = s[(local_id().x + shift) % 80] + 1.0  # past s's end: 0
    y[i + n] = 7.0  # past y's end: dropped
"""


@pytest.fixture
def checked(monkeypatch):
    def set_checked(on: bool) -> None:
        monkeypatch.setenv("VYRE_WGPU_CHECKED", "1" if on else "0")
        wgpu_module._native.cache_clear()

    yield set_checked
    wgpu_module._native.cache_clear()


def run_edges(tmp_path, n: int, shift: int) -> np.ndarray:
    """The kernel's y on a fresh wgpu device (pipelines made under the current setting)."""
    path = tmp_path / "edges.py"
    path.write_text(SRC)
    (ck,) = compile_file(str(path))
    device = BACKENDS["wgpu"].device_class()(None)
    try:
        kern = load_kernel(ck.meta, device=device, wgsl=ck.wgsl)
        x = np.arange(n, dtype=np.float32)
        return np.asarray(kern(x=x, y=np.zeros(n, np.float32), n=n, shift=shift)["y"])
    finally:
        device.close()


def test_modules_are_trusted_where_wgpu_native_offers_it(wgpu_device, checked, monkeypatch):
    from wgpu.backends.wgpu_native import _api

    offered = hasattr(_api.lib, "wgpuDeviceCreateShaderModuleTrusted")
    checked(False)
    assert wgpu_module.trusted() == offered
    checked(True)
    assert not wgpu_module.trusted()
    if not offered:
        pytest.skip("this wgpu-native has no wgpuDeviceCreateShaderModuleTrusted")
    checked(False)
    calls = []
    made = _api.libf.wgpuDeviceCreateShaderModuleTrusted
    monkeypatch.setattr(
        _api.libf,
        "wgpuDeviceCreateShaderModuleTrusted",
        lambda *a: calls.append(a[2]) or made(*a),
    )
    code = "@compute @workgroup_size(1) fn main() {}"
    module = wgpu_module.create_module(wgpu_device, "k", code)
    assert isinstance(module, _api.GPUShaderModule)
    assert calls == [_api.lib.WGPUShaderRuntimeChecks_None]  # no loop: nothing to bound
    looping = "@compute @workgroup_size(1) fn main() { var i: u32 = 0u; loop { i = i + 1u; if i > 3u { break; } } }"
    wgpu_module.create_module(wgpu_device, "k", looping)
    # bounds checks off, loop bounding kept where the loops are not proven to end
    assert calls[1:] == [_api.lib.WGPUShaderRuntimeChecks_ForceLoopBounding]


def test_wgsl_without_naga_checks_keeps_the_out_of_bounds_rules(wgpu_device, tmp_path, checked):
    n, shift = 128, 20
    results = []
    for on in (False, True):
        checked(on)
        results.append(run_edges(tmp_path, n, shift))
    trusted, plain = results
    # the reference rule: x[i + shift] past the end is 0, s[j] past 64 is 0
    xs = np.arange(n, dtype=np.float32)
    loaded = np.where(np.arange(n) + shift < n, xs[np.minimum(np.arange(n) + shift, n - 1)], 0)
    lanes = np.arange(n) % 64
    j = (lanes + shift) % 80
    want = np.where(j < 64, loaded[(np.arange(n) // 64) * 64 + np.minimum(j, 63)], 0) + 1.0
    np.testing.assert_array_equal(trusted, want.astype(np.float32))
    np.testing.assert_array_equal(plain, trusted)


def test_spirv_and_checked_mode_take_the_ordinary_creation(checked):
    class Device:  # records what wgpu-py's own creation would be asked
        def create_shader_module(self, *, label: str, code: object) -> tuple:
            return ("checked", label, code)

    checked(False)
    assert wgpu_module.create_module(Device(), "k", b"\x03\x02#\x07") == (
        "checked",
        "k",
        b"\x03\x02#\x07",
    )
    checked(True)
    assert wgpu_module.create_module(Device(), "k", "fn f() {}") == ("checked", "k", "fn f() {}")
