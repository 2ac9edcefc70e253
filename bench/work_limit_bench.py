"""The per-file work limit on issue 26's repro: how long refusing it takes, against what
compiling it would have taken.

    python3 bench/work_limit_bench.py [--lines 14280] [--variants 1000]

The repro: a kernel file of `--lines` statements `o[0] = x + N` (14,280 of them are 240 KB
and 99,960 operations as the limit counts them, just under the per-kernel limit) with
`--variants` variants in variants.yaml, within every other limit. Printed: the time to
refuse the file (`compile_file`: parse, YAML, the count), the time to compile one variant of
the same kernel, and the ratio of the refusal to what compiling every variant would take
(one variant's time x variants, as before the limit). Also the count's own share of the
refusal (the rest is the parse every compile does anyway).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.core.errors import KernelError  # noqa: E402
from vyre_build.frontend import load_module  # noqa: E402
from vyre_build.frontend.work import file_work  # noqa: E402

HEAD = 'from vyre_build.lang import *\n\n@kernel(workgroup_size=64)\ndef big(o: Buffer[u32, "rw"], x: u32):\n'


def write(directory: str, lines: int, variants: int) -> str:
    path = os.path.join(directory, "big.py")
    with open(path, "w") as f:
        f.write(HEAD + "    o[0] = x + N\n" * lines)
    with open(os.path.join(directory, "variants.yaml"), "w") as f:
        f.write("big.py:\n  big:\n" + "".join(f"    v{i}: {{N: {i}}}\n" for i in range(variants)))
    return path


def best(fn, n: int) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=14280)
    p.add_argument("--variants", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as many, tempfile.TemporaryDirectory() as one:
        refused = write(many, a.lines, a.variants)
        single = write(one, a.lines, 1)

        def refuse() -> None:
            try:
                compile_file(refused)
            except KernelError:
                return
            raise SystemExit("the repro was not refused")

        t_refuse = best(refuse, a.rounds)
        module = load_module(single)
        module.kernels["big"].variants = {f"v{i}": {"N": 0} for i in range(a.variants)}
        t_count = best(lambda: _count(module), a.rounds)
        t_one = best(lambda: compile_file(single), 1)
    before = t_one * a.variants
    print(
        f"work limit on {a.lines} statements x {a.variants} variants: refused in "
        f"{t_refuse * 1e3:.0f} ms (the count itself {t_count * 1e3:.1f} ms); one variant "
        f"compiles in {t_one:.2f} s, so all of them would take {before / 60:.1f} min: the "
        f"refusal is {t_refuse / before:.2e}x of that"
    )
    return 0


def _count(module) -> None:
    module.work = None  # not memoised: count again
    try:
        file_work(module)
    except KernelError:
        return


if __name__ == "__main__":
    raise SystemExit(main())
