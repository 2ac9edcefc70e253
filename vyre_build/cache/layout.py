"""Files of a cache directory, read defensively: whatever sits where a blob or record
should be (a directory, a FIFO, a device, a link, a huge or unreadable file) is reported
as a problem, never followed, blocked on or read whole.

Layout under the cache root:
    cas/<2 hex>/<blake3>      blobs: artifact bytes and the input sources they came from
    ac/<2 hex>/<key>.json     action records: manifest, outputs (name -> blob), checksum
    history/<h>.json          per project: the last keys each output was built from
    scan/<h>.json             per project and compiler: the scan memo (stems, imports)
    stats.json                counters overall and per build, tracked size, last gc
    locks/*.lock              fcntl locks for read-modify-write files
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat

from vyre_build.core.files import TMP_PREFIX

__all__ = [
    "BadEntry",
    "is_hex_hash",
    "listdir",
    "load_json",
    "mtime",
    "read_entry",
    "remove_entry",
    "size_of",
    "temp_files",
]

_HEX = frozenset("0123456789abcdef")
# Errors that mean "nothing usable is there" rather than a problem to report.
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


class BadEntry(Exception):
    """A cache file that cannot be served: `problem` says why, in words for a warning."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


def is_hex_hash(text: str) -> bool:
    return len(text) == 64 and set(text) <= _HEX


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_entry(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file at `path` (at most `limit`), or None if absent.

    Raises BadEntry when something else is there (a directory, special file or symbolic
    link, opened without following or blocking), when it is over `limit` bytes, or when it
    cannot be read (permissions, I/O errors).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return None
        if exc.errno == errno.ELOOP:
            raise BadEntry("it is a symbolic link, not a file") from None
        raise BadEntry(f"it cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadEntry(f"it is {_kind(st.st_mode)}, not a file")
        if st.st_size > limit:
            raise BadEntry(f"it is {st.st_size} bytes, over the {limit}-byte limit")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise BadEntry(f"it grew over the {limit}-byte limit while being read")
        return data
    except OSError as exc:
        raise BadEntry(f"it cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def load_json(data: bytes):
    """JSON of `data`, or raise BadEntry (invalid, or nested too deep to parse)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise BadEntry("its JSON is nested too deeply") from None
    except ValueError:
        raise BadEntry("it is not valid JSON") from None


def remove_entry(path: str) -> str | None:
    """Remove whatever is at `path` (a directory tree too, never following a link);
    returns why it could not be removed, or None."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return None if exc.errno in _ABSENT else exc.strerror
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def listdir(path: str) -> list[str]:
    """Sorted names in `path`; [] when it is absent, not a directory or unreadable."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def size_of(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def mtime(path: str, default: float) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return default


def temp_files(root: str):
    """(path, mtime) of every temp file a writer left in the store's directories."""
    for top in ("cas", "ac", "history", "scan", ""):
        base = os.path.join(root, top) if top else root
        dirs = [base] + ([os.path.join(base, d) for d in listdir(base)] if top else [])
        for d in dirs:
            for name in listdir(d):
                if name.startswith(TMP_PREFIX):
                    path = os.path.join(d, name)
                    with contextlib.suppress(OSError):
                        yield path, os.lstat(path).st_mtime
