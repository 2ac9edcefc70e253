"""Content-addressed artifact cache: action keys (`key`), the local store (`store`), its
maintenance (`gc`, `stats`, `history`), the scan memo (`scan`) and the remote tier
(`remote`, imported only by builds that use one)."""

from __future__ import annotations

from vyre_build.cache.key import ActionKey, KeyPart, diff_manifests, make_action_key
from vyre_build.cache.store import Store
from vyre_build.config import CACHE_DIR_ENV

__all__ = [
    "CACHE_DIR_ENV",
    "ActionKey",
    "KeyPart",
    "Store",
    "diff_manifests",
    "make_action_key",
]
