#version 450
// Equivalent of kernels/scan.py scan_inclusive (Hillis-Steele in shared memory), no safety rules.
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { uint outv[]; };
shared uint buf[256];
void main() {
    uint lid = gl_LocalInvocationID.x;
    uint gid = gl_GlobalInvocationID.x;
    buf[lid] = gid < uint(x.length()) ? x[gid] : 0u;
    barrier();
    for (uint offset = 1u; offset < 256u; offset <<= 1u) {
        uint v = lid >= offset ? buf[lid - offset] : 0u;
        barrier();
        buf[lid] += v;
        barrier();
    }
    if (gid < uint(outv.length())) {
        outv[gid] = buf[lid];
    }
}
