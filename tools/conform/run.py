"""The differential run: programs through worker processes, findings explained or
minimised, one summary. `main(Config)` returns the exit status (1 on any new finding)."""

from __future__ import annotations

import os
import re
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
    command = rerun_command(seed, index)
    return {
        "index": index,
        "report": report(small, shown, f"{seed}:{index}", command),
        "tests": shrinker.tests,
    }


def rerun_command(seed: int, index: int) -> str:
    return f"python tools/conformance.py --seed {seed} --only {index}"


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
    where = _crash_site(result[2])
    return f"{what} in {where}" if where else what


def _crash_site(stack: str) -> str:
    """The innermost frames of a fault handler's stack, as `func (file:line) < caller`."""
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', stack)
    shown = [f"{fn} ({os.path.basename(path)}:{line})" for path, line, fn in frames[:3]]
    return " < ".join(shown)


@dataclass
class _Tally:
    """What the run has seen so far: what ran and was skipped, the known bugs' programs,
    the new findings' headlines and the reports, per program index."""

    cfg: Config
    pool: object
    ran: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    known: dict = field(default_factory=dict)  # known bug id -> {index}
    new: dict = field(default_factory=dict)  # index -> [headline]
    reports: dict = field(default_factory=dict)  # index -> text
    done: int = 0  # programs that ran

    def rerun(self, index: int) -> str:
        return rerun_command(self.cfg.seed, index)

    def finding(self, index: int, headline: str) -> None:
        """A new finding: kept for the summary and announced on stderr at once."""
        self.new.setdefault(index, []).append(headline)
        print(
            f"!!! {self.cfg.seed}:{index}: {headline} (rerun: {self.rerun(index)})", file=sys.stderr
        )

    def take(self, task, result) -> bool:
        """Fold one finished task in; True when it was a program that ran."""
        cfg, index = self.cfg, task[2]
        head = f"=== program {cfg.seed}:{index}: "
        if task[0] == "probe":  # one backend alone, after a worker died or hung
            if result is None or isinstance(result, tuple):
                self.reports[index] += f"\n  alone, {task[4][0]} {_failure(result)} too"
            return False
        if result is None or isinstance(result, tuple):
            what = f"{task[0]} {_failure(result)}"
            self.finding(index, what)
            self.reports[index] = head + what
            if task[0] == "eval" and len(cfg.backends) > 1:  # which backend does it?
                for b in cfg.backends:
                    self.pool.submit(("probe", cfg.seed, index, cfg.opts, (b,)))
                self.reports[index] += f" (rerun: {self.rerun(index)})"
            return False
        if task[0] == "shrink":
            self.reports[index] = self.reports.get(index, "") + result["report"] + "\n"
            return False
        if "generator" in result:
            self.finding(index, "the generator failed")
            self.reports[index] = head + f"the generator failed\n{result['generator']}"
            return False
        self.ran.update(result["ran"])
        self.skipped.update(result["skipped"].values())
        shrink_next = []
        for f in result["findings"]:
            if f["known"]:
                self.known.setdefault(f["known"], set()).add(index)
                continue
            self.finding(index, f["headline"])
            if f["key"] not in shrink_next:  # unminimised: a report of the whole program
                shrink_next.append(f["key"])
                seconds = cfg.shrink_seconds if cfg.minimise else 0.0
                self.pool.submit(
                    ("shrink", cfg.seed, index, cfg.opts, cfg.backends, f["key"], seconds)
                )
        if not shrink_next and index in self.new:
            self.reports[index] = head + "; ".join(self.new[index])
        self.done += 1
        return True


def main(cfg: Config) -> int:
    from .pool import Pool

    indices = [cfg.only] if cfg.only is not None else list(range(cfg.programs))
    tasks = [("eval", cfg.seed, i, cfg.opts, cfg.backends) for i in indices]
    timeout = lambda t: EVAL_TIMEOUT if t[0] == "eval" else cfg.shrink_seconds + EVAL_TIMEOUT  # noqa: E731
    pool = Pool(cfg.jobs, _setup, _handle, timeout)
    t0 = time.monotonic()
    tally = _Tally(cfg, pool)
    interrupted = False
    try:
        for task, result in pool.run(tasks):
            if tally.take(task, result) and tally.done % 500 == 0:
                print(
                    f"... {tally.done} programs, {len(tally.new)} with new findings",
                    file=sys.stderr,
                )
    except KeyboardInterrupt:  # report what finished: a long run stopped early is not lost
        interrupted = True
    elapsed = time.monotonic() - t0
    out = cfg.out
    for index in sorted(tally.reports):
        print(tally.reports[index].rstrip(), file=out)
        print(file=out)
    from .known import KNOWN

    names = ", ".join(f"{b} ({tally.ran[b]})" for b in cfg.backends)
    print(f"backends run: {names}", file=out)
    for why, n in tally.skipped.most_common():
        print(f"skipped {n}: {why}", file=out)
    for kid, where in sorted(tally.known.items()):
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
        print(f"interrupted: {tally.done} of {len(indices)} programs ran", file=out)
        print(f"{tally.done} programs, {len(tally.new)} mismatches", file=out)
        return 130
    print(f"{len(indices)} programs, {len(tally.new)} mismatches", file=out)
    return 1 if tally.new else 0
