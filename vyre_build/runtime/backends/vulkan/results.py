"""VkResult codes as DeviceErrors that name the call and the result.

The `vulkan` package raises its own exception class for a VkResult it knows and a bare
`KeyError: <code>` for one it does not (VK_ERROR_OUT_OF_POOL_MEMORY, -1000069000, is in its
table with the wrong sign; so are its VK_ERROR_* constants of extensions). `invoke` runs one
of its functions and turns both into a `VulkanCallError` carrying the call's name and the
code; `describe` words a code returned by a direct `vk.lib` call the same way. Names come
from the binding's C header (`VkResult`'s enumerators), which has the right signs; a code
not in it is "an unknown VkResult".
"""

from __future__ import annotations

import re
from typing import Any

import vulkan as vk

from vyre_build.core.errors import DeviceError

# The VkResult enumerators of the binding's header, by value and by name.
NAMES: dict[int, str] = {
    int(k): str(v) for k, v in vk.ffi.typeof("VkResult").elements.items() if v.startswith("VK_")
}
CODES: dict[str, int] = {name: code for code, name in NAMES.items()}
SUCCESS, NOT_READY, TIMEOUT = CODES["VK_SUCCESS"], CODES["VK_NOT_READY"], CODES["VK_TIMEOUT"]
DEVICE_LOST = CODES["VK_ERROR_DEVICE_LOST"]
OUT_OF_POOL_MEMORY = CODES["VK_ERROR_OUT_OF_POOL_MEMORY"]
FRAGMENTED_POOL = CODES["VK_ERROR_FRAGMENTED_POOL"]
_WORD = re.compile(r"[A-Z][a-z0-9]*")


def describe(call: str, code: int) -> str:
    """'<call> returned <VK_NAME> (<code>)', e.g. 'vkAllocateDescriptorSets returned
    VK_ERROR_OUT_OF_POOL_MEMORY (-1000069000)'."""
    return f"{call} returned {NAMES.get(code, 'an unknown VkResult')} ({code})"


class VulkanCallError(DeviceError):
    """A Vulkan call that returned something other than VK_SUCCESS: `call` (its name) and
    `code` (the VkResult); the message is `describe(call, code)`."""

    def __init__(self, call: str, code: int):
        super().__init__(describe(call, code))
        self.call, self.code = call, code


def code_of(exc: BaseException) -> int | None:
    """The VkResult behind an exception the `vulkan` package raised, None if it is not one:
    its exception class (VkErrorOutOfHostMemory -> VK_ERROR_OUT_OF_HOST_MEMORY, looked up in
    the header's names) or the KeyError of a code missing from its table."""
    if isinstance(exc, KeyError):
        found = exc.args[0] if len(exc.args) == 1 else None
        return found if isinstance(found, int) and not isinstance(found, bool) else None
    if isinstance(exc, (vk.VkError, vk.VkException)):
        name = "_".join(w.upper() for w in _WORD.findall(type(exc).__name__))
        return CODES.get(name, CODES["VK_ERROR_UNKNOWN"])
    return None


def invoke(fn: Any, *args: Any) -> Any:
    """fn(*args), a function of the `vulkan` package; VulkanCallError naming `fn` and the
    VkResult where it raises one of its exceptions or a KeyError for an unknown code."""
    try:
        return fn(*args)
    except (vk.VkError, vk.VkException, KeyError) as exc:
        code = code_of(exc)
        if code is None:
            raise
        raise VulkanCallError(getattr(fn, "__name__", "a Vulkan call"), code) from exc


def check(call: str, code: int) -> None:
    """VulkanCallError unless `code`, what direct library call `call` returned, is
    VK_SUCCESS."""
    if code != SUCCESS:
        raise VulkanCallError(call, int(code))
