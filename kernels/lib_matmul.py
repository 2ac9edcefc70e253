"""Library f32 matmul C = A @ B (A is M x K, B is K x N, row-major, any sizes), register
tiled, for vyre_build.runtime.library.matmul.

A workgroup of 256 computes a 128 x 128 block of C, each invocation an 8 x 8 piece held
in 16 vec4 registers: rows 4*ty.. and 64+4*ty.., columns 4*tx.. and 64+4*tx.. (tx, ty in
0..15), so the shared reads of a step are vec4s that a subgroup reads without conflicts.
K goes by in steps of BK = 16: A's 128 x 16 panel (stored transposed, vec4s along m) and
B's 16 x 128 panel sit in shared memory, double-buffered (32 KiB, hence shared_bytes: the
most lavapipe's wgpu device allows), while the next panels' loads are already in flight
in registers; one barrier per step. A's rows are swizzled instead of padded (padding
would pass 32 KiB): vec4 j of row k sits at j ^ (k % 8), so the transposing stores of 8
neighbouring invocations (8 rows k, one j) hit 8 distinct bank groups, and the reads (one
row, a broadcast j) pay one xor. B's panel moves as vec4 loads through b4 where the host
sets vb (N and b's length multiples of 4), C as vec4 stores through c4 where it sets vc
(the same of N); scalar loads and stores otherwise. Loads past an edge read 0, stores
past an edge are skipped. variants.yaml binds T = f32, V = vec4f.
"""
from vyre_build.lang import Buffer, barrier, fma, kernel, local_id, shared, u32, workgroup_id

from .lib_common import put4

BM = 128
BN = 128
BK = 16
WG = 256
ROW = 32  # vec4s in one row of a panel
PANEL = BK * ROW  # vec4s in one buffer of a panel


def at(m: Buffer[T], row: u32, col: u32, rows: u32, cols: u32) -> T:
    return m[row * cols + col] if row < rows and col < cols else T(0.0)


