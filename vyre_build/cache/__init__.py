"""Content-addressed artifact cache: action keys (`key`) and the on-disk store (`store`)."""

from __future__ import annotations

import os

from vyre_build.cache.key import ActionKey, KeyPart, diff_manifests, make_action_key
from vyre_build.cache.store import Store

__all__ = [
    "CACHE_DIR_ENV",
    "ActionKey",
    "KeyPart",
    "Store",
    "default_cache_dir",
    "diff_manifests",
    "make_action_key",
]

CACHE_DIR_ENV = "VYRE_CACHE_DIR"


def default_cache_dir(project_root: str | os.PathLike = ".") -> str:
    """$VYRE_CACHE_DIR if set, else `cache/` under `project_root` (absolute)."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return os.path.abspath(override)
    return os.path.abspath(os.path.join(os.fspath(project_root), "cache"))
