"""Elementwise add over one element type T (f32/i32/u32 variants declared in variants.yaml)."""
from vyre_build.lang import Buffer, global_id, kernel


@kernel(workgroup_size=256)
def add(a: Buffer[T], b: Buffer[T], out: Buffer[T, "w"]):
    i = global_id().x
    if i < len(out):
        out[i] = a[i] + b[i]
