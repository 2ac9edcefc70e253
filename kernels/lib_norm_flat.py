"""Library row softmax and layer norm, one subgroup per row, for rows of up to 1024 values:
lib_norm_warp.py's design (8 rows per 256-invocation workgroup at 32 lanes, subgroup k of
workgroup w takes rows w * num_subgroups() + k, then every row_stride * num_subgroups()
rows after it; a row in 8 vec4s per lane) with straight-line loads.

lib_norm_warp.py puts each of a lane's eight loads under its own branches (`vec`, then the
row's end), and the bounds rule selects on the loaded value inside that branch: the driver
gets eight basic blocks, each ending in a use of its load, so a lane may wait for each
load before it issues the next (eight memory round trips per row instead of one). Here
the branch on `vec` is taken once per row, outside the loads, and each load is
unconditional: its index is clamped into the row (min(q, nq - 1): always a value of this
row, so always in bounds) and a select puts the fill past the row's end. The eight loads
of a lane are one basic block and all issue before the first is used. Layer norm reads
gamma and beta the same way (sixteen loads in one block after the reductions) and fills
x past the row's end with the row's first value, so those deviations are exactly 0.

Variants here (the library's tunables softmax / layer_norm name which kernel takes rows of
up to 1024 values: kernels/tuning.yaml):
- lib_softmax_flat / lib_layer_norm_flat: one row per subgroup, as lib_norm_warp.py.
- lib_softmax_pair / lib_layer_norm_pair: two rows per subgroup (16 rows per workgroup at
  32 lanes): both rows' 16 loads issue together and their reductions interleave, half as
  many subgroups (layer norm reads gamma and beta once for both rows).

Where the row does not fit the registers (cols > 32 * subgroup_size(): small subgroups,
lavapipe's 8 lanes past 256 values, the cpu backend's 1..16), lib_norm_warp.py's strided
functions run. Softmax: exp(x - max) / sum. Layer norm: deviations from the row's first
value (a constant row gives exactly beta), their mean, the sum of squared deviations from
it, (x - mean) * rsqrt(var + eps) * gamma + beta. variants.yaml binds T and V.
"""

from vyre_build.lang import (
    Buffer,
    f32,
    kernel,
    max,
    min,
    num_subgroups,
    rsqrt,
    subgroup_add,
    subgroup_id,
    subgroup_invocation_id,
    subgroup_max,
    subgroup_size,
    u32,
    workgroup_id,
)

from .lib_common import put4
from .lib_norm import exp4
from .lib_norm_warp import (
    REGS,
    WG,
    inside,
    layer_norm_strided,
    max4,
    neg_inf,
    softmax_strided,
    sum4,
)


def get4(x4: Buffer[V], base: u32, q: u32, nq: u32, fill: T) -> V:
    """Vec4 q of the row of nq vec4s at base, `fill` past its end (the load is always made,
    its index clamped into the row)."""
    v = x4[base + min(q, nq - 1)]
    return v if q < nq else V(fill)


def get1(x: Buffer[T], base: u32, c: u32, cols: u32, fill: T) -> T:
    v = x[base + min(c, cols - 1)]
    return v if c < cols else fill


def gets(x: Buffer[T], base: u32, q: u32, cols: u32, fill: T) -> V:
    """Values 4q .. 4q+3 of the row of cols scalars at base, `fill` past its end."""
    c = 4 * q
    return V(
        get1(x, base, c, cols, fill),
        get1(x, base, c + 1, cols, fill),
        get1(x, base, c + 2, cols, fill),
        get1(x, base, c + 3, cols, fill),
    )


def put(out4: Buffer[V, "w"], base: u32, q: u32, nq: u32, r: V) -> None:
    if q < nq:
        out4[base + q] = r


def puts(out: Buffer[T, "w"], base: u32, q: u32, cols: u32, r: V) -> None:
    put4(out, base + 4 * q, base + cols, r)


def dev4(v: V, q: u32, nq: u32, mean: T) -> V:
    """v - mean for vec4 q of a row of nq whole vec4s, 0 past its end."""
    return v - mean if q < nq else V(T(0.0))


