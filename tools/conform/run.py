"""The differential run: programs through worker processes, findings explained or
minimised, one summary. `main(Config)` returns the exit status (1 on any new finding)."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from .gen import Options

EVAL_TIMEOUT = 60.0  # one program on every backend (a hang is a finding)
SHRINK_SECONDS = 240.0


@dataclass
class Config:
    seed: int
    programs: int
    backends: tuple
    jobs: int = 1
    opts: Options = field(default_factory=Options)
    only: int | None = None
    minimise: bool = True
    shrink_seconds: float = SHRINK_SECONDS
    out = sys.stdout


def _setup() -> dict:
    # Thousands of throwaway shaders: keep them out of the per-user pipeline cache and
    # Mesa's shader cache (both are for kernels that run again).
    os.environ.setdefault("VYRE_PIPELINE_CACHE", "off")
    os.environ.setdefault("MESA_SHADER_CACHE_DISABLE", "true")
    import numpy as np

    np.seterr(all="ignore")  # NaN and inf in device outputs are values to compare, not warnings
    return {}


def _finding_record(f, known) -> dict:
    return {"key": f.key(), "headline": f.headline(), "known": known, "kind": f.kind}


def _handle(state, task):
    from .check import evaluate
    from .gen import generate
    from .known import explain

    kind, seed, index, opts, backends = task[:5]  # kind: eval, probe (eval, one backend), shrink
    t0 = time.monotonic()
    try:
        prog = generate(seed, index, opts)
    except Exception:  # noqa: BLE001 - a bug of this tool: reported, the run goes on
        import traceback

        return {"index": index, "generator": traceback.format_exc(limit=-8)}
    outcome = evaluate(prog, backends)
    if kind in ("eval", "probe"):
        return {
            "index": index,
            "findings": [_finding_record(f, explain(f, prog, backends)) for f in outcome.findings],
            "ran": outcome.ran,
            "skipped": outcome.skipped,
            "seconds": time.monotonic() - t0,
        }
    from .check import persists
    from .report import report
    from .shrink import Shrinker

    key, seconds = task[5], task[6]
    finding = next(f for f in outcome.findings if f.key() == key)
    shrinker = Shrinker(finding, backends, seconds=seconds)
    small = shrinker.run(prog)
    final = evaluate(small, [b for b in backends if b in (finding.backend, finding.baseline)] or [])
    shown = next((f for f in final.findings if f.key() == key), finding)
    if not persists(small, finding, backends):  # a flaky finding: show the original
        small, shown = prog, finding
    command = f"python tools/conformance.py --seed {seed} --only {index}"
    return {
        "index": index,
        "report": report(small, shown, f"{seed}:{index}", command),
        "tests": shrinker.tests,
    }


def _failure(result) -> str:
    """A worker's end: a timeout (None) or ("died", exit code: -N for signal N, the stack
    its fault handler wrote), with where it died when the stack says."""
    if result is None:
        return "timed out"
    code = result[1]
    what = (
        f"killed the worker (signal {-code})"
        if code and code < 0
        else f"killed the worker (exit {code})"
    )
    where = _crash_site(result[2] if len(result) > 2 else "")
    return f"{what} in {where}" if where else what


def _crash_site(stack: str) -> str:
    """The innermost frames of a fault handler's stack, as `func (file:line) < caller`."""
    import re

    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', stack)
    shown = [f"{fn} ({os.path.basename(path)}:{line})" for path, line, fn in frames[:3]]
    return " < ".join(shown)


