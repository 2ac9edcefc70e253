"""Lowering: `Program` (typed tree IR) -> `KernelDescriptor` (docs/descriptor-conventions.md).

Guarantees: the descriptor follows the conventions exactly (slot numbering, uniform
block, scratch locals, opaque extensions for loops/break/continue) and passes
`descriptor.validate`. Debug statements and sites (a debug build's Program only) become
the `vyre.debug.*` ops, each naming its row of the site table `Lowerer.sites` (the
metadata's `debug.sites`); a Program without them lowers exactly as before. A local assigned once, whose every use it dominates
lexically, becomes a plain SSA value; every other local becomes a Scratch slot. The ops are
built with the one descriptor builder (`descriptor.builder`), literals interned per scope.
"""

from __future__ import annotations

import struct

from vyre_build.frontend import ir
from vyre_build.descriptor import (
    DescriptorInfo,
    KernelDescriptor,
    Variant,
    encode_datatype,
    validate,
)
from vyre_build.descriptor import matrices
from vyre_build.descriptor import memory_order as mo
from vyre_build.descriptor.builder import BodyBuilder, KernelBuilder
from vyre_build.descriptor.types import datatype as dtype
from vyre_build.core.errors import DescriptorFormatError

VISIBILITY = {"r": "ReadOnly", "w": "WriteOnly", "rw": "ReadWrite"}
_SUBGROUP_IDS = {"subgroup_size": "SubgroupSize", "subgroup_invocation_id": "SubgroupLocalId"}
# Ids the schema has no variant for: OpaqueExpr with no operands (descriptor-conventions.md).
_SUBGROUP_EXPRS = {"subgroup_id": "vyre.subgroup_id", "num_subgroups": "vyre.num_subgroups"}
# The schema's own subgroup kinds; the other subgroup ops are OpaqueExpr vyre.subgroup.
_SUBGROUP_KINDS = {"add": "SubgroupAdd", "ballot": "SubgroupBallot", "shuffle": "SubgroupShuffle"}
_AXIS_OPS = {
    "global_id": "GlobalInvocationId",
    "local_id": "LocalInvocationId",
    "workgroup_id": "WorkgroupId",
}


def _lit(body: BodyBuilder, ty: str, value) -> int:
    """The literal `value` of value type `ty` (interned by the builder); f32 literals are
    stored at f32 precision, so decode(encode(d)) == d."""
    if ty == "f32":
        value = struct.unpack("<f", struct.pack("<f", value))[0]
    else:
        value = bool(value) if ty == "bool" else int(value)
    return body.lit(dtype(ty).name, value)


def ssa_locals(prog: ir.Program) -> set[str]:
    """Locals with one assignment that lexically dominates all their uses."""
    defs: dict[str, list] = {}
    uses: dict[str, list] = {}

    def walk_expr(e, pos):
        if isinstance(e, ir.Var):
            uses.setdefault(e.name, []).append(pos)
        elif isinstance(e, tuple):
            for x in e:
                walk_expr(x, pos)
        elif hasattr(e, "__dataclass_fields__"):
            for f in e.__dataclass_fields__:
                walk_expr(getattr(e, f), pos)

    def walk_block(stmts, path):
        for i, s in enumerate(stmts):
            pos = path + (i,)
            if isinstance(s, ir.Assign):
                defs.setdefault(s.var, []).append(pos)
                walk_expr(s.value, pos)
            elif isinstance(s, ir.If):
                walk_expr(s.cond, pos)
                walk_block(s.then, pos + (0,))
                walk_block(s.orelse, pos + (1,))
            elif isinstance(s, ir.For):
                walk_expr((s.lo, s.hi), pos)
                walk_block(s.body, pos + (0,))
            elif isinstance(s, ir.Loop):
                walk_block(s.body, pos + (0,))
                walk_block(s.continuing, pos + (1,))
            else:
                walk_expr(s, pos)

    walk_block(prog.body, ())
    out = set()
    for name, ds in defs.items():
        if len(ds) != 1:
            continue
        d = ds[0]
        block, i = d[:-1], d[-1]
        if all(
            len(u) > len(block) and u[: len(block)] == block and u[len(block)] > i
            for u in uses.get(name, ())
        ):
            out.add(name)
    return out


