"""Debug builds dispatched on every backend (wgpu and Vulkan on lavapipe, and the cpu one):
print, assert and out-of-bounds reports come back from the debug buffer with file:line and
the same text everywhere; a full buffer drops and counts; a release build of the same
kernel is silent; every library kernel's debug WGSL passes naga."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelAssertion
from vyre_build.runtime import debug as rdebug
from vyre_build.runtime import load_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAD = "from vyre_build.lang import *\n\n\n"
OOB = HEAD + (
    "@kernel(workgroup_size=64)\n"
    "def shift(x: Buffer[f32], out: Buffer[f32, 'w']):\n"
    "    i = global_id().x\n"
    "    if i < len(out):\n"
    "        out[i] = x[i + 1]\n"
)
PRINTS = HEAD + (
    "@kernel(workgroup_size=4)\n"
    "def show(out: Buffer[u32, 'w'], n: u32):\n"
    "    i = global_id().x\n"
    "    if i < n:\n"
    '        print("i =", i, "half", f32(i) * 0.5, i % 2 == 0, -i32(i))\n'
    "        out[i] = i\n"
)
ASSERTS = HEAD + (
    "@kernel(workgroup_size=8)\n"
    "def positive(x: Buffer[i32], out: Buffer[i32, 'w']):\n"
    "    i = global_id().x\n"
    "    if i < len(x):\n"
    "        v = x[i]\n"
    '        assert v >= 0, "x must be non-negative"\n'
    "        out[i] = v\n"
)
MEMORY = HEAD + (
    "@kernel(workgroup_size=4)\n"
    "def gather(idx: Buffer[u32], hist: Buffer[u32, 'rw'], out: Buffer[u32, 'w']):\n"
    "    tile = shared(u32, 4)\n"
    "    acc = local_array(u32, 2)\n"
    "    i = global_id().x\n"
    "    tile[local_id().x] = i\n"
    "    barrier()\n"
    "    if i < len(idx):\n"
    "        acc[idx[i] % 2] = tile[idx[i]]\n"
    "        atomic_add(hist, idx[i], 1)\n"
    "        out[i] = acc[0]\n"
)

LOOPS = HEAD + (
    "@kernel(workgroup_size=(2, 2), grid=(2, 2))\n"
    "def v(x: Buffer[vec4f], out: Buffer[f32, 'w']):\n"
    "    i = global_id().x\n"
    "    j = global_id().y\n"
    "    for k in range(j + 1):\n"
    '        print("k", k, "at", i, j)\n'
    "    a = x[i * 2 + j + 1]\n"
    "    out[i * 2 + j] = a.x + a.w\n"
)


def kernel_of(tmp_path, device, text: str, debug: bool = True, name: str = "x.py"):
    path = tmp_path / name
    path.write_text(text)
    (ck,) = compile_file(str(path), options={"debug": debug})
    code = {"wgpu": {"wgsl": ck.wgsl}, "vulkan": {"spirv": ck.spirv}, "cpu": {"kdesc": ck.kdesc}}
    return load_kernel(ck.meta, device=device, **code[device.backend])


def test_an_out_of_bounds_read_is_reported_with_file_and_line(tmp_path, device):
    k = kernel_of(tmp_path, device, OOB)
    x = np.arange(100, dtype=np.float32)
    with pytest.raises(KernelAssertion) as exc:
        k(x=x, out=100)
    assert str(exc.value) == (
        "Kernel 'shift' (x.py:8:18): out-of-bounds read of 'x': index 100, length 100 "
        "(global_id (99, 0, 0))"
    )
    assert exc.value.reports == (str(exc.value),) and exc.value.dropped == 0


def test_a_release_build_of_the_same_kernel_reads_zero_silently(tmp_path, device, capsys):
    k = kernel_of(tmp_path, device, OOB, debug=False)
    out = k(x=np.arange(100, dtype=np.float32), out=100).array("out", np.float32)
    assert out[99] == 0.0 and out[0] == 1.0
    k = kernel_of(tmp_path, device, PRINTS, debug=False, name="p.py")
    k(out=4, n=3)
    assert capsys.readouterr() == ("", "")


def test_print_prints_each_invocation_with_its_id(tmp_path, device, capsys):
    k = kernel_of(tmp_path, device, PRINTS)
    out = k(out=4, n=3).array("out", np.uint32)
    assert list(out[:3]) == [0, 1, 2]
    assert capsys.readouterr().out == (
        "x.py:8:9 [show (0, 0, 0)] i = 0 half 0.0 True 0\n"
        "x.py:8:9 [show (1, 0, 0)] i = 1 half 0.5 False -1\n"
        "x.py:8:9 [show (2, 0, 0)] i = 2 half 1.0 True -2\n"
    )


def test_a_failed_assert_raises_with_its_values(tmp_path, device):
    k = kernel_of(tmp_path, device, ASSERTS)
    with pytest.raises(KernelAssertion) as exc:
        k(x=np.array([1, 2, -3, 4, -5], np.int32), out=5)
    assert str(exc.value) == (
        "Kernel 'positive' (x.py:9:9): assertion failed: v >= 0: x must be non-negative "
        "(v = -3; global_id (2, 0, 0))\n"
        "1 more report in this dispatch:\n"
        "  Kernel 'positive' (x.py:9:9): assertion failed: v >= 0: x must be non-negative "
        "(v = -5; global_id (4, 0, 0))"
    )
    k(x=np.array([1, 2, 3], np.int32), out=3)  # nothing to report: no error


def test_shared_local_and_atomic_accesses_are_checked(tmp_path, device):
    k = kernel_of(tmp_path, device, MEMORY)
    with pytest.raises(KernelAssertion) as exc:
        k(idx=np.array([0, 5, 2, 3], np.uint32), hist=np.zeros(4, np.uint32), out=4)
    assert str(exc.value) == (
        "Kernel 'gather' (x.py:12:27): out-of-bounds read of 'tile': index 5, length 4 "
        "(global_id (1, 0, 0))\n"
        "1 more report in this dispatch:\n"
        "  Kernel 'gather' (x.py:13:9): out-of-bounds atomic of 'hist': index 5, length 4 "
        "(global_id (1, 0, 0))"
    )


def test_prints_in_a_loop_of_a_2d_grid_and_a_vector_read(tmp_path, device, capsys):
    k = kernel_of(tmp_path, device, LOOPS)
    with pytest.raises(KernelAssertion) as exc:
        k(x=np.ones((4, 4), np.float32), out=4)
    assert str(exc.value) == (
        "Kernel 'v' (x.py:10:9): out-of-bounds read of 'x': index 4, length 4 (global_id (1, 1, 0))"
    )
    assert capsys.readouterr().out == (
        "x.py:9:9 [v (0, 0, 0)] k 0 at 0 0\n"
        "x.py:9:9 [v (1, 0, 0)] k 0 at 1 0\n"
        "x.py:9:9 [v (0, 1, 0)] k 0 at 0 1\n"
        "x.py:9:9 [v (0, 1, 0)] k 1 at 0 1\n"
        "x.py:9:9 [v (1, 1, 0)] k 0 at 1 1\n"
        "x.py:9:9 [v (1, 1, 0)] k 1 at 1 1\n"
    )


def test_a_debug_kernel_in_a_batch_reports_at_its_call(tmp_path, device):
    k = kernel_of(tmp_path, device, OOB)
    x = device.buffer(np.arange(100, dtype=np.float32))
    out = device.buffer(100, "f32")
    with device.batch():
        with pytest.raises(KernelAssertion, match=r"index 100, length 100"):
            k(x=x, out=out)
        k(x=device.buffer(np.arange(101, dtype=np.float32)), out=out)  # in bounds: silent
    assert out.read().view(np.float32)[98] == 99.0


def test_a_full_debug_buffer_drops_and_counts_and_stays_in_bounds(
    tmp_path, device, monkeypatch, capsys
):
    monkeypatch.setattr(rdebug, "DEBUG_WORDS", 2 + 5 * 3 + 4)  # three records and a bit
    k = kernel_of(tmp_path, device, ASSERTS)
    with pytest.raises(KernelAssertion) as exc:
        k(x=np.full(10, -1, np.int32), out=10)
    assert exc.value.dropped == 7 and len(exc.value.reports) == 3  # 10 failures, 3 kept
    assert str(exc.value).endswith("(7 more were dropped: the debug buffer was full)")
    assert capsys.readouterr().err == (
        "vyre: kernel 'positive': the debug buffer was full: 7 reports dropped\n"
    )


@pytest.mark.gpu
def test_every_library_kernel_debug_wgsl_passes_naga(wgpu_device):
    kernels = os.path.join(ROOT, "kernels")
    count = 0
    for path in sorted(glob.glob(os.path.join(kernels, "*.py"))):
        for ck in compile_file(path, root=kernels, targets=("wgsl",), options={"debug": True}):
            if ck.wgsl is not None:
                wgpu_device.create_shader_module(code=ck.wgsl)
                count += 1
    # lib_matmul_f16, lib_mm_f16 (2 variants) and the memory-ordered single passes have no WGSL
    assert count == 73
