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


@kernel(workgroup_size=256)
def saxpy_coarse4(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32):  # noqa: F821
    # Four elements per invocation, G apart (G = invocations in the grid), every load
    # issued before any store: four times the bytes in flight of one element each.
    g = num_workgroups().x * 256
    i0 = global_id().x
    i1 = i0 + g
    i2 = i1 + g
    i3 = i2 + g
    n = len(y)
    x0 = x[i0]
    x1 = x[i1]
    x2 = x[i2]
    x3 = x[i3]
    y0 = y[i0]
    y1 = y[i1]
    y2 = y[i2]
    y3 = y[i3]
    if i0 < n:
        y[i0] = a * x0 + y0
    if i1 < n:
        y[i1] = a * x1 + y1
    if i2 < n:
        y[i2] = a * x2 + y2
    if i3 < n:
        y[i3] = a * x3 + y3


@kernel(workgroup_size=256)
def add_coarse4(a: Buffer[f32], b: Buffer[f32], out: Buffer[f32, "w"]):  # noqa: F821
    g = num_workgroups().x * 256
    i0 = global_id().x
    i1 = i0 + g
    i2 = i1 + g
    i3 = i2 + g
    n = len(out)
    a0 = a[i0]
    a1 = a[i1]
    a2 = a[i2]
    a3 = a[i3]
    b0 = b[i0]
    b1 = b[i1]
    b2 = b[i2]
    b3 = b[i3]
    if i0 < n:
        out[i0] = a0 + b0
    if i1 < n:
        out[i1] = a1 + b1
    if i2 < n:
        out[i2] = a2 + b2
    if i3 < n:
        out[i3] = a3 + b3
