"""A candidate for kernels/lib_mm_f16.py (bench/coop_bench.py --split): the library's design
(128 x 256 blocks of 8 subgroups, 32-deep K steps through one set of panels) with its K loop
split in two: a block inside C with vec4 rows runs the steps whose next step lies inside K
in a loop whose body has only unguarded vec4 loads, then the rest (and every step of an
edge block) in the library's guarded loop. The library's one loop holds both load paths,
so the driver compiles the scalar path's temporaries into the loop that carries the 16
accumulators; the GLSL witness (interior loads only) ran 1.5-1.7x the 16-deep kernel.
Whether that is register pressure from the guarded path is what this measures. Edges,
batches, both outputs, bindings and scalars as lib_mm_f16 (grid x: N in blocks of 256).
The blocking constants and the helpers `quad` and `put_staged` are lib_mm_f16's own.
"""

from kernels.lib_mm_f16 import (BK, BM, BN, PA, PB, SA, SAREA, SB, ST, WG, put_staged,
                                quad)
from vyre_build.lang import (Buffer, barrier, coop_fill, coop_load_a, coop_load_b, coop_mma,
                             coop_store, f16, f32, kernel, local_id, shared, subgroup_id, u32,
                             vec4h, workgroup_id)

def staged_mm(pa: Buffer[vec4h, "rw"], pb: Buffer[vec4h, "rw"], st: Buffer[f32, "rw"], a: Buffer[f16],
              a4: Buffer[vec4h], b: Buffer[f16], b4: Buffer[vec4h], c: Buffer[f32, "w"],
              h: Buffer[f16, "w"], M: u32, N: u32, K: u32, sa: u32, sb: u32, sc: u32, va: u32,
              vb: u32) -> None:
    """The kernel's body past its shared arrays (pa, pb: the panels; st: the staging
    areas)."""
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


@kernel(workgroup_size=WG, grid=("gx", "gy", "gz"), shared_bytes=49152,
        variants={"f32": {"HALF": 0, "E": f16, "V": vec4h}, "f16": {"HALF": 1, "E": f16, "V": vec4h}})
def mm_f16_split(a: Buffer[f16], a4: Buffer[vec4h], b: Buffer[f16], b4: Buffer[vec4h],
               c: Buffer[f32, "w"], h: Buffer[f16, "w"], M: u32, N: u32, K: u32, sa: u32, sb: u32, sc: u32,
               va: u32, vb: u32, gx: u32, gy: u32, gz: u32):
    pa = shared(vec4h, PA)  # [row m][k / 4], rows of SA values
    pb = shared(vec4h, PB)  # [row k][n / 4], rows of SB values
    st = shared(f32, 8 * SAREA)  # [quarter][16][ST]: the staged output fragments
    staged_mm(pa, pb, st, a, a4, b, b4, c, h, M, N, K, sa, sb, sc, va, vb)
