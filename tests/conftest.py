"""Shared fixtures, and the `gpu` tier.

GPU tests take the `backend` fixture ("wgpu" and "vulkan", one test run each), `device`
(that backend's default runtime device) or `wgpu_device` (a raw wgpu device, for the
emitter tests). Each needs an adapter (Mesa lavapipe on a CPU is enough): without one,
GPU tests are skipped, except under CI=true where a missing adapter fails them so that a
broken CI image cannot pass silently. A test that takes one of `DEVICE_FIXTURES` is
marked `gpu` here, so `pytest -m "not gpu"` needs no driver; a test that makes a device
some other way carries the mark itself. `VYRE_FORBID_DEVICES=1 pytest -m "not gpu"`
checks that: any device made outside the gpu tier raises.
"""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # run from a checkout without installing the package

import adapters  # noqa: E402

# Fixtures that create a device (`runner`: test_spirv_vulkan.py's Vulkan dispatcher).
DEVICE_FIXTURES = frozenset({"backend", "device", "wgpu_device", "runner"})

# Devices made by tests persist their Vulkan pipeline cache here, not in the user's cache.
os.environ.setdefault(
    "VYRE_PIPELINE_CACHE", os.path.join(tempfile.mkdtemp(prefix="vyre-tests-"), "pipelines")
)


def pytest_configure(config):
    # VK_ICD_FILENAMES=/nonexistent leaves wgpu Mesa's GL adapter, so it alone cannot show that
    # the "not gpu" tier makes no device; VYRE_FORBID_DEVICES=1 makes every attempt raise.
    if os.environ.get("VYRE_FORBID_DEVICES") == "1":
        _forbid_devices()


def _forbid_devices() -> None:
    def refuse(*args, **kwargs):
        raise RuntimeError("VYRE_FORBID_DEVICES=1: this test makes a device; mark it gpu")

    try:
        import wgpu
    except ImportError:
        pass
    else:
        for name in dir(wgpu.gpu):
            if name.startswith(("request_adapter", "enumerate_adapters")):
                setattr(wgpu.gpu, name, refuse)
    try:
        import vulkan
    except ImportError:
        pass
    else:
        vulkan.vkCreateInstance = refuse


@pytest.hookimpl(tryfirst=True)  # before `-m` selects on the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if DEVICE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(params=adapters.BACKENDS)
def backend(request) -> str:
    """Each GPU backend name in turn, once an adapter for it is known to work."""
    adapters.require_adapter(request.param)
    return request.param


@pytest.fixture
def device(backend):
    """The default runtime Device of `backend` (shared for the whole session)."""
    from vyre_build.runtime import get_device

    return get_device(backend)


@pytest.fixture(scope="session")
def wgpu_device():
    """A raw wgpu device on the first adapter (no vyre_build runtime in between)."""
    return adapters.wgpu_device()