class Lowerer:
    def __init__(self, prog: ir.Program):
        self.prog = prog
        self.kernel = KernelBuilder(prog.id, prog.workgroup_size, intern=True)
        self.slot_of: dict[str, int] = {}
        self.ssa = ssa_locals(prog)
        self.values: dict[str, int] = {}  # SSA local -> id
        self.params: dict[str, int] = {}  # scalar param -> id of its load
        self.loops: dict[str, tuple] = {}  # loop var -> ("index",) | ("value", its id in the trip)
        self.buffer_names = {p.name for p in prog.params if isinstance(p, ir.BufferParam)}
        self.sites: list[dict] = []  # the debug site table: row k is site id k
        self._assign_slots()

    # -- slots: buffers, then uniforms, then Shared/Scratch from SHARED_SLOT_BASE ---------
    def _assign_slots(self):
        p, k = self.prog, self.kernel
        buffers = [x for x in p.params if isinstance(x, ir.BufferParam)]
        scalars = [x for x in p.params if isinstance(x, ir.ScalarParam)]
        for b in buffers:
            self.slot_of[b.name] = k.buffer(dtype(b.dtype), VISIBILITY[b.access], b.name)
        for s in scalars:
            self.slot_of[s.name] = k.scalar(dtype(s.dtype), s.name)
        for a in p.arrays:
            mem = "Shared" if a.space == "shared" else "Scratch"
            self.slot_of[a.name] = k.local(mem, dtype(a.dtype), a.count, a.name)
        for name, ty in p.locals:
            if name not in self.ssa:
                self.slot_of[name] = k.local("Scratch", dtype(ty), 1, name)

    # -- program ----------------------------------------------------------------------
    def run(self) -> KernelDescriptor:
        top = self.kernel.body
        for p in self.prog.params:
            if isinstance(p, ir.ScalarParam):
                self.params[p.name] = top.param(self.slot_of[p.name])
        self.block(top, self.prog.body)
        return self.kernel.build()

    def block(self, body: BodyBuilder, stmts) -> None:
        for s in stmts:
            self.stmt(body, s)
            if isinstance(s, (ir.Break, ir.Continue, ir.Return)):
                return  # the rest of the block is unreachable

    def stmt(self, body: BodyBuilder, s) -> None:
        if isinstance(s, ir.Assign):
            v = self.expr(body, s.value)
            if s.var in self.ssa:
                self.values[s.var] = v
            else:
                body.store(self.slot_of[s.var], body.u32(0), v)
        elif isinstance(s, ir.Store):
            idx = self.expr(body, s.index)
            self.bounds(body, s, idx, "write")
            body.store(self.slot_of[s.array], idx, self.expr(body, s.value))
        elif isinstance(s, ir.If):
            c = self.expr(body, s.cond)
            if s.orelse:
                then, other = body.if_else(c)
                self.block(then, s.then)
                self.block(other, s.orelse)
            else:
                self.block(body.if_(c), s.then)
        elif isinstance(s, ir.For):
            self.for_loop(body, s)
        elif isinstance(s, ir.Loop):
            if s.continuing:
                loop, continuing = body.loop(continuing=True)
                self.block(loop, s.body)
                self.block(continuing, s.continuing)
            else:
                self.block(body.loop(), s.body)
        elif isinstance(s, ir.Break):
            body.brk()
        elif isinstance(s, ir.Continue):
            body.cont()
        elif isinstance(s, ir.Return):
            body.ret()
        elif isinstance(s, ir.Barrier):
            body.barrier("SeqCst" if s.storage else "AcqRel")
        elif isinstance(s, ir.Eval):
            self.expr(body, s.expr)
        elif isinstance(s, ir.Fence):
            body.node(mo.FENCE, payload=mo.payload(mo.FENCE, s.scope, s.order))
        elif isinstance(s, ir.DebugPrint):
            ids, fmt, types = [], [], []
            for part in s.parts:
                if isinstance(part, str):
                    fmt.append(part)
                else:
                    fmt.append(len(ids))
                    ids.append(self.expr(body, part))
                    types.append(part.ty)
            site = self.site(s.site, "print", format=fmt, types=types)
            _debug(body, "print", site, *ids)
        elif isinstance(s, ir.DebugAssert):
            cond = self.expr(body, s.cond)
            ids = [self.expr(body, v) for _, v in s.values]
            site = self.site(
                s.site,
                "assert",
                condition=s.text,
                message=s.message,
                labels=[label for label, _ in s.values],
                types=[v.ty for _, v in s.values],
            )
            _debug(body, "assert", site, cond, *ids)
        elif isinstance(s, ir.CoopStore):
            operands = (
                self.slot_of[s.array],
                self.expr(body, s.offset),
                self.expr(body, s.stride),
                self.expr(body, s.value),
            )
            body.node(matrices.STORE, *operands)
        else:
            raise RuntimeError(f"lowering: unknown statement {s!r}")

    # -- debug builds -------------------------------------------------------------------
    def site(self, where: ir.Site, kind: str, **fields) -> int:
        """A new row of the site table; returns its id."""
        row = {"kind": kind, "file": where.file, "line": where.line, "col": where.col}
        self.sites.append({**row, **fields})
        return len(self.sites) - 1

    def bounds(self, body: BodyBuilder, access, idx: int, what: str) -> None:
        """A debug build's bounds report before a load, store or atomic with a site."""
        if access.site is None:
            return
        site = self.site(
            access.site, "bounds", access=what, array=access.array, types=["u32", "u32"]
        )
        _debug(body, "bounds", site, self.slot_of[access.array], idx)

    def for_loop(self, body: BodyBuilder, s: ir.For) -> None:
        lo = self.expr(body, s.lo)
        hi = self.expr(body, s.hi)
        ty = s.lo.ty
        if s.step == 1:
            self.loops[s.var] = ("index",)
            self.block(body.for_(s.var, lo, hi), s.body)
            return
        # Any other step: a u32 trip counter from 0 to the exact trip count (computed once,
        # like Python's range), and i = lo + t * step at the top of each trip: stepping i
        # itself would wrap past the type's end (range(u32(5), u32(0), -2)) and never stop.
        self.loops[s.var] = ("value", None)
        trip = self.trip_count(body, lo, hi, ty, s.step)
        index, child = body.child()
        t = child.loop_index(s.var + ".trip")
        if ty == "i32":
            t = child.cast(dtype("i32"), t)
        amount = s.step if ty == "i32" else s.step % (1 << 32)
        scaled = child.bin("Mul", t, _lit(child, ty, amount))
        self.loops[s.var] = ("value", child.bin("Add", lo, scaled))
        self.block(child, s.body)
        zero = body.u32(0)  # after the body, as its ids were always numbered
        loop = Variant("StructuredForLoop", (s.var + ".trip",))
        body.op(loop, zero, trip, index, value=False)

    def trip_count(self, body: BodyBuilder, lo: int, hi: int, ty: str, step: int) -> int:
        """The number of trips of range(lo, hi, step) as a u32 (0 when it is empty): the
        distance between lo and hi is exact in u32 bits for i32 and u32 alike."""
        first, last = (lo, hi) if step > 0 else (hi, lo)
        runs = body.bin("Lt", first, last)
        dist = body.bin("Sub", last, first)
        if ty == "i32":
            dist = body.cast(dtype("u32"), dist)
        one = body.u32(1)
        steps = body.bin("Div", body.bin("Sub", dist, one), body.u32(abs(step)))
        count = body.bin("Add", steps, one)
        return body.select(runs, count, body.u32(0))

    # -- expressions ------------------------------------------------------------------
    def expr(self, body: BodyBuilder, e) -> int:
        if isinstance(e, ir.Const):
            if e.ty in ("f16", "bf16"):  # no F16/BF16 literal in the schema: F32, converted
                return body.cast(dtype(e.ty), _lit(body, "f32", e.value))
            return _lit(body, e.ty, e.value)
        if isinstance(e, ir.Var):
            if e.name in self.ssa:
                return self.values[e.name]
            return body.load(self.slot_of[e.name], body.u32(0))
        if isinstance(e, ir.Param):
            return self.params[e.name]
        if isinstance(e, ir.LoopVar):
            how = self.loops[e.name]
            if how[0] == "index":
                return body.loop_index(e.name)
            return how[1]  # a stepped loop's value, made at the top of its trip
        if isinstance(e, ir.Load):
            idx = self.expr(body, e.index)
            self.bounds(body, e, idx, "read")
            return body.load(self.slot_of[e.array], idx)
        if isinstance(e, ir.Length):
            return body.length(self.slot_of[e.array])
        if isinstance(e, ir.Builtin):
            if e.kind in _SUBGROUP_IDS:
                return body.op(_SUBGROUP_IDS[e.kind])
            if e.kind in _SUBGROUP_EXPRS:
                return body.expr(_SUBGROUP_EXPRS[e.kind])
            if e.kind == "num_workgroups":
                return body.num_workgroups(e.axis)
            return body.op(_AXIS_OPS[e.kind], e.axis)
        if isinstance(e, ir.Binary):
            a, b = self.expr(body, e.a), self.expr(body, e.b)
            return body.bin(e.op, a, b)
        if isinstance(e, ir.Unary):
            return body.un(e.op, self.expr(body, e.a))
        if isinstance(e, ir.Fma):
            return body.fma(self.expr(body, e.a), self.expr(body, e.b), self.expr(body, e.c))
        if isinstance(e, ir.Select):
            cond = self.expr(body, e.cond)
            return body.select(cond, self.expr(body, e.if_true), self.expr(body, e.if_false))
        if isinstance(e, ir.Cast):
            return body.cast(dtype(e.ty), self.expr(body, e.a))
        if isinstance(e, ir.Splat):
            a = self.expr(body, e.a)
            return body.vec(dtype(e.ty), *(a,) * ir.VECTORS[e.ty][1])
        if isinstance(e, ir.Construct):
            return body.vec(dtype(e.ty), *(self.expr(body, a) for a in e.args))
        if isinstance(e, ir.Extract):
            return body.extract(self.expr(body, e.a), e.index)
        if isinstance(e, ir.Bitcast):
            return body.bitcast(dtype(e.ty), self.expr(body, e.a))
        if isinstance(e, ir.Subgroup):
            args = tuple(self.expr(body, a) for a in e.args)
            if e.op in _SUBGROUP_KINDS:
                return body.op(_SUBGROUP_KINDS[e.op], *args)
            return body.expr("vyre.subgroup", *args, payload=e.op.encode("ascii"))
        if isinstance(e, ir.CoopLoad):
            operands = (self.slot_of[e.array], self.expr(body, e.offset), self.expr(body, e.stride))
            return body.expr(matrices.LOAD, *operands, payload=encode_datatype(dtype(e.ty)))
        if isinstance(e, ir.CoopFill):
            value = self.expr(body, e.value)
            return body.expr(matrices.FILL, value, payload=encode_datatype(dtype(e.ty)))
        if isinstance(e, ir.CoopMma):
            args = (self.expr(body, e.a), self.expr(body, e.b), self.expr(body, e.c))
            return body.op(matrices.mma_kind(e.a.ty, e.b.ty, e.ty), *args)
        if isinstance(e, ir.Atomic):
            idx = self.expr(body, e.index)
            self.bounds(body, e, idx, "atomic")
            vals = tuple(self.expr(body, a) for a in e.args)
            shared = e.array not in self.buffer_names
            return _atomic(body, e, shared, self.slot_of[e.array], idx, *vals)
        raise RuntimeError(f"lowering: unknown expression {e!r}")


