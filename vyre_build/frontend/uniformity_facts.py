"""Uniformity's facts: the causes of non-uniformity and their order, and what each IR
statement holds, found once for the walk (frontend/uniformity.py).

A `Cause` says why a value or control is not uniform; `worse` joins two (None, uniform,
is the bottom; a cause uniform within each subgroup, scope SUBGROUP, is below any other).
The tables say which builtins are uniform and which subgroup operations give a
subgroup-uniform result; `_subgroup_in` names the first subgroup or cooperative-matrix
operation of an expression or statement and `_coop_args` the operands that must be
subgroup-uniform. `statement_facts` finds, once a statement, the state keys its walk may
read and assign and whether it holds such an operation (`_Facts`).
"""

from __future__ import annotations

from dataclasses import dataclass

from vyre_build.frontend import ir

_UNIFORM_BUILTINS = ("workgroup_id", "num_workgroups", "subgroup_size", "num_subgroups")
SUBGROUP = "subgroup"  # Cause.scope of a value uniform within each subgroup only
# Subgroup ops whose result is the same in every invocation of the subgroup.
_SUBGROUP_UNIFORM = frozenset(
    (
        "add",
        "min",
        "max",
        "and",
        "or",
        "xor",
        "all",
        "any",
        "ballot",
        "broadcast",
        "broadcast_first",
    )
)
_SUBGROUP_NAMES = {
    "add": "subgroup_add",
    "min": "subgroup_min",
    "max": "subgroup_max",
    "and": "subgroup_and",
    "or": "subgroup_or",
    "xor": "subgroup_xor",
    "inclusive_add": "subgroup_inclusive_add",
    "exclusive_add": "subgroup_exclusive_add",
    "all": "subgroup_all",
    "any": "subgroup_any",
    "ballot": "subgroup_ballot",
    "broadcast": "subgroup_broadcast",
    "broadcast_first": "subgroup_broadcast_first",
    "shuffle": "subgroup_shuffle",
    "shuffle_xor": "subgroup_shuffle_xor",
    "shuffle_up": "subgroup_shuffle_up",
    "shuffle_down": "subgroup_shuffle_down",
    "elect": "subgroup_elect",
}


_COOP_NAMES = {
    ir.CoopFill: "coop_fill",
    ir.CoopMma: "coop_mma",
    ir.CoopStore: "coop_store",
}


def _subgroup_in(e) -> str | None:
    """The builtin name of the first subgroup operation (cooperative matrices included)
    inside expression or statement `e`, if any."""
    if isinstance(e, ir.Subgroup):
        return _SUBGROUP_NAMES[e.op]
    if isinstance(e, ir.CoopLoad):
        return "coop_load_" + ir.MATRICES[e.ty][0]
    if type(e) in _COOP_NAMES:
        return _COOP_NAMES[type(e)]
    if isinstance(e, tuple):
        for x in e:
            got = _subgroup_in(x)
            if got:
                return got
        return None
    for f in getattr(e, "__dataclass_fields__", ()):
        if f in ("then", "orelse", "body", "continuing"):
            continue
        got = _subgroup_in(getattr(e, f))
        if got:
            return got
    return None


def _coop_args(e):
    """(operation name, what, expression) for each operand of a cooperative-matrix op in
    expression or statement `e` that must be subgroup-uniform (not inside nested blocks)."""
    if isinstance(e, (ir.CoopLoad, ir.CoopStore)):
        name = _subgroup_in(e) if isinstance(e, ir.CoopLoad) else "coop_store"
        yield name, "offset", e.offset
        yield name, "stride", e.stride
    elif isinstance(e, ir.CoopFill):
        yield "coop_fill", "value", e.value
    if isinstance(e, tuple):
        for x in e:
            yield from _coop_args(x)
        return
    for f in getattr(e, "__dataclass_fields__", ()):
        if f not in ("then", "orelse", "body", "continuing"):
            yield from _coop_args(getattr(e, f))


@dataclass(frozen=True)
class Cause:
    """Why something is non-uniform: what it depends on, and the statement that branched.
    `scope` is SUBGROUP where it is uniform within each subgroup (not across the workgroup)."""

    why: str  # "global_id()", "a load from writable buffer 'y'", ...
    where: tuple | None = None  # (Source, ast node) of the branching if or loop
    via: str = ""  # "return", "break", "continue": an exit under that branch
    scope: str = "invocation"


def worse(a: Cause | None, b: Cause | None) -> Cause | None:
    """The less uniform of two causes (`a` where they are as uniform)."""
    if a is None or (a.scope == SUBGROUP and b is not None and b.scope != SUBGROUP):
        return b
    return a


_ABSENT = object()  # a key not in the state: read as None (uniform), but adding it is a change


_BLOCKS = ("then", "orelse", "body", "continuing")
_OPS = (ir.Subgroup, ir.CoopLoad, *_COOP_NAMES)


def _scan(e, reads: set, writes: set) -> bool:
    """Add the state keys that simple statement or expression `e` may read and may assign
    (a superset: a buffer load counts as reading its array); whether `e` holds a subgroup
    or cooperative-matrix operation."""
    if isinstance(e, tuple):
        found = False
        for x in e:
            found = _scan(x, reads, writes) or found
        return found
    found = isinstance(e, _OPS)
    if isinstance(e, ir.Var):
        reads.add(e.name)
    elif isinstance(e, ir.LoopVar):
        reads.add(("loop", e.name))
    elif isinstance(e, ir.Load):
        reads.add(("array", e.array))
    elif isinstance(e, ir.Assign):
        writes.add(e.var)
    elif isinstance(e, ir.Store):
        reads.add(("array", e.array))
        writes.add(("array", e.array))
    for f in getattr(e, "__dataclass_fields__", ()):
        v = getattr(e, f)
        if v is not None and not isinstance(v, (str, int, float)):
            found = _scan(v, reads, writes) or found
    return found


class _Facts:
    """What the walk of one statement needs to know about it, found once."""

    __slots__ = ("keys", "writes", "ops", "coop")

    def __init__(self, keys: tuple, writes: tuple, ops: bool, coop: tuple):
        self.keys = keys  # the state keys its walk (nested blocks included) may read or assign
        self.writes = writes  # those it may assign: its walk depends on and changes no other
        self.ops = ops  # its own expressions hold a subgroup or cooperative-matrix operation
        self.coop = coop  # tuple(_coop_args(statement))


def statement_facts(s, memo: dict) -> _Facts:
    """What the walk of statement `s` needs to know about it (nested blocks included),
    found once: `memo` maps id(statement) to its _Facts."""
    got = memo.get(id(s))
    if got is None:
        reads, writes = set(), set()
        if not isinstance(s, (ir.If, ir.For, ir.Loop)):
            ops = _scan(s, reads, writes)
        else:
            ops = False
            if isinstance(s, ir.For):
                writes.add(("loop", s.var))
            for f in s.__dataclass_fields__:
                if f not in _BLOCKS:
                    ops = _scan(getattr(s, f), reads, writes) or ops
                    continue
                for c in getattr(s, f):
                    sub = statement_facts(c, memo)
                    reads.update(sub.keys)
                    writes.update(sub.writes)
        coop = tuple(_coop_args(s)) if ops else ()
        got = memo[id(s)] = _Facts(tuple(reads | writes), tuple(writes), ops, coop)
    return got
