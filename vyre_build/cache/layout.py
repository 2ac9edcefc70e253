"""Files of a cache directory, read defensively: whatever sits where a blob or record
should be (a directory, a FIFO, a device, a link, a huge or unreadable file) is reported
as a problem, never followed, blocked on or read whole.

Layout under the cache root:
    cas/<2 hex>/<blake3>      blobs: artifact bytes and the input sources they came from
    ac/<2 hex>/<key>.json     action records: manifest, outputs (name -> blob), checksum
    history/<h>.json          per project: the last keys each output was built from
    scan/<h>.json             per project and compiler: the scan memo (stems, imports)
    stats.json                counters overall and per build, tracked size, last gc
    settings/<h>.json         per project: the construction variables its last build set
    locks/*.lock              fcntl locks for read-modify-write files
    CACHEDIR.TAG              the marker: a cache directory tag (bford.info/cachedir) that
                              names vyre-build, written when a store first writes

What is a vyre cache: a directory with that marker, or (a cache made before the marker)
one whose every name is one of the above, down to the entries' names (`cache_files`),
holding an entry or vyre's stats.json (`not_a_cache`).
The CLI acts on nothing else, and a build stores nothing in anything else, so a wrong
--cache-dir or VYRE_CACHE_DIR never loses a file of someone else's.
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
    "EMPTY",
    "MARKER",
    "MARKER_TEXT",
    "cache_files",
    "is_hex_hash",
    "is_marked",
    "listdir",
    "load_json",
    "mtime",
    "not_a_cache",
    "read_entry",
    "remove_entry",
    "size_of",
    "temp_files",
]

_HEX = frozenset("0123456789abcdef")
MARKER = "CACHEDIR.TAG"
EMPTY = "it is empty"  # what `not_a_cache` says of an empty directory
_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
MARKER_TEXT = _SIGNATURE + (
    b"\n# This file is a cache directory tag created by vyre-build: this directory is a\n"
    b"# vyre artifact cache. For information about cache directory tags see\n"
    b"# https://bford.info/cachedir/\n"
)
# What a directory may hold besides a cache's own files and still be taken for a new one.
_PLACEHOLDERS = frozenset({".gitkeep", ".gitignore", "lost+found"})


def _prefixed(kind: str, test):
    """The rule of cas/ and ac/: <2 hex>/ directories, each of entries named by `test`."""

    def in_sub(sub: str):
        if not _is_sub(sub):
            return "other"
        return lambda name: kind if test(name) and name[:2] == sub else "other"

    return in_sub


# A rule takes a name in a directory and gives its kind, or the rule of that directory.
_RULES = {
    "cas": _prefixed("blob", lambda n: is_hex_hash(n)),
    "ac": _prefixed("record", lambda n: n.endswith(".json") and is_hex_hash(n[:-5])),
    "history": lambda n: "history" if _hex_json(n, 32) else "other",
    "scan": lambda n: "scan" if _hex_json(n, 64) or _is_sub(n) else "other",  # 2: scan/<2 hex>/
    "settings": lambda n: "own" if _hex_json(n, 32) else "other",
    "locks": lambda n: "own" if n.endswith(".lock") else "other",
}


def _root_rule(name: str):
    if name in _PLACEHOLDERS:
        return "placeholder"
    return "own" if name in ("stats.json", MARKER) else _RULES.get(name, "other")


# Errors that mean "nothing usable is there" rather than a problem to report.
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


class BadEntry(Exception):
    """A cache file that cannot be served: `problem` says why, in words for a warning."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


def is_hex_hash(text: str) -> bool:
    return len(text) == 64 and set(text) <= _HEX


def _hex_json(name: str, n: int) -> bool:
    return len(name) == n + 5 and name.endswith(".json") and set(name[:n]) <= _HEX


def _is_sub(name: str) -> bool:
    return len(name) == 2 and set(name) <= _HEX


def _names(path: str) -> list[str]:
    """Sorted names in the directory `path`; OSError when it cannot be read."""
    return sorted(os.listdir(path))


def cache_files(root: str):
    """(kind, path) of everything in the cache directory `root`, judged by name only,
    never following a link: "blob", "record", "history", "scan" (what `clear` removes),
    "temp" (a writer's temp file), "own" (stats, settings, locks, the marker, a file
    where a directory of the store should be), "placeholder" (.gitkeep and the like),
    "other" (a name no vyre cache gives: never removed) or "unreadable" (a directory that
    cannot be listed). OSError when `root` itself cannot be listed."""
    yield from _walk(root, _root_rule, _names(root))


def _walk(path: str, rule, names: list[str] | None = None):
    if names is None:
        try:
            names = _names(path)
        except OSError:
            yield "unreadable", path
            return
    for name in names:
        full = os.path.join(path, name)
        kind = "temp" if name.startswith(TMP_PREFIX) else rule(name)
        if not callable(kind):
            yield kind, full
        elif os.path.isdir(full) and not os.path.islink(full):
            yield from _walk(full, kind)
        else:
            yield "own", full  # a file where a directory should be: the store replaces it


def is_marked(root: str) -> bool:
    """Does `root` hold the marker vyre-build writes in every cache it makes?"""
    try:
        data = read_entry(os.path.join(root, MARKER), 4096)
    except BadEntry:
        return False
    return data is not None and data.startswith(_SIGNATURE) and b"vyre-build" in data


def not_a_cache(root: str, *, new_ok: bool = False) -> str | None:
    """None when the existing directory `root` is a vyre cache: marked, or (a cache made
    before the marker) holding only what a vyre cache holds and at least one entry or
    vyre's stats.json, or, with `new_ok`, empty (a cache to be); else why not, in words
    for a message (EMPTY, "it has no CACHEDIR.TAG ... and holds cas/notes.txt, ...").
    OSError when `root` cannot be listed."""
    if is_marked(root):
        return None
    others, kinds = [], set()
    for kind, path in cache_files(root):
        kinds.add(kind)
        if kind in ("other", "unreadable"):
            rel = os.path.relpath(path, root)
            others.append(rel + (" (unreadable)" if kind == "unreadable" else ""))
            if len(others) > 3:
                break
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        return f"it has no {MARKER} of vyre-build and holds {shown}, which no vyre cache holds"
    if kinds & {"record", "blob", "history", "scan"} or _has_vyre_stats(root):
        return None
    if not kinds - {"temp", "placeholder"}:
        return None if new_ok else EMPTY
    return (
        f"it has no {MARKER} of vyre-build, and neither a cache entry nor a stats.json of "
        "vyre's shows that it is one"
    )


def _has_vyre_stats(root: str) -> bool:
    try:
        data = read_entry(os.path.join(root, "stats.json"), 1 << 20)
        doc = load_json(data) if data is not None else None
    except BadEntry:
        return False
    return isinstance(doc, dict) and str(doc.get("schema", "")).startswith("vyre-cache-stats/")


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
