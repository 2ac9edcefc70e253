"""Bench-only copy of a vec4 array (bench/norm_bench.py's floor): out4[i] = x4[i] with a
grid-stride loop, the bytes a softmax or layer norm of the same matrix must move (read
once, write once) in one dispatch, through the same runtime path, with no reduction."""

from vyre_build.lang import Buffer, global_id, kernel, num_workgroups, vec4f


@kernel(workgroup_size=256)
def copy_rows4(x4: Buffer[vec4f], out4: Buffer[vec4f, "w"]):
    i = global_id().x
    step = num_workgroups().x * 256
    n = len(out4)
    while i < n:
        out4[i] = x4[i]
        i += step
