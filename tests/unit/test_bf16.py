"""bf16, the storage type: conversions written once (core.bfloat16), kernels that load,
store, select and convert it through every layer, and the refusals of what it lacks.

The reference is the judge: a kernel converting f32 to bf16 and back gives exactly
`core.bfloat16`'s round-to-nearest-even bits (ties, NaN, infinities, overflow, subnormals),
which equal ml_dtypes' (torch's and JAX's rounding) where it is installed. Its SPIR-V passes
the pinned spirv-val; it gets no WGSL, and lavapipe (no VK_KHR_shader_bfloat16) refuses it
before the device. Arithmetic, comparisons and math on bf16 are refused at file:line:col.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from spirv_tools import missing, pinned

from vyre_build.compiler import compile_file
from vyre_build.core import bfloat16
from vyre_build.core.errors import DeviceError, KernelError
from vyre_build.runtime import get_device, load_kernel

EDGES = np.array(
    [
        0.0, -0.0, 1.0, -1.5, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20,  # ties, above
        3.3895313892515355e38, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan,  # max, overflow
        1e-40, -1e-45, 1.1754944e-38, 65504.0, 0.1, -7.3e-12,  # subnormals, others
    ],
    np.float32,
)  # fmt: skip
# what they round to, by hand: ties to even, overflow to infinity, NaN quiet
WANT = [0x0000, 0x8000, 0x3F80, 0xBFC0, 0x3F80, 0x3F82, 0x3F81, 0x7F7F, 0x7F80, 0xFF80,
        0x7F80, 0xFF80, 0x7FC0]  # fmt: skip

CONVERT = """
from vyre_build.lang import Buffer, bf16, f32, global_id, kernel, u32

@kernel(workgroup_size=64)
def convert(x: Buffer[f32], y: Buffer[bf16, "w"], back: Buffer[f32, "w"], z: Buffer[bf16],
            picked: Buffer[bf16, "w"], n: u32):
    i = global_id().x
    if i < n:
        b = bf16(x[i])
        y[i] = b
        back[i] = f32(b)
        picked[i] = z[i] if i % 2 == 0 else bf16(i)
