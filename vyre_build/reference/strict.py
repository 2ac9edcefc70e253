"""Strict mode of the reference machine: an operand outside an op's defined domain is an error.

The reference executes every op with the pinned semantics (docs/descriptor-conventions.md),
so it gives x / 0, an amount of 32, clz(0), a NaN cast or an access out of bounds their
pinned result. The legal form (`descriptor.legalize`) promises instead that no op reaching
an emitter ever gets such an operand: executing the legal form with the pinned rules
cannot show a guard that legalize wrongly dropped. `execute(..., strict=True)` checks the
promise: before each op below runs, the lanes that execute it (its mask) are checked, and
the first lane whose operand is outside the op's domain raises DispatchError naming the op,
the lane (its global invocation id) and the value:

- Div / Mod on i32 / u32: the divisor is not 0, and not -1 with an i32::MIN dividend;
- Shl / Shr on i32 / u32: the amount is below 32;
- Clz / Ctz on i32 / u32: the operand is not 0, or the lanes that give it 0 never use
  its result but through a Select that picks the other value for them: the legal form
  computes `select(x == 0, 32, clz(x))` (GLSL.std.450's FindUMsb / FindILsb are defined
  for 0, only not as clz / ctz), so such a lane's result is poison until a use shows it
  (the error then names the Clz / Ctz, the lane, the 0 and the op that used it);
- Cast f32 / f16 (a vector: each component) -> i32 / u32: the operand is a number with
  -2147483648.0 <= x <= 2147483520.0 (i32) or 0.0 <= x <= 4294967040.0 (u32);
- LoadGlobal / LoadShared / StoreGlobal / StoreShared / Atomic and vyre.atomic /
  vyre.atomic.load / vyre.atomic.store: the index is below the slot's length (a storage
  buffer's element count, a fixed array's element_count; a vector slot counts vectors).

`strict_step(m, op, step, reads)` wraps one compiled step (steps._compile calls it only
when the machine is strict): a machine that is not strict runs exactly the steps it
always ran.
"""

from __future__ import annotations

import numpy as np

from vyre_build.core.errors import DispatchError
from vyre_build.descriptor.types import TYPES
from vyre_build.descriptor.view import (
    Atomic,
    Binary,
    Cast,
    Load,
    OrderedAtomic,
    OrderedLoad,
    OrderedStore,
    Select,
    Store,
    Unary,
)

__all__ = ["strict_step", "clz_results", "CAST_RANGE"]

# The f32 values a cast to each integer type takes: [lo, hi] (hi: the largest f32 below 2^31
# and 2^32); NaN is outside both.
CAST_RANGE = {"i32": (-2147483648.0, 2147483520.0), "u32": (0.0, 4294967040.0)}
_INTEGER = ("i32", "u32")
_MEMORY = (Load, Store, Atomic, OrderedLoad, OrderedStore, OrderedAtomic)


def clz_results(view, types) -> frozenset:
    """The result ids of the Clz / Ctz ops on i32 / u32 of a DescriptorView."""
    return frozenset(
        op.result
        for op in view.ops
        if isinstance(op, Unary) and op.name in ("Clz", "Ctz") and types[op.a] in _INTEGER
    )


def strict_step(m, op, step, reads: tuple):
    """`step` (fn, result) of `op` on machine `m`, checking its operands first where `op`
    has a domain, and its `reads` (the SSA values it reads) where a Clz / Ctz of 0 gave
    them (module docstring); `step` itself where there is nothing to check."""
    fn, result = step
    checks = [c for c in (_check_of(m, op), _use_check(m, op, reads)) if c is not None]
    if isinstance(op, Unary) and result in m.clz_results:
        a = op.a

        def poison(mm, mask):  # lanes that give it 0: an error once a use shows the result
            mm.poison[result] = (mask & (mm.vals[a] == 0), op)

        checks.append(poison)
    if not checks:
        return step

    def checked(mm, mask):
        for check in checks:
            check(mm, mask)
        return fn(mm, mask)

    return checked, result


def _use_check(m, op, reads: tuple):
    """check(mm, mask) of the lanes of `mask` that read a Clz / Ctz result computed from 0
    (for a Select: those for which it selects it), or None if `op` reads none."""
    ids = [v for v in dict.fromkeys(reads) if v in m.clz_results]
    if not ids:
        return None
    select = isinstance(op, Select)

    def check(mm, mask):
        for v in ids:
            got = mm.poison.get(v)
            if got is None:
                continue
            bad = mask & got[0]
            if select:  # only the lanes whose condition picks the poisoned operand
                cond, yes, no = op.operands
                c = mm.vals[cond]
                bad = bad & ((c if v == yes else False) | (~c if v == no else False))
            if bad.any():
                lane = _first(bad)
                _fail(mm, got[1], lane, bad, "operand 0", f"; {_describe(mm, op)} uses its result")

    return check


