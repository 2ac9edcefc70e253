"""The scan paths side by side (issue 23), in one run on one device, against torch.cumsum:

- rts b1024: reduce-then-scan (lib_scan_sums, then lib_scan_block twice: about 3n values
  moved), at the library's default of up to 1,024 blocks (what every GPU runs today), and
  rts b528 / b264 at fewer, larger blocks (4 and 2 per SM on an H200), through the tuning
  interface the library reads;
- once: the first look-back kernel (lib_scan_once: one invocation walks back 16 predecessors
  a step);
- look: lib_scan_look (a subgroup walks back, a lane per predecessor; tiles of 8,192 values
  scanned before the walk; the tile from the workgroup id, each status value as tagged
  halves read with relaxed loads), the library's LOOK_BACK_KERNEL;
- look acq: lib_scan_look.acquire_* (a ticket per tile, flags read with acquire loads);
- look16: lib_scan_look.wide_*, lib_scan_look over tiles of 16,384 values in
  registers (16 vec4s per invocation), the library's LOOK_BACK_WIDE from LOOK_WIDE_LEAST
  values on;
- look hN (--held N,...): lib_scan_look over tiles of N vec4s per invocation (up to 32; past
  16, with the shared memory its step totals need);
- look flip, look16 flip (--flip-shuffle): lib_scan_look and its wide tiles with the other
  cross-subgroup step (variants.yaml's SHUFFLE: a shuffle scan, or subgroup reductions);
- --floor: what moving the scan's bytes costs without the scan, beside the scan rows: torch's
  copy of the same tensor (copy_) and bench/kernels/tile_copy.py, a copy in the look-back's
  tile shape (copy8: look's tiles, copy16: look16's; whole tiles only), so a scan's gap to
  its target reads against the floor of its own tile structure;
- pipe gN (--pipe N,...): lib_scan_pipe, N workgroups taking tiles of 8,192 values in
  turn (the next tile's loads in flight during the walk back);
- look16 ticket+flags, look16 wgid only, look16 packed only, look ticket+flags, look24,
  look32 (--protocol): the look-back's protocol switches against the library's form (the
  tile from the workgroup id, WGID, and each status value as two tagged 16-bit halves that
  one set of relaxed loads brings with its readiness, PACKED): each alone and neither (a
  ticket drawn per tile; a flag, an acquire fence and a second load), and both over tiles
  of 24 and 32 vec4s;
- look old, look16 old (--against FILE): lib_scan_look and its wide tiles compiled from
  another copy of kernels/lib_scan.py (an earlier revision: `git show
  REV:kernels/lib_scan.py > FILE`), beside this tree's in the same process; with --held,
  also look hN old: that copy over tiles of N vec4s;
- look wN, look16 wN (--wg N,...): lib_scan_look and its wide variants built with workgroups
  of N invocations (the module's WG rebound in its source text), so tiles of N * 32 and
  N * 64 values: which tile size the device wants.

    python3 bench/scan_bench.py           # the H200 run: f32 and i32 at 1M, 16.7M and 268M
    python3 bench/scan_bench.py --quick   # small sizes, a smoke run (lavapipe here)

Each figure is GPU time per call from Vulkan timestamps around a batch of calls
(library_bench.time_ours: the median of --rounds rounds after a warm-up; wall time where the
backend has none), inclusive scan into a DeviceBuffer. Each line gives the ratio against
torch (> 1: faster than torch) and against rts b1024 measured in the same run, and says
whether the result matches torch's (numpy's without torch: f32 within 1e-4 of the largest
sum, integers exactly). The look-back kernels need forward progress between workgroups
(docs/runtime.md, "Forward progress"): on a device without it (lavapipe) they run only at
sizes of at most LOOK_BACK_UNSAFE values, the acquire form not at all (lavapipe runs it
wrong, library.LOOK_BACK_KERNEL), and the line says so. The last column names the kernels
the library picks on the device (library.scan_kernels).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_env import cuda_torch  # noqa: E402
from library_bench import (  # noqa: E402
    KERNELS,
    _vector,
    agree,
    calls_for,
    kernels_for,
    say,
    time_ours,
    time_torch,
    timed_device,
)

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.core.errors import KernelError  # noqa: E402
from vyre_build import library  # noqa: E402
from vyre_build.library import SINGLE_PASS_FEATURES  # noqa: E402
from vyre_build.runtime.tuning import Choice  # noqa: E402

SIZES = (1 << 20, 1 << 24, 1 << 28)
QUICK = (4099, 1 << 16)
LOOK_BACK_UNSAFE = 1 << 16  # the most values a look-back runs on without forward progress
KINDS = ("f32", "i32")
PATHS = ("rts b1024", "rts b528", "rts b264", "look", "look acq", "once", "look16")


class _Blocks(dict):
    """The scan kernels without the look-back ones (so `scan` takes reduce-then-scan on any
    device) with `blocks` tuned, through the tuning interface the library reads."""

    def __init__(self, kernels: dict, blocks: int) -> None:
        super().__init__((k, v) for k, v in kernels.items() if k.startswith("lib_scan_"))
        for k in [k for k in self if k.startswith(("lib_scan_look", "lib_scan_once"))]:
            del self[k]
        self.blocks = blocks

    def tunable_for(self, fn: str) -> str:
        return fn

    def tuned(self, name: str) -> Choice:
        return Choice(name, f"b{self.blocks}", None, {"blocks": self.blocks}, "forced", None)


LIB_WG = 256  # kernels/lib_scan.py's WG (built_with checks the source still says so)


def paths(kernels: dict, kind: str, extra: list, pipes: list[int]) -> list[tuple[str, str, object]]:
    """(row name, what it runs, call(x, out)) for every path; `extra`: (row name, kernels,
    kernel id with {t}) of the look-back kernels built apart (--wg, --held, --flip-shuffle),
    whose tiles the kernel's own HELD gives."""
    rows: list[tuple[str, str, object]] = []
    for blocks in (1024, 528, 264):
        lib = _Blocks(kernels, blocks)
        rows.append((f"rts b{blocks}", "rts", lambda x, o, lib=lib: library.scan(lib, x, out=o)))
    looks = [
        ("look", kernels, "lib_scan_look.{t}"),
        ("look acq", kernels, "lib_scan_look.acquire_{t}"),
        ("once", kernels, "lib_scan_once.{t}"),
        ("look16", kernels, "lib_scan_look.wide_{t}"),
        *extra,
    ]
    for name, built, template in looks:
        kid = template.format(t=kind)
        if kid in built:
            # lib_scan_look's tiles from its variant's HELD (None: lib_scan_once's, which
            # the library knows)
            held = (built[kid].meta.variant_values or {}).get("HELD")
            items = None if held is None else int(held)
            call = lambda x, o, b=built, kid=kid, items=items: library._scan_once(  # noqa: E731
                b, kid, x, kind, False, o, items
            )
            rows.append((name, kid, call))
    for g in pipes:  # --pipe: lib_scan_pipe with g workgroups taking tiles in turn
        kid = f"lib_scan_pipe.{kind}"
        if kid in kernels:
            call = lambda x, o, kid=kid, g=g: library._scan_once(  # noqa: E731
                kernels, kid, x, kind, False, o, 8, g
            )
            rows.append((f"pipe g{g}", kid, call))
    return rows


