"""Signing benchmark: bundle open with signature verification vs without (100 kernels).

    python bench/signing_bench.py [--repeat N]

Baseline, measured in the same run on the same 100-kernel bundle: `open_bundle(path)` of
the unsigned bundle, as the runtime opens it today. Against it: the same bundle signed and
opened with its public key pinned (`trusted_keys=[key file]`: reads the key file, checks
the Ed25519 signature over the header before the manifest is read), and with an already
loaded PublicKey (the check alone). Target: <= 1 ms extra. The first check in a process
also imports PyNaCl, reported separately from fresh processes. `bench/runtime_bench.py`
calls `report` after its own bundle-open figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from vyre_build.bundle import read_bundle, write_bundle  # noqa: E402
from vyre_build.bundle.keys import generate_key_pair, load_public_key, write_key_pair  # noqa: E402
from vyre_build.runtime import open_bundle  # noqa: E402

FIRST_OPEN = """
import sys, time; sys.path.insert(0, {root!r})
import numpy
from vyre_build.runtime import open_bundle
t = time.perf_counter(); open_bundle({path!r}{keys}).close(); print(time.perf_counter() - t)
"""


def _signed_copy(bundle: str, directory: str) -> tuple[str, str]:
    """(signed copy of `bundle`, its public key file), made as `vyre-build bundle sign` does."""
    secret, public = write_key_pair(
        os.path.join(directory, "bench.key"), generate_key_pair("bench")
    )
    with read_bundle(bundle, trusted_keys=False) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
        ]
    signed = os.path.join(directory, "signed.vyrebundle")
    write_bundle(signed, entries, sign_key=secret)
    return signed, public


def _interleaved(cases: dict, repeat: int, number: int) -> dict:
    """Median seconds per call of each case, rounds interleaved so that load on a shared
    machine falls on every case alike."""
    for fn in cases.values():
        fn()
    rounds: dict = {name: [] for name in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            t = time.perf_counter()
            for _ in range(number):
                fn()
            rounds[name].append((time.perf_counter() - t) / number)
    return {name: statistics.median(r) for name, r in rounds.items()}


def _fresh_first_open(path: str, keys: str, repeat: int) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.pop("VYRE_TRUSTED_KEYS", None)
    script = FIRST_OPEN.format(root=ROOT, path=path, keys=keys)
    times = []
    for _ in range(repeat + 1):  # the first run writes the .pyc files
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
        )
        times.append(float(out.stdout))
    return statistics.median(times[1:])


def report(bundle: str, repeat: int = 20, say=print) -> dict:
    """Measure bundle open with and without signature verification on `bundle` (unsigned,
    100 kernels) and `say` the figures as ratios against the unsigned open; returns them."""
    with tempfile.TemporaryDirectory() as tmp:
        signed, public = _signed_copy(bundle, tmp)
        key = load_public_key(public)
        for path in (bundle, signed):
            with read_bundle(path, trusted_keys=False) as r:
                count = len(r.ids)
        t = _interleaved(
            {
                "unsigned": lambda: open_bundle(bundle).close(),
                "signed, not checked": lambda: open_bundle(signed, trusted_keys=False).close(),
                "signed, key file": lambda: open_bundle(signed, trusted_keys=[public]).close(),
                "signed, PublicKey": lambda: open_bundle(signed, trusted_keys=[key]).close(),
            },
            repeat,
            number=10,
        )
        cold = repeat // 4 + 3
        first_plain = _fresh_first_open(bundle, "", cold)
        first_keyed = _fresh_first_open(signed, f", trusted_keys=[{public!r}]", cold)
    base = t["unsigned"]
    say(
        f"bundle open with vs without signature verification, {count} kernels (baseline: "
        f"open_bundle of the unsigned bundle, {base * 1e3:.3f} ms):"
    )
    for name in ("signed, not checked", "signed, key file", "signed, PublicKey"):
        extra = t[name] - base
        say(f"  {name:22s} {t[name] * 1e3:7.3f} ms = {t[name] / base:.2f}x ({extra * 1e3:+.3f} ms)")
    extra = t["signed, key file"] - base
    say(
        f"  verification with the key file pinned: {extra * 1e3:+.3f} ms extra = "
        f"{t['signed, key file'] / base:.2f}x (target <= 1 ms extra: {'met' if extra <= 1e-3 else 'missed'})"
    )
    say(
        f"  first open in a fresh process: {first_plain * 1e3:.2f} ms unsigned vs "
        f"{first_keyed * 1e3:.2f} ms verified = {first_keyed / first_plain:.2f}x "
        f"(+{(first_keyed - first_plain) * 1e3:.2f} ms: imports PyNaCl and reads the key once)"
    )
    return {**t, "first_unsigned": first_plain, "first_verified": first_keyed}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20, help="rounds per case (default 20)")
    a = p.parse_args(argv)
    sys.path[:0] = [HERE, os.path.join(ROOT, "tests", "gpu")]
    from runtime_bench import build_bundle  # the same 100-kernel bundle as runtime_bench

    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "hundred.vyrebundle")
        build_bundle(bundle)
        report(bundle, a.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
