#version 450
// Hand-written equivalent of kernels/lib_matmul.py (variant f32 and its BK = 16 variants),
// the library's fp32 register-tiled design with no safety rules: 256 invocations per
// 128 x 128 block of C, each holding 8 x 8 values of C as 4 x 4 pieces 64 rows / columns
// apart (16 vec4 accumulators), K in steps of BK through double-buffered shared panels
// (A's stored transposed, vec4s along m; B's vec4s along n), the next step's panels in
// registers while a step multiplies, one barrier per step. Interior sizes only: M and N
// multiples of 128, K of BK. Bindings and uniforms are lib_matmul.f32's
// (bench/matmul_f32_bench.py --glsl loads it with that kernel's metadata).
// BK16 (-DBK16): 16-deep steps (two vec4s of each panel per invocation, 32 KiB of shared
// memory), as the library's f32_k16 variant.
// VECB (-DVECB): B's next panel by vec4 loads (one per vec4 of the panel) instead of four
// scalar loads: what vec4 global loads would give the library's kernel.
// W48 (-DW48): a subgroup of 32 covers 4 x 8 invocations of the 16 x 16 grid (its shared
// reads per k: 4 vec4s of A, 8 of B) instead of 2 x 16 (2 of A, 16 of B).
// Build: glslangValidator -V --target-env vulkan1.2 [-DBK16] [-DVECB] -o x.spv sgemm.comp,
// then spirv-opt --target-env=vulkan1.2 --loop-unroll -O x.spv -o prebuilt/sgemm[...].spv
// (bench/glsl/build_sgemm.sh makes all four).
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 256) in;
#ifdef BK16
#define BK 16u
#else
#define BK 8u
#endif
#define P (BK / 8u)  // vec4s of each panel per invocation
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) readonly buffer B4 { vec4 b4[]; };
layout(std430, set = 0, binding = 3) writeonly buffer C4 { vec4 c4[]; };
layout(std140, set = 0, binding = 4) uniform Params { uint M; uint N; uint K; uint vb; };
// panel [buffer][k][32 vec4s]
shared vec4 sa[2u * BK * 32u];
shared vec4 sb[2u * BK * 32u];

void main() {
    uint lid = gl_LocalInvocationID.x;
#ifdef W48
    uint tx = (lid / 32u) % 2u * 8u + lid % 8u, ty = (lid / 64u) * 4u + (lid % 32u) / 8u;
#else
    uint tx = lid % 16u, ty = lid / 16u;
#endif
    uint m0 = gl_WorkGroupID.y * 128u, n0 = gl_WorkGroupID.x * 128u;
    // A: rows ar + (1024 / BK) * p (4 of them from there) at k column ak; B: row bk + 8 * p
    // at columns bc..bc+3
    uint ak = lid % BK, ag = lid / BK;
    uint bk = lid / 32u, bg = lid % 32u;
    uint ar = m0 + 4u * ag, bc = n0 + 4u * bg;
    [[unroll]] for (uint p = 0u; p < P; p++) {
        uint r = ar + (1024u / BK) * p;
        sa[ak * 32u + ag + (256u / BK) * p] = vec4(a[r * K + ak], a[(r + 1u) * K + ak],
                                                  a[(r + 2u) * K + ak], a[(r + 3u) * K + ak]);
        sb[(bk + 8u * p) * 32u + bg] = b4[((bk + 8u * p) * N + bc) / 4u];
    }
    barrier();
    vec4 acc[16];
    [[unroll]] for (uint i = 0u; i < 16u; i++) acc[i] = vec4(0.0);
    uint steps = K / BK;
    for (uint s = 0u; s < steps; s++) {
        uint cur = (s % 2u) * (BK * 32u);
        uint k1 = (s + 1u) * BK;
        vec4 pa[P], pb[P];
        if (s + 1u < steps) {
            [[unroll]] for (uint p = 0u; p < P; p++) {
                uint r = ar + (1024u / BK) * p;
                pa[p] = vec4(a[r * K + k1 + ak], a[(r + 1u) * K + k1 + ak],
                             a[(r + 2u) * K + k1 + ak], a[(r + 3u) * K + k1 + ak]);
                uint br = (k1 + bk + 8u * p) * N + bc;
#ifdef VECB
                pb[p] = b4[br / 4u];
#else
                pb[p] = vec4(b[br], b[br + 1u], b[br + 2u], b[br + 3u]);
#endif
            }
        }
        [[unroll]] for (uint k = 0u; k < BK; k++) {
            uint row = cur + k * 32u;
            vec4 alo = sa[row + ty], ahi = sa[row + 16u + ty];
            vec4 blo = sb[row + tx], bhi = sb[row + 16u + tx];
            acc[0] = fma(blo, vec4(alo.x), acc[0]);
            acc[1] = fma(bhi, vec4(alo.x), acc[1]);
            acc[2] = fma(blo, vec4(alo.y), acc[2]);
            acc[3] = fma(bhi, vec4(alo.y), acc[3]);
            acc[4] = fma(blo, vec4(alo.z), acc[4]);
            acc[5] = fma(bhi, vec4(alo.z), acc[5]);
            acc[6] = fma(blo, vec4(alo.w), acc[6]);
            acc[7] = fma(bhi, vec4(alo.w), acc[7]);
            acc[8] = fma(blo, vec4(ahi.x), acc[8]);
            acc[9] = fma(bhi, vec4(ahi.x), acc[9]);
            acc[10] = fma(blo, vec4(ahi.y), acc[10]);
            acc[11] = fma(bhi, vec4(ahi.y), acc[11]);
            acc[12] = fma(blo, vec4(ahi.z), acc[12]);
            acc[13] = fma(bhi, vec4(ahi.z), acc[13]);
            acc[14] = fma(blo, vec4(ahi.w), acc[14]);
            acc[15] = fma(bhi, vec4(ahi.w), acc[15]);
        }
        if (s + 1u < steps) {
            uint nxt = BK * 32u - cur;
            [[unroll]] for (uint p = 0u; p < P; p++) {
                sa[nxt + ak * 32u + ag + (256u / BK) * p] = pa[p];
                sb[nxt + (bk + 8u * p) * 32u + bg] = pb[p];
            }
        }
        barrier();
    }
    uint r0 = m0 + 4u * ty, q0 = n0 + 4u * tx;
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
        uint row = r0 + (i / 4u) * 64u + i % 4u;
        c4[(row * N + q0) / 4u] = acc[2u * i];
        c4[(row * N + q0 + 64u) / 4u] = acc[2u * i + 1u];
    }
}