def built_with(dev, wg: int) -> dict:
    """The lib_scan kernels the device can run, built with workgroups of `wg`."""
    path = os.path.join(KERNELS, "lib_scan.py")
    with open(path) as f:
        text = f.read()
    if f"\nWG = {LIB_WG}\n" not in text:
        raise SystemExit(f"kernels/lib_scan.py no longer sets WG = {LIB_WG}: --wg cannot rebind it")
    text = text.replace(f"\nWG = {LIB_WG}\n", f"\nWG = {wg}\n")
    return kernels_for(dev, compile_file(path, root=KERNELS, text=text))


def against_text(path: str) -> str:
    """--against: the text of `path` (another revision of kernels/lib_scan.py)."""
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise SystemExit(f"--against {path}: {e.strerror}") from None


def built_against(dev, path: str, text: str) -> dict:
    """--against: the lib_scan kernels the device can run, compiled from `text` (read from
    `path`) as if it were kernels/lib_scan.py, so that its imports resolve in this tree's
    kernels/."""
    here = os.path.join(KERNELS, "lib_scan.py")
    return kernels_for(dev, compile_file(here, root=KERNELS, text=text, display_path=path))


def built_variants(
    dev, extra: dict[str, tuple[str, Callable[[dict], dict]]], text: str | None = None
) -> dict:
    """lib_scan_look built with the variants of `extra` added (name with {t}: (the variant
    with {t} it copies, the values it changes, given the copied ones)) to a copy of
    kernels/ (variants.yaml), for each element type of KINDS; from `text` in place of
    kernels/lib_scan.py where given (--against with --held)."""
    import shutil
    import tempfile

    import yaml

    tmp = tempfile.mkdtemp(prefix="vyre-scan-variants-")
    root = os.path.join(tmp, "kernels")
    shutil.copytree(KERNELS, root)
    spec_path = os.path.join(root, "variants.yaml")
    with open(spec_path) as f:
        spec = yaml.safe_load(f)
    look = spec["lib_scan.py"]["lib_scan_look"]
    for name, (base, changed) in extra.items():
        for t in KINDS:
            copied = look[base.format(t=t)]
            look[name.format(t=t)] = dict(copied, **changed(copied))
    with open(spec_path, "w") as f:
        yaml.safe_dump(spec, f)
    if text is not None:
        with open(os.path.join(root, "lib_scan.py"), "w") as f:
            f.write(text)
    return kernels_for(dev, compile_file(os.path.join(root, "lib_scan.py"), root=root))


