"""Plots of bench/RESULTS.md: one PNG per benchmark family, ours vs torch vs GLSL by size.

    python3 bench/plots.py [--results bench/RESULTS.md] [--out bench/plots] [--check]

Reads the result lines the benches print into RESULTS.md (their formats below), keeps the
latest figure of each (family, series, size) in file order, draws each family measured
at two sizes or more as one line per series over its sizes, and writes
`<kind>-<family>.png` into --out. It then
rewrites the "Plots" section of RESULTS.md (between its two marker comments; appended
when missing) to link every PNG, so the figures sit where people look. --check writes
nothing and exits 1 when the PNGs or the section are not what a run would write.

Recognised lines (kind: what is plotted, and the series):
- library (bench/library_bench.py): `[vulkan] reduce_sum_f32 16777216 ours 1921.4 GB/s
  (...) | torch 2925.4 GB/s (...)` -> throughput; "ours (vulkan)", "ours (wgpu)", "torch".
- coop (bench/coop_bench.py): `lib_matmul_f16 n=2048 ours 14.4 TFLOP/s torch fp16
  689.8 TFLOP/s` -> throughput; "ours", "torch fp16".
- codegen (bench/codegen_bench.py): `matmul n=2048 ours 2094.2 us GLSL 2112.2 us` -> GPU
  time per dispatch; "ours", "GLSL".
- device (bench/runtime_bench.py --device-report): `[vulkan] saxpy size=16776960: host
  1692.50 GB/s, gpu 3178.98 GB/s | torch (cuda) 4007.46 GB/s` -> throughput; "ours host
  (vulkan)", "ours gpu (vulkan)", "torch", "hand-written WGSL" where the line has them
  (lines without torch, the --quick runs on lavapipe, are not plotted).
- elementwise (bench/codegen_bench.py): `saxpy auto n=16777216 GPU ours 3.98 TB/s, torch
  4.02 TB/s` -> throughput; "ours (auto)", "ours (base)", "torch".

matplotlib is needed by this script only (pip install matplotlib); nothing of vyre_build
imports it. The PNGs are deterministic for one matplotlib version (no timestamps or
software tag in them).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
BEGIN = "<!-- plots: written by bench/plots.py; edit the script, not this section -->"
END = "<!-- end of plots -->"

_OURS = r"(?P<ours>[0-9]+(?:\.[0-9]+)?)"
_THEIRS = r"(?P<theirs>[0-9]+(?:\.[0-9]+)?)"
# kind -> (line pattern, what the value is, "higher"/"lower" is better)
PATTERNS = {
    "library": (
        re.compile(
            rf"^\s*\[(?P<backend>\w+)\s*\]\s+(?P<family>\S+)\s+(?P<size>\([0-9, ]+\)|[0-9]+)"
            rf"\s+ours\s+{_OURS}\s+(?P<unit>GB/s|TFLOP/s)\b.*?\|\s*torch\s+{_THEIRS}\s"
        ),
        "throughput",
        "higher",
    ),
    "coop": (
        re.compile(
            rf"^\s*(?P<family>\S+)\s+n=(?P<size>[0-9]+)\s+ours\s+{_OURS}\s+(?P<unit>TFLOP/s)"
            rf"\s+torch fp16\s+{_THEIRS}\s"
        ),
        "throughput",
        "higher",
    ),
    "codegen": (
        re.compile(
            rf"^\s*(?P<family>\S+)\s+n=(?P<size>[0-9]+)\s+ours\s+{_OURS}\s+(?P<unit>us)"
            rf"\s+GLSL\s+{_THEIRS}\s+us"
        ),
        "GPU time per dispatch",
        "lower",
    ),
    "device": (
        re.compile(
            r"^\[(?P<backend>\w+)\]\s+(?P<family>\S+(?: grid=[0-9]+)?)\s+size=(?P<size>\([0-9, ]+\)"
            r"|[0-9]+):\s+host\s+(?P<host>[0-9.]+)\s+(?P<unit>GB/s|GFLOP/s)"
            r"(?:,\s+gpu\s+(?P<gpu>[0-9.]+)\s+(?:GB/s|GFLOP/s))?"
            r"\s+\|\s+torch \(cuda\)\s+(?P<theirs>[0-9.]+)\s+(?:GB/s|GFLOP/s)"
            r"(?:\s+\|\s+hand-written WGSL\s+(?P<wgsl>[0-9.]+))?"
        ),
        "throughput",
        "higher",
    ),
    "elementwise": (
        re.compile(
            rf"^\s*(?P<family>\S+)\s+(?P<entry>auto|base)\s+n=(?P<size>[0-9]+)\s+GPU ours\s+"
            rf"{_OURS}\s+(?P<unit>TB/s), torch\s+{_THEIRS}\s+TB/s"
        ),
        "throughput",
        "higher",
    ),
}


def _series(kind: str, m: re.Match) -> list[tuple[str, float]]:
    """The (series name, value) pairs of one matched line."""
    g = m.groupdict()
    if kind == "device":  # runtime_bench --device-report: host-inclusive, GPU-only, torch
        pairs = [
            (f"ours host ({g['backend']})", g["host"]),
            (f"ours gpu ({g['backend']})", g["gpu"]),
        ]
        pairs += [("torch", g["theirs"]), ("hand-written WGSL", g["wgsl"])]
        return [(name, float(v)) for name, v in pairs if v is not None]
    names = {
        "library": (f"ours ({g.get('backend')})", "torch"),
        "coop": ("ours", "torch fp16"),
        "codegen": ("ours", "GLSL"),
        "elementwise": (f"ours ({g.get('entry')})", "torch"),
    }[kind]
    return [(names[0], float(g["ours"])), (names[1], float(g["theirs"]))]


def parse(text: str) -> dict[tuple[str, str], dict]:
    """(kind, family) -> {"unit", "what", "better", "series": {name: {size: value}}}, the
    latest value of each (series, size) in the order of `text`; families with one size
    are left out."""
    families: dict[tuple[str, str], dict] = {}
    for line in text.splitlines():
        for kind, (pattern, what, better) in PATTERNS.items():
            m = pattern.match(line)
            if m is None:
                continue
            fam = families.setdefault(
                (kind, m["family"]),
                {"unit": m["unit"], "what": what, "better": better, "series": {}},
            )
            for name, value in _series(kind, m):
                fam["series"].setdefault(name, {})[m["size"]] = value
            break
    # A plot by size needs two sizes at least: one-size families are left out.
    return {
        key: fam
        for key, fam in families.items()
        if len({size for values in fam["series"].values() for size in values}) >= 2
    }


def size_key(size: str) -> int:
    """Order of sizes on the axis: by element count ("(4096, 1024)" -> 4194304)."""
    count = 1
    for n in re.findall(r"[0-9]+", size):
        count *= int(n)
    return count


def file_name(kind: str, family: str) -> str:
    return f"{kind}-{re.sub(r'[^A-Za-z0-9_.-]', '_', family)}.png"


def draw(kind: str, family: str, fam: dict) -> bytes:
    """The PNG of one family (matplotlib's Agg; imported here only)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({s for values in fam["series"].values() for s in values}, key=size_key)
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for name in sorted(fam["series"]):
        values = fam["series"][name]
        xs = [i for i, s in enumerate(sizes) if s in values]
        style = "--" if not name.startswith("ours") else "-"
        ax.plot(xs, [values[sizes[i]] for i in xs], style, marker="o", label=name)
    ax.set_xticks(range(len(sizes)), sizes)
    ax.set_xlabel("size")
    ax.set_ylabel(f"{fam['what']} ({fam['unit']}; {fam['better']} is better)")
    ax.set_title(f"{family} ({kind})")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def section(names: list[tuple[str, str, str]], out_rel: str) -> str:
    """The Plots section of RESULTS.md linking `names` ((kind, family, file) each)."""
    lines = [
        BEGIN,
        "## Plots",
        "",
        "One PNG per benchmark family (the latest figures above; `python3 bench/plots.py`",
        "redraws them after new results are added):",
        "",
    ]
    for kind, family, name in names:
        lines.append(f"- {kind} `{family}`: ![{family}]({out_rel}/{name})")
    return "\n".join([*lines, END]) + "\n"


def with_section(text: str, block: str) -> str:
    """`text` with its Plots section replaced by `block` (appended when it has none)."""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + block


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(BENCH, "RESULTS.md"))
    ap.add_argument("--out", default=None, help="folder of the PNGs (default: plots/ beside it)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = ap.parse_args(argv)
    try:
        with open(args.results, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        print(f"error: {args.results}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    folder = args.out or os.path.join(os.path.dirname(os.path.abspath(args.results)), "plots")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("error: bench/plots.py needs matplotlib: pip install matplotlib", file=sys.stderr)
        return 1
    families = parse(text)
    if not families:
        print(f"error: {args.results}: no benchmark lines recognised", file=sys.stderr)
        return 1
    pngs = {file_name(k, f): draw(k, f, fam) for (k, f), fam in sorted(families.items())}
    rel = os.path.relpath(folder, os.path.dirname(os.path.abspath(args.results)))
    names = [(k, f, file_name(k, f)) for k, f in sorted(families)]
    new_text = with_section(text, section(names, rel.replace(os.sep, "/")))
    stale = [n for n, data in pngs.items() if _read(os.path.join(folder, n)) != data]
    stale += [os.path.basename(args.results)] if new_text != text else []
    if args.check:
        for name in stale:
            print(f"stale: {name}", file=sys.stderr)
        return 1 if stale else 0
    os.makedirs(folder, exist_ok=True)
    for name, data in pngs.items():
        _write(os.path.join(folder, name), data)
    if new_text != text:
        _write(args.results, new_text.encode("utf-8"))
    print(f"{len(pngs)} plots in {folder} ({len(stale)} written), linked from {args.results}")
    return 0


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


if __name__ == "__main__":
    raise SystemExit(main())
