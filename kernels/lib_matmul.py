"""Library f32 matmul C = A @ B (A is M x K, B is K x N, row-major, any sizes), register
tiled, for vyre_build.library.matmul.

A workgroup of 256 invocations (tx, ty in 0..15) computes a BM x BN block of C, BM = 64 * RM
and BN = 64 * RN: each invocation holds RM x RN pieces of 4 x 4 in vec4 registers, rows
4*ty.. (and 64+4*ty.. when RM = 2), columns 4*tx.. (and 64+4*tx.. when RN = 2), so the
shared reads of a step are conflict-free vec4s. K goes by in steps of BK: A's BM x BK panel
(stored transposed, vec4s along m; each k row padded by PA vec4s, so that the panel's stores
do not collide in banks) and B's BK x BN panel sit in shared memory, double-buffered, while
the next panels' loads are already in flight in registers (one vec4 of each panel per
invocation); one barrier per step. A panel of 512 vec4s (a 128-wide block 16 deep) gives
each invocation a second vec4, loaded straight into the buffer no one reads in this step
before the step computes (so it costs no registers). A panel of 128 vec4s leaves half the
workgroup loading spare rows of its buffer that no step reads (so no load is guarded by
the invocation's index). Loads past an edge read 0, stores past an edge are skipped.

The K loop is split as lib_mm_f16's: in a variant with one vec4 of each panel per
invocation (f32, f32_pad, f32_64, f32_64p), a block inside C whose B rows are whole vec4s
(vb = 1: N a multiple of 4 and b4, b's vec4 view, bound) runs the steps whose next step
lies inside K in a loop of unguarded loads, B's by vec4s; the rest, and every step of an
edge block or another variant, in the loop of guarded loads. The unguarded loop takes two
steps an iteration, its body copied by the compiler (`unroll(u32(2))`) so that which half
of the double-buffered panels a step reads is a constant in each copy: NVIDIA's driver does
that itself to our SPIR-V's loop, not to the one naga makes of our WGSL (on an H100,
2026-12-06, bench/kernels/mm_f32_pair.py in the commit that added it: 1.07-1.09x on wgpu,
1.03-1.04x on Vulkan). On an H100 (2026-12-05,
bench/matmul_f32_bench.py) the split ran 34.1-35.2 TFLOP/s at 2048-8192 against 31.8-33.2
for the one loop (1.06-1.07x), and as fast as the design hand-written in GLSL without any
bounds rule (bench/glsl/sgemm.comp, vec4 B loads: 32.8-35.1). A step's inner loop is
unrolled by the compiler (`unroll(u32(BK))`: its shared-memory indices are constants in
the code each backend gets): on an H100 (2026-12-05 23:0x UTC, bench/matmul_f32_bench.py
--rolled) 41.2-42.9 TFLOP/s at 2048-8192 against 34.4-35.6 for `range` (1.20x, 0.82-0.86x
of torch fp32), and on wgpu 28.8-31.6 against 25.8-27.3 (1.11-1.16x).

The design's parameters are the module constants below (128 x 128, BK = 8, no padding: 16
KiB of shared memory, WebGPU's default limit: the variant f32); a variant rebinds them
(variants.yaml, beside T = f32 and V = vec4f): 16 * RM * BK and 16 * RN * BK must be 128,
256 or 512. SB is the shared memory the kernel declares (`shared_bytes`: variants with
padded or 16-deep 128-wide panels need more than 16 KiB, and the runtime refuses them on a
device with less). The code a variant does not use (`if` on constants) leaves nothing in
its kernel (f32 compiled to the same SPIR-V, WGSL and descriptor as before the parameters,
until its K steps were unrolled).
The library call takes the block's rows and columns from the matmul tunable's `tile_m`
and `tile_n` (or its `tile`; docs/tuning.md).
"""
from vyre_build.lang import (Buffer, barrier, fma, kernel, local_id, shared, u32, unroll,
                             workgroup_id)

from .lib_common import put4

RM = 2  # row groups of 4 per invocation, 64 rows apart: BM = 64 * RM
RN = 2  # column groups of 4 per invocation, 64 columns apart: BN = 64 * RN
BK = 8  # the depth of a step
PA = 0  # vec4s of padding after each k row of A's panel
SB = 16384  # the shared memory the kernel declares, in bytes
WG = 256


def at(m: Buffer[T], row: u32, col: u32, rows: u32, cols: u32) -> T:
    return m[row * cols + col] if row < rows and col < cols else T(0.0)


def put(c: Buffer[T, "w"], row: u32, col: u32, v: V, M: u32, N: u32) -> None:
    # C[row, col .. col+3], the columns below N
    if row < M:
        put4(c, row * N + col, row * N + N, v)


