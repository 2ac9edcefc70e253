"""Elementwise f32 math: one unary op per constant variant, trig, and the numeric builtins."""
from vyre_build.lang import (Buffer, ceil, clamp, cos, exp, f32, floor, fma, global_id, kernel,
                             log, select, sin, sqrt, tan)

LO = -2.0
HI = 2.0


@kernel(workgroup_size=128, variants={"sqrt": {"OP": 0}, "exp": {"OP": 1}, "log": {"OP": 2},
                                      "sin": {"OP": 3}})
def unary(x: Buffer[f32], out: Buffer[f32, "w"]):
    i = global_id().x
    if i >= len(out):
        return
    v = x[i]
    if OP == 0:
        out[i] = sqrt(v)
    elif OP == 1:
        out[i] = exp(v)
    elif OP == 2:
        out[i] = log(v)
    else:
        out[i] = sin(v)


@kernel(workgroup_size=64)
def mix_math(a: Buffer[f32], b: Buffer[f32], out: Buffer[f32, "w"], k: f32):
    i = global_id().x
    if i < len(out):
        x = a[i]
        y = b[i]
        m = fma(x, k, y)
        c = clamp(m, LO, HI)
        lo = min(x, y)
        hi = max(x, y)
        # floor/ceil of the larger magnitude end, picked by sign of c
        edge = select(c >= 0.0, ceil(hi), floor(lo))
        out[i] = c + edge + abs(x - y)


@kernel(workgroup_size=64)
def trig(angle: Buffer[f32], radius: Buffer[f32], px: Buffer[f32, "w"], py: Buffer[f32, "w"],
         slope: Buffer[f32, "w"]):
    i = global_id().x
    if i < len(px):
        t = angle[i]
        r = radius[i]
        px[i] = r * cos(t)
        py[i] = r * sin(t)
        slope[i] = tan(t)
