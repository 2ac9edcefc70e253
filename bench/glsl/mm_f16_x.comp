#version 450
// Design space of the staged fp16 matmul, hand-written (issue 22: is the design or the
// language short of 0.5x?). Every subgroup computes a WM x WN tile of C (64 x 64 unless
// defined: 32 or 64 each) as (WM / 16) x (WN / 16) 16x16 fragments with f32 accumulators; a
// workgroup of (BM / WM) x (BN / WN) subgroups computes a BM x BN block. K goes by in steps
// of BK through shared panels of 16-byte elements (uvec4: 8 halves; 8-byte f16vec4 with
// E8, below), rows padded by 8 halves (conflict-free fragment loads), NBUF = 1 (one set of
// panels, two barriers a step) or 2 (double-buffered, one barrier a step); the next step's
// panels are in registers while this step multiplies. BONE: B's fragments loaded one at a
// time (each used by the 4 A fragments, then dropped) instead of all 4 first: fewer live
// registers. Interior sizes only (M a multiple of BM, N of BN, K of BK); bindings and
// uniforms are lib_mm_f16.f32's. bench/mm_f16_designs.py builds and times each design.
// Build: glslangValidator -V --target-env vulkan1.3 -DBM=.. -DBN=.. -DBK=.. -DNBUF=.. [-DBONE]
// [-DWM=.. -DWN=..] [-DTB] [-DPAIR] [-DE8] [-DBOUNDS]
// BOUNDS: every global load with the language's bounds rule (compare, clamp, select zeros),
// as lib_mm_f16's loads carry it: shows what the rule costs the design.
// E8: panels and global loads of 8-byte elements (f16vec4), as the language's vec4h gives
// lib_mm_f16, instead of 16-byte ones (uvec4): shows what the element width is worth.
// PAIR: the K loop takes two steps an iteration, so that the panel set each step reads and
// writes (NBUF = 2) is a constant, as NVIDIA's driver makes it by unrolling the fp32 K loop.
// TB: binding 3 holds B transposed (N rows of K halves, an "NT" product), staged as A is (BN
// rows of BK halves, padded) and its fragments loaded column-major: contiguous along K as
// the tensor cores' B operand holds them, where a row-major B panel is contiguous along N.
// then spirv-opt --target-env=vulkan1.3 --loop-unroll --scalar-replacement=0 -O.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#ifdef E8  // 8-byte panel and load elements (f16vec4: 4 halves), as the language has them
#define ELEM f16vec4
#define EH 4u
#else  // 16-byte ones (uvec4: 8 halves)
#define ELEM uvec4
#define EH 8u
#endif
#ifndef WM
#define WM 64u
#endif
#ifndef WN
#define WN 64u
#endif
const uint FM = WM / 16u, FN = WN / 16u;  // fragments of a subgroup's tile
const uint SGN = BN / WN, SGM = BM / WM;
const uint WG = 32u * SGN * SGM;
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 1) readonly buffer A4 { ELEM a4[]; };
layout(std430, set = 0, binding = 3) readonly buffer B4 { ELEM b4[]; };
layout(std430, set = 0, binding = 4) writeonly buffer C { float c[]; };
#ifdef BOUNDS  // every global load under the language's bounds rule: index compared with
// the buffer's length, clamped, loaded, and zeros selected past the end (as lib_mm_f16's)
ELEM la(uint i) { uint n = uint(a4.length()); ELEM v = a4[min(i, n - 1u)];
                  return i < n ? v : ELEM(0); }
ELEM lb(uint i) { uint n = uint(b4.length()); ELEM v = b4[min(i, n - 1u)];
                  return i < n ? v : ELEM(0); }
