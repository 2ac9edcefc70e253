"""A bench candidate (bench/mm_f16_designs.py --candidate mm_f16_128.py): kernels/lib_mm_f16.py's
staged_mm ported to 128 x 128 blocks of four subgroups (WG = 128, 24 KiB of shared memory),
on f16 with the library's bindings and scalars; grid x covers N in blocks of 128. With
8-byte panel elements the GLSL 128 x 128 design runs 1.22-1.23x its 128 x 256 one on an
H100, but this port ran no faster than the library (bench/RESULTS.md, 2026-12-06). Variant
`interior` (INTERIOR = 1) leaves out everything an interior block never runs (the guarded
K loop, the staged stores), the last K step taken in the unguarded loop with its prefetch
skipped, as the GLSL design does: only for M, N multiples of 128 and K of 32, with
va = vb = 1. It tells whether the edge code is what holds the port back: it is not (H100,
2026-12-06: f32 201.4 / 214.2 TFLOP/s at 4096 / 8192, interior 183.5 / 190.8, the GLSL
design 256.3 / 268.8; bench/RESULTS.md).
"""

from vyre_build.lang import (Buffer, barrier, coop_fill, coop_load_a, coop_load_b, coop_mma,
                             coop_store, f16, f32, kernel, local_array, local_id, shared,
                             subgroup_id, u32, unroll, vec4h, workgroup_id)

