"""`Kernel`: one prebuilt kernel on one device, called with keyword arguments."""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import weakref
from typing import Any, TypeVar, Union, overload

import numpy as np
import numpy.typing as npt

from vyre_build.bundle.metadata import Binding, KernelMeta
from vyre_build.core.errors import DeviceError, DispatchError
from vyre_build.runtime.calls import Grid, host_type, plan_call
from vyre_build.runtime.device import Again, Device, DeviceBuffer
from vyre_build.runtime.plan import NP_NAMES, Plan

_NUM_WORKGROUPS = 24  # SPIR-V BuiltIn NumWorkgroups
_OP_DECORATE, _BUILTIN, _SPEC_ID = 71, 11, 1  # OpDecorate; decorations BuiltIn, SpecId
_IDS = {26, 28}  # BuiltIn WorkgroupId, GlobalInvocationId
BufferValue = Union[npt.NDArray[Any], DeviceBuffer, int, tuple[int, ...]]
_Scalar = TypeVar("_Scalar", bound=np.generic)


class ResultNotFound(DispatchError, KeyError):
    """A result name the call has not (a KeyError too, as a dict's lookups raise): the
    message names the kernel's results, and why `name` is not one of them."""

    def __str__(self) -> str:
        return str(self.args[0])


class CallResult(dict[str, Union[npt.NDArray[Any], DeviceBuffer]]):
    """What a call returns: name -> result per written buffer. For a numpy array argument,
    that array itself, which the call wrote the result into; a new array for a length or
    shape; the DeviceBuffer itself for a DeviceBuffer argument. Inside `device.batch()`,
    DeviceBuffers; when the batch ends, each array argument receives its result and
    replaces its DeviceBuffer here. `array(name)` and `buffer(name)` give each typed; a
    name that is not a result raises ResultNotFound (a DispatchError and a KeyError)
    naming the results there are."""

    _kernel: Kernel | None = None  # the kernel called, for the messages
    _again: Again | None = None  # what Device.run queued in a batch, to queue again

    def _of(self, kernel: Kernel) -> CallResult:
        self._kernel = kernel
        return self

    def __missing__(self, name: str) -> Any:
        raise self._not_found(name)

    def _not_found(self, name: str) -> ResultNotFound:
        kernel = self._kernel
        where = f"Kernel {kernel.id!r}: no result {name!r}" if kernel else f"no result {name!r}"
        binding = next((b for b in kernel.bindings if b.name == name), None) if kernel else None
        if binding is not None and binding.kind != "buffer":
            where += f" ({name!r} is a scalar argument: only written buffers are results)"
        elif binding is not None and binding.access == "r":
            where += f" ({name!r} is read-only: only buffers the kernel writes are results)"
        else:
            close = difflib.get_close_matches(str(name), [str(k) for k in self], n=1)
            where += f" (did you mean {close[0]!r}?)" if close else ""
        names = ", ".join(repr(k) for k in self)
        return ResultNotFound(
            f"{where}; its results are {names}"
            if names
            else f"{where}; the call returned no results"
        )

    @overload
    def array(self, name: str) -> npt.NDArray[Any]: ...

    @overload
    def array(self, name: str, dtype: type[_Scalar]) -> npt.NDArray[_Scalar]: ...

    def array(self, name: str, dtype: type[np.generic] | None = None) -> npt.NDArray[Any]:
        """The result `name` as a numpy array (a DeviceBuffer is read back); with `dtype`
        (np.float32, ...) typed as such, DispatchError if it is another."""
        value = self[name]
        array = value.read() if isinstance(value, DeviceBuffer) else value
        if dtype is not None and array.dtype != np.dtype(dtype):
            raise DispatchError(f"result {name!r} is {array.dtype}, not {np.dtype(dtype)}")
        return array

    def buffer(self, name: str) -> DeviceBuffer:
        """The result `name` as the DeviceBuffer it is (DispatchError for an array)."""
        value = self[name]
        if not isinstance(value, DeviceBuffer):
            raise DispatchError(f"result {name!r} is a numpy array, not a DeviceBuffer")
        return value


# The WGSL emitter's split-dispatch base, 0 in the artifact (emit/wgsl: the same line; a
# test keeps the two equal): a piece's module is the WGSL with this line spelling its base.
WGSL_BASE = "const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);"


def wgsl_at_base(code: str, base: tuple[int, int, int]) -> str:
    """The WGSL of a split dispatch's piece starting at workgroup `base`: `code` (which
    split_refusal_of_code let split) with its WGSL_BASE line spelling the base. A plain
    constant, not an override, so naga never evaluates the module's constant expressions
    at pipeline creation (it refuses valid kernels then: docs/runtime.md, "Grids")."""
    x, y, z = base
    return code.replace(WGSL_BASE, f"const vyre_wg_base: vec3<u32> = vec3<u32>({x}u, {y}u, {z}u);")


