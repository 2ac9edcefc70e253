"""The cpu backend: a bundle's `.kdesc` run by the reference (vyre_build.reference) on host
memory, for machines with no GPU driver and for tests; the same argument checks and
results as the GPU backends, since only the hooks below are its own.

A buffer is a numpy byte array; a pipeline is the decoded descriptor with its validate()
facts, checked once against the kernel's metadata; a submission executes its dispatches
in order before it returns (so a batch is ordered and a wait has nothing to wait for).
The base entry always runs: coarse entries exist for GPUs' memory systems only.
`vyre_build.descriptor` and `vyre_build.reference` (which import nothing of the compiler)
are imported when a cpu device is made, never by the rest of the runtime.
"""

from __future__ import annotations

import itertools
import os
import struct
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.core.errors import DescriptorFormatError, DeviceError
from vyre_build.core.features import (
    MATRIX_ACCUMULATORS,
    MATRIX_DIMS,
    MATRIX_ELEMENTS,
    SUBGROUP_FEATURES,
)
from vyre_build.core.targets import KDESC
from vyre_build.runtime.backends.common import choose_adapter
from vyre_build.runtime.device import Device
from vyre_build.runtime.calls import host_type
from vyre_build.runtime.debug import append_records
from vyre_build.runtime.plan import DTYPES, Job
from vyre_build.runtime.profile import CooperativeMatrixType, DeviceProfile, features_of

if TYPE_CHECKING:
    from vyre_build.descriptor import DescriptorInfo, KernelDescriptor

__all__ = [
    "ADAPTER",
    "CpuDevice",
    "adapter_profiles",
    "list_adapters",
    "max_steps_of",
    "subgroup_size_of",
]

ADAPTER = "vyre reference (CPU)"
DEFAULT_SUBGROUP_SIZE = 32
_SUBGROUP_SIZES = tuple(1 << k for k in range(8))  # 1 .. 128, as Vulkan devices report them
_UNPACK = {"f32": "<f", "i32": "<i", "u32": "<I", "f16": "<e"}
_ACCESS = {"ReadOnly": "r", "WriteOnly": "w", "ReadWrite": "rw"}
_WIDE = 2**32 - 1  # per-axis workgroup counts: any grid of u32 global ids fits


def _given_or_env(value: object, arg: str, env: str) -> tuple[str, object]:
    """(where it came from, the value): `value` as given (named `arg`), else the variable
    `env` (an int where its text is digits, else the text, for the caller's message), else
    None when that is unset or empty."""
    if value is not None:
        return arg, value
    text = os.environ.get(env)
    if not text:
        return env, None
    return env, int(text) if text.strip().isdigit() else text


def subgroup_size_of(size: object = None) -> int:
    """The subgroup size a cpu device runs: `size`, else $VYRE_CPU_SUBGROUP_SIZE, else 32;
    DeviceError unless it is a power of two from 1 to 128."""
    where, size = _given_or_env(size, "subgroup_size", "VYRE_CPU_SUBGROUP_SIZE")
    if size is None:
        return DEFAULT_SUBGROUP_SIZE
    if type(size) is not int or size not in _SUBGROUP_SIZES:
        raise DeviceError(f"{where} must be a power of two from 1 to 128, got {size!r}")
    return size


def max_steps_of(steps: object = None) -> int | None:
    """The step budget of a cpu device's dispatches: `steps`, else $VYRE_CPU_MAX_STEPS,
    else None (no budget); DeviceError unless it is a positive integer. A step is one loop
    iteration of one invocation (vyre_build.reference.execute)."""
    where, steps = _given_or_env(steps, "max_steps", "VYRE_CPU_MAX_STEPS")
    if steps is None:
        return None
    if type(steps) is not int or steps < 1:
        raise DeviceError(
            f"{where} must be a positive whole number of steps (loop iterations summed over "
            f"a dispatch's invocations), got {steps!r}"
        )
    return steps


def _matrices() -> tuple[CooperativeMatrixType, ...]:
    """Every cooperative-matrix shape the compiler makes: the reference runs them all."""
    return tuple(
        CooperativeMatrixType(m, n, k, a, a, c, c)
        for m, n, k in itertools.product(MATRIX_DIMS, repeat=3)
        for a in MATRIX_ELEMENTS["a"]
        for c in MATRIX_ACCUMULATORS[a]
    )