BM = 128
BN = 128
BK = 32
WG = 128  # 4 subgroups of 32, each a 64 x 64 quarter of the block
QN = BN // 64  # quarters across the block
QUARTERS = (BM // 64) * QN
SA = 40  # padded row of A's panel, in values (80 bytes: a multiple of 16, 20 banks apart)
SB = 136  # padded row of B's panel, in values (272 bytes: 68 banks, 4 apart mod 32)
PA = BM * SA // 4  # vec4s (vec4h) in A's panel
PB = BK * SB // 4  # vec4s (vec4h) in B's panel
CA = BK // 4  # vec4s in a row of A's panel (unpadded)
CB = BN // 4  # vec4s in a row of B's panel (unpadded)
RA = WG // CA  # A rows the workgroup moves at once
RB = WG // CB  # B rows the workgroup moves at once
NA = BM // RA  # vec4s of A each invocation moves per step
NB = BK // RB  # vec4s of B each invocation moves per step
ST = 20  # padded row of a staging area, in f32 (16 values + 4)
SAREA = 16 * ST  # f32 in one subgroup's staging area


def quad(x: Buffer[f16], x4: Buffer[vec4h], base: u32, row: u32, col: u32, rows: u32,
         cols: u32, vec: u32) -> vec4h:
    """x[base + row * cols + col .. +3] (row-major rows x cols), zeros past the edges; as one
    vec4h load when `vec` (cols a multiple of 4, so the four are in or out together)."""
    r = vec4h(f16(0.0))
    if row < rows and col < cols:
        i = base + row * cols + col
        if vec == 1:
            r = x4[i // 4]
        else:
            r = vec4h(x[i], x[i + 1] if col + 1 < cols else f16(0.0),
                      x[i + 2] if col + 2 < cols else f16(0.0),
                      x[i + 3] if col + 3 < cols else f16(0.0))
    return r


def put_staged(c: Buffer[f32, "w"], h: Buffer[f16, "w"], st: Buffer[f32, "rw"], base: u32,
               m0: u32, n0: u32, i: u32, j: u32, M: u32, N: u32) -> None:
    """After a barrier: fragment (i, j) of every quarter, staged in `st`, into C with
    guarded stores (each invocation QUARTERS * 256 / WG of the QUARTERS x 256 values)."""
    lid = local_id().x
    for t in range(u32(QUARTERS * 256 // WG)):
        e = lid + t * WG
        q = e // 256  # the quarter, hence the staging area
        r = (e // 16) % 16
        s = e % 16
        row = m0 + (q // QN) * 64 + i * 16 + r
        col = n0 + (q % QN) * 64 + j * 16 + s
        if row < M and col < N:
            v = st[q * SAREA + r * ST + s]
            if HALF == 1:
                h[base + row * N + col] = f16(v)
            else:
                c[base + row * N + col] = v


def staged_mm(pa: Buffer[vec4h, "rw"], pb: Buffer[vec4h, "rw"], st: Buffer[f32, "rw"],
              pf: Buffer[vec4h, "rw"], qf: Buffer[vec4h, "rw"], a: Buffer[f16], a4: Buffer[vec4h],
              b: Buffer[f16], b4: Buffer[vec4h], c: Buffer[f32, "w"], h: Buffer[f16, "w"], M: u32,
              N: u32, K: u32, sa: u32, sb: u32, sc: u32, va: u32, vb: u32) -> None:
    """The kernel's body past its arrays (pa, pb: the panels; st: the staging areas; pf,
    qf: the next step's panel values, local arrays of NA and NB), for inputs of f16 (f16, or
    bf16 in lib_mm_bf16.py) with vec4h their vec4 type."""
    lid = local_id().x
    w = subgroup_id() % QUARTERS
    wm = (w // QN) * 64
    wn = (w % QN) * 64
    z = workgroup_id().z
    m0 = workgroup_id().y * BM
    n0 = workgroup_id().x * BN
    abase = z * sa
    bbase = z * sb
    # what this invocation moves: A rows ar + RA * t (t < NA) at k column 4 * ac; B rows
    # br + RB * t (t < NB) at n column 4 * bc; the next step's in registers (pf, qf: the
    # kernel's local arrays, indexed by unrolled counters only)
    ar = lid // CA
    ac = lid % CA
    br = lid // CB
    bc = lid % CB
    for t in unroll(NA):
        pa[(ar + RA * t) * (SA // 4) + ac] = quad(a, a4, abase, m0 + ar + RA * t, 4 * ac, M, K,
                                                  va)
    for t in unroll(NB):
        pb[(br + RB * t) * (SB // 4) + bc] = quad(b, b4, bbase, br + RB * t, n0 + 4 * bc, K, N,
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
    if INTERIOR == 1:
        # interior blocks only (the bench variant): every step in one loop, the last
        # one without a prefetch, as the GLSL design
        while s0 < K // BK:
            if s0 + 1 < K // BK:
                k1 = (s0 + 1) * BK
                for t in unroll(NA):
                    pf[t] = a4[(abase + (m0 + ar + RA * t) * K + k1 + 4 * ac) // 4]
                for t in unroll(NB):
                    qf[t] = b4[(bbase + (k1 + br + RB * t) * N + n0 + 4 * bc) // 4]
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
            if s0 + 1 < K // BK:
                barrier()
                for t in unroll(NA):
                    pa[(ar + RA * t) * (SA // 4) + ac] = pf[t]
                for t in unroll(NB):
                    pb[(br + RB * t) * (SB // 4) + bc] = qf[t]
                barrier()
            s0 += 1
    else:
        if fast == 1:
            # a block inside C with vec4 rows: the steps whose next step lies inside K, in a loop
            # of unguarded loads alone (no scalar path in its body)
            while s0 + 1 < K // BK:
                k1 = (s0 + 1) * BK
                for t in unroll(NA):
                    pf[t] = a4[(abase + (m0 + ar + RA * t) * K + k1 + 4 * ac) // 4]
                for t in unroll(NB):
                    qf[t] = b4[(bbase + (k1 + br + RB * t) * N + n0 + 4 * bc) // 4]
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
                for t in unroll(NA):
                    pa[(ar + RA * t) * (SA // 4) + ac] = pf[t]
                for t in unroll(NB):
                    pb[(br + RB * t) * (SB // 4) + bc] = qf[t]
                barrier()
                s0 += 1
        for s in range(s0, steps):
            # the rest (every step of an edge block): guarded loads, zeros past the edges
            k1 = (s + 1) * BK
            for t in unroll(NA):
                pf[t] = quad(a, a4, abase, m0 + ar + RA * t, k1 + 4 * ac, M, K, va)
            for t in unroll(NB):
                qf[t] = quad(b, b4, bbase, k1 + br + RB * t, n0 + 4 * bc, K, N, vb)
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
            for t in unroll(NA):
                pa[(ar + RA * t) * (SA // 4) + ac] = pf[t]
            for t in unroll(NB):
                pb[(br + RB * t) * (SB // 4) + bc] = qf[t]
            barrier()
    cbase = z * sc
    o = cbase + (m0 + wm) * N + n0 + wn
    if INTERIOR == 1:
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
    elif HALF == 0 and m0 + BM <= M and n0 + BN <= N and N % 4 == 0:
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


@kernel(workgroup_size=WG, grid=("gx", "gy", "gz"), shared_bytes=24576,
        variants={"f32": {"HALF": 0, "INTERIOR": 0}, "f16": {"HALF": 1, "INTERIOR": 0},
                  "interior": {"HALF": 0, "INTERIOR": 1}})
def mm_f16_128(a: Buffer[f16], a4: Buffer[vec4h], b: Buffer[f16], b4: Buffer[vec4h],
               c: Buffer[f32, "w"], h: Buffer[f16, "w"], M: u32, N: u32, K: u32, sa: u32, sb: u32, sc: u32,
               va: u32, vb: u32, gx: u32, gy: u32, gz: u32):
    pa = shared(vec4h, PA)  # [row m][k / 4], rows of SA values
    pb = shared(vec4h, PB)  # [row k][n / 4], rows of SB values
    st = shared(f32, QUARTERS * SAREA)  # [quarter][16][ST]: the staged output fragments
    pf = local_array(vec4h, NA)  # the next step's A values, in registers
    qf = local_array(vec4h, NB)  # and B's
    staged_mm(pa, pb, st, pf, qf, a, a4, b, b4, c, h, M, N, K, sa, sb, sc, va, vb)
