"""The runtime on real devices: hand-written WGSL, SPIR-V and kernel descriptors through
load_kernel and open_bundle, on every backend (the cpu one too), compared with numpy;
every device-side refusal.

The test shaders (also used by bench/runtime_bench.py) are written the way
docs/descriptor-conventions.md lays kernels out: saxpy (x: r f32, y: rw f32, a: f32
scalar; grid = len(y)) and iota (out: w u32, start/step: u32 scalars; grid = len(out)):
out[i] = start + i * step. SPIR-V is assembled from text by spirv-as at test time; the
cpu backend's .kdesc is built op by op with tests/descriptors.py.
"""

from __future__ import annotations

import functools
import gc
import os
import subprocess
import sys
import tempfile
import time
import weakref

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from spirv_tools import spirv_tool  # noqa: E402

# The saxpy metadata is the call-planning tests' own (tests/unit/runtime_fakes.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "unit"))
try:
    from runtime_fakes import SAXPY as SAXPY_META
finally:
    sys.path.pop(0)

IOTA_META = {
    "name": "iota",
    "variant": None,
    "id": "iota",
    "workgroup_size": [32, 1, 1],
    "grid": ["out"],
    "bindings": [
        {"name": "out", "binding": 0, "kind": "buffer", "dtype": "u32", "access": "w"},
        {"name": "start", "binding": 1, "kind": "scalar", "dtype": "u32", "offset": 0},
        {"name": "step", "binding": 2, "kind": "scalar", "dtype": "u32", "offset": 4},
    ],
    "uniform": {"binding": 1, "size": 16},
}

SAXPY_WGSL = """\
struct Params { a: f32, }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&y)) { y[i] = params.a * x[i] + y[i]; }
}
"""

IOTA_WGSL = """\
struct Params { start: u32, step: u32, }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(32, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&out)) { out[i] = params.start + i * params.step; }
}
"""

_PROLOGUE = """\
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid
OpExecutionMode %main LocalSize {wg} 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %rarr ArrayStride 4
OpMemberDecorate %sbuf 0 Offset 0
OpDecorate %sbuf Block
OpDecorate %params Block
"""

_TYPES = """\
%void = OpTypeVoid
%fn = OpTypeFunction %void
%float = OpTypeFloat 32
%uint = OpTypeInt 32 0
%bool = OpTypeBool
%v3u = OpTypeVector %uint 3
%pv3u = OpTypePointer Input %v3u
%c0 = OpConstant %uint 0
%c1 = OpConstant %uint 1
%gid = OpVariable %pv3u Input
"""

SAXPY_SPVASM = (
    _PROLOGUE.format(wg=64)
    + """\
OpMemberDecorate %params 0 Offset 0
OpDecorate %x DescriptorSet 0
OpDecorate %x Binding 0
OpDecorate %x NonWritable
OpDecorate %y DescriptorSet 0
OpDecorate %y Binding 1
OpDecorate %p DescriptorSet 0
OpDecorate %p Binding 2
"""
    + _TYPES
    + """\
%rarr = OpTypeRuntimeArray %float
%sbuf = OpTypeStruct %rarr
%psbuf = OpTypePointer StorageBuffer %sbuf
%params = OpTypeStruct %float
%pparams = OpTypePointer Uniform %params
%pf_sb = OpTypePointer StorageBuffer %float
%pf_u = OpTypePointer Uniform %float
%x = OpVariable %psbuf StorageBuffer
%y = OpVariable %psbuf StorageBuffer
%p = OpVariable %pparams Uniform
%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %uint %g 0
%n = OpArrayLength %uint %y 0
%ok = OpULessThan %bool %i %n
OpSelectionMerge %end None
OpBranchConditional %ok %body %end
%body = OpLabel
%pa = OpAccessChain %pf_u %p %c0
%a = OpLoad %float %pa
%px = OpAccessChain %pf_sb %x %c0 %i
%xv = OpLoad %float %px
%py = OpAccessChain %pf_sb %y %c0 %i
%yv = OpLoad %float %py
%ax = OpFMul %float %a %xv
%r = OpFAdd %float %ax %yv
OpStore %py %r
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"""
)

IOTA_SPVASM = (
    _PROLOGUE.format(wg=32)
    + """\
OpMemberDecorate %params 0 Offset 0
OpMemberDecorate %params 1 Offset 4
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 0
OpDecorate %out NonReadable
OpDecorate %p DescriptorSet 0
OpDecorate %p Binding 1
"""
    + _TYPES
    + """\
%rarr = OpTypeRuntimeArray %uint
%sbuf = OpTypeStruct %rarr
%psbuf = OpTypePointer StorageBuffer %sbuf
%params = OpTypeStruct %uint %uint
%pparams = OpTypePointer Uniform %params
%pu_sb = OpTypePointer StorageBuffer %uint
%pu_u = OpTypePointer Uniform %uint
%out = OpVariable %psbuf StorageBuffer
%p = OpVariable %pparams Uniform
%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %uint %g 0
%n = OpArrayLength %uint %out 0
%ok = OpULessThan %bool %i %n
OpSelectionMerge %end None
OpBranchConditional %ok %body %end
%body = OpLabel
%ps = OpAccessChain %pu_u %p %c0
%start = OpLoad %uint %ps
%pt = OpAccessChain %pu_u %p %c1
%step = OpLoad %uint %pt
%m = OpIMul %uint %i %step
%v = OpIAdd %uint %start %m
%po = OpAccessChain %pu_sb %out %c0 %i
OpStore %po %v
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"""
)


