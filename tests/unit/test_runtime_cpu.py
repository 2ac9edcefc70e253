"""The cpu backend's own surface (no driver: it runs the reference): its profile and
subgroup size, get_device's and the devices command's view of it, f16 buffers and
subgroup operations at several subgroup sizes, and the base entry it always dispatches.
What every backend shares runs on it through the `backend` fixture (tests/gpu/)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
from descriptors import Kernel

from vyre_build.descriptor import encode
from vyre_build.core.errors import DeviceError, DispatchError
from vyre_build.core.features import FEATURES
from vyre_build.runtime import get_device, list_adapters, load_kernel, open_bundle
from vyre_build.runtime.backends.cpu import CpuDevice

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import test_runtime as shaders  # noqa: E402
from test_runtime_device import HALF_META  # noqa: E402  (x, out: f16; sums: u32)


def half_kdesc() -> bytes:
    """HALF_META's kernel: out[i] = x[i] * 2 in f16, sums[i] = the subgroup sum of 1."""
    k = Kernel("half", (64, 1, 1))
    x, out = k.buffer("F16", "ReadOnly", "x"), k.buffer("F16", "WriteOnly", "out")
    sums = k.buffer("U32", "WriteOnly", "sums")
    b = k.body
    i = b.gid(0)
    total = b.op("SubgroupAdd", b.u32(1))
    then = b.if_(b.bin("Lt", i, b.length(out)))
    then.store(out, i, then.bin("Mul", then.load(x, i), then.cast("F16", then.f32(2.0))))
    b.if_(b.bin("Lt", i, b.length(sums))).store(sums, i, total)
    return encode(k.build())


def test_profile_offers_every_subgroup_class_16_bit_types_and_every_compiled_matrix():
    p = CpuDevice().profile
    assert (p.backend, p.adapter, p.device_type) == ("cpu", "vyre reference (CPU)", "cpu")
    shapes = {m.feature for m in p.cooperative_matrices}
    assert p.features == FEATURES | shapes  # every subgroup class, f16, storage_16bit
    # the reference runs every shape the compiler makes: 27 shapes of f16 to f16 or f32, and of bf16 to f32 (bf16 products sum in f32 only)
    assert len(shapes) == 81 and "cooperative_matrix.f16.f32.16x8x16" in shapes
    assert "cooperative_matrix.bf16.f32.16x16x16" in shapes
    assert not any(s.startswith("cooperative_matrix.bf16.f16") for s in shapes)
    assert p.bf16  # bf16 values as bit patterns (core.bfloat16)
    assert (p.subgroup_size, p.subgroup_size_range) == (32, (32, 32))
    assert p.max_workgroup_count == (2**32 - 1,) * 3  # a u32 grid never needs splitting
    assert list_adapters("cpu") == ["vyre reference (CPU)"]


@pytest.mark.parametrize("size", [1, 8, 32, 128])
def test_f16_buffers_and_subgroups_of_the_chosen_size(size):
    kern = load_kernel(HALF_META, kdesc=half_kdesc(), device=CpuDevice(subgroup_size=size))
    x = np.arange(7, dtype=np.float16) / 4  # an odd count: 14 bytes
    r = kern(x=x, out=7, sums=64)
    np.testing.assert_array_equal(r.array("out", np.float16), x * 2)
    # A subgroup never spans workgroups: 128 lanes asked, 64 in the workgroup.
    np.testing.assert_array_equal(r.array("sums", np.uint32), np.full(64, min(size, 64)))
    buf = kern.device.buffer(x)
    assert buf.dtype == "f16" and buf.nbytes == 14
    np.testing.assert_array_equal(kern(x=buf, out=7, sums=1).array("out"), x * 2)


def test_subgroup_size_from_the_argument_or_the_environment(monkeypatch):
    assert get_device("cpu", subgroup_size=8).profile.subgroup_size == 8
    assert get_device("cpu", subgroup_size=8) is get_device("cpu", subgroup_size=8)
    monkeypatch.setenv("VYRE_CPU_SUBGROUP_SIZE", "64")
    assert get_device("cpu").subgroup_size == 64
    assert get_device("cpu", subgroup_size=64) is get_device("cpu")  # the same size
    monkeypatch.setenv("VYRE_CPU_SUBGROUP_SIZE", "16")
    assert get_device("cpu").subgroup_size == 16  # a changed variable is another device


