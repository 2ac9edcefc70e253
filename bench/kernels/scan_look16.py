"""A candidate of kernels/lib_scan.py's lib_scan_look with tiles of 16,384 values held in
registers: 16 vec4s per invocation (lib_scan_look: 8), all loaded before any is used, the
tile scanned in registers (four vec4s of step sums through subgroup exclusive scans and
one barrier), then the same look-back (lib_scan.look_back) and stores. Half the tiles of
lib_scan_look, each twice the bytes in flight, for about twice the registers (fewer
workgroups per SM). bench/scan_bench.py --paths look16 times it (library._scan_once with
16 vec4s per invocation per tile); the look-back protocol, ticket and epoch are
lib_scan_look's, so it takes the same state buffer layout.
"""
from vyre_build.lang import (Buffer, barrier, kernel, local_id,
                             shared, subgroup_add, subgroup_broadcast_first,
                             subgroup_exclusive_add, subgroup_invocation_id, subgroup_size,
                             u32, f32, i32, vec4f, vec4i, vec4u)

from kernels.lib_common import load4, subgroup_rank, zero_of
from kernels.lib_scan import EPOCH, draw, emit, sum4, tile_carry

WG = 256
ITEMS = 16  # vec4s per invocation per tile


def quad_sums(a: V, b: V, c: V, d: V) -> V:
    return V(sum4(a), sum4(b), sum4(c), sum4(d))


def emit4(out4: Buffer[V, "w"], out: Buffer[T, "w"], q: u32, n: u32, vout: u32, v0: V,
          v1: V, v2: V, v3: V, pre: V, exclusive: u32, whole: bool) -> None:
    """lib_scan.emit for vec4s q, q + WG, q + 2 WG, q + 3 WG (values v0..v3, exclusive
    prefixes the components of pre): four steps of the tile."""
    emit(out4, out, q, n, vout, v0, pre.x, exclusive, whole)
    emit(out4, out, q + WG, n, vout, v1, pre.y, exclusive, whole)
    emit(out4, out, q + 2 * WG, n, vout, v2, pre.z, exclusive, whole)
    emit(out4, out, q + 3 * WG, n, vout, v3, pre.w, exclusive, whole)


@kernel(workgroup_size=WG, grid=1, shared_bytes=17424,
        variants={"u32": {"T": u32, "V": vec4u, "ACQUIRE": 0},
                  "i32": {"T": i32, "V": vec4i, "ACQUIRE": 0},
                  "f32": {"T": f32, "V": vec4f, "ACQUIRE": 0}})