@functools.cache
def assemble(text: str) -> bytes:
    """SPIR-V binary (Vulkan 1.1 environment) of assembly `text`, via spirv-as; raises
    RuntimeError naming the tool's message when it is missing or refuses the text."""
    tool = spirv_tool("spirv-as")
    if tool is None:
        raise RuntimeError("spirv-as (the test extra's pinned tool) is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "k.spvasm"), os.path.join(tmp, "k.spv")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        done = subprocess.run(
            [tool, "--target-env", "vulkan1.1", src, "-o", out],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"spirv-as failed: {done.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read()


SHADERS = {
    "saxpy": (SAXPY_META, SAXPY_WGSL, SAXPY_SPVASM),
    "iota": (IOTA_META, IOTA_WGSL, IOTA_SPVASM),
}


@functools.cache
def kdesc(name: str) -> bytes:
    """The .kdesc of test kernel `name`: the descriptor its WGSL and SPIR-V spell out."""
    from descriptors import Kernel

    from vyre_build.descriptor import encode

    if name == "saxpy":
        k = Kernel("saxpy", (64, 1, 1))
        x, y = k.buffer("F32", "ReadOnly", "x"), k.buffer("F32", "ReadWrite", "y")
        a = k.scalar("F32", "a")
        i = k.body.gid(0)
        then = k.body.if_(k.body.bin("Lt", i, k.body.length(y)))
        ax = then.bin("Mul", then.param(a), then.load(x, i))
        then.store(y, i, then.bin("Add", ax, then.load(y, i)))
    else:
        k = Kernel("iota", (32, 1, 1))
        out = k.buffer("U32", "WriteOnly", "out")
        start, step = k.scalar("U32", "start"), k.scalar("U32", "step")
        i = k.body.gid(0)
        then = k.body.if_(k.body.bin("Lt", i, k.body.length(out)))
        then.store(out, i, then.bin("Add", then.param(start), then.bin("Mul", i, then.param(step))))
    return encode(k.build())


# The load_kernel argument that carries each backend's code.
CODE_ARG = {"wgpu": "wgsl", "vulkan": "spirv", "cpu": "kdesc"}


def code_for(name: str, backend: str):
    """(meta, code) of a test kernel for `backend`: WGSL text, SPIR-V or .kdesc bytes."""
    meta, wgsl, spvasm = SHADERS[name]
    code = {"wgpu": lambda: wgsl, "vulkan": lambda: assemble(spvasm), "cpu": lambda: kdesc(name)}
    return meta, code[backend]()


def artifacts(name: str, backends=("wgpu", "vulkan", "cpu")) -> dict:
    """The bundle artifacts of test kernel `name` for `backends`, by suffix."""
    from vyre_build.core.backends import BACKENDS

    codes = {BACKENDS[b].suffix: code_for(name, b)[1] for b in backends}
    return {s: c.encode() if isinstance(c, str) else c for s, c in codes.items()}


def load(name: str, backend: str, device=None):
    """The test kernel `name` loaded through the runtime on `backend`."""
    from vyre_build.runtime import load_kernel

    meta, code = code_for(name, backend)
    return load_kernel(meta, backend=backend, device=device, **{CODE_ARG[backend]: code})


# ---------------------------------------------------------------------------- tests

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from vyre_build.core.errors import BundleError, DeviceError, DispatchError  # noqa: E402
from vyre_build.runtime import DeviceBuffer  # noqa: E402


def saxpy_ref(x, y, a):
    return (np.float32(a) * x + y).astype(np.float32)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000])
def test_saxpy_matches_numpy_writes_y_and_leaves_x_alone(backend, n):
    k = load("saxpy", backend)
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x_before, want = x.copy(), saxpy_ref(x, y, -1.5)
    out = k(x=x, y=y, a=-1.5)
    assert sorted(out) == ["y"]
    assert out["y"] is y and out.array("y", np.float32) is y  # the result is in y itself
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(x, x_before)


def test_write_only_output_by_length_and_shape(backend):
    k = load("iota", backend)
    out = k(out=100, start=7, step=3)["out"]
    assert out.dtype == np.uint32 and out.shape == (100,)
    np.testing.assert_array_equal(out, 7 + 3 * np.arange(100, dtype=np.uint32))
    grid = k(out=(4, 5), start=2**32 - 1, step=1)["out"]
    assert grid.shape == (4, 5)  # u32 wraps: start + i*step mod 2^32
    np.testing.assert_array_equal(grid.reshape(-1), np.arange(20, dtype=np.uint32) - 1)


