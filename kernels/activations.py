"""Activation functions over f32, and the remaining f32 builtins (rounding, predicates)."""
from vyre_build.lang import (Buffer, exp, exp2, f32, global_id, isfinite, isinf, isnan, kernel,
                             log2, round, rsqrt, sign, tanh, trunc, u32)

SQRT_2_OVER_PI = 0.7978845608028654
GELU_C = 0.044715


@kernel(workgroup_size=64)
def gelu(x: Buffer[f32], out: Buffer[f32, "w"]):
    i = global_id().x
    if 0 <= i < len(out):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + tanh(SQRT_2_OVER_PI * (v + GELU_C * v ** 3)))


@kernel(workgroup_size=64)
def sigmoid(x: Buffer[f32], out: Buffer[f32, "w"]):
    i = global_id().x
    if i < len(out):
        v = x[i]
        # exp of a non-positive argument never overflows
        e = exp(-abs(v))
        out[i] = 1.0 / (1.0 + e) if v >= 0.0 else e / (1.0 + e)


@kernel(workgroup_size=64, grid="x")
def float_ops(x: Buffer[f32], rounded: Buffer[f32, "w"], truncated: Buffer[f32, "w"],
              signs: Buffer[f32, "w"], inv_sqrt: Buffer[f32, "w"], pow2: Buffer[f32, "w"],
              classes: Buffer[u32, "w"]):
    i = global_id().x
    if i >= len(x):
        return
    v = x[i]
    # classes: bit 0 NaN, bit 1 infinite, bit 2 finite
    classes[i] = u32(isnan(v)) | (u32(isinf(v)) << 1) | (u32(isfinite(v)) << 2)
    if not isfinite(v):
        return
    rounded[i] = round(v)
    truncated[i] = trunc(v)
    signs[i] = sign(v)
    inv_sqrt[i] = rsqrt(abs(v) + 1.0)
    pow2[i] = exp2(log2(abs(v) + 1.0))
