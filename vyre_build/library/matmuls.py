"""library.matmul, matmul_f16 and matmul_bf16 (re-exported by vyre_build.library, whose
docstring says what every function shares): the fp32 matmul on the register file
(kernels/lib_matmul.py, its tuned candidates) and the tensor-core matmuls
(kernels/lib_mm_f16.py, lib_mm_bf16.py, lib_matmul_f16.py), with their size checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, overload

from vyre_build.runtime.device import DeviceBuffer
from vyre_build.runtime.kernel import Kernel
from vyre_build.runtime.plan import host_array
from vyre_build.library.bundle import split_kernels
from vyre_build.library.call import MISS, Array, Call, Out, fail, kind_of, shape_of
from vyre_build.library.picks import f16_runs, matmul_runs

WG = 256  # the workgroup size of every library kernel
TILE = 128  # lib_matmul: the side of the block of C one workgroup computes


# -- matmul --------------------------------------------------------------------------------


def _matmul_sizes(fn: str, a: Array, b: Array, kind: str) -> tuple[int, int, int]:
    # (M, K, N) of A @ B: both 2-D of `kind`, A's columns equal to B's rows.
    for name, value in (("a", a), ("b", b)):
        kind_of(fn, name, value, (kind,))
        if len(shape_of(value)) != 2:
            raise fail(fn, f"{name} must be 2-D, got shape {shape_of(value)}")
    (m, k), (k2, n) = shape_of(a), shape_of(b)
    if k != k2:
        raise fail(
            fn,
            f"a is {(m, k)} and b is {(k2, n)}: a's columns ({k}) must equal b's rows ({k2})",
        )
    return m, k, n


@overload
def matmul(kernels: Mapping[str, Kernel], a: Array, b: Array, *, out: Out = None) -> Any: ...


@overload
def matmul(a: Array, b: Array, *, out: Out = None) -> Any: ...


def matmul(*args: Any, **kwargs: Any) -> Any:
    """C = A @ B in f32 (fp32 FMAs, no TF32), row-major, any sizes.

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding lib_matmul.f32.
        a: float32 of shape (M, K), a numpy array or a DeviceBuffer made with that shape.
        b: float32 of shape (K, N), likewise.
        out: a float32 array or DeviceBuffer of shape (M, N) to write C into.
    Returns:
        C as a numpy array of shape (M, N), or `out` when given.
    """
    kernels, rest = split_kernels("matmul", args, kwargs)
    return _matmul(kernels, *rest, **kwargs)


def _matmul(kernels: Mapping[str, Kernel], a: Array, b: Array, *, out: Out = None) -> Any:
    """`matmul` with its kernels given."""
    m, k, n = _matmul_sizes("matmul", a, b, "f32")
    kid, tuned = matmul_runs(kernels)  # docs/tuning.md
    wg = tuned["wg"]
    # the block of C one workgroup computes: tile_m x tile_n, either one 0 meaning `tile`
    bm, bn = tuned["tile_m"] or tuned["tile"], tuned["tile_n"] or tuned["tile"]
    call = Call("matmul", kernels, [kid])
    if isinstance(out, DeviceBuffer) and call.replay((bm, bn, wg), (a, b, out)) is not MISS:
        return out
    call.place("a", a)
    call.place("b", b)
    call.output(out, "f32", (m, n))
    ab, _ = call.upload(a)
    bb, bvec = call.upload(b)
    b4, _ = call.pair(bb, bvec, "f32", False)
    cb = out if isinstance(out, DeviceBuffer) else call.device.buffer((m, n), "f32")
    grid = (-(-n // bn) * wg, -(-m // bm))
    # vb: B's rows are whole vec4s of b4 (the kernel's fast loop loads them so)
    args = dict(a=ab, b=bb, b4=b4, c=cb, M=m, N=n, K=k, vb=int(bvec and n % 4 == 0))
    steps = [call.step(kid, 0, args, grid)]
    call.run(steps)
    call.remember((bm, bn, wg), (a, b, out), steps, None)
    return call.result(cb, out, m * n, (m, n))


# lib_matmul_f16 (64 x 64 blocks of one 32-wide workgroup, fragments straight from the
# buffers) runs the f32-output shapes it fits where a tuning record picks it; the staged
# lib_mm_f16 (128 x 256 blocks of 8 subgroups, every shape, f16 output too) is the default:
# on the H200 124-141 TFLOP/s at 2048-8192 against the unstaged kernel's 40-49
# (bench/RESULTS.md, measured as bench/kernels/mm_f16_wide.py then).
DIRECT_TILE = (16, 64, 16)  # M, N, K multiples it needs (M of 64 in a batch)
DIRECT_BLOCK, DIRECT_WG = 64, 32
F16_BM, F16_BN = 128, 256  # lib_mm_f16: the block of C one workgroup computes (M x N)
F16_WG = 256  # its workgroup size: 8 subgroups of 32
F16_WIDEST = 32  # the widest subgroup it runs on (8 subgroups per workgroup)
MAX_BATCH = 65535  # matmul_f16: workgroups on the grid's z axis (one per batch entry)
_F16_OUT = {"float32": "f32", "float16": "f16"}


@overload
def matmul_f16(
    kernels: Mapping[str, Kernel],
    a: Array,
    b: Array,
    *,
    out: Out = None,
    out_dtype: str = "float32",
) -> Any: ...


@overload
def matmul_f16(a: Array, b: Array, *, out: Out = None, out_dtype: str = "float32") -> Any: ...


def matmul_f16(*args: Any, **kwargs: Any) -> Any:
    """C = A @ B with float16 A and B and float32 accumulation, on cooperative matrices
    (tensor cores): a Vulkan device with VK_KHR_cooperative_matrix, or the cpu reference.
    Any sizes (edges are handled in the kernel, nothing is padded on the host), and batched:
    a leading batch axis on either operand (a 2-D operand is shared by every batch entry).

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding lib_mm_f16.f32
            (float32 output) or lib_mm_f16.f16 (float16 output).
        a: float16 of shape (M, K) or (Z, M, K); b: float16 of shape (K, N) or (Z, K, N);
            numpy arrays or DeviceBuffers made with those shapes.
        out: an array or DeviceBuffer of shape (M, N) (or (Z, M, N)) and out_dtype to
            write C into.
        out_dtype: "float32" (the default) or "float16" (the f32 sums rounded once).
    Returns:
        C as a numpy array of shape (M, N) or (Z, M, N), or `out` when given.
    """
    kernels, rest = split_kernels("matmul_f16", args, kwargs)
    return _matmul_f16(kernels, *rest, **kwargs)


def _f16_sizes(
    a: Array, b: Array, fn: str = "matmul_f16", kind: str = "f16"
) -> tuple[int, int, int, int, bool, bool]:
    # (Z, M, K, N, a batched, b batched) of A @ B, batched or not.
    for name, value in (("a", a), ("b", b)):
        kind_of(fn, name, value, (kind,))
        if len(shape_of(value)) not in (2, 3):
            raise fail(fn, f"{name} must be 2-D or 3-D (a batch), got shape {shape_of(value)}")
    sa, sb = shape_of(a), shape_of(b)
    (m, k), (k2, n) = sa[-2:], sb[-2:]
    if k != k2:
        raise fail(fn, f"a is {sa} and b is {sb}: a's columns ({k}) must equal b's rows ({k2})")
    za, zb = (s[0] if len(s) == 3 else None for s in (sa, sb))
    if za is not None and zb is not None and za != zb:
        raise fail(fn, f"a is {sa} and b is {sb}: their batches ({za} and {zb}) must be equal")
    z = za or zb or 1
    if z > MAX_BATCH:
        raise fail(fn, f"a batch of {z} is more than {MAX_BATCH} (split it)")
    return z, m, k, n, za is not None, zb is not None


def _matmul_f16(
    kernels: Mapping[str, Kernel],
    a: Array,
    b: Array,
    *,
    out: Out = None,
    out_dtype: str = "float32",
) -> Any:
    """`matmul_f16` with its kernels given."""
    if out_dtype not in _F16_OUT:
        raise fail("matmul_f16", f"out_dtype must be 'float32' or 'float16', got {out_dtype!r}")
    z, m, k, n, za, zb = _f16_sizes(a, b)
    kind = _F16_OUT[out_dtype]
    # rows past M of one batch entry are the next entry's: a batch needs whole blocks
    rows = DIRECT_BLOCK if za or zb else DIRECT_TILE[0]
    fits = m % rows == 0 and n % DIRECT_TILE[1] == 0 and k % DIRECT_TILE[2] == 0
    # the staged kernel by default (H200: 97-102 TFLOP/s against the unstaged one's 40-49,
    # bench/RESULTS.md); the unstaged one where a tuning record picks it (docs/tuning.md)
    # and it fits; f16 output always the staged lib_mm_f16.f16
    kid = f16_runs(kernels, kind, fits)
    return _matmul16("matmul_f16", "f16", kernels, kid, a, b, out, kind, (z, m, k, n, za, zb))


def _matmul16(
    fn: str,
    elem: str,
    kernels: Mapping[str, Kernel],
    kid: str,
    a: Array,
    b: Array,
    out: Out,
    kind: str,
    sizes: tuple[int, int, int, int, bool, bool],
) -> Any:
    """One call of `fn` (matmul_f16, matmul_bf16: inputs of `elem`) on kernel `kid`: the
    staged lib_mm_f16 / lib_mm_bf16 (each operand also bound as vec4s, a4 and b4, where its
    rows are whole vec4s), or the unstaged lib_matmul_f16; output of `kind`."""
    z, m, k, n, za, zb = sizes
    call = Call(fn, kernels, [kid])
    if isinstance(out, DeviceBuffer) and call.replay((kind,), (a, b, out)) is not MISS:
        return out
    width = call.device.profile.subgroup_size
    if width is not None and width > F16_WIDEST:
        raise fail(
            fn,
            f"the device ({call.where()}) has subgroups of {width} invocations; {kid} needs "
            f"subgroups of at most {F16_WIDEST}: use library.matmul on float32 values there",
        )
    call.place("a", a)
    call.place("b", b)
    shape = (z, m, n) if za or zb else (m, n)
    call.output(out, kind, shape)
    ab, a_vec = call.upload(a)
    bb, b_vec = call.upload(b)
    cb = out if isinstance(out, DeviceBuffer) else call.device.buffer(shape, kind)
    args: dict[str, Any] = dict(sa=m * k if za else 0, sb=k * n if zb else 0, sc=m * n)
    if kid == "lib_matmul_f16":
        grid = (n // DIRECT_BLOCK * DIRECT_WG, -(-m // DIRECT_BLOCK), z)
        args.update(a=ab, b=bb, c=cb, m=m, n=n, k=k)
    else:
        grid = (-(-n // F16_BN) * F16_WG, -(-m // F16_BM), z)
        sink = call.scratch("sink", elem if kind == "f32" else "f32", 4)
        zero = call.scratch("zero", elem, 4)  # the vec4 binding of an operand without vec4s
        args.update(a=ab, a4=ab if a_vec else zero, b=bb, b4=bb if b_vec else zero, M=m, N=n, K=k)
        args.update(c=cb if kind == "f32" else sink, h=sink if kind == "f32" else cb)
        # vec4 loads need whole vec4s: rows (and batch entries) of a multiple of 4 values
        args.update(va=int(a_vec and k % 4 == 0), vb=int(b_vec and n % 4 == 0))
    args.update(gx=grid[0], gy=grid[1], gz=grid[2])
    steps = [call.step(kid, 0, args, grid)]
    call.run(steps)
    call.remember((kind,), (a, b, out), steps, None)
    return call.result(cb, out, z * m * n, shape)


_BF16_OUT = {"float32": "f32", "bfloat16": "bf16"}


@overload
def matmul_bf16(
    kernels: Mapping[str, Kernel],
    a: Array,
    b: Array,
    *,
    out: Out = None,
    out_dtype: str = "float32",
) -> Any: ...


@overload
def matmul_bf16(a: Array, b: Array, *, out: Out = None, out_dtype: str = "float32") -> Any: ...


def matmul_bf16(*args: Any, **kwargs: Any) -> Any:
    """C = A @ B with bfloat16 A and B and float32 accumulation, on cooperative matrices
    (tensor cores): a Vulkan device with VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16
    (bf16 16x16x16 fragments), or the cpu reference. Any sizes (edges are handled in the
    kernel, lib_mm_bf16), and batched like `matmul_f16`.

    Arguments:
        kernels: optional: a Bundle (or a mapping of id -> Kernel) holding lib_mm_bf16.f32
            (float32 output) or lib_mm_bf16.bf16 (bfloat16 output).
        a: bfloat16 of shape (M, K) or (Z, M, K); b: bfloat16 of shape (K, N) or (Z, K, N):
            ml_dtypes.bfloat16 arrays (JAX's, TensorFlow's), uint16 arrays of bf16 bit
            patterns (vyre_build.core.bfloat16.from_f32 makes them), or DeviceBuffers of
            bf16.
        out: an array or DeviceBuffer of shape (M, N) (or (Z, M, N)) and out_dtype to
            write C into.
        out_dtype: "float32" (the default) or "bfloat16" (the f32 sums rounded once to
            nearest even).
    Returns:
        C as a numpy array of shape (M, N) or (Z, M, N) (bfloat16 output: uint16 bit
        patterns, or the dtype of `a` where that is ml_dtypes' bfloat16), or `out` when
        given.
    """
    kernels, rest = split_kernels("matmul_bf16", args, kwargs)
    return _matmul_bf16(kernels, *rest, **kwargs)


def _matmul_bf16(
    kernels: Mapping[str, Kernel],
    a: Array,
    b: Array,
    *,
    out: Out = None,
    out_dtype: str = "float32",
) -> Any:
    """`matmul_bf16` with its kernels given."""
    fn = "matmul_bf16"
    if out_dtype not in _BF16_OUT:
        raise fail(fn, f"out_dtype must be 'float32' or 'bfloat16', got {out_dtype!r}")
    named = getattr(a, "dtype", None)  # an ml_dtypes bfloat16 array: the result is one too
    a, b, out = (host_array(v) for v in (a, b, out))
    sizes = _f16_sizes(a, b, fn, "bf16")
    kind = _BF16_OUT[out_dtype]
    got = _matmul16(fn, "bf16", kernels, f"lib_mm_bf16.{kind}", a, b, out, kind, sizes)
    if kind == "bf16" and out is None and named is not None and named.name == "bfloat16":
        return got.view(named)
    return got
