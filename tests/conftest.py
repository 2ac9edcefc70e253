"""Shared fixtures, and the `gpu` tier.

Runtime tests take the `backend` fixture ("wgpu", "vulkan" and "cpu", one test run each;
`@pytest.mark.backends("wgpu", "vulkan")` narrows it), `device` (that backend's default
runtime device) or `wgpu_device` (a raw wgpu device, for the emitter tests). A GPU
backend needs an adapter (Mesa lavapipe on a CPU is enough): without one, GPU tests are
skipped, except under CI=true where a missing adapter fails them so that a broken CI
image cannot pass silently; the cpu backend (the reference) needs none. A test that takes
one of `DEVICE_FIXTURES` is marked `gpu` here unless it runs on the cpu backend alone, so
`pytest -m "not gpu"` needs no driver; a test that makes a device some other way carries
the mark itself. `VYRE_FORBID_DEVICES=1 pytest -m "not gpu"` checks that: any wgpu or
Vulkan device made outside the gpu tier raises.
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
from spirv_tools import spirv_tool  # noqa: E402

# The test extra's pinned SPIR-V tools come first on PATH for the code under test and its
# subprocesses too (spirv-opt for optimize=True, scons builds), whatever PATH holds (a
# system spirv-tools, a venv run without activating it): see tests/spirv_tools.py.
_PINNED = spirv_tool("spirv-val")
if _PINNED is not None:
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(_PINNED), os.environ.get("PATH", "")])

# Fixtures that create a device (`runner`: test_spirv_vulkan.py's Vulkan dispatcher).
DEVICE_FIXTURES = frozenset({"backend", "device", "wgpu_device", "runner"})

# Devices made by tests persist their Vulkan pipeline cache here, not in the user's cache.
os.environ.setdefault(
    "VYRE_PIPELINE_CACHE", os.path.join(tempfile.mkdtemp(prefix="vyre-tests-"), "pipelines")
)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "backends(*names): the backends the `backend` fixture yields for this test"
    )
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


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("backends")
        names = marker.args if marker else adapters.BACKENDS
        metafunc.parametrize("backend", names, indirect=True)


def _makes_a_gpu_device(item) -> bool:
    # A device fixture on a GPU backend, or a raw wgpu/Vulkan one (the cpu backend is none).
    used = DEVICE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    on_cpu = callspec is not None and callspec.params.get("backend") == "cpu"
    return bool(used - {"backend", "device"} if on_cpu else used)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects on the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _makes_a_gpu_device(item):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture
def backend(request) -> str:
    """Each backend name in turn (see pytest_generate_tests), a GPU one once an adapter
    for it is known to work."""
    if request.param != "cpu":
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