def top8(v0: V, v1: V, v2: V, v3: V, v4: V, v5: V, v6: V, v7: V) -> T:
    m = max(max(max4(v0), max4(v1)), max(max4(v2), max4(v3)))
    return subgroup_max(max(m, max(max(max4(v4), max4(v5)), max(max4(v6), max4(v7)))))


def sum8(v0: V, v1: V, v2: V, v3: V, v4: V, v5: V, v6: V, v7: V) -> T:
    return subgroup_add(sum4(((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7))))


def sq8(v0: V, v1: V, v2: V, v3: V, v4: V, v5: V, v6: V, v7: V) -> T:
    sq = (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3)
    return subgroup_add(sum4(sq + ((v4 * v4 + v5 * v5) + (v6 * v6 + v7 * v7))))


# -- softmax -------------------------------------------------------------------------------


def softmax_vec(x4: Buffer[V], out4: Buffer[V, "w"], row: u32, cols: u32) -> None:
    s = subgroup_size()
    q = subgroup_invocation_id()
    nq = cols // 4
    base = row * nq
    f = neg_inf()
    v0 = get4(x4, base, q, nq, f)
    v1 = get4(x4, base, q + s, nq, f)
    v2 = get4(x4, base, q + 2 * s, nq, f)
    v3 = get4(x4, base, q + 3 * s, nq, f)
    v4 = get4(x4, base, q + 4 * s, nq, f)
    v5 = get4(x4, base, q + 5 * s, nq, f)
    v6 = get4(x4, base, q + 6 * s, nq, f)
    v7 = get4(x4, base, q + 7 * s, nq, f)
    top = top8(v0, v1, v2, v3, v4, v5, v6, v7)
    v0 = exp4(v0 - top)
    v1 = exp4(v1 - top)
    v2 = exp4(v2 - top)
    v3 = exp4(v3 - top)
    v4 = exp4(v4 - top)
    v5 = exp4(v5 - top)
    v6 = exp4(v6 - top)
    v7 = exp4(v7 - top)
    inv = T(1.0) / sum8(v0, v1, v2, v3, v4, v5, v6, v7)
    put(out4, base, q, nq, v0 * inv)
    put(out4, base, q + s, nq, v1 * inv)
    put(out4, base, q + 2 * s, nq, v2 * inv)
    put(out4, base, q + 3 * s, nq, v3 * inv)
    put(out4, base, q + 4 * s, nq, v4 * inv)
    put(out4, base, q + 5 * s, nq, v5 * inv)
    put(out4, base, q + 6 * s, nq, v6 * inv)
    put(out4, base, q + 7 * s, nq, v7 * inv)


def softmax_scalar(x: Buffer[T], out: Buffer[T, "w"], row: u32, cols: u32) -> None:
    s = subgroup_size()
    q = subgroup_invocation_id()
    base = row * cols
    f = neg_inf()
    v0 = gets(x, base, q, cols, f)
    v1 = gets(x, base, q + s, cols, f)
    v2 = gets(x, base, q + 2 * s, cols, f)
    v3 = gets(x, base, q + 3 * s, cols, f)
    v4 = gets(x, base, q + 4 * s, cols, f)
    v5 = gets(x, base, q + 5 * s, cols, f)
    v6 = gets(x, base, q + 6 * s, cols, f)
    v7 = gets(x, base, q + 7 * s, cols, f)
    top = top8(v0, v1, v2, v3, v4, v5, v6, v7)
    v0 = exp4(v0 - top)
    v1 = exp4(v1 - top)
    v2 = exp4(v2 - top)
    v3 = exp4(v3 - top)
    v4 = exp4(v4 - top)
    v5 = exp4(v5 - top)
    v6 = exp4(v6 - top)
    v7 = exp4(v7 - top)
    inv = T(1.0) / sum8(v0, v1, v2, v3, v4, v5, v6, v7)
    puts(out, base, q, cols, v0 * inv)
    puts(out, base, q + s, cols, v1 * inv)
    puts(out, base, q + 2 * s, cols, v2 * inv)
    puts(out, base, q + 3 * s, cols, v3 * inv)
    puts(out, base, q + 4 * s, cols, v4 * inv)
    puts(out, base, q + 5 * s, cols, v5 * inv)
    puts(out, base, q + 6 * s, cols, v6 * inv)
    puts(out, base, q + 7 * s, cols, v7 * inv)


