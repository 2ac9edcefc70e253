"""Library full-array prefix sums (inclusive and exclusive) over u32, i32, f32, for
vyre_build.library.scan: reduce-then-scan in three dispatches.

1. lib_scan_sums: workgroup b adds block b (per_block * WG vec4s) into sums[b].
2. lib_scan_block over the sums with one workgroup and exclusive=1: each block's offset.
3. lib_scan_block over the input with those offsets: each workgroup scans its block,
   WG vec4s per step (a vec4's own prefix, subgroup_exclusive_add across lanes, subgroup
   totals through shared memory across subgroups), the next step's vec4 loaded before
   the current one is scanned.
Integer sums wrap; variants.yaml binds T and V per type.

lib_scan_once is the single pass with decoupled look-back, for devices that give
forward progress between workgroups (library.scan_kernels; docs/runtime.md, "Forward
progress"): a workgroup draws its tile (ITEMS * WG vec4s, held in registers) from a
device-scope counter, so every tile before it belongs to a workgroup that has started;
publishes its total (aggregate, status 1) with a release store of its flag; walks back
over its predecessors, LOOK at a time (their flags as relaxed loads in flight together,
then an acquire fence, then their values), adding aggregates until it finds an inclusive
prefix (status 2); publishes its own inclusive prefix; and scans its tile from
the exclusive one: about 2n bytes moved instead of 3n. Flags carry the call's epoch (the
high 30 bits), so the previous call's flags read as not ready and nothing is cleared: the
workgroup that draws the last tile sets the counter back to 0 and the epoch one up for the
next call. Both live in the flags buffer itself (flags[tiles]: the next tile, flags[tiles +
1]: the epoch), so the flags and their epoch are made and dropped together; a flag could be
misread only after 2^30 calls on one buffer. The look-back adds aggregates in an order that depends
on timing, so f32 results may differ in the last bits from run to run (integers are exact).

lib_scan_look is the look-back as CUB's single-pass scan does it (Merrill and Garland,
"Single-pass Parallel Prefix Scan with Decoupled Look-back"), replacing lib_scan_once, whose
walk by one invocation measured 0.24x torch on the H200: a workgroup takes its tile (8,192
values: HELD = 8 vec4s per invocation, all loaded before any is used), publishes its
aggregate as soon as the values are in (post_aggregate: a subgroup add a subgroup, one
barrier, the first subgroup adds their totals), scans the whole tile in registers (the
8 steps' vec4 sums through one subgroup exclusive scan and one barrier), and then its
first subgroup walks back a subgroup's width at a time: each lane reads one
predecessor's status; the window is ready when every tile after the nearest inclusive
prefix has at least its aggregate; one subgroup_add sums the nearest inclusive prefix and
the aggregates after it; without an inclusive prefix in the window the walk steps back.
The inclusive prefix is published as soon as it is known, then every invocation adds the
exclusive one to its values and stores them. Two switches (variants.yaml) choose the
protocol:

- WGID 1 (the library's kernels): the tile is the workgroup's id, so its loads go out at
  once, with no ticket drawn first. That assumes a device that starts a dispatch's
  workgroups in id order (library.IN_ORDER_VENDORS: NVIDIA; CUB takes its tile from
  blockIdx.x on the same assumption), so that every tile waited for has started. The
  call's epoch is a word of its own, state[4 * tiles], read once the tile's loads are
  issued and moved on by the last tile once it has its prefix (every tile has read it by
  then: that prefix needed them all). WGID 0 (acquire_*): the tile and the epoch come from one
  relaxed atomic add: state[4 * tiles] counts the tickets of every call on the buffer,
  `tiles` per call, so ticket d is tile d % tiles of epoch d / tiles; the last ticket of a
  call sets the count back to 0 once it is past RESTART.
- PACKED 1 (the library's kernels): a tile's 16-byte slot of `state` holds its aggregate
  (words 0, 1) and its inclusive prefix (words 2, 3), each value as its low and its high 16
  bits under the epoch's 16-bit tag (`publish`); a lane's four relaxed loads bring status
  and value together, and a value whose two words carry this call's tag is this call's
  (each word is an atomic, read whole or not at all). No fence and no second load: on an
  H100 (2026-12-06 15:4x UTC, bench/scan_bench.py --protocol, f32, the wide tiles, both
  with tickets) 1.06x the flag form from 16.7M to 268M values, 1.18x at 2M and 4M; WGID
  on top 1.01x at 268M, 1.04x at 16.7M, 1.09x at 4M. PACKED 0 (acquire_*): the slot
  holds a flag, the aggregate and the inclusive prefix; the flag is written with a
  release store after its value, and read with a relaxed load followed, once the window
  is ready, by an acquire fence (ACQUIRE 0), or with acquire loads (ACQUIRE 1; lavapipe
  runs that form wrong); then the values are loaded. A flag or tag left by the previous
  call carries its other epoch.

Posting the aggregate before the scan, not after it, is what the look-back's cost was made
of: later tiles wait on it. On an H100 (2026-12-06 22:4x UTC, bench/RESULTS.md) the same
kernels without any look-back (wrong past the first tile; timing only) ran 715-719 us at
268M values, torch's copy of the tensor 714 us, the look-back's form with the aggregate
posted after the scan 888-892 us; a copy with it posted before, 799-800 us (1.28x
torch's 1019 us), and 57.8 us against 63.1 at 16.7M. This form itself, on an H100
(2026-12-07 01:5x UTC): 798.7 / 803.8 us f32 / i32 at 268M (1.27x / 1.26x torch) and
58.0 / 58.2 us at 16.7M (1.20x), against 891.5 / 62.3-63.5 us for the form before in the
same call. The inclusive prefix is published from the same total as the aggregate, so a
later tile reads one value of the tile whichever it finds.

Two more forms were measured on an H100 and lost (2026-12-06 16:3x UTC, bench/RESULTS.md):
the epoch read before the tile's loads are issued (0.4-2.7% slower than after), and each
invocation holding HELD consecutive vec4s, scanned by itself (one subgroup scan a tile,
fewer registers; its loads a step of HELD vec4s apart across the subgroup: 0.51-0.60x the
library's form).

The variants wide_* (HELD = 16) run lib_scan_look over tiles of 16,384 values: half the
tiles, each twice the bytes in flight, for about twice the registers and 17,424 bytes of
shared memory (SMEM: more than the portable 16 KiB, so the library takes them only on a
device with that much). The tile is held in a local array indexed by unrolled counters
only (registers), and scanned there: a vec4 of step sums per four steps through subgroup
exclusive scans, one barrier, then tile_carry. On an H100 (2026-12-05 23:0x UTC,
bench/scan_bench.py) f32 at 16.7M values 72.8 us against 8-vec4 tiles' 81.8, at 268M 981
us against reduce-then-scan's 1118 (1.14x; 8-vec4 tiles 1196); at 1M 12.0 us against 11.0
(fewer tiles than the GPU has room for): library.scan_kernels picks by size.

lib_scan_pipe is lib_scan_look's protocol with fewer workgroups than tiles, each taking
`rounds` tickets in turn (a bench candidate, kept for comparison: bench/scan_bench.py
--pipe; the library picks it nowhere): a workgroup scans its tile, publishes the aggregate, draws its next ticket
and issues that tile's loads, and only then walks back for the current one, so its loads
stay in flight during the walk back, where a workgroup of lib_scan_look has none. Every
call draws exactly groups x rounds tickets (a ticket past the tiles is a round with no
tile; none is drawn in the last round), the epoch period; library._scan_once keeps one
state buffer per period. Right on the reference for 1 to 7 workgroups; on lavapipe only
without its walk-back fence (tests/conformance/cases/
lavapipe_memory_barrier_desyncs_barriers.py: lavapipe's bug); on the H100 a run that
shared one state buffer between two periods hung (bench/RESULTS.md, 2026-12-06). Timed on
an H100 since (2026-12-06 08:4x-09:2x UTC, 264 workgroups): right at every size, level
with lib_scan_look at 1-2M values (0.92-1.05x torch) and 0.48-0.69x torch from 4M up
(0.45-0.73x lib_scan_look's 16-vec4 tiles, which run 0.86-1.06x): its 264 workgroups keep about 1 TB/s in flight, and
the walk back of one tile waits on the one before it, so fewer workgroups serialise the
chain that more tiles in flight hide.

SHUFFLE (variants.yaml) chooses how the subgroup totals are combined across subgroups:
integers (SHUFFLE 0) by two subgroup reductions per vec4 of totals (one REDUX instruction
a component on NVIDIA); floats (SHUFFLE 1) by one shuffle scan over the lanes that hold a
total (log2 of their count steps: 3 for 8 subgroups, where a reduction takes the
subgroup's log2 of its width, 5 at 32 lanes, twice), the chunk's total and the sum before
this subgroup then read from the scan's lanes. On the H200 (2026-12-06, bench/scan_bench.py
--flip-shuffle) the float form ran 1.03-1.05x the reductions on the wide tiles and
1.04-1.12x on the 8-vec4 ones (f32 at 16.7M 60.1 against 62.0 us); for i32 the reductions
stayed 1-3% ahead from 4M values up, so each type keeps the form that won.
"""
from vyre_build.lang import (Buffer, atomic_add, atomic_load, atomic_store, barrier, bitcast,
                             fence, kernel, local_array, local_id, shared, subgroup_add,
                             subgroup_broadcast_first, subgroup_exclusive_add,
                             subgroup_invocation_id, subgroup_min,
                             subgroup_id, subgroup_shuffle, subgroup_shuffle_up, subgroup_size, u32,
                             unroll, workgroup_id)