def scan_look16(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                state: Buffer[u32, "rw"], n: u32, vin: u32, vout: u32, tiles: u32,
                exclusive: u32):
    # subgroup totals of the tile's 16 steps: steps 4q..4q+3 at [q * WG + rank]
    totals = shared(V, 4 * WG)
    marks = shared(u32, WG)
    drawn = shared(u32, 2)
    prefix = shared(T, 1)
    lid = local_id().x
    lane = subgroup_invocation_id()
    size = subgroup_size()
    z = zero_of()
    zv = V(z)
    if lid == 0:
        draw(state, tiles, drawn)
    rank = subgroup_rank(marks)
    groups = (u32(WG) + size - 1) // size
    tile = subgroup_broadcast_first(drawn[0])
    tag = (drawn[1] & EPOCH) << 2
    first = tile * ITEMS * WG + rank * size + lane
    per_tile = u32(ITEMS * WG * 4)
    inside = n >= per_tile and tile * per_tile <= n - per_tile
    if vin != 0 and inside:
        v0 = x4[first]
        v1 = x4[first + WG]
        v2 = x4[first + 2 * WG]
        v3 = x4[first + 3 * WG]
        v4 = x4[first + 4 * WG]
        v5 = x4[first + 5 * WG]
        v6 = x4[first + 6 * WG]
        v7 = x4[first + 7 * WG]
        v8 = x4[first + 8 * WG]
        v9 = x4[first + 9 * WG]
        v10 = x4[first + 10 * WG]
        v11 = x4[first + 11 * WG]
        v12 = x4[first + 12 * WG]
        v13 = x4[first + 13 * WG]
        v14 = x4[first + 14 * WG]
        v15 = x4[first + 15 * WG]
    else:
        v0 = load4(x4, x, first, n, vin)
        v1 = load4(x4, x, first + WG, n, vin)
        v2 = load4(x4, x, first + 2 * WG, n, vin)
        v3 = load4(x4, x, first + 3 * WG, n, vin)
        v4 = load4(x4, x, first + 4 * WG, n, vin)
        v5 = load4(x4, x, first + 5 * WG, n, vin)
        v6 = load4(x4, x, first + 6 * WG, n, vin)
        v7 = load4(x4, x, first + 7 * WG, n, vin)
        v8 = load4(x4, x, first + 8 * WG, n, vin)
        v9 = load4(x4, x, first + 9 * WG, n, vin)
        v10 = load4(x4, x, first + 10 * WG, n, vin)
        v11 = load4(x4, x, first + 11 * WG, n, vin)
        v12 = load4(x4, x, first + 12 * WG, n, vin)
        v13 = load4(x4, x, first + 13 * WG, n, vin)
        v14 = load4(x4, x, first + 14 * WG, n, vin)
        v15 = load4(x4, x, first + 15 * WG, n, vin)
    ta = quad_sums(v0, v1, v2, v3)
    tb = quad_sums(v4, v5, v6, v7)
    tc = quad_sums(v8, v9, v10, v11)
    td = quad_sums(v12, v13, v14, v15)
    ea = subgroup_exclusive_add(ta)
    eb = subgroup_exclusive_add(tb)
    ec = subgroup_exclusive_add(tc)
    ed = subgroup_exclusive_add(td)
    if lane == size - 1:
        totals[rank] = ea + ta
        totals[WG + rank] = eb + tb
        totals[2 * WG + rank] = ec + tc
        totals[3 * WG + rank] = ed + td
    barrier()
    below_a = zv
    below_b = zv
    below_c = zv
    below_d = zv
    whole_a = zv
    whole_b = zv
    whole_c = zv
    whole_d = zv
    c: u32 = 0
    while c < groups:
        j = c + lane
        wa = totals[j] if j < groups else zv
        wb = totals[WG + j] if j < groups else zv
        wc = totals[2 * WG + j] if j < groups else zv
        wd = totals[3 * WG + j] if j < groups else zv
        below_a += subgroup_add(wa if j < rank else zv)
        below_b += subgroup_add(wb if j < rank else zv)
        below_c += subgroup_add(wc if j < rank else zv)
        below_d += subgroup_add(wd if j < rank else zv)
        whole_a += subgroup_add(wa)
        whole_b += subgroup_add(wb)
        whole_c += subgroup_add(wc)
        whole_d += subgroup_add(wd)
        c += size
    # where each step starts in the tile, and the tile's total
    a1 = whole_a.x
    a2 = a1 + whole_a.y
    a3 = a2 + whole_a.z
    b0 = a3 + whole_a.w
    b1 = b0 + whole_b.x
    b2 = b1 + whole_b.y
    b3 = b2 + whole_b.z
    c0 = b3 + whole_b.w
    c1 = c0 + whole_c.x
    c2 = c1 + whole_c.y
    c3 = c2 + whole_c.z
    d0 = c3 + whole_c.w
    d1 = d0 + whole_d.x
    d2 = d1 + whole_d.y
    d3 = d2 + whole_d.z
    whole = d3 + whole_d.w
    off_a = V(z, a1, a2, a3) + below_a + ea
    off_b = V(b0, b1, b2, b3) + below_b + eb
    off_c = V(c0, c1, c2, c3) + below_c + ec
    off_d = V(d0, d1, d2, d3) + below_d + ed
    carry = tile_carry(state, tile, tag, whole, lane, size, rank, prefix)
    full = vout != 0 and inside
    off_a = off_a + V(carry)
    off_b = off_b + V(carry)
    off_c = off_c + V(carry)
    off_d = off_d + V(carry)
    emit4(out4, out, first, n, vout, v0, v1, v2, v3, off_a, exclusive, full)
    emit4(out4, out, first + 4 * WG, n, vout, v4, v5, v6, v7, off_b, exclusive, full)
    emit4(out4, out, first + 8 * WG, n, vout, v8, v9, v10, v11, off_c, exclusive, full)
    emit4(out4, out, first + 12 * WG, n, vout, v12, v13, v14, v15, off_d, exclusive, full)