def softmax_row(
    x4: Buffer[V],
    x: Buffer[T],
    out4: Buffer[V, "w"],
    out: Buffer[T, "w"],
    row: u32,
    cols: u32,
    vec: u32,
) -> None:
    if cols <= 4 * REGS * subgroup_size():
        if vec != 0:
            softmax_vec(x4, out4, row, cols)
        else:
            softmax_scalar(x, out, row, cols)
    else:
        softmax_strided(x4, x, out4, out, row, cols, vec)


@kernel(workgroup_size=WG, grid=1)
def lib_softmax_flat(
    x4: Buffer[V],
    x: Buffer[T],
    out4: Buffer[V, "w"],
    out: Buffer[T, "w"],
    rows: u32,
    cols: u32,
    vec: u32,
    row_stride: u32,
):
    per = num_subgroups()
    row = workgroup_id().x * per + subgroup_id()
    while row < rows:
        softmax_row(x4, x, out4, out, row, cols, vec)
        row += row_stride * per


def softmax_vec2(x4: Buffer[V], out4: Buffer[V, "w"], row: u32, cols: u32) -> None:
    """Rows `row` and `row + 1` (both below `rows`: the caller checks) in one pass."""
    s = subgroup_size()
    q = subgroup_invocation_id()
    nq = cols // 4
    base = row * nq
    bb = base + nq
    f = neg_inf()
    v0 = get4(x4, base, q, nq, f)
    v1 = get4(x4, base, q + s, nq, f)
    v2 = get4(x4, base, q + 2 * s, nq, f)
    v3 = get4(x4, base, q + 3 * s, nq, f)
    v4 = get4(x4, base, q + 4 * s, nq, f)
    v5 = get4(x4, base, q + 5 * s, nq, f)
    v6 = get4(x4, base, q + 6 * s, nq, f)
    v7 = get4(x4, base, q + 7 * s, nq, f)
    w0 = get4(x4, bb, q, nq, f)
    w1 = get4(x4, bb, q + s, nq, f)
    w2 = get4(x4, bb, q + 2 * s, nq, f)
    w3 = get4(x4, bb, q + 3 * s, nq, f)
    w4 = get4(x4, bb, q + 4 * s, nq, f)
    w5 = get4(x4, bb, q + 5 * s, nq, f)
    w6 = get4(x4, bb, q + 6 * s, nq, f)
    w7 = get4(x4, bb, q + 7 * s, nq, f)
    top = top8(v0, v1, v2, v3, v4, v5, v6, v7)
    topw = top8(w0, w1, w2, w3, w4, w5, w6, w7)
    v0 = exp4(v0 - top)
    v1 = exp4(v1 - top)
    v2 = exp4(v2 - top)
    v3 = exp4(v3 - top)
    v4 = exp4(v4 - top)
    v5 = exp4(v5 - top)
    v6 = exp4(v6 - top)
    v7 = exp4(v7 - top)
    w0 = exp4(w0 - topw)
    w1 = exp4(w1 - topw)
    w2 = exp4(w2 - topw)
    w3 = exp4(w3 - topw)
    w4 = exp4(w4 - topw)
    w5 = exp4(w5 - topw)
    w6 = exp4(w6 - topw)
    w7 = exp4(w7 - topw)
    inv = T(1.0) / sum8(v0, v1, v2, v3, v4, v5, v6, v7)
    invw = T(1.0) / sum8(w0, w1, w2, w3, w4, w5, w6, w7)
    put(out4, base, q, nq, v0 * inv)
    put(out4, base, q + s, nq, v1 * inv)
    put(out4, base, q + 2 * s, nq, v2 * inv)
    put(out4, base, q + 3 * s, nq, v3 * inv)
    put(out4, base, q + 4 * s, nq, v4 * inv)
    put(out4, base, q + 5 * s, nq, v5 * inv)
    put(out4, base, q + 6 * s, nq, v6 * inv)
    put(out4, base, q + 7 * s, nq, v7 * inv)
    put(out4, bb, q, nq, w0 * invw)
    put(out4, bb, q + s, nq, w1 * invw)
    put(out4, bb, q + 2 * s, nq, w2 * invw)
    put(out4, bb, q + 3 * s, nq, w3 * invw)
    put(out4, bb, q + 4 * s, nq, w4 * invw)
    put(out4, bb, q + 5 * s, nq, w5 * invw)
    put(out4, bb, q + 6 * s, nq, w6 * invw)
    put(out4, bb, q + 7 * s, nq, w7 * invw)


