# Types of the kernel language's names, for mypy, pyright and IDEs (kernel files are
# parsed by vyre_build, never run). tests/unit/test_frontend_lang.py holds this file to
# the frontend's table (vyre_build/frontend/names.py): every name there is typed here.
# Scalars are Python's own numbers, so literals, arithmetic and casts type-check.
import builtins
from typing import Any, Callable, Generic, Iterator, Literal, TypeVar, overload

from typing_extensions import Self
from typing_extensions import TypeVar as _DefaultTypeVar

__all__ = [
    "Buffer",
    "abs",
    "atomic_add",
    "atomic_and",
    "atomic_compare_exchange",
    "atomic_exchange",
    "atomic_load",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_store",
    "atomic_sub",
    "atomic_xor",
    "barrier",
    "bitcast",
    "bool",
    "bool_",
    "ceil",
    "clamp",
    "clz",
    "coop_fill",
    "coop_load_a",
    "coop_load_acc",
    "coop_load_b",
    "coop_mma",
    "coop_store",
    "cos",
    "ctz",
    "exp",
    "exp2",
    "fence",
    "f16",
    "f32",
    "floor",
    "fma",
    "global_id",
    "i32",
    "isfinite",
    "isinf",
    "isnan",
    "kernel",
    "len",
    "local_array",
    "local_id",
    "log",
    "log2",
    "max",
    "min",
    "num_subgroups",
    "num_workgroups",
    "popcount",
    "r",
    "range",
    "reverse_bits",
    "rotl",
    "rotr",
    "round",
    "rsqrt",
    "rw",
    "select",
    "shared",
    "sign",
    "sin",
    "sqrt",
    "storage_barrier",
    "subgroup_add",
    "subgroup_all",
    "subgroup_and",
    "subgroup_any",
    "subgroup_ballot",
    "subgroup_broadcast",
    "subgroup_broadcast_first",
    "subgroup_elect",
    "subgroup_exclusive_add",
    "subgroup_id",
    "subgroup_inclusive_add",
    "subgroup_invocation_id",
    "subgroup_max",
    "subgroup_min",
    "subgroup_or",
    "subgroup_shuffle",
    "subgroup_shuffle_down",
    "subgroup_shuffle_up",
    "subgroup_shuffle_xor",
    "subgroup_size",
    "subgroup_xor",
    "tan",
    "tanh",
    "trunc",
    "u32",
    "vec2f",
    "vec2h",
    "vec2i",
    "vec2u",
    "vec4f",
    "vec4h",
    "vec4i",
    "vec4u",
    "w",
    "workgroup_id",
    "workgroup_size",
]

i32 = builtins.int
"""32-bit signed integer (arithmetic wraps)."""
u32 = builtins.int
"""32-bit unsigned integer (arithmetic wraps)."""
f32 = builtins.float
"""32-bit float."""
f16 = builtins.float
"""16-bit float (needs the device's shader-f16 feature)."""
bool = builtins.bool
"""The boolean type (WGSL bool)."""
bool_ = builtins.bool
"""The boolean type, under a name that does not shadow Python's bool."""

# Access modes: Buffer[T, "rw"] names these classes (a string in an annotation is a
# forward reference), so import the ones you use (or import *).
class r:
    """Access mode: read-only buffer (the default)."""

class w:
    """Access mode: write-only buffer."""

class rw:
    """Access mode: read-write buffer."""

_T = TypeVar("_T")
_A = _DefaultTypeVar("_A", default=r)
_Fn = TypeVar("_Fn", bound=Callable[..., Any])

class Buffer(Generic[_T, _A]):
    """A storage buffer of element type T and access r (default), w or rw: Buffer[f32, "rw"]."""
    def __getitem__(self, index: builtins.int) -> _T: ...
    def __setitem__(self, index: builtins.int, value: _T) -> None: ...
    def __len__(self) -> builtins.int: ...

_Scalar = builtins.int | builtins.float

