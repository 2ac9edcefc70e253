"""The Vulkan runtime under faults, for real (lavapipe here): a VkResult the driver may
return, whatever the `vulkan` package maps it to (a bare KeyError for codes its table lacks),
is a DeviceError naming the call; descriptor pools grow when full or refused; a failed
submit with work in flight waits for it and the device goes on; a lost device and a wait
that ends in VK_TIMEOUT make the device unusable, with a clear DeviceError for every later
call and never a crash (the real timeout runs in a subprocess, so that a crash fails the
test instead of killing pytest). Results are injected at the binding (`_callApi`, which
every function of the `vulkan` package goes through) or at the backend's `_lib`."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import _PROLOGUE, _TYPES, load  # noqa: E402

from vyre_build.core.errors import DeviceError  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 64
UNUSABLE = "close it and get a new one with get_device"

# A kernel that keeps each invocation busy: out[i] = 50,000 steps of an LCG from i (an
# outer loop of `n` rounds; lavapipe caps a loop's iterations at 65,535, so there the grid
# sets the run time: about 30 us per invocation).
SPIN_META = {
    "name": "spin",
    "variant": None,
    "id": "spin",
    "workgroup_size": [32, 1, 1],
    "grid": ["out"],
    "bindings": [
        {"name": "out", "binding": 0, "kind": "buffer", "dtype": "u32", "access": "w"},
        {"name": "n", "binding": 1, "kind": "scalar", "dtype": "u32", "offset": 0},
    ],
    "uniform": {"binding": 1, "size": 16},
}
SPIN_SPVASM = (
    _PROLOGUE.format(wg=32)
    + """\
OpMemberDecorate %params 0 Offset 0
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 0
OpDecorate %p DescriptorSet 0
OpDecorate %p Binding 1
"""
    + _TYPES
    + """\
%cA = OpConstant %uint 1664525
%cC = OpConstant %uint 1013904223
%cI = OpConstant %uint 50000
%rarr = OpTypeRuntimeArray %uint
%sbuf = OpTypeStruct %rarr
%psbuf = OpTypePointer StorageBuffer %sbuf
%params = OpTypeStruct %uint
%pparams = OpTypePointer Uniform %params
%pu_sb = OpTypePointer StorageBuffer %uint
%pu_u = OpTypePointer Uniform %uint
%out = OpVariable %psbuf StorageBuffer
%p = OpVariable %pparams Uniform
%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %uint %g 0
%pn = OpAccessChain %pu_u %p %c0
%n = OpLoad %uint %pn
OpBranch %head
%head = OpLabel
%j = OpPhi %uint %c0 %entry %j1 %ostep
%x = OpPhi %uint %i %entry %y %ostep
%more = OpULessThan %bool %j %n
OpLoopMerge %done %ostep None
OpBranchConditional %more %ibody %done
%ibody = OpLabel
OpBranch %ihead
%ihead = OpLabel
%k = OpPhi %uint %c0 %ibody %k1 %istep
%y = OpPhi %uint %x %ibody %y1 %istep
%imore = OpULessThan %bool %k %cI
OpLoopMerge %ostep %istep None
OpBranchConditional %imore %iloop %ostep
%iloop = OpLabel
OpBranch %istep
%istep = OpLabel
%ym = OpIMul %uint %y %cA
%y1 = OpIAdd %uint %ym %cC
%k1 = OpIAdd %uint %k %c1
OpBranch %ihead
%ostep = OpLabel
%j1 = OpIAdd %uint %j %c1
OpBranch %head
%done = OpLabel
%len = OpArrayLength %uint %out 0
%ok = OpULessThan %bool %i %len
OpSelectionMerge %end None
OpBranchConditional %ok %store %end
%store = OpLabel
%po = OpAccessChain %pu_sb %out %c0 %i
OpStore %po %x
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"""
)


@pytest.fixture
def vkdev():
    """A Vulkan device of this test's own (no persisted cache), closed after it."""
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime.backends.vulkan.device import VulkanDevice

    dev = VulkanDevice(pipeline_cache=False)
    yield dev
    dev.close()


def binding_returns(monkeypatch, call: str, result) -> None:
    """Make the `vulkan` package's call of lib.<call> return result(*args) where that is
    not None (else the driver's answer): the package then raises what it raises for it."""
    import vulkan as vk
    import vulkan._vulkan as binding

    real, target = binding._callApi, getattr(vk.lib, call)

    def fake(fn, *args):
        if fn == target:
            code = result(*args)
            if code is not None:
                return code
        return real(fn, *args)

    monkeypatch.setattr(binding, "_callApi", fake)