def test_grid_override_and_empty_grid(backend):
    k = load("iota", backend)
    # 40 invocations round up to 2 workgroups of 32: the shader runs for i < 64 only.
    out = k(out=100, start=1, step=1, grid=40)["out"]
    np.testing.assert_array_equal(out[:64], np.arange(1, 65, dtype=np.uint32))
    assert not out[64:].any()  # outside the grid nothing ran; allocations are zeroed
    assert not k(out=8, start=5, step=1, grid=0)["out"].any()
    with pytest.raises(DispatchError) as info:
        k(out=8, start=0, step=1, grid=2**32)
    assert str(info.value) == (
        "Kernel 'iota': grid has 4294967296 invocations on axis x, more than 4294967295 "
        "(a global id is a u32)"
    )
    if backend == "wgpu":  # a hand-written WGSL: no split-dispatch base to split it with
        with pytest.raises(DispatchError) as info:
            k(out=8, start=0, step=1, grid=10**7)
        assert str(info.value) == (
            "Kernel 'iota': grid needs 312500 workgroups on axis x (10000000 invocations / 32 "
            "per workgroup), more than the device's limit of 65535 on x, and the shader reads "
            "workgroup ids without the vyre_wg_base constant (one line `const vyre_wg_base: "
            "vec3<u32> = vec3<u32>(0u, 0u, 0u);`) that vyre_build's WGSL emitter declares, "
            "so the dispatch cannot be split"
        )


def test_device_buffers_chain_without_readback(device):
    saxpy = load("saxpy", device.backend, device)
    x = np.arange(256, dtype=np.float32)
    bx = device.buffer(x, read_only=True)
    by = device.buffer(np.zeros(256, np.float32))
    for _ in range(3):
        result = saxpy(x=bx, y=by, a=1.0)
        assert result["y"] is by
    np.testing.assert_array_equal(by.read(), 3 * x)
    by.write(np.ones(256, np.float32))
    np.testing.assert_array_equal(saxpy(x=bx, y=by, a=2.0)["y"].read(), 2 * x + 1)


def test_batch_submits_growing_chunks_in_order(device):
    saxpy, iota = load("saxpy", device.backend, device), load("iota", device.backend, device)
    bx = device.buffer(np.ones(100, np.float32), read_only=True)
    by = device.buffer(100, "f32")
    calls = []
    original = device._submit
    device._submit = lambda jobs, final: (calls.append((len(jobs), final)), original(jobs, final))
    try:
        with device.batch():
            for _ in range(5):
                saxpy(x=bx, y=by, a=2.0)
            made = iota(out=16, start=3, step=0)["out"]
            with pytest.raises(DispatchError, match="inside device.batch"):
                by.read()
    finally:
        del device._submit
    # Chunks of 1, 2, then the last 3 on exit: the GPU starts before recording ends.
    assert calls == [(1, False), (2, False), (3, True)]
    np.testing.assert_array_equal(by.read(), np.full(100, 10.0, np.float32))
    np.testing.assert_array_equal(made.read(), np.full(16, 3, np.uint32))
    with pytest.raises(DispatchError, match="cannot be nested"), device.batch(), device.batch():
        pass


def test_batch_release_is_deferred_and_errors_finish_submitted_work(device):
    saxpy = load("saxpy", device.backend, device)
    bx = device.buffer(np.ones(64, np.float32), read_only=True)
    by = device.buffer(64, "f32")
    with device.batch():
        for _ in range(4):
            saxpy(x=bx, y=by, a=1.0)
        bx.release()  # chunks using it are in flight: freed when the batch ends
        with pytest.raises(DispatchError, match="released"):
            saxpy(x=bx, y=by, a=1.0)
    np.testing.assert_array_equal(by.read(), np.full(64, 4.0, np.float32))
    bx = device.buffer(np.ones(64, np.float32), read_only=True)
    with pytest.raises(ValueError, match="user code"), device.batch():
        for _ in range(7):  # chunks of 1, 2 and 4: all seven are submitted
            saxpy(x=bx, y=by, a=1.0)
        saxpy(x=bx, y=by, a=1.0)  # the eighth waits for a chunk of 8
        raise ValueError("user code")
    # What was submitted ran; the one still pending was dropped.
    np.testing.assert_array_equal(by.read(), np.full(64, 11.0, np.float32))


def test_repeated_calls_reuse_the_plan_yet_see_every_change(device):
    saxpy = load("saxpy", device.backend, device)
    x = np.arange(32, dtype=np.float32)
    bx, by, bz = (
        device.buffer(x, read_only=True),
        device.buffer(32, "f32"),
        device.buffer(32, "f32"),
    )
    for a in (2.0, 2.0, 3.0, 3):  # equal values reuse the plan; 3 (int) is checked anew
        saxpy(x=bx, y=by, a=a)
    np.testing.assert_array_equal(by.read(), x * 10)
    saxpy(x=bx, y=bz, a=3.0)  # another buffer: bound, not the cached one
    np.testing.assert_array_equal(bz.read(), x * 3)
    np.testing.assert_array_equal(by.read(), x * 10)
    with pytest.raises(DispatchError, match="must be a float scalar"):
        saxpy(x=bx, y=bz, a="3")
    bz.release()
    with pytest.raises(DispatchError, match="released"):
        saxpy(x=bx, y=bz, a=3.0)
    # The kernel holds its last call's buffers weakly: dropping them frees them.
    probe = weakref.ref(by)
    saxpy(x=bx, y=by, a=1.0)
    del by
    gc.collect()
    assert probe() is None


