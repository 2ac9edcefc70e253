"""Uniformity: barriers only where every invocation of the workgroup reaches them, and
subgroup operations only where every invocation of the subgroup does.

Follows WGSL's uniformity analysis on the checked IR (helpers inlined). A value is
non-uniform when it depends on an invocation id (`global_id()`, `local_id()`), on a load
from a writable buffer or a shared array, on an atomic's result, or on a local assigned
such a value or assigned under non-uniform control. Control is non-uniform inside an `if`
or loop whose condition or bounds are non-uniform, after a `return` under such control
(to the end of the kernel), and after a `break` or `continue` under it (to the end of the
loop body, and in every later iteration). A loop is left together: after it, control is
as before it. Scalars, constants, `len(buf)`, `workgroup_id()` and `num_workgroups()`
are uniform, and so is a load from a read-only buffer at a uniform index.

Two levels: a value is *subgroup-uniform* when it is the same in every invocation of a
subgroup but may differ between subgroups: `subgroup_id()`, the results of the subgroup
reductions, votes and broadcasts (add, min, max, and, or, xor, all, any, ballot,
broadcast, broadcast_first), and what is computed only from those and uniform values
(`num_subgroups()` is uniform). Control under a condition, loop bound or exit that is
subgroup-uniform is subgroup-uniform: every invocation of a subgroup goes the same way.

The workgroup rule: `barrier()` and `storage_barrier()` need uniform control. The subgroup
rule: subgroup operations and cooperative-matrix operations need subgroup-uniform control,
and a cooperative matrix's offset, stride and fill value must be subgroup-uniform (the
subgroup loads, stores or fills one matrix together). A breach is an error naming the
operation (file:line:col, caret), the rule, and the branch or value that breaks it.

Cost: a loop is walked in passes until a pass changes nothing (at most 16). Each statement's
state keys (what its walk may read and assign) are found once, so an `if` saves and joins
only the keys its branches assign, and a loop entered again with the same values at its
keys, control and early-return cause (an enclosing loop's next pass, mostly) takes what it
left then without a walk: nested loops cost about the sum of their passes, not the product.

This module holds the walk and the errors it raises; the causes and their order, the
tables of uniform builtins and subgroup operations, and each statement's facts (its state
keys, its operations) are uniformity_facts.py's.
"""

from __future__ import annotations

import ast

from vyre_build.frontend import ir
from vyre_build.frontend.uniformity_facts import (
    _ABSENT,
    _SUBGROUP_NAMES,
    _SUBGROUP_UNIFORM,
    _UNIFORM_BUILTINS,
    SUBGROUP,
    Cause,
    _Facts,
    _subgroup_in,
    statement_facts,
    worse,
)

__all__ = ["check_uniformity"]

_SUBGROUP_FIX = (
    "scalars, constants, len(buf), workgroup_id(), num_workgroups(), subgroup_id(), "
    "num_subgroups() and the results of subgroup reductions and broadcasts are uniform within "
    "a subgroup"
)


class _Loop:
    __slots__ = ("cause",)

    def __init__(self):
        self.cause: Cause | None = None  # a break/continue under non-uniform control


