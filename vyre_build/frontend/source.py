"""A kernel source file's text, KernelErrors pointing into it, and the one way the
frontend reads a file of the kernel tree (confined to the tree's root, bounded in size)."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field

from vyre_build.core.errors import KernelError
from vyre_build.core.files import file_kind
from vyre_build.core.limits import MAX_SOURCE_BYTES


@dataclass
class Source:
    path: str  # as shown to the user
    text: str
    lines: list[str] = field(default_factory=list)

    def column(self, node) -> int:
        """`node`'s 1-based column in characters (ast columns count UTF-8 bytes), as errors
        and debug sites show it."""
        return _char_col(self.line_of(node), getattr(node, "col_offset", 0) or 0) + 1

    def line_of(self, node) -> str | None:
        line = getattr(node, "lineno", 1) or 1
        return self.lines[line - 1] if 0 < line <= len(self.lines) else None

    def error(self, node, message: str, fix: str | None = None) -> KernelError:
        line = getattr(node, "lineno", 1) or 1
        src = self.line_of(node)
        col = self.column(node)
        end = getattr(node, "end_col_offset", None)
        end_line = getattr(node, "end_lineno", line)
        end_col = (_char_col(src, end) + 1) if end is not None and end_line == line else None
        return KernelError(message, self.path, line, col, src, fix, end_col)


def _char_col(line: str | None, byte_offset: int) -> int:
    if not line or line.isascii():
        return byte_offset
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", "ignore"))


@dataclass
class Refusal(Exception):
    """A file of the tree that is not read: the message and the fix, for a positioned error."""

    message: str
    fix: str


def inside(real: str, root: str) -> bool:
    """`real` (a resolved path) lies under the resolved directory `root`."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def check_tree_file(path: str, shown: str, root: str) -> tuple[str, os.stat_result]:
    """Refuse (Refusal) what the frontend will not read, reading nothing: a path that
    resolves outside `root` (a resolved directory), anything but a regular file, a file
    larger than MAX_SOURCE_BYTES. Returns the file's real path and stat."""
    real = os.path.realpath(path)
    if not inside(real, root):
        raise Refusal(
            f"{shown} resolves to {real}, outside the kernel tree {root}",
            "the compiler reads only files under the tree's root (--root, or the kernel "
            "directory given to the SCons tool)",
        )
    try:
        st = os.stat(real)
    except OSError as exc:
        raise Refusal(
            f"cannot read {shown}: {_reason(exc)}", "check that the file exists"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        kind = file_kind(st.st_mode)
        raise Refusal(
            f"{shown} is {kind}, not a kernel source",
            "kernel files and variants YAMLs must be regular files",
        )
    _check_size(shown, st.st_size)
    return real, st


def read_tree_file(path: str, shown: str, root: str) -> tuple[str, bytes]:
    """(real path, bytes) of a file that passes `check_tree_file`, refused (Refusal) before
    any byte is read otherwise; opened without blocking and checked again once open (it
    may have been swapped), and read no further than the size limit."""
    real, st = check_tree_file(path, shown, root)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise Refusal(
            f"cannot read {shown}: {_reason(exc)}", "check that the file exists"
        ) from None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise Refusal(f"{shown} changed while it was being opened", "build again")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            total += len(chunk)
            _check_size(shown, total)
            chunks.append(chunk)
    except OSError as exc:
        raise Refusal(f"cannot read {shown}: {_reason(exc)}", "check the file") from None
    finally:
        os.close(fd)
    return real, b"".join(chunks)


def _check_size(shown: str, size: int) -> None:
    if size > MAX_SOURCE_BYTES:
        raise Refusal(
            f"{shown} is larger than {MAX_SOURCE_BYTES} bytes (the limit for one file)",
            "split it into several kernel files",
        )


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links (or a link where a file was expected)"
    return exc.strerror or str(exc)


def decode_source(data: bytes, shown: str, what: str = "file") -> str:
    """UTF-8 text of `data`, or a KernelError at the line and column of the first bad byte
    (or NUL character, which no kernel source may hold). A leading byte-order mark (which
    Windows editors write, and Python accepts) is not part of the text."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at, bad = exc.start, data[exc.start]
        message = f"this {what} is not valid UTF-8 (byte 0x{bad:02x}: {exc.reason})"
    else:
        at = text.find("\0")
        if at < 0:
            return text
        data, message = text.encode("utf-8"), f"this {what} contains a NUL character"
        at = len(text[:at].encode("utf-8"))
    line_start = data.rfind(b"\n", 0, at) + 1
    line_end = data.find(b"\n", at)
    line = data[line_start : line_end if line_end >= 0 else len(data)].decode("utf-8", "replace")
    col = len(data[line_start:at].decode("utf-8", "replace")) + 1
    line_no = data.count(b"\n", 0, at) + 1
    raise KernelError(message, shown, line_no, col, line, "save it as UTF-8 text")