class _FloatVec:
    def __init__(self, *components: _Scalar | _Vector) -> None: ...
    def __add__(self, other: Self | _Scalar) -> Self: ...
    def __radd__(self, other: _Scalar) -> Self: ...
    def __sub__(self, other: Self | _Scalar) -> Self: ...
    def __rsub__(self, other: _Scalar) -> Self: ...
    def __mul__(self, other: Self | _Scalar) -> Self: ...
    def __rmul__(self, other: _Scalar) -> Self: ...
    def __truediv__(self, other: Self | _Scalar) -> Self: ...
    def __rtruediv__(self, other: _Scalar) -> Self: ...
    def __neg__(self) -> Self: ...

class _IntVec:
    def __init__(self, *components: _Scalar | _Vector) -> None: ...
    def __add__(self, other: Self | builtins.int) -> Self: ...
    def __radd__(self, other: builtins.int) -> Self: ...
    def __sub__(self, other: Self | builtins.int) -> Self: ...
    def __rsub__(self, other: builtins.int) -> Self: ...
    def __mul__(self, other: Self | builtins.int) -> Self: ...
    def __rmul__(self, other: builtins.int) -> Self: ...
    def __and__(self, other: Self | builtins.int) -> Self: ...
    def __rand__(self, other: builtins.int) -> Self: ...
    def __or__(self, other: Self | builtins.int) -> Self: ...
    def __ror__(self, other: builtins.int) -> Self: ...
    def __xor__(self, other: Self | builtins.int) -> Self: ...
    def __rxor__(self, other: builtins.int) -> Self: ...
    def __neg__(self) -> Self: ...
    def __invert__(self) -> Self: ...

class vec2f(_FloatVec):
    """A vector of 2 f32: vec2f(x, y); components .x, .y."""

    x: builtins.float
    y: builtins.float

class vec4f(_FloatVec):
    """A vector of 4 f32: vec4f(x, y, z, w) or vec4f(v); components .x .. .w."""

    x: builtins.float
    y: builtins.float
    z: builtins.float
    w: builtins.float

class vec2h(_FloatVec):
    """A vector of 2 f16: vec2h(x, y); components .x, .y."""

    x: builtins.float
    y: builtins.float

class vec4h(_FloatVec):
    """A vector of 4 f16: vec4h(x, y, z, w) or vec4h(v); components .x .. .w."""

    x: builtins.float
    y: builtins.float
    z: builtins.float
    w: builtins.float

class vec2i(_IntVec):
    """A vector of 2 i32: vec2i(x, y); components .x, .y."""

    x: builtins.int
    y: builtins.int

class vec4i(_IntVec):
    """A vector of 4 i32: vec4i(x, y, z, w) or vec4i(v); components .x .. .w."""

    x: builtins.int
    y: builtins.int
    z: builtins.int
    w: builtins.int

class vec2u(_IntVec):
    """A vector of 2 u32: vec2u(x, y); components .x, .y."""

    x: builtins.int
    y: builtins.int

class vec4u(_IntVec):
    """A vector of 4 u32: vec4u(x, y, z, w) or vec4u(v); components .x .. .w."""

    x: builtins.int
    y: builtins.int
    z: builtins.int
    w: builtins.int

_Vector = vec2f | vec4f | vec2h | vec4h | vec2i | vec4i | vec2u | vec4u
_F = TypeVar("_F", builtins.float, vec2f, vec4f, vec2h, vec4h)
_N = TypeVar(
    "_N", builtins.int, builtins.float, vec2f, vec4f, vec2h, vec4h, vec2i, vec4i, vec2u, vec4u
)

@overload
def kernel(fn: _Fn, /) -> _Fn:
    """Mark a function as a GPU kernel: @kernel or @kernel(workgroup_size=..., grid=..., variants=...)."""

@overload
def kernel(
    *,
    workgroup_size: builtins.int | tuple[builtins.int, ...] = 64,
    grid: builtins.int | builtins.str | tuple[builtins.int | builtins.str, ...] | None = None,
    variants: dict[builtins.str, dict[builtins.str, Any]] | None = None,
    any_length: builtins.str | tuple[builtins.str, ...] | None = None,
) -> Callable[[_Fn], _Fn]: ...

