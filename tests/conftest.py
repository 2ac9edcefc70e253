"""Shared fixtures.

GPU tests take the `backend` fixture ("wgpu" and "vulkan", one test run each) or
`device` (that backend's default device). Both need a Vulkan adapter (Mesa lavapipe on
a CPU is enough): without one, GPU tests are skipped, except under CI=true where a
missing adapter fails them so that a broken CI image cannot pass silently.
"""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # run from a checkout without installing the package

from adapters import BACKENDS, require_adapter  # noqa: E402

# Devices made by tests persist their Vulkan pipeline cache here, not in the user's cache.
os.environ.setdefault(
    "VYRE_PIPELINE_CACHE", os.path.join(tempfile.mkdtemp(prefix="vyre-tests-"), "pipelines")
)


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
