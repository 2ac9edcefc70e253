"""Tiled f32 matmul C = A @ B (A is M x K, B is K x N, row-major), 16x16 shared tiles, any sizes."""
from vyre_build.lang import Buffer, barrier, f32, fma, global_id, kernel, local_id, shared, u32

TILE = 16


@kernel(workgroup_size=(TILE, TILE, 1), grid=("N", "M"))
def matmul(a: Buffer[f32], b: Buffer[f32], c: Buffer[f32, "w"], M: u32, N: u32, K: u32):
    ta = shared(f32, TILE * TILE)
    tb = shared(f32, TILE * TILE)
    lx = local_id().x
    ly = local_id().y
    col = global_id().x
    row = global_id().y
    acc: f32 = 0.0
    tiles = (K + TILE - 1) // TILE
    for t in range(tiles):
        ka = t * TILE + lx
        kb = t * TILE + ly
        # zero-pad past the edges (an in-bounds index could still name the wrong element)
        ta[ly * TILE + lx] = a[row * K + ka] if row < M and ka < K else 0.0
        tb[ly * TILE + lx] = b[kb * N + col] if kb < K and col < N else 0.0
        barrier()
        for k in range(u32(TILE)):
            acc = fma(ta[ly * TILE + k], tb[k * TILE + lx], acc)
        barrier()
    if row < M and col < N:
        c[row * N + col] = acc
