"""Library row softmax and layer norm, one subgroup per row, for rows of up to 1024 values
(vyre_build.library.softmax / layer_norm pick these by row length: row_kernel).

A workgroup of 256 invocations holds num_subgroups() rows at once (8 at NVIDIA's 32 lanes,
32 at lavapipe's 8); subgroup k of workgroup w takes rows w * num_subgroups() + k, then
every row_stride * num_subgroups() rows after it (row_stride: the workgroups of the grid).
The row index is uniform within the subgroup, so the row loop and its subgroup reductions
run under subgroup-uniform control, with no barrier and no shared memory: a row's maximum
and sums are one subgroup_max / subgroup_add each.

Where the row fits in eight vec4s per lane (cols <= 32 * subgroup_size(): every row here
at 32 lanes or more), lane l keeps vec4s q = l + k * subgroup_size(), k = 0..7, in
registers (eight named locals, not a local array in a loop, so that they stay in
registers whatever the driver unrolls): a subgroup's loads are contiguous, the row is read once and written once. At smaller subgroups (lavapipe, the cpu backend's 1..16)
the lanes stride through the row instead, reading it once per pass (softmax: max, sum,
write; layer norm: mean, variance, write), so every subgroup size is correct.

Softmax: exp(x - max) / sum. Layer norm: values less the row's first value (so a constant
row has deviations of exactly 0: a mean computed by division is not exact, and GPUs divide
to 2.5 ulp, which made a constant row come out as beta +- gamma on the H200), their mean,
the sum of squared deviations from it, then (x - mean) * rsqrt(var + eps) * gamma + beta. With `vec` set
(cols % 4 == 0) rows move as vec4s through x4/out4, else as scalars through x/out (the host
binds the unused pair to small scratch buffers). variants.yaml binds T and V.
"""
from vyre_build.lang import (Buffer, bitcast, f32, kernel, max, num_subgroups, rsqrt,
                             subgroup_add, subgroup_id, subgroup_invocation_id, subgroup_max,
                             subgroup_size, u32, workgroup_id)

from .lib_common import put4
from .lib_norm import exp4

REGS = 8  # vec4s per lane in the register path
WG = 256


def neg_inf() -> T:
    # fills softmax's slots past the row: exp(-inf - max) is exactly 0
    return bitcast(T, u32(0xFF800000))


