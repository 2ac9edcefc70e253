"""CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as zlib.crc32), computed bitwise,
one invocation per string."""
from vyre_build.lang import Buffer, global_id, kernel, select, u32

from .common import load_byte

POLY = 0xEDB88320


@kernel(workgroup_size=64, grid="out")
def crc32(data: Buffer[u32], offsets: Buffer[u32], lengths: Buffer[u32], out: Buffer[u32, "w"]):
    # same string layout as fnv1a: packed bytes, offsets and lengths in bytes
    i = global_id().x
    if i >= len(out):
        return
    crc: u32 = 0xFFFFFFFF
    start = offsets[i]
    end = start + lengths[i]
    k = start
    while k < end:
        crc ^= load_byte(data, k)
        for _bit in range(8):
            crc = select((crc & 1) != 0, (crc >> 1) ^ POLY, crc >> 1)
        k += 1
    out[i] = ~crc
