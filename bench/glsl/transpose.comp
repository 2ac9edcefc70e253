#version 450
// Equivalent of kernels/transpose.py (padded 16x16 shared tile), no safety rules.
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(std140, set = 0, binding = 2) uniform Params { uint rows; uint cols; };
shared float tile[16 * 17];
void main() {
    uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    uint bx = gl_WorkGroupID.x * 16u, by = gl_WorkGroupID.y * 16u;
    if (bx + lx < cols && by + ly < rows) {
        tile[ly * 17u + lx] = src[(by + ly) * cols + bx + lx];
    }
    barrier();
    if (by + lx < rows && bx + ly < cols) {
        dst[(bx + ly) * rows + by + lx] = tile[lx * 17u + ly];
    }
}
