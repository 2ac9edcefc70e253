"""Library row softmax and layer norm over a rows x cols f32 matrix (rows of any length),
for vyre_build.library.softmax / layer_norm on rows past 2,048 values (shorter
rows: lib_norm_warp.py, one subgroup per row, several rows per workgroup, which keeps
short rows from being latency-bound).

One workgroup per row (rows past the grid taken `row_stride` apart), subgroup reductions
then shared memory across subgroups (lib_common). With `vec` set (cols % 4 == 0) rows
move as vec4s through x4/out4, else as scalars through x/out; the host binds the unused
pair to small scratch buffers. Softmax keeps a running maximum and a sum rescaled to it
(one read for the statistics, one for the output; max subtracted, so no overflow).
Layer norm sums values and squares shifted by the row's first value (no cancellation for
rows far from 0), then writes (x - mean) * rsqrt(var + eps) * gamma + beta.
variants.yaml binds T and V.
"""
from vyre_build.lang import (Buffer, barrier, bitcast, exp, f32, kernel, local_id, max, rsqrt,
                             shared, subgroup_add, subgroup_invocation_id, subgroup_max,
                             subgroup_min, subgroup_size, u32, workgroup_id)

from .lib_common import wg_sum2

WG = 256


def lowest() -> T:
    # -FLT_MAX, not -inf: exp(lowest() - m) is 0 and no inf - inf can make a NaN
    return bitcast(T, u32(0xFF7FFFFF))


def row_stats(m: T, s: T, slots_m: Buffer[T, "rw"], slots_s: Buffer[T, "rw"]) -> V:
    """V(max, sum of exp(x - max), 0, 0) over the workgroup from each invocation's running
    maximum m and sum s (of exp(x - m)): one exchange through shared memory for both."""
    lid = local_id().x
    barrier()
    top_sg = subgroup_max(m)
    sum_sg = subgroup_add(s * exp(m - top_sg))
    lead = lid == subgroup_min(lid)
    slots_m[lid] = top_sg if lead else lowest()
    slots_s[lid] = sum_sg if lead else T(0.0)
    barrier()
    top = lowest()
    j = subgroup_invocation_id()
    while j < len(slots_m):
        top = max(top, slots_m[j])
        j += subgroup_size()
    top = subgroup_max(top)
    total = T(0.0)
    j = subgroup_invocation_id()
    while j < len(slots_m):
        total += slots_s[j] * exp(slots_m[j] - top)
        j += subgroup_size()
    return V(top, subgroup_add(total), T(0.0), T(0.0))


def exp4(v: V) -> V:
    return V(exp(v.x), exp(v.y), exp(v.z), exp(v.w))


@kernel(workgroup_size=WG, grid=1)
def lib_softmax(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                rows: u32, cols: u32, vec: u32, row_stride: u32):
    slots_m = shared(T, WG)
    slots_s = shared(T, WG)
    lid = local_id().x
    row = workgroup_id().x
    while row < rows:
        m = lowest()
        s = T(0.0)
        if vec != 0:
            base = row * (cols // 4)
            j = lid
            while j < cols // 4:
                v = x4[base + j]
                mn = max(m, max(max(v.x, v.y), max(v.z, v.w)))
                e = exp4(v - mn)
                s = s * exp(m - mn) + (e.x + e.y + e.z + e.w)
                m = mn
                j += WG
        else:
            base = row * cols
            j = lid
            while j < cols:
                v1 = x[base + j]
                mn = max(m, v1)
                s = s * exp(m - mn) + exp(v1 - mn)
                m = mn
                j += WG
        stats = row_stats(m, s, slots_m, slots_s)
        top = stats.x
        inv = T(1.0) / stats.y
        if vec != 0:
            base = row * (cols // 4)
            j = lid
            while j < cols // 4:
                out4[base + j] = exp4(x4[base + j] - top) * inv
                j += WG
        else:
            base = row * cols
            j = lid
            while j < cols:
                out[base + j] = exp(x[base + j] - top) * inv
                j += WG
        row += row_stride


@kernel(workgroup_size=WG, grid=1)
def lib_layer_norm(x4: Buffer[V], x: Buffer[T], gamma4: Buffer[V], gamma: Buffer[T],
                   beta4: Buffer[V], beta: Buffer[T], out4: Buffer[V, "w"],
                   out: Buffer[T, "w"], rows: u32, cols: u32, vec: u32, row_stride: u32,
                   eps: f32):
    slots_a = shared(T, WG)
    slots_b = shared(T, WG)
    lid = local_id().x
    row = workgroup_id().x
    while row < rows:
        shift = x4[row * (cols // 4)].x if vec != 0 else x[row * cols]  # x is scratch with vec
        s1 = T(0.0)
        s2 = T(0.0)
        if vec != 0:
            base = row * (cols // 4)
            j = lid
            while j < cols // 4:
                d = x4[base + j] - shift
                s1 += d.x + d.y + d.z + d.w
                s2 += d.x * d.x + d.y * d.y + d.z * d.z + d.w * d.w
                j += WG
        else:
            base = row * cols
            j = lid
            while j < cols:
                d1 = x[base + j] - shift
                s1 += d1
                s2 += d1 * d1
                j += WG
        n = T(cols)
        sums = wg_sum2(s1, s2, slots_a, slots_b)
        dm = sums.x / n
        var = max(sums.y / n - dm * dm, T(0.0))
        mean = shift + dm
        r = rsqrt(var + T(eps))
        if vec != 0:
            base = row * (cols // 4)
            j = lid
            while j < cols // 4:
                out4[base + j] = (x4[base + j] - mean) * r * gamma4[j] + beta4[j]
                j += WG
        else:
            base = row * cols
            j = lid
            while j < cols:
                out[base + j] = (x[base + j] - mean) * r * gamma[j] + beta[j]
                j += WG
        row += row_stride