def load(x4: Buffer[V], x: Buffer[T], row: u32, q: u32, cols: u32, vec: u32, fill: T) -> V:
    """Values 4q .. 4q+3 of the row (`fill` past its end): one vec4 load when rows are
    whole vec4s, else scalar loads."""
    r = V(fill)
    if vec != 0:
        if 4 * q < cols:
            r = x4[row * (cols // 4) + q]
    else:
        i = row * cols + 4 * q
        c = 4 * q
        r = V(x[i] if c < cols else fill, x[i + 1] if c + 1 < cols else fill,
              x[i + 2] if c + 2 < cols else fill, x[i + 3] if c + 3 < cols else fill)
    return r


def store(out4: Buffer[V, "w"], out: Buffer[T, "w"], row: u32, q: u32, cols: u32, vec: u32,
          r: V) -> None:
    """Values 4q .. 4q+3 of the row, those before its end."""
    if vec != 0:
        if 4 * q < cols:
            out4[row * (cols // 4) + q] = r
    else:
        put4(out, row * cols + 4 * q, row * cols + cols, r)


def first(x4: Buffer[V], x: Buffer[T], row: u32, cols: u32, vec: u32) -> T:
    """The row's first value (through x4 when rows are whole vec4s: x is then scratch)."""
    r = T(0.0)
    if vec != 0:
        r = x4[row * (cols // 4)].x
    else:
        r = x[row * cols]
    return r


def inside(d: V, q: u32, cols: u32) -> V:
    """d (vec4 q of the row) with the components past the row's end set to 0."""
    c = 4 * q
    z = T(0.0)
    return V(d.x if c < cols else z, d.y if c + 1 < cols else z, d.z if c + 2 < cols else z,
             d.w if c + 3 < cols else z)


def max4(v: V) -> T:
    return max(max(v.x, v.y), max(v.z, v.w))


def sum4(v: V) -> T:
    return (v.x + v.y) + (v.z + v.w)


def scaled(out4: Buffer[V, "w"], out: Buffer[T, "w"], gamma4: Buffer[V], gamma: Buffer[T],
           beta4: Buffer[V], beta: Buffer[T], row: u32, q: u32, cols: u32, vec: u32, d: V,
           r: T) -> None:
    """Store d * r * gamma + beta at vec4 q of the row (d: its values less the mean)."""
    z = T(0.0)
    g = load(gamma4, gamma, 0, q, cols, vec, z)
    b = load(beta4, beta, 0, q, cols, vec, z)
    store(out4, out, row, q, cols, vec, d * r * g + b)


def softmax_regs(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                 row: u32, cols: u32, vec: u32) -> None:
    s = subgroup_size()
    q = subgroup_invocation_id()
    f = neg_inf()
    v0 = load(x4, x, row, q, cols, vec, f)
    v1 = load(x4, x, row, q + s, cols, vec, f)
    v2 = load(x4, x, row, q + 2 * s, cols, vec, f)
    v3 = load(x4, x, row, q + 3 * s, cols, vec, f)
    v4 = load(x4, x, row, q + 4 * s, cols, vec, f)
    v5 = load(x4, x, row, q + 5 * s, cols, vec, f)
    v6 = load(x4, x, row, q + 6 * s, cols, vec, f)
    v7 = load(x4, x, row, q + 7 * s, cols, vec, f)
    m = max(max(max4(v0), max4(v1)), max(max4(v2), max4(v3)))
    m = max(m, max(max(max4(v4), max4(v5)), max(max4(v6), max4(v7))))
    top = subgroup_max(m)
    v0 = exp4(v0 - top)
    v1 = exp4(v1 - top)
    v2 = exp4(v2 - top)
    v3 = exp4(v3 - top)
    v4 = exp4(v4 - top)
    v5 = exp4(v5 - top)
    v6 = exp4(v6 - top)
    v7 = exp4(v7 - top)
    inv = T(1.0) / subgroup_add(sum4(((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7))))
    store(out4, out, row, q, cols, vec, v0 * inv)
    store(out4, out, row, q + s, cols, vec, v1 * inv)
    store(out4, out, row, q + 2 * s, cols, vec, v2 * inv)
    store(out4, out, row, q + 3 * s, cols, vec, v3 * inv)
    store(out4, out, row, q + 4 * s, cols, vec, v4 * inv)
    store(out4, out, row, q + 5 * s, cols, vec, v5 * inv)
    store(out4, out, row, q + 6 * s, cols, vec, v6 * inv)
    store(out4, out, row, q + 7 * s, cols, vec, v7 * inv)


def softmax_strided(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                    row: u32, cols: u32, vec: u32) -> None:
    s = subgroup_size()
    nq = (cols + 3) // 4
    f = neg_inf()
    m = f
    q = subgroup_invocation_id()
    while q < nq:
        m = max(m, max4(load(x4, x, row, q, cols, vec, f)))
        q += s
    top = subgroup_max(m)
    acc = T(0.0)
    q = subgroup_invocation_id()
    while q < nq:
        acc += sum4(exp4(load(x4, x, row, q, cols, vec, f) - top))
        q += s
    inv = T(1.0) / subgroup_add(acc)
    q = subgroup_invocation_id()
    while q < nq:
        store(out4, out, row, q, cols, vec, exp4(load(x4, x, row, q, cols, vec, f) - top) * inv)
        q += s


@kernel(workgroup_size=WG, grid=1)
def lib_softmax_warp(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                     rows: u32, cols: u32, vec: u32, row_stride: u32):
    per = num_subgroups()
    row = workgroup_id().x * per + subgroup_id()
    regs = cols <= 4 * REGS * subgroup_size()
    while row < rows:
        if regs:
            softmax_regs(x4, x, out4, out, row, cols, vec)
        else:
            softmax_strided(x4, x, out4, out, row, cols, vec)
        row += row_stride * per


def layer_norm_regs(x4: Buffer[V], x: Buffer[T], gamma4: Buffer[V], gamma: Buffer[T],
                    beta4: Buffer[V], beta: Buffer[T], out4: Buffer[V, "w"],
                    out: Buffer[T, "w"], row: u32, cols: u32, vec: u32, eps: f32) -> None:
    s = subgroup_size()
    q = subgroup_invocation_id()
    z = T(0.0)
    n = T(cols)
    shift = first(x4, x, row, cols, vec)
    v0 = inside(load(x4, x, row, q, cols, vec, z) - shift, q, cols)
    v1 = inside(load(x4, x, row, q + s, cols, vec, z) - shift, q + s, cols)
    v2 = inside(load(x4, x, row, q + 2 * s, cols, vec, z) - shift, q + 2 * s, cols)
    v3 = inside(load(x4, x, row, q + 3 * s, cols, vec, z) - shift, q + 3 * s, cols)
    v4 = inside(load(x4, x, row, q + 4 * s, cols, vec, z) - shift, q + 4 * s, cols)
    v5 = inside(load(x4, x, row, q + 5 * s, cols, vec, z) - shift, q + 5 * s, cols)
    v6 = inside(load(x4, x, row, q + 6 * s, cols, vec, z) - shift, q + 6 * s, cols)
    v7 = inside(load(x4, x, row, q + 7 * s, cols, vec, z) - shift, q + 7 * s, cols)
    mean = subgroup_add(sum4(((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)))) / n
    v0 = inside(v0 - mean, q, cols)
    v1 = inside(v1 - mean, q + s, cols)
    v2 = inside(v2 - mean, q + 2 * s, cols)
    v3 = inside(v3 - mean, q + 3 * s, cols)
    v4 = inside(v4 - mean, q + 4 * s, cols)
    v5 = inside(v5 - mean, q + 5 * s, cols)
    v6 = inside(v6 - mean, q + 6 * s, cols)
    v7 = inside(v7 - mean, q + 7 * s, cols)
    sq = (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3)
    sq = sq + ((v4 * v4 + v5 * v5) + (v6 * v6 + v7 * v7))
    r = rsqrt(subgroup_add(sum4(sq)) / n + T(eps))
    scaled(out4, out, gamma4, gamma, beta4, beta, row, q, cols, vec, v0, r)
    scaled(out4, out, gamma4, gamma, beta4, beta, row, q + s, cols, vec, v1, r)
    scaled(out4, out, gamma4, gamma, beta4, beta, row, q + 2 * s, cols, vec, v2, r)
    scaled(out4, out, gamma4, gamma, beta4, beta, row, q + 3 * s, cols, vec, v3, r)
    scaled(out4, out, gamma4, gamma, beta4, beta, row, q + 4 * s, cols, vec, v4, r)
    scaled(out4, out, gamma4, gamma, beta4, beta, row, q + 5 * s, cols, vec, v5, r)
    scaled(out4, out, gamma4, gamma, beta4, beta, row, q + 6 * s, cols, vec, v6, r)
    scaled(out4, out, gamma4, gamma, beta4, beta, row, q + 7 * s, cols, vec, v7, r)


def layer_norm_strided(x4: Buffer[V], x: Buffer[T], gamma4: Buffer[V], gamma: Buffer[T],
                       beta4: Buffer[V], beta: Buffer[T], out4: Buffer[V, "w"],
                       out: Buffer[T, "w"], row: u32, cols: u32, vec: u32, eps: f32) -> None:
    s = subgroup_size()
    nq = (cols + 3) // 4
    z = T(0.0)
    n = T(cols)
    shift = first(x4, x, row, cols, vec)
    acc = T(0.0)
    q = subgroup_invocation_id()
    while q < nq:
        acc += sum4(inside(load(x4, x, row, q, cols, vec, z) - shift, q, cols))
        q += s
    mean = subgroup_add(acc) / n
    sq = T(0.0)
    q = subgroup_invocation_id()
    while q < nq:
        d = inside(inside(load(x4, x, row, q, cols, vec, z) - shift, q, cols) - mean, q, cols)
        sq += sum4(d * d)
        q += s
    r = rsqrt(subgroup_add(sq) / n + T(eps))
    q = subgroup_invocation_id()
    while q < nq:
        d = inside(inside(load(x4, x, row, q, cols, vec, z) - shift, q, cols) - mean, q, cols)
        scaled(out4, out, gamma4, gamma, beta4, beta, row, q, cols, vec, d, r)
        q += s


@kernel(workgroup_size=WG, grid=1)
def lib_layer_norm_warp(x4: Buffer[V], x: Buffer[T], gamma4: Buffer[V], gamma: Buffer[T],
                        beta4: Buffer[V], beta: Buffer[T], out4: Buffer[V, "w"],
                        out: Buffer[T, "w"], rows: u32, cols: u32, vec: u32, row_stride: u32,
                        eps: f32):
    per = num_subgroups()
    row = workgroup_id().x * per + subgroup_id()
    regs = cols <= 4 * REGS * subgroup_size()
    while row < rows:
        if regs:
            layer_norm_regs(x4, x, gamma4, gamma, beta4, beta, out4, out, row, cols, vec, eps)
        else:
            layer_norm_strided(x4, x, gamma4, gamma, beta4, beta, out4, out, row, cols, vec,
                               eps)
        row += row_stride * per