def split_refusal_of_code(code: str | bytes) -> str | None:
    """Why a dispatch of this shader cannot be split into pieces, or None. A piece starts at
    its base workgroup through the vyre_wg_base constants that the emitters declare (SPIR-V:
    specialization constants SpecId 0-2; WGSL: the WGSL_BASE line): a shader
    that reads workgroup or global ids without them would run every piece as the first;
    one that reads num_workgroups() would see one piece's count instead of the whole
    grid's."""
    if isinstance(code, str):  # WGSL (emit/wgsl: the entry's builtins are named so)
        if code.count("nwg") > code.count("nwg: vec3<u32>"):  # past the entry parameters
            return "the kernel reads num_workgroups(), so the dispatch cannot be split"
        ids = "@builtin(global_invocation_id)" in code or "@builtin(workgroup_id)" in code
        if ids and code.count(WGSL_BASE) != 1:
            return _NO_BASE.format("constant (one line `" + WGSL_BASE + "`)", "WGSL")
        return None
    words = np.frombuffer(code, dtype="<u4")
    at, builtins, spec_ids = 5, set(), set()  # after the header
    while at < len(words):
        count, opcode = int(words[at]) >> 16, int(words[at]) & 0xFFFF
        if count == 0:  # malformed: the driver refuses it anyway; never split it
            return "the kernel's SPIR-V is malformed, so the dispatch cannot be split"
        if opcode == _OP_DECORATE and count == 4:
            if words[at + 2] == _BUILTIN:
                builtins.add(int(words[at + 3]))
            elif words[at + 2] == _SPEC_ID:
                spec_ids.add(int(words[at + 3]))
        at += count
    if _NUM_WORKGROUPS in builtins:
        return "the kernel reads num_workgroups(), so the dispatch cannot be split"
    if builtins & _IDS and not {0, 1, 2} <= spec_ids:
        return _NO_BASE.format("specialization constants (SpecId 0-2)", "SPIR-V")
    return None


_NO_BASE = (
    "the shader reads workgroup ids without the vyre_wg_base {} that vyre_build's "
    "{} emitter declares, so the dispatch cannot be split"
)


def _annotation(b: Binding) -> Any:
    return BufferValue if b.kind == "buffer" else (float if b.dtype in ("f32", "f16") else int)


def _row(b: Binding) -> str:
    if b.kind == "buffer":
        dtype, per = host_type(b.dtype)
        host = f"{NP_NAMES[dtype]} array" + (f" (n, {per})" if per > 1 else "")
        host += ", any length" if b.any_length else ""
        return f"  {b.name:<14} buffer  {b.dtype:<6} {b.access:<3} binding {b.binding:<4} {host}"
    return f"  {b.name:<14} scalar  {b.dtype:<6}     offset  {b.offset:<4} uniform block"


class _KernelDoc:
    """`Kernel.__doc__`: the class's text on the class, the binding table on a kernel."""

    def __init__(self, text: str):
        self.text = text

    def __get__(self, obj: Kernel | None, owner: type) -> str:
        return self.text if obj is None else obj._doc()


