#version 450
// Equivalent of kernels/saxpy.py, for the SPIR-V size comparison in bench/compile_bench.py.
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(std140, set = 0, binding = 2) uniform Params { float a; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < uint(y.length())) {
        y[i] = a * x[i] + y[i];
    }
}
