"""A candidate of library.matmul_bf16, kept to compare (bench/coop_bench.py --scalar): the
first lib_mm_bf16, from before bf16 had vectors. It ran 16-27 TFLOP/s on the H200
(bench/RESULTS.md, 2026-12-05); kernels/lib_mm_bf16.py replaced it with lib_mm_f16's design
(vec4bf loads held in registers while a step multiplies). Called as lib_mm_bf16 is, less
a4, b4, va, vb.

Staged bf16 matrix multiply on cooperative matrices (tensor cores), f32 accumulation:
C[z] (M x N) = A[z] (M x K, bf16) x B[z] (K x N, bf16), row-major, any M, N, K, a batch z on
the grid's third axis (batch strides sa, sb, sc in elements; 0 broadcasts that operand).

The blocking of lib_mm_f16 (read it first): a workgroup of WG = 256 invocations (8
subgroups of 32) computes a BM x BN = 128 x 256 block of C, subgroup w (subgroup_id() % 8)
the 64 x 64 quarter (w // 4, w % 4) as 4 x 4 fragments of 16 x 16 with f32 accumulators,
K in steps of BK = 16 through padded panels in shared memory (A's rows of SA = 24 values,
B's of SB = 264), double-buffered with one barrier per step. What differs: bf16 has no
vectors, so the panels move as scalars (A: 8 per invocation per step, B: 16; consecutive
invocations read consecutive values, so every subgroup's loads are whole 64-byte runs),
stored straight into the other buffer of the pair while this step multiplies (the barrier
that ends a step orders those stores before the next step's fragment loads, and every
read of that buffer before them); zeros past every edge.

Stores: a block inside C with N a multiple of 4 stores its f32 fragments straight into C;
otherwise (and always for bf16 output, rounded to nearest even from the f32 sums) each
fragment goes through a 16 x 16 staging area in shared memory and out by guarded scalar
stores, so nothing past an edge is written. Subgroups narrower than 32 compute a quarter
several times over and store equal values; wider ones would leave quarters unwritten, so
library.matmul_bf16 refuses such a device. Grid x covers N in blocks of 256
(gx = ceil(N / 256) * 256), y M in blocks of 128. C is `c` (f32) in variant f32 and `h`
(bf16) in variant bf16 (variants.yaml sets HALF); the other is not touched.
"""

from vyre_build.lang import (Buffer, barrier, bf16, coop_fill, coop_load_a, coop_load_b,
                             coop_mma, coop_store, f32, kernel, local_id, shared, subgroup_id,
                             u32, workgroup_id)

BM = 128
BN = 256
BK = 16
WG = 256
SA = 24  # padded row of A's panel, in values (48 bytes: a multiple of 16, 12 banks apart)
SB = 264  # padded row of B's panel, in values (528 bytes: 132 banks, 4 apart mod 32)
PA = BM * SA  # values in one buffer of A's panel
PB = BK * SB  # values in one buffer of B's panel
ST = 20  # padded row of a staging area, in f32 (16 values + 4)
SAREA = 16 * ST  # f32 in one subgroup's staging area


def at(x: Buffer[bf16], base: u32, row: u32, col: u32, rows: u32, cols: u32) -> bf16:
    """x[base + row * cols + col] of a row-major rows x cols matrix; zero past its edges."""
    v = bf16(0.0)
    if row < rows and col < cols:
        v = x[base + row * cols + col]
    return v


