"""Errors that reach users, and the policy for raising them.

Error policy (every module follows it):
- Bad user input (a kernel that cannot compile, a corrupt bundle or cache entry, wrong
  arguments to a kernel) raises a subclass of `VyreError` with a message that says what
  is wrong, where, and how to fix it. The CLI prints it without a traceback.
- A state the compiler should never reach raises `RuntimeError` (a bug: report it).
- `NotImplementedError` only for abstract methods. Every raise carries a message.
"""

from __future__ import annotations


class VyreError(Exception):
    """Base of every user-facing error; `str(e)` is the full message for the user."""


_LINE_WIDTH = 120  # source characters shown under an error


class KernelError(VyreError):
    """A kernel source that cannot be compiled: names file:line:col, shows the caret, says the fix."""

    def __init__(
        self,
        message: str,
        path: str = "<kernel>",
        line: int = 0,
        col: int = 0,
        source_line: str | None = None,
        fix: str | None = None,
        end_col: int | None = None,
    ):
        self.message, self.path, self.line, self.col = message, path, line, col
        self.source_line, self.fix, self.end_col = source_line, fix, end_col
        super().__init__(self.render())

    def render(self) -> str:
        out = [f"{self.path}:{self.line}:{self.col}: error: {self.message}"]
        if self.source_line is not None:
            text = self.source_line.rstrip("\n").expandtabs(4)
            col = self.col
            if len(text) > _LINE_WIDTH:  # a window around the caret, not a huge line
                start = max(0, min(col - 1 - _LINE_WIDTH // 2, len(text) - _LINE_WIDTH))
                text = text[start : start + _LINE_WIDTH]
                col -= start
            out.append(f"    {text}")
            width = 1
            if self.end_col is not None and self.end_col > self.col:
                width = min(self.end_col - self.col, max(1, len(text) - col + 1))
            out.append("    " + " " * (col - 1) + "^" + "~" * (width - 1))
        if self.fix:
            out.append(f"  fix: {self.fix}")
        return "\n".join(out)


class DescriptorFormatError(VyreError):
    """A `.kdesc` blob that does not decode."""


class EmitError(RuntimeError):
    """An emitter met a descriptor it cannot express (names the op, operands and types)."""


class CacheError(VyreError):
    """A cache operation that cannot be carried out (bad directory, bad key, ...)."""


class BundleError(VyreError):
    """A bundle that is truncated, corrupt, path-escaping or of an unknown version."""


class DispatchError(VyreError):
    """Arguments to a kernel that do not match its binding table, refused before dispatch."""


class DeviceError(VyreError):
    """No usable adapter, a lost device or a driver error, as a clear message."""


class KernelAssertion(VyreError):
    """A debug build's kernel reported a failed `assert` or an out-of-bounds access after
    its dispatch: the message names the kernel, file:line:col, the invocation and the
    values. `reports` holds every report of that dispatch as text (the first is the message's);
    `dropped` counts reports the bounded debug buffer had no room for."""

    def __init__(self, message: str, reports: tuple[str, ...] = (), dropped: int = 0):
        self.reports, self.dropped = reports or (message,), dropped
        super().__init__(message)


class PipelineCacheWarning(UserWarning):
    """A persisted pipeline cache that was ignored or could not be saved."""