def at4(m: Buffer[T], m4: Buffer[V], row: u32, col: u32, rows: u32, cols: u32, vec: u32) -> V:
    """m[row, col .. col+3] (zeros past the edges): one vec4 load where `vec` (cols a
    multiple of 4: the four are in or out together)."""
    r = V(T(0.0))
    if vec == 1:
        if row < rows and col < cols:
            r = m4[(row * cols + col) // 4]
    else:
        r = V(at(m, row, col, rows, cols), at(m, row, col + 1, rows, cols),
              at(m, row, col + 2, rows, cols), at(m, row, col + 3, rows, cols))
    return r


def put(c: Buffer[T, "w"], c4: Buffer[V, "w"], row: u32, col: u32, v: V, M: u32, N: u32,
        vec: u32) -> None:
    # C[row, col .. col+3], the columns below N: one vec4 store where `vec`
    if row < M:
        if vec == 1:
            if col < N:
                c4[(row * N + col) // 4] = v
        else:
            put4(c, row * N + col, row * N + N, v)


@kernel(workgroup_size=WG, grid=(1, 1), shared_bytes=2 * 2 * PANEL * 16)
def lib_matmul(a: Buffer[T], b: Buffer[T], b4: Buffer[V], c: Buffer[T, "w"],
               c4: Buffer[V, "w"], M: u32, N: u32, K: u32, vb: u32, vc: u32):
    sa = shared(V, 2 * PANEL)  # [buffer][k][m / 4], rows of ROW vec4s
    sb = shared(V, 2 * PANEL)  # [buffer][k][n / 4], rows of ROW vec4s
    lid = local_id().x
    tx = lid % 16
    ty = (lid // 16) % 16  # the "% 16" lets the range analysis drop the checks on sa
    m0 = workgroup_id().y * BM
    n0 = workgroup_id().x * BN
    # what this invocation loads: A rows m0+4*ag.. and m0+64+4*ag.. at column ak; B rows bk
    # and bk+8 at columns n0+4*bg..
    ak = lid % BK
    ag = (lid // BK) % 16
    bk = (lid // 32) % 8
    bg = lid % 32
    ar = m0 + 4 * ag
    bc = n0 + 4 * bg
    sw = ag ^ (ak % 8)  # the swizzled place of A's vec4 ag in row ak
    sa[ak * ROW + sw] = V(at(a, ar, ak, M, K), at(a, ar + 1, ak, M, K), at(a, ar + 2, ak, M, K),
                          at(a, ar + 3, ak, M, K))
    sa[ak * ROW + 16 + sw] = V(at(a, ar + 64, ak, M, K), at(a, ar + 65, ak, M, K),
                               at(a, ar + 66, ak, M, K), at(a, ar + 67, ak, M, K))
    sb[bk * ROW + bg] = at4(b, b4, bk, bc, K, N, vb)
    sb[(bk + 8) * ROW + bg] = at4(b, b4, bk + 8, bc, K, N, vb)
    barrier()
    z = V(T(0.0))
    c00 = z
    c01 = z
    c10 = z
    c11 = z
    c20 = z
    c21 = z
    c30 = z
    c31 = z
    c40 = z
    c41 = z
    c50 = z
    c51 = z
    c60 = z
    c61 = z
    c70 = z
    c71 = z
    steps = (K + BK - 1) // BK
    for s in range(steps):
        cur = (s % 2) * PANEL
        # the next step's panels, in registers while this step computes (zeros past K)
        k1 = (s + 1) * BK
        pa0 = at(a, ar, k1 + ak, M, K)
        pa1 = at(a, ar + 1, k1 + ak, M, K)
        pa2 = at(a, ar + 2, k1 + ak, M, K)
        pa3 = at(a, ar + 3, k1 + ak, M, K)
        pa4 = at(a, ar + 64, k1 + ak, M, K)
        pa5 = at(a, ar + 65, k1 + ak, M, K)
        pa6 = at(a, ar + 66, k1 + ak, M, K)
        pa7 = at(a, ar + 67, k1 + ak, M, K)
        pb0 = at4(b, b4, k1 + bk, bc, K, N, vb)
        pb1 = at4(b, b4, k1 + bk + 8, bc, K, N, vb)
        for k in range(u32(BK)):
            row = cur + k * ROW
            j = ty ^ (k % 8)
            alo = sa[row + j]
            ahi = sa[row + 16 + j]
            blo = sb[row + tx]
            bhi = sb[row + 16 + tx]
            c00 = fma(blo, alo.x, c00)
            c01 = fma(bhi, alo.x, c01)
            c10 = fma(blo, alo.y, c10)
            c11 = fma(bhi, alo.y, c11)
            c20 = fma(blo, alo.z, c20)
            c21 = fma(bhi, alo.z, c21)
            c30 = fma(blo, alo.w, c30)
            c31 = fma(bhi, alo.w, c31)
            c40 = fma(blo, ahi.x, c40)
            c41 = fma(bhi, ahi.x, c41)
            c50 = fma(blo, ahi.y, c50)
            c51 = fma(bhi, ahi.y, c51)
            c60 = fma(blo, ahi.z, c60)
            c61 = fma(bhi, ahi.z, c61)
            c70 = fma(blo, ahi.w, c70)
            c71 = fma(bhi, ahi.w, c71)
        nxt = PANEL - cur
        sa[nxt + ak * ROW + sw] = V(pa0, pa1, pa2, pa3)
        sa[nxt + ak * ROW + 16 + sw] = V(pa4, pa5, pa6, pa7)
        sb[nxt + bk * ROW + bg] = pb0
        sb[nxt + (bk + 8) * ROW + bg] = pb1
        barrier()
    r0 = m0 + 4 * ty
    r1 = r0 + 64
    q0 = n0 + 4 * tx
    q1 = q0 + 64
    put(c, c4, r0, q0, c00, M, N, vc)
    put(c, c4, r0, q1, c01, M, N, vc)
    put(c, c4, r0 + 1, q0, c10, M, N, vc)
    put(c, c4, r0 + 1, q1, c11, M, N, vc)
    put(c, c4, r0 + 2, q0, c20, M, N, vc)
    put(c, c4, r0 + 2, q1, c21, M, N, vc)
    put(c, c4, r0 + 3, q0, c30, M, N, vc)
    put(c, c4, r0 + 3, q1, c31, M, N, vc)
    put(c, c4, r1, q0, c40, M, N, vc)
    put(c, c4, r1, q1, c41, M, N, vc)
    put(c, c4, r1 + 1, q0, c50, M, N, vc)
    put(c, c4, r1 + 1, q1, c51, M, N, vc)
    put(c, c4, r1 + 2, q0, c60, M, N, vc)
    put(c, c4, r1 + 2, q1, c61, M, N, vc)
    put(c, c4, r1 + 3, q0, c70, M, N, vc)
    put(c, c4, r1 + 3, q1, c71, M, N, vc)
