"""Library row softmax and layer norm for short rows, for vyre_build.runtime.library.softmax
/ layer_norm: the _w32 kernels take rows of up to 1024 values (longer rows: lib_norm.py,
whose 256 invocations per row were faster from 2048 values on the H200: a 64-wide version
of these was measured there and dropped).

One workgroup of 32 invocations per row, rows past the grid taken `row_stride`
apart. Each invocation loads its eight vec4s of the row at once (vec4 q = lid + k * WG,
k = 0..7: a subgroup's loads are contiguous) and keeps them in registers, so the row is
read from memory once, with all its loads in flight together, and written once. Row sums
and maxima are subgroup operations; only where a subgroup is smaller than the workgroup
(lavapipe's 8 lanes, small cpu subgroups) do they also go through shared memory across
subgroups (lib_common's exchange). Softmax: the maximum, exp(x - max) kept in
registers, their sum, one multiply. Layer norm: the values less the row's first value (so a
constant row has deviations of exactly 0: a mean computed by division is not exact, and
GPUs divide to 2.5 ulp, which made a constant row come out as beta +- gamma on the H200),
their mean, then the sum of squared deviations from it (two passes over registers, no
cancellation), then (x - mean) * rsqrt(var + eps) * gamma + beta. With `vec` set (cols % 4 == 0) rows move as
vec4s through x4/out4, else as scalars through x/out (the host binds the unused pair to
small scratch buffers). The eight vec4s are eight named locals, not a local array in a
loop, so that they stay in registers whatever the driver unrolls. variants.yaml binds T
and V.
"""
from vyre_build.lang import (Buffer, barrier, bitcast, f32, kernel, local_id, max, rsqrt, shared,
                             subgroup_add, subgroup_invocation_id, subgroup_max, subgroup_min,
                             subgroup_size, u32, workgroup_id, workgroup_size)

from .lib_common import put4, wg_sum
from .lib_norm import exp4


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


def wg_max(v: T, slots: Buffer[T, "rw"]) -> T:
    """The maximum of `v` over the workgroup: lib_common.wg_sum's exchange, for max."""
    lid = local_id().x
    barrier()
    t = subgroup_max(v)
    slots[lid] = t if lid == subgroup_min(lid) else neg_inf()
    barrier()
    acc = neg_inf()
    j = subgroup_invocation_id()
    while j < len(slots):
        acc = max(acc, slots[j])
        j += subgroup_size()
    return subgroup_max(acc)


def row_max(v: T, slots: Buffer[T, "rw"]) -> T:
    """The maximum of `v` over the workgroup (one row): one subgroup op where the
    subgroup holds the whole workgroup (NVIDIA's 32 lanes and a 32-wide workgroup)."""
    if subgroup_size() >= workgroup_size().x:
        r = subgroup_max(v)
    else:
        r = wg_max(v, slots)
    return r


def row_sum(v: T, slots: Buffer[T, "rw"]) -> T:
    """The sum of `v` over the workgroup (one row), as row_max."""
    if subgroup_size() >= workgroup_size().x:
        r = subgroup_add(v)
    else:
        r = wg_sum(v, slots)
    return r


def softmax_rows(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                 rows: u32, cols: u32, vec: u32, row_stride: u32,
                 slots: Buffer[T, "rw"]) -> None:
    wg = workgroup_size().x
    lid = local_id().x
    row = workgroup_id().x
    f = neg_inf()
    while row < rows:
        v0 = load(x4, x, row, lid, cols, vec, f)
        v1 = load(x4, x, row, lid + wg, cols, vec, f)
        v2 = load(x4, x, row, lid + 2 * wg, cols, vec, f)
        v3 = load(x4, x, row, lid + 3 * wg, cols, vec, f)
        v4 = load(x4, x, row, lid + 4 * wg, cols, vec, f)
        v5 = load(x4, x, row, lid + 5 * wg, cols, vec, f)
        v6 = load(x4, x, row, lid + 6 * wg, cols, vec, f)
        v7 = load(x4, x, row, lid + 7 * wg, cols, vec, f)
        m = max(max(max4(v0), max4(v1)), max(max4(v2), max4(v3)))
        m = max(m, max(max(max4(v4), max4(v5)), max(max4(v6), max4(v7))))
        top = row_max(m, slots)
        v0 = exp4(v0 - top)
        v1 = exp4(v1 - top)
        v2 = exp4(v2 - top)
        v3 = exp4(v3 - top)
        v4 = exp4(v4 - top)
        v5 = exp4(v5 - top)
        v6 = exp4(v6 - top)
        v7 = exp4(v7 - top)
        inv = T(1.0) / row_sum(sum4(((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7))), slots)
        store(out4, out, row, lid, cols, vec, v0 * inv)
        store(out4, out, row, lid + wg, cols, vec, v1 * inv)
        store(out4, out, row, lid + 2 * wg, cols, vec, v2 * inv)
        store(out4, out, row, lid + 3 * wg, cols, vec, v3 * inv)
        store(out4, out, row, lid + 4 * wg, cols, vec, v4 * inv)
        store(out4, out, row, lid + 5 * wg, cols, vec, v5 * inv)
        store(out4, out, row, lid + 6 * wg, cols, vec, v6 * inv)
        store(out4, out, row, lid + 7 * wg, cols, vec, v7 * inv)
        row += row_stride