"""


@pytest.fixture(scope="module")
def convert(tmp_path_factory):
    root = tmp_path_factory.mktemp("bf16")
    (root / "convert.py").write_text(CONVERT)
    (k,) = compile_file(str(root / "convert.py"), root=str(root))
    return k


def test_the_conversion_rounds_to_nearest_even_with_the_hand_written_bits():
    got = bfloat16.from_f32(EDGES)
    assert [int(v) for v in got[: len(WANT)]] == WANT
    assert [bfloat16.bits_of(float(v)) for v in EDGES] == [int(v) for v in got]
    back = bfloat16.to_f32(got)
    finite = np.isfinite(back)
    assert np.array_equal(bfloat16.from_f32(back[finite]), got[finite])  # exact both ways
    assert bfloat16.value_of(0x3F82) == 1 + 2**-6


def test_the_conversion_is_ml_dtypes_rounding_where_it_is_installed():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(0)
    scale = np.ldexp(np.float32(1), rng.integers(-140, 128, 200_000)).astype(np.float32)
    with np.errstate(over="ignore"):  # some products pass f32's largest: infinities too
        x = rng.standard_normal(200_000).astype(np.float32) * scale
    x = np.concatenate([x.astype(np.float32), EDGES])
    want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(bfloat16.from_f32(x), want)
    assert bfloat16.as_bits(x.astype(ml_dtypes.bfloat16)).dtype == np.uint16
    assert bfloat16.as_bits(x) is None


def test_a_bf16_kernel_gets_spirv_only_and_needs_the_feature(convert, tmp_path):
    assert convert.wgsl is None and convert.meta["skipped"] == {
        "wgsl": "needs bf16 values, a type WGSL does not have: SPIR-V only"
    }
    assert {"bf16", "storage_16bit"} <= set(convert.meta["features"])
    if missing("spirv-val"):
        pytest.skip("spirv-val (the test extra's pinned tool) not installed")
    path = tmp_path / "convert.spv"
    path.write_bytes(convert.spirv)
    proc = subprocess.run(
        [pinned("spirv-val"), "--target-env", "vulkan1.1", str(path)], capture_output=True
    )
    assert proc.returncode == 0, proc.stderr


def test_the_reference_runs_it_with_the_conversion_s_bits(convert):
    dev = get_device("cpu")
    n = len(EDGES)
    z = bfloat16.from_f32(np.arange(n, dtype=np.float32) * 0.5)
    out = load_kernel(convert.meta, device=dev, kdesc=convert.kdesc)(
        x=EDGES, y=n, back=n, z=z, picked=n, n=n, grid=(n,)
    )
    y = out.array("y")
    assert y.dtype == np.uint16 and np.array_equal(y, bfloat16.from_f32(EDGES))
    assert np.array_equal(out.array("back").view(np.uint32), bfloat16.to_f32(y).view(np.uint32))
    i = np.arange(n)
    want = np.where(i % 2 == 0, z, bfloat16.from_f32(i.astype(np.float32)))
    assert np.array_equal(out.array("picked"), want)


def test_ml_dtypes_arrays_are_taken_as_their_bits(convert):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    dev = get_device("cpu")
    n = 4
    z = np.array([1.5, -2.0, 3.0, 0.25], ml_dtypes.bfloat16)
    out = load_kernel(convert.meta, device=dev, kdesc=convert.kdesc)(
        x=np.ones(n, np.float32), y=n, back=n, z=z, picked=n, n=n, grid=(n,)
    )
    assert out.array("picked")[0] == z.view(np.uint16)[0]
    assert np.array_equal(dev.buffer(z).read(), z.view(np.uint16))


def test_a_device_without_bf16_refuses_it_before_dispatch(convert):
    dev = get_device("vulkan")
    if "bf16" in dev.profile.features:
        pytest.skip(f"{dev.name} has bf16 (the device tier runs the kernel there)")
    with pytest.raises(DeviceError, match="Kernel 'convert' needs bf16, which the vulkan device"):
        load_kernel(convert.meta, device=dev, spirv=convert.spirv)


def bad(tmp_path, body: str, sig: str = "") -> KernelError:
    src = (
        "from vyre_build.lang import *\n\n@kernel(workgroup_size=64)\n"
        "def k(x: Buffer[bf16], y: Buffer[bf16, 'w'], f: Buffer[f32, 'w'], u: Buffer[u32, 'w']"
        f"{sig}):\n    i = global_id().x\n    a = x[i]\n    {body}\n"
    )
    path = tmp_path / "k.py"
    path.write_text(src)
    with pytest.raises(KernelError) as info:
        compile_file(str(path), root=str(tmp_path), options={"debug": True})
    return info.value


NO_ARITH = "bf16 has no arithmetic, comparisons or math: it is a storage type"


@pytest.mark.parametrize(
    "body, col, message",
    [
        ("y[i] = a + a", 12, NO_ARITH),
        ("y[i] = a * 2.0", 12, NO_ARITH),
        ("y[i] = -a", 12, NO_ARITH),
        ("u[i] = u32(a < a)", 16, NO_ARITH),
        ("y[i] = max(a, a)", 12, NO_ARITH),
        ("y[i] = abs(a)", 12, NO_ARITH),
        ("f[i] = sqrt(a)", 17, "sqrt() needs an f32 or f16 (or a vector of them), got bf16"),
        ("f[i] = subgroup_add(a)", 25, "subgroup_add() needs an i32, u32 or f32"),
        ("f[i] = f32(bitcast(u32, a))", 29, "cannot bitcast a bf16"),
        ("print(a)", 11, "print and assert report i32, u32, f32 and bool values, not bf16"),
        ("if a:\n        f[i] = 1.0", 8, "condition must be bool, got bf16"),
    ],
)
def test_what_bf16_lacks_is_refused_at_its_column(tmp_path, body, col, message):
    err = bad(tmp_path, body)
    assert (err.line, err.col) == (7, col) and err.message.startswith(message), str(err)
    assert err.fix, str(err)


def test_a_bf16_scalar_parameter_is_refused_with_the_f32_fix(tmp_path):
    err = bad(tmp_path, "y[i] = s", sig=", s: bf16")
    assert err.message == "scalar parameter 's' cannot be bf16 (uniform blocks hold 32-bit values)"
    assert err.fix == "take an f32 and convert it: s: f32 ... bf16(s)"


def test_conversions_of_other_types_go_through_f32(tmp_path):
    """i32, u32, f16 and bool convert to bf16 (and back) through f32, as the op table has
    bf16 convert to and from f32 only; the reference gives f32's rounding of each."""
    src = (
        "from vyre_build.lang import *\n\n@kernel(workgroup_size=64)\n"
        "def k(x: Buffer[i32], y: Buffer[bf16, 'w'], u: Buffer[i32, 'w'], n: u32):\n"
        "    i = global_id().x\n    if i < n:\n        b = bf16(x[i])\n        y[i] = b\n"
        "        u[i] = i32(b) + i32(bf16(f16(0.5)) if x[i] > 0 else bf16(True))\n"
    )
    (tmp_path / "k.py").write_text(src)
    (k,) = compile_file(str(tmp_path / "k.py"), root=str(tmp_path))
    x = np.array([1, -257, 300, 16777217, -5], np.int32)
    out = load_kernel(k.meta, device=get_device("cpu"), kdesc=k.kdesc)(
        x=x, y=5, u=5, n=5, grid=(5,)
    )
    want = bfloat16.from_f32(x.astype(np.float32))
    assert np.array_equal(out.array("y"), want)
    back = bfloat16.to_f32(want).astype(np.int32) + np.where(x > 0, 0, 1)
    assert np.array_equal(out.array("u"), back)


