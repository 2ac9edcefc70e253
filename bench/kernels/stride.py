"""Bench-only elementwise kernels with a grid-stride loop: each invocation handles
elements i, i + G, i + 2G, ... (G = invocations in the grid), so one dispatch (the bench passes grid=) of at most
65,535 workgroups covers any length and each invocation does more than one element."""
from vyre_build.lang import Buffer, f32, global_id, kernel, num_workgroups


@kernel(workgroup_size=256)
def saxpy_stride(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32):  # noqa: F821
    i = global_id().x
    step = num_workgroups().x * 256
    n = len(y)
    while i < n:
        y[i] = a * x[i] + y[i]
        i += step


@kernel(workgroup_size=256)
def add_stride(a: Buffer[f32], b: Buffer[f32], out: Buffer[f32, "w"]):  # noqa: F821
    i = global_id().x
    step = num_workgroups().x * 256
    n = len(out)
    while i < n:
        out[i] = a[i] + b[i]
        i += step