from .lib_common import load4, store4, subgroup_rank, wg_sum, zero_of

WG = 256


@kernel(workgroup_size=WG, grid=1)
def lib_scan_sums(x4: Buffer[V], x: Buffer[T], sums: Buffer[T, "w"], n: u32, vin: u32,
                  per_block: u32):
    slots = shared(T, WG)
    lid = local_id().x
    b = workgroup_id().x
    first = b * per_block * WG + lid
    acc = V(zero_of())
    acc2 = V(zero_of())
    # two independent loads per trip keep more bytes in flight
    for k in range(per_block // 2):
        q = first + 2 * k * WG
        acc = acc + load4(x4, x, q, n, vin)
        acc2 = acc2 + load4(x4, x, q + WG, n, vin)
    if per_block % 2 == 1:
        acc = acc + load4(x4, x, first + (per_block - 1) * WG, n, vin)
    acc = acc + acc2
    total = wg_sum(acc.x + acc.y + acc.z + acc.w, slots)
    if lid == 0:
        sums[b] = total


def step_sums(t: T, totals: Buffer[T, "rw"], half: u32, lane: u32, size: u32, rank: u32,
              groups: u32) -> V:
    """One step of WG vec4s (lib_scan_block, lib_scan_once), this invocation's vec4 summing
    to `t`: V(the sum of the subgroups ranked below this one, of the lanes before this one
    in its subgroup, of the whole step, 0). The subgroup totals go through `totals[half:]`
    (shared; the steps alternate halves, so one barrier a step suffices). A lane's own sum
    is the exclusive scan of the lanes before it, not the inclusive one less its own value
    (with an infinity that would be NaN)."""
    z = zero_of()
    lower = subgroup_exclusive_add(t)
    if lane == size - 1:
        totals[half + rank] = lower + t
    barrier()
    # every subgroup adds the totals of the subgroups ranked below it, and all of them
    below = z
    whole = z
    c: u32 = 0
    while c < groups:
        j = c + lane
        w = totals[half + j] if j < groups else z
        below += subgroup_add(w if j < rank else z)
        whole += subgroup_add(w)
        c += size
    return V(below, lower, whole, z)


@kernel(workgroup_size=WG, grid=1)
def lib_scan_block(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                   offsets: Buffer[T], n: u32, vin: u32, vout: u32, per_block: u32,
                   exclusive: u32):
    # subgroup totals, double-buffered by step so that one barrier per step suffices
    totals = shared(T, 2 * WG)
    marks = shared(u32, WG)
    lane = subgroup_invocation_id()
    size = subgroup_size()
    rank = subgroup_rank(marks)
    groups = (u32(WG) + size - 1) // size
    b = workgroup_id().x
    carry = offsets[b]
    first = b * per_block * WG + rank * size + lane
    z = zero_of()
    v = load4(x4, x, first, n, vin)
    for k in range(per_block):
        q = first + k * WG
        ahead = V(z)
        if k + 1 < per_block:
            ahead = load4(x4, x, q + WG, n, vin)
        got = step_sums(sum4(v), totals, (k % 2) * WG, lane, size, rank, groups)
        emit(out4, out, q, n, vout, v, carry + got.x + got.y, exclusive, False)
        carry += got.z
        v = ahead


ITEMS = 4  # lib_scan_once: vec4s per invocation per tile (a tile is ITEMS * WG vec4s)
EPOCH = 0x3FFFFFFF  # the epoch bits a flag keeps (above its 2 status bits)
LOOK = 16  # predecessors one look-back step reads at once


@kernel(workgroup_size=WG, grid=1)
def lib_scan_once(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                  agg: Buffer[T, "rw"], pre: Buffer[T, "rw"], flags: Buffer[u32, "rw"],
                  n: u32, vin: u32, vout: u32, tiles: u32, exclusive: u32):
    totals = shared(T, 2 * WG)
    marks = shared(u32, WG)
    drawn = shared(u32, 2)
    prefix = shared(T, 1)
    held = local_array(V, ITEMS)
    seen = local_array(u32, LOOK)
    aggs = local_array(T, LOOK)
    pres = local_array(T, LOOK)
    lid = local_id().x
    lane = subgroup_invocation_id()
    size = subgroup_size()
    z = zero_of()
    if lid == 0:
        # flags[tiles]: the next tile to draw; flags[tiles + 1]: the call's epoch
        e = atomic_load(flags, tiles + 1, scope="device")
        # acq_rel: the epoch load above stays before the draw, the reset below after it
        d = atomic_add(flags, tiles, 1, scope="device", order="acq_rel")
        if d == tiles - 1:  # every tile is drawn: ready the next call
            atomic_store(flags, tiles, 0, scope="device")
            atomic_store(flags, tiles + 1, e + 1, scope="device")
        drawn[0] = d
        drawn[1] = e
    rank = subgroup_rank(marks)  # its barriers also publish `drawn`
    groups = (u32(WG) + size - 1) // size
    tile = drawn[0]
    tag = (drawn[1] & EPOCH) << 2
    first = tile * ITEMS * WG + rank * size + lane
    t = z
    for k in range(u32(ITEMS)):
        v = load4(x4, x, first + k * WG, n, vin)
        held[k] = v
        t += v.x + v.y + v.z + v.w
    whole = wg_sum(t, totals)
    if lid == 0:
        excl = z
        if tile == 0:
            pre[0] = whole
            atomic_store(flags, 0, tag | 2, scope="device", order="release")
        else:
            agg[tile] = whole
            atomic_store(flags, tile, tag | 1, scope="device", order="release")
            # look back LOOK predecessors at a time: their flags (relaxed loads, all in
            # flight), one acquire fence (it pairs with the releases those loads read), their
            # values, then a fold in registers from the nearest: an inclusive prefix ends the
            # walk, an aggregate is added and passed, a flag not yet set ends the window
            j = tile  # the walk has added every tile from j up to this one
            while j != 0:
                for w in range(u32(LOOK)):
                    seen[w] = atomic_load(flags, j - 1 - w, scope="device")  # 0 past tile 0
                fence(scope="device", order="acquire")
                for w in range(u32(LOOK)):
                    aggs[w] = agg[j - 1 - w]
                    pres[w] = pre[j - 1 - w]
                stop: u32 = 0
                for w in range(u32(LOOK)):
                    if stop == 0:
                        if seen[w] == (tag | 2):
                            excl = pres[w] + excl
                            j = u32(0)
                            stop = 1
                        elif seen[w] == (tag | 1):
                            excl = aggs[w] + excl
                            j -= 1
                        else:
                            stop = 1
            pre[tile] = excl + whole
            atomic_store(flags, tile, tag | 2, scope="device", order="release")
        prefix[0] = excl
    barrier()
    carry = prefix[0]
    for k in range(u32(ITEMS)):
        q = first + k * WG
        v = held[k]
        got = step_sums(sum4(v), totals, (k % 2) * WG, lane, size, rank, groups)
        emit(out4, out, q, n, vout, v, carry + got.x + got.y, exclusive, False)
        carry += got.z


NONE = 0xFFFFFFFF  # lib_scan_look: "no lane" in its subgroup minima
RESTART = 0x40000000  # lib_scan_look: its ticket count goes back to 0 past this (no wrap)


def sum4(v: V) -> T:
    return v.x + v.y + v.z + v.w


def emit(out4: Buffer[V, "w"], out: Buffer[T, "w"], q: u32, n: u32, vout: u32, v: V, pre: T,
         exclusive: u32, whole: bool) -> None:
    """Store the prefix sums of vec4 q, whose values are v and whose exclusive prefix is
    pre: a plain vec4 store where `whole` (a whole tile of a vec4 view), else store4."""
    s1 = v.x
    s2 = s1 + v.y
    s3 = s2 + v.z
    if exclusive != 0:
        r = V(pre, pre + s1, pre + s2, pre + s3)
    else:
        r = V(pre + s1, pre + s2, pre + s3, pre + (s3 + v.w))
    if whole:
        out4[q] = r
    else:
        store4(out4, out, q, n, vout, r)


def emit_held(out4: Buffer[V, "w"], out: Buffer[T, "w"], first: u32, n: u32, vout: u32,
              held: Buffer[V, "rw"], sums: Buffer[V, "rw"], carry: V, exclusive: u32,
              full: bool) -> None:
    """Store the tile held from vec4 `first` on (a step every WG vec4s), step 4q+i starting
    at sums[q][i] within the tile plus the tile's exclusive prefix `carry` (`emit` each;
    `full`: a whole tile of a vec4 view)."""
    for q in unroll(HELD // 4):
        pre = sums[q] + carry
        emit(out4, out, first + 4 * q * WG, n, vout, held[4 * q], pre.x, exclusive, full)
        emit(out4, out, first + (4 * q + 1) * WG, n, vout, held[4 * q + 1], pre.y, exclusive,
             full)
        emit(out4, out, first + (4 * q + 2) * WG, n, vout, held[4 * q + 2], pre.z, exclusive,
             full)
        emit(out4, out, first + (4 * q + 3) * WG, n, vout, held[4 * q + 3], pre.w, exclusive,
             full)


def draw(state: Buffer[u32, "rw"], tiles: u32, period: u32, drawn: Buffer[u32, "rw"]) -> None:
    """Draw the workgroup's ticket (by one invocation): state[4 * tiles] counts the tickets
    drawn by every call on this buffer, each call `period` of them (lib_scan_look: one a
    tile, so `tiles`; lib_scan_pipe: its workgroups times its rounds, at least `tiles`), so
    ticket d is index d % period (into drawn[0]: a tile below `tiles`, else none) of epoch
    d / period (drawn[1]), from one relaxed add. The call's last ticket past RESTART sets
    the count back to 0 (epoch 0, unlike the epoch of the last call, which left every
    flag)."""
    d = atomic_add(state, 4 * tiles, 1, scope="device")
    e = d // period
    drawn[0] = d - e * period
    drawn[1] = e
    if d == e * period + period - 1 and d >= RESTART:
        atomic_store(state, 4 * tiles, 0, scope="device")


def draw_ranked(state: Buffer[u32, "rw"], tiles: u32, drawn: Buffer[u32, "rw"],
                marks: Buffer[u32, "rw"]) -> u32:
    """The workgroup's tile drawn (`draw`, by its first invocation) and this invocation's
    subgroup rank (lib_common.subgroup_rank, whose barriers also publish `drawn`)."""
    if local_id().x == 0:
        draw(state, tiles, tiles, drawn)
    return subgroup_rank(marks)


def tile_carry(state: Buffer[u32, "rw"], tile: u32, tag: u32, whole: T, lane: u32,
               size: u32, rank: u32, prefix: Buffer[T, "rw"]) -> T:
    """Tile `tile`'s exclusive prefix for every invocation of the workgroup: the first
    subgroup (`rank` 0) runs `look_back`, its first lane leaves the result in `prefix`,
    and a barrier hands it to the others."""
    if rank == 0:
        excl = look_back(state, tile, tag, whole, lane, size)
        if lane == 0:
            prefix[0] = excl
    barrier()
    return prefix[0]


def publish(state: Buffer[u32, "rw"], at: u32, tag: u32, v: T) -> None:
    """PACKED: value v in words at, at + 1 of `state`, its low and its high 16 bits each
    under the call's 16-bit tag (`tag`, the high half): relaxed stores, each word read
    whole or not at all, so a reader that finds both tagged has the value."""
    b = bitcast(u32, v)
    atomic_store(state, at, tag | (b & 0xFFFF), scope="device")
    atomic_store(state, at + 1, tag | (b >> 16), scope="device")


def tagged(lo: u32, hi: u32, tag: u32) -> bool:
    """PACKED: whether both words of a value (`publish`) carry the call's tag."""
    return (lo & 0xFFFF0000) == tag and (hi & 0xFFFF0000) == tag


def joined(lo: u32, hi: u32) -> u32:
    """PACKED: the value's bits from its two tagged words (`publish`)."""
    return (lo & 0xFFFF) | (hi << 16)


def post(state: Buffer[u32, "rw"], tile: u32, status: u32, tag: u32, v: T) -> None:
    """Publish tile `tile`'s `status` (1: its aggregate, 2: its inclusive prefix) `v` in its
    slot of `state`: PACKED, as tagged halves (words 0, 1 or 2, 3: `publish`); else the
    value (word 1 or 2), then the flag (word 0, tagged) with a release store."""
    if PACKED != 0:
        publish(state, 4 * tile + 2 * status - 2, tag, v)
    else:
        atomic_store(state, 4 * tile + status, bitcast(u32, v), scope="device")
        atomic_store(state, 4 * tile, tag | status, scope="device", order="release")


def post_total(state: Buffer[u32, "rw"], tile: u32, tag: u32, v: T) -> None:
    """Publish tile `tile`'s total `v` (`post`): its aggregate, or for tile 0, which has
    nothing before it, its inclusive prefix."""
    if tile == 0:
        post(state, 0, 2, tag, v)
    else:
        post(state, tile, 1, tag, v)


def post_aggregate(state: Buffer[u32, "rw"], tile: u32, tag: u32, held: Buffer[V, "rw"],
                   marks: Buffer[u32, "rw"], lane: u32, size: u32, rank: u32,
                   groups: u32) -> T:
    """Publish tile `tile`'s aggregate (its inclusive prefix for tile 0) as soon as its
    values are in, before the tile is scanned: each subgroup's total of `held` through
    `marks` (one word a subgroup; free by now), one barrier, then the first subgroup sums
    them and its first lane posts the total (`post_total`). Returns the total in the first
    subgroup (the value `look_back` then publishes the inclusive prefix with), zero
    elsewhere. (lib_common.wg_sum would cost a second barrier, every subgroup reading a
    slot per invocation, and a shared array of WG values more than SMEM has room for.)"""
    t = sum4(held[0])  # each vec4 summed first, as scan_held sums its steps
    for k in unroll(HELD - 1):
        t = t + sum4(held[k + 1])
    mine = subgroup_add(t)
    if lane == 0:
        marks[rank] = bitcast(u32, mine)
    barrier()
    total = zero_of()
    if rank == 0:
        c: u32 = 0
        while c < groups:
            j = c + lane
            total += subgroup_add(bitcast(T, marks[j]) if j < groups else zero_of())
            c += size
        if lane == 0:
            post_total(state, tile, tag, total)
    return total


def look_back(state: Buffer[u32, "rw"], tile: u32, tag: u32, whole: T, lane: u32,
              size: u32) -> T:
    """Run by one subgroup (subgroup-uniform arguments) once the caller has published tile
    `tile`'s total `whole` (`post_total`, tagged with the call's epoch `tag`): walk back
    over its predecessors a lane each until the nearest inclusive prefix, adding the
    aggregates after it, publish the tile's inclusive prefix and return its exclusive one.
    A lane reads its predecessor's status with four relaxed loads that bring the values
    too (PACKED); or its flag with an acquire load (ACQUIRE) or a relaxed one and, once the
    window is ready, an acquire fence (the release store of that flag published its
    value), then the value."""
    z = zero_of()
    excl = z
    if tile != 0:  # tile 0's total is its inclusive prefix, published already
        j = tile  # excl holds the totals of tiles j .. tile - 1
        while j != 0:
            p = j - 1 - lane  # this lane's tile, when lane < j
            st: u32 = 2  # before tile 0: an inclusive prefix of 0
            got: u32 = 0  # PACKED: the value of status st
            if lane < j:
                st = 0
            busy = True
            while busy:  # until every tile after the nearest inclusive prefix is ready
                if st == 0:
                    if PACKED != 0:
                        a0 = atomic_load(state, 4 * p, scope="device")
                        a1 = atomic_load(state, 4 * p + 1, scope="device")
                        i0 = atomic_load(state, 4 * p + 2, scope="device")
                        i1 = atomic_load(state, 4 * p + 3, scope="device")
                        if tagged(i0, i1, tag):
                            st = 2
                            got = joined(i0, i1)
                        elif tagged(a0, a1, tag):
                            st = 1
                            got = joined(a0, a1)
                    else:
                        if ACQUIRE != 0:
                            f = atomic_load(state, 4 * p, scope="device", order="acquire")
                        else:
                            f = atomic_load(state, 4 * p, scope="device")
                        if f == (tag | 2):
                            st = 2
                        elif f == (tag | 1):
                            st = 1
                near = subgroup_min(lane if st == 2 else u32(NONE))
                gap = subgroup_min(lane if st == 0 else u32(NONE))
                busy = gap < near
            if PACKED == 0 and ACQUIRE == 0:
                # pairs with the release stores of the flags the relaxed loads read
                fence(scope="device", order="acquire")
            v = z
            if lane <= near and lane < j:
                if PACKED != 0:
                    v = bitcast(T, got)
                else:
                    v = bitcast(T, atomic_load(state, 4 * p + st, scope="device"))
            excl = excl + subgroup_add(v)
            if near != NONE:
                j = u32(0)
            else:
                j -= size
        if lane == 0:
            post(state, tile, 2, tag, excl + whole)
    return excl


def scan_held(held: Buffer[V, "rw"], sums: Buffer[V, "rw"], lower: Buffer[V, "rw"],
              below: Buffer[V, "rw"], whole: Buffer[V, "rw"], part: Buffer[V, "rw"],
              totals: Buffer[V, "rw"], lane: u32, size: u32, rank: u32, groups: u32, z: T,
              zv: V) -> T:
    """The tile in `held` (HELD vec4s an invocation) scanned before the look-back, all steps
    at once (a vec4 of step sums per invocation and four steps) with one barrier: leaves in
    `sums` where each step starts in the tile, returns the tile's total. `lower`, `below`,
    `whole`, `part` (HELD // 4 vec4s each) and `totals` (shared: HELD // 4 * WG) are its
    working space; SHUFFLE picks how subgroup totals are combined (module docstring); `z`
    and `zv` are T's and V's zeros."""
    for q in unroll(HELD // 4):
        sums[q] = V(sum4(held[4 * q]), sum4(held[4 * q + 1]), sum4(held[4 * q + 2]),
                    sum4(held[4 * q + 3]))
        lower[q] = subgroup_exclusive_add(sums[q])
    if lane == size - 1:
        for q in unroll(HELD // 4):
            totals[q * WG + rank] = lower[q] + sums[q]
    barrier()
    for q in unroll(HELD // 4):
        below[q] = zv
        whole[q] = zv
    c: u32 = 0
    if SHUFFLE == 0:
        # integers: two subgroup reductions per vec4 (one instruction a component on
        # NVIDIA, REDUX)
        while c < groups:
            j = c + lane
            for q in unroll(HELD // 4):
                w = totals[q * WG + j] if j < groups else zv
                below[q] += subgroup_add(w if j < rank else zv)
                whole[q] += subgroup_add(w)
            c += size
    else:
        # floats: one scan over the lanes that hold totals (log2 of their count steps, not
        # a full reduction's log2 of the subgroup's width, twice), then the chunk's total
        # and the sum before this subgroup read from the scan's lanes
        span = min(groups, size)
        while c < groups:
            j = c + lane
            for q in unroll(HELD // 4):
                part[q] = totals[q * WG + j] if j < groups else zv
            d: u32 = 1
            while d < span:
                for q in unroll(HELD // 4):
                    up = subgroup_shuffle_up(part[q], d)
                    part[q] = part[q] + (up if lane >= d else zv)
                d *= 2
            take = min(rank - c, span) if rank > c else u32(0)  # this chunk's lanes before it
            at = take - 1 if take > 0 else u32(0)
            for q in unroll(HELD // 4):
                whole[q] += subgroup_shuffle(part[q], span - 1)
                got = subgroup_shuffle(part[q], at)
                below[q] += got if take > 0 else zv
            c += size
    # where each step starts in the tile (into `sums`), and the tile's total (`run`)
    run = z
    for q in unroll(HELD // 4):
        s1 = whole[q].x if q == 0 else run + whole[q].x
        s2 = s1 + whole[q].y
        s3 = s2 + whole[q].z
        sums[q] = V(run, s1, s2, s3) + below[q] + lower[q]
        run = s3 + whole[q].w
    return run


@kernel(workgroup_size=WG, grid=1, shared_bytes=SMEM)
def lib_scan_look(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                  state: Buffer[u32, "rw"], n: u32, vin: u32, vout: u32, tiles: u32,
                  exclusive: u32):
    # subgroup totals of the tile's HELD steps: steps 4q..4q+3 at [q * WG + rank]
    totals = shared(V, HELD // 4 * WG)
    marks = shared(u32, WG)
    drawn = shared(u32, 2)
    prefix = shared(T, 1)
    held = local_array(V, HELD)  # the tile's values, a vec4 per step
    sums = local_array(V, HELD // 4)  # the step sums of steps 4q..4q+3
    lower = local_array(V, HELD // 4)  # their exclusive scans across the subgroup
    below = local_array(V, HELD // 4)  # their totals over the subgroups before this one
    whole = local_array(V, HELD // 4)  # and over the workgroup
    part = local_array(V, HELD // 4)  # SHUFFLE: a chunk of subgroup totals, scanned
    lane = subgroup_invocation_id()
    size = subgroup_size()
    z = zero_of()
    zv = V(z)
    era: u32 = 0
    if WGID != 0:
        # the tile is the workgroup's id (a device that starts workgroups in id order), the
        # epoch a word of its own (state[4 * tiles]) that the last tile moves on, read once
        # the tile's loads are issued
        rank = subgroup_id()
        tile = workgroup_id().x
    else:
        rank = draw_ranked(state, tiles, drawn, marks)
        tile = subgroup_broadcast_first(drawn[0])  # uniform in the subgroup, as it must be
        era = drawn[1]  # for the look-back's subgroup operations
    groups = (u32(WG) + size - 1) // size
    first = tile * HELD * WG + rank * size + lane
    # every load of the tile in flight before any is used, into registers (a local array
    # indexed by unrolled counters only); a whole tile of a vec4 view with plain vec4 loads
    # (no branch per load), the last one through load4
    per_tile = u32(HELD * WG * 4)
    inside = n >= per_tile and tile * per_tile <= n - per_tile
    if vin != 0 and inside:
        for k in unroll(HELD):
            held[k] = x4[first + k * WG]
    else:
        for k in unroll(HELD):
            held[k] = load4(x4, x, first + k * WG, n, vin)
    if WGID != 0:
        era = subgroup_broadcast_first(atomic_load(state, 4 * tiles, scope="device"))
    if PACKED != 0:
        tag = ((era & 0x7FFF) | 0x8000) << 16
    else:
        tag = (era & EPOCH) << 2
    # the tile's aggregate out before the tile is scanned, so that later tiles find it
    # sooner (post_aggregate: one barrier)
    agg = post_aggregate(state, tile, tag, held, marks, lane, size, rank, groups)
    # the tile scanned before the look-back (scan_held: one barrier)
    scan_held(held, sums, lower, below, whole, part, totals, lane, size, rank, groups, z, zv)
    # the look-back, by the first subgroup (look_back: a lane per predecessor, the window
    # moving back a subgroup's width until the nearest inclusive prefix), which publishes
    # the inclusive prefix from the same total as the aggregate
    carry = V(tile_carry(state, tile, tag, agg, lane, size, rank, prefix))
    if WGID != 0 and tile == tiles - 1 and rank == 0 and lane == 0:
        # every tile has read the epoch: the last one's prefix needed them all
        atomic_store(state, 4 * tiles, era + 1, scope="device")
    emit_held(out4, out, first, n, vout, held, sums, carry, exclusive, vout != 0 and inside)


@kernel(workgroup_size=WG, grid=1, shared_bytes=SMEM)
def lib_scan_pipe(x4: Buffer[V], x: Buffer[T], out4: Buffer[V, "w"], out: Buffer[T, "w"],
                  state: Buffer[u32, "rw"], n: u32, vin: u32, vout: u32, tiles: u32,
                  rounds: u32, period: u32, exclusive: u32):
    # lib_scan_look's protocol with each workgroup taking `rounds` tickets in turn: the
    # next tile's loads are in flight while the current one walks back (a workgroup of
    # lib_scan_look has none then); a ticket past the tiles is a round with no tile
    totals = shared(V, HELD // 4 * WG)
    marks = shared(u32, WG)
    drawn = shared(u32, 2)
    prefix = shared(T, 1)
    held = local_array(V, HELD)
    nxt = local_array(V, HELD)
    sums = local_array(V, HELD // 4)
    lower = local_array(V, HELD // 4)
    below = local_array(V, HELD // 4)
    whole = local_array(V, HELD // 4)
    part = local_array(V, HELD // 4)
    lane = subgroup_invocation_id()
    size = subgroup_size()
    z = zero_of()
    zv = V(z)
    lid = local_id().x
    if lid == 0:
        draw(state, tiles, period, drawn)
    rank = subgroup_rank(marks)
    groups = (u32(WG) + size - 1) // size
    tile = subgroup_broadcast_first(drawn[0])
    tag = (drawn[1] & EPOCH) << 2
    per_tile = u32(HELD * WG * 4)
    first = tile * HELD * WG + rank * size + lane
    for k in unroll(HELD):
        held[k] = load4(x4, x, first + k * WG, n, vin) if tile < tiles else zv
    for r in range(u32(0), rounds):
        # the tile scanned (scan_held: one barrier, after which every invocation has read
        # this round's ticket from `drawn`), then the next ticket, none in the last round,
        # so that a workgroup draws `rounds` tickets and runs each
        run = scan_held(held, sums, lower, below, whole, part, totals, lane, size, rank,
                        groups, z, zv)
        if lid == 0:
            if r + 1 < rounds:
                draw(state, tiles, period, drawn)
            else:
                drawn[0] = tiles
        barrier()  # the next ticket in `drawn`, `totals` read
        nt = subgroup_broadcast_first(drawn[0])
        ntag = (drawn[1] & EPOCH) << 2
        nfirst = nt * HELD * WG + rank * size + lane
        # the next tile's loads, in flight during this tile's walk back
        if nt < tiles:
            if vin != 0 and n >= per_tile and nt * per_tile <= n - per_tile:
                for k in unroll(HELD):
                    nxt[k] = x4[nfirst + k * WG]
            else:
                for k in unroll(HELD):
                    nxt[k] = load4(x4, x, nfirst + k * WG, n, vin)
        if rank == 0 and tile < tiles:
            if lane == 0:
                post_total(state, tile, tag, run)
            excl = look_back(state, tile, tag, run, lane, size)
            if lane == 0:
                prefix[0] = excl
        barrier()
        if tile < tiles:
            carry = V(prefix[0])
            full = vout != 0 and n >= per_tile and tile * per_tile <= n - per_tile
            emit_held(out4, out, first, n, vout, held, sums, carry, exclusive, full)
        for k in unroll(HELD):
            held[k] = nxt[k] if nt < tiles else zv
        tile = nt
        tag = ntag
        first = nfirst
