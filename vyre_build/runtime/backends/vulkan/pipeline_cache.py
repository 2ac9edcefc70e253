"""The persisted Vulkan pipeline cache: one file per device and driver in a per-user cache
directory, so that a later process creates its pipelines without the driver's compile.

    <dir>/vk-<vendorID>-<deviceID>-<driverVersion>-<pipelineCacheUUID>.bin
    = b"VYREPLC1" + blake3(blob) (32 bytes) + blob (vkGetPipelineCacheData's bytes)

The directory is `pipeline_cache=` of get_device, else $VYRE_PIPELINE_CACHE, else the
platform's user cache directory + vyre_build/pipelines; "off" (or False) turns it off.
A file that is corrupt, of another device or driver (its Vulkan header disagrees),
over the size bound, or not a regular file (a FIFO, a device such as /dev/zero, a
directory) is ignored with one warning and replaced at the next save: it is opened
without blocking (O_NONBLOCK), checked with fstat before anything is read, and read up to
the bound only, so no file can hang or exhaust the process. Saves are atomic (a new file
renamed over the old name: nothing is written into what was there) and hold a lock file
(a regular file, or the save is skipped with one warning), and merge what another process
saved meanwhile, so several processes can share the directory; the directory is kept
under MAX_BYTES by removing the least recently written files of other devices and
drivers.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import sys
import warnings
from collections.abc import Callable, Iterator
import blake3

from vyre_build.core.errors import PipelineCacheWarning
from vyre_build.core.files import NotRegular, atomic_write, file_kind, open_regular

MAGIC = b"VYREPLC1"
_HEAD = len(MAGIC) + 32
MAX_BYTES = 256 << 20  # the whole directory
_OFF = ("0", "off", "false", "no", "none")
# VkPipelineCacheHeaderVersionOne: headerSize, headerVersion, vendorID, deviceID, UUID.
_VK_HEADER = struct.Struct("<IIII16s")


def user_cache_dir() -> str:
    """The platform's per-user cache directory for vyre_build's pipelines."""
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
        return os.path.join(base, "vyre_build", "Cache", "pipelines")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "vyre_build", "pipelines")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "vyre_build", "pipelines")


def cache_dir(setting: str | os.PathLike[str] | bool | None) -> str | None:
    """The directory `setting` (get_device's pipeline_cache=) names; None when off."""
    if setting is False:
        return None
    if setting is None or setting is True:
        env = os.environ.get("VYRE_PIPELINE_CACHE", "")
        if env.strip().lower() in _OFF:
            return None
        return env or user_cache_dir()
    path = os.fspath(setting)
    return None if path.strip().lower() in _OFF else path


def _warn(message: str) -> None:
    warnings.warn(f"vyre_build: {message}", PipelineCacheWarning, stacklevel=4)


def _kind(mode: int) -> str | None:
    # None for a regular file, else what the file is.
    if stat.S_ISREG(mode):
        return None
    return file_kind(mode)


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    # An exclusive lock on `path` (POSIX flock); elsewhere the atomic replace alone.
    # OSError when the lock file is not a regular file (never blocks on one).
    try:
        import fcntl
    except ImportError:
        yield
        return
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise OSError(f"its lock file {path} is {kind}, not a regular file")
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


class PipelineCacheFile:
    """The cache file of one device and driver.

    Arguments:
        directory: where the cache files live (created on first save).
        vendor_id, device_id, driver_version, uuid: VkPhysicalDeviceProperties' fields.
        max_bytes: the bound on the directory's cache files together.
    """

    def __init__(
        self,
        directory: str,
        vendor_id: int,
        device_id: int,
        driver_version: int,
        uuid: bytes,
        max_bytes: int = MAX_BYTES,
    ):
        self.directory, self.max_bytes = directory, max_bytes
        self.key = (vendor_id, device_id, uuid)
        name = f"vk-{vendor_id:04x}-{device_id:04x}-{driver_version:08x}-{uuid.hex()}.bin"
        self.path = os.path.join(directory, name)
        self.loaded_digest: bytes | None = None  # of the blob load() returned
        self._warned = False

    def _ignore(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            _warn(f"ignoring the pipeline cache {self.path}: {why}; it will be replaced")

    def _parse(self, data: bytes) -> bytes | None:
        # The blob in `data`, or None (and one warning) when it is not a sound one of ours.
        if len(data) < _HEAD + _VK_HEADER.size or not data.startswith(MAGIC):
            self._ignore("not a vyre_build pipeline cache file")
            return None
        digest, blob = data[len(MAGIC) : _HEAD], data[_HEAD:]
        if blake3.blake3(blob).digest() != digest:
            self._ignore("blake3 mismatch (corrupt)")
            return None
        size, version, vendor, device, uuid = _VK_HEADER.unpack_from(blob)
        if size < _VK_HEADER.size or version != 1 or (vendor, device, uuid) != self.key:
            self._ignore("it was written for another device or driver")
            return None
        return blob

    def _read(self) -> bytes | None:
        # The blob of the file at self.path (FileNotFoundError if there is none), or None
        # with one warning: never blocks, never reads more than max_bytes + 1 bytes.
        try:
            fd, st = open_regular(self.path)  # never blocks on a FIFO
        except NotRegular as exc:
            self._ignore(str(exc))
            return None
        try:
            if st.st_size > self.max_bytes:
                self._ignore(f"{st.st_size} bytes is over the {self.max_bytes}-byte bound")
                return None
            chunks, total = [], 0
            while total <= self.max_bytes:  # the size may change while it is read
                chunk = os.read(fd, min(1 << 20, self.max_bytes + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        finally:
            os.close(fd)
        if total > self.max_bytes:
            self._ignore(f"it grew over the {self.max_bytes}-byte bound while it was read")
            return None
        return self._parse(b"".join(chunks))

    def load(self) -> bytes | None:
        """The driver's blob saved by an earlier process, or None (no file, or ignored)."""
        try:
            blob = self._read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._ignore(f"cannot read it ({exc.strerror or exc})")
            return None
        self.loaded_digest = None if blob is None else blake3.blake3(blob).digest()
        return blob

    def save(self, data: Callable[[], bytes], merge: Callable[[bytes], None]) -> bool:
        """Write `data()` (the device's current blob) atomically; first `merge` into the
        device's cache a blob another process saved since this one loaded. True if written."""
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            with _locked(self.path + ".lock"):
                try:
                    theirs = self._read()
                except FileNotFoundError:
                    theirs = None
                if theirs is not None and blake3.blake3(theirs).digest() != self.loaded_digest:
                    merge(theirs)
                blob = data()
                if len(blob) + _HEAD > self.max_bytes:
                    _warn(
                        f"not saving the pipeline cache {self.path}: {len(blob)} bytes is over "
                        f"the {self.max_bytes}-byte bound"
                    )
                    return False
                digest = blake3.blake3(blob).digest()
                atomic_write(self.path, MAGIC + digest + blob)
                self.loaded_digest = digest
                self._evict(len(blob) + _HEAD)
        except OSError as exc:
            _warn(f"cannot save the pipeline cache {self.path}: {exc.strerror or exc}")
            return False
        return True

    def _evict(self, ours: int) -> None:
        # Remove the oldest other cache files until the directory is within the bound.
        others = []
        for entry in os.scandir(self.directory):
            if (
                entry.name.startswith("vk-")
                and entry.name.endswith(".bin")
                and entry.path != self.path
            ):
                with contextlib.suppress(OSError):
                    st = entry.stat()
                    others.append((st.st_mtime, st.st_size, entry.path))
        total = ours + sum(size for _, size, _ in others)
        for _, size, path in sorted(others):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
                os.unlink(path + ".lock")
            total -= size