def _debug(body: BodyBuilder, what: str, site: int, *operands) -> None:
    """OpaqueNode vyre.debug.<what> naming site `site` (payload: the id, u32 little-endian)."""
    body.node(f"vyre.debug.{what}", *operands, payload=struct.pack("<I", site))


def _atomic(body: BodyBuilder, e: ir.Atomic, shared: bool, slot: int, *operands) -> int | None:
    """An atomic (descriptor/memory_order.py): the schema's Atomic{op, Relaxed} at the
    slot's own scope and relaxed order, else an extension; None for a store."""
    scope = e.scope or ("workgroup" if shared else "device")
    if e.op == "Load":
        return body.expr(mo.LOAD, slot, *operands, payload=mo.payload(mo.LOAD, scope, e.order))
    if e.op == "Store":
        body.node(mo.STORE, slot, *operands, payload=mo.payload(mo.STORE, scope, e.order))
        return None
    if e.scope is None and e.order == "relaxed":
        return body.atomic(e.op, slot, *operands)
    payload = mo.payload(mo.ATOMIC, scope, e.order, e.op)
    return body.expr(mo.ATOMIC, slot, *operands, payload=payload)


def lower(prog: ir.Program, sites: list | None = None) -> tuple[KernelDescriptor, DescriptorInfo]:
    """Lower one checked Program; returns its descriptor and the validation facts of it
    (`descriptor.validate`: a descriptor that fails it is a compiler bug, RuntimeError).
    `sites`: a list that receives the debug site table (row k: site id k)."""
    lowerer = Lowerer(prog)
    desc = lowerer.run()
    if sites is not None:
        sites.extend(lowerer.sites)
    try:
        return desc, validate(desc)
    except DescriptorFormatError as exc:
        raise RuntimeError(
            f"lowering produced an invalid descriptor (a compiler bug): {exc}"
        ) from exc