def profile_of(subgroup_size: int) -> DeviceProfile:
    """The profile of a cpu device running subgroups of `subgroup_size` lanes."""
    matrices = _matrices()
    return DeviceProfile(
        backend="cpu",
        adapter=ADAPTER,
        device_type="cpu",
        vendor_id=0,
        device_id=0,
        driver="vyre_build.reference",
        driver_version=0,
        api_version=f"numpy {np.__version__}",
        subgroup_size=subgroup_size,
        subgroup_size_range=(subgroup_size, subgroup_size),
        subgroup_operations=SUBGROUP_FEATURES,
        f16=True,
        storage_16bit=True,
        bf16=True,
        cooperative_matrices=matrices,
        max_workgroup_size=(1 << 16, 1 << 16, 1 << 16),
        max_workgroup_invocations=1 << 16,
        max_workgroup_count=(_WIDE, _WIDE, _WIDE),
        max_shared_memory=1 << 30,
        max_storage_buffer_binding=1 << 32,
        features=features_of(SUBGROUP_FEATURES, True, True, matrices, True, True, bf16=True),
    )


def device_key(
    adapter: int | str | None, subgroup_size: object = None, max_steps: object = None
) -> tuple[int | str | None, int, int | None]:
    """What cpu devices are shared by (vyre_build.core.backends): the values in effect, so that
    a changed $VYRE_CPU_* gives a new device."""
    return (adapter, subgroup_size_of(subgroup_size), max_steps_of(max_steps))


def list_adapters() -> list[str]:
    """The one cpu "adapter": the reference."""
    return [ADAPTER]


def adapter_profiles() -> list[DeviceProfile]:
    """The profile a cpu device made now would have ($VYRE_CPU_SUBGROUP_SIZE applied)."""
    return [profile_of(subgroup_size_of())]


class _Pipeline(NamedTuple):
    """A kernel ready to run: its descriptor and facts, and how its bindings map to them."""

    desc: KernelDescriptor
    info: DescriptorInfo
    buffers: dict[int, tuple[str, np.dtype[Any], bool]]  # binding -> name, dtype, written
    scalars: tuple[tuple[str, str, int], ...]  # name, struct format, offset in the block
    debug: int | None = None  # the debug buffer's binding (a debug build; runtime/debug.py)


class _Binding:
    """A binding set: its pipeline, the bound buffers by binding, the scalars' values."""

    def __init__(self, pipeline: _Pipeline, bound: list[tuple[int, Any, int]]):
        self.pipeline = pipeline
        self.bound = {b: (handle, n) for b, handle, n in bound}
        self.scalars: dict[str, object] = {}

    def set_uniform(self, uniform: bytes) -> None:
        self.scalars = {
            name: struct.unpack_from(fmt, uniform, offset)[0]
            for name, fmt, offset in self.pipeline.scalars
        }


def _rows(
    meta: KernelMeta, desc: KernelDescriptor, info: DescriptorInfo
) -> tuple[set[str], set[str]]:
    # The binding table as the metadata states it and as the descriptor implies it.
    stated = {f"buffer {b.name!r} ({b.binding}, {b.dtype}, {b.access})" for b in meta.buffers}
    implied = {
        f"buffer {s.name!r} ({s.slot}, {info.slot_types[s.slot]}, {_ACCESS[s.visibility]})"
        for s in desc.slots
        if s.memory_class == "Global"
    }
    if meta.uniform is not None:
        stated.add(f"a uniform block ({meta.uniform.binding}, {meta.uniform.size} bytes)")
        stated |= {f"scalar {b.name!r} ({b.dtype} at {b.offset})" for b in meta.scalars}
    block = info.uniform
    if block is not None:
        implied.add(f"a uniform block ({block.binding}, {block.size} bytes)")
        implied |= {f"scalar {m.name!r} ({m.type} at {m.offset})" for m in block.members}
    return stated, implied