def test_plan_reuse_never_serves_a_stale_or_unchecked_call(device):
    saxpy = load("saxpy", device.backend, device)
    x = np.ones(128, np.float32)
    bx = device.buffer(x, read_only=True)
    # A grid list changed in place between calls: lists are never cached. (The test
    # saxpy's workgroups are 64 wide; it checks bounds against len(y) itself.)
    by, g = device.buffer(128, "f32"), [64]
    saxpy.dispatch({"x": bx, "y": by, "a": 1.0}, grid=g)
    g[0] = 128
    saxpy.dispatch({"x": bx, "y": by, "a": 1.0}, grid=g)
    np.testing.assert_array_equal(by.read(), [2.0] * 64 + [1.0] * 64)
    # Grids plan_call refuses stay refused after an equal accepted one.
    saxpy.dispatch({"x": bx, "y": by, "a": 1.0}, grid=64)
    for bad in (64.0, True, np.array([64])):
        with pytest.raises(DispatchError, match="grid= must be"):
            saxpy.dispatch({"x": bx, "y": by, "a": 1.0}, grid=bad)
    # -0.0 after 0.0 is another uniform: a * 1 + -0 is -0 only for a = -0.0.
    negative_zeros = np.full(128, -0.0, np.float32)
    bz = device.buffer(negative_zeros)
    saxpy(x=bx, y=bz, a=0.0)
    assert not np.signbit(bz.read()).any()
    bz.write(negative_zeros)
    saxpy(x=bx, y=bz, a=-0.0)
    assert np.signbit(bz.read()).all()
    # A DeviceBuffer subclass is bound like a DeviceBuffer, cached call or not.

    class Tagged(DeviceBuffer):
        pass

    base = device.buffer(np.full(128, 1.0, np.float32))
    tagged = Tagged(device, base.handle, base.dtype, base.shape, base.access)
    base.released = True  # `tagged` owns the memory now
    for _ in range(2):
        saxpy(x=bx, y=tagged, a=3.0)
    np.testing.assert_array_equal(tagged.read(), np.full(128, 7.0, np.float32))


@pytest.mark.gpu
def test_vulkan_batch_back_pressure_wait_and_timing():
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime.backends.vulkan import device as vulkan_backend
    from vyre_build.runtime.backends.vulkan.device import VulkanDevice

    dev = VulkanDevice()
    dev.timing = True
    saxpy = load("saxpy", "vulkan", dev)
    bx, by = dev.buffer(np.ones(64, np.float32), read_only=True), dev.buffer(64, "f32")
    with dev.batch():
        for _ in range(2000):  # ~125 chunks of 16: at most _RING_MAX unwaited at a time
            saxpy(x=bx, y=by, a=1.0)
        assert dev._sent <= vulkan_backend._RING_MAX
        dev.wait()  # blocks for the chunks in flight
        assert dev._sent == 0
        saxpy(x=np.ones(64, np.float32), y=by, a=1.0)  # an upload and a dispatch after it
    assert len(dev._ring) <= vulkan_backend._RING_MAX
    np.testing.assert_array_equal(by.read(), np.full(64, 2001.0, np.float32))
    assert dev.gpu_seconds is not None and dev.gpu_seconds > 0
    t = time.perf_counter()
    saxpy(x=bx, y=by, a=1.0)
    assert 0 < dev.gpu_seconds < time.perf_counter() - t  # this call's, not the batch's
    dev.timing = False
    saxpy(x=bx, y=by, a=1.0)
    assert dev.gpu_seconds is None


@pytest.mark.gpu
# Ctrl-C during a wait for the GPU: test_runtime_faults.py
# (test_an_interrupted_wait_is_waited_out_before_anything_is_freed_or_reused).


def test_device_buffer_refusals(device):
    saxpy = load("saxpy", device.backend, device)
    ro = device.buffer(np.zeros(4, np.float32), read_only=True)
    with pytest.raises(DispatchError) as info:
        saxpy(x=ro, y=ro, a=1.0)
    assert str(info.value) == (
        "Kernel 'saxpy': argument 'y' is written by the kernel "
        "(access 'rw') but the DeviceBuffer was created read-only"
    )
    wrong = device.buffer(np.zeros(4, np.uint32))
    with pytest.raises(
        DispatchError, match="'x' must be a float32 buffer, got a uint32 DeviceBuffer"
    ):
        saxpy(x=wrong, y=device.buffer(4, "f32"), a=1.0)
    gone = device.buffer(4, "f32")
    gone.release()
    with pytest.raises(DispatchError, match="'y' is a released DeviceBuffer"):
        saxpy(x=ro, y=gone, a=1.0)
    with pytest.raises(DispatchError, match="expected a float32 array of 4 elements"):
        ro.write(np.zeros(5, np.float32))
    with pytest.raises(
        DispatchError, match="dtype must be f32, i32, u32, f16, bf16 or a vector type"
    ):
        device.buffer(4)


