"""Staged fp16 matrix multiply on cooperative matrices (tensor cores), f32 accumulation:
C[z] (M x N) = A[z] (M x K, f16) x B[z] (K x N, f16), row-major, any M, N, K, a batch z on
the grid's third axis (batch strides sa, sb, sc in elements; 0 broadcasts that operand).

A workgroup of WG = 256 invocations (8 subgroups of 32) computes a BM x BN = 128 x 256
block of C; subgroup w (subgroup_id() % 8) computes the 64 x 64 quarter (w // 4, w % 4) as
4 x 4 fragments of 16 x 16 with f32 accumulators. K goes by in steps of BK = 32 through
one set of shared panels (37 KiB with the staging areas; a double-buffered 32-deep pair
would pass 48 KiB): the whole workgroup moves A's 128 x 32 panel (rows padded to 40
values) and B's 32 x 256 panel (rows of 264) from global memory into shared memory (V
loads through a4 / b4 where the host says so: va = 1 needs K, sa and a's length multiples
of 4, vb = 1 the same of N, sb and b; scalar loads otherwise; zeros past every edge). The
next step's panels are in registers (4 + 8 V loads per invocation) while this step's two
16-deep fragment products run, then two barriers: before the panels are overwritten and
after. The K loop is split in two: a block inside C with vec4 rows runs the steps whose
next step lies inside K in a loop whose body holds only unguarded V loads, then the rest
(and every step of an edge block) in a loop of guarded loads. One loop holding both load
paths made the driver keep the scalar path's temporaries beside the 16 accumulators: on
the H200 (2026-12-05) that kernel ran 153-161 TFLOP/s, this one 201-227 (1.31-1.44x;
bench/coop_bench.py, bench/RESULTS.md). The 16-deep double-buffered design (0f6e9b5) ran
127-130 on an H100, the 128 x 128 design (bench/kernels/mm_f16_narrow.py) 97-102 on the H200.
The unguarded loop's loads still carry the language's bounds rule in the code (their indices
are affine in M, K and the lengths: the range analysis cannot prove them); on a device that
keeps the rule itself (robustBufferAccess2; docs/runtime.md, "Checks the device keeps") the
runtime switches it off, which made this kernel 1.13-1.17x faster on an H100 (2026-12-06).

Stores: a block that lies inside C with N a multiple of 4 stores its f32 fragments
straight into C; otherwise (and always for f16 output) each fragment goes through a
16 x 16 staging area in shared memory and out by guarded scalar stores, so nothing past
an edge is written. On a device whose subgroups are narrower than 32, several subgroups
compute the same quarter and store equal values; subgroups wider than 32 would leave
quarters unwritten, so library.matmul_f16 refuses such a device. Grid x covers N in
blocks of 256 (gx = ceil(N / 256) * 256), y M in blocks of 128.
C is `c` (f32) in variant f32 and `h` (f16) in variant f16 (variants.yaml sets HALF); the
other one is not touched (bind any small buffer of its type). The body is the helper
`staged_mm`, over the element type E and its vec4 type V (variants.yaml: f16 and vec4h
here; kernels/lib_mm_bf16.py runs it on bf16 and vec4bf).
"""

from vyre_build.lang import (Buffer, barrier, coop_fill, coop_load_a, coop_load_b, coop_mma,
                             coop_store, f32, kernel, local_id, shared, subgroup_id, u32,
                             workgroup_id)

BM = 128
BN = 256
BK = 32
WG = 256
SA = 40  # padded row of A's panel, in values (80 bytes: a multiple of 16, 20 banks apart)
SB = 264  # padded row of B's panel, in values (528 bytes: 132 banks, 4 apart mod 32)
PA = BM * SA // 4  # vec4s (V) in A's panel
PB = BK * SB // 4  # vec4s (V) in B's panel
ST = 20  # padded row of a staging area, in f32 (16 values + 4)
SAREA = 16 * ST  # f32 in one subgroup's staging area