def panels(pa: Buffer[bf16, "rw"], pb: Buffer[bf16, "rw"], a: Buffer[bf16], b: Buffer[bf16],
           nx: u32, abase: u32, bbase: u32, m0: u32, n0: u32, k0: u32, M: u32, N: u32,
           K: u32) -> None:
    """Step k0's panels into buffer nx (0 or 1) of the pair: A's rows m0.. at columns
    k0..k0+15, B's rows k0..k0+15 at columns n0.. (this invocation's share of each)."""
    lid = local_id().x
    for t in range(u32(8)):
        e = lid + t * WG  # A's value (e // 16, e % 16) of the 128 x 16 panel
        pa[nx * PA + (e // 16) * SA + e % 16] = at(a, abase, m0 + e // 16, k0 + e % 16, M, K)
    for t in range(u32(16)):  # B's row t, column lid of the 16 x 256 panel
        pb[nx * PB + t * SB + lid] = at(b, bbase, k0 + t, n0 + lid, K, N)


def put_staged(c: Buffer[f32, "w"], h: Buffer[bf16, "w"], st: Buffer[f32, "rw"], base: u32,
               m0: u32, n0: u32, i: u32, j: u32, M: u32, N: u32) -> None:
    """After a barrier: fragment (i, j) of every quarter, staged in `st`, into C with
    guarded stores (each invocation 8 of the 8 x 256 values)."""
    lid = local_id().x
    for t in range(u32(8)):
        e = lid + t * WG
        q = e // 256  # the quarter, hence the staging area
        r = (e // 16) % 16
        s = e % 16
        row = m0 + (q // 4) * 64 + i * 16 + r
        col = n0 + (q % 4) * 64 + j * 16 + s
        if row < M and col < N:
            v = st[q * SAREA + r * ST + s]
            if HALF == 1:
                h[base + row * N + col] = bf16(v)
            else:
                c[base + row * N + col] = v


@kernel(workgroup_size=WG, grid=("gx", "gy", "gz"), shared_bytes=49152,
        variants={"f32": {"HALF": 0}, "bf16": {"HALF": 1}})
def mm_bf16_scalar(a: Buffer[bf16], b: Buffer[bf16], c: Buffer[f32, "w"], h: Buffer[bf16, "w"],
                M: u32, N: u32, K: u32, sa: u32, sb: u32, sc: u32, gx: u32, gy: u32, gz: u32):
    pa = shared(bf16, 2 * PA)  # [buffer][row m][k], rows of SA values
    pb = shared(bf16, 2 * PB)  # [buffer][row k][n], rows of SB values
    st = shared(f32, 8 * SAREA)  # [quarter][16][ST]: the staged output fragments
    w = subgroup_id() % 8
    wm = (w // 4) * 64
    wn = (w % 4) * 64
    z = workgroup_id().z
    m0 = workgroup_id().y * BM
    n0 = workgroup_id().x * BN
    abase = z * sa
    bbase = z * sb
    panels(pa, pb, a, b, 0, abase, bbase, m0, n0, 0, M, N, K)
    barrier()
    c00 = coop_fill(f32, 16, 16, 0.0)
    c01 = coop_fill(f32, 16, 16, 0.0)
    c02 = coop_fill(f32, 16, 16, 0.0)
    c03 = coop_fill(f32, 16, 16, 0.0)
    c10 = coop_fill(f32, 16, 16, 0.0)
    c11 = coop_fill(f32, 16, 16, 0.0)
    c12 = coop_fill(f32, 16, 16, 0.0)
    c13 = coop_fill(f32, 16, 16, 0.0)
    c20 = coop_fill(f32, 16, 16, 0.0)
    c21 = coop_fill(f32, 16, 16, 0.0)
    c22 = coop_fill(f32, 16, 16, 0.0)
    c23 = coop_fill(f32, 16, 16, 0.0)
    c30 = coop_fill(f32, 16, 16, 0.0)
    c31 = coop_fill(f32, 16, 16, 0.0)
    c32 = coop_fill(f32, 16, 16, 0.0)
    c33 = coop_fill(f32, 16, 16, 0.0)
    steps = (K + BK - 1) // BK
    for s in range(steps):
        cur = s % 2
        # the next step's panels into the other buffer (zeros past K) while this one runs
        if s + 1 < steps:
            panels(pa, pb, a, b, 1 - cur, abase, bbase, m0, n0, (s + 1) * BK, M, N, K)
        ka = cur * PA + wm * SA
        kb = cur * PB + wn
        a0 = coop_load_a(pa, ka, SA, 16, 16)
        a1 = coop_load_a(pa, ka + 16 * SA, SA, 16, 16)
        a2 = coop_load_a(pa, ka + 32 * SA, SA, 16, 16)
        a3 = coop_load_a(pa, ka + 48 * SA, SA, 16, 16)
        b0 = coop_load_b(pb, kb, SB, 16, 16)
        b1 = coop_load_b(pb, kb + 16, SB, 16, 16)
        b2 = coop_load_b(pb, kb + 32, SB, 16, 16)
        b3 = coop_load_b(pb, kb + 48, SB, 16, 16)
        c00 = coop_mma(a0, b0, c00)
        c01 = coop_mma(a0, b1, c01)
        c02 = coop_mma(a0, b2, c02)
        c03 = coop_mma(a0, b3, c03)
        c10 = coop_mma(a1, b0, c10)
        c11 = coop_mma(a1, b1, c11)
        c12 = coop_mma(a1, b2, c12)
        c13 = coop_mma(a1, b3, c13)
        c20 = coop_mma(a2, b0, c20)
        c21 = coop_mma(a2, b1, c21)
        c22 = coop_mma(a2, b2, c22)
        c23 = coop_mma(a2, b3, c23)
        c30 = coop_mma(a3, b0, c30)
        c31 = coop_mma(a3, b1, c31)
        c32 = coop_mma(a3, b2, c32)
        c33 = coop_mma(a3, b3, c33)
        barrier()
    cbase = z * sc
    o = cbase + (m0 + wm) * N + n0 + wn
    if HALF == 0 and m0 + BM <= M and n0 + BN <= N and N % 4 == 0:
        coop_store(c00, c, o, N)
        coop_store(c01, c, o + 16, N)
        coop_store(c02, c, o + 32, N)
        coop_store(c03, c, o + 48, N)
        coop_store(c10, c, o + 16 * N, N)
        coop_store(c11, c, o + 16 * N + 16, N)
        coop_store(c12, c, o + 16 * N + 32, N)
        coop_store(c13, c, o + 16 * N + 48, N)
        coop_store(c20, c, o + 32 * N, N)
        coop_store(c21, c, o + 32 * N + 16, N)
        coop_store(c22, c, o + 32 * N + 32, N)
        coop_store(c23, c, o + 32 * N + 48, N)
        coop_store(c30, c, o + 48 * N, N)
        coop_store(c31, c, o + 48 * N + 16, N)
        coop_store(c32, c, o + 48 * N + 32, N)
        coop_store(c33, c, o + 48 * N + 48, N)
    else:
        so = w * SAREA
        coop_store(c00, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 0, 0, M, N)
        barrier()
        coop_store(c01, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 0, 1, M, N)
        barrier()
        coop_store(c02, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 0, 2, M, N)
        barrier()
        coop_store(c03, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 0, 3, M, N)
        barrier()
        coop_store(c10, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 1, 0, M, N)
        barrier()
        coop_store(c11, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 1, 1, M, N)
        barrier()
        coop_store(c12, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 1, 2, M, N)
        barrier()
        coop_store(c13, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 1, 3, M, N)
        barrier()
        coop_store(c20, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 2, 0, M, N)
        barrier()
        coop_store(c21, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 2, 1, M, N)
        barrier()
        coop_store(c22, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 2, 2, M, N)
        barrier()
        coop_store(c23, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 2, 3, M, N)
        barrier()
        coop_store(c30, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 3, 0, M, N)
        barrier()
        coop_store(c31, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 3, 1, M, N)
        barrier()
        coop_store(c32, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 3, 2, M, N)
        barrier()
        coop_store(c33, st, so, ST)
        barrier()
        put_staged(c, h, st, cbase, m0, n0, 3, 3, M, N)
