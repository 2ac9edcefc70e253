"""Subcommands of `vyre-build`, one module each (see vyre_build/cli.py)."""

from __future__ import annotations

import os

from vyre_build.core.errors import VyreError
from vyre_build.core.files import atomic_write


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
    """Write `data` to `path` atomically (no half files), or raise a one-line error."""
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise VyreError(f"error: cannot write {path}: {exc.strerror or exc}") from None