#define LA(i) la(i)
#define LB(i) lb(i)
#else
#define LA(i) a4[i]
#define LB(i) b4[i]
#endif
layout(std140, set = 0, binding = 6) uniform Params {
    uint M; uint N; uint K; uint sa; uint sb; uint sc; uint va; uint vb;
    uint gx; uint gy; uint gz;
};
const uint SA = BK + 8u, SB = BN + 8u;     // padded panel rows, in halves
const uint PA = BM * SA / EH, PB = BK * SB / EH;  // elements in one buffer of a panel
const uint CA = BK / EH, CB = BN / EH;     // elements in an unpadded panel row
const uint RA = WG / CA, RB = WG / CB;     // panel rows moved per pass of the workgroup
const uint NA = BM / RA, NB = BK / RB;     // elements each invocation moves per step
#ifdef TB
const uint PBT = BN * SA / EH, NBT = BN / RA;  // B's panel and moves, staged as A's
#endif
shared ELEM pa[NBUF * PA];
#ifdef TB
shared ELEM pb[NBUF * PBT];
#else
shared ELEM pb[NBUF * PB];
#endif
#define ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define MA coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define MB coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
void main() {
    uint lid = gl_LocalInvocationID.x;
    uint w = gl_SubgroupID;
    uint wm = (w / SGN) * WM, wn = (w % SGN) * WN;
    uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    uint ar = lid / CA, ac = lid % CA;
    uint br = lid / CB, bc = lid % CB;
    uint ga = ((m0 + ar) * K + EH * ac) / EH;   // A's element for row ar, k 0
    uint gb = (br * N + n0 + EH * bc) / EH;     // B's element for k row br
    uint arow = RA * K / EH, brow = RB * N / EH;  // elements between passes
    [[unroll]] for (uint t = 0u; t < NA; t++)
        pa[(ar + RA * t) * (SA / EH) + ac] = LA(ga + t * arow);
#ifdef TB
    uint gbt = ((n0 + ar) * K + EH * ac) / EH;  // B's (transposed) element for row n0 + ar
    [[unroll]] for (uint t = 0u; t < NBT; t++)
        pb[(ar + RA * t) * (SA / EH) + ac] = LB(gbt + t * arow);
#else
    [[unroll]] for (uint t = 0u; t < NB; t++)
        pb[(br + RB * t) * (SB / EH) + bc] = LB(gb + t * brow);
#endif
    barrier();
    ACC acc[FM][FN];
    [[unroll]] for (uint i = 0u; i < FM; i++)
        [[unroll]] for (uint j = 0u; j < FN; j++) acc[i][j] = ACC(0.0);
    uint steps = K / BK;
#ifdef TB
    ELEM pfa[NA], pfb[NBT];
#else
    ELEM pfa[NA], pfb[NB];
#endif
#ifdef PAIR
    // two steps an iteration (steps even), the panel set of each a constant
    for (uint s2 = 0u; s2 < steps; s2 += 2u) [[unroll]] for (uint h = 0u; h < 2u; h++) {
        uint s = s2 + h;
        uint cur = NBUF == 2u ? h : 0u;
#else
    for (uint s = 0u; s < steps; s++) {
        uint cur = NBUF == 2u ? (s & 1u) : 0u;
#endif
        if (s + 1u < steps) {
            uint ka = (s + 1u) * BK / EH, kb = (s + 1u) * BK * N / EH;
            [[unroll]] for (uint t = 0u; t < NA; t++) pfa[t] = LA(ga + ka + t * arow);
#ifdef TB
            [[unroll]] for (uint t = 0u; t < NBT; t++) pfb[t] = LB(gbt + ka + t * arow);
#else
            [[unroll]] for (uint t = 0u; t < NB; t++) pfb[t] = LB(gb + kb + t * brow);
#endif
        }
        [[unroll]] for (uint kk = 0u; kk < BK / 16u; kk++) {
            uint oa = cur * PA + (wm * SA + kk * 16u) / EH;
#ifdef TB
            uint ob = cur * PBT + (wn * SA + kk * 16u) / EH;
#define BSTEP (16u * SA / EH)
#define BSTRIDE (SA / EH)
#define BLAYOUT gl_CooperativeMatrixLayoutColumnMajor
#else
            uint ob = cur * PB + (kk * 16u * SB + wn) / EH;
#define BSTEP (16u / EH)
#define BSTRIDE (SB / EH)
#define BLAYOUT gl_CooperativeMatrixLayoutRowMajor
#endif
            MA fa[FM];
            [[unroll]] for (uint i = 0u; i < FM; i++)
                coopMatLoad(fa[i], pa, oa + i * 16u * SA / EH, SA / EH,
                            gl_CooperativeMatrixLayoutRowMajor);
#ifdef BONE
            [[unroll]] for (uint j = 0u; j < FN; j++) {
                MB fb;
                coopMatLoad(fb, pb, ob + j * BSTEP, BSTRIDE, BLAYOUT);
                [[unroll]] for (uint i = 0u; i < FM; i++)
                    acc[i][j] = coopMatMulAdd(fa[i], fb, acc[i][j]);
            }
#else
            MB fb[FN];
            [[unroll]] for (uint j = 0u; j < FN; j++)
                coopMatLoad(fb[j], pb, ob + j * BSTEP, BSTRIDE, BLAYOUT);
            [[unroll]] for (uint i = 0u; i < FM; i++)
                [[unroll]] for (uint j = 0u; j < FN; j++)
                    acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
#endif
        }
        if (s + 1u < steps) {
            if (NBUF == 1u) barrier();  // every subgroup is done reading the one set
            uint nxa = NBUF == 2u ? (1u - cur) * PA : 0u;
#ifdef TB
            uint nxb = NBUF == 2u ? (1u - cur) * PBT : 0u;
#else
            uint nxb = NBUF == 2u ? (1u - cur) * PB : 0u;
#endif
            [[unroll]] for (uint t = 0u; t < NA; t++)
                pa[nxa + (ar + RA * t) * (SA / EH) + ac] = pfa[t];
#ifdef TB
            [[unroll]] for (uint t = 0u; t < NBT; t++)
                pb[nxb + (ar + RA * t) * (SA / EH) + ac] = pfb[t];
#else
            [[unroll]] for (uint t = 0u; t < NB; t++)
                pb[nxb + (br + RB * t) * (SB / EH) + bc] = pfb[t];
#endif
            barrier();
        }
    }
    uint o = (m0 + wm) * N + n0 + wn;
    [[unroll]] for (uint i = 0u; i < FM; i++)
        [[unroll]] for (uint j = 0u; j < FN; j++)
            coopMatStore(acc[i][j], c, o + i * 16u * N + j * 16u, N,
                         gl_CooperativeMatrixLayoutRowMajor);
}
