"""The library's own kernels, for `library.reduce(x)` and the others called without a bundle.

The wheel carries the library's kernel sources (vyre_build/_library/: kernels/lib_*.py and
their variants, copied by setup.py at wheel-build time) and the bundle built from them
(`_library/library.vyrebundle`, with the digest of the files it was built from:
vyre_build.build.library_bundle), which an installed package opens as it is, compiling
nothing. Where there is no shipped bundle (a source checkout or an editable install, which
use kernels/ itself) or the installed files are not the ones it was built from, the first
call compiles the sources once into a bundle in the user cache,
`$XDG_CACHE_HOME/vyre/library/<hash>/library.vyrebundle` (default ~/.cache/vyre/...), named
by that digest, so that a new version or an edited kernel builds a new one and an old one
is never served; later calls, in any process, open it. This is the one place the runtime
imports the compiler, and only to build that bundle. The bundle is opened on the device of
the call's first DeviceBuffer, else the default device (`$VYRE_BACKEND`, else wgpu), once
per device and process.

Guarantees: a cache bundle is written atomically under a file lock (concurrent first calls
build it once); the same sources and compiler give the same bytes (the shipped bundle is
the cache's, byte for byte). bench/library_first_use.py measures the first call.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from vyre_build.build.library_bundle import (
    SHIPPED,
    SHIPPED_DIGEST,
    build_library_bundle,
    library_digest,
)
from vyre_build.core.errors import DispatchError
from vyre_build.runtime.bundles import Bundle
from vyre_build.runtime.device import Device, DeviceBuffer

__all__ = ["default_library", "library_bundle_path", "library_sources"]

_lock = threading.Lock()
_open: dict[int, Bundle] = {}  # id(device) -> its bundle (which keeps the device alive)
_ARRAYS = (np.ndarray, DeviceBuffer)  # what a library call's data arguments are


def library_sources() -> str:
    """The directory of the library's kernel sources: the package's _library/ (a wheel),
    else the checkout's kernels/ (an editable install); DispatchError if neither."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for where in (os.path.join(package, "_library"), os.path.join(package, os.pardir, "kernels")):
        if os.path.isfile(os.path.join(where, "lib_reduce.py")):
            return os.path.normpath(where)
    raise DispatchError(
        f"library: this install of vyre_build has no library kernel sources "
        f"({os.path.join(package, '_library')} is missing); reinstall the wheel, or pass a "
        "bundle built from kernels/lib_*.py as the first argument"
    )


def _cache_root() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "vyre", "library")


def library_bundle_path() -> str:
    """The library bundle of this install: the one the wheel ships (_library/library.vyrebundle)
    where the installed files are the ones it was built from, else one built into the user
    cache if it is not there yet. Its digest covers the library's sources and every source
    file of the package (a superset of the compiler's identity, read as files: the compiler
    is not imported unless a bundle must be built)."""
    src = library_sources()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = library_digest(src, package)
    shipped = os.path.join(src, SHIPPED)
    if _shipped_digest(src) == digest and os.path.isfile(shipped):
        return shipped
    path = os.path.join(_cache_root(), digest[:32], "library.vyrebundle")
    if not os.path.isfile(path):
        with _locked(path + ".lock"):
            if not os.path.isfile(path):
                build_library_bundle(src, path)
    return path


def _shipped_digest(src: str) -> str | None:
    # The digest the shipped bundle was built for (None: no shipped bundle, as in a checkout).
    try:
        with open(os.path.join(src, SHIPPED_DIGEST), encoding="ascii") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DispatchError(
            f"library: cannot create the library's cache {os.path.dirname(path)}: "
            f"{exc.strerror or exc}; set XDG_CACHE_HOME to a writable directory, or pass a "
            "bundle as the first argument"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def default_library(device: Device | None = None) -> Bundle:
    """The library bundle opened on `device` (default: the default device, $VYRE_BACKEND,
    else wgpu), one per device and process."""
    if device is not None:  # the bundle of a device met before: no lock needed to read it
        found = _open.get(id(device))
        if found is not None and found._device is device:
            return found
    from vyre_build.runtime import get_device, open_bundle

    dev = device if device is not None else get_device()
    with _lock:
        found = _open.get(id(dev))
        if found is None or found.device is not dev:
            # Built here from the package's own sources: no signature to check.
            found = open_bundle(library_bundle_path(), device=dev, trusted_keys=False)
            _open[id(dev)] = found
        return found


def split_kernels(
    fn: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, tuple[Any, ...]]:
    """(kernels, the other positional arguments) of a library call that may omit its
    bundle: a first argument that is a Mapping is the kernels, else the default library's
    are used and every argument shifts by one."""
    if "kernels" in kwargs:
        return kwargs.pop("kernels"), args
    if args and isinstance(args[0], DeviceBuffer):  # the commonest call: the first given
        return default_library(args[0].device), args
    # An array or DeviceBuffer first (the commonest call, tested first: the Mapping test
    # goes through the ABC machinery) means the default library.
    if args and not isinstance(args[0], _ARRAYS):
        if isinstance(args[0], Mapping):
            return args[0], args[1:]
        raise DispatchError(
            f"library.{fn}: kernels must be a Bundle or a mapping of kernel id -> Kernel, "
            f"got {type(args[0]).__name__}"
        )
    # On the device of the first DeviceBuffer given (an array argument or out=), if any.
    given = next((v for v in (*args, *kwargs.values()) if isinstance(v, DeviceBuffer)), None)
    return default_library(None if given is None else given.device), args
