"""Row softmax over a rows x cols f32 matrix, one 64-wide workgroup per row (shared max and sum)."""
from vyre_build.lang import Buffer, barrier, exp, f32, kernel, local_id, shared, u32, workgroup_id

WG = 64
NEG_BIG = -3.0e38


# grid entries must be literal ints or parameter names (constants are refused)
@kernel(workgroup_size=(WG, 1, 1), grid=(64, "rows"))
def softmax(x: Buffer[f32], out: Buffer[f32, "w"], rows: u32, cols: u32):
    red = shared(f32, WG)
    lid = local_id().x
    base = workgroup_id().y * cols
    m: f32 = NEG_BIG
    for j in range(lid, cols, WG):
        m = max(m, x[base + j])
    red[lid] = m
    barrier()
    s: u32 = WG // 2
    while s > 0:
        if lid < s:
            red[lid] = max(red[lid], red[lid + s])
        barrier()
        s >>= 1
    row_max = red[0]
    # everyone has read the max before the sum reuses the array
    barrier()
    acc: f32 = 0.0
    for j in range(lid, cols, WG):
        acc += exp(x[base + j] - row_max)
    red[lid] = acc
    barrier()
    s = WG // 2
    while s > 0:
        if lid < s:
            red[lid] += red[lid + s]
        barrier()
        s >>= 1
    inv = 1.0 / red[0]
    for j in range(lid, cols, WG):
        out[base + j] = exp(x[base + j] - row_max) * inv
