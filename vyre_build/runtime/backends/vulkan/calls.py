"""The Vulkan device's call helpers and its unusable state (the base of device.py's
VulkanDevice, through queue.py, memory.py and binding.py): every Vulkan call that can fail
raises a DeviceError naming what failed, the call and its VkResult, whatever the `vulkan`
package maps the code to (or fails to: results.py). VK_ERROR_DEVICE_LOST from any call,
and a failed wait for the GPU or reset after one (queue.py), make the device unusable
(device.py's docstring says what that guarantees): every later use raises a DeviceError
saying why, and get_device makes a new device.
"""

from __future__ import annotations

from typing import Any

import vulkan as vk

from vyre_build.core.errors import DeviceError
from vyre_build.runtime.device import DEFAULT_DEVICES, Device
from vyre_build.runtime.backends.vulkan.results import (
    DEVICE_LOST,
    SUCCESS,
    VulkanCallError,
    invoke,
)

_NEW_ONE = "close it and get a new one with get_device"


class VulkanCalls(Device):
    """The call helpers of a VulkanDevice, and its unusable state (the module docstring)."""

    # Made by VulkanDevice.__init__ (device.py): the VkDevice, and why the device is
    # unusable, or None.
    dev: Any
    _broken: str | None

    # -- errors, and the unusable state --

    def _check_open(self) -> None:
        super()._check_open()
        if self._broken is not None:
            raise DeviceError(f"{self!r}: the device is unusable since {self._broken}; {_NEW_ONE}")

    def _fail(self, what: str, error: str) -> DeviceError:
        return DeviceError(f"Vulkan {what} failed on {self.name}: {error}")

    def _lose(self, what: str, error: str) -> DeviceError:
        # The device becomes unusable (see the module docstring): the DeviceError saying so.
        if self._broken is None:
            self._broken = f"its {what} failed ({error})"
            for key in [k for k, d in DEFAULT_DEVICES.items() if d is self]:
                del DEFAULT_DEVICES[key]  # get_device makes a new one
        return self._fail(
            what,
            f"{error}; the GPU may still be using the device's memory, so the device is "
            f"unusable now: {_NEW_ONE}",
        )

    def _error(self, what: str, exc: VulkanCallError) -> DeviceError:
        lost = exc.code == DEVICE_LOST
        return self._lose(what, str(exc)) if lost else self._fail(what, str(exc))

    def _vk(self, what: str, fn: Any, *args: Any) -> Any:
        # fn(*args) through the `vulkan` package, its failures raised as DeviceError.
        try:
            return invoke(fn, *args)
        except VulkanCallError as exc:
            raise self._error(what, exc) from exc

    def _check(self, what: str, call: str, result: int) -> None:
        # VkResult of a direct library call `call`: anything but VK_SUCCESS is a DeviceError.
        if result != SUCCESS:
            raise self._error(what, VulkanCallError(call, int(result)))

    def _new(self, what: str, kind: str, **fields: Any) -> Any:
        # vkCreate<kind>(device, Vk<kind>CreateInfo(**fields), None), errors named `what`.
        info = getattr(vk, f"Vk{kind}CreateInfo")(**fields)
        return self._vk(what, getattr(vk, f"vkCreate{kind}"), self.dev, info, None)
