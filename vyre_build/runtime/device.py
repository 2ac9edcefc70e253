"""What both backends share: buffers, batches, binding-set reuse, dispatch, `Kernel`.
A backend subclasses `Device` with the hooks _alloc, _upload, _download, _free, _pipeline,
_bind (a binding set: Vulkan descriptor set / wgpu bind group, owning its uniform buffer),
_set_uniform, _unbind and _submit."""

from __future__ import annotations

import math
import weakref

import numpy as np

from vyre_build.errors import DeviceError, DispatchError
from vyre_build.runtime.kernel import DTYPES, NP_NAMES, VECTORS, check_meta, is_shape, plan_call

_KEPT_PER_KEY = 8  # kept binding sets per (pipeline, buffers): distinct scalars per batch
# A batch submits its dispatches in chunks of 1, 2, 4, ... up to this many, so the GPU
# starts on the first while later ones are still being recorded.
_CHUNK_MAX = 16
_SPIRV_MAGIC = b"\x03\x02\x23\x07"
_KIND = {v: k for k, v in DTYPES.items()}


def choose_adapter(api: str, items: list, names: list, adapter):
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


def layout_of(meta: dict) -> list:
    """(binding, access) of every binding in a kernel's set, sorted; "u" for the uniform."""
    kinds = [(b["binding"], b["access"]) for b in meta["bindings"] if b["kind"] == "buffer"]
    if meta.get("uniform"):
        kinds.append((meta["uniform"]["binding"], "u"))
    return sorted(kinds)


def steps(jobs: list):
    """Each job as (pipeline, binding set, workgroups, pipeline changed, set changed)."""
    last_pipe = last_entry = None
    for pipe, entry, groups in jobs:
        yield pipe, entry, groups, pipe is not last_pipe, entry is not last_entry
        last_pipe, last_entry = pipe, entry


class DeviceBuffer:
    """A storage buffer on one device (`count` elements of `dtype` in `shape`, `nbytes`),
    read back by `.read()`; read-only ones (access "r") are refused where a kernel writes."""

    def __init__(self, device: Device, handle, dtype: str, shape: tuple, access: str):
        self.device, self.handle, self.dtype = device, handle, dtype
        self.shape, self.access, self.released = shape, access, False
        self.count = math.prod(shape)
        self.nbytes = self.count * 4

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return (
            f"<DeviceBuffer {NP_NAMES[self.dtype]}{list(self.shape)} access={self.access!r}"
            f" on {self.device.backend}>"
        )

    def _live(self, op: str = ""):
        # A read or write inside a batch would not be ordered with its recorded dispatches.
        if op and self.device._batch is not None:
            raise DispatchError(
                f"DeviceBuffer.{op}() inside device.batch(): {op} before or "
                "after the batch (it is submitted when the `with` block ends)"
            )
        if self.released:
            raise DispatchError("DeviceBuffer was released; create a new one")
        return self.handle

    def read(self) -> np.ndarray:
        """A new numpy array of the buffer's contents (waits for submitted dispatches)."""
        raw = self.device._download(self._live("read"), self.nbytes)
        return np.frombuffer(raw, dtype=DTYPES[self.dtype]).reshape(self.shape).copy()

    def write(self, array) -> None:
        """Overwrite the whole buffer with `array` (same dtype and element count)."""
        if (
            not isinstance(array, np.ndarray)
            or array.dtype != DTYPES[self.dtype]
            or array.size != self.count
        ):
            got = (
                f"{array.dtype}[{array.size}]"
                if isinstance(array, np.ndarray)
                else type(array).__name__
            )
            raise DispatchError(
                f"DeviceBuffer.write: expected a {NP_NAMES[self.dtype]} array "
                f"of {self.count} elements, got {got}"
            )
        self.device._upload(self._live("write"), np.ascontiguousarray(array).tobytes())

    def release(self) -> None:
        """Free the device memory now, or when the current batch ends (else when collected)."""
        if not self.released:
            self.released, batch = True, self.device._batch
            if batch is None:
                self.device._release(self.handle)
            else:  # dispatches submitted or recorded in the batch may still use it
                batch.freed.append(self.handle)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: S110 - at shutdown or after device loss: nothing to free
            pass


class Batch:
    """Dispatches made in `with device.batch():`: submitted in growing chunks as they are
    made, waited for on exit (with an exception, only what was already submitted runs)."""

    def __init__(self, device: Device):
        self.device, self.pending, self.freed, self.chunk = device, [], [], 1

    def __enter__(self):
        if self.device._batch is not None:
            raise DispatchError("device.batch() blocks cannot be nested")
        self.device._batch, self.chunk = self, 1
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        device, self.device._batch = self.device, None
        try:
            device._flush(self.pending if exc_type is None else [])
        finally:
            self.pending = []
            while self.freed:
                device._release(self.freed.pop())


