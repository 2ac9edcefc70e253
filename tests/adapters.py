"""Adapter probing shared by conftest.py and the GPU tests (a uniquely named module:
several conftest.py files exist, so `from conftest import ...` would be ambiguous)."""

from __future__ import annotations

import os

import pytest

from vyre_build.core.backends import BACKENDS as REGISTERED

# What the `backend` fixture yields (every registered backend); the cpu backend (the
# reference) needs no driver.
BACKENDS = tuple(REGISTERED)
GPU_BACKENDS = tuple(b for b in BACKENDS if REGISTERED[b].gpu)
_PROBED: dict = {}


def no_adapter(reason: str):
    """Skip the current test, or fail it under CI=true (a broken CI image must not pass)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true requires one; install mesa-vulkan-drivers)")
    pytest.skip(reason)


def _probe(backend: str) -> str | None:
    """None when `backend` has a usable device on a Vulkan adapter, else why not."""
    if backend not in _PROBED:
        from vyre_build.core.errors import VyreError
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
    """Skip (or, under CI=true, fail) the current test when GPU `backend` has no adapter."""
    reason = _probe(backend)
    if reason is not None:
        no_adapter(reason)


def wgpu_device():
    """A raw wgpu device on the first adapter, made once (no vyre_build runtime involved:
    the emitter tests check emitted code on their own)."""
    if "raw-wgpu" not in _PROBED:
        try:
            import wgpu

            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
            # the features kernels may need (f16, subgroups), where the adapter has them
            wanted = [f for f in ("shader-f16", "subgroup") if f in adapter.features]
            _PROBED["raw-wgpu"] = adapter.request_device_sync(required_features=wanted)
        except Exception as exc:  # noqa: BLE001 - any failure here means "no adapter"
            _PROBED["raw-wgpu"] = f"no wgpu adapter: {exc}"
    if isinstance(_PROBED["raw-wgpu"], str):
        no_adapter(_PROBED["raw-wgpu"])
    return _PROBED["raw-wgpu"]
