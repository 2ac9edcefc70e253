"""What checking a signed bundle's padding costs a pinned open (issue 26).

    python bench/padding_check_bench.py [--repeat N]

On the 100-kernel bundle of bench/runtime_bench.py, signed: `read_bundle(path,
trusted_keys=[PublicKey])` as it is (the padding between artifacts read and checked, one
pread per artifact), against the same open with the padding check turned off, rounds
interleaved so that machine load falls on both alike; and the check alone, called on an
open reader. Printed as times and the ratio of the two opens.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from vyre_build.bundle import read_bundle  # noqa: E402
from vyre_build.bundle.keys import load_public_key  # noqa: E402
from vyre_build.bundle.reader import BundleReader  # noqa: E402


def _per_call(fn, number: int) -> float:
    t = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t) / number


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=15, help="rounds per case (default 15)")
    a = p.parse_args(argv)
    sys.path[:0] = [HERE, os.path.join(ROOT, "tests", "gpu")]
    from runtime_bench import build_bundle  # the same 100-kernel bundle as runtime_bench
    from signing_bench import _signed_copy

    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "hundred.vyrebundle")
        build_bundle(bundle)
        signed, public = _signed_copy(bundle, tmp)
        key = load_public_key(public)
        checked = BundleReader._check_padding
        with read_bundle(signed, trusted_keys=[key]) as r:
            artifacts = len(r._ranges)
            alone = min(
                _per_call(lambda: checked(r, r._manifest_offset), 50) for _ in range(a.repeat)
            )
        rounds: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(a.repeat):
            for case in ("with", "without"):
                BundleReader._check_padding = checked if case == "with" else lambda s, m: None
                rounds[case].append(
                    _per_call(lambda: read_bundle(signed, trusted_keys=[key]).close(), 20)
                )
        BundleReader._check_padding = checked
    on, off = statistics.median(rounds["with"]), statistics.median(rounds["without"])
    print(
        f"pinned open of a signed 100-kernel bundle ({artifacts} artifacts): "
        f"{on * 1e3:.3f} ms with the padding check, {off * 1e3:.3f} ms without = "
        f"{on / off:.2f}x; the check alone {alone * 1e6:.0f} us "
        f"({alone / artifacts * 1e6:.2f} us per artifact)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