def test_buffer_of_another_device_refused(backend):
    from vyre_build.runtime import get_device

    first, other = get_device(backend), get_device(backend, adapter=0)
    assert first is not other
    saxpy = load("saxpy", backend, first)
    with pytest.raises(DispatchError, match="'x' is a DeviceBuffer of another device"):
        saxpy(x=other.buffer(4, "f32"), y=np.zeros(4, np.float32), a=1.0)


def test_pipeline_created_once_per_device_and_kernel(device):
    first = load("saxpy", device.backend, device)
    count = len(device._pipelines)
    second = load("saxpy", device.backend, device)
    assert len(device._pipelines) == count
    assert device.pipeline(first.meta, first.code) is device.pipeline(second.meta, second.code)


def test_bad_shader_code_refused(backend):
    from vyre_build.runtime import load_kernel

    meta = SAXPY_META
    if backend == "wgpu":
        with pytest.raises(DeviceError, match="Kernel 'saxpy': wgpu refused the shader"):
            load_kernel(meta, wgsl="fn main( {", backend="wgpu")
        with pytest.raises(DispatchError, match="the wgpu backend needs wgsl="):
            load_kernel(meta, spirv=b"\x03\x02\x23\x07", backend="wgpu")
    elif backend == "cpu":
        with pytest.raises(DispatchError, match="the cpu backend needs kdesc="):
            load_kernel(meta, wgsl=SAXPY_WGSL, backend="cpu")
        with pytest.raises(DispatchError, match="kdesc= must be the bytes of a .kdesc, got str"):
            load_kernel(meta, kdesc="saxpy", backend="cpu")
        refusals = [
            (
                kdesc("saxpy")[:-1],
                meta,
                "the cpu backend refused the .kdesc: malformed descriptor at byte 104: "
                "needs 1 more bytes, 0 left (truncated)",
            ),
            (kdesc("iota"), meta, "the .kdesc is kernel 'iota'"),
            (
                kdesc("saxpy"),
                {**meta, "workgroup_size": [32, 1, 1]},
                "the .kdesc has workgroup size 64x1x1, the metadata 32x1x1",
            ),
            (
                kdesc("saxpy"),
                {**meta, "bindings": [{**b, "dtype": "i32"} for b in meta["bindings"]]},
                "the .kdesc does not match the metadata: it has buffer 'x' (0, f32, r), "
                "buffer 'y' (1, f32, rw), scalar 'a' (f32 at 0) where the metadata has "
                "buffer 'x' (0, i32, r), buffer 'y' (1, i32, rw), scalar 'a' (i32 at 0)",
            ),
        ]
        from vyre_build.runtime.backends.cpu import CpuDevice

        for code, bad_meta, message in refusals:  # pipelines are kept by id and code: fresh devices
            with pytest.raises(DeviceError) as info:
                load_kernel(bad_meta, kdesc=code, device=CpuDevice())
            assert str(info.value) == f"Kernel 'saxpy': {message}"
    else:
        with pytest.raises(DispatchError, match="does not look like a SPIR-V module"):
            load_kernel(meta, spirv=b"junkjunk", backend="vulkan")
        broken = assemble(SAXPY_SPVASM)[:40]  # a valid header, then a cut-off module
        with pytest.raises(DeviceError, match="Kernel 'saxpy'"):
            load_kernel(meta, spirv=broken, backend="vulkan")


def test_adapters_and_backend_selection(backend, monkeypatch):
    from vyre_build.runtime import get_device, list_adapters

    names = list_adapters(backend)
    assert names and all(isinstance(n, str) for n in names)
    assert get_device(backend, adapter=names[0][:6]).name == names[0]
    with pytest.raises(DeviceError, match="adapter index 99 is out of range"):
        get_device(backend, adapter=99)
    with pytest.raises(DeviceError, match="no .* adapter matches 'no-such-gpu'"):
        get_device(backend, adapter="no-such-gpu")
    monkeypatch.setenv("VYRE_BACKEND", backend)
    assert get_device().backend == backend
    monkeypatch.setenv("VYRE_BACKEND", "metal")
    with pytest.raises(
        DeviceError, match="unknown VYRE_BACKEND 'metal'; choose one of wgpu, vulkan, cpu$"
    ):
        get_device()


