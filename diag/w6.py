from vyre_build.lang import Buffer, f32, global_id, i32, kernel, u32, select, rotl, min, max

@kernel(workgroup_size=64)
def k(a: Buffer[i32], b: Buffer[u32], out: Buffer[i32, "w"], p: i32, q: u32):
    i = global_id().x
    g = i32(global_id().x)
    x = a[global_id().x]
    out[i] = max(x, max(min(p, x), -(x >> 1)))
