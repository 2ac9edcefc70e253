#version 450
// Equivalent of kernels/stencil.py laplacian3d (7-point, zero outside), no safety rules.
layout(local_size_x = 4, local_size_y = 4, local_size_z = 4) in;
layout(std430, set = 0, binding = 0) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float outv[]; };
layout(std140, set = 0, binding = 2) uniform Params { uint nx; uint ny; uint nz; };
void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y, z = gl_GlobalInvocationID.z;
    if (x >= nx || y >= ny || z >= nz) {
        return;
    }
    uint plane = nx * ny;
    uint c = z * plane + y * nx + x;
    float acc = -6.0 * v[c];
    if (x > 0u) acc += v[c - 1u];
    if (x + 1u < nx) acc += v[c + 1u];
    if (y > 0u) acc += v[c - nx];
    if (y + 1u < ny) acc += v[c + nx];
    if (z > 0u) acc += v[c - plane];
    if (z + 1u < nz) acc += v[c + plane];
    outv[c] = acc;
}
