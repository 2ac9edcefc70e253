"""Vector kernels: 16-byte loads and stores per invocation (what bandwidth-bound kernels want)."""
from vyre_build.lang import Buffer, f32, fma, global_id, kernel, u32


@kernel(workgroup_size=256)
def saxpy4(x: Buffer[vec4f], y: Buffer[vec4f, "rw"], a: f32):
    i = global_id().x
    if i < len(y):
        y[i] = fma(vec4f(a), x[i], y[i])


@kernel(workgroup_size=256)
def add4(a: Buffer[vec4f], b: Buffer[vec4f], out: Buffer[vec4f, "w"]):
    i = global_id().x
    if i < len(out):
        out[i] = a[i] + b[i]


@kernel(workgroup_size=64)
def shuffle_mix(v: Buffer[vec4u], w: Buffer[vec2i], out: Buffer[vec4u, "w"], sums: Buffer[f32, "w"], k: u32):
    """Components, constructors, casts and integer/float componentwise ops."""
    i = global_id().x
    q = v[i]
    swapped = vec4u(q.w, q.z, q.y, q.x)
    mixed = (q ^ swapped) * 3 + vec4u(k)
    out[i] = mixed & vec4u(0xFFFF0000, 0x0000FFFF, 0xFF00FF00, 0x00FF00FF)
    p = w[i]
    f = vec2f(p) * 0.5 - vec2f(1.0, -1.0)
    g = clamp(f, -100.0, 100.0)
    sums[i] = g.x + abs(g.y) + f32(max(p, vec2i(0)).x)