@pytest.mark.gpu
def test_vulkan_staging_path(monkeypatch):
    """Device-local memory with staging transfers, forced on a unified-memory adapter."""
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime.backends.vulkan.device import VulkanDevice

    monkeypatch.setenv("VYRE_VULKAN_STAGING", "1")
    dev = VulkanDevice()
    assert not dev.unified
    saxpy, iota = load("saxpy", "vulkan", dev), load("iota", "vulkan", dev)
    x = np.arange(300, dtype=np.float32)
    np.testing.assert_array_equal(saxpy(x=x, y=np.ones(300, np.float32), a=2.0)["y"], 2 * x + 1)
    np.testing.assert_array_equal(iota(out=5, start=1, step=2)["out"], [1, 3, 5, 7, 9])
    big = dev.buffer(3 << 18, "f32")  # larger than the first staging buffer: it grows
    assert not big.read().any()
    # A batch whose calls upload arrays (staged copies, each waited for) while earlier
    # chunks of dispatches are in flight: every copy and dispatch stays in order.
    by, made = dev.buffer(300, "f32"), []
    with dev.batch():
        for i in range(40):
            # An array argument, or a fresh DeviceBuffer: either way a staged upload.
            saxpy(x=x if i % 2 else dev.buffer(x, read_only=True), y=by, a=1.0)
            if i % 10 == 0:
                made.append(iota(out=8, start=i, step=1)["out"])
    np.testing.assert_array_equal(by.read(), 40 * x)
    for i, out in zip(range(0, 40, 10), made):
        np.testing.assert_array_equal(out.read(), np.arange(i, i + 8, dtype=np.uint32))


def _bundle(path, backends=("wgpu", "vulkan", "cpu")):
    from vyre_build.bundle import write_bundle

    entries = [{"meta": SHADERS[n][0], "artifacts": artifacts(n, backends)} for n in SHADERS]
    write_bundle(path, entries)
    return path


def test_open_bundle_runs_kernels_lazily(backend, tmp_path):
    from vyre_build.runtime import open_bundle

    path = _bundle(tmp_path / "t.vyrebundle")
    with open_bundle(path, backend=backend) as bundle:
        assert bundle.ids == ["iota", "saxpy"] and "iota" in bundle
        assert bundle._kernels == {}  # nothing read before first use
        k = bundle["saxpy"]
        assert bundle.kernel("saxpy") is k
        assert [b.name for b in k.bindings] == ["x", "y", "a"]
        x = np.arange(10, dtype=np.float32)
        np.testing.assert_array_equal(k(x=x, y=x.copy(), a=3.0)["y"], 4 * x)
        with pytest.raises(BundleError):
            bundle.kernel("nope")


def test_bundle_without_the_backends_artifact_refused(backend, tmp_path):
    from vyre_build.runtime import open_bundle

    from vyre_build.core.backends import BACKENDS

    others = tuple(b for b in BACKENDS if b != backend)
    path = _bundle(tmp_path / "one.vyrebundle", backends=others)
    suffix = BACKENDS[backend].suffix
    with (
        open_bundle(path, backend=backend) as bundle,
        pytest.raises(BundleError, match=f"kernel 'iota' has no '\\{suffix}' artifact \\(it has "),
    ):
        bundle["iota"]


@pytest.mark.gpu
def test_corrupt_artifact_refused_at_first_use_with_its_name(tmp_path):
    from adapters import require_adapter

    require_adapter("wgpu")
    from vyre_build.runtime import open_bundle

    path = _bundle(tmp_path / "bad.vyrebundle", backends=("wgpu",))
    data = bytearray(path.read_bytes())
    at = data.find(IOTA_WGSL.encode())
    data[at + 20] ^= 0x01
    path.write_bytes(bytes(data))
    with open_bundle(path, backend="wgpu") as bundle:
        assert bundle["saxpy"] is not None  # the sound kernel still loads
        with pytest.raises(BundleError, match="iota"):
            bundle["iota"]


def _cli(*argv) -> int:
    from vyre_build.cli import main

    return main([str(a) for a in argv])


