"""Bench-only floor of lib_scan_look (bench/scan_bench.py --floor): the look-back scan's tile
shape (256 invocations, HELD vec4s each, every load of a tile in flight before any store,
one tile per workgroup) with nothing but the copy: what moving a scan's 2n bytes costs in
that tile structure, no scan, no look-back. Variant h8 holds 8 vec4s an invocation (the
look path's tiles of 8,192 values), h16 16 (look16's 16,384). Whole tiles
only: n a multiple of the tile."""

from vyre_build.lang import Buffer, kernel, local_array, local_id, unroll, vec4f, workgroup_id

WG = 256
HELD = 8  # vec4s an invocation holds (each variant sets it)


@kernel(workgroup_size=WG, grid=1, variants={"h8": {"HELD": 8}, "h16": {"HELD": 16}})
def tile_copy(x4: Buffer[vec4f], out4: Buffer[vec4f, "w"]):
    held = local_array(vec4f, HELD)
    first = workgroup_id().x * HELD * WG + local_id().x
    for k in unroll(HELD):
        held[k] = x4[first + k * WG]
    for k in unroll(HELD):
        out4[first + k * WG] = held[k]