class Lib:
    """vk.lib with some functions replaced by fake(real, *args), for the backend's `_lib`."""

    def __init__(self, **fakes):
        self.fakes = fakes

    def __getattr__(self, name):
        import vulkan as vk

        real, fake = getattr(vk.lib, name), self.fakes.get(name)
        return real if fake is None else functools.partial(fake, real)


def held(dev) -> dict:
    """The device's buffers, less its staging buffer (made once, kept)."""
    return {k: b for k, b in dev._live_bufs.items() if b is not dev._staging}


def backend_lib(monkeypatch, **fakes) -> None:
    from vyre_build.runtime.backends.vulkan import queue as vulkan_queue

    monkeypatch.setattr(vulkan_queue, "_lib", Lib(**fakes))


# --- every VkResult a DeviceError naming the call -------------------------------------


@pytest.mark.parametrize(
    "call, code, what, name",
    [
        ("vkCreateBuffer", -1000999999, "buffer creation", "an unknown VkResult"),
        # in the header, but in the package's table with the wrong sign: a bare KeyError
        (
            "vkAllocateMemory",
            -1000072003,
            "allocation of 16 bytes",
            "VK_ERROR_INVALID_EXTERNAL_HANDLE",
        ),
        ("vkAllocateMemory", -2, "allocation of 16 bytes", "VK_ERROR_OUT_OF_DEVICE_MEMORY"),
        ("vkBindBufferMemory", -1, "memory binding", "VK_ERROR_OUT_OF_HOST_MEMORY"),
        ("vkMapMemory", -5, "memory mapping", "VK_ERROR_MEMORY_MAP_FAILED"),
    ],
)
def test_a_failed_call_is_a_device_error_naming_the_call_and_its_result(
    vkdev, monkeypatch, call, code, what, name
):
    if call == "vkMapMemory" and not vkdev.unified:
        pytest.skip("storage buffers are mapped only where device memory is host-visible")
    before = held(vkdev)
    binding_returns(monkeypatch, call, lambda *args: code)
    with pytest.raises(DeviceError) as info:
        vkdev.buffer(4, "f32")
    assert (
        str(info.value) == f"Vulkan {what} failed on {vkdev.name}: {call} returned {name} ({code})"
    )
    monkeypatch.undo()
    assert held(vkdev) == before  # nothing half-made is left
    np.testing.assert_array_equal(vkdev.buffer(np.ones(4, np.float32)).read(), np.ones(4))


@pytest.mark.parametrize(
    "call, code, what",
    [
        ("vkEnumeratePhysicalDevices", -3, "physical device listing"),
        ("vkEnumerateDeviceExtensionProperties", -1000999999, "extension listing"),
    ],
)
def test_a_failed_query_of_the_adapters_is_a_device_error(monkeypatch, call, code, what):
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime.backends.vulkan.device import adapter_profiles
    from vyre_build.runtime.backends.vulkan.results import NAMES

    binding_returns(monkeypatch, call, lambda *args: code)
    with pytest.raises(DeviceError) as info:
        adapter_profiles()
    name = NAMES.get(code, "an unknown VkResult")
    assert str(info.value) == f"Vulkan {what} failed: {call} returned {name} ({code})"


def test_results_are_named_from_the_header_not_the_packages_table():
    import vulkan as vk

    from vyre_build.runtime.backends.vulkan.results import (
        VulkanCallError,
        code_of,
        describe,
        invoke,
    )

    assert vk.VK_ERROR_OUT_OF_POOL_MEMORY == 1000069000  # the package's own constant, wrong
    assert describe("vkAllocateDescriptorSets", -1000069000) == (
        "vkAllocateDescriptorSets returned VK_ERROR_OUT_OF_POOL_MEMORY (-1000069000)"
    )
    assert code_of(vk.VkErrorFragmentedPool()) == -12
    assert code_of(vk.VkTimeout()) == 2
    assert code_of(KeyError("name")) is None

    def vkSomething():
        raise KeyError(-1000069000)

    with pytest.raises(VulkanCallError) as info:
        invoke(vkSomething)
    assert (info.value.call, info.value.code) == ("vkSomething", -1000069000)
    assert str(info.value) == "vkSomething returned VK_ERROR_OUT_OF_POOL_MEMORY (-1000069000)"


