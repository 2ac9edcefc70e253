"""Devices for real (lavapipe here): profiles, features enabled and refused (f16 and
subgroup kernels run), dispatches split past the per-axis workgroup limit, and the
application's own wgpu device and buffers. The pipeline cache: test_runtime_cache.py."""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import IOTA_META, IOTA_SPVASM, SHADERS, artifacts, assemble, load  # noqa: E402

from vyre_build.bundle import write_bundle  # noqa: E402
from vyre_build.core.errors import DeviceError, DispatchError  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COOP = "cooperative_matrix.f16.f32.16x16x16"


def bundle(path, features=None, names=("saxpy", "iota")):
    entries = []
    for name in names:
        meta = SHADERS[name][0]
        meta = {**meta, "features": features} if features else meta
        entries.append({"meta": meta, "artifacts": artifacts(name)})
    write_bundle(path, entries)
    return path


# --- profiles and features ------------------------------------------------------------


@pytest.mark.backends("wgpu", "vulkan")
def test_the_profile_is_the_devices_own(device):
    """What any GPU's profile holds, checked against the driver's own answers."""
    p = device.profile
    assert p.backend == device.backend and p.adapter == device.name
    assert "subgroup_basic" in p.features
    if device.backend == "vulkan":  # wgpu reports a range of sizes only
        assert p.subgroup_size in (1, 2, 4, 8, 16, 32, 64, 128)
    assert p.max_workgroup_invocations >= 256 and min(p.max_workgroup_count) >= 65535
    assert device.max_workgroup_count == p.max_workgroup_count
    assert p.f16 == ("f16" in p.features) and p.storage_16bit == ("storage_16bit" in p.features)
    coop = {f for f in p.features if f.startswith("cooperative_matrix.")}
    assert ("cooperative_matrix" in p.features) == bool(p.cooperative_matrices) == bool(coop)
    if device.backend == "vulkan":
        import vulkan as vk

        props = vk.vkGetPhysicalDeviceProperties(device.physical)
        assert p.vendor_id == props.vendorID and props.deviceName in p.adapter
        assert tuple(props.limits.maxComputeWorkGroupCount) == p.max_workgroup_count
    else:  # wgpu asked for what the adapter has
        wanted = {"subgroup": "subgroup_basic", "shader-f16": "f16"}
        have = {str(f) for f in device.device.features}
        assert {w for w, f in wanted.items() if f in p.features} <= have


@pytest.mark.backends("wgpu", "vulkan")
def test_lavapipe_profile(device):
    """lavapipe's own profile (Mesa's CPU Vulkan driver, what CI runs on)."""
    if "llvmpipe" not in device.name:
        pytest.skip(f"about lavapipe; this device is {device.name}")
    p = device.profile
    assert {
        "subgroup_basic",
        "subgroup_vote",
        "subgroup_arithmetic",
        "subgroup_ballot",
        "subgroup_shuffle",
        "subgroup_shuffle_relative",
        "subgroup_quad",
        "f16",
        "storage_16bit",
    } <= p.features
    assert "subgroup_clustered" not in p.features
    assert not any(f.startswith("cooperative_matrix") for f in p.features)
    assert p.f16 and p.storage_16bit and p.cooperative_matrices == ()
    if device.backend == "vulkan":
        assert p.subgroup_size == 8 and p.vendor_id == 0x10005 and p.driver.startswith("llvmpipe")


def lacking(device) -> list[str]:
    """Features a kernel may need that `device` does not offer (one at least on any GPU
    today: no device offers every cooperative shape)."""
    from vyre_build.core.features import FEATURES

    shapes = [
        f"cooperative_matrix.{a}.{c}.{m}x{n}x{k}"
        for a, c in (("f16", "f32"), ("f16", "f16"), ("bf16", "f32"))
        for m, n, k in ((16, 16, 16), (16, 8, 16), (16, 8, 8), (32, 32, 16), (8, 8, 8))
    ]
    return [f for f in [*sorted(FEATURES), *shapes] if f not in device.profile.features]