def test_run_cli_writes_outputs(backend, tmp_path, capsys):
    bundle = _bundle(tmp_path / "cli.vyrebundle")
    x = np.arange(5, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.ones(5, np.float32))
    out = tmp_path / "out"
    assert (
        _cli(
            "run",
            bundle,
            "saxpy",
            "--input",
            f"x={tmp_path / 'x.npy'}",
            "--input",
            f"y={tmp_path / 'y.npy'}",
            "--scalar",
            "a=2",
            "--backend",
            backend,
            "--out",
            out,
        )
        == 0
    )
    np.testing.assert_array_equal(np.load(out / "y.npy"), 2 * x + 1)
    assert (
        _cli(
            "run",
            bundle,
            "iota",
            "--alloc",
            "out=2x3",
            "--scalar",
            "start=0x10",
            "--scalar",
            "step=1",
            "--grid",
            "4",
            "--backend",
            backend,
            "--adapter",
            "0",
            "--out",
            out,
        )
        == 0
    )
    got = np.load(out / "out.npy")
    assert got.shape == (2, 3)
    np.testing.assert_array_equal(got.reshape(-1), [16, 17, 18, 19, 20, 21])  # 1 workgroup
    assert "wrote" in capsys.readouterr().out
    assert _cli("run", "--list-adapters", "--backend", backend) == 0
    assert capsys.readouterr().out.startswith("0: ")


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--scalar", "start=1"],
            "Kernel 'iota': write-only buffer 'out' needs --input "
            "out=FILE.npy or --alloc out=LENGTH",
        ),
        (["--alloc", "out=4", "--scalar", "start=x"], "--scalar start='x': expected an integer"),
        (
            ["--alloc", "out=4", "--scalar", "step=-1", "--scalar", "start=0"],
            "Kernel 'iota': argument 'step' = -1 is out of range for u32",
        ),
        (
            ["--alloc", "out=4", "--scalar", "stride=1"],
            "Kernel 'iota': --scalar 'stride' names no argument; it takes out, start, step",
        ),
        (
            ["--input", "out=/no/such.npy"],
            "--input out: cannot read '/no/such.npy': No such file or directory",
        ),
        (
            ["--input", f"out={os.path.abspath(__file__)}"],
            f"--input out: '{os.path.abspath(__file__)}' is not a .npy file (it lacks the .npy",
        ),
        (["--input", "out=/dev/null"], "--input out: cannot read '/dev/null': it is a character"),
        (
            ["--alloc", "out=4", "--input", "start=a.npy"],
            "Kernel 'iota': 'start' is a scalar; pass it with --scalar",
        ),
        (["--alloc", "out=4x"], "--alloc '4x': expected integers separated by 'x'"),
        (["--scalar", "start"], "--scalar 'start': expected NAME=VALUE"),
    ],
)
@pytest.mark.gpu
def test_run_cli_user_errors_exit_1_without_traceback(tmp_path, capsys, extra, message):
    from adapters import require_adapter

    require_adapter("wgpu")
    bundle = _bundle(tmp_path / "cli.vyrebundle", backends=("wgpu",))
    assert _cli("run", bundle, "iota", *extra, "--backend", "wgpu", "--out", tmp_path) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.fixture(scope="module")
def tree_bundle(tmp_path_factory):
    """Every kernel of kernels/ compiled (WGSL + SPIR-V) into one bundle."""
    compiler = pytest.importorskip("vyre_build.compiler")
    from vyre_build.bundle import write_bundle

    root = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "kernels"
    )
    entries = []
    for file in sorted(f for f in os.listdir(root) if f.endswith(".py")):
        for k in compiler.compile_file(
            os.path.join(root, file), root=root, targets=("wgsl", "spirv", "kdesc")
        ):
            arts = {s: b for s, b in k.artifacts.items() if s != ".meta.json"}
            entries.append({"meta": k.meta, "artifacts": arts})
    path = tmp_path_factory.mktemp("tree") / "kernels.vyrebundle"
    write_bundle(path, entries)
    return path


def test_every_kernel_of_the_tree_through_a_bundle(backend, tree_bundle):
    """Each reference case of tests/gpu/reference.py, run from the bundle (first two sizes;
    test_kernels.py covers every size through load_kernel)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import reference
    finally:
        sys.path.pop(0)
    from vyre_build.runtime import open_bundle

    rng = np.random.default_rng(7)
    with open_bundle(tree_bundle, backend=backend) as bundle:
        missing = sorted(c.stem for c in reference.CASES if c.stem not in bundle)
        assert not missing, f"bundle lacks {missing}"
        for case in reference.CASES:
            for size in case.sizes[:2]:
                args = case.inputs(rng, size)
                want = case.reference(args)
                got = bundle[case.stem](**args)
                for name, expected in want.items():
                    where = f"{case.stem} size={size} {name} on {backend}"
                    actual = np.asarray(got[name]).reshape(-1)
                    assert actual.dtype == expected.dtype, where
                    np.testing.assert_allclose(
                        actual, expected.reshape(-1), rtol=case.rtol, atol=case.atol, err_msg=where
                    )


def test_reused_binding_sets_carry_each_calls_scalars(device):
    """Calls on the same DeviceBuffers reuse one binding set; each still sees its own
    scalars, in and out of a batch, and a released buffer's set is never bound again."""
    saxpy = load("saxpy", device.backend, device)
    x = np.arange(64, dtype=np.float32)
    bx, by = device.buffer(x, read_only=True), device.buffer(64, "f32")
    for a in (1.0, 2.0, 3.0):
        saxpy(x=bx, y=by, a=a)
    np.testing.assert_array_equal(by.read(), 6 * x)
    with device.batch():
        for a in (1.0, 2.0, 3.0, 4.0):
            saxpy(x=bx, y=by, a=a)
    np.testing.assert_array_equal(by.read(), 16 * x)
    cached = len(device._sets)
    by.release()
    assert len(device._sets) < cached
    fresh = device.buffer(64, "f32")
    np.testing.assert_array_equal(saxpy(x=bx, y=fresh, a=0.5)["y"].read(), 0.5 * x)


