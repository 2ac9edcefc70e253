"""fp16 matrix multiply on cooperative matrices (tensor cores) with f32 accumulation:
C[z] (m x n, f32) = A[z] (m x k, f16) x B[z] (k x n, f16), all row-major, a batch z on the
grid's third axis (batch strides sa, sb, sc in elements; 0 shares that operand).

One subgroup-sized workgroup computes a 64 x 64 block of C as 4 x 4 fragments of 16 x 16
(16 accumulators; each A and B fragment loaded once per step and used four times). On a
device with a subgroup smaller than 32 (the reference's own choice) several subgroups
compute the same block and store equal values; the runtime refuses a device whose
subgroup is wider than the workgroup.

Shapes: m a multiple of 16, n of 64, k of 16 (library.matmul_f16 runs this kernel for such
shapes with f32 output, lib_mm_f16 for the others); a fragment past the end of a buffer
loads zeros and is not stored (the fragment rule). Measured on the H200 (2026-12-02): 42
TFLOP/s at 4096, 2.2x the staged lib_mm_f16 there, hence the split.
"""

from vyre_build.lang import (Buffer, coop_fill, coop_load_a, coop_load_b, coop_mma, coop_store,
                             f16, f32, kernel, u32, workgroup_id)


@kernel(workgroup_size=32, grid=("gx", "gy", "gz"))
def lib_matmul_f16(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "w"], m: u32, n: u32, k: u32,
                   sa: u32, sb: u32, sc: u32, gx: u32, gy: u32, gz: u32):
    row = workgroup_id().y * 64
    col = workgroup_id().x * 64
    z = workgroup_id().z
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
    for kk in range(0, k, 16):
        oa = z * sa + row * k + kk
        a0 = coop_load_a(a, oa, k, 16, 16)
        a1 = coop_load_a(a, oa + 16 * k, k, 16, 16)
        a2 = coop_load_a(a, oa + 32 * k, k, 16, 16)
        a3 = coop_load_a(a, oa + 48 * k, k, 16, 16)
        ob = z * sb + kk * n + col
        b0 = coop_load_b(b, ob, n, 16, 16)
        b1 = coop_load_b(b, ob + 16, n, 16, 16)
        b2 = coop_load_b(b, ob + 32, n, 16, 16)
        b3 = coop_load_b(b, ob + 48, n, 16, 16)
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
    o = z * sc + row * n + col
    coop_store(c00, c, o, n)
    coop_store(c01, c, o + 16, n)
    coop_store(c02, c, o + 32, n)
    coop_store(c03, c, o + 48, n)
    coop_store(c10, c, o + 16 * n, n)
    coop_store(c11, c, o + 16 * n + 16, n)
    coop_store(c12, c, o + 16 * n + 32, n)
    coop_store(c13, c, o + 16 * n + 48, n)
    coop_store(c20, c, o + 32 * n, n)
    coop_store(c21, c, o + 32 * n + 16, n)
    coop_store(c22, c, o + 32 * n + 32, n)
    coop_store(c23, c, o + 32 * n + 48, n)
    coop_store(c30, c, o + 48 * n, n)
    coop_store(c31, c, o + 48 * n + 16, n)
    coop_store(c32, c, o + 48 * n + 32, n)
    coop_store(c33, c, o + 48 * n + 48, n)