class Device:
    """One adapter's logical device; subclasses set `backend`, `name` and the limits.
    Calls on DeviceBuffers reuse kept binding sets (8 per pipeline and buffers, freed with
    a buffer they bind); other calls get one-off sets. With `timing` set (Vulkan),
    `gpu_seconds` is the GPU time of the last submission's dispatches."""

    backend = name = ""
    max_workgroups, max_buffer_bytes = 65535, 2**27
    timing, gpu_seconds = False, None

    def __init__(self):
        self._batch, self._pipelines, self._oneoff = None, {}, []
        self._sets, self._by_handle, self._busy = {}, {}, {}

    def __repr__(self) -> str:
        return f"<Device {self.backend}: {self.name}>"

    def buffer(self, data, dtype: str | None = None, *, read_only: bool = False) -> DeviceBuffer:
        """Upload a float32/int32/uint32 array, or allocate zeroed elements: `data` a length
        or shape, `dtype` "f32", "i32", "u32" or a vector type ("vec4f": counts vectors)."""
        content = None
        if isinstance(data, np.ndarray):
            kind = _KIND.get(data.dtype)
            if kind is None or dtype not in (None, kind):
                raise DispatchError(
                    f"Device.buffer: array must be float32, int32 or uint32"
                    f"{' matching dtype=' + repr(dtype) if dtype else ''}, "
                    f"got {data.dtype}"
                )
            if data.size == 0:
                raise DispatchError(
                    "Device.buffer: array is empty; a storage buffer needs >= 1 element"
                )
            dtype, shape, content = kind, tuple(data.shape), np.ascontiguousarray(data).tobytes()
        else:
            shape = (data,) if isinstance(data, int) and not isinstance(data, bool) else data
            if dtype not in DTYPES and dtype not in VECTORS:
                raise DispatchError(
                    f"Device.buffer: dtype must be f32, i32, u32 or a vector "
                    f"type (vec4f, ...) when allocating by length, got {dtype!r}"
                )
            if not is_shape(shape):
                raise DispatchError(
                    f"Device.buffer: expected a numpy array, a positive length "
                    f"or a shape, got {data!r}"
                )
            dtype, per = VECTORS.get(dtype, (dtype, 1))
            shape += (per,) if per > 1 else ()
        nbytes = math.prod(shape) * 4
        if content is None and nbytes > self.max_buffer_bytes:  # arrays: checked when bound
            raise DispatchError(
                f"Device.buffer: {nbytes} bytes is more than the device's "
                f"storage buffer limit of {self.max_buffer_bytes} bytes"
            )
        return DeviceBuffer(
            self, self._alloc(nbytes, content), dtype, shape, "r" if read_only else "rw"
        )

    def batch(self) -> Batch:
        """Calls inside `with device.batch():` return DeviceBuffers, submitted as one."""
        return Batch(self)

    def wait(self) -> None:
        """Block until every submitted dispatch has finished (Vulkan's submissions already do)."""

    def kernel(self, meta: dict, code) -> Kernel:
        """A callable kernel of `meta` and WGSL text or SPIR-V bytes; the pipeline is created
        now, so a refused shader fails here."""
        check_meta(meta)
        kid = meta.get("id") or meta["name"]
        if self.backend == "vulkan":
            if (
                not isinstance(code, (bytes, bytearray, memoryview))
                or len(code) % 4
                or bytes(code[:4]) != _SPIRV_MAGIC
            ):
                raise DispatchError(
                    f"Kernel {kid!r}: the given spirv= does not look like a "
                    "SPIR-V module (little-endian, magic 0x07230203)"
                )
            code = bytes(code)
        elif not isinstance(code, str):
            raise DispatchError(f"Kernel {kid!r}: wgsl= must be str, got {type(code).__name__}")
        return Kernel(self, meta, code)

    def pipeline(self, meta: dict, code):
        """The backend pipeline for this kernel, created once per device and kernel."""
        key = (meta.get("id") or meta["name"], code)
        if key not in self._pipelines:
            self._pipelines[key] = self._pipeline(meta, code)
        return self._pipelines[key]

    def _binding(self, pipeline, bound: list, plan):
        # A kept set free in this submission or holding these scalars, else None.
        key = (id(pipeline), tuple((b, id(h), n) for b, h, n in bound))
        kept = self._sets.setdefault(key, [])
        for entry in kept:
            held = self._busy.get(id(entry), entry)  # the entry itself: not yet used
            if held is entry or held == plan.uniform:
                if held is entry and plan.uniform is not None:
                    self._set_uniform(entry, plan.uniform)
                break
        else:
            if len(kept) >= _KEPT_PER_KEY:
                return None
            entry = self._bind(pipeline, bound, plan.uniform_binding, plan.uniform)
            kept.append(entry)
            for _, h, _ in bound:
                self._by_handle.setdefault(id(h), set()).add(key)
        self._busy[id(entry)] = plan.uniform
        return entry

    def _release(self, handle) -> None:
        for key in self._by_handle.pop(id(handle), ()):
            for entry in self._sets.pop(key, ()):
                self._unbind(entry)
        self._free(handle)

    def _flush(self, jobs: list) -> None:
        # Submit `jobs` as the last chunk and wait, then free the one-off binding sets.
        try:
            self._submit(jobs, True)
        finally:
            self._busy.clear()
            while self._oneoff:
                self._unbind(self._oneoff.pop())

    def run(self, kernel: Kernel, plan, args: dict) -> dict:
        """Dispatch `plan`, checked for `args`; return the written buffers (Kernel.__call__)."""
        pipeline = kernel.pipeline
        temps, bound = {}, []
        for arg in plan.buffers:
            buf = args[arg.name]
            if not isinstance(buf, DeviceBuffer):
                buf = temps[arg.name] = (
                    self.buffer(arg.shape, arg.dtype)
                    if arg.source is None
                    else self.buffer(arg.source)
                )
            bound.append((arg.binding, buf._live(), buf.nbytes))
        jobs = []  # an empty grid dispatches nothing; outputs keep their contents
        if all(plan.workgroups):
            # Only calls on persistent buffers reuse binding sets; temporaries die now.
            entry = None if temps else self._binding(pipeline, bound, plan)
            if entry is None:
                entry = self._bind(pipeline, bound, plan.uniform_binding, plan.uniform)
                self._oneoff.append(entry)
            jobs.append((pipeline, entry, plan.workgroups))
        batch = self._batch
        if batch is not None:
            # Buffers dropped before the batch ends (temporaries included) are freed at its
            # end: DeviceBuffer.release defers to the batch.
            batch.pending.extend(jobs)
            if len(batch.pending) >= batch.chunk:
                self._submit(batch.pending, False)
                batch.pending, batch.chunk = [], min(2 * batch.chunk, _CHUNK_MAX)
            return {n: temps[n] if n in temps else args[n] for n in plan.written}
        self._flush(jobs)
        return {n: temps[n].read() if n in temps else args[n] for n in plan.written}