def test_cooperative_matrices_of_bf16_accumulate_in_f32(tmp_path):
    body = (
        "m = coop_load_a(x, 0, 16, 16, 16)\n    n = coop_load_b(x, 0, 16, 16, 16)\n"
        "    s = coop_fill(f16, 16, 16, 0.0)\n    s = coop_mma(m, n, s)"
    )
    err = bad(tmp_path, body)
    assert err.message.startswith("coop_mma(a, b, c) cannot multiply matrix_a.bf16.16x16")
    assert err.fix == "bf16 products accumulate in f32: coop_fill(f32, ...) for the sum"


def test_the_library_kernel_names_its_feature_and_matrix_shape():
    kernels = os.path.join(os.path.dirname(__file__), "..", "..", "kernels")
    for k in compile_file(os.path.join(kernels, "lib_mm_bf16.py"), root=kernels):
        assert "cooperative_matrix.bf16.f32.16x16x16" in k.meta["features"]
        assert "bf16" in k.meta["features"] and k.wgsl is None


def test_bf16_vectors_load_store_and_convert_through_f32_vectors(tmp_path):
    """vec4bf: the 8-byte loads of lib_mm_bf16; conversions to and from vec4f (others go
    through vec4f), components, selects; arithmetic on them is refused like bf16's."""
    src = (
        "from vyre_build.lang import *\n\n@kernel(workgroup_size=64)\n"
        "def k(x: Buffer[vec4bf], y: Buffer[vec4bf, 'w'], f: Buffer[vec4f, 'w'],\n"
        "      u: Buffer[vec4i, 'w'], n: u32):\n"
        "    i = global_id().x\n    if i < n:\n        v = x[i]\n"
        "        y[i] = v if i % 2 == 0 else vec4bf(bf16(1.5), v.y, bf16(f32(v.z) * 2.0), v.x)\n"
        "        f[i] = vec4f(v)\n        u[i] = vec4i(v)\n"
    )
    (tmp_path / "k.py").write_text(src)
    (k,) = compile_file(str(tmp_path / "k.py"), root=str(tmp_path))
    assert k.wgsl is None and "bf16" in k.meta["features"]
    vals = np.array([[1.0, -2.5, 3.0, 40.0], [0.5, 7.0, -1.25, 9.0]], np.float32)
    x = bfloat16.from_f32(vals).reshape(2, 4)
    out = load_kernel(k.meta, device=get_device("cpu"), kdesc=k.kdesc)(
        x=x, y=2, f=2, u=2, n=2, grid=(2,)
    )
    odd = np.array([1.5, 7.0, -2.5, 0.5], np.float32)
    assert np.array_equal(out.array("y"), np.stack([x[0], bfloat16.from_f32(odd)]))
    assert np.array_equal(out.array("f"), vals)
    assert np.array_equal(out.array("u"), vals.astype(np.int32))
    err = bad(tmp_path, "f[i] = f32((vec4bf(a) + vec4bf(a)).x)")
    assert err.message == "vec4bf" + NO_ARITH[4:], str(err)
    assert err.fix == "compute in f32 and convert back: vec4bf(vec4f(x) * 2.0)"