@pytest.mark.parametrize(
    "given, env, message",
    [
        (48, None, "subgroup_size must be a power of two from 1 to 128, got 48"),
        (256, None, "subgroup_size must be a power of two from 1 to 128, got 256"),
        (True, None, "subgroup_size must be a power of two from 1 to 128, got True"),
        (None, "0", "VYRE_CPU_SUBGROUP_SIZE must be a power of two from 1 to 128, got 0"),
        (None, "wide", "VYRE_CPU_SUBGROUP_SIZE must be a power of two from 1 to 128, got 'wide'"),
    ],
)
def test_a_bad_subgroup_size_is_refused(monkeypatch, given, env, message):
    if env is not None:
        monkeypatch.setenv("VYRE_CPU_SUBGROUP_SIZE", env)
    with pytest.raises(DeviceError) as info:
        get_device("cpu", subgroup_size=given)
    assert str(info.value) == message


def test_subgroup_size_is_refused_for_a_gpu_backend_before_any_device():
    with pytest.raises(DeviceError) as info:
        get_device("vulkan", subgroup_size=8)
    assert str(info.value) == (
        "subgroup_size= is for the cpu backend; a vulkan device's subgroup size is its driver's"
    )


def test_adapter_choice():
    assert get_device("cpu", adapter="REFERENCE").name == "vyre reference (CPU)"
    with pytest.raises(DeviceError) as info:
        get_device("cpu", adapter=1)
    assert str(info.value) == (
        "cpu adapter index 1 is out of range; there are 1: ['vyre reference (CPU)']"
    )


def test_vyre_backend_cpu_opens_bundles_on_the_reference(monkeypatch, tmp_path):
    from vyre_build.bundle import write_bundle

    path = tmp_path / "b.vyrebundle"
    entries = [{"meta": shaders.IOTA_META, "artifacts": {".kdesc": shaders.kdesc("iota")}}]
    write_bundle(path, entries)
    monkeypatch.setenv("VYRE_BACKEND", "cpu")
    with open_bundle(path) as bundle:
        assert bundle.device.backend == "cpu"
        got = bundle["iota"](out=5, start=2**32 - 2, step=3).array("out", np.uint32)
    np.testing.assert_array_equal(got, (2**32 - 2 + 3 * np.arange(5, dtype=np.uint64)) % 2**32)


def test_the_base_entry_runs_where_a_gpu_would_take_the_coarse_one(tmp_path):
    from vyre_build.bundle import write_bundle
    from vyre_build.compiler import compile_file

    (k,) = compile_file(os.path.join(ROOT, "kernels", "saxpy.py"), targets=("kdesc",))
    assert k.meta["coarse"] == {"entry": "main_x4", "factor": 4}
    path = tmp_path / "s.vyrebundle"
    write_bundle(path, [{"meta": k.meta, "artifacts": {".kdesc": k.kdesc}}])
    device = CpuDevice()
    jobs = []
    original = device._submit
    device._submit = lambda js, final: (jobs.extend(js), original(js, final))
    with open_bundle(path, device=device) as bundle:
        assert bundle.warm().created == 1  # "main" only: no coarse pipeline
        x = np.arange(4096, dtype=np.float32)
        got = bundle["saxpy"](x=x, y=np.ones(4096, np.float32), a=3.0).array("y")
    np.testing.assert_array_equal(got, 3 * x + 1)
    assert [j[2] for j in jobs] == [(16, 1, 1)]  # 4096 / 256, not / 1024
    assert [key[3] for key in device._pipelines] == ["main"]