def scaled(out4: Buffer[V, "w"], out: Buffer[T, "w"], gamma4: Buffer[V], gamma: Buffer[T],
           beta4: Buffer[V], beta: Buffer[T], row: u32, q: u32, cols: u32, vec: u32, d: V,
           r: T) -> None:
    """Store d * r * gamma + beta at vec4 q of the row (d: its values less the mean)."""
    z = T(0.0)
    g = load(gamma4, gamma, 0, q, cols, vec, z)
    b = load(beta4, beta, 0, q, cols, vec, z)
    store(out4, out, row, q, cols, vec, d * r * g + b)


def layer_norm_rows(x4: Buffer[V], x: Buffer[T], gamma4: Buffer[V], gamma: Buffer[T],
                    beta4: Buffer[V], beta: Buffer[T], out4: Buffer[V, "w"],
                    out: Buffer[T, "w"], rows: u32, cols: u32, vec: u32, row_stride: u32,
                    eps: f32, slots: Buffer[T, "rw"]) -> None:
    wg = workgroup_size().x
    lid = local_id().x
    row = workgroup_id().x
    z = T(0.0)
    n = T(cols)
    while row < rows:
        shift = first(x4, x, row, cols, vec)
        v0 = load(x4, x, row, lid, cols, vec, z)
        v1 = load(x4, x, row, lid + wg, cols, vec, z)
        v2 = load(x4, x, row, lid + 2 * wg, cols, vec, z)
        v3 = load(x4, x, row, lid + 3 * wg, cols, vec, z)
        v4 = load(x4, x, row, lid + 4 * wg, cols, vec, z)
        v5 = load(x4, x, row, lid + 5 * wg, cols, vec, z)
        v6 = load(x4, x, row, lid + 6 * wg, cols, vec, z)
        v7 = load(x4, x, row, lid + 7 * wg, cols, vec, z)
        v0 = inside(v0 - shift, lid, cols)
        v1 = inside(v1 - shift, lid + wg, cols)
        v2 = inside(v2 - shift, lid + 2 * wg, cols)
        v3 = inside(v3 - shift, lid + 3 * wg, cols)
        v4 = inside(v4 - shift, lid + 4 * wg, cols)
        v5 = inside(v5 - shift, lid + 5 * wg, cols)
        v6 = inside(v6 - shift, lid + 6 * wg, cols)
        v7 = inside(v7 - shift, lid + 7 * wg, cols)
        mean = row_sum(sum4(((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7))), slots) / n
        v0 = inside(v0 - mean, lid, cols)
        v1 = inside(v1 - mean, lid + wg, cols)
        v2 = inside(v2 - mean, lid + 2 * wg, cols)
        v3 = inside(v3 - mean, lid + 3 * wg, cols)
        v4 = inside(v4 - mean, lid + 4 * wg, cols)
        v5 = inside(v5 - mean, lid + 5 * wg, cols)
        v6 = inside(v6 - mean, lid + 6 * wg, cols)
        v7 = inside(v7 - mean, lid + 7 * wg, cols)
        sq = (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3)
        sq = sq + ((v4 * v4 + v5 * v5) + (v6 * v6 + v7 * v7))
        r = rsqrt(row_sum(sum4(sq), slots) / n + T(eps))
        scaled(out4, out, gamma4, gamma, beta4, beta, row, lid, cols, vec, v0, r)
        scaled(out4, out, gamma4, gamma, beta4, beta, row, lid + wg, cols, vec, v1, r)
        scaled(out4, out, gamma4, gamma, beta4, beta, row, lid + 2 * wg, cols, vec, v2, r)
        scaled(out4, out, gamma4, gamma, beta4, beta, row, lid + 3 * wg, cols, vec, v3, r)
        scaled(out4, out, gamma4, gamma, beta4, beta, row, lid + 4 * wg, cols, vec, v4, r)
        scaled(out4, out, gamma4, gamma, beta4, beta, row, lid + 5 * wg, cols, vec, v5, r)
        scaled(out4, out, gamma4, gamma, beta4, beta, row, lid + 6 * wg, cols, vec, v6, r)
        scaled(out4, out, gamma4, gamma, beta4, beta, row, lid + 7 * wg, cols, vec, v7, r)
        row += row_stride


# One kernel per workgroup size (a variant cannot set it); `slots` holds one per invocation.
@kernel(workgroup_size=32, grid=1)
def lib_softmax_w32(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                    rows: u32, cols: u32, vec: u32, row_stride: u32):
    slots = shared(T, 32)
    softmax_rows(x4, x, out4, out, rows, cols, vec, row_stride, slots)



@kernel(workgroup_size=32, grid=1)
def lib_layer_norm_w32(x4: Buffer[V], x: Buffer[T], gamma4: Buffer[V], gamma: Buffer[T],
                       beta4: Buffer[V], beta: Buffer[T], out4: Buffer[V, "w"],
                       out: Buffer[T, "w"], rows: u32, cols: u32, vec: u32, row_stride: u32,
                       eps: f32):
    slots = shared(T, 32)
    layer_norm_rows(x4, x, gamma4, gamma, beta4, beta, out4, out, rows, cols, vec, row_stride,
                    eps, slots)