@kernel(workgroup_size=WG, grid=1)
def lib_softmax_pair(
    x4: Buffer[V],
    x: Buffer[T],
    out4: Buffer[V, "w"],
    out: Buffer[T, "w"],
    rows: u32,
    cols: u32,
    vec: u32,
    row_stride: u32,
):
    per = num_subgroups()
    row = 2 * (workgroup_id().x * per + subgroup_id())
    while row < rows:
        if row + 1 < rows and vec != 0 and cols <= 4 * REGS * subgroup_size():
            softmax_vec2(x4, out4, row, cols)
        else:
            one = row
            while one < min(row + 2, rows):  # one copy of the row code, not two
                softmax_row(x4, x, out4, out, one, cols, vec)
                one += 1
        row += 2 * row_stride * per


# -- layer norm ----------------------------------------------------------------------------


def layer_norm_vec(
    x4: Buffer[V],
    gamma4: Buffer[V],
    beta4: Buffer[V],
    out4: Buffer[V, "w"],
    row: u32,
    cols: u32,
    eps: f32,
) -> None:
    s = subgroup_size()
    q = subgroup_invocation_id()
    nq = cols // 4
    base = row * nq
    z = T(0.0)
    n = T(cols)
    shift = x4[base].x
    v0 = get4(x4, base, q, nq, shift) - shift
    v1 = get4(x4, base, q + s, nq, shift) - shift
    v2 = get4(x4, base, q + 2 * s, nq, shift) - shift
    v3 = get4(x4, base, q + 3 * s, nq, shift) - shift
    v4 = get4(x4, base, q + 4 * s, nq, shift) - shift
    v5 = get4(x4, base, q + 5 * s, nq, shift) - shift
    v6 = get4(x4, base, q + 6 * s, nq, shift) - shift
    v7 = get4(x4, base, q + 7 * s, nq, shift) - shift
    mean = sum8(v0, v1, v2, v3, v4, v5, v6, v7) / n
    v0 = dev4(v0, q, nq, mean)
    v1 = dev4(v1, q + s, nq, mean)
    v2 = dev4(v2, q + 2 * s, nq, mean)
    v3 = dev4(v3, q + 3 * s, nq, mean)
    v4 = dev4(v4, q + 4 * s, nq, mean)
    v5 = dev4(v5, q + 5 * s, nq, mean)
    v6 = dev4(v6, q + 6 * s, nq, mean)
    v7 = dev4(v7, q + 7 * s, nq, mean)
    r = rsqrt(sq8(v0, v1, v2, v3, v4, v5, v6, v7) / n + T(eps))
    g0 = get4(gamma4, 0, q, nq, z)
    g1 = get4(gamma4, 0, q + s, nq, z)
    g2 = get4(gamma4, 0, q + 2 * s, nq, z)
    g3 = get4(gamma4, 0, q + 3 * s, nq, z)
    g4 = get4(gamma4, 0, q + 4 * s, nq, z)
    g5 = get4(gamma4, 0, q + 5 * s, nq, z)
    g6 = get4(gamma4, 0, q + 6 * s, nq, z)
    g7 = get4(gamma4, 0, q + 7 * s, nq, z)
    b0 = get4(beta4, 0, q, nq, z)
    b1 = get4(beta4, 0, q + s, nq, z)
    b2 = get4(beta4, 0, q + 2 * s, nq, z)
    b3 = get4(beta4, 0, q + 3 * s, nq, z)
    b4 = get4(beta4, 0, q + 4 * s, nq, z)
    b5 = get4(beta4, 0, q + 5 * s, nq, z)
    b6 = get4(beta4, 0, q + 6 * s, nq, z)
    b7 = get4(beta4, 0, q + 7 * s, nq, z)
    put(out4, base, q, nq, v0 * r * g0 + b0)
    put(out4, base, q + s, nq, v1 * r * g1 + b1)
    put(out4, base, q + 2 * s, nq, v2 * r * g2 + b2)
    put(out4, base, q + 3 * s, nq, v3 * r * g3 + b3)
    put(out4, base, q + 4 * s, nq, v4 * r * g4 + b4)
    put(out4, base, q + 5 * s, nq, v5 * r * g5 + b5)
    put(out4, base, q + 6 * s, nq, v6 * r * g6 + b6)
    put(out4, base, q + 7 * s, nq, v7 * r * g7 + b7)