class _Analysis:
    def __init__(self, prog: ir.Program, where: dict):
        self.prog, self.where = prog, where
        self.buffers = {p.name: p for p in prog.params if isinstance(p, ir.BufferParam)}
        self.arrays = {a.name: a for a in prog.arrays}
        self.returned: Cause | None = None  # a return under non-uniform control, once seen
        self.memo: dict = {}  # id(statement) -> its _Facts
        # id(loop) -> [((values at its keys, control, returned) on entry, what it left)]
        self.seen: dict = {}

    def facts(self, s) -> _Facts:
        return statement_facts(s, self.memo)

    # --- values ----------------------------------------------------------------------
    def value(self, e, state: dict) -> Cause | None:  # noqa: C901 - one branch per node
        if isinstance(e, (ir.Const, ir.Param, ir.Length)):
            return None
        if isinstance(e, ir.Builtin):
            if e.kind == "subgroup_id":
                return Cause("subgroup_id()", scope=SUBGROUP)
            return None if e.kind in _UNIFORM_BUILTINS else Cause(f"{e.kind}()")
        if isinstance(e, ir.Var):
            return state.get(e.name)
        if isinstance(e, ir.LoopVar):
            return state.get(("loop", e.name))
        if isinstance(e, ir.Load):
            if e.array in self.buffers:
                b = self.buffers[e.array]
                if b.access != "r":
                    return Cause(f"a load from writable buffer '{e.array}'")
                return self.value(e.index, state)
            a = self.arrays.get(e.array)
            if a is not None and a.space == "shared":
                return Cause(f"a load from shared array '{e.array}'")
            return worse(state.get(("array", e.array)), self.value(e.index, state))
        if isinstance(e, ir.Atomic):
            return Cause(f"the result of {e.op.lower()} on '{e.array}'")
        if isinstance(e, ir.Subgroup):  # a reduction: the same within a subgroup, no more
            scope = SUBGROUP if e.op in _SUBGROUP_UNIFORM else "invocation"
            return Cause(f"{_SUBGROUP_NAMES[e.op]}()", scope=scope)
        got = None
        for f in ("a", "b", "c", "cond", "if_true", "if_false", "index"):
            sub = getattr(e, f, None)
            if sub is not None and not isinstance(sub, (str, int, float, bool)):
                got = worse(got, self.value(sub, state))
                if got is not None and got.scope != SUBGROUP:
                    return got
        for sub in getattr(e, "args", ()) or ():
            got = worse(got, self.value(sub, state))
            if got is not None and got.scope != SUBGROUP:
                return got
        return got

    # --- statements --------------------------------------------------------------------
    def block(self, stmts, state: dict, control: Cause | None, loops: list) -> Cause | None:
        """Walk `stmts` under `control`; returns the control the block ends with."""
        for s in stmts:
            if self.returned is not None:
                control = worse(control, self.returned)
            if loops and loops[-1].cause is not None:
                control = worse(control, loops[-1].cause)
            control = self.stmt(s, state, control, loops)
        return control

    def branch_cause(self, node, what: Cause) -> Cause:
        got = self.where.get(id(node))
        return Cause(what.why, got[:2] if got else None, scope=what.scope)

    def stmt(self, s, state, control, loops):  # noqa: C901 - one branch per statement
        facts = self.facts(s)
        if facts.ops and control is not None and control.scope != SUBGROUP:
            name = _subgroup_in(s)
            if name is not None:
                raise self.barrier_error(s, control, f"{name}()")
        for name, what, arg in facts.coop:
            got = self.value(arg, state)
            if got is not None and got.scope != SUBGROUP:
                raise self.operand_error(s, f"{name}()", what, got)
        if isinstance(s, ir.Assign):
            got = worse(self.value(s.value, state), control)
            state[s.var] = got
        elif isinstance(s, ir.Store):
            if s.array not in self.buffers and s.array in self.arrays:
                if self.arrays[s.array].space == "local":
                    key = ("array", s.array)
                    got = worse(state.get(key), self.value(s.value, state))
                    state[key] = worse(worse(got, self.value(s.index, state)), control)
        elif isinstance(s, ir.Barrier):
            # States only grow less uniform, so an error in a fixpoint pass is final.
            if control is not None:
                raise self.barrier_error(s, control)
        elif isinstance(s, ir.If):
            cond = self.value(s.cond, state)
            inner = worse(control, self.branch_cause(s, cond) if cond is not None else None)
            # (an assignment under non-uniform control is non-uniform: see Assign)
            # Each branch is walked in `state` itself, from the same start: only the keys
            # they may assign are saved, put back between them and joined after.
            writes = facts.writes
            start = [state.get(k, _ABSENT) for k in writes]
            self.block(s.then, state, inner, loops)
            then = [state.get(k, _ABSENT) for k in writes]
            for k, v in zip(writes, start):
                if v is _ABSENT:
                    state.pop(k, None)
                else:
                    state[k] = v
            self.block(s.orelse, state, inner, loops)
            for k, t in zip(writes, then):
                e = state.get(k, _ABSENT)
                if t is not _ABSENT or e is not _ABSENT:
                    state[k] = worse(None if t is _ABSENT else t, None if e is _ABSENT else e)
        elif isinstance(s, ir.For):
            bounds = worse(self.value(s.lo, state), self.value(s.hi, state))
            inner = worse(control, self.branch_cause(s, bounds) if bounds is not None else None)
            self.loop(s, s.body, (), state, inner, loops, loop_var=s.var)
        elif isinstance(s, ir.Loop):
            self.loop(s, s.body, s.continuing, state, control, loops)
        elif isinstance(s, ir.Return):
            if control is not None and worse(self.returned, control) is not self.returned:
                via = control.via or "return"
                self.returned = Cause(control.why, control.where, via, control.scope)
        elif isinstance(s, (ir.Break, ir.Continue)):
            if loops and control is not None and worse(loops[-1].cause, control) is control:
                if control is not loops[-1].cause:  # (under the cause it recorded: no news)
                    via = control.via or type(s).__name__.lower()
                    loops[-1].cause = Cause(control.why, control.where, via, control.scope)
        return control

    def loop(self, node, body, continuing, state, control, loops, loop_var=None):
        """Walk a loop's passes to a fixpoint: each pass sees what earlier ones assigned."""
        facts = self.facts(node)
        keys, writes = facts.keys, facts.writes
        # A loop's walk depends on the keys it may read or assign, `control` and
        # `self.returned` only (`loops` below it is its own), so entered again as before
        # (an enclosing loop's next pass, most often) it leaves what it left then.
        entry = ([state.get(k, _ABSENT) for k in keys], control, self.returned)
        seen = self.seen.setdefault(id(node), [])
        for was, left, returned in seen:
            if was == entry:
                state.update(left)
                if returned is not was[2]:  # (else keep the equal cause held now)
                    self.returned = returned
                return
        info = _Loop()
        single = bool(body) and isinstance(body[-1], ir.Break)  # a helper's wrapper: one pass
        for _ in range(16):  # the pass limit
            before = [state.get(k, _ABSENT) for k in writes]
            cause_before, returned_before = info.cause, self.returned
            if loop_var is not None:
                state[("loop", loop_var)] = control
            start = control if single else worse(control, info.cause)
            # The pass is walked in `state` itself; then each key it assigned is joined
            # with its value at the pass's start.
            pass_start = [state.get(k, _ABSENT) for k in writes]
            self.block(body, state, start, loops + [info])
            self.block(continuing, state, worse(start, info.cause), loops + [info])
            changed = False
            for k, was, old in zip(writes, pass_start, before):
                now = state.get(k, _ABSENT)
                if now is not _ABSENT:
                    now = state[k] = worse(None if was is _ABSENT else was, now)
                changed = changed or (now is not old and now != old)
            # A fixpoint: nothing assigned, no exit's cause and no return's changed in this
            # pass. A return that turned non-uniform asks for one more pass, so that the
            # statements above it (a barrier at the top of the loop) see it on the next trip.
            if single or (
                not changed and info.cause is cause_before and self.returned is returned_before
            ):
                break
        left = {k: state[k] for k in writes if k in state}
        seen.append((entry, left, self.returned))

    def barrier_error(self, s, control: Cause, name: str | None = None):
        """The error for a barrier (or, with `name`, a subgroup op) under `control`."""
        if name is None:
            name = "storage_barrier()" if s.storage else "barrier()"
        depends = control.why
        if control.scope == SUBGROUP:  # only a barrier is refused under such control
            depends += ", which is uniform within a subgroup but not across the workgroup"
        reason = f"control depends on {depends}"
        if control.where is not None:
            bsrc, bnode = control.where
            line = bnode.lineno
            text = bsrc.lines[line - 1].strip() if 0 < line <= len(bsrc.lines) else ""
            at = f"{bsrc.path}:{line}:{bnode.col_offset + 1} (`{text}`)"
            if control.via and not isinstance(bnode, ast.While):
                reason = (
                    f"a {control.via} follows the condition at {at}, which depends on {depends}"
                )
            elif isinstance(bnode, ast.For):
                reason = f"the loop bounds at {at} depend on {depends}"
            else:
                reason = f"the condition at {at} depends on {depends}"
        if "barrier" in name:
            message = (
                f"{name} is in non-uniform control flow: {reason}, so some invocations of the "
                "workgroup may not reach it"
            )
            fix = (
                "guard the work, not the barrier: move the barrier out of the branch so every "
                "invocation reaches it (conditions on scalars, constants, len(buf), "
                "workgroup_id() and num_workgroups() are uniform)"
            )
            if control.scope == SUBGROUP:
                fix += (
                    "; a barrier needs the whole workgroup, a subgroup_id() branch holds a subgroup"
                )
        else:
            message = (
                f"{name} is in non-uniform control flow: {reason}, so some invocations of the "
                "subgroup may not reach it"
            )
            fix = (
                "guard the work, not the subgroup operation: move the subgroup operation out "
                f"of the branch so every invocation of the subgroup reaches it ({_SUBGROUP_FIX})"
            )
        return self.error_at(s, message, fix)

    def operand_error(self, s, name: str, what: str, cause: Cause):
        """The error for a cooperative matrix's `what` (offset, stride, value) not uniform
        within the subgroup."""
        message = (
            f"{name}'s {what} depends on {cause.why}, which differs between the invocations "
            "of a subgroup: the subgroup handles one matrix together, so they must agree"
        )
        fix = f"compute the {what} from values uniform within the subgroup ({_SUBGROUP_FIX})"
        return self.error_at(s, message, fix)

    def error_at(self, s, message: str, fix: str):
        src, node = self.where.get(id(s), (None, None, None))[:2]
        if src is None:
            from vyre_build.core.errors import KernelError

            return KernelError(message, fix=fix)
        return src.error(node, message, fix)


def check_uniformity(prog: ir.Program, where: dict) -> None:
    """Raise KernelError at the first barrier in non-uniform control flow in `prog`.

    `where` maps id() of IR statements to the (Source, ast node, statement) they came from.
    """
    _Analysis(prog, where).block(prog.body, {}, None, [])
