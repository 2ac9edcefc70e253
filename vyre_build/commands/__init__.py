"""Subcommands of `vyre-build`, one module each (see vyre_build/cli.py)."""

from __future__ import annotations

import contextlib
import os
import tempfile

from vyre_build.errors import VyreError


def output_dir(path: str, flag: str = "-o") -> str:
    """Create the output directory `path` (and parents), or explain why it cannot be."""
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise VyreError(f"error: {flag} {path}: exists and is not a directory") from None
    except OSError as exc:
        raise VyreError(
            f"error: {flag} {path}: cannot create the directory: {exc.strerror or exc}"
        ) from None
    return path


def write_file(path: str, data: bytes) -> None:
    """Write `data` to `path` atomically (temp file beside it + rename; no half files),
    or raise a one-line error."""
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".vyre-", suffix=".tmp")
    except OSError as exc:
        raise VyreError(f"error: cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise VyreError(f"error: cannot write {path}: {exc.strerror or exc}") from None
        raise