def python(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """A fresh interpreter running `argv` from the repository root; output captured."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        cwd=root,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
            **(env or {}),
        },
        timeout=300,
        check=False,
    )


def test_the_example_runs_on_the_tree_bundle(backend, tree_bundle):
    done = python("examples/dispatch.py", str(tree_bundle), "--backend", backend)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"opened {tree_bundle}: ") and len(lines) == 5
    assert all(line.endswith("matches numpy") for line in lines[1:])


@pytest.mark.backends("wgpu", "vulkan")
def test_coarse_entries_run_where_the_sizes_allow(backend, tree_bundle):
    from vyre_build.runtime import open_bundle
    from vyre_build.runtime.backends.vulkan.device import VulkanDevice
    from vyre_build.runtime.backends.wgpu.device import WgpuDevice

    device = WgpuDevice() if backend == "wgpu" else VulkanDevice(pipeline_cache=False)
    with open_bundle(tree_bundle, device=device) as bundle:
        saxpy = bundle["saxpy"]
        assert saxpy.meta.coarse is not None and saxpy.meta.coarse.entry == "main_x4"
        made = []
        for n in (4096, 4097):  # all buffers 4096 long: the coarse entry; 4097: the plain one
            x = np.arange(n, dtype=np.float32)
            y = np.ones(n, np.float32)
            np.testing.assert_array_equal(saxpy(x=x, y=y, a=3.0).array("y"), 3 * x + 1)
            made.append(sorted(key[3] for key in device._pipelines))
        assert made == [["main_x4"], ["main", "main_x4"]]
    device.close()


@pytest.mark.gpu
def test_wgpu_timing_with_timestamp_queries_where_the_device_has_them(monkeypatch):
    from adapters import require_adapter

    require_adapter("wgpu")
    from vyre_build.runtime.backends.wgpu.device import WgpuDevice

    dev = WgpuDevice()
    offered = "timestamp-query" in {str(f) for f in dev.device.features}
    assert offered == ("timestamp-query" in {str(f) for f in dev.device.adapter.features})
    saxpy = load("saxpy", "wgpu", dev)
    bx, by = dev.buffer(np.ones(64, np.float32), read_only=True), dev.buffer(64, "f32")
    saxpy(x=bx, y=by, a=1.0)
    assert dev.gpu_seconds is None  # timing is off by default
    dev.timing = True
    with dev.batch():
        for _ in range(40):  # several chunks: the first pass starts the clock, the last stops it
            saxpy(x=bx, y=by, a=1.0)
    np.testing.assert_array_equal(by.read(), np.full(64, 41.0, np.float32))
    if not offered:  # the documented fallback: no figure rather than a wrong one
        assert dev.gpu_seconds is None
        return
    batch = dev.gpu_seconds
    assert batch is not None and batch > 0
    # The timestamps are read like any buffer, through the kept staging buffer: a timed
    # batch makes no buffer of its own (wgpu-py's queue.read_buffer makes one a read).
    made, create = [], dev.device._create_buffer
    monkeypatch.setattr(dev.device, "_create_buffer", lambda *a: made.append(a[1]) or create(*a))
    for _ in range(3):
        with dev.batch():
            saxpy(x=bx, y=by, a=0.0)
        assert dev.gpu_seconds is not None and dev.gpu_seconds > 0
    assert made == []
    monkeypatch.undo()
    t = time.perf_counter()
    saxpy(x=bx, y=by, a=1.0)
    assert 0 < dev.gpu_seconds < time.perf_counter() - t  # this call's, not the batch's
    dev.timing = False
    saxpy(x=bx, y=by, a=1.0)
    assert dev.gpu_seconds is None
    np.testing.assert_array_equal(by.read(), np.full(64, 43.0, np.float32))
    dev.close()


@pytest.mark.gpu
def test_wgpu_timing_on_an_application_device_without_the_feature():
    from adapters import require_adapter

    require_adapter("wgpu")
    import wgpu

    from vyre_build.runtime import get_device

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    own = adapter.request_device_sync(required_features=[])
    dev = get_device("wgpu", own)
    dev.timing = True
    saxpy = load("saxpy", "wgpu", dev)
    r = saxpy(x=np.ones(8, np.float32), y=np.ones(8, np.float32), a=2.0)
    assert r.array("y").tolist() == [3.0] * 8 and dev.gpu_seconds is None


@pytest.mark.gpu
def test_wgpu_device_without_timestamps_when_the_driver_refuses_them():
    from adapters import require_adapter

    require_adapter("wgpu")
    import wgpu

    from vyre_build.runtime.backends.wgpu.device import WgpuDevice

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if "timestamp-query" not in adapter.features:
        pytest.skip("the adapter offers no timestamp-query")
    asked = []
    real = adapter.request_device_sync

    def refuse_timestamps(**kwargs):
        asked.append(sorted(kwargs["required_features"]))
        if "timestamp-query" in kwargs["required_features"]:
            raise RuntimeError("driver says no")
        return real(**kwargs)

    adapter.request_device_sync = refuse_timestamps
    dev = WgpuDevice(adapter)
    assert "timestamp-query" in asked[0] and "timestamp-query" not in asked[1]
    dev.timing = True
    saxpy = load("saxpy", "wgpu", dev)
    r = saxpy(x=np.ones(8, np.float32), y=np.ones(8, np.float32), a=2.0)
    assert r.array("y").tolist() == [3.0] * 8 and dev.gpu_seconds is None
    dev.close()