# --- descriptor pools -------------------------------------------------------------------


def _pool_key(info) -> int:
    import vulkan as vk

    return int(vk.ffi.cast("uintptr_t", info.descriptorPool))


@pytest.mark.parametrize(
    "code",
    [-1000069000, -12],  # VK_ERROR_OUT_OF_POOL_MEMORY (a KeyError), VK_ERROR_FRAGMENTED_POOL
)
def test_a_descriptor_pool_the_driver_refuses_is_followed_by_a_new_one(vkdev, monkeypatch, code):
    given: dict[int, int] = {}

    def two_sets_a_pool(device, info, sets):  # a driver whose pools hold 2 sets
        key = _pool_key(info)
        if given.get(key, 0) == 2:
            return code
        given[key] = given.get(key, 0) + 1
        return None

    binding_returns(monkeypatch, "vkAllocateDescriptorSets", two_sets_a_pool)
    saxpy = load("saxpy", "vulkan", vkdev)
    with vkdev.batch():  # seven one-off sets, all held until the batch ends
        outs = [
            saxpy(x=np.ones(N, np.float32), y=np.full(N, i, np.float32), a=2.0)["y"]
            for i in range(7)
        ]
        assert len(vkdev._pools) == 4
    for i, y in enumerate(outs):
        np.testing.assert_array_equal(y.read(), np.full(N, 2.0 + i, np.float32))
    assert len(vkdev._pools) == 1  # emptied pools go; one stays for the next sets


def test_pools_are_counted_so_a_driver_that_never_refuses_grows_them_too(vkdev):
    vkdev.pool_sets = 2  # lavapipe never reports a full pool
    saxpy = load("saxpy", "vulkan", vkdev)
    with vkdev.batch():
        outs = [
            saxpy(x=np.ones(N, np.float32), y=np.zeros(N, np.float32), a=1.0 + i)["y"]
            for i in range(25)
        ]
        assert len(vkdev._pools) == 13
    assert [float(y.read()[0]) for y in outs] == [1.0 + i for i in range(25)]
    assert len(vkdev._pools) == 1


def test_a_set_that_a_new_pool_refuses_is_a_device_error(vkdev, monkeypatch):
    saxpy = load("saxpy", "vulkan", vkdev)
    before = held(vkdev)
    binding_returns(monkeypatch, "vkAllocateDescriptorSets", lambda *args: -1000069000)
    with pytest.raises(DeviceError) as info:
        saxpy(x=np.ones(N, np.float32), y=np.zeros(N, np.float32), a=1.0)
    assert str(info.value) == (
        f"Vulkan descriptor set allocation failed on {vkdev.name}: vkAllocateDescriptorSets "
        "returned VK_ERROR_OUT_OF_POOL_MEMORY (-1000069000)"
    )
    monkeypatch.undo()
    assert held(vkdev) == before and vkdev._pools == []  # the temporaries went too
    got = saxpy(x=np.ones(N, np.float32), y=np.zeros(N, np.float32), a=3.0).array("y")
    np.testing.assert_array_equal(got, np.full(N, 3.0, np.float32))


# --- submissions and waits --------------------------------------------------------------


def test_a_failed_submit_waits_for_the_work_in_flight_and_the_device_goes_on(vkdev, monkeypatch):
    saxpy = load("saxpy", "vulkan", vkdev)
    x, y = vkdev.buffer(np.ones(N, np.float32)), vkdev.buffer(N, "f32")
    submits = []

    def second_fails(real, queue, count, infos, fence):
        if count:  # the runtime's own (the wait for what is in flight submits none)
            submits.append(count)
            if len(submits) == 2:
                return -1
        return real(queue, count, infos, fence)

    backend_lib(monkeypatch, vkQueueSubmit=second_fails)
    with pytest.raises(DeviceError) as info:
        with vkdev.batch():
            for _ in range(3):  # chunks of 1, then 2: the second chunk's submit fails
                saxpy(x=x, y=y, a=1.0)
    assert str(info.value) == (
        f"Vulkan queue submit failed on {vkdev.name}: vkQueueSubmit returned "
        "VK_ERROR_OUT_OF_HOST_MEMORY (-1)"
    )
    monkeypatch.undo()
    assert vkdev._sent == 0
    np.testing.assert_array_equal(y.read(), np.ones(N, np.float32))  # the first chunk ran
    saxpy(x=x, y=y, a=1.0)
    np.testing.assert_array_equal(y.read(), np.full(N, 2.0, np.float32))


