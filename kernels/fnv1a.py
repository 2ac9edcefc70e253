"""32-bit FNV-1a of many byte strings, one invocation per string."""
from vyre_build.lang import Buffer, global_id, kernel, u32

from .common import load_byte

FNV_OFFSET_BASIS = 2166136261
FNV_PRIME = 16777619


@kernel(workgroup_size=64, grid="out")
def fnv1a(data: Buffer[u32], offsets: Buffer[u32], lengths: Buffer[u32], out: Buffer[u32, "w"]):
    # data: bytes packed 4 per u32; string i is bytes [offsets[i], offsets[i] + lengths[i])
    i = global_id().x
    if i >= len(out):
        return
    h: u32 = FNV_OFFSET_BASIS
    start = offsets[i]
    for k in range(lengths[i]):
        h = (h ^ load_byte(data, start + k)) * FNV_PRIME
    out[i] = h