class _Ids:
    x: builtins.int
    y: builtins.int
    z: builtins.int

def global_id() -> _Ids:
    """This invocation's index in the whole grid (.x, .y, .z)."""

def local_id() -> _Ids:
    """This invocation's index within its workgroup (.x, .y, .z)."""

def workgroup_id() -> _Ids:
    """This invocation's workgroup's index in the grid (.x, .y, .z)."""

def num_workgroups() -> _Ids:
    """The number of workgroups in the grid (.x, .y, .z)."""

def workgroup_size() -> _Ids:
    """The workgroup's size (.x, .y, .z), as @kernel(workgroup_size=...) sets it."""

def shared(dtype: type[_T], count: builtins.int, /) -> Buffer[_T, rw]:
    """A workgroup-shared array of count elements of dtype."""

def local_array(dtype: type[_T], count: builtins.int, /) -> Buffer[_T, rw]:
    """A private array of count elements of dtype, per invocation."""

def barrier() -> None:
    """Workgroup barrier: every invocation waits here, shared memory writes become visible."""

def storage_barrier() -> None:
    """Storage barrier: storage buffer writes of the workgroup become visible to it."""

def sqrt(x: _F, /) -> _F:
    """The square root of x, per component."""

def exp(x: _F, /) -> _F:
    """e raised to x, per component."""

def exp2(x: _F, /) -> _F:
    """2 raised to x, per component."""

def log(x: _F, /) -> _F:
    """The natural logarithm of x, per component."""

def log2(x: _F, /) -> _F:
    """The base-2 logarithm of x, per component."""

def sin(x: _F, /) -> _F:
    """The sine of x (radians), per component."""

def cos(x: _F, /) -> _F:
    """The cosine of x (radians), per component."""

def tan(x: _F, /) -> _F:
    """The tangent of x (radians), per component."""

def tanh(x: _F, /) -> _F:
    """The hyperbolic tangent of x, per component."""

def rsqrt(x: _F, /) -> _F:
    """1 / sqrt(x), per component."""

def floor(x: _F, /) -> _F:
    """The largest integer value not greater than x, per component."""

def ceil(x: _F, /) -> _F:
    """The smallest integer value not less than x, per component."""

def round(x: _F, /) -> _F:
    """x rounded to the nearest integer value, ties to even, per component."""

def trunc(x: _F, /) -> _F:
    """x with its fraction dropped (toward zero), per component."""

def sign(x: _F, /) -> _F:
    """-1, 0 or 1 by the sign of x, per component."""

def fma(a: _F, b: _F | _Scalar, c: _F | _Scalar, /) -> _F:
    """a * b + c with one rounding, per component."""

def isnan(x: builtins.float, /) -> builtins.bool:
    """True when x is NaN."""

def isinf(x: builtins.float, /) -> builtins.bool:
    """True when x is +inf or -inf."""

def isfinite(x: builtins.float, /) -> builtins.bool:
    """True when x is neither infinite nor NaN."""

def abs(x: _N, /) -> _N:
    """The absolute value, per component of a vector."""

def min(a: _N, b: _N | _Scalar, /) -> _N:
    """The smaller of a and b, per component (NaN is not propagated)."""

def max(a: _N, b: _N | _Scalar, /) -> _N:
    """The larger of a and b, per component (NaN is not propagated)."""

def clamp(x: _N, lo: _N | _Scalar, hi: _N | _Scalar, /) -> _N:
    """min(max(x, lo), hi), per component."""

def select(cond: builtins.bool, if_true: _N, if_false: _N | _Scalar, /) -> _N:
    """if_true when cond, else if_false (both evaluated; no branch)."""

def popcount(x: builtins.int, /) -> builtins.int:
    """The number of set bits of a 32-bit integer."""

def clz(x: builtins.int, /) -> builtins.int:
    """The number of leading zero bits of a 32-bit integer."""

def ctz(x: builtins.int, /) -> builtins.int:
    """The number of trailing zero bits of a 32-bit integer."""