@kernel(workgroup_size=WG, grid=(1, 1), shared_bytes=SB)
def lib_matmul(a: Buffer[T], b: Buffer[T], b4: Buffer[V], c: Buffer[T, "w"], M: u32, N: u32,
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
    sa = shared(V, 2 * BK * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA))
    sb = shared(V, 2 * (WG * (1 + 16 * RN * BK // (2 * WG))))
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
    sa[ak * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) + ag] = V(
        at(a, ar, ak, M, K), at(a, ar + 1, ak, M, K), at(a, ar + 2, ak, M, K),
        at(a, ar + 3, ak, M, K))
    sb[bk * (16 * RN) + bg] = V(at(b, bk, bc, K, N), at(b, bk, bc + 1, K, N),
                                at(b, bk, bc + 2, K, N), at(b, bk, bc + 3, K, N))
    # (the second vec4s: no helper and no new name here, so the kernel of a variant with
    # one vec4 per panel has nothing of them, not even a declaration)
    if 16 * RM * BK > WG:
        sa[ak * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) + ag + WG // BK] = V(
            a[(ar + 64) * K + ak] if ar + 64 < M and ak < K else T(0.0), a[(ar + 65) * K + ak] if ar + 65 < M and ak < K else T(0.0),
            a[(ar + 66) * K + ak] if ar + 66 < M and ak < K else T(0.0), a[(ar + 67) * K + ak] if ar + 67 < M and ak < K else T(0.0))
    if 16 * RN * BK > WG:
        sb[(bk + WG // (16 * RN)) * (16 * RN) + bg] = V(
            b[(bk + WG // (16 * RN)) * N + bc] if bk + WG // (16 * RN) < K and bc < N else T(0.0),
            b[(bk + WG // (16 * RN)) * N + bc + 1] if bk + WG // (16 * RN) < K and bc + 1 < N else T(0.0),
            b[(bk + WG // (16 * RN)) * N + bc + 2] if bk + WG // (16 * RN) < K and bc + 2 < N else T(0.0),
            b[(bk + WG // (16 * RN)) * N + bc + 3] if bk + WG // (16 * RN) < K and bc + 3 < N else T(0.0))
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
    s0 = u32(0)
    if 16 * RM * BK == WG and 16 * RN * BK == WG:
        # (a variant with one vec4 of each panel per invocation: f32, f32_pad, f32_64, f32_64p)
        # a block inside C with B's rows in whole vec4s (vb) runs the steps whose next step
        # lies inside K in a loop of unguarded loads (B's by vec4s): no guard's temporaries
        # beside the accumulators, as lib_mm_f16's fast loop
        if vb == 1 and m0 + 64 * RM <= M and n0 + 64 * RN <= N:
            while s0 + 2 < K // BK:
                # two steps an iteration (s0 even), so that the panel half h is a constant in
                # each copy, as NVIDIA's driver makes it by unrolling our SPIR-V's loop by
                # two, and not naga's: 1.07-1.09x on wgpu, 1.03-1.04x on Vulkan (an H100,
                # 2026-12-06). An odd last such step goes to the loop below.
                for h in unroll(u32(2)):
                    cur = h * (BK * (WG // BK + PA))
                    k1 = (s0 + h + 1) * BK
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
                        blo = sb[(row if WG // BK + PA == 16 * RN else h * WG + k * (16 * RN)) + tx]
                        if RN == 2:
                            bhi = sb[(row if WG // BK + PA == 16 * RN else h * WG + k * (16 * RN)) + 16 + tx]
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
                    sa[nxt + ak * (WG // BK + PA) + ag] = V(pa0, pa1, pa2, pa3)
                    sb[(nxt if WG // BK + PA == 16 * RN else WG - h * WG) + bk * (16 * RN) + bg] = pb
                    barrier()
                s0 += 2
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
            sa[BK * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) - cur + ak * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) + ag + WG // BK] = V(
                a[(ar + 64) * K + k1 + ak] if ar + 64 < M and k1 + ak < K else T(0.0), a[(ar + 65) * K + k1 + ak] if ar + 65 < M and k1 + ak < K else T(0.0),
                a[(ar + 66) * K + k1 + ak] if ar + 66 < M and k1 + ak < K else T(0.0), a[(ar + 67) * K + k1 + ak] if ar + 67 < M and k1 + ak < K else T(0.0))
        if 16 * RN * BK > WG:
            sb[(WG * (1 + 16 * RN * BK // (2 * WG))) - (s % 2) * (WG * (1 + 16 * RN * BK // (2 * WG))) + (bk + WG // (16 * RN)) * (16 * RN) + bg] = V(
                b[(k1 + bk + WG // (16 * RN)) * N + bc] if k1 + bk + WG // (16 * RN) < K and bc < N else T(0.0),
                b[(k1 + bk + WG // (16 * RN)) * N + bc + 1] if k1 + bk + WG // (16 * RN) < K and bc + 1 < N else T(0.0),
                b[(k1 + bk + WG // (16 * RN)) * N + bc + 2] if k1 + bk + WG // (16 * RN) < K and bc + 2 < N else T(0.0),
                b[(k1 + bk + WG // (16 * RN)) * N + bc + 3] if k1 + bk + WG // (16 * RN) < K and bc + 3 < N else T(0.0))
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
        sa[nxt + ak * (WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA) + ag] = V(pa0, pa1, pa2, pa3)
        sb[(nxt if 16 * RN * BK == WG and WG // BK * (1 + 16 * RM * BK // (2 * WG)) + PA == 16 * RN else (WG * (1 + 16 * RN * BK // (2 * WG))) - (s % 2) * (WG * (1 + 16 * RN * BK // (2 * WG))))
           + bk * (16 * RN) + bg] = V(pb0, pb1, pb2, pb3)
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