def test_an_interrupted_wait_is_waited_out_before_anything_is_freed_or_reused(vkdev, monkeypatch):
    iota = load("iota", "vulkan", vkdev)
    interrupts = []

    def interrupted_once(real, *args):  # Ctrl-C while the call waits for the GPU
        if not interrupts:
            interrupts.append(1)
            raise KeyboardInterrupt
        return real(*args)

    backend_lib(monkeypatch, vkGetFenceStatus=interrupted_once)
    import vulkan as vk

    freed, real_free = [], vk.vkFreeMemory

    def free(*args):
        freed.append(vkdev._fence_pending)  # memory freed while the work may run?
        real_free(*args)

    monkeypatch.setattr(vk, "vkFreeMemory", free)
    with pytest.raises(KeyboardInterrupt):
        iota(out=np.zeros(N, np.uint32), start=1, step=1)
    assert interrupts == [1] and freed and not any(freed)
    assert not vkdev._fence_pending and vkdev._sent == 0
    np.testing.assert_array_equal(iota(out=4, start=1, step=1).array("out"), [1, 2, 3, 4])


def _unusable_since(dev, why: str) -> str:
    return f"{dev!r}: the device is unusable since {why}; {UNUSABLE}"


def test_a_lost_device_is_unusable_and_get_device_makes_a_new_one(monkeypatch):
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime import get_device

    dev = get_device("vulkan", pipeline_cache=False)
    iota = load("iota", "vulkan", dev)
    kept = dev.buffer(N, "u32")
    backend_lib(monkeypatch, vkQueueSubmit=lambda real, *args: -4)
    with pytest.raises(DeviceError) as info:
        iota(out=kept, start=1, step=1)
    lost = "vkQueueSubmit returned VK_ERROR_DEVICE_LOST (-4)"
    assert str(info.value) == (
        f"Vulkan queue submit failed on {dev.name}: {lost}; the GPU may still be using the "
        f"device's memory, so the device is unusable now: {UNUSABLE}"
    )
    monkeypatch.undo()
    for use in (
        lambda: iota(out=kept, start=1, step=1),
        lambda: kept.read(),
        lambda: dev.buffer(4, "f32"),
        dev.wait,
    ):
        with pytest.raises(DeviceError) as info:
            use()
        assert str(info.value) == _unusable_since(dev, f"its queue submit failed ({lost})")
    again = get_device("vulkan", pipeline_cache=False)
    assert again is not dev
    np.testing.assert_array_equal(
        load("iota", "vulkan", again)(out=3, start=2, step=2).array("out"), [2, 4, 6]
    )
    dev.close()  # nothing ran: everything is freed
    again.close()


def test_a_wait_that_times_out_leaves_the_device_unusable_with_clear_errors(vkdev, monkeypatch):
    iota = load("iota", "vulkan", vkdev)
    kept = vkdev.buffer(N, "u32")
    vkdev.wait_timeout_s = 0.5
    backend_lib(
        monkeypatch,
        vkGetFenceStatus=lambda real, *args: 1,  # VK_NOT_READY
        vkWaitForFences=lambda real, *args: 2,  # VK_TIMEOUT
    )
    with pytest.raises(DeviceError) as info:
        iota(out=np.zeros(N, np.uint32), start=1, step=1)  # temporaries: kept while it may run
    timeout = "vkWaitForFences returned VK_TIMEOUT (2) after 0.5 s"
    assert str(info.value) == (
        f"Vulkan wait failed on {vkdev.name}: {timeout}; the GPU may still be using the "
        f"device's memory, so the device is unusable now: {UNUSABLE}"
    )
    monkeypatch.undo()
    assert len(vkdev._live_bufs) >= 3  # kept, and the call's output and uniform buffers

    def batch():
        with vkdev.batch():
            pass

    for use in (
        lambda: iota(out=kept, start=1, step=1),
        lambda: kept.read(),
        lambda: kept.write(np.zeros(N, np.uint32)),
        lambda: vkdev.buffer(4, "f32"),
        lambda: vkdev.warm([]),
        vkdev.wait,
        batch,
    ):
        with pytest.raises(DeviceError) as info:
            use()
        assert str(info.value) == _unusable_since(vkdev, f"its wait failed ({timeout})")
    kept.release()  # freed by close(), once the work has ended
    assert not vkdev.save_pipeline_cache()