def reverse_bits(x: builtins.int, /) -> builtins.int:
    """A 32-bit integer with its bit order reversed."""

def rotl(x: builtins.int, n: builtins.int, /) -> builtins.int:
    """A 32-bit integer rotated left by n bits."""

def rotr(x: builtins.int, n: builtins.int, /) -> builtins.int:
    """A 32-bit integer rotated right by n bits."""

def len(buf: Buffer[Any, Any], /) -> builtins.int:
    """The element count of a buffer."""

def bitcast(dtype: type[_T], x: _Scalar, /) -> _T:
    """The bits of x reinterpreted as dtype (same size): bitcast(u32, 1.0) == 0x3F800000."""

@overload
def range(stop: builtins.int, /) -> Iterator[builtins.int]:
    """A counted loop: range(stop) or range(start, stop, step) with integer bounds."""

@overload
def range(
    start: builtins.int, stop: builtins.int, step: builtins.int = 1, /
) -> Iterator[builtins.int]: ...

# Memory scopes and orders: an array's own scope (device for a buffer, workgroup for a
# shared array) and "relaxed" unless given; an order other than relaxed, or a fence, makes
# the kernel SPIR-V only (WGSL's atomics are relaxed).
_Scope = Literal["device", "workgroup"]
_Order = Literal["relaxed", "acquire", "release", "acq_rel"]