def held_variants(held: list[int]) -> dict[str, tuple[str, Callable[[dict], dict]]]:
    """--held: lib_scan_look with tiles of HELD = h vec4s per invocation (a multiple of 4
    from 4 to 32: its helpers take the tile 4 vec4s at a time); past 16, with the shared
    memory lib_scan_look's arrays take: `totals`, h / 4 vec4s per invocation, and the
    marks, the drawn ticket and the prefix beside them."""
    out = {}
    for h in held:
        if h < 4 or h > 32 or h % 4:
            raise SystemExit(f"--held {h}: a multiple of 4 from 4 to 32 (whole steps of 4 vec4s)")
        if h <= 16:
            out[f"held{h}_{{t}}"] = ("{t}" if h <= 8 else "wide_{t}", lambda v, h=h: {"HELD": h})
        else:
            m = held_shared(h)
            out[f"held{h}_{{t}}"] = ("wide_{t}", lambda v, h=h, m=m: {"HELD": h, "SMEM": m})
    return out


def held_shared(h: int) -> int:
    """The shared bytes lib_scan_look's arrays take over tiles of h vec4s an invocation:
    `totals`, h / 4 vec4s per invocation, and the marks, the drawn ticket and the prefix
    beside them."""
    return h // 4 * LIB_WG * 16 + LIB_WG * 4 + 16


def flipped_variants() -> dict[str, tuple[str, Callable[[dict], dict]]]:
    """--flip-shuffle: lib_scan_look and its wide tiles with the other cross-subgroup step
    (SHUFFLE: shuffle scan for floats, subgroup reductions for integers)."""

    def flip(v: dict) -> dict:
        return {"SHUFFLE": 1 - v["SHUFFLE"]}

    return {"flip_{t}": ("{t}", flip), "flipwide_{t}": ("wide_{t}", flip)}


# --protocol: row name -> (variant name with {t}, the variant it copies, the values it sets)
PROTOCOL_ROWS = {
    "look16 ticket+flags": ("flags_wide_{t}", "wide_{t}", {"WGID": 0, "PACKED": 0}),
    "look16 wgid only": ("wgid_wide_{t}", "wide_{t}", {"WGID": 1, "PACKED": 0}),
    "look16 packed only": ("packed_wide_{t}", "wide_{t}", {"WGID": 0, "PACKED": 1}),
    "look ticket+flags": ("flags_{t}", "{t}", {"WGID": 0, "PACKED": 0}),
    "look24": ("wp24_{t}", "wide_{t}", {"HELD": 24, "SMEM": held_shared(24)}),
    "look32": ("wp32_{t}", "wide_{t}", {"HELD": 32, "SMEM": held_shared(32)}),
}
PROTOCOLS = {row: f"lib_scan_look.{name}" for row, (name, _, _) in PROTOCOL_ROWS.items()}


def protocol_variants() -> dict[str, tuple[str, Callable[[dict], dict]]]:
    """--protocol: lib_scan_look's protocols against the library's (the tile from the
    workgroup id, WGID, and status values as tagged halves, PACKED): each switch alone and
    neither (the ticket and the flags, the library's form until 2026-12-06) on the wide
    tiles, neither on the tiles of 8 vec4s, and both (the library's values) on tiles of 24
    and 32 vec4s (PROTOCOL_ROWS)."""
    return {
        name: (base, lambda v, sets=sets: dict(sets)) for name, base, sets in PROTOCOL_ROWS.values()
    }


def forward_progress(dev) -> bool:
    # What library.scan_kernels assumes, without the LOOK_BACK_PAYS_VENDORS condition.
    p = dev.profile
    known = p.backend == "cpu" or (
        p.backend == "vulkan" and p.vendor_id in library.FORWARD_PROGRESS_VENDORS
    )
    return known and SINGLE_PASS_FEATURES <= p.features


