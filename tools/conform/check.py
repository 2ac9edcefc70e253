"""One program through the compiler and every backend: what went wrong, as Findings.

Finding kinds: "compile" (a generated, well-typed program was refused or crashed the
compiler), "error" (a backend raised), "mismatch" (a backend's written buffers differ from
the baseline's), "selfcheck" (a backend's `chk` is not 0: a for loop ran more trips than
Python's range() gives, so a bound or step was miscompiled; backends agreeing on it does
not make it right).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from . import backends as B
from .compare import compare

KERNEL_PATH = os.path.join(tempfile.gettempdir(), "vyre_conformance_kernel.py")


@dataclass
class Finding:
    kind: str  # compile error mismatch selfcheck
    backend: str  # the backend at fault ("compiler" for compile)
    baseline: str = ""  # mismatch: what it was compared with
    detail: str = ""
    diffs: list = field(default_factory=list)

    def key(self) -> tuple:
        """What must persist while minimising: the kind, the backends and, for failures,
        the message's first line (without its file:line:col)."""
        first = self.detail.splitlines()[0] if self.detail else ""
        message = first.split("error: ", 1)[-1] if self.kind in ("compile", "error") else ""
        return (self.kind, self.backend, self.baseline, message)

    def headline(self) -> str:
        if self.kind == "mismatch":
            return f"mismatch: {self.backend} differs from {self.baseline}"
        return (
            f"{self.kind} on {self.backend}: {self.detail.splitlines()[0] if self.detail else ''}"
        )


@dataclass
class Outcome:
    findings: list
    ran: list  # backends that ran
    skipped: dict  # backend -> why
    compiled: object = None


def compile_program(prog):
    from vyre_build.compiler import compile_file

    (compiled,) = compile_file(KERNEL_PATH, text=prog.source(), targets=("wgsl", "spirv", "kdesc"))
    return compiled


def written(prog) -> list:
    return [p.name for p in prog.params if p.kind == "buffer" and p.access != "r"]


def evaluate(prog, backends, runners=None) -> Outcome:
    """Compile `prog`, run it on each of `backends`, compare with the first that ran."""
    from vyre_build.core.errors import VyreError

    runners = runners or B.RUNNERS
    try:
        compiled = compile_program(prog)
    except VyreError as exc:
        return Outcome([Finding("compile", "compiler", detail=str(exc))], [], {})
    except Exception as exc:  # noqa: BLE001 - a compiler crash is a finding, not a stop
        return Outcome(
            [Finding("compile", "compiler", detail=f"{type(exc).__name__}: {exc}")], [], {}
        )
    results, findings, skipped = {}, [], {}
    for name in backends:
        why = B.skip_reason(name, prog, compiled)
        if why is not None:
            skipped[name] = why
            continue
        try:
            results[name] = runners[name](compiled, prog)
        except B.Unavailable as exc:
            skipped[name] = str(exc)
        except Exception as exc:  # noqa: BLE001 - a backend failure is a finding
            findings.append(Finding("error", name, detail=f"{type(exc).__name__}: {exc}"))
    ran = list(results)
    tol = prog.tolerances()
    out = written(prog)
    for name in ran:
        chk = results[name].get("chk")
        if chk is not None and chk.any():
            bits = int(np.bitwise_or.reduce(chk))
            findings.append(Finding("selfcheck", name, detail=f"chk bits 0x{bits:x} set"))
    if ran:
        base = ran[0]
        for name in ran[1:]:
            diffs = compare(results[base], results[name], out, tol)
            if diffs:
                findings.append(Finding("mismatch", name, base, diffs=diffs))
    return Outcome(findings, ran, skipped, compiled)


def persists(prog, finding: Finding, backends, runners=None) -> bool:
    """Does `prog` still show `finding` (same kind, same backends)?"""
    wanted = (
        [finding.baseline, finding.backend] if finding.kind == "mismatch" else [finding.backend]
    )
    if finding.kind == "compile":
        wanted = []
    wanted = [b for b in wanted if b in backends]
    outcome = evaluate(prog, wanted, runners)
    return any(f.key() == finding.key() for f in outcome.findings)