def atomic_add(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically add value to buf[index]; returns the old value."""

def atomic_sub(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically subtract value from buf[index]; returns the old value."""

def atomic_or(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically OR value into buf[index]; returns the old value."""

def atomic_and(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically AND value into buf[index]; returns the old value."""

def atomic_xor(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically XOR value into buf[index]; returns the old value."""

def atomic_min(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically set buf[index] to the smaller of it and value; returns the old value."""

def atomic_max(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically set buf[index] to the larger of it and value; returns the old value."""

def atomic_exchange(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically set buf[index] to value; returns the old value."""

def atomic_compare_exchange(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    expected: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: _Order = "relaxed",
) -> builtins.int:
    """Atomically set buf[index] to value if it equals expected; returns the old value."""

def atomic_load(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: Literal["relaxed", "acquire"] = "relaxed",
) -> builtins.int:
    """Atomically read buf[index]; order="acquire" sees what a release before it published."""

def atomic_store(
    buf: Buffer[builtins.int, Any],
    index: builtins.int,
    value: builtins.int,
    /,
    *,
    scope: _Scope = "device",
    order: Literal["relaxed", "release"] = "relaxed",
) -> None:
    """Atomically write value to buf[index]; order="release" publishes the writes before it."""

def fence(
    *,
    scope: _Scope = "device",
    order: Literal["acquire", "release", "acq_rel"] = "acq_rel",
) -> None:
    """A memory barrier without an execution barrier (SPIR-V OpMemoryBarrier)."""

# Subgroups: a value from every active invocation of the subgroup (32 lanes on NVIDIA, 8 on
# lavapipe: never assume a size). Reductions and scans return the kind they take.
def subgroup_size() -> builtins.int:
    """The number of lanes of a subgroup (32 on NVIDIA, 8 on lavapipe: never assume it)."""

def subgroup_invocation_id() -> builtins.int:
    """This invocation's lane in its subgroup (0 .. subgroup_size() - 1)."""

def subgroup_id() -> builtins.int:
    """This invocation's subgroup in its workgroup (0 .. num_subgroups() - 1)."""

def num_subgroups() -> builtins.int:
    """The number of subgroups of a workgroup (the last may have fewer lanes)."""

def subgroup_add(v: _N, /) -> _N:
    """The sum of v over the active invocations of the subgroup."""

def subgroup_min(v: _N, /) -> _N:
    """The minimum of v over the active invocations of the subgroup."""

def subgroup_max(v: _N, /) -> _N:
    """The maximum of v over the active invocations of the subgroup."""

def subgroup_and(v: _N, /) -> _N:
    """The bitwise AND of v over the active invocations of the subgroup."""

def subgroup_or(v: _N, /) -> _N:
    """The bitwise OR of v over the active invocations of the subgroup."""

def subgroup_xor(v: _N, /) -> _N:
    """The bitwise XOR of v over the active invocations of the subgroup."""

def subgroup_inclusive_add(v: _N, /) -> _N:
    """The sum of v over this and the lower active invocations of the subgroup."""

def subgroup_exclusive_add(v: _N, /) -> _N:
    """The sum of v over the lower active invocations of the subgroup (0 in the first)."""

def subgroup_all(cond: builtins.bool, /) -> builtins.bool:
    """True when cond holds in every active invocation of the subgroup."""

def subgroup_any(cond: builtins.bool, /) -> builtins.bool:
    """True when cond holds in any active invocation of the subgroup."""

def subgroup_ballot(cond: builtins.bool, /) -> vec4u:
    """A bit mask (vec4u) of the active invocations where cond holds."""

def subgroup_broadcast(v: _N, lane: builtins.int, /) -> _N:
    """v of invocation lane (a constant), in every invocation of the subgroup."""

def subgroup_broadcast_first(v: _N, /) -> _N:
    """v of the lowest active invocation, in every invocation of the subgroup."""

def subgroup_shuffle(v: _N, lane: builtins.int, /) -> _N:
    """v of invocation lane of the subgroup."""

def subgroup_shuffle_xor(v: _N, mask: builtins.int, /) -> _N:
    """v of the invocation whose lane is this lane XOR mask."""

def subgroup_shuffle_up(v: _N, delta: builtins.int, /) -> _N:
    """v of the invocation delta lanes below this one in the subgroup."""

def subgroup_shuffle_down(v: _N, delta: builtins.int, /) -> _N:
    """v of the invocation delta lanes above this one in the subgroup."""

def subgroup_elect() -> builtins.bool:
    """True in exactly one (the lowest) active invocation of the subgroup."""

# Cooperative matrices (SPIR-V/Vulkan only): fragments held by the whole subgroup, loaded
# row-major (element (r, c) at offset + r * stride + c), rows and cols 8, 16 or 32 as
# constants; A and B of f16, accumulators of f16 or f32. c = coop_mma(a, b, c) is a x b + c.
class _MatrixA: ...
class _MatrixB: ...
class _MatrixAcc: ...

def coop_load_a(
    buf: Buffer[builtins.float, Any],
    offset: builtins.int,
    stride: builtins.int,
    rows: builtins.int,
    cols: builtins.int,
    /,
) -> _MatrixA:
    """Load the A fragment (rows x cols, row-major at offset, stride) of a cooperative matmul."""

def coop_load_b(
    buf: Buffer[builtins.float, Any],
    offset: builtins.int,
    stride: builtins.int,
    rows: builtins.int,
    cols: builtins.int,
    /,
) -> _MatrixB:
    """Load the B fragment (rows x cols, row-major at offset, stride) of a cooperative matmul."""

def coop_load_acc(
    buf: Buffer[builtins.float, Any],
    offset: builtins.int,
    stride: builtins.int,
    rows: builtins.int,
    cols: builtins.int,
    /,
) -> _MatrixAcc:
    """Load an accumulator fragment (rows x cols, row-major at offset, stride)."""

def coop_fill(
    dtype: type[builtins.float], rows: builtins.int, cols: builtins.int, value: builtins.float, /
) -> _MatrixAcc:
    """A cooperative-matrix accumulator of rows x cols, every element value."""

def coop_mma(a: _MatrixA, b: _MatrixB, c: _MatrixAcc, /) -> _MatrixAcc:
    """The cooperative matrix product a x b + c (tensor cores; Vulkan and cpu)."""

def coop_store(
    m: _MatrixA | _MatrixB | _MatrixAcc,
    buf: Buffer[builtins.float, Any],
    offset: builtins.int,
    stride: builtins.int,
    /,
) -> None:
    """Store a cooperative-matrix fragment row-major into buf at offset with stride."""
