"""256-bin byte histogram: bins privatised in shared memory, then merged with global atomics."""
from vyre_build.lang import Buffer, atomic_add, barrier, global_id, kernel, local_id, shared, u32

BINS = 256


@kernel(workgroup_size=BINS, grid="words")
def histogram(words: Buffer[u32], bins: Buffer[u32, "rw"], n: u32):
    # words holds n bytes packed 4 per u32, little-endian; bins has BINS entries
    local_bins = shared(u32, BINS)
    lid = local_id().x
    # workgroup size == BINS: one bin per invocation to clear and to merge
    local_bins[lid] = 0
    barrier()
    w = global_id().x
    word = words[w]
    for shift in range(0, 32, 8):
        byte_index = w * 4 + u32(shift) // 8
        if byte_index >= n:
            continue
        atomic_add(local_bins, (word >> u32(shift)) & 0xFF, 1)
    barrier()
    count = local_bins[lid]
    if count != 0:
        atomic_add(bins, lid, count)
