"""The cache a `vyre-build cache` subcommand works on, and how the subcommand answers.

`_open` finds the store as SCons finds it (--cache-dir, else vyre_build.cache.config) and
refuses with a one-line CacheError, nothing created or removed, a path that is missing,
not a directory or unreadable, and a directory that is not a vyre cache
(vyre_build.cache.layout.not_a_cache); an empty directory reads as an empty cache, and is
refused by a command that changes the cache (which claims a cache made before the
marker). `_emit` prints a result as JSON on stdout with --json, else its lines.
"""

from __future__ import annotations

import json
import os

from vyre_build.cache.layout import EMPTY, not_a_cache
from vyre_build.cache.store import Store
from vyre_build.cache.config import CACHE_DIR_ENV, load_config
from vyre_build.core.errors import CacheError


def _open(args, *, change: bool = False) -> tuple[Store, object]:
    """The store of --cache-dir (else the configured one), refused with a CacheError unless
    it is a vyre cache (layout.not_a_cache) or, to be read only, an empty directory.
    `change`: the command writes or removes files, so the store must be a cache and
    writable (a cache made before the marker gets the marker now)."""
    cfg = load_config()
    root = os.path.abspath(args.cache_dir) if args.cache_dir else cfg.cache_dir
    where = "--cache-dir" if args.cache_dir else cfg.sources["cache_dir"]
    elsewhere = (
        "pass --cache-dir the cache builds use (`vyre-build cache config` shows it) or set "
        + CACHE_DIR_ENV
    )
    if not os.path.lexists(root):
        raise CacheError(
            f"no cache at {root} (from {where}); build first, or pass --cache-dir / set "
            + CACHE_DIR_ENV
        )
    if not os.path.isdir(root):
        raise CacheError(f"{root} (from {where}) is not a directory, so not a cache; {elsewhere}")
    try:
        problem = not_a_cache(root)
    except OSError as exc:
        raise CacheError(
            f"cannot read the cache directory {root} (from {where}): {exc.strerror or exc}; "
            f"make it readable (chmod u+rx), or {elsewhere}"
        ) from None
    if problem == EMPTY and change:  # read, it is an empty cache: a build makes it one
        raise CacheError(
            f"no cache at {root} (from {where}) yet: the directory is empty, nothing was "
            f"changed; build first, or {elsewhere}"
        )
    if problem not in (None, EMPTY):
        raise CacheError(
            f"{root} (from {where}) is not a vyre cache: {problem}; nothing was changed. "
            f"{elsewhere[0].upper()}{elsewhere[1:]}"
        )
    store = Store(root, project=cfg.project_root)
    if change:
        store.require_cache()
    return store, cfg


def _store(args, *, change: bool = False) -> Store:
    return _open(args, change=change)[0]


def _emit(args, data, lines) -> None:
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        for line in lines:
            print(line)
