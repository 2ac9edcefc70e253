"""The argument checks of vyre_build.library that need neither a device nor a Call: the
refusal every check raises (`fail`), an array argument's element type (`kind_of`) and shape
(`shape_of`), and the words a refusal describes an argument in. A Call's checks against its
device (library/call.py) use these."""

from __future__ import annotations

from typing import Any, Union

import numpy as np
import numpy.typing as npt

from vyre_build.core.errors import DispatchError
from vyre_build.runtime.device import DeviceBuffer
from vyre_build.runtime.plan import DTYPES, NP_NAMES, host_array

Array = Union[npt.NDArray[Any], DeviceBuffer]
Out = Union[npt.NDArray[Any], DeviceBuffer, None]
_KINDS = {v: k for k, v in DTYPES.items()}


def fail(fn: str, message: str) -> DispatchError:
    return DispatchError(f"library.{fn}: {message}")


def _describe(value: object) -> str:
    # What a refused argument is, in the words of the messages.
    if isinstance(value, DeviceBuffer):
        ro = " (read-only)" if value.access == "r" else ""
        return f"a DeviceBuffer of {NP_NAMES[value.dtype]}, shape {value.shape}{ro}"
    if isinstance(value, np.ndarray):
        dtype = str(value.dtype) if value.dtype.isnative else value.dtype.str
        ro = "" if value.flags.writeable else " (read-only)"
        return f"an array of {dtype}, shape {tuple(value.shape)}{ro}"
    return type(value).__name__


def kind_of(fn: str, name: str, value: object, kinds: tuple[str, ...]) -> str:
    """The element type of array argument `name`: a non-empty numpy array or a DeviceBuffer
    holding one of `kinds` (refused otherwise; nothing here needs the device)."""
    value = host_array(value)  # a bfloat16 array: its bits
    if isinstance(value, DeviceBuffer):
        kind = value.dtype
    elif isinstance(value, np.ndarray):
        kind = _KINDS.get(value.dtype, "")
        if kind in kinds and value.size == 0:
            raise fail(fn, f"{name} is empty")
    else:
        raise fail(
            fn, f"{name} must be a numpy array or a DeviceBuffer, got {type(value).__name__}"
        )
    if kind not in kinds:
        allowed = ", ".join(NP_NAMES[k] for k in kinds[:-1])
        allowed = f"{allowed} or {NP_NAMES[kinds[-1]]}" if allowed else NP_NAMES[kinds[-1]]
        raise fail(fn, f"{name} must be {allowed}, got {_describe(value)}")
    return kind


def shape_of(value: Array) -> tuple[int, ...]:
    return value.shape if isinstance(value, DeviceBuffer) else tuple(value.shape)