def ln_dev(v: V, q: u32, cols: u32, mean: T) -> V:
    return inside(v - mean, q, cols)


def layer_norm_scalar(
    x: Buffer[T],
    gamma: Buffer[T],
    beta: Buffer[T],
    out: Buffer[T, "w"],
    row: u32,
    cols: u32,
    eps: f32,
) -> None:
    s = subgroup_size()
    q = subgroup_invocation_id()
    base = row * cols
    z = T(0.0)
    n = T(cols)
    shift = x[base]
    v0 = gets(x, base, q, cols, shift) - shift
    v1 = gets(x, base, q + s, cols, shift) - shift
    v2 = gets(x, base, q + 2 * s, cols, shift) - shift
    v3 = gets(x, base, q + 3 * s, cols, shift) - shift
    v4 = gets(x, base, q + 4 * s, cols, shift) - shift
    v5 = gets(x, base, q + 5 * s, cols, shift) - shift
    v6 = gets(x, base, q + 6 * s, cols, shift) - shift
    v7 = gets(x, base, q + 7 * s, cols, shift) - shift
    mean = sum8(v0, v1, v2, v3, v4, v5, v6, v7) / n
    v0 = ln_dev(v0, q, cols, mean)
    v1 = ln_dev(v1, q + s, cols, mean)
    v2 = ln_dev(v2, q + 2 * s, cols, mean)
    v3 = ln_dev(v3, q + 3 * s, cols, mean)
    v4 = ln_dev(v4, q + 4 * s, cols, mean)
    v5 = ln_dev(v5, q + 5 * s, cols, mean)
    v6 = ln_dev(v6, q + 6 * s, cols, mean)
    v7 = ln_dev(v7, q + 7 * s, cols, mean)
    r = rsqrt(sq8(v0, v1, v2, v3, v4, v5, v6, v7) / n + T(eps))
    puts(out, base, q, cols, v0 * r * gets(gamma, 0, q, cols, z) + gets(beta, 0, q, cols, z))
    puts(
        out,
        base,
        q + s,
        cols,
        v1 * r * gets(gamma, 0, q + s, cols, z) + gets(beta, 0, q + s, cols, z),
    )
    puts(
        out,
        base,
        q + 2 * s,
        cols,
        v2 * r * gets(gamma, 0, q + 2 * s, cols, z) + gets(beta, 0, q + 2 * s, cols, z),
    )
    puts(
        out,
        base,
        q + 3 * s,
        cols,
        v3 * r * gets(gamma, 0, q + 3 * s, cols, z) + gets(beta, 0, q + 3 * s, cols, z),
    )
    puts(
        out,
        base,
        q + 4 * s,
        cols,
        v4 * r * gets(gamma, 0, q + 4 * s, cols, z) + gets(beta, 0, q + 4 * s, cols, z),
    )
    puts(
        out,
        base,
        q + 5 * s,
        cols,
        v5 * r * gets(gamma, 0, q + 5 * s, cols, z) + gets(beta, 0, q + 5 * s, cols, z),
    )
    puts(
        out,
        base,
        q + 6 * s,
        cols,
        v6 * r * gets(gamma, 0, q + 6 * s, cols, z) + gets(beta, 0, q + 6 * s, cols, z),
    )
    puts(
        out,
        base,
        q + 7 * s,
        cols,
        v7 * r * gets(gamma, 0, q + 7 * s, cols, z) + gets(beta, 0, q + 7 * s, cols, z),
    )


