#version 450
// Equivalent of kernels/reduce.py reduce_sum (u32 variant).
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Out { uint outv[]; };
shared uint partial_[256];
void main() {
    uint lid = gl_LocalInvocationID.x;
    uint gid = gl_GlobalInvocationID.x;
    partial_[lid] = gid < uint(x.length()) ? x[gid] : 0u;
    barrier();
    uint s = 128u;
    while (s > 0u) {
        if (lid < s) {
            partial_[lid] += partial_[lid + s];
        }
        barrier();
        s >>= 1u;
    }
    if (lid == 0u) {
        atomicAdd(outv[0], partial_[0]);
    }
}