class Kernel:
    """A prebuilt kernel bound to one device (its pipeline created once per device and
    kernel); call it with one keyword per binding."""

    def __init__(self, device: Device, meta: dict, code):
        self.device, self.meta, self.code = device, meta, code
        self.name, self.id = meta["name"], meta.get("id") or meta["name"]
        self.bindings = tuple(dict(b) for b in meta["bindings"])
        self.workgroup_size = tuple(meta["workgroup_size"])
        self.pipeline = device.pipeline(meta, code)
        self._last = None  # (args, grid, plan) of the last call on buffers and scalars

    def __repr__(self) -> str:
        return f"<Kernel {self.id} on {self.device.backend}>"

    def __call__(self, /, grid=None, **args) -> dict:
        """Dispatch once; wait for the result unless inside `device.batch()`. Buffers are numpy
        arrays of the exact dtype or DeviceBuffers (a "w"-only one may be an int length or
        shape, zero-filled); scalars are numbers in range for their dtype; `grid=` (int or
        tuple, invocations per axis) overrides the metadata's. Returns name -> result per
        written buffer: a new numpy array for array or length arguments, the same DeviceBuffer
        for DeviceBuffers; in `device.batch()` all are DeviceBuffers."""
        # A parameter named "grid" takes precedence; use .dispatch() to override the grid.
        if grid is not None and any(b["name"] == "grid" for b in self.bindings):
            args["grid"], grid = grid, None
        return self.dispatch(args, grid=grid)

    def dispatch(self, args: dict, grid=None) -> dict:
        """Like calling the kernel, with the arguments as a dict."""
        last, key = self._last, _grid_key(grid)
        if last is None or key is _NO_CACHE or not _same_call(last, args, key):
            plan = plan_call(self.meta, args, grid, self.device)
            # Buffers weakly held (they stay collectable); never for arrays, whose contents
            # and so uploads can change between calls, or for grids other than ints/tuples.
            self._last = last = (
                None
                if key is _NO_CACHE or any(isinstance(v, np.ndarray) for v in args.values())
                else (
                    {
                        k: weakref.ref(v) if isinstance(v, DeviceBuffer) else v
                        for k, v in args.items()
                    },
                    key,
                    plan._replace(buffers=tuple(a._replace(source=None) for a in plan.buffers)),
                )
            )
            if last is None:
                return self.device.run(self, plan, args)
        return self.device.run(self, last[2], args)


_NO_CACHE = object()


def _grid_key(grid):
    # None, an int or a tuple of ints as given (plain ints only, so that no value plan_call
    # would refuse can match a cached one), else _NO_CACHE.
    if (
        grid is None
        or type(grid) is int
        or type(grid) is tuple
        and all(type(v) is int for v in grid)
    ):
        return grid
    return _NO_CACHE


def _same_call(last: tuple, args: dict, key) -> bool:
    # The same live DeviceBuffers, the same grid and scalars of the same type and value
    # (floats to the sign of zero) as `last`.
    before, last_key, _ = last
    if key != last_key or type(key) is not type(last_key) or len(args) != len(before):
        return False
    for name, value in args.items():
        old = before.get(name)
        if isinstance(value, DeviceBuffer):
            if type(old) is not weakref.ref or old() is not value or value.released:
                return False
        elif (
            type(value) not in (int, float)
            or type(old) is not type(value)
            or old != value
            or value == 0
            and math.copysign(1, value) != math.copysign(1, old)
        ):
            return False
    return True