@pytest.mark.backends("wgpu", "vulkan")  # the cpu reference runs cooperative matrices
def test_a_kernel_needing_what_the_device_lacks_is_refused_before_anything_is_made(
    device, tmp_path
):
    from vyre_build.runtime import open_bundle

    missing = lacking(device)[0]
    path = bundle(tmp_path / "coop.vyrebundle", features=[missing, "f16"], names=("saxpy",))
    made = len(device._pipelines)
    with open_bundle(path, device=device) as b:
        assert list(b.values())[0].id == "saxpy" and b.runnable() == []  # listed, not run
        with pytest.raises(DeviceError) as info:
            b["saxpy"](x=np.ones(4, np.float32), y=np.ones(4, np.float32), a=1.0)
    assert str(info.value) == (
        f"Kernel 'saxpy' needs {missing}, which the {device.backend} device {device.name} "
        "does not offer"
    )
    assert len(device._pipelines) == made
    ok = bundle(tmp_path / "ok.vyrebundle", features=["f16", "subgroup_basic"], names=("saxpy",))
    with open_bundle(ok, device=device) as b:
        x = np.arange(8, dtype=np.float32)
        np.testing.assert_array_equal(b["saxpy"](x=x, y=x.copy(), a=1.0).array("y"), 2 * x)


