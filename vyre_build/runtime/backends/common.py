"""What the backends share beyond the Device they subclass: picking an adapter, the
binding layout of a kernel, and walking a submission's jobs. Part of no one backend (a
backend imports it; it imports no backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from vyre_build.bundle.metadata import SCALAR_DTYPES, KernelMeta
from vyre_build.core.errors import DeviceError
from vyre_build.runtime.calls import host_type
from vyre_build.runtime.plan import Job


def choose_adapter(api: str, items: list[Any], names: list[str], adapter: int | str) -> Any:
    """`items[adapter]` for an index, else the first whose name contains `adapter`."""
    if isinstance(adapter, int) and not isinstance(adapter, bool):
        if not 0 <= adapter < len(items):
            raise DeviceError(
                f"{api} adapter index {adapter} is out of range; there are {len(items)}: {names}"
            )
        return items[adapter]
    for item, name in zip(items, names):
        if str(adapter).lower() in name.lower():
            return item
    raise DeviceError(f"no {api} adapter matches {adapter!r}; there are: {names}")


def stride(dtype: str) -> int:
    """Bytes of one element of a storage buffer of `dtype` (a metadata dtype: "f16",
    "vec4h"), its array stride in the kernel's code."""
    scalar, count = host_type(dtype)
    return SCALAR_DTYPES[scalar] * count


def layout_of(meta: KernelMeta) -> list[tuple[int, str]]:
    """(binding, access) of every binding in a kernel's set, sorted; "u" for the uniform."""
    kinds = [(b.binding, b.access or "r") for b in meta.buffers]
    if meta.uniform is not None:
        kinds.append((meta.uniform.binding, "u"))
    if meta.debug is not None and meta.debug.binding is not None:
        kinds.append((meta.debug.binding, "rw"))  # the debug buffer (runtime/debug.py)
    return sorted(kinds)


def steps(jobs: list[Job]) -> Iterator[tuple[Any, Any, tuple[int, int, int], bool, bool]]:
    """Each job as (pipeline, set, workgroups, pipeline changed, set changed)."""
    last_pipe = last_entry = None
    for pipe, entry, groups in jobs:
        yield pipe, entry, groups, pipe is not last_pipe, entry is not last_entry
        last_pipe, last_entry = pipe, entry