def _check_of(m, op):  # noqa: C901 - one branch per op family
    """check(mm, mask) -> None (raises on a lane out of the domain), or None."""
    types = m.info.types
    if isinstance(op, Binary) and op.name in ("Div", "Mod", "Shl", "Shr"):
        t = types[op.operands[0]]
        if t not in _INTEGER:
            return None
        a, b = op.operands
        if op.name in ("Shl", "Shr"):
            return _lanes_check(
                op, b, lambda x: x.astype(np.int64) >= 32, lambda v: f"shift amount {v}"
            )
        signed = t == "i32"

        def divide(mm, mask):
            av, bv = mm.vals[a], mm.vals[b]
            bad = bv == 0
            if signed:
                bad = bad | ((av == np.int32(-(2**31))) & (bv == -1))
            bad = mask & bad
            if bad.any():
                lane = _first(bad)
                what = f"dividend {_at(av, lane)}, divisor {_at(bv, lane)}"
                _fail(mm, op, lane, bad, what)

        return divide
    if isinstance(op, Cast):
        src, dst = types[op.operands[0]], types[op.result]
        target = TYPES[dst].element
        if TYPES[src].kind != "float" or target not in _INTEGER:
            return None
        lo, hi = CAST_RANGE[target]

        def outside(x):
            x = np.asarray(x, np.float64)
            bad = np.isnan(x) | (x < lo) | (x > hi)
            return bad.any(axis=1) if bad.ndim > 1 else bad

        def cast_text(v):
            return f"operand {v} (the cast takes {lo!r} <= x <= {hi!r})"

        return _lanes_check(op, op.operands[0], outside, cast_text)
    if isinstance(op, _MEMORY):
        length = m.memory[op.slot][2]
        name = m.slots[op.slot].name

        def past(x):
            x = np.asarray(x)
            if x.dtype.kind == "i":
                return (x < 0) | (x.astype(np.int64) >= length)
            return x.astype(np.int64) >= length

        def index_text(v):
            return f"index {v} (slot {name!r} has {length} elements)"

        return _lanes_check(op, op.element, past, index_text)
    return None


def _lanes_check(op, operand: int, is_bad, what):
    """check(mm, mask) of the lanes' `operand`: `what(value)` words the first bad value."""

    def check(mm, mask):
        x = mm.vals[operand]
        bad = mask & is_bad(x)
        if bad.any():
            lane = _first(bad)
            _fail(mm, op, lane, bad, what(_at(x, lane)))

    return check


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def _at(x: np.ndarray, lane: int):
    """Lane `lane`'s value of `x` (a scalar, or a vector's components), printable."""
    v = np.asarray(x)[lane]
    return v.tolist() if v.ndim else v.item()


def _fail(mm, op, lane: int, bad: np.ndarray, what: str, use: str = ""):
    gid = tuple(int(axis[lane]) for axis in mm.builtins["GlobalInvocationId"])
    more = int(np.count_nonzero(bad)) - 1
    others = f" (and {more} more lane{'s' if more > 1 else ''})" if more else ""
    raise DispatchError(
        f"Kernel {mm.desc.id!r}: strict: {_describe(mm, op)} at global invocation id "
        f"{gid}{others}: {what} is outside the op's domain{use}"
    )


def _describe(mm, op) -> str:
    """The op as '#index Name(type) [%operands] -> %result'."""
    types = mm.info.types
    if isinstance(op, (Binary, Unary)):
        name = f"{op.name}({types[op.operands[0]]})"
    elif isinstance(op, Cast):
        name = f"Cast({types[op.operands[0]]} -> {types[op.result]})"
    elif isinstance(op, (Load, Store)):
        verb = "Load" if isinstance(op, Load) else "Store"
        name = f"{verb}{'Shared' if op.shared else 'Global'}"
    elif isinstance(op, Atomic):
        name = f"Atomic {op.name}"
    elif isinstance(op, OrderedAtomic):
        name = f"vyre.atomic {op.name}"
    elif isinstance(op, (OrderedLoad, OrderedStore)):
        name = "vyre.atomic.load" if isinstance(op, OrderedLoad) else "vyre.atomic.store"
    else:  # a use of a Clz / Ctz result: any op (an OpaqueExpr / OpaqueNode by its name)
        kind = op.kind
        name = (
            kind.args[1 if kind.name == "OpaqueExpr" else 0] if "Opaque" in kind.name else kind.name
        )
    ids = list(op.operands)
    if isinstance(op, _MEMORY):
        operands = [f"slot {ids[0]}"] + [f"%{i}" for i in ids[1:]]
    else:
        operands = [f"%{i}" for i in ids]
    result = f" -> %{op.result}" if op.result is not None else ""
    return f"op #{op.index} {name} [{', '.join(operands)}]{result}"
