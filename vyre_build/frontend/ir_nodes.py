"""The nodes of the typed kernel IR: expressions and statements, the trees a `Program`
(ir.py) is made of.

Each node is a frozen dataclass, so equal trees compare equal; an expression's `ty` is a
type name of `vyre_build.descriptor.types`. A debug `site` (of loads, stores and atomics) is
left out of equality, and only a debug build's frontend sets it or makes `DebugPrint` /
`DebugAssert`. The frontend names every node through `ir` (ir.py re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass, field


# --- expressions -------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """A source position for debug reports: `file` relative to the compiled kernel file's
    folder (as the action key names inputs), 1-based line and column."""

    file: str
    line: int
    col: int


def _site():
    return field(default=None, compare=False)  # debug builds only; never part of equality


@dataclass(frozen=True)
class Const:
    ty: str
    value: int | float | bool


@dataclass(frozen=True)
class Var:
    """Read of a local variable (SSA value or scratch slot: lowering decides)."""

    name: str
    ty: str


@dataclass(frozen=True)
class Param:
    """Read of a scalar kernel parameter (from the uniform block)."""

    name: str
    ty: str


@dataclass(frozen=True)
class LoopVar:
    """The index of the enclosing `for` loop with this (unique) name."""

    name: str
    ty: str


@dataclass(frozen=True)
class Load:
    array: str  # buffer, shared or local array name
    index: object  # u32 expression
    ty: str
    site: Site | None = _site()  # a debug build's bounds check reports here


@dataclass(frozen=True)
class Length:
    array: str
    ty: str = "u32"


@dataclass(frozen=True)
class Builtin:
    """global_id / local_id / workgroup_id / num_workgroups, one axis (u32)."""

    kind: str
    axis: int
    ty: str = "u32"


@dataclass(frozen=True)
class Binary:
    op: str  # descriptor BinOp name (Add, Lt, Shl, ...)
    a: object
    b: object
    ty: str


@dataclass(frozen=True)
class Unary:
    op: str  # descriptor UnOp name (Negate, Sqrt, ...)
    a: object
    ty: str


@dataclass(frozen=True)
class Fma:
    a: object
    b: object
    c: object
    ty: str = "f32"


@dataclass(frozen=True)
class Select:
    cond: object
    if_true: object
    if_false: object
    ty: str


@dataclass(frozen=True)
class Cast:
    a: object
    ty: str


@dataclass(frozen=True)
class Bitcast:
    a: object
    ty: str


@dataclass(frozen=True)
class Splat:
    """A vector with every component equal to one scalar."""

    a: object
    ty: str


@dataclass(frozen=True)
class Construct:
    """A vector from one scalar per component."""

    args: tuple
    ty: str


@dataclass(frozen=True)
class Extract:
    """One component of a vector."""

    a: object
    index: int
    ty: str


@dataclass(frozen=True)
class Atomic:
    op: str  # descriptor AtomicOp name
    array: str
    index: object
    args: tuple  # (value,) or (expected, value); () for "Load"; (value,) for "Store"
    ty: str
    site: Site | None = _site()
    # Memory scope and order (frontend/memory_order.py): scope None is the array's own
    # (device for a buffer, workgroup for a shared array); op "Load" / "Store" are
    # atomic_load / atomic_store (a Store is only ever the expression of an Eval).
    scope: str | None = None
    order: str = "relaxed"


@dataclass(frozen=True)
class Subgroup:
    """A subgroup operation (descriptor op-table family "Subgroup"): `op` is its name
    ("add", "ballot", "shuffle_xor", ...), `args` the value and, for lane ops, the lane."""

    op: str
    args: tuple
    ty: str


@dataclass(frozen=True)
class CoopLoad:
    """A cooperative-matrix fragment of type `ty` ("matrix_a.f16.16x16") read row-major from
    `array` at element `offset`, rows `stride` elements apart (descriptor.matrices)."""

    array: str
    offset: object
    stride: object
    ty: str


@dataclass(frozen=True)
class CoopFill:
    """A cooperative matrix of type `ty` with every element `value`."""

    value: object
    ty: str


@dataclass(frozen=True)
class CoopMma:
    """a x b + c on cooperative matrices (A is MxK, B KxN, C and the result MxN)."""

    a: object
    b: object
    c: object
    ty: str


# --- statements --------------------------------------------------------------------


@dataclass(frozen=True)
class CoopStore:
    """Store cooperative matrix `value` row-major into `array` at `offset`, rows `stride` apart."""

    array: str
    offset: object
    stride: object
    value: object


@dataclass(frozen=True)
class Assign:
    var: str
    value: object


@dataclass(frozen=True)
class Store:
    array: str
    index: object
    value: object
    site: Site | None = _site()


@dataclass(frozen=True)
class DebugPrint:
    """`print(...)` in a debug build: `parts` are str (literal text) or scalar expressions
    (i32/u32/f32/bool), printed space-separated with the invocation's global id."""

    parts: tuple
    site: Site


@dataclass(frozen=True)
class DebugAssert:
    """`assert cond, "message"` in a debug build: reported when `cond` is false, with
    `values` ((source text, scalar expression), ...) as they were."""

    cond: object
    text: str
    message: str | None
    values: tuple
    site: Site


@dataclass(frozen=True)
class If:
    cond: object
    then: tuple
    orelse: tuple = ()


@dataclass(frozen=True)
class For:
    """`for var in range(lo, hi, step)`; step is a nonzero constant int."""

    var: str
    lo: object
    hi: object
    step: int
    body: tuple


@dataclass(frozen=True)
class Loop:
    """Loop until break/return; `continuing` runs before each next iteration."""

    body: tuple
    continuing: tuple = ()


@dataclass(frozen=True)
class Break:
    pass


@dataclass(frozen=True)
class Continue:
    pass


@dataclass(frozen=True)
class Return:
    pass


@dataclass(frozen=True)
class Barrier:
    storage: bool = False


@dataclass(frozen=True)
class Fence:
    """`fence(scope=..., order=...)`: a memory barrier without an execution barrier."""

    scope: str
    order: str


@dataclass(frozen=True)
class Eval:
    """An expression evaluated for its effect (an atomic)."""

    expr: object
