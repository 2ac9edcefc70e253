#version 450
// Equivalent of kernels/matmul.py (16x16 shared tiles).
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(std140, set = 0, binding = 3) uniform Params { uint M; uint N; uint K; };
shared float ta[256];
shared float tb[256];
void main() {
    uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    uint col = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
    float acc = 0.0;
    uint tiles = (K + 15u) / 16u;
    for (uint t = 0u; t < tiles; t++) {
        uint ka = t * 16u + lx, kb = t * 16u + ly;
        ta[ly * 16u + lx] = (row < M && ka < K) ? a[row * K + ka] : 0.0;
        tb[ly * 16u + lx] = (kb < K && col < N) ? b[kb * N + col] : 0.0;
        barrier();
        for (uint k = 0u; k < 16u; k++) {
            acc = fma(ta[ly * 16u + k], tb[k * 16u + lx], acc);
        }
        barrier();
    }
    if (row < M && col < N) {
        c[row * N + col] = acc;
    }
}
