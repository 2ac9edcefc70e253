"""The byte-level conventions every writer shares: atomic file writes and canonical JSON,
and what a file that is not a regular one is called in messages.

- `atomic_write`: a temp file in the destination's directory, then `os.replace`, so a
  reader, or a process killed at any point, sees the old file or the whole new one.
  Temp names start with `.tmp.` (what `cache gc` recognises as a leftover of a kill).
- `canonical_json`: sorted keys, no whitespace, UTF-8, no NaN: one byte string per value,
  whatever the dict order. Every hashed or shipped JSON document uses it.
- `file_kind`: "a FIFO", "a directory", ... for a mode that is not a regular file's (the
  kernel tree's reader and the pipeline cache refuse such files by name).
- `open_regular`: a file opened for reading only if it is a regular one (else
  `NotRegular`), without blocking on a FIFO that has no writer or taking a terminal as its
  controlling one.

Errors are plain `OSError`s; each caller words them in its own error type.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import stat
import threading

__all__ = [
    "NotRegular",
    "TMP_PREFIX",
    "atomic_write",
    "canonical_json",
    "canonical_text",
    "file_kind",
    "open_regular",
]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a file of `mode` (st_mode) that is not a regular file is, for a message."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


# Opening never blocks (a FIFO without a writer) nor takes a terminal as controlling one.
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class NotRegular(OSError):
    """`open_regular`'s refusal of a file that opened but is not a regular one; its text
    names the kind ("it is a FIFO, not a regular file")."""


def open_regular(path: str) -> tuple[int, os.stat_result]:
    """(descriptor, fstat) of `path` opened for reading (O_NONBLOCK: a FIFO without a
    writer does not block the open; it has no effect on a regular file's reads). OSError
    when it cannot be opened; NotRegular, naming its kind (`file_kind`), when it is not a
    regular file (then nothing stays open)."""
    fd = os.open(path, _READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(f"it is {file_kind(info.st_mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


TMP_PREFIX = ".tmp."
_counter = itertools.count()


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_text(value) -> str:
    """The canonical JSON text of `value` (ValueError on NaN or infinity); made once."""
    return _CANONICAL.encode(value)


def canonical_json(value) -> bytes:
    """The canonical UTF-8 JSON bytes of `value` (ValueError on NaN or infinity)."""
    return canonical_text(value).encode("utf-8")


def temp_path(path: str) -> str:
    """A fresh temp name beside `path`, unique per process, thread and call."""
    directory, base = os.path.split(path)
    unique = f"{os.getpid()}.{threading.get_ident()}.{next(_counter)}"
    return os.path.join(directory, f"{TMP_PREFIX}{base[:64]}.{unique}")


def atomic_write(
    path: str, data: bytes, *, mode: int = 0o644, durable: bool = False, tmp: str | None = None
) -> None:
    """Write `data` to `path` atomically (OSError on failure, no temp file left behind).

    Arguments:
        path: the destination; its directory must exist.
        data: the bytes.
        mode: permission bits of the new file (subject to the umask).
        durable: fsync the file before the rename, for files that must survive a power
            loss (shipped bundles); build outputs and cache entries are re-derivable.
        tmp: a fixed temp name instead of a fresh one, for a writer that never writes one
            path twice at once: a temp file left by a killed process is then overwritten
            by the next write instead of piling up.
    """
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if tmp else os.O_EXCL)
    tmp = tmp or temp_path(path)
    try:
        fd = os.open(tmp, flags, mode)
        with open(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
