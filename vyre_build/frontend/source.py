"""A kernel source file's text, and KernelErrors pointing into it."""

from __future__ import annotations

from dataclasses import dataclass, field

from vyre_build.errors import KernelError


@dataclass
class Source:
    path: str  # as shown to the user
    text: str
    lines: list[str] = field(default_factory=list)

    def error(self, node, message: str, fix: str | None = None) -> KernelError:
        line = getattr(node, "lineno", 1) or 1
        col = (getattr(node, "col_offset", 0) or 0) + 1
        end = getattr(node, "end_col_offset", None)
        end_line = getattr(node, "end_lineno", line)
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        end_col = (end + 1) if end is not None and end_line == line else None
        return KernelError(message, self.path, line, col, src, fix, end_col)
