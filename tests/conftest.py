"""Shared fixtures.

GPU tests take the `backend` fixture ("wgpu" and "vulkan", one test run each) or
`device` (that backend's default device). Both need a Vulkan adapter (Mesa lavapipe on
a CPU is enough): without one, GPU tests are skipped, except under CI=true where a
missing adapter fails them so that a broken CI image cannot pass silently.
"""
from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # run from a checkout without installing the package

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


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """Each GPU backend name in turn, once an adapter for it is known to work."""
    require_adapter(request.param)
    return request.param


@pytest.fixture
def device(backend):
    """The default runtime Device of `backend` (shared for the whole session)."""
    from vyre_build.runtime import get_device
    return get_device(backend)