def run(dev, kernels: dict, kind: str, n: int, torch, args, extra: list, copies: dict) -> None:
    data = _vector(kind)(np.random.default_rng(0), n)
    x_host = data["x"]
    moved = 8 * n  # read once, write once
    ref, want = None, None
    if torch is not None:
        t = torch.from_numpy(x_host).cuda()
        dtype = torch.float32 if kind == "f32" else torch.int32
        out_t = torch.empty_like(t, dtype=dtype)
        tcall = lambda: torch.cumsum(t, 0, dtype=dtype, out=out_t)  # noqa: E731
        number = args.number or calls_for(tcall, torch.cuda.synchronize)
        ref = time_torch(torch, tcall, number, args.rounds)
        want = tcall().cpu().numpy()
        del t, out_t
        torch.cuda.empty_cache()
    else:
        wide = np.float64 if kind == "f32" else None
        want = np.cumsum(x_host, dtype=wide)
    picked = " + ".join(library.scan_kernels(dev, kind, n))
    head = f"{kind} n={n:<11}"
    if ref is not None:
        say(f"  {head} torch            {ref * 1e6:9.1f} us {moved / ref / 1e9:8.1f} GB/s")
    if copies:
        floor(dev, copies, kind, n, x_host, torch, args, head)
    x = dev.buffer(x_host)
    out = dev.buffer(n, kind)
    base = None
    progress = forward_progress(dev)
    for name, what, call in paths(kernels, kind, extra, args.pipes):
        if args.paths and name not in args.paths.split(","):
            continue
        if what != "rts" and not progress and (n > LOOK_BACK_UNSAFE or "acquire" in what):
            why = "the acquire form runs wrong there" if "acquire" in what else "too large"
            say(f"  {head} {name:<16} skipped: no forward progress on this device ({why})")
            continue
        run_once = lambda call=call: call(x, out)  # noqa: E731
        number = args.number or calls_for(run_once, dev.wait)
        ours, _ = time_ours(dev, run_once, number, args.rounds)
        ok, err = agree(out.read(), np.asarray(want), 1e-4 if kind == "f32" else 0.0)
        base = ours if base is None else base
        line = f"  {head} {name:<16} {ours * 1e6:9.1f} us {moved / ours / 1e9:8.1f} GB/s"
        line += f"  vs rts b1024 {base / ours:6.3f}x"
        if ref is not None:
            line += f"  vs torch {ref / ours:6.3f}x"
        line += "  matches" if ok else f"  MISMATCH (max error {err:.3g})"
        say(line + f"   [{what}; library picks {picked}]")


