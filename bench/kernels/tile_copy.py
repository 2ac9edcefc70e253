"""Bench-only floor of lib_scan_look (bench/scan_bench.py --floor): the look-back scan's tile
shape (256 invocations, HELD vec4s each, every load of a tile in flight before any store,
one tile per workgroup) with nothing but the copy: what moving a scan's 2n bytes costs in
that tile structure, no scan, no look-back. tile_copy8 holds 8 vec4s an invocation (the
look path's tiles of 8,192 values), tile_copy16 16 (look16's 16,384). Whole tiles only:
n a multiple of the tile."""

from vyre_build.lang import Buffer, kernel, local_array, local_id, u32, unroll, vec4f, workgroup_id

WG = 256


@kernel(workgroup_size=WG, grid=1)
def tile_copy8(x4: Buffer[vec4f], out4: Buffer[vec4f, "w"], tiles: u32):
    held = local_array(vec4f, 8)
    first = workgroup_id().x * 8 * WG + local_id().x
    for k in unroll(8):
        held[k] = x4[first + k * WG]
    for k in unroll(8):
        out4[first + k * WG] = held[k]


@kernel(workgroup_size=WG, grid=1)
def tile_copy16(x4: Buffer[vec4f], out4: Buffer[vec4f, "w"], tiles: u32):
    held = local_array(vec4f, 16)
    first = workgroup_id().x * 16 * WG + local_id().x
    for k in unroll(16):
        held[k] = x4[first + k * WG]
    for k in unroll(16):
        out4[first + k * WG] = held[k]
