"""The write side of the local store: claiming the cache directory, writing files into it
atomically, and the fcntl locks that guard its read-modify-write files.

`StoreWriter` is a mixin of `Store` (store.py), which holds the state it uses (root,
writable, write_failure, write_problem, foreign, the directories made, the claim lock).
Guarantees: a store writes only into a vyre cache: before its first write, a new or empty
directory gets the marker (`layout.MARKER`), as does a cache made before the marker; any
other directory is never written to (one warning, `foreign` says why). Every write is a
temp file in the destination directory, then `os.replace`, so a reader sees the old file
or the whole new one; whatever sits in the way of a store file (a directory, a file where
a directory should be) holds nothing of ours and is removed. The first failed write
(read-only mount, permissions, disk full) is one warning and the store writes nothing
more in this process; a lock is taken only where the store can be written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os

from vyre_build.cache.layout import MARKER, MARKER_TEXT, is_marked, not_a_cache, remove_entry
from vyre_build.core.errors import CacheError
from vyre_build.core.files import atomic_write

__all__ = ["StoreWriter"]


class StoreWriter:
    """`Store`'s writes: the claim of its root, atomic file writes, refusals and locks."""

    def _write_failed(self, path: str, exc: OSError, report: bool = True) -> None:
        self.count("store_errors")
        why = exc.strerror or str(exc)
        if exc.errno == errno.EROFS:
            what = f"cache {self.root} is on a read-only file system"
        elif exc.errno in (errno.EACCES, errno.EPERM):
            what = f"cache {self.root} is not writable ({path}: {why})"
        elif exc.errno in (errno.ENOSPC, errno.EDQUOT):
            what = f"cache {self.root} is full ({why} while writing {path})"
        else:
            what = f"cannot write {path} ({why})"
        self._refuse(what, "serving hits, storing nothing more in this build", report)

    def _refuse(self, problem: str, consequence: str, report: bool = True) -> None:
        """Write nothing more: `problem` (what is wrong, for `write_problem`) and what the
        store does now, one warning."""
        self.writable = False
        message = f"{problem}: {consequence}"
        if self.write_failure is None:
            self.write_problem, self.write_failure = problem, message
        if report:
            self.warn_once("write", message)

    def claim(self, report: bool = True) -> bool:
        """Make sure the root is a vyre cache before the first write into it: a new or
        empty directory, or a cache of vyre's layout made before the marker, gets the
        marker; any other directory is never written to (one warning unless not
        `report`; `foreign` says why). Returns whether the store may write."""
        if self._claimed:
            return self.writable
        with self._claim_lock:
            if not self._claimed and self.writable:
                self._claim_root(report)
            self._claimed = True
        return self.writable

    def _claim_root(self, report: bool) -> None:
        marker = os.path.join(self.root, MARKER)
        try:
            if os.path.isdir(self.root):
                if is_marked(self.root):
                    return
                self.foreign = not_a_cache(self.root, new_ok=True)
            if self.foreign is None:
                os.makedirs(self.root, exist_ok=True)
                atomic_write(marker, MARKER_TEXT)
                return
        except OSError as exc:
            self._write_failed(marker, exc, report)
            return
        self._refuse(
            f"{self.root} is not a vyre cache: {self.foreign}",
            "storing nothing in it; point VYRE_CACHE_DIR / $VYRECACHEDIR at a new or empty "
            "directory",
            report,
        )

    def require_cache(self) -> None:
        """For a command that changes the store: CacheError, and nothing changed, unless
        the root is a vyre cache this process can write (claimed, see `claim`)."""
        if not self.claim(report=False):
            raise CacheError(f"{self.write_problem}; nothing was changed")

    def _ensure_dir(self, path: str) -> None:
        if path in self._made:
            return
        if not os.path.isdir(path):  # a stat is ~100x cheaper than a failing mkdir
            try:
                os.makedirs(path, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                # A file where a store directory should be: it holds nothing of ours.
                for d in (os.path.dirname(path), path):
                    if os.path.lexists(d) and not os.path.isdir(d):
                        remove_entry(d)
                os.makedirs(path, exist_ok=True)
        self._made.add(path)

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> bool:
        """Write `data` to `path` in the store atomically; False (and one warning) if the
        store cannot be written. Whatever sits in the way (a directory) is removed."""
        if not self.claim():
            return False
        try:
            self._ensure_dir(os.path.dirname(path))
            try:
                atomic_write(path, data, mode=mode)
            except (IsADirectoryError, NotADirectoryError):
                remove_entry(path)
                atomic_write(path, data, mode=mode)
        except OSError as exc:
            self._write_failed(path, exc)
            return False
        return True

    @contextlib.contextmanager
    def lock(self, name: str):
        """Exclusive fcntl lock on locks/<name>.lock (between processes and threads); none
        when the store cannot be written (nothing will be written under it then)."""
        fd = None
        if self.claim():
            directory = os.path.join(self.root, "locks")
            try:
                self._ensure_dir(directory)
                fd = os.open(os.path.join(directory, name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                self._write_failed(os.path.join(directory, name + ".lock"), exc)
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            if fd is not None:
                os.close(fd)  # closing releases the flock
