"""List a SPIR-V module's loops and set their loop-control hints, in the binary itself.

    python3 tools/spirv_loops.py IN.spv                          # every OpLoopMerge, in order
    python3 tools/spirv_loops.py IN.spv --set 2=DontUnroll OUT.spv [--set 0=Unroll ...]

A module rewritten this way differs from IN.spv in the loop-control words only (no
disassembly and reassembly, which would renumber ids), so timing both in one run
(`bench/matmul_f32_bench.py --spirv IN.spv,OUT.spv`) shows what the driver's own loop
decisions are worth. On an H100 (bench/RESULTS.md, 2026-12-06 06:xx UTC) DontUnroll on
lib_matmul.f32's K loop ran 0.70x of torch against 0.83x: NVIDIA's driver unrolls it by two
itself. Loops are numbered in module order; each line gives the loop's merge and continue
block ids and its current control.
"""

from __future__ import annotations

import argparse
import struct
import sys

MAGIC = 0x07230203
OP_LOOP_MERGE = 246
CONTROLS = {"None": 0, "Unroll": 1, "DontUnroll": 2}  # the hints this tool sets (no operands)


def loop_merges(words: list[int]) -> list[int]:
    """The word offsets of the module's OpLoopMerge instructions, in order."""
    out, i = [], 5
    while i < len(words):
        count, op = words[i] >> 16, words[i] & 0xFFFF
        if count == 0:
            raise ValueError(f"malformed instruction at word {i}: word count 0")
        if op == OP_LOOP_MERGE:
            out.append(i)
        i += count
    return out


def read(path: str) -> list[int]:
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % 4 or len(data) < 20 or struct.unpack_from("<I", data)[0] != MAGIC:
        raise ValueError(f"{path}: not a little-endian SPIR-V module")
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module")
    ap.add_argument("out", nargs="?", help="where the rewritten module goes (with --set)")
    ap.add_argument("--set", action="append", default=[], metavar="N=CONTROL",
                    help=f"loop N's control: one of {', '.join(CONTROLS)}")  # fmt: skip
    args = ap.parse_args(argv)
    try:
        words = read(args.module)
        loops = loop_merges(words)
    except (OSError, ValueError) as exc:
        print(f"spirv_loops: {exc}", file=sys.stderr)
        return 2
    names = {v: k for k, v in CONTROLS.items()}
    if not args.set:
        for n, at in enumerate(loops):
            control = words[at + 3]
            shown = names.get(control, f"0x{control:x}")
            print(f"loop {n}: merge %{words[at + 1]}, continue %{words[at + 2]}, {shown}")
        return 0
    if args.out is None:
        print("spirv_loops: --set needs an output path", file=sys.stderr)
        return 2
    for item in args.set:
        n, _, control = item.partition("=")
        if not n.isdigit() or int(n) >= len(loops) or control not in CONTROLS:
            print(
                f"spirv_loops: --set {item!r}: give N=CONTROL with N below {len(loops)} "
                f"and CONTROL one of {', '.join(CONTROLS)}",
                file=sys.stderr,
            )
            return 2
        at = loops[int(n)]
        if words[at] >> 16 != 4:  # a control with operands (a loop count, ...): not ours
            print(f"spirv_loops: loop {n} has control operands; not rewritten", file=sys.stderr)
            return 2
        words[at + 3] = CONTROLS[control]
    with open(args.out, "wb") as f:
        f.write(struct.pack(f"<{len(words)}I", *words))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