def quad(x: Buffer[E], x4: Buffer[V], base: u32, row: u32, col: u32, rows: u32,
         cols: u32, vec: u32) -> V:
    """x[base + row * cols + col .. +3] (row-major rows x cols), zeros past the edges; as one
    V load when `vec` (cols a multiple of 4, so the four are in or out together)."""
    r = V(E(0.0))
    if row < rows and col < cols:
        i = base + row * cols + col
        if vec == 1:
            r = x4[i // 4]
        else:
            r = V(x[i], x[i + 1] if col + 1 < cols else E(0.0),
                      x[i + 2] if col + 2 < cols else E(0.0),
                      x[i + 3] if col + 3 < cols else E(0.0))
    return r


def put_staged(c: Buffer[f32, "w"], h: Buffer[E, "w"], st: Buffer[f32, "rw"], base: u32,
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
                h[base + row * N + col] = E(v)
            else:
                c[base + row * N + col] = v


def staged_mm(pa: Buffer[V, "rw"], pb: Buffer[V, "rw"], st: Buffer[f32, "rw"], a: Buffer[E],
              a4: Buffer[V], b: Buffer[E], b4: Buffer[V], c: Buffer[f32, "w"],
              h: Buffer[E, "w"], M: u32, N: u32, K: u32, sa: u32, sb: u32, sc: u32, va: u32,
              vb: u32) -> None:
    """The kernel's body past its shared arrays (pa, pb: the panels; st: the staging
    areas), for inputs of E (f16, or bf16 in lib_mm_bf16.py) with V their vec4 type."""
    lid = local_id().x
    w = subgroup_id() % 8
    wm = (w // 4) * 64
    wn = (w % 4) * 64
    z = workgroup_id().z
    m0 = workgroup_id().y * BM
    n0 = workgroup_id().x * BN
    abase = z * sa
    bbase = z * sb
    # what this invocation moves: A rows ar + 32 * t (t in 0..3) at k column 4 * ac; B rows
    # br + 4 * t (t in 0..7) at n column 4 * bc
    ar = lid // 8
    ac = lid % 8
    br = lid // 64
    bc = lid % 64
    for t in range(u32(4)):
        pa[(ar + 32 * t) * (SA // 4) + ac] = quad(a, a4, abase, m0 + ar + 32 * t, 4 * ac, M, K,
                                                  va)
    for t in range(u32(8)):
        pb[(br + 4 * t) * (SB // 4) + bc] = quad(b, b4, bbase, br + 4 * t, n0 + 4 * bc, K, N,
                                                 vb)
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
    fast = u32(1) if va == 1 and vb == 1 and m0 + BM <= M and n0 + BN <= N else u32(0)
    steps = (K + BK - 1) // BK
    s0 = u32(0)
    if fast == 1:
        # a block inside C with vec4 rows: the steps whose next step lies inside K, in a loop
        # of unguarded loads alone (no scalar path in its body)
        while s0 + 1 < K // BK:
            k1 = (s0 + 1) * BK
            p0 = a4[(abase + (m0 + ar) * K + k1 + 4 * ac) // 4]
            p1 = a4[(abase + (m0 + ar + 32) * K + k1 + 4 * ac) // 4]
            p2 = a4[(abase + (m0 + ar + 64) * K + k1 + 4 * ac) // 4]
            p3 = a4[(abase + (m0 + ar + 96) * K + k1 + 4 * ac) // 4]
            q0 = b4[(bbase + (k1 + br) * N + n0 + 4 * bc) // 4]
            q1 = b4[(bbase + (k1 + br + 4) * N + n0 + 4 * bc) // 4]
            q2 = b4[(bbase + (k1 + br + 8) * N + n0 + 4 * bc) // 4]
            q3 = b4[(bbase + (k1 + br + 12) * N + n0 + 4 * bc) // 4]
            q4 = b4[(bbase + (k1 + br + 16) * N + n0 + 4 * bc) // 4]
            q5 = b4[(bbase + (k1 + br + 20) * N + n0 + 4 * bc) // 4]
            q6 = b4[(bbase + (k1 + br + 24) * N + n0 + 4 * bc) // 4]
            q7 = b4[(bbase + (k1 + br + 28) * N + n0 + 4 * bc) // 4]
            ka = wm * SA
            kb = wn
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
            ka = wm * SA + 16
            kb = 16 * SB + wn
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
            pa[(ar) * (SA // 4) + ac] = p0
            pa[(ar + 32) * (SA // 4) + ac] = p1
            pa[(ar + 64) * (SA // 4) + ac] = p2
            pa[(ar + 96) * (SA // 4) + ac] = p3
            pb[(br) * (SB // 4) + bc] = q0
            pb[(br + 4) * (SB // 4) + bc] = q1
            pb[(br + 8) * (SB // 4) + bc] = q2
            pb[(br + 12) * (SB // 4) + bc] = q3
            pb[(br + 16) * (SB // 4) + bc] = q4
            pb[(br + 20) * (SB // 4) + bc] = q5
            pb[(br + 24) * (SB // 4) + bc] = q6
            pb[(br + 28) * (SB // 4) + bc] = q7
            barrier()
            s0 += 1
    for s in range(s0, steps):
        # the rest (every step of an edge block): guarded loads, zeros past the edges
        k1 = (s + 1) * BK
        p0 = quad(a, a4, abase, m0 + ar, k1 + 4 * ac, M, K, va)
        p1 = quad(a, a4, abase, m0 + ar + 32, k1 + 4 * ac, M, K, va)
        p2 = quad(a, a4, abase, m0 + ar + 64, k1 + 4 * ac, M, K, va)
        p3 = quad(a, a4, abase, m0 + ar + 96, k1 + 4 * ac, M, K, va)
        q0 = quad(b, b4, bbase, k1 + br, n0 + 4 * bc, K, N, vb)
        q1 = quad(b, b4, bbase, k1 + br + 4, n0 + 4 * bc, K, N, vb)
        q2 = quad(b, b4, bbase, k1 + br + 8, n0 + 4 * bc, K, N, vb)
        q3 = quad(b, b4, bbase, k1 + br + 12, n0 + 4 * bc, K, N, vb)
        q4 = quad(b, b4, bbase, k1 + br + 16, n0 + 4 * bc, K, N, vb)
        q5 = quad(b, b4, bbase, k1 + br + 20, n0 + 4 * bc, K, N, vb)
        q6 = quad(b, b4, bbase, k1 + br + 24, n0 + 4 * bc, K, N, vb)
        q7 = quad(b, b4, bbase, k1 + br + 28, n0 + 4 * bc, K, N, vb)
        ka = wm * SA
        kb = wn
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
        ka = wm * SA + 16
        kb = 16 * SB + wn
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
        pa[(ar) * (SA // 4) + ac] = p0
        pa[(ar + 32) * (SA // 4) + ac] = p1
        pa[(ar + 64) * (SA // 4) + ac] = p2
        pa[(ar + 96) * (SA // 4) + ac] = p3
        pb[(br) * (SB // 4) + bc] = q0
        pb[(br + 4) * (SB // 4) + bc] = q1
        pb[(br + 8) * (SB // 4) + bc] = q2
        pb[(br + 12) * (SB // 4) + bc] = q3
        pb[(br + 16) * (SB // 4) + bc] = q4
        pb[(br + 20) * (SB // 4) + bc] = q5
        pb[(br + 24) * (SB // 4) + bc] = q6
        pb[(br + 28) * (SB // 4) + bc] = q7
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


@kernel(workgroup_size=WG, grid=("gx", "gy", "gz"), shared_bytes=49152)
def lib_mm_f16(a: Buffer[E], a4: Buffer[V], b: Buffer[E], b4: Buffer[V],
               c: Buffer[f32, "w"], h: Buffer[E, "w"], M: u32, N: u32, K: u32, sa: u32, sb: u32, sc: u32,
               va: u32, vb: u32, gx: u32, gy: u32, gz: u32):
    pa = shared(V, PA)  # [row m][k / 4], rows of SA values
    pb = shared(V, PB)  # [row k][n / 4], rows of SB values
    st = shared(f32, 8 * SAREA)  # [quarter][16][ST]: the staged output fragments
    staged_mm(pa, pb, st, a, a4, b, b4, c, h, M, N, K, sa, sb, sc, va, vb)
