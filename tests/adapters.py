"""Vulkan adapter probing shared by conftest.py and the GPU tests (a uniquely named module:
several conftest.py files exist, so `from conftest import ...` would be ambiguous)."""

from __future__ import annotations

import os

import pytest

BACKENDS = ("wgpu", "vulkan")
_PROBED: dict = {}


def _probe(backend: str) -> str | None:
    """None when `backend` has a usable device on a Vulkan adapter, else why not."""
    if backend not in _PROBED:
        from vyre_build.errors import VyreError
        from vyre_build.runtime import get_device, list_adapters

        try:
            if not list_adapters("vulkan"):
                raise RuntimeError("the Vulkan loader lists no physical device")
            get_device(backend)
            _PROBED[backend] = None
        except (VyreError, RuntimeError, OSError, ImportError) as exc:
            _PROBED[backend] = f"no usable Vulkan adapter for {backend}: {exc}"
    return _PROBED[backend]


def require_adapter(backend: str) -> None:
    """Skip (or, under CI=true, fail) the current test when `backend` has no adapter."""
    reason = _probe(backend)
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true requires one; install mesa-vulkan-drivers)")
    pytest.skip(reason)