# --- a real timeout, in a subprocess ------------------------------------------------------

TIMEOUT_SCRIPT = """
import gc, json, sys, time
sys.path.insert(0, {root!r})
sys.path.insert(0, {gpu!r})
import numpy as np
import vulkan as vk
from test_runtime import assemble, load
from test_runtime_faults import SPIN_META, SPIN_SPVASM
from vyre_build.core.errors import DeviceError
from vyre_build.runtime import get_device, load_kernel

dev = get_device("vulkan", pipeline_cache=False)
spin = load_kernel(SPIN_META, spirv=assemble(SPIN_SPVASM), backend="vulkan", device=dev)
iota = load("iota", "vulkan", dev)
kept = dev.buffer(64, "u32")
said = []

def error(use):
    try:
        use()
    except DeviceError as exc:
        said.append(str(exc))
    else:
        said.append("no error")

error(lambda: spin(out=3 * 32768, n=1))  # its temporaries go while the GPU writes them
error(lambda: iota(out=kept, start=1, step=1))
error(lambda: iota(out=np.zeros(64, np.uint32), start=1, step=1))
error(lambda: kept.read())
error(lambda: dev.buffer(4, "u32"))
error(dev.wait)
del kept
gc.collect()
if {wait_it_out!r}:  # close() once the work has ended: everything is freed
    deadline = time.monotonic() + 120
    while vk.lib.vkGetFenceStatus(dev.dev, dev.fence) != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
dev.close()  # while it runs: everything the GPU may touch is left allocated
error(lambda: dev.buffer(4, "u32"))
again = get_device("vulkan", pipeline_cache=False)
again.wait_timeout_s = 120  # lavapipe may still be busy with the old device's work
iota2 = load("iota", "vulkan", again)
for i in range(20):  # heap churn while the old work may still write its buffers
    bufs = [again.buffer(np.zeros(64, np.uint32)) for _ in range(50)]
    assert (iota2(out=np.zeros(4096, np.uint32), start=i, step=1).array("out")[:2] == [i, i + 1]).all()
    error(lambda: spin(out=8192, n=1))
out = iota2(out=3, start=2, step=2).array("out")
print(json.dumps({{"said": said, "new": again is not dev, "out": out.tolist()}}))
"""


@pytest.mark.parametrize("wait_it_out", [False, True], ids=["close-at-once", "close-after"])
def test_a_real_timeout_makes_the_device_unusable_and_nothing_crashes(wait_it_out):
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime import get_device

    if get_device("vulkan").profile.device_type != "CPU":
        pytest.skip("the grid is sized for lavapipe (about 3 s of work there)")
    gpu = os.path.dirname(os.path.abspath(__file__))
    script = TIMEOUT_SCRIPT.format(root=ROOT, gpu=gpu, wait_it_out=wait_it_out)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "VYRE_VK_TIMEOUT": "0.2"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # -6 (SIGABRT) was the heap corruption
    report = json.loads(done.stdout)
    name = get_device("vulkan").name
    timeout = "vkWaitForFences returned VK_TIMEOUT (2) after 0.2 s"
    later = (
        f"<Device vulkan: {name}>: the device is unusable since its wait failed ({timeout}); "
        f"{UNUSABLE}"
    )
    assert report == {
        "said": [
            f"Vulkan wait failed on {name}: {timeout}; the GPU may still be using the device's "
            f"memory, so the device is unusable now: {UNUSABLE}",
            *[later] * 5,
            *[
                f"<Device vulkan: {name} (closed)>: the device was closed; get a new one with "
                "get_device"
            ]
            * 21,
        ],
        "new": True,
        "out": [2, 4, 6],
    }


@pytest.mark.parametrize("value", ["abc", "0", "-1", "inf", "nan"])
def test_vyre_vk_timeout_must_be_a_positive_number(monkeypatch, value):
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime.backends.vulkan.device import VulkanDevice

    monkeypatch.setenv("VYRE_VK_TIMEOUT", value)
    with pytest.raises(DeviceError) as info:
        VulkanDevice(pipeline_cache=False)
    assert str(info.value) == (
        "VYRE_VK_TIMEOUT must be a positive number of seconds (the longest wait for the GPU), "
        f"got {value!r}"
    )
    monkeypatch.setenv("VYRE_VK_TIMEOUT", " 2.5 ")
    dev = VulkanDevice(pipeline_cache=False)
    assert dev.wait_timeout_s == 2.5
    dev.close()
