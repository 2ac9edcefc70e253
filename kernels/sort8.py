"""Sorts every chunk of 8 u32 elements in place: per-invocation insertion sort in a local
array, a fixed 256-invocation grid striding over the chunks."""
from vyre_build.lang import (Buffer, global_id, kernel, local_array, num_workgroups, u32,
                             workgroup_size)

CHUNK = 8


@kernel(workgroup_size=32, grid=256)
def sort_chunks(data: Buffer[u32, "rw"]):
    vals = local_array(u32, CHUNK)
    stride = num_workgroups().x * workgroup_size().x
    chunks = (len(data) + (CHUNK - 1)) // CHUNK
    c = global_id().x
    while c < chunks:
        base = c * CHUNK
        n = min(u32(CHUNK), len(data) - base)
        for k in range(n):
            vals[k] = data[base + k]
        for k in range(1, n):
            v = vals[k]
            j = k
            # at j == 0 the left side is false; vals[j - 1] is then out of bounds and reads 0
            while j > 0 and vals[j - 1] > v:
                vals[j] = vals[j - 1]
                j -= 1
            vals[j] = v
        for k in range(n):
            data[base + k] = vals[k]
        c += stride
