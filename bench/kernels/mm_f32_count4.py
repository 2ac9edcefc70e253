"""Candidate: lib_matmul (f32) with its fast K loop four steps an iteration as a counted `for` (so that
the wgpu backend can leave out naga's loop-bounding counter)."""
from vyre_build.lang import (Buffer, f32, min, vec4f, barrier, fma, kernel, local_id, shared, u32, unroll,
                             workgroup_id)



def put4(out: Buffer[f32, "w"], i: u32, limit: u32, r: vec4f) -> None:
    if i < limit:
        out[i] = r.x
    if i + 1 < limit:
        out[i + 1] = r.y
    if i + 2 < limit:
        out[i + 2] = r.z
    if i + 3 < limit:
        out[i + 3] = r.w

RM = 2  # row groups of 4 per invocation, 64 rows apart: BM = 64 * RM
RN = 2  # column groups of 4 per invocation, 64 columns apart: BN = 64 * RN
BK = 8  # the depth of a step
PA = 0  # vec4s of padding after each k row of A's panel
SB = 16384  # the shared memory the kernel declares, in bytes
WG = 256


def at(m: Buffer[f32], row: u32, col: u32, rows: u32, cols: u32) -> f32:
    return m[row * cols + col] if row < rows and col < cols else f32(0.0)


def put(c: Buffer[f32, "w"], row: u32, col: u32, v: vec4f, M: u32, N: u32) -> None:
    # C[row, col .. col+3], the columns below N
    if row < M:
        put4(c, row * N + col, row * N + N, v)