class Kernel:
    __doc__ = _KernelDoc(
        """A prebuilt kernel bound to one device, called with one keyword argument per binding
    (see `help(kernel)` for its table). Its pipeline is created on first use, or by
    `warm()`; the device's features were checked when it was made."""
    )

    def __init__(
        self,
        device: Device,
        meta: KernelMeta,
        code: str | bytes,
        refusal: str | None = None,
        *,
        _checked: bool = False,  # the caller ran device.check_kernel(meta) (a bundle's load)
    ):
        if refusal is None and not _checked:
            device.check_kernel(meta)
        # Why the device cannot run it (a bundle's Mapping holds every kernel on every
        # device): calling or warming it raises DeviceError with this message.
        self.refusal = refusal
        self.device, self.meta, self.code = device, meta, code
        self.name, self.id = meta.name, meta.id
        self.variant: str | None = meta.variant  # e.g. the candidate a tuned lookup picked
        self.bindings: tuple[Binding, ...] = meta.bindings
        self.workgroup_size = meta.workgroup_size
        self._last: tuple[dict[str, object], object, Plan] | None = None
        self._no_split: tuple[str | None] | None = None  # (why not, or None) once computed

    # The signature and the help text are built when asked for (inspect.signature, help()),
    # not for every kernel a bundle loads.
    @functools.cached_property
    def __signature__(self) -> inspect.Signature:
        names = [b.name for b in self.meta.bindings]
        params = [
            inspect.Parameter(b.name, inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(b))
            for b in self.meta.bindings
        ]
        if "grid" not in names:
            params.append(
                inspect.Parameter(
                    "grid", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Grid
                )
            )
        return inspect.Signature(params, return_annotation=CallResult)

    def _doc(self) -> str:
        meta, device = self.meta, self.device
        return "\n".join(
            [
                f"Kernel {meta.id} on {device.backend}: {device.name}",
                f"workgroup size {'x'.join(map(str, meta.workgroup_size))}, grid "
                f"{', '.join(map(str, meta.grid)) or 'from the first written buffer'}"
                + (f", needs {', '.join(meta.features)}" if meta.features else ""),
                "",
                "Call with keyword arguments; returns a CallResult (name -> written buffer).",
                "A numpy array passed for a written buffer (w, rw) receives the result.",
                "",
                *map(_row, meta.bindings),
            ]
        )

    def __repr__(self) -> str:
        params = ", ".join(
            f"{b.name}: {b.dtype}" + (f"[{b.access}]" if b.kind == "buffer" else "")
            for b in self.bindings
        )
        return f"<Kernel {self.id}({params}) on {self.device.backend}: {self.device.name}>"

    @property
    def pipeline(self) -> Any:
        """The backend pipeline, created on first use."""
        return self._pipeline(None)

    def _pipeline(self, base: tuple[int, int, int] | None, entry: str = "main") -> Any:
        self._refuse()
        return self.device.pipeline(self.meta, self.code, base, entry)

    def _refuse(self) -> None:
        if self.refusal is not None:
            raise DeviceError(self.refusal)

    def warm(self) -> None:
        """Create the pipelines now, the coarse entry's too (a refused shader, or a kernel
        the device cannot run, raises DeviceError here)."""
        self._refuse()
        self.device.warm([(self.meta, self.code)])

    def _split_refusal(self) -> str | None:
        # Why a dispatch of this kernel past the device's per-axis limit cannot be split.
        if self._no_split is None:
            why = None
            if not self.device.splits_dispatches:
                why = f"the {self.device.backend} backend cannot split a dispatch"
            else:
                why = split_refusal_of_code(self.code)
            self._no_split = (why,)
        return self._no_split[0]

    def __call__(self, *positional: object, **args: object) -> CallResult:
        """Dispatch once; wait for the result unless inside `device.batch()`.

        Buffers are numpy arrays of the exact dtype, DeviceBuffers (or the backend's own
        buffers, see Device.wrap), or, for a "w"-only buffer, an int length or a shape
        (zero-filled); scalars are numbers in range for their dtype; `grid=` (an int or a
        tuple, invocations per axis) overrides the metadata's. A numpy array passed for a
        buffer the kernel writes ("w" or "rw") must be writable and receives the result
        (inside a batch, when the batch ends). Returns a CallResult.
        """
        if positional:
            raise DispatchError(
                f"Kernel {self.id!r} takes keyword arguments only "
                f"({', '.join(b.name + '=' for b in self.bindings)}); got "
                f"{len(positional)} positional"
            )
        grid = None
        if "grid" in args and not any(b.name == "grid" for b in self.bindings):
            grid = args.pop("grid")
        return self.dispatch(args, grid=grid)

    def dispatch(self, args: dict[str, object], grid: object = None) -> CallResult:
        """Like calling the kernel, with the arguments as a dict (and `grid=` even when a
        parameter is named grid)."""
        self._refuse()
        if not isinstance(args, dict):
            raise DispatchError(
                f"Kernel {self.id!r}: arguments must be a dict of name -> value, "
                f"got {type(args).__name__}"
            )
        last, key = self._last, _grid_key(grid)
        if last is None or key is _NO_CACHE or not _same_call(last, args, key):
            plan = plan_call(self.meta, args, grid, self.device, self._split_refusal())
            # Buffers weakly held (they stay collectable); never for arrays, whose contents
            # and so uploads can change between calls, for foreign buffers, or for grids
            # other than ints/tuples.
            cacheable = key is not _NO_CACHE and all(
                isinstance(v, (DeviceBuffer, int, float, tuple)) for v in args.values()
            )
            self._last = (
                (
                    {
                        k: weakref.ref(v) if isinstance(v, DeviceBuffer) else v
                        for k, v in args.items()
                    },
                    key,
                    plan._replace(buffers=tuple(a._replace(source=None) for a in plan.buffers)),
                )
                if cacheable
                else None
            )
        else:
            plan = last[2]
        return self.device.run(self, plan, args, CallResult()._of(self))


_NO_CACHE = object()


def _grid_key(grid: object) -> object:
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


def _same_call(
    last: tuple[dict[str, object], object, Plan], args: dict[str, object], key: object
) -> bool:
    # The same live DeviceBuffers, the same grid and scalars of the same type and value
    # (floats to the sign of zero) as `last`.
    before, last_key, _ = last
    if key != last_key or type(key) is not type(last_key) or len(args) != len(before):
        return False
    for name, value in args.items():
        old = before.get(name, _NO_CACHE)
        if isinstance(value, DeviceBuffer):
            if value.released or not isinstance(old, weakref.ref) or old() is not value:
                return False
        elif (
            type(value) not in (int, float)
            or type(old) is not type(value)
            or old != value
            or not isinstance(old, (int, float))
            or not isinstance(value, (int, float))
            or value == 0
            and math.copysign(1, value) != math.copysign(1, old)
        ):
            return False
    return True
