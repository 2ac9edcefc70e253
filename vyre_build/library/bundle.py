"""The library's own kernels, for `library.reduce(x)` and the others called without a bundle.

The wheel carries the library's kernel sources (vyre_build/_library/: kernels/lib_*.py and
their variants, copied by setup.py at wheel-build time); a source checkout or an editable
install uses kernels/ itself. The first call without a bundle compiles them once into a
bundle in the user cache, `$XDG_CACHE_HOME/vyre/library/<hash>/library.vyrebundle`
(default ~/.cache/vyre/...), named by a hash of those sources and of every source file of
the package (the compiler's included, read as files), so that a new version or an edited
kernel builds a new one and an old one is never served; later calls, in any process, open
it. This is the one place the runtime imports the compiler, and only to build the bundle. The bundle is opened on the
device of the call's first DeviceBuffer, else the default device (`$VYRE_BACKEND`, else
wgpu), once per device and process.

Guarantees: the bundle is written atomically under a file lock (concurrent first calls
build it once); the same sources and compiler give the same bytes. Measured by
bench/library_first_use.py (cpu backend, fresh processes, 2 busy shared cores): the first
call of an environment 1.1 s from the first import to the result, a later process 0.37 s.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

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


def _files(src: str) -> list[str]:
    return sorted(n for n in os.listdir(src) if re.fullmatch(r"lib_\w+\.py", n))


def _tuning_files(src: str) -> list[str]:
    """The tuning declarations (tuning.yaml) and records (tuning/*.json) of `src`, if any."""
    records = os.path.join(src, "tuning")
    found = (
        sorted(f"tuning/{n}" for n in os.listdir(records) if n.endswith(".json"))
        if os.path.isdir(records)
        else []
    )
    return (["tuning.yaml"] if os.path.isfile(os.path.join(src, "tuning.yaml")) else []) + found


def _package_files(package: str) -> list[str]:
    """Every source file of the installed package (the compiler's among them), sorted."""
    found = []
    for where, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "_library"))
        found += [os.path.join(where, f) for f in files if f.endswith((".py", ".pyi", ".json"))]
    return sorted(found)


def library_bundle_path() -> str:
    """The library bundle of this install, built into the user cache if it is not there.
    Its name hashes the library's sources and every source file of the package (a
    superset of the compiler's identity, read as files: the compiler is not imported)."""
    import blake3

    src = library_sources()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = blake3.blake3()
    for path in _package_files(package):
        with open(path, "rb") as f:
            data = f.read()
        rel = os.path.relpath(path, package)
        digest.update(f"\0{rel}\0{len(data)}\0".encode() + data)
    for name in [*_files(src), "variants.yaml", *_tuning_files(src)]:
        with open(os.path.join(src, name), "rb") as f:
            data = f.read()
        digest.update(f"\0{name}\0{len(data)}\0".encode() + data)
    path = os.path.join(_cache_root(), digest.hexdigest()[:32], "library.vyrebundle")
    if not os.path.isfile(path):
        with _locked(path + ".lock"):
            if not os.path.isfile(path):
                _build(src, path)
    return path


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


def _build(src: str, path: str) -> None:
    """Compile every library kernel file of `src` and bundle them into `path`."""
    from vyre_build.core.artifacts import META_SUFFIX, split_output_name
    from vyre_build.build.step import DEFAULT_TARGETS, compile_outputs
    from vyre_build.bundle import write_bundle

    groups: dict[str, dict[str, bytes]] = {}
    for name in _files(src):
        outputs = compile_outputs(os.path.join(src, name), DEFAULT_TARGETS, {}, root=src)
        for out, data in outputs.items():
            parts = split_output_name(out)
            if parts is not None:
                groups.setdefault(parts[0], {})[parts[1]] = data
    entries = []
    for _, files in sorted(groups.items()):
        meta = json.loads(files.pop(META_SUFFIX))
        entries.append({"meta": meta, "artifacts": files})
    write_bundle(path, entries, tuning=_tuning(src))


def _tuning(src: str) -> dict[str, Any]:
    """The tuning data of the library: tuning.yaml's tunables, tuning/*.json's records."""
    from vyre_build.bundle.tuning import merge_records, read_records
    from vyre_build.frontend.tuning_yaml import load_tuning

    tunables: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    for name in _tuning_files(src):
        path = os.path.join(src, name)
        if name == "tuning.yaml":
            with open(path, encoding="utf-8") as f:
                tunables = load_tuning(path, f.read())
        else:
            records = merge_records(records, read_records(path))
    return {"tunables": tunables, "records": records}


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
