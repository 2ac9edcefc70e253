"""Staged bf16 matrix multiply on cooperative matrices (tensor cores), f32 accumulation:
C[z] (M x N) = A[z] (M x K, bf16) x B[z] (K x N, bf16), row-major, any M, N, K, a batch z on
the grid's third axis (batch strides sa, sb, sc in elements; 0 broadcasts that operand).

lib_mm_f16's body (kernels/lib_mm_f16.py: `staged_mm`, read it for the design) on bf16
values: variants.yaml sets E = bf16 and V = vec4bf. A workgroup of WG = 256
invocations (8 subgroups of 32) computes a BM x BN = 128 x 256 block of C, subgroup w
(subgroup_id() % 8) the 64 x 64 quarter (w // 4, w % 4) as 4 x 4 fragments of 16 x 16 with
f32 accumulators, K in steps of BK = 32 through one set of padded panels in shared memory
(A's rows of SA = 40 values, B's of SB = 264): the next step's panels are in registers
(vec4bf loads through a4 / b4 where the host says so: va = 1 needs K, sa and a's length
multiples of 4, vb = 1 the same of N, sb and b; scalar loads otherwise; zeros past every
edge) while this step multiplies, two barriers per step. bf16 has the shape and the bytes of
f16, so the blocking, the padding and the 48 KiB are the same; only the multiply-add's
element type differs (bf16 products summed in f32: the only accumulator bf16 has).

Stores: a block inside C with N a multiple of 4 stores its f32 fragments straight into C;
otherwise (and always for bf16 output, the f32 sums rounded to nearest even) each fragment
goes through a 16 x 16 staging area in shared memory and out by guarded scalar stores.
Subgroups narrower than 32 compute a quarter several times over (equal stores); wider ones
would leave quarters unwritten, so library.matmul_bf16 refuses such a device. Grid x
covers N in blocks of 256 (gx = ceil(N / 256) * 256), y M in blocks of 128. C is `c` (f32)
in variant f32 and `h` (bf16) in variant bf16 (variants.yaml sets HALF).
"""

from .lib_mm_f16 import PA, PB, SAREA, WG, staged_mm
from vyre_build.lang import Buffer, f32, kernel, shared, u32


@kernel(workgroup_size=WG, grid=("gx", "gy", "gz"), shared_bytes=49152)
def lib_mm_bf16(a: Buffer[E], a4: Buffer[V], b: Buffer[E], b4: Buffer[V],
                c: Buffer[f32, "w"], h: Buffer[E, "w"], M: u32, N: u32, K: u32, sa: u32,
                sb: u32, sc: u32, va: u32, vb: u32, gx: u32, gy: u32, gz: u32):
    pa = shared(V, PA)  # [row m][k / 4], rows of SA values
    pb = shared(V, PB)  # [row k][n / 4], rows of SB values
    st = shared(f32, 8 * SAREA)  # [quarter][16][ST]: the staged output fragments
    staged_mm(pa, pb, st, a, a4, b, b4, c, h, M, N, K, sa, sb, sc, va, vb)
