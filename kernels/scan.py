"""Per-workgroup inclusive prefix sum (Hillis-Steele in shared memory), u32 with wrapping."""
from vyre_build.lang import Buffer, barrier, global_id, kernel, local_id, shared, u32

WG = 256


@kernel(workgroup_size=WG, grid="x")
def scan_inclusive(x: Buffer[u32], out: Buffer[u32, "w"]):
    buf = shared(u32, WG)
    lid = local_id().x
    gid = global_id().x
    buf[lid] = x[gid]
    barrier()
    offset: u32 = 1
    while offset < WG:
        v: u32 = 0
        if lid >= offset:
            v = buf[lid - offset]
        # every read of this round happens before any write of it
        barrier()
        buf[lid] += v
        barrier()
        offset <<= 1
    if gid < len(out):
        out[gid] = buf[lid]