def test_devices_command_json(capsys):
    from vyre_build.cli import main
    from vyre_build.runtime import get_device

    assert main(["devices", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["backends"]
    vk = report["vulkan"]["adapters"][0]
    p = get_device("vulkan").profile  # the same adapter, the default device's
    assert vk["subgroup_size"] == p.subgroup_size and vk["f16"] is p.f16
    assert len(vk["cooperative_matrices"]) == len(p.cooperative_matrices)
    assert vk["max_workgroup_count"] == list(p.max_workgroup_count)
    assert set(vk["features"]) == set(p.features) and report["wgpu"]["adapters"]
    assert main(["devices", "--backend", "vulkan"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"vulkan adapter 0:\n  adapter      {p.adapter}")
    lo, hi = p.subgroup_size_range
    assert f"  subgroups    size {p.subgroup_size} (range {lo}..{hi}): basic, vote" in text


# --- grids past the per-axis limit ----------------------------------------------------


def _spy(dev):
    jobs = []
    original = dev._submit
    dev._submit = lambda js, final: (jobs.extend(js), original(js, final))
    return jobs


Y_GRID = """
from vyre_build.lang import Buffer, global_id, kernel, u32

@kernel(workgroup_size=(1, 1, 1))
def rows(out: Buffer[u32, "w"], w: u32):
    x = global_id().x
    y = global_id().y
    out[y * w + x] = y * 3 + x + 1
"""


@pytest.mark.backends("wgpu", "vulkan")
def test_a_grid_past_the_real_limit_on_y_is_split_and_right(device, tmp_path):
    """70,000 workgroups on y, past NVIDIA's and lavapipe's 65,535 (and wgpu's): split into
    pieces, each a pipeline made for its base workgroup (Vulkan: specialization constants;
    wgpu: the WGSL's base constant), and right (the H200's driver ignored vkCmdDispatchBase's base:
    pieces after the first wrote nothing)."""
    from vyre_build.compiler import compile_file
    from vyre_build.runtime import load_kernel

    path = tmp_path / "rows.py"
    path.write_text(Y_GRID)
    (k,) = compile_file(str(path), root=str(tmp_path))
    code = {"wgsl": k.wgsl} if device.backend == "wgpu" else {"spirv": k.spirv}
    kernel = load_kernel(k.meta, device=device, **code)
    ny = 70_000
    want = (np.arange(ny, dtype=np.uint32) * 3 + 1).reshape(ny, 1)
    assert device.max_workgroup_count[1] < ny  # so it is split
    jobs = _spy(device)
    got = kernel(out=ny, w=1, grid=(1, ny)).array("out").reshape(ny, 1)
    limit = device.max_workgroup_count[1]
    assert [j[2] for j in jobs] == [(1, limit, 1), (1, ny - limit, 1)]
    np.testing.assert_array_equal(got, want)
    got = kernel(out=2 * ny, w=2, grid=(2, ny)).array("out").reshape(ny, 2)
    np.testing.assert_array_equal(got[:, 0], want[:, 0])
    np.testing.assert_array_equal(got[:, 1], want[:, 0] + 1)
    with device.batch():  # in a batch too, on DeviceBuffers
        out = device.buffer(ny, "u32")
        kernel(out=out, w=1, grid=(1, ny))
    np.testing.assert_array_equal(out.read(np.uint32), want[:, 0])


IOTA = """
from vyre_build.lang import Buffer, global_id, kernel, u32

@kernel(workgroup_size=32)
def iota(out: Buffer[u32, "w"], start: u32, step: u32):
    i = global_id().x
    if i < len(out):
        out[i] = start + i * step
"""


def _load(device, tmp_path, source: str, name: str):
    from vyre_build.compiler import compile_file
    from vyre_build.runtime import load_kernel

    path = tmp_path / f"{name}.py"
    path.write_text(source)
    (k,) = compile_file(str(path), root=str(tmp_path))
    code = {"wgsl": k.wgsl} if device.backend == "wgpu" else {"spirv": k.spirv}
    return load_kernel(k.meta, device=device, **code)


@pytest.mark.backends("wgpu", "vulkan")
def test_a_dispatch_past_the_limit_is_split_and_not_at_it(device, tmp_path, monkeypatch):
    iota = _load(device, tmp_path, IOTA, "iota")
    monkeypatch.setattr(device, "max_workgroup_count", (4, 65535, 65535))  # a small limit
    monkeypatch.setattr(device, "coarse_entries", False)  # the base entry: 1 element each
    jobs = _spy(device)
    out = iota(out=4 * 32, start=7, step=3).array("out")  # exactly 4 workgroups of 32
    assert [j[2] for j in jobs] == [(4, 1, 1)]
    np.testing.assert_array_equal(out, 7 + 3 * np.arange(128, dtype=np.uint32))
    jobs.clear()
    out = iota(out=1000, start=1, step=2).array("out")  # 32 workgroups: 8 pieces
    assert [j[2] for j in jobs] == [(4, 1, 1)] * 8
    assert len({id(j[0]) for j in jobs}) == 8  # a pipeline per base workgroup
    np.testing.assert_array_equal(out, 1 + 2 * np.arange(1000, dtype=np.uint32))
    with device.batch():  # in a batch too
        made = iota(out=999, start=0, step=1)["out"]
    np.testing.assert_array_equal(made.read(), np.arange(999, dtype=np.uint32))
    monkeypatch.setattr(device, "coarse_entries", True)  # the coarse entry (4 each), split
    jobs.clear()
    out = iota(out=4000, start=5, step=1).array("out")  # 1000 invocations: 32 workgroups
    assert [j[2] for j in jobs] == [(4, 1, 1)] * 8
    np.testing.assert_array_equal(out, 5 + np.arange(4000, dtype=np.uint32))


IDS_3D = """
from vyre_build.lang import Buffer, global_id, kernel, u32, workgroup_id

@kernel(workgroup_size=(2, 2, 2))
def ids3(g: Buffer[u32, "w"], w: Buffer[u32, "w"], nx: u32, ny: u32):
    x = global_id().x
    y = global_id().y
    z = global_id().z
    i = (z * ny + y) * nx + x
    g[i] = x + 100 * y + 10000 * z
    w[i] = workgroup_id().x + 100 * workgroup_id().y + 10000 * workgroup_id().z
"""


def _ids_want(shape):
    # (global id, workgroup id) values of every invocation of a (nx, ny, nz) grid of 2x2x2
    z, y, x = np.meshgrid(*(np.arange(n, dtype=np.uint32) for n in shape[::-1]), indexing="ij")
    return (x + 100 * y + 10000 * z).ravel(), (x // 2 + 100 * (y // 2) + 10000 * (z // 2)).ravel()


@pytest.mark.backends("wgpu", "vulkan")
@pytest.mark.parametrize(
    "groups, pieces",
    [
        ((3, 4, 1), [(3, 4, 1)]),  # 2-D, at the limit on both axes: one dispatch
        ((3, 5, 1), [(3, 4, 1), (3, 1, 1)]),  # 2-D, just past it on y
        ((4, 5, 1), [(3, 4, 1), (1, 4, 1), (3, 1, 1), (1, 1, 1)]),  # past it on x and y
        ((3, 4, 2), [(3, 4, 2)]),  # 3-D, at the limit on every axis
        ((3, 4, 3), [(3, 4, 2), (3, 4, 1)]),  # 3-D, just past it on z
        ((4, 5, 3), None),  # past it on every axis: 2 x 2 x 2 pieces
    ],
)
def test_2d_and_3d_grids_at_and_past_the_limit_have_every_id(
    device, tmp_path, monkeypatch, groups, pieces
):
    """Global and workgroup ids of every invocation, split on a lowered limit of (3, 4, 2)
    workgroups, equal numpy's; a grid at the limit is one dispatch on the base pipeline."""
    ids3 = _load(device, tmp_path, IDS_3D, "ids3")
    monkeypatch.setattr(device, "max_workgroup_count", (3, 4, 2))
    shape = tuple(2 * n for n in groups)
    n = math.prod(shape)
    jobs = _spy(device)
    out = ids3(g=n, w=n, nx=shape[0], ny=shape[1], grid=shape)
    want_g, want_w = _ids_want(shape)
    np.testing.assert_array_equal(out.array("g"), want_g)
    np.testing.assert_array_equal(out.array("w"), want_w)
    counts = [j[2] for j in jobs]
    if pieces is not None:
        assert counts == pieces
    else:
        assert len(counts) == 8 and sorted(counts)[0] == (1, 1, 1)
    assert len({id(j[0]) for j in jobs}) == len(counts)  # a pipeline per base workgroup
    assert jobs[0][0] is ids3.pipeline  # the first piece (base 0) is the unsplit pipeline


# Literal-only expressions WGSL forbids as constant expressions (a signed shift past the
# sign bit, integer overflow, an index past an array's end), valid at run time: naga
# evaluates them when a module has overrides, so the WGSL's split base is a plain constant.
CONSTANT_TRAPS = """
from vyre_build.lang import Buffer, f32, global_id, i32, kernel, local_array, u32

@kernel(workgroup_size=4)
def traps(out: Buffer[i32, "w"], f: Buffer[f32, "w"]):
    i = global_id().x
    a = i32(1) << u32(31)
    b = i32(2147483647) + i32(1)
    c = u32(4294967295) * u32(3)
    la = local_array(i32, 4)
    j = u32(91) & u32(63)
    la[j] = 5
    q = i32(7) // i32(0)
    out[i] = a + b + i32(c) + la[0] + q + i32(i)
    f[i] = f32(3.0e38) * f32(10.0)
"""


@pytest.mark.backends("wgpu", "vulkan")
def test_a_split_kernel_of_literals_that_are_no_constant_expressions(device, tmp_path, monkeypatch):
    traps = _load(device, tmp_path, CONSTANT_TRAPS, "traps")
    monkeypatch.setattr(device, "max_workgroup_count", (4, 65535, 65535))
    monkeypatch.setattr(device, "coarse_entries", False)  # the base entry: 1 element each
    jobs = _spy(device)
    out = traps(out=40, f=40)  # 10 workgroups: 3 pieces
    assert [j[2] for j in jobs] == [(4, 1, 1), (4, 1, 1), (2, 1, 1)]
    # MIN + MIN wraps to 0, 0xffffffff * 3 is -3 as i32, la[0] is 0, 7 // 0 is 7 (pinned)
    np.testing.assert_array_equal(out.array("out"), 4 + np.arange(40, dtype=np.int32))
    np.testing.assert_array_equal(out.array("f"), np.full(40, np.inf, np.float32))


def test_a_kernel_reading_num_workgroups_is_not_split():
    from vyre_build.runtime import load_kernel
    from vyre_build.runtime.backends.vulkan.device import VulkanDevice

    text = (
        IOTA_SPVASM.replace(
            'OpEntryPoint GLCompute %main "main" %gid',
            'OpEntryPoint GLCompute %main "main" %gid %nwg',
        )
        .replace(
            "OpDecorate %gid BuiltIn GlobalInvocationId",
            "OpDecorate %gid BuiltIn GlobalInvocationId\nOpDecorate %nwg BuiltIn NumWorkgroups",
        )
        .replace(
            "%gid = OpVariable %pv3u Input",
            "%gid = OpVariable %pv3u Input\n%nwg = OpVariable %pv3u Input",
        )
    )
    dev = VulkanDevice(pipeline_cache=False)
    dev.max_workgroup_count = (4, 65535, 65535)
    k = load_kernel({**IOTA_META, "name": "nwg", "id": "nwg"}, spirv=assemble(text), device=dev)
    np.testing.assert_array_equal(k(out=128, start=0, step=1).array("out"), np.arange(128))
    with pytest.raises(DispatchError) as info:
        k(out=1000, start=0, step=1)
    assert str(info.value) == (
        "Kernel 'nwg': grid needs 32 workgroups on axis x (1000 invocations / 32 per "
        "workgroup), more than the device's limit of 4 on x, and the kernel reads "
        "num_workgroups(), so the dispatch cannot be split"
    )
    dev.close()


# --- the application's own wgpu device and buffers ------------------------------------


def test_an_applications_wgpu_device_and_buffers(tmp_path):
    from adapters import require_adapter

    require_adapter("wgpu")
    import wgpu

    from vyre_build.runtime import get_device, open_bundle

    adapter = wgpu.gpu.request_adapter_sync()
    app_device = adapter.request_device_sync()  # the app's, with default limits, no features
    dev = get_device(adapter=app_device)
    assert dev.backend == "wgpu" and dev.device is app_device
    assert get_device("wgpu", app_device) is dev
    assert "f16" not in dev.profile.features  # not asked for by the app
    usage = wgpu.BufferUsage
    y = app_device.create_buffer(size=64 * 4, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
    app_device.queue.write_buffer(y, 0, np.ones(64, np.float32).tobytes())
    x = np.arange(64, dtype=np.float32)
    with open_bundle(bundle(tmp_path / "b.vyrebundle"), device=app_device) as b:
        saxpy = b["saxpy"]
        assert saxpy.device is dev
        out = saxpy(x=x, y=y, a=2.0).buffer("y")
        assert out.wgpu_buffer is y and out.borrowed
        got = np.frombuffer(app_device.queue.read_buffer(y), np.float32)
        np.testing.assert_array_equal(got, 2 * x + 1)
        np.testing.assert_array_equal(out.read(), 2 * x + 1)
        kept = dev.wrap(y, "f32")  # a persistent view: binding sets are reused
        for _ in range(3):
            saxpy(x=x, y=kept, a=1.0)
        kept.release()  # the app's buffer stays alive
        np.testing.assert_array_equal(
            np.frombuffer(app_device.queue.read_buffer(y), np.float32), 5 * x + 1
        )
        refusals = [
            (
                app_device.create_buffer(size=256, usage=usage.COPY_DST),
                "is a GPUBuffer without STORAGE usage",
            ),
            (
                app_device.create_buffer(size=6, usage=usage.STORAGE),
                "is a GPUBuffer of 6 bytes, not a whole number of f32 values",
            ),
            (
                adapter.request_device_sync().create_buffer(size=256, usage=usage.STORAGE),
                "is a GPUBuffer of another wgpu device",
            ),
        ]
        for buf, why in refusals:
            with pytest.raises(DispatchError) as info:
                saxpy(x=x, y=buf, a=1.0)
            assert str(info.value) == f"Kernel 'saxpy': argument 'y' {why}"
    with pytest.raises(DispatchError, match="Device.wrap: expected a wgpu GPUBuffer, got ndarray"):
        dev.wrap(x, "f32")
    on_adapter = get_device(adapter=adapter)  # an application's GPUAdapter: our own device on it
    assert on_adapter is not dev and on_adapter.device is not app_device
    assert "f16" in on_adapter.profile.features  # we asked for what the adapter has
    on_adapter.close()
    dev.close()  # closing our Device leaves the app's device and buffers alone
    got = np.frombuffer(app_device.queue.read_buffer(y), np.float32)
    np.testing.assert_array_equal(got, 5 * x + 1)


# An application that destroys (or maps) its own GPUBuffer while a dispatch using it still
# waits to be submitted: wgpu-native aborts the process on such a submission, so this runs
# in a subprocess whose exit status and printed outcomes are checked.
_MISUSE = """
import json, sys
import numpy as np, wgpu
from vyre_build.core.errors import DispatchError
from vyre_build.runtime import get_device, open_bundle

path, recorder = sys.argv[1], sys.argv[2]
app = wgpu.gpu.request_adapter_sync().request_device_sync()
dev = get_device(adapter=app)
assert dev._native is not None  # wgpu-py's native backend: the native recorder is there
if recorder == "public":
    dev._native = None
usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
x0, y0 = np.arange(64, dtype=np.float32), np.full(64, 100, np.float32)
made = lambda v: app.create_buffer_with_data(data=v.tobytes(), usage=usage)
x_app, y_app = made(x0), made(y0)
seen = {}

def outcome(key, fn):
    try:
        fn()
        seen[key] = "ran"
    except DispatchError as exc:
        seen[key] = str(exc)

def batch():
    with dev.batch():
        for _ in range(2):  # the first is submitted at once, the second waits
            saxpy(x=x, y=y, a=1.0)
        x_app.destroy()
        saxpy(x=y, y=y, a=1.0)  # the chunk submitted now holds the destroyed buffer

with open_bundle(path, device=app) as b:
    saxpy = b["saxpy"]
    x, y = dev.wrap(x_app, "f32"), dev.wrap(y_app, "f32")
    outcome("batch", batch)
    seen["y"] = y.read().tolist()  # only the first dispatch ran
    outcome("call", lambda: saxpy(x=x, y=y, a=1.0))
    outcome("read", x.read)
    m_app = app.create_buffer(size=256, usage=usage, mapped_at_creation=True)
    outcome("mapped", lambda: saxpy(x=m_app, y=y, a=1.0))
    m_app.write_mapped(np.ones(64, np.float32).tobytes())
    m_app.unmap()
    outcome("unmapped", lambda: saxpy(x=m_app, y=y, a=2.0))
    seen["y2"] = y.read().tolist()
print(json.dumps(seen))
"""


@pytest.mark.parametrize("recorder", ["native", "public"])
def test_an_application_buffer_destroyed_or_mapped_before_submission_is_refused(tmp_path, recorder):
    from adapters import require_adapter
    from test_runtime import python

    require_adapter("wgpu")
    script = tmp_path / "misuse.py"
    script.write_text(_MISUSE)
    done = python(str(script), str(bundle(tmp_path / "b.vyrebundle")), recorder)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    refused = (
        "the application's GPUBuffer passed as 'x' is refused by wgpu (Buffer with '' label "
        "has been destroyed): a wrapped buffer must outlive the dispatches that use it "
        '(docs/runtime.md, "The application\'s own device")'
    )
    waiting = "; neither this dispatch nor those waiting with it were submitted"
    assert seen["batch"] == f"Kernel 'saxpy': {refused}{waiting}"
    x0, y0 = np.arange(64, dtype=np.float32), np.full(64, 100, np.float32)
    np.testing.assert_array_equal(seen["y"], y0 + x0)
    assert seen["call"] == f"Kernel 'saxpy': {refused}{waiting}"
    assert seen["read"] == "DeviceBuffer.read: " + refused.replace(" passed as 'x'", "")
    assert seen["mapped"] == (
        "Kernel 'saxpy': the application's GPUBuffer passed as 'x' is mapped (unmap it "
        f"before a dispatch or read uses it){waiting}"
    )
    assert seen["unmapped"] == "ran"
    np.testing.assert_array_equal(seen["y2"], y0 + x0 + 2)


@pytest.mark.backends("wgpu", "vulkan")
def test_device_buffers_expose_their_backend_buffer(device):
    buf = device.buffer(4, "f32")
    if device.backend == "wgpu":
        assert buf.wgpu_buffer is buf.handle
        with pytest.raises(DispatchError, match="this is a wgpu buffer"):
            _ = buf.vulkan_buffer
    else:
        assert buf.vulkan_buffer is buf.handle.buffer
        with pytest.raises(DispatchError, match="this is a vulkan buffer"):
            _ = buf.wgpu_buffer


def test_a_device_whose_driver_refuses_an_optional_feature_is_made_without_them(monkeypatch):
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime.backends.vulkan import profile as vulkan_profile
    from vyre_build.runtime.backends.vulkan.device import VulkanDevice

    real = vulkan_profile.device_create_info

    def refused_once(family, enable, keep):
        if enable != vulkan_profile.Enable():  # the full set: ask for an extension no one has
            enable = vulkan_profile.Enable(extensions=["VK_VYRE_no_such_extension"])
        return real(family, enable, keep)

    monkeypatch.setattr(vulkan_profile, "device_create_info", refused_once)
    with pytest.warns(RuntimeWarning, match="the device is made without f16, 16-bit storage"):
        dev = VulkanDevice(pipeline_cache=False)
    assert "f16" not in dev.profile.features and "subgroup_basic" in dev.profile.features
    np.testing.assert_array_equal(
        load("iota", "vulkan", dev)(out=4, start=1, step=1).array("out"), [1, 2, 3, 4]
    )
    dev.close()


# A kernel of float16 buffers and a subgroup reduction: it runs only on a device created
# with shader-f16/subgroup (wgpu) or shaderFloat16 and storageBuffer16BitAccess (Vulkan).
HALF_META = {
    "name": "half",
    "variant": None,
    "id": "half",
    "workgroup_size": [64, 1, 1],
    "grid": ["out"],
    "bindings": [
        {"name": "x", "binding": 0, "kind": "buffer", "dtype": "f16", "access": "r"},
        {"name": "out", "binding": 1, "kind": "buffer", "dtype": "f16", "access": "w"},
        {"name": "sums", "binding": 2, "kind": "buffer", "dtype": "u32", "access": "w"},
    ],
    "uniform": None,
    "features": ["f16", "storage_16bit", "subgroup_arithmetic"],
}
HALF_WGSL = """\
enable f16;
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  let s = subgroupAdd(1u);
  if (i < arrayLength(&out)) { out[i] = x[min(i, arrayLength(&x) - 1u)] * 2.0h; }
  if (i < arrayLength(&sums)) { sums[i] = s; }
}
"""
HALF_SPVASM = """\
OpCapability Shader
OpCapability Float16
OpCapability StorageBuffer16BitAccess
OpCapability GroupNonUniform
OpCapability GroupNonUniformArithmetic
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %harr ArrayStride 2
OpDecorate %uarr ArrayStride 4
OpMemberDecorate %hbuf 0 Offset 0
OpMemberDecorate %ubuf 0 Offset 0
OpDecorate %hbuf Block
OpDecorate %ubuf Block
OpDecorate %x DescriptorSet 0
OpDecorate %x Binding 0
OpDecorate %x NonWritable
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 1
OpDecorate %sums DescriptorSet 0
OpDecorate %sums Binding 2
%void = OpTypeVoid
%fn = OpTypeFunction %void
%half = OpTypeFloat 16
%uint = OpTypeInt 32 0
%bool = OpTypeBool
%v3u = OpTypeVector %uint 3
%pv3u = OpTypePointer Input %v3u
%c0 = OpConstant %uint 0
%c1 = OpConstant %uint 1
%c3 = OpConstant %uint 3
%two = OpConstant %half 2
%harr = OpTypeRuntimeArray %half
%uarr = OpTypeRuntimeArray %uint
%hbuf = OpTypeStruct %harr
%ubuf = OpTypeStruct %uarr
%phbuf = OpTypePointer StorageBuffer %hbuf
%pubuf = OpTypePointer StorageBuffer %ubuf
%ph = OpTypePointer StorageBuffer %half
%pu = OpTypePointer StorageBuffer %uint
%gid = OpVariable %pv3u Input
%x = OpVariable %phbuf StorageBuffer
%out = OpVariable %phbuf StorageBuffer
%sums = OpVariable %pubuf StorageBuffer
%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %uint %g 0
%s = OpGroupNonUniformIAdd %uint %c3 Reduce %c1
%n = OpArrayLength %uint %out 0
%ok = OpULessThan %bool %i %n
OpSelectionMerge %mid None
OpBranchConditional %ok %body %mid
%body = OpLabel
%px = OpAccessChain %ph %x %c0 %i
%xv = OpLoad %half %px
%r = OpFMul %half %xv %two
%po = OpAccessChain %ph %out %c0 %i
OpStore %po %r
OpBranch %mid
%mid = OpLabel
%m = OpArrayLength %uint %sums 0
%ok2 = OpULessThan %bool %i %m
OpSelectionMerge %end None
OpBranchConditional %ok2 %b2 %end
%b2 = OpLabel
%ps = OpAccessChain %pu %sums %c0 %i
OpStore %ps %s
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"""


@pytest.mark.backends("wgpu", "vulkan")  # the cpu backend: test_runtime_cpu.py
def test_f16_buffers_and_subgroup_operations_run_where_enabled(device):
    from vyre_build.runtime import load_kernel

    if device.backend == "wgpu":
        k = load_kernel(HALF_META, wgsl=HALF_WGSL, device=device)
    else:
        k = load_kernel(HALF_META, spirv=assemble(HALF_SPVASM), device=device)
    x = np.arange(7, dtype=np.float16) / 4  # an odd count: 14 bytes
    r = k(x=x, out=7, sums=64)
    np.testing.assert_array_equal(r.array("out", np.float16), x * 2)
    # each lane's subgroup_add(1): the device's subgroup size (8 on lavapipe, 32 on NVIDIA);
    # wgpu reports only a range of sizes
    sums, p = r.array("sums", np.uint32), device.profile
    assert (sums == sums[0]).all() and sums[0] == (p.subgroup_size or sums[0])
    lo, hi = p.subgroup_size_range or (p.subgroup_size, p.subgroup_size)
    assert lo <= sums[0] <= hi
    buf, buf_out = device.buffer(x), device.buffer(7, "f16")
    assert buf.dtype == "f16" and buf.nbytes == 14
    k(x=buf, out=buf_out, sums=64)
    np.testing.assert_array_equal(buf_out.read(np.float16), x * 2)