def _take(cfg, pool, task, result, ran, skipped, known, new, reports) -> int:
    """Fold one finished task into the tallies; 1 when it was a program that ran."""
    index = task[2]
    if task[0] == "probe":  # one backend alone, after a worker died or hung
        if result is None or isinstance(result, tuple):
            reports[index] += f"\n  alone, {task[4][0]} {_failure(result)} too"
        return 0
    if result is None or isinstance(result, tuple):
        what = _failure(result)
        new.setdefault(index, []).append(f"{task[0]} {what}")
        reports[index] = f"=== program {cfg.seed}:{index}: {task[0]} {what}"
        _announce(cfg, index, f"{task[0]} {what}")
        if task[0] == "eval" and len(cfg.backends) > 1:  # which backend does it?
            for b in cfg.backends:
                pool.submit(("probe", cfg.seed, index, cfg.opts, (b,)))
            reports[index] += (
                f" (rerun: python tools/conformance.py --seed {cfg.seed} --only {index})"
            )
        return 0
    if task[0] == "shrink":
        reports[index] = reports.get(index, "") + result["report"] + "\n"
        return 0
    if "generator" in result:
        new.setdefault(index, []).append("the generator failed")
        reports[index] = (
            f"=== program {cfg.seed}:{index}: the generator failed\n{result['generator']}"
        )
        _announce(cfg, index, "the generator failed")
        return 0
    ran.update(result["ran"])
    skipped.update(result["skipped"].values())
    shrink_next = []
    for f in result["findings"]:
        if f["known"]:
            known.setdefault(f["known"], set()).add(index)
            continue
        new.setdefault(index, []).append(f["headline"])
        _announce(cfg, index, f["headline"])
        if f["key"] not in shrink_next:  # unminimised: a report of the whole program
            shrink_next.append(f["key"])
            seconds = cfg.shrink_seconds if cfg.minimise else 0.0
            pool.submit(("shrink", cfg.seed, index, cfg.opts, cfg.backends, f["key"], seconds))
    if not shrink_next and index in new:
        reports[index] = f"=== program {cfg.seed}:{index}: " + "; ".join(new[index])
    return 1


def _announce(cfg, index: int, headline: str) -> None:
    """One line on stderr as soon as a new finding is seen (the report comes at the end)."""
    print(
        f"!!! {cfg.seed}:{index}: {headline} (rerun: --seed {cfg.seed} --only {index})",
        file=sys.stderr,
    )


def main(cfg: Config) -> int:
    from .pool import Pool

    indices = [cfg.only] if cfg.only is not None else list(range(cfg.programs))
    tasks = [("eval", cfg.seed, i, cfg.opts, cfg.backends) for i in indices]
    timeout = lambda t: EVAL_TIMEOUT if t[0] == "eval" else cfg.shrink_seconds + EVAL_TIMEOUT  # noqa: E731
    pool = Pool(cfg.jobs, _setup, _handle, timeout)
    t0 = time.monotonic()
    ran, skipped, known = Counter(), Counter(), {}
    new: dict = {}  # index -> [headline]
    reports: dict = {}
    done, interrupted = 0, False
    try:
        for task, result in pool.run(tasks):
            counted = _take(cfg, pool, task, result, ran, skipped, known, new, reports)
            done += counted
            if counted and done % 500 == 0:
                print(f"... {done} programs, {len(new)} with new findings", file=sys.stderr)
    except KeyboardInterrupt:  # report what finished: a long run stopped early is not lost
        interrupted = True
    elapsed = time.monotonic() - t0
    out = cfg.out
    for index in sorted(reports):
        print(reports[index].rstrip(), file=out)
        print(file=out)
    from .known import KNOWN

    names = ", ".join(f"{b} ({ran[b]})" for b in cfg.backends)
    print(f"backends run: {names}", file=out)
    for why, n in skipped.most_common():
        print(f"skipped {n}: {why}", file=out)
    for kid, where in sorted(known.items()):
        k = KNOWN[kid]
        print(
            f"known bug {kid} ({k.layer}) in {len(where)} program(s): tests/conformance/cases/{k.case}.py",
            file=out,
        )
    print(
        f"time: {elapsed:.1f} s, {elapsed / max(1, len(indices)):.3f} s per program, {cfg.jobs} job(s)",
        file=out,
    )
    if interrupted:
        print(f"interrupted: {done} of {len(indices)} programs ran", file=out)
        print(f"{done} programs, {len(new)} mismatches", file=out)
        return 130
    print(f"{len(indices)} programs, {len(new)} mismatches", file=out)
    return 1 if new else 0