def floor(dev, copies: dict, kind: str, n: int, x_host, torch, args, head: str) -> None:
    """--floor rows: torch's copy of the tensor and the tile-shaped copies of
    bench/kernels/tile_copy.py (`copies`, its variants; those of whole tiles of n), in GB/s
    moved."""
    moved = 8 * n
    if torch is not None:
        t = torch.from_numpy(x_host).cuda()
        o = torch.empty_like(t)
        tcall = lambda: o.copy_(t)  # noqa: E731
        number = args.number or calls_for(tcall, torch.cuda.synchronize)
        sec = time_torch(torch, tcall, number, args.rounds)
        say(f"  {head} torch copy       {sec * 1e6:9.1f} us {moved / sec / 1e9:8.1f} GB/s")
        del t, o
        torch.cuda.empty_cache()
    x = dev.buffer(x_host.view(np.float32).reshape(-1, 4))
    out = dev.buffer((n // 4, 4), "f32")
    for kern in sorted(copies.values(), key=lambda k: int(k.meta.variant_values["HELD"])):
        held = int(kern.meta.variant_values["HELD"])
        wg = kern.meta.workgroup_size[0]
        if n % (held * wg * 4):
            continue
        grid = n // (held * 4)  # an invocation per HELD vec4s
        once = lambda kern=kern, grid=grid: kern(x4=x, out4=out, grid=grid)  # noqa: E731
        number = args.number or calls_for(once, dev.wait)
        sec, _ = time_ours(dev, once, number, args.rounds)
        same = np.array_equal(out.read().reshape(-1).view(x_host.dtype), x_host)
        say(
            f"  {head} copy{held:<12} {sec * 1e6:9.1f} us {moved / sec / 1e9:8.1f} GB/s"
            f"  {'copied' if same else 'WRONG COPY'}   [bench/kernels/tile_copy.py]"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument("--sizes", default="", help="comma list of element counts")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma list of f32, i32, u32")
    ap.add_argument("--backend", default="vulkan", help="vulkan (default) or cpu")
    ap.add_argument(
        "--paths", default="", help="comma list of: " + ", ".join(PATHS) + " (default: all)"
    )
    ap.add_argument("--wg", default="", help="comma list of workgroup sizes: look wN paths")
    ap.add_argument(
        "--held", default="", help="comma list of vec4s per invocation per tile: look hN paths"
    )
    ap.add_argument(
        "--flip-shuffle",
        action="store_true",
        help="also lib_scan_look and its wide tiles with the other cross-subgroup step "
        "(variants.yaml's SHUFFLE flipped): look flip, look16 flip paths",
    )
    ap.add_argument(
        "--protocol",
        action="store_true",
        help="also the look-back's protocol switches against the library's form: "
        + ", ".join(PROTOCOLS),
    )
    ap.add_argument(
        "--against",
        default="",
        help="another copy of kernels/lib_scan.py (an earlier revision): look old, look16 old "
        "(and look hN old with --held)",
    )
    ap.add_argument("--floor", action="store_true", help="also torch's copy and tile-shaped copies")
    ap.add_argument("--pipe", default="", help="comma list of workgroup counts: pipe gN paths")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--number", type=int, default=0, help="calls per round (default: ~30 ms)")
    args = ap.parse_args(argv)
    sizes_wg = [int(w) for w in args.wg.split(",") if w]
    held = [int(h) for h in args.held.split(",") if h]
    args.pipes = pipes = [int(g) for g in args.pipe.split(",") if g]
    unknown = (
        set(filter(None, args.paths.split(",")))
        - set(PATHS)
        - {f"{p} w{w}" for w in sizes_wg for p in ("look", "look16")}
        - {f"look h{h}" for h in held}
        - {f"pipe g{g}" for g in pipes}
        - ({"look flip", "look16 flip"} if args.flip_shuffle else set())
        - ({"look old", "look16 old"} if args.against else set())
        - ({f"look h{h} old" for h in held} if args.against else set())
        - (set(PROTOCOLS) if args.protocol else set())
    )
    if unknown:
        ap.error(f"unknown paths {sorted(unknown)}; choose from {list(PATHS)}")
    if args.paths and "rts b1024" not in args.paths.split(","):
        ap.error("--paths must hold 'rts b1024': every ratio is against it")
    sizes = QUICK if args.quick else SIZES
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    torch = cuda_torch()
    dev = timed_device(args.backend)
    compiled = compile_file(os.path.join(KERNELS, "lib_scan.py"), root=KERNELS)
    kernels = kernels_for(dev, compiled)
    extra = []
    for w in sizes_wg:
        built = built_with(dev, w)
        extra.append((f"look w{w}", built, "lib_scan_look.{t}"))
        extra.append((f"look16 w{w}", built, "lib_scan_look.wide_{t}"))
    if args.against:
        text = against_text(args.against)
        try:  # the other copy, and with --held its tiles of N vec4s
            old = built_against(dev, args.against, text)
            old_held = built_variants(dev, held_variants(held), text) if held else {}
        except KernelError as e:
            raise SystemExit(f"--against: it does not compile here:\n{e}") from None
        extra.append(("look old", old, "lib_scan_look.{t}"))
        extra.append(("look16 old", old, "lib_scan_look.wide_{t}"))
        for h in held:
            extra.append((f"look h{h} old", old_held, f"lib_scan_look.held{h}_{{t}}"))
    variants = held_variants(held)
    if args.flip_shuffle:
        variants.update(flipped_variants())
    if args.protocol:
        variants.update(protocol_variants())
    if variants:
        built = built_variants(dev, variants)
        for h in held:
            extra.append((f"look h{h}", built, f"lib_scan_look.held{h}_{{t}}"))
        if args.flip_shuffle:
            extra.append(("look flip", built, "lib_scan_look.flip_{t}"))
            extra.append(("look16 flip", built, "lib_scan_look.flipwide_{t}"))
        if args.protocol:
            extra += [(name, built, kid) for name, kid in PROTOCOLS.items()]
    copies = {}  # --floor: bench/kernels/tile_copy.py's variants, built once
    if args.floor:
        path = os.path.join(HERE, "kernels", "tile_copy.py")
        copies = kernels_for(dev, compile_file(path, root=HERE))
    say(f"torch: {torch.cuda.get_device_name() if torch else 'absent (checked against numpy)'}")
    say(f"forward progress: {'yes' if forward_progress(dev) else 'no'}")
    start = time.perf_counter()
    for kind in args.kinds.split(","):
        for n in sizes:
            run(dev, kernels, kind, n, torch, args, extra, copies)
    say(f"total {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
