"""A candidate of kernels/lib_matmul.py's f32 design (128 x 128 blocks of 256 invocations,
8 x 8 values each as 4 x 4 pieces 64 apart, K in steps of 8 through double-buffered shared
panels, the next panels in registers) with the K loop split as kernels/lib_mm_f16.py's: a
block inside C (and N a multiple of 4, vb = 1: b4 is b's vec4 view) runs the steps whose
next step lies inside K in a loop of unguarded loads (B's by vec4s), then the rest, and
every step of an edge block, in the loop of guarded loads. It became the library's
kernel on 2026-12-05 (1.05-1.07x the one-loop kernel on an H100); it stays as the base of
the layout experiment below. bench/matmul_f32_bench.py --candidate mm_f32_split.py times
it beside the library's kernel (same grid and bindings). Variant f32: the library's layout (a subgroup of 32 covers 2 x 16 invocations of
the 16 x 16 grid: per k step its shared reads are 2 vec4s of A and 16 of B); w48: a subgroup
covers 4 x 8 (4 of A and 8 of B: one 128-byte wavefront each on NVIDIA, not two for B):
0.98-1.00x of f32 on the H200, as in GLSL (bench/RESULTS.md, 2026-12-05 19:0x).
"""
from vyre_build.lang import (Buffer, barrier, f32, fma, kernel, local_id, shared, u32, vec4f,
                             workgroup_id)

WG = 256
W48 = 0


def at(m: Buffer[f32], row: u32, col: u32, rows: u32, cols: u32) -> f32:
    return m[row * cols + col] if row < rows and col < cols else f32(0.0)


def put(c: Buffer[f32, "w"], row: u32, col: u32, v: vec4f, M: u32, N: u32) -> None:
    if row < M:
        i = row * N + col
        if col < N:
            c[i] = v.x
        if col + 1 < N:
            c[i + 1] = v.y
        if col + 2 < N:
            c[i + 2] = v.z
        if col + 3 < N:
            c[i + 3] = v.w


@kernel(workgroup_size=WG, grid=(1, 1), shared_bytes=16384, variants={"f32": {"W48": 0}, "w48": {"W48": 1}})
def mm_f32_split(a: Buffer[f32], b: Buffer[f32], b4: Buffer[vec4f], c: Buffer[f32, "w"],
                 M: u32, N: u32, K: u32, vb: u32):
    sa = shared(vec4f, 512)  # [buffer][k: 8][32 vec4s along m]
    sb = shared(vec4f, 512)  # [buffer][k: 8][32 vec4s along n]
    lid = local_id().x
    tx = lid % 16
    ty = (lid // 16) % 16
    if W48 == 1:
        tx = (lid // 32) % 2 * 8 + lid % 8
        ty = ((lid // 64) * 4 + (lid % 32) // 8) % 16
    m0 = workgroup_id().y * 128
    n0 = workgroup_id().x * 128
    ak = lid % 8
    ag = lid // 8
    bk = lid // 32
    bg = lid % 32
    ar = m0 + 4 * ag
    bc = n0 + 4 * bg
    sa[ak * 32 + ag] = vec4f(at(a, ar, ak, M, K), at(a, ar + 1, ak, M, K),
                             at(a, ar + 2, ak, M, K), at(a, ar + 3, ak, M, K))
    sb[bk * 32 + bg] = vec4f(at(b, bk, bc, K, N), at(b, bk, bc + 1, K, N),
                             at(b, bk, bc + 2, K, N), at(b, bk, bc + 3, K, N))
    barrier()
    z = vec4f(0.0)
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
    steps = (K + 7) // 8
    s0 = u32(0)
    if vb == 1 and m0 + 128 <= M and n0 + 128 <= N:
        while s0 + 1 < K // 8:
            cur = (s0 % 2) * 256
            k1 = (s0 + 1) * 8
            pa0 = a[ar * K + k1 + ak]
            pa1 = a[(ar + 1) * K + k1 + ak]
            pa2 = a[(ar + 2) * K + k1 + ak]
            pa3 = a[(ar + 3) * K + k1 + ak]
            pb = b4[((k1 + bk) * N + bc) // 4]
            for k in range(u32(8)):
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
            nxt = 256 - cur
            sa[nxt + ak * 32 + ag] = vec4f(pa0, pa1, pa2, pa3)
            sb[nxt + bk * 32 + bg] = pb
            barrier()
            s0 += 1
    for s in range(s0, steps):
        cur = (s % 2) * 256
        k1 = (s + 1) * 8
        pa0 = at(a, ar, k1 + ak, M, K)
        pa1 = at(a, ar + 1, k1 + ak, M, K)
        pa2 = at(a, ar + 2, k1 + ak, M, K)
        pa3 = at(a, ar + 3, k1 + ak, M, K)
        pb0 = at(b, k1 + bk, bc, K, N)
        pb1 = at(b, k1 + bk, bc + 1, K, N)
        pb2 = at(b, k1 + bk, bc + 2, K, N)
        pb3 = at(b, k1 + bk, bc + 3, K, N)
        for k in range(u32(8)):
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
        nxt = 256 - cur
        sa[nxt + ak * 32 + ag] = vec4f(pa0, pa1, pa2, pa3)
        sb[nxt + bk * 32 + bg] = vec4f(pb0, pb1, pb2, pb3)
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