def test_devices_command_lists_the_cpu_backend(capsys):
    from vyre_build.cli import main

    assert main(["devices", "--backend", "cpu"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("cpu adapter 0:\n  adapter      vyre reference (CPU)\n")
    assert "  subgroups    size 32 (range 32..32): basic, vote, arithmetic, ballot, " in text
    assert main(["devices", "--backend", "cpu", "--json"]) == 0
    (cpu,) = json.loads(capsys.readouterr().out)["backends"]["cpu"]["adapters"]
    assert cpu["subgroup_size"] == 32 and cpu["f16"] is True and cpu["backend"] == "cpu"


def test_a_closed_device_refuses_use():
    device = CpuDevice()
    buf = device.buffer(np.ones(4, np.float32))
    device.close()
    with pytest.raises(DeviceError, match="the device was closed"):
        buf.read()


# --- the step budget (issue 26): a watchdog for kernels that may never end ---------------

FOREVER = """
from vyre_build.lang import *

@kernel(workgroup_size=64, grid="out")
def forever(out: Buffer[u32, "rw"]):
    i = global_id().x
    n: u32 = 0
    while True:
        n += 1
        if i < len(out):
            out[i] = n

@kernel(workgroup_size=64, grid="out")
def ten_trips(out: Buffer[u32, "rw"]):
    i = global_id().x
    for j in range(10):
        if i < len(out):
            out[i] += u32(j)
"""


def budget_message(kernel: str, steps: int) -> str:
    return (
        f"Kernel {kernel!r}: the dispatch ran past its budget of {steps} steps (a step is one "
        "loop iteration of one invocation): it may never end; raise the budget with "
        'get_device("cpu", max_steps=N) or VYRE_CPU_MAX_STEPS=N'
    )


@pytest.fixture(scope="module")
def forever(tmp_path_factory):
    from vyre_build.compiler import compile_file

    path = tmp_path_factory.mktemp("forever") / "forever.py"
    path.write_text(FOREVER)
    return {k.meta["id"]: k for k in compile_file(str(path), targets=("kdesc",))}


def test_a_while_true_kernel_ends_at_the_step_budget_and_writes_nothing(forever):
    k = forever["forever"]
    device = get_device("cpu", max_steps=10_000)
    assert device.max_steps == 10_000 and get_device("cpu").max_steps is None
    kern = load_kernel(k.meta, kdesc=k.kdesc, device=device)
    out = device.buffer(np.full(100, 7, np.uint32))
    with pytest.raises(DispatchError) as info:
        kern(out=out)
    assert str(info.value) == budget_message("forever", 10_000)
    np.testing.assert_array_equal(out.read(), np.full(100, 7, np.uint32))


def test_a_step_is_one_loop_iteration_of_one_invocation(forever):
    # 2 workgroups of 64 invocations, 10 trips each: 1,280 steps.
    k = forever["ten_trips"]
    x = np.arange(100, dtype=np.uint32)
    fits = load_kernel(k.meta, kdesc=k.kdesc, device=get_device("cpu", max_steps=1280))
    want = x + 45  # the call writes its result into x too
    np.testing.assert_array_equal(fits(out=x)["out"], want)
    short = load_kernel(k.meta, kdesc=k.kdesc, device=get_device("cpu", max_steps=1279))
    with pytest.raises(DispatchError) as info:
        short(out=x)
    assert str(info.value) == budget_message("ten_trips", 1279)


CRAFTED_META = {
    "name": "crafted",
    "variant": None,
    "id": "crafted",
    "workgroup_size": [64, 1, 1],
    "grid": ["out"],
    "bindings": [{"name": "out", "binding": 0, "kind": "buffer", "dtype": "u32", "access": "rw"}],
    "uniform": None,
}


def crafted_kdesc(kind: str) -> bytes:
    """A descriptor no frontend would make: a loop that never breaks, with a continuing
    block ("loop"), or for-loops over the whole u32 range nested three deep ("for")."""
    k = Kernel("crafted", (64, 1, 1))
    out = k.buffer("U32", "ReadWrite", "out")
    b = k.body
    i = b.gid(0)
    if kind == "loop":
        body, cont = b.loop(continuing=True)
        body.store(out, i, i)
        cont.store(out, i, cont.bin("Add", cont.load(out, i), cont.u32(1)))
    else:
        inner = b.for_("a", b.u32(0), b.u32(2**32 - 1))
        inner = inner.for_("b", inner.u32(0), inner.u32(2**32 - 1))
        inner = inner.for_("c", inner.u32(0), inner.u32(2**32 - 1))
        inner.store(out, i, inner.loop_index("c"))
    return encode(k.build())


@pytest.mark.parametrize("kind", ["loop", "for"])
def test_a_crafted_endless_descriptor_ends_at_the_budget_from_the_environment(monkeypatch, kind):
    monkeypatch.setenv("VYRE_CPU_MAX_STEPS", "100000")
    device = get_device("cpu")
    assert device.max_steps == 100_000
    kern = load_kernel(CRAFTED_META, kdesc=crafted_kdesc(kind), device=device)
    with pytest.raises(DispatchError) as info:
        kern(out=np.zeros(64, np.uint32))
    assert str(info.value) == budget_message("crafted", 100_000)


@pytest.mark.parametrize(
    "given, env, message",
    [
        (
            0,
            None,
            "max_steps must be a positive whole number of steps (loop iterations summed "
            "over a dispatch's invocations), got 0",
        ),
        (
            True,
            None,
            "max_steps must be a positive whole number of steps (loop iterations "
            "summed over a dispatch's invocations), got True",
        ),
        (
            1e6,
            None,
            "max_steps must be a positive whole number of steps (loop iterations "
            "summed over a dispatch's invocations), got 1000000.0",
        ),
        (
            None,
            "lots",
            "VYRE_CPU_MAX_STEPS must be a positive whole number of steps (loop "
            "iterations summed over a dispatch's invocations), got 'lots'",
        ),
        (
            None,
            "0",
            "VYRE_CPU_MAX_STEPS must be a positive whole number of steps (loop "
            "iterations summed over a dispatch's invocations), got 0",
        ),
        (
            None,
            "-5",
            "VYRE_CPU_MAX_STEPS must be a positive whole number of steps (loop "
            "iterations summed over a dispatch's invocations), got '-5'",
        ),
    ],
)
def test_a_bad_step_budget_is_refused(monkeypatch, given, env, message):
    if env is not None:
        monkeypatch.setenv("VYRE_CPU_MAX_STEPS", env)
    with pytest.raises(DeviceError) as info:
        get_device("cpu", max_steps=given)
    assert str(info.value) == message


def test_max_steps_is_refused_for_a_gpu_backend_before_any_device():
    with pytest.raises(DeviceError) as info:
        get_device("vulkan", max_steps=10)
    assert (
        str(info.value) == "max_steps= is for the cpu backend; a vulkan device has no step budget"
    )


def test_the_reference_refuses_a_bad_budget():
    from vyre_build import reference
    from vyre_build.descriptor import decode

    with pytest.raises(DispatchError) as info:
        reference.execute(
            decode(crafted_kdesc("loop")),
            {"out": np.zeros(1, np.uint32)},
            {},
            (1, 1, 1),
            max_steps=0,
        )
    assert str(info.value) == "max_steps must be a positive int or None, got 0"


def test_a_result_name_the_call_has_not_names_the_results():
    from vyre_build.compiler import compile_file
    from vyre_build.core.errors import DispatchError
    from vyre_build.runtime import ResultNotFound, load_kernel

    (k,) = compile_file(os.path.join(ROOT, "kernels", "saxpy.py"), targets=("kdesc",))
    saxpy = load_kernel(k.meta, kdesc=k.kdesc, backend="cpu")
    r = saxpy(x=np.arange(4, dtype=np.float32), y=np.ones(4, np.float32), a=2.0)
    cases = {
        "nope": "Kernel 'saxpy': no result 'nope'; its results are 'y'",
        "yy": "Kernel 'saxpy': no result 'yy' (did you mean 'y'?); its results are 'y'",
        "x": "Kernel 'saxpy': no result 'x' ('x' is read-only: only buffers the kernel "
        "writes are results); its results are 'y'",
        "a": "Kernel 'saxpy': no result 'a' ('a' is a scalar argument: only written buffers "
        "are results); its results are 'y'",
    }
    for name, message in cases.items():
        for get in (r.array, r.buffer, r.__getitem__):
            with pytest.raises(ResultNotFound) as info:
                get(name)
            assert str(info.value) == message
            assert isinstance(info.value, DispatchError) and isinstance(info.value, KeyError)
    assert r.array("y").tolist() == [1.0, 3.0, 5.0, 7.0] and "nope" not in r
    assert r.get("nope") is None


def test_the_cpu_backend_has_no_gpu_time():
    from vyre_build.compiler import compile_file

    (k,) = compile_file(os.path.join(ROOT, "kernels", "saxpy.py"), targets=("kdesc",))
    device = CpuDevice()
    saxpy = load_kernel(k.meta, kdesc=k.kdesc, device=device)
    device.timing = True
    r = saxpy(x=np.ones(4, np.float32), y=np.ones(4, np.float32), a=2.0)
    assert r.array("y").tolist() == [3.0] * 4 and device.gpu_seconds is None
