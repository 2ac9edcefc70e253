"""Library f32 matmul C = A @ B (A is M x K, B is K x N, row-major, any sizes), register
tiled, for vyre_build.library.matmul.

A workgroup of 256 computes a 128 x 128 block of C, each invocation an 8 x 8 piece held
in 16 vec4 registers: rows 4*ty.. and 64+4*ty.., columns 4*tx.. and 64+4*tx.. (tx, ty in
0..15), so the shared reads of a step are conflict-free vec4s. K goes by in steps of 8:
A's 128 x 8 panel (stored transposed, vec4s along m) and B's 8 x 128 panel sit in shared
memory, double-buffered (16 KiB in all, WebGPU's default limit), while the next panels'
loads are already in flight in registers; one barrier per step. Loads past an edge read
0, stores past an edge are skipped. variants.yaml binds T = f32, V = vec4f.
"""
from vyre_build.lang import Buffer, barrier, fma, kernel, local_id, shared, u32, workgroup_id

from .lib_common import put4

BM = 128
BN = 128
BK = 8
WG = 256
PANEL = BK * 32  # vec4s in one buffer of a panel: BK rows of 32 vec4s


def at(m: Buffer[T], row: u32, col: u32, rows: u32, cols: u32) -> T:
    return m[row * cols + col] if row < rows and col < cols else T(0.0)


def put(c: Buffer[T, "w"], row: u32, col: u32, v: V, M: u32, N: u32) -> None:
    # C[row, col .. col+3], the columns below N
    if row < M:
        put4(c, row * N + col, row * N + N, v)


@kernel(workgroup_size=WG, grid=(1, 1))
def lib_matmul(a: Buffer[T], b: Buffer[T], c: Buffer[T, "w"], M: u32, N: u32, K: u32):
    sa = shared(V, 2 * PANEL)  # [buffer][k][m / 4]
    sb = shared(V, 2 * PANEL)  # [buffer][k][n / 4]
    lid = local_id().x
    tx = lid % 16
    ty = (lid // 16) % 16  # the "% 16" lets the range analysis drop the checks on sa
    m0 = workgroup_id().y * BM
    n0 = workgroup_id().x * BN
    # what this invocation loads: A rows m0+4*ag.. at column ak, B row bk at columns n0+4*bg..
    ak = lid % BK
    ag = (lid // BK) % 32
    bk = (lid // 32) % BK
    bg = lid % 32
    ar = m0 + 4 * ag
    bc = n0 + 4 * bg
    sa[ak * 32 + ag] = V(at(a, ar, ak, M, K), at(a, ar + 1, ak, M, K), at(a, ar + 2, ak, M, K),
                         at(a, ar + 3, ak, M, K))
    sb[bk * 32 + bg] = V(at(b, bk, bc, K, N), at(b, bk, bc + 1, K, N), at(b, bk, bc + 2, K, N),
                         at(b, bk, bc + 3, K, N))
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
        pb0 = at(b, k1 + bk, bc, K, N)
        pb1 = at(b, k1 + bk, bc + 1, K, N)
        pb2 = at(b, k1 + bk, bc + 2, K, N)
        pb3 = at(b, k1 + bk, bc + 3, K, N)
        for k in range(u32(BK)):
            row = cur + k * 32
            alo = sa[row + ty]
            ahi = sa[row + 16 + ty]
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
        sa[nxt + ak * 32 + ag] = V(pa0, pa1, pa2, pa3)
        sb[nxt + bk * 32 + bg] = V(pb0, pb1, pb2, pb3)
        barrier()
    r0 = m0 + 4 * ty
    r1 = r0 + 64
    q0 = n0 + 4 * tx
    q1 = q0 + 64
    put(c, r0, q0, c00, M, N)
    put(c, r0, q1, c01, M, N)
    put(c, r0 + 1, q0, c10, M, N)
    put(c, r0 + 1, q1, c11, M, N)
    put(c, r0 + 2, q0, c20, M, N)
    put(c, r0 + 2, q1, c21, M, N)
    put(c, r0 + 3, q0, c30, M, N)
    put(c, r0 + 3, q1, c31, M, N)
    put(c, r1, q0, c40, M, N)
    put(c, r1, q1, c41, M, N)
    put(c, r1 + 1, q0, c50, M, N)
    put(c, r1 + 1, q1, c51, M, N)
    put(c, r1 + 2, q0, c60, M, N)
    put(c, r1 + 2, q1, c61, M, N)
    put(c, r1 + 3, q0, c70, M, N)
    put(c, r1 + 3, q1, c71, M, N)