@kernel(workgroup_size=WG, grid=(1, 1), shared_bytes=SB)
def mm_count4(a: Buffer[f32], b: Buffer[f32], b4: Buffer[vec4f], c: Buffer[f32, "w"], M: u32, N: u32,
               K: u32, vb: u32):
    # A's panel: [buffer][k][groups of 4 rows: 16 * RM, or WG // BK where more, + PA]; B's:
    # [buffer][rows: BK, or WG // (16 * RN) where more][16 * RN groups of 4 columns]. B's
    # indices are A's (`row`, `nxt`) where the two have the same shape: B's panel is one vec4
    # per invocation (16 * RN * BK == WG: buffers of WG vec4s in rows of 16 * RN) and A's rows
    # are as long as B's (A's row stride WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA is
    # 16 * RN, so its buffers are BK * 16 * RN = WG vec4s too). Not so for RM = 2, RN = 1,
    # BK = 16 (rows of 32 vec4s in A's panel, 16 in B's), nor with padding. (The stride is
    # spelt out, not a module constant: those are folded with the module's values, not a
    # variant's. The 512-vec4 panels of RM = RN = 2, BK = 16 have the same shape as well but
    # keep B's own indices, as before.)
    sa = shared(vec4f, 2 * BK * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA))
    sb = shared(vec4f, 2 * (WG * (1 + 16 * RN * BK // (2 * WG))))
    lid = local_id().x
    tx = lid % 16
    ty = (lid // 16) % 16  # the "% 16" lets the range analysis drop the checks on sa
    m0 = workgroup_id().y * (64 * RM)
    n0 = workgroup_id().x * (64 * RN)
    # what this invocation loads: A rows m0+4*ag.. at column ak, B row bk at columns n0+4*bg..
    # (where a panel is smaller than the workgroup, 16 * RM * BK or 16 * RN * BK below 256,
    # the invocations past it load the rows after it into the spare rows of their buffer,
    # which no step reads: the next block's rows of A, the next step's rows of B; where a
    # panel holds 512, each invocation loads a second vec4 of it, 64 rows of A further on or
    # WG // (16 * RN) rows of B, straight into shared memory before the step computes)
    ak = lid % BK
    ag = (lid // BK) % (WG // BK)
    bk = (lid // (16 * RN)) % (WG // (16 * RN))
    bg = lid % (16 * RN)
    ar = m0 + 4 * ag
    bc = n0 + 4 * bg
    sa[ak * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) + ag] = vec4f(
        at(a, ar, ak, M, K), at(a, ar + 1, ak, M, K), at(a, ar + 2, ak, M, K),
        at(a, ar + 3, ak, M, K))
    sb[bk * (16 * RN) + bg] = vec4f(at(b, bk, bc, K, N), at(b, bk, bc + 1, K, N),
                                at(b, bk, bc + 2, K, N), at(b, bk, bc + 3, K, N))
    # (the second vec4s: no helper and no new name here, so the kernel of a variant with
    # one vec4 per panel has nothing of them, not even a declaration)
    if 16 * RM * BK > WG:
        sa[ak * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) + ag + WG // BK] = vec4f(
            a[(ar + 64) * K + ak] if ar + 64 < M and ak < K else f32(0.0), a[(ar + 65) * K + ak] if ar + 65 < M and ak < K else f32(0.0),
            a[(ar + 66) * K + ak] if ar + 66 < M and ak < K else f32(0.0), a[(ar + 67) * K + ak] if ar + 67 < M and ak < K else f32(0.0))
    if 16 * RN * BK > WG:
        sb[(bk + WG // (16 * RN)) * (16 * RN) + bg] = vec4f(
            b[(bk + WG // (16 * RN)) * N + bc] if bk + WG // (16 * RN) < K and bc < N else f32(0.0),
            b[(bk + WG // (16 * RN)) * N + bc + 1] if bk + WG // (16 * RN) < K and bc + 1 < N else f32(0.0),
            b[(bk + WG // (16 * RN)) * N + bc + 2] if bk + WG // (16 * RN) < K and bc + 2 < N else f32(0.0),
            b[(bk + WG // (16 * RN)) * N + bc + 3] if bk + WG // (16 * RN) < K and bc + 3 < N else f32(0.0))
    barrier()
    z = vec4f(f32(0.0))
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
    s0 = u32(0)
    if 16 * RM * BK == WG and 16 * RN * BK == WG:
        # (a variant with one vec4 of each panel per invocation: f32, f32_pad, f32_64, f32_64p)
        # a block inside C with B's rows in whole vec4s (vb) runs the steps whose next step
        # lies inside K in a loop of unguarded loads (B's by vec4s): no guard's temporaries
        # beside the accumulators, as lib_mm_f16's fast loop
        if vb == 1 and m0 + 64 * RM <= M and n0 + 64 * RN <= N:
            for it in range(u32(0), (K // BK - min(K // BK, u32(1))) // 4):
                # two steps an iteration (s0 even), so that the panel half h is a constant in
                # each copy, as NVIDIA's driver makes it by unrolling our SPIR-vec4f's loop by
                # two, and not naga's: 1.07-1.09x on wgpu, 1.03-1.04x on Vulkan (an H100,
                # 2026-12-06). An odd last such step goes to the loop below.
                for h in unroll(u32(4)):
                    cur = (h % 2) * (BK * (WG // BK + PA))
                    k1 = (4 * it + h + 1) * BK
                    pa0 = a[ar * K + k1 + ak]
                    pa1 = a[(ar + 1) * K + k1 + ak]
                    pa2 = a[(ar + 2) * K + k1 + ak]
                    pa3 = a[(ar + 3) * K + k1 + ak]
                    pb = b4[((k1 + bk) * N + bc) // 4]
                    for k in unroll(u32(BK)):
                        row = cur + k * (WG // BK + PA)
                        alo = sa[row + ty]
                        if RM == 2:
                            ahi = sa[row + 16 + ty]
                        blo = sb[(row if WG // BK + PA == 16 * RN else (h % 2) * WG + k * (16 * RN)) + tx]
                        if RN == 2:
                            bhi = sb[(row if WG // BK + PA == 16 * RN else (h % 2) * WG + k * (16 * RN)) + 16 + tx]
                        c00 = fma(blo, alo.x, c00)
                        if RN == 2:
                            c01 = fma(bhi, alo.x, c01)
                        c10 = fma(blo, alo.y, c10)
                        if RN == 2:
                            c11 = fma(bhi, alo.y, c11)
                        c20 = fma(blo, alo.z, c20)
                        if RN == 2:
                            c21 = fma(bhi, alo.z, c21)
                        c30 = fma(blo, alo.w, c30)
                        if RN == 2:
                            c31 = fma(bhi, alo.w, c31)
                        if RM == 2:
                            c40 = fma(blo, ahi.x, c40)
                            c41 = fma(bhi, ahi.x, c41)
                            c50 = fma(blo, ahi.y, c50)
                            c51 = fma(bhi, ahi.y, c51)
                            c60 = fma(blo, ahi.z, c60)
                            c61 = fma(bhi, ahi.z, c61)
                            c70 = fma(blo, ahi.w, c70)
                            c71 = fma(bhi, ahi.w, c71)
                    nxt = BK * (WG // BK + PA) - cur
                    sa[nxt + ak * (WG // BK + PA) + ag] = vec4f(pa0, pa1, pa2, pa3)
                    sb[(nxt if WG // BK + PA == 16 * RN else WG - (h % 2) * WG) + bk * (16 * RN) + bg] = pb
                    barrier()
            s0 = (K // BK - min(K // BK, u32(1))) // 4 * 4
    for s in range(s0, steps):
        # the rest (every step of an edge block, and of a variant with two vec4s of a panel
        # per invocation or spare rows): guarded loads, zeros past the edges
        cur = (s % 2) * (BK * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA))
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
        # the next step's second vec4s, into the buffer no invocation reads in this step
        if 16 * RM * BK > WG:
            sa[BK * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) - cur + ak * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) + ag + WG // BK] = vec4f(
                a[(ar + 64) * K + k1 + ak] if ar + 64 < M and k1 + ak < K else f32(0.0), a[(ar + 65) * K + k1 + ak] if ar + 65 < M and k1 + ak < K else f32(0.0),
                a[(ar + 66) * K + k1 + ak] if ar + 66 < M and k1 + ak < K else f32(0.0), a[(ar + 67) * K + k1 + ak] if ar + 67 < M and k1 + ak < K else f32(0.0))
        if 16 * RN * BK > WG:
            sb[(WG * (1 + 16 * RN * BK // (2 * WG))) - (s % 2) * (WG * (1 + 16 * RN * BK // (2 * WG))) + (bk + WG // (16 * RN)) * (16 * RN) + bg] = vec4f(
                b[(k1 + bk + WG // (16 * RN)) * N + bc] if k1 + bk + WG // (16 * RN) < K and bc < N else f32(0.0),
                b[(k1 + bk + WG // (16 * RN)) * N + bc + 1] if k1 + bk + WG // (16 * RN) < K and bc + 1 < N else f32(0.0),
                b[(k1 + bk + WG // (16 * RN)) * N + bc + 2] if k1 + bk + WG // (16 * RN) < K and bc + 2 < N else f32(0.0),
                b[(k1 + bk + WG // (16 * RN)) * N + bc + 3] if k1 + bk + WG // (16 * RN) < K and bc + 3 < N else f32(0.0))
        for k in unroll(u32(BK)):
            row = cur + k * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA)
            alo = sa[row + ty]
            if RM == 2:
                ahi = sa[row + 16 + ty]
            blo = sb[(row if 16 * RN * BK == WG and WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA == 16 * RN else
                      (s % 2) * (WG * (1 + 16 * RN * BK // (2 * WG))) + k * (16 * RN)) + tx]
            if RN == 2:
                bhi = sb[(row if 16 * RN * BK == WG and WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA == 16 * RN else
                          (s % 2) * (WG * (1 + 16 * RN * BK // (2 * WG))) + k * (16 * RN)) + 16 + tx]
            c00 = fma(blo, alo.x, c00)
            if RN == 2:
                c01 = fma(bhi, alo.x, c01)
            c10 = fma(blo, alo.y, c10)
            if RN == 2:
                c11 = fma(bhi, alo.y, c11)
            c20 = fma(blo, alo.z, c20)
            if RN == 2:
                c21 = fma(bhi, alo.z, c21)
            c30 = fma(blo, alo.w, c30)
            if RN == 2:
                c31 = fma(bhi, alo.w, c31)
            if RM == 2:
                c40 = fma(blo, ahi.x, c40)
                if RN == 2:
                    c41 = fma(bhi, ahi.x, c41)
                c50 = fma(blo, ahi.y, c50)
                if RN == 2:
                    c51 = fma(bhi, ahi.y, c51)
                c60 = fma(blo, ahi.z, c60)
                if RN == 2:
                    c61 = fma(bhi, ahi.z, c61)
                c70 = fma(blo, ahi.w, c70)
                if RN == 2:
                    c71 = fma(bhi, ahi.w, c71)
        nxt = BK * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) - cur
        sa[nxt + ak * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) + ag] = vec4f(pa0, pa1, pa2, pa3)
        sb[(nxt if 16 * RN * BK == WG and WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA == 16 * RN else (WG * (1 + 16 * RN * BK // (2 * WG))) - (s % 2) * (WG * (1 + 16 * RN * BK // (2 * WG))))
           + bk * (16 * RN) + bg] = vec4f(pb0, pb1, pb2, pb3)
        barrier()
    r0 = m0 + 4 * ty
    r1 = r0 + 64
    q0 = n0 + 4 * tx
    q1 = q0 + 64
    put(c, r0, q0, c00, M, N)
    if RN == 2:
        put(c, r0, q1, c01, M, N)
    put(c, r0 + 1, q0, c10, M, N)
    if RN == 2:
        put(c, r0 + 1, q1, c11, M, N)
    put(c, r0 + 2, q0, c20, M, N)
    if RN == 2:
        put(c, r0 + 2, q1, c21, M, N)
    put(c, r0 + 3, q0, c30, M, N)
    if RN == 2:
        put(c, r0 + 3, q1, c31, M, N)
    if RM == 2:
        put(c, r1, q0, c40, M, N)
        if RN == 2:
            put(c, r1, q1, c41, M, N)
        put(c, r1 + 1, q0, c50, M, N)
        if RN == 2:
            put(c, r1 + 1, q1, c51, M, N)
        put(c, r1 + 2, q0, c60, M, N)
        if RN == 2:
            put(c, r1 + 2, q1, c61, M, N)
        put(c, r1 + 3, q0, c70, M, N)
        if RN == 2:
            put(c, r1 + 3, q1, c71, M, N)