def layer_norm_row(
    x4: Buffer[V],
    x: Buffer[T],
    gamma4: Buffer[V],
    gamma: Buffer[T],
    beta4: Buffer[V],
    beta: Buffer[T],
    out4: Buffer[V, "w"],
    out: Buffer[T, "w"],
    row: u32,
    cols: u32,
    vec: u32,
    eps: f32,
) -> None:
    if cols <= 4 * REGS * subgroup_size():
        if vec != 0:
            layer_norm_vec(x4, gamma4, beta4, out4, row, cols, eps)
        else:
            layer_norm_scalar(x, gamma, beta, out, row, cols, eps)
    else:
        layer_norm_strided(x4, x, gamma4, gamma, beta4, beta, out4, out, row, cols, vec, eps)


@kernel(workgroup_size=WG, grid=1)
def lib_layer_norm_flat(
    x4: Buffer[V],
    x: Buffer[T],
    gamma4: Buffer[V],
    gamma: Buffer[T],
    beta4: Buffer[V],
    beta: Buffer[T],
    out4: Buffer[V, "w"],
    out: Buffer[T, "w"],
    rows: u32,
    cols: u32,
    vec: u32,
    row_stride: u32,
    eps: f32,
):
    per = num_subgroups()
    row = workgroup_id().x * per + subgroup_id()
    while row < rows:
        layer_norm_row(x4, x, gamma4, gamma, beta4, beta, out4, out, row, cols, vec, eps)
        row += row_stride * per


def scale2(
    out4: Buffer[V, "w"], base: u32, bb: u32, q: u32, nq: u32, g: V, b: V, v: V, r: T, w: V, rw: T
) -> None:
    put(out4, base, q, nq, v * r * g + b)
    put(out4, bb, q, nq, w * rw * g + b)


