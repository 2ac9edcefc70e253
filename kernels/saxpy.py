"""y = a * x + y over f32 buffers (the language doc's first example)."""
from vyre_build.lang import Buffer, f32, global_id, kernel, rw


@kernel(workgroup_size=256)
def saxpy(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32) -> None:
    i = global_id().x
    if i < len(y):
        y[i] = a * x[i] + y[i]