class CpuDevice(Device):
    """The reference as a device: kernels' `.kdesc` run on the host with numpy.

    Arguments:
        adapter: None, 0 or a substring of "vyre reference (CPU)" (there is one).
        subgroup_size: lanes per subgroup (a power of two from 1 to 128; default
            $VYRE_CPU_SUBGROUP_SIZE, else 32): kernels must not assume one, and running
            them at 8 (lavapipe), 32 (NVIDIA) and 64 (AMD) shows whether they do.
        max_steps: each dispatch's step budget (loop iterations summed over its
            invocations; default $VYRE_CPU_MAX_STEPS, else none): a dispatch past it raises
            DispatchError, naming the kernel, and writes nothing (a watchdog for kernels
            that may never end).
    """

    backend = "cpu"
    name = ADAPTER
    coarse_entries = False

    def __init__(
        self,
        adapter: int | str | None = None,
        *,
        subgroup_size: int | None = None,
        max_steps: int | None = None,
    ):
        super().__init__()
        if adapter is not None:
            choose_adapter("cpu", [ADAPTER], [ADAPTER], adapter)
        from vyre_build import descriptor, reference

        self._decode, self._validate = descriptor.decode, descriptor.validate
        self._execute = reference.execute
        self.subgroup_size = subgroup_size_of(subgroup_size)
        self.max_steps = max_steps_of(max_steps)
        self.profile = profile_of(self.subgroup_size)
        self.max_workgroup_count = self.profile.max_workgroup_count
        self.max_buffer_bytes = self.profile.max_storage_buffer_binding

    # -- hooks --

    def _alloc(self, nbytes: int, data: bytes | None) -> Any:
        if data is None:
            return np.zeros(nbytes, np.uint8)
        return np.frombuffer(data, np.uint8).copy()

    def _upload(self, handle: Any, data: bytes) -> None:
        handle[: len(data)] = np.frombuffer(data, np.uint8)

    def _download(self, handle: Any, nbytes: int) -> bytes:
        return bytes(handle[:nbytes].tobytes())

    def _free(self, handle: Any) -> None:
        pass  # host memory: collected with the last reference

    def _pipeline(
        self, meta: KernelMeta, code: Any, base: tuple[int, int, int] | None, entry: str
    ) -> Any:
        try:
            desc = self._decode(code)
            info = self._validate(desc)
        except DescriptorFormatError as exc:
            raise DeviceError(
                f"Kernel {meta.id!r}: the cpu backend refused the {KDESC.suffix}: {exc}"
            ) from exc
        if desc.id != meta.id:
            raise DeviceError(f"Kernel {meta.id!r}: the {KDESC.suffix} is kernel {desc.id!r}")
        stated, implied = _rows(meta, desc, info)
        if stated != implied:
            raise DeviceError(
                f"Kernel {meta.id!r}: the {KDESC.suffix} does not match the metadata: it has "
                f"{', '.join(sorted(implied - stated)) or 'nothing more'} where the metadata "
                f"has {', '.join(sorted(stated - implied)) or 'nothing more'}"
            )
        if tuple(desc.workgroup_size) != tuple(meta.workgroup_size):
            raise DeviceError(
                f"Kernel {meta.id!r}: the {KDESC.suffix} has workgroup size "
                f"{'x'.join(map(str, desc.workgroup_size))}, the metadata "
                f"{'x'.join(map(str, meta.workgroup_size))}"
            )
        buffers = {
            b.binding: (b.name, DTYPES[host_type(b.dtype)[0]], b.access != "r")
            for b in meta.buffers
        }
        scalars = tuple((b.name, _UNPACK[b.dtype], b.offset or 0) for b in meta.scalars)
        debug = meta.debug.binding if meta.debug is not None else None
        if info.debug_binding != debug:  # the buffer the runtime binds is the one it writes
            raise DeviceError(
                f"Kernel {meta.id!r}: the {KDESC.suffix} has its debug buffer at binding "
                f"{info.debug_binding}, the metadata at {debug} (rebuild both together)"
            )
        return _Pipeline(desc, info, buffers, scalars, debug)

    def _bind(
        self,
        pipeline: Any,
        bound: list[tuple[int, Any, int]],
        uniform_binding: int | None,
        uniform: bytes | None,
    ) -> Any:
        entry = _Binding(pipeline, bound)
        if uniform is not None:
            entry.set_uniform(uniform)
        return entry

    def _set_uniform(self, entry: Any, uniform: bytes) -> None:
        entry.set_uniform(uniform)

    def _unbind(self, entry: Any) -> None:
        pass

    def _submit(self, jobs: list[Job], final: bool) -> None:
        for pipe, entry, groups in jobs:  # never split: the counts fit any u32 grid
            self._dispatch(pipe, entry, groups)

    def _dispatch(self, pipe: _Pipeline, entry: _Binding, groups: tuple[int, int, int]) -> None:
        views = {}
        for binding, (name, dtype, _) in pipe.buffers.items():
            handle, nbytes = entry.bound[binding]
            views[name] = handle[:nbytes].view(dtype)
        records: list[Any] | None = [] if pipe.debug is not None else None
        out = self._execute(
            pipe.desc,
            views,
            entry.scalars,
            groups,
            info=pipe.info,
            subgroup_size=self.subgroup_size,
            max_steps=self.max_steps,
            debug=records,
        )
        if records and pipe.debug in entry.bound:  # as the GPU writes them (runtime/debug.py)
            handle, nbytes = entry.bound[pipe.debug]
            append_records(handle[:nbytes].view(np.uint32), records)
        for name, _, written in pipe.buffers.values():
            if written:
                views[name][:] = out[name].reshape(-1)

    def _wait(self) -> None:
        pass  # every submission has run by the time _submit returns

    def _close(self) -> None:
        self._sets.clear()
        self._pipelines.clear()