def layer_norm_vec2(
    x4: Buffer[V],
    gamma4: Buffer[V],
    beta4: Buffer[V],
    out4: Buffer[V, "w"],
    row: u32,
    cols: u32,
    eps: f32,
) -> None:
    """Rows `row` and `row + 1` (both below `rows`: the caller checks) in one pass."""
    s = subgroup_size()
    q = subgroup_invocation_id()
    nq = cols // 4
    base = row * nq
    bb = base + nq
    z = T(0.0)
    n = T(cols)
    shift = x4[base].x
    sw = x4[bb].x
    v0 = get4(x4, base, q, nq, shift) - shift
    v1 = get4(x4, base, q + s, nq, shift) - shift
    v2 = get4(x4, base, q + 2 * s, nq, shift) - shift
    v3 = get4(x4, base, q + 3 * s, nq, shift) - shift
    v4 = get4(x4, base, q + 4 * s, nq, shift) - shift
    v5 = get4(x4, base, q + 5 * s, nq, shift) - shift
    v6 = get4(x4, base, q + 6 * s, nq, shift) - shift
    v7 = get4(x4, base, q + 7 * s, nq, shift) - shift
    w0 = get4(x4, bb, q, nq, sw) - sw
    w1 = get4(x4, bb, q + s, nq, sw) - sw
    w2 = get4(x4, bb, q + 2 * s, nq, sw) - sw
    w3 = get4(x4, bb, q + 3 * s, nq, sw) - sw
    w4 = get4(x4, bb, q + 4 * s, nq, sw) - sw
    w5 = get4(x4, bb, q + 5 * s, nq, sw) - sw
    w6 = get4(x4, bb, q + 6 * s, nq, sw) - sw
    w7 = get4(x4, bb, q + 7 * s, nq, sw) - sw
    mean = sum8(v0, v1, v2, v3, v4, v5, v6, v7) / n
    mw = sum8(w0, w1, w2, w3, w4, w5, w6, w7) / n
    v0 = dev4(v0, q, nq, mean)
    v1 = dev4(v1, q + s, nq, mean)
    v2 = dev4(v2, q + 2 * s, nq, mean)
    v3 = dev4(v3, q + 3 * s, nq, mean)
    v4 = dev4(v4, q + 4 * s, nq, mean)
    v5 = dev4(v5, q + 5 * s, nq, mean)
    v6 = dev4(v6, q + 6 * s, nq, mean)
    v7 = dev4(v7, q + 7 * s, nq, mean)
    w0 = dev4(w0, q, nq, mw)
    w1 = dev4(w1, q + s, nq, mw)
    w2 = dev4(w2, q + 2 * s, nq, mw)
    w3 = dev4(w3, q + 3 * s, nq, mw)
    w4 = dev4(w4, q + 4 * s, nq, mw)
    w5 = dev4(w5, q + 5 * s, nq, mw)
    w6 = dev4(w6, q + 6 * s, nq, mw)
    w7 = dev4(w7, q + 7 * s, nq, mw)
    r = rsqrt(sq8(v0, v1, v2, v3, v4, v5, v6, v7) / n + T(eps))
    rw = rsqrt(sq8(w0, w1, w2, w3, w4, w5, w6, w7) / n + T(eps))
    g0 = get4(gamma4, 0, q, nq, z)
    g1 = get4(gamma4, 0, q + s, nq, z)
    g2 = get4(gamma4, 0, q + 2 * s, nq, z)
    g3 = get4(gamma4, 0, q + 3 * s, nq, z)
    g4 = get4(gamma4, 0, q + 4 * s, nq, z)
    g5 = get4(gamma4, 0, q + 5 * s, nq, z)
    g6 = get4(gamma4, 0, q + 6 * s, nq, z)
    g7 = get4(gamma4, 0, q + 7 * s, nq, z)
    b0 = get4(beta4, 0, q, nq, z)
    b1 = get4(beta4, 0, q + s, nq, z)
    b2 = get4(beta4, 0, q + 2 * s, nq, z)
    b3 = get4(beta4, 0, q + 3 * s, nq, z)
    b4 = get4(beta4, 0, q + 4 * s, nq, z)
    b5 = get4(beta4, 0, q + 5 * s, nq, z)
    b6 = get4(beta4, 0, q + 6 * s, nq, z)
    b7 = get4(beta4, 0, q + 7 * s, nq, z)
    scale2(out4, base, bb, q, nq, g0, b0, v0, r, w0, rw)
    scale2(out4, base, bb, q + s, nq, g1, b1, v1, r, w1, rw)
    scale2(out4, base, bb, q + 2 * s, nq, g2, b2, v2, r, w2, rw)
    scale2(out4, base, bb, q + 3 * s, nq, g3, b3, v3, r, w3, rw)
    scale2(out4, base, bb, q + 4 * s, nq, g4, b4, v4, r, w4, rw)
    scale2(out4, base, bb, q + 5 * s, nq, g5, b5, v5, r, w5, rw)
    scale2(out4, base, bb, q + 6 * s, nq, g6, b6, v6, r, w6, rw)
    scale2(out4, base, bb, q + 7 * s, nq, g7, b7, v7, r, w7, rw)


@kernel(workgroup_size=WG, grid=1)
def lib_layer_norm_pair(
    x4: Buffer[V],
    x: Buffer[T],
    gamma4: Buffer[V],
    gamma: Buffer[T],
    beta4: Buffer[V],
    beta: Buffer[T],
    out4: Buffer[V, "w"],
    out: Buffer[T, "w"],
    rows: u32,
    cols: u32,
    vec: u32,
    row_stride: u32,
    eps: f32,
):
    per = num_subgroups()
    row = 2 * (workgroup_id().x * per + subgroup_id())
    while row < rows:
        if row + 1 < rows and vec != 0 and cols <= 4 * REGS * subgroup_size():
            layer_norm_vec2(x4, gamma4, beta4, out4, row, cols, eps)
        else:
            one = row
            while one < min(row + 2, rows):  # one copy of the row code, not two
                layer_norm_row(x4, x, gamma4, gamma, beta4, beta, out4, out, one, cols, vec, eps)
                one += 1
        row += 2 * row_stride * per
