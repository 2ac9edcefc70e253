"""One compare-exchange step (j, k) of a bitonic sort over i32 keys; the host loops over k and j."""
from vyre_build.lang import Buffer, global_id, i32, kernel, u32


@kernel(workgroup_size=256, grid="data")
def bitonic_step(data: Buffer[i32, "rw"], j: u32, k: u32):
    # blocks of size k alternate direction; j is the compare distance within a block
    i = global_id().x
    partner = i ^ j
    if partner <= i or partner >= len(data):
        return
    a = data[i]
    b = data[partner]
    ascending = (i & k) == 0
    swap = a > b if ascending else a < b
    if swap:
        data[i] = b
        data[partner] = a
