"""Lowering: `Program` (typed tree IR) -> `KernelDescriptor` (docs/descriptor-conventions.md).

Guarantees: the descriptor follows the conventions exactly (slot numbering, uniform
block, scratch locals, opaque extensions for loops/break/continue) and passes
`descriptor.validate`. Debug statements and sites (a debug build's Program only) become
the `vyre.debug.*` ops, each naming its row of the site table `Lowerer.sites` (the
metadata's `debug.sites`); a Program without them lowers exactly as before. A local assigned once, whose every use it dominates
lexically, becomes a plain SSA value; every other local becomes a Scratch slot.
"""

from __future__ import annotations

import struct

from vyre_build.frontend import ir
from vyre_build.descriptor import (
    SHARED_SLOT_BASE,
    BindingSlot,
    DescriptorInfo,
    KernelBody,
    KernelDescriptor,
    KernelOp,
    Variant,
    encode_datatype,
    validate,
)
from vyre_build.descriptor import matrices
from vyre_build.descriptor import memory_order as mo
from vyre_build.descriptor.types import datatype as dtype
from vyre_build.core.errors import DescriptorFormatError

VISIBILITY = {"r": "ReadOnly", "w": "WriteOnly", "rw": "ReadWrite"}
_SUBGROUP_IDS = {"subgroup_size": "SubgroupSize", "subgroup_invocation_id": "SubgroupLocalId"}
# Ids the schema has no variant for: OpaqueExpr with no operands (descriptor-conventions.md).
_SUBGROUP_EXPRS = {"subgroup_id": "vyre.subgroup_id", "num_subgroups": "vyre.num_subgroups"}
# The schema's own subgroup kinds; the other subgroup ops are OpaqueExpr vyre.subgroup.
_SUBGROUP_KINDS = {
    "add": Variant("SubgroupAdd"),
    "ballot": Variant("SubgroupBallot"),
    "shuffle": Variant("SubgroupShuffle"),
}
_AXIS_OPS = {
    "global_id": "GlobalInvocationId",
    "local_id": "LocalInvocationId",
    "workgroup_id": "WorkgroupId",
}


def _bin(op: str) -> Variant:
    return Variant("BinOpKind", (Variant(op),))


def opaque_node(kind: str) -> Variant:
    return Variant("OpaqueNode", (kind, b""))


def debug_node(what: str, site: int) -> Variant:
    """OpaqueNode vyre.debug.<what> naming site `site` (payload: the id, u32 little-endian)."""
    return Variant("OpaqueNode", (f"vyre.debug.{what}", struct.pack("<I", site)))


def opaque_expr(kind: str, payload: bytes = b"") -> Variant:
    return Variant("OpaqueExpr", (0, kind, payload))


class _Body:
    def __init__(self, parent: "_Body | None"):
        self.parent = parent
        self.ops: list[KernelOp] = []
        self.children: list[KernelBody] = []
        self.literals: list[Variant] = []
        self.pool: dict = {}
        self.lit_ids: dict = {}

    def freeze(self) -> KernelBody:
        return KernelBody(tuple(self.ops), tuple(self.children), tuple(self.literals))


def _lit_key(ty: str, value) -> tuple:
    if ty == "f32":
        return (ty, struct.pack("<f", value))
    return (ty, int(value))


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
        self.next_id = 0
        self.slots: list[BindingSlot] = []
        self.slot_of: dict[str, int] = {}
        self.ssa = ssa_locals(prog)
        self.values: dict[str, int] = {}  # SSA local -> id
        self.params: dict[str, int] = {}  # scalar param -> id of its load
        self.loops: dict[str, tuple] = {}  # loop var -> ("index",) | ("value", its id in the trip)
        self.buffer_names = {p.name for p in prog.params if isinstance(p, ir.BufferParam)}
        self.sites: list[dict] = []  # the debug site table: row k is site id k
        self._assign_slots()

    # -- slots ------------------------------------------------------------------------
    def _assign_slots(self):
        p = self.prog
        buffers = [x for x in p.params if isinstance(x, ir.BufferParam)]
        scalars = [x for x in p.params if isinstance(x, ir.ScalarParam)]
        for i, b in enumerate(buffers):
            self._slot(i, b.name, b.dtype, None, "Global", VISIBILITY[b.access])
        for i, s in enumerate(scalars):
            self._slot(len(buffers) + i, s.name, s.dtype, 1, "Uniform", "ReadOnly")
        self.next_private = SHARED_SLOT_BASE
        for a in p.arrays:
            self._private(a.name, a.dtype, a.count, "Shared" if a.space == "shared" else "Scratch")
        for name, ty in p.locals:
            if name not in self.ssa:
                self._private(name, ty, 1, "Scratch")

    def _slot(self, number, name, ty, count, mem, vis):
        self.slots.append(BindingSlot(number, dtype(ty), count, mem, vis, name))
        self.slot_of[name] = number

    def _private(self, name, ty, count, mem):
        self._slot(self.next_private, name, ty, count, mem, "ReadWrite")
        self.next_private += 1

    # -- emission helpers -------------------------------------------------------------
    def op(self, body: _Body, kind: Variant, operands=(), result=True) -> int | None:
        rid = None
        if result:
            rid = self.next_id
            self.next_id += 1
        body.ops.append(KernelOp(kind, tuple(operands), rid))
        return rid

    def atomic(self, body: _Body, e: ir.Atomic, operands) -> int | None:
        kind, result = _atomic_kind(e, e.array not in self.buffer_names)
        return self.op(body, kind, operands, result=result)

    def lit(self, body: _Body, ty: str, value) -> int:
        key = _lit_key(ty, value)
        b = body
        while b is not None:
            if key in b.lit_ids:
                return b.lit_ids[key]
            b = b.parent
        if key not in body.pool:
            body.pool[key] = len(body.literals)
            # f32 literals are stored at f32 precision, so decode(encode(d)) == d.
            v = (
                struct.unpack("<f", key[1])[0]
                if ty == "f32"
                else bool(value)
                if ty == "bool"
                else int(value)
            )
            body.literals.append(Variant(dtype(ty).name, (v,)))
        rid = self.op(body, Variant("Literal"), (body.pool[key],))
        body.lit_ids[key] = rid
        return rid

    def child(self, parent: _Body, stmts, prologue=None) -> int:
        body = _Body(parent)
        if prologue:
            prologue(body)
        self.block(body, stmts)
        parent.children.append(body.freeze())
        return len(parent.children) - 1

    # -- program ----------------------------------------------------------------------
    def run(self) -> KernelDescriptor:
        top = _Body(None)
        for p in self.prog.params:
            if isinstance(p, ir.ScalarParam):
                self.params[p.name] = self.op(
                    top, Variant("LoadConstant"), (self.slot_of[p.name], self.lit(top, "u32", 0))
                )
        self.block(top, self.prog.body)
        slots = tuple(sorted(self.slots, key=lambda s: s.slot))
        return KernelDescriptor(self.prog.id, slots, tuple(self.prog.workgroup_size), top.freeze())

    def block(self, body: _Body, stmts) -> None:
        for s in stmts:
            self.stmt(body, s)
            if isinstance(s, (ir.Break, ir.Continue, ir.Return)):
                return  # the rest of the block is unreachable

    def stmt(self, body: _Body, s) -> None:
        if isinstance(s, ir.Assign):
            v = self.expr(body, s.value)
            if s.var in self.ssa:
                self.values[s.var] = v
            else:
                self.store_private(body, s.var, v)
        elif isinstance(s, ir.Store):
            idx = self.expr(body, s.index)
            self.bounds(body, s, idx, "write")
            val = self.expr(body, s.value)
            kind = "StoreGlobal" if s.array in self.buffer_names else "StoreShared"
            self.op(body, Variant(kind), (self.slot_of[s.array], idx, val), result=False)
        elif isinstance(s, ir.If):
            c = self.expr(body, s.cond)
            then = self.child(body, s.then)
            if s.orelse:
                other = self.child(body, s.orelse)
                self.op(body, Variant("StructuredIfThenElse"), (c, then, other), result=False)
            else:
                self.op(body, Variant("StructuredIfThen"), (c, then), result=False)
        elif isinstance(s, ir.For):
            self.for_loop(body, s)
        elif isinstance(s, ir.Loop):
            b = self.child(body, s.body)
            operands = (b, self.child(body, s.continuing)) if s.continuing else (b,)
            self.op(body, opaque_node("vyre.loop"), operands, result=False)
        elif isinstance(s, ir.Break):
            self.op(body, opaque_node("vyre.break"), (), result=False)
        elif isinstance(s, ir.Continue):
            self.op(body, opaque_node("vyre.continue"), (), result=False)
        elif isinstance(s, ir.Return):
            self.op(body, Variant("Return"), (), result=False)
        elif isinstance(s, ir.Barrier):
            self.op(
                body, Variant("Barrier", ("SeqCst" if s.storage else "AcqRel",)), (), result=False
            )
        elif isinstance(s, ir.Eval):
            self.expr(body, s.expr)
        elif isinstance(s, ir.Fence):
            kind = Variant("OpaqueNode", (mo.FENCE, mo.payload(mo.FENCE, s.scope, s.order)))
            self.op(body, kind, (), result=False)
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
            self.op(body, debug_node("print", site), ids, result=False)
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
            self.op(body, debug_node("assert", site), [cond, *ids], result=False)
        elif isinstance(s, ir.CoopStore):
            operands = (
                self.slot_of[s.array],
                self.expr(body, s.offset),
                self.expr(body, s.stride),
                self.expr(body, s.value),
            )
            self.op(body, opaque_node(matrices.STORE), operands, result=False)
        else:
            raise RuntimeError(f"lowering: unknown statement {s!r}")

    # -- debug builds -------------------------------------------------------------------
    def site(self, where: ir.Site, kind: str, **fields) -> int:
        """A new row of the site table; returns its id."""
        row = {"kind": kind, "file": where.file, "line": where.line, "col": where.col}
        self.sites.append({**row, **fields})
        return len(self.sites) - 1

    def bounds(self, body: _Body, access, idx: int, what: str) -> None:
        """A debug build's bounds report before a load, store or atomic with a site."""
        if access.site is None:
            return
        site = self.site(
            access.site, "bounds", access=what, array=access.array, types=["u32", "u32"]
        )
        self.op(body, debug_node("bounds", site), (self.slot_of[access.array], idx), result=False)

    def store_private(self, body, name, value):
        self.op(
            body,
            Variant("StoreShared"),
            (self.slot_of[name], self.lit(body, "u32", 0), value),
            result=False,
        )

    def load_private(self, body, name):
        return self.op(body, Variant("LoadShared"), (self.slot_of[name], self.lit(body, "u32", 0)))

    def for_loop(self, body: _Body, s: ir.For) -> None:
        lo = self.expr(body, s.lo)
        hi = self.expr(body, s.hi)
        ty = s.lo.ty
        if s.step == 1:
            self.loops[s.var] = ("index",)
            child = self.child(body, s.body)
            self.op(body, Variant("StructuredForLoop", (s.var,)), (lo, hi, child), result=False)
            return
        # Any other step: a u32 trip counter from 0 to the exact trip count (computed once,
        # like Python's range), and i = lo + t * step at the top of each trip: stepping i
        # itself would wrap past the type's end (range(u32(5), u32(0), -2)) and never stop.
        self.loops[s.var] = ("value", None)
        trip = self.trip_count(body, lo, hi, ty, s.step)

        def head(b: _Body):
            t = self.op(b, Variant("LoopIndex", (s.var + ".trip",)))
            if ty == "i32":
                t = self.op(b, Variant("Cast", (dtype("i32"),)), (t,))
            amount = s.step if ty == "i32" else s.step % (1 << 32)
            scaled = self.op(b, _bin("Mul"), (t, self.lit(b, ty, amount)))
            self.loops[s.var] = ("value", self.op(b, _bin("Add"), (lo, scaled)))

        child = self.child(body, s.body, prologue=head)
        zero = self.lit(body, "u32", 0)
        loop = Variant("StructuredForLoop", (s.var + ".trip",))
        self.op(body, loop, (zero, trip, child), result=False)

    def trip_count(self, body: _Body, lo: int, hi: int, ty: str, step: int) -> int:
        """The number of trips of range(lo, hi, step) as a u32 (0 when it is empty): the
        distance between lo and hi is exact in u32 bits for i32 and u32 alike."""
        first, last = (lo, hi) if step > 0 else (hi, lo)
        runs = self.op(body, _bin("Lt"), (first, last))
        dist = self.op(body, _bin("Sub"), (last, first))
        if ty == "i32":
            dist = self.op(body, Variant("Cast", (dtype("u32"),)), (dist,))
        one = self.lit(body, "u32", 1)
        steps = self.op(
            body,
            _bin("Div"),
            (self.op(body, _bin("Sub"), (dist, one)), self.lit(body, "u32", abs(step))),
        )
        count = self.op(body, _bin("Add"), (steps, one))
        return self.op(body, Variant("Select"), (runs, count, self.lit(body, "u32", 0)))

    # -- expressions ------------------------------------------------------------------
    def expr(self, body: _Body, e) -> int:
        if isinstance(e, ir.Const):
            if e.ty == "f16":  # the schema has no F16 literal: an F32 one, converted
                return self.op(
                    body, Variant("Cast", (dtype("f16"),)), (self.lit(body, "f32", e.value),)
                )
            return self.lit(body, e.ty, e.value)
        if isinstance(e, ir.Var):
            if e.name in self.ssa:
                return self.values[e.name]
            return self.load_private(body, e.name)
        if isinstance(e, ir.Param):
            return self.params[e.name]
        if isinstance(e, ir.LoopVar):
            how = self.loops[e.name]
            if how[0] == "index":
                return self.op(body, Variant("LoopIndex", (e.name,)))
            return how[1]  # a stepped loop's value, made at the top of its trip
        if isinstance(e, ir.Load):
            idx = self.expr(body, e.index)
            self.bounds(body, e, idx, "read")
            kind = "LoadGlobal" if e.array in self.buffer_names else "LoadShared"
            return self.op(body, Variant(kind), (self.slot_of[e.array], idx))
        if isinstance(e, ir.Length):
            return self.op(body, Variant("BufferLength"), (self.slot_of[e.array],))
        if isinstance(e, ir.Builtin):
            if e.kind in _SUBGROUP_IDS:
                return self.op(body, Variant(_SUBGROUP_IDS[e.kind]))
            if e.kind in _SUBGROUP_EXPRS:
                return self.op(body, opaque_expr(_SUBGROUP_EXPRS[e.kind]))
            if e.kind == "num_workgroups":
                return self.op(body, opaque_expr("vyre.num_workgroups"), (e.axis,))
            return self.op(body, Variant(_AXIS_OPS[e.kind]), (e.axis,))
        if isinstance(e, ir.Binary):
            a, b = self.expr(body, e.a), self.expr(body, e.b)
            return self.op(body, Variant("BinOpKind", (Variant(e.op),)), (a, b))
        if isinstance(e, ir.Unary):
            return self.op(body, Variant("UnOpKind", (Variant(e.op),)), (self.expr(body, e.a),))
        if isinstance(e, ir.Fma):
            args = (self.expr(body, e.a), self.expr(body, e.b), self.expr(body, e.c))
            return self.op(body, Variant("Fma"), args)
        if isinstance(e, ir.Select):
            args = (
                self.expr(body, e.cond),
                self.expr(body, e.if_true),
                self.expr(body, e.if_false),
            )
            return self.op(body, Variant("Select"), args)
        if isinstance(e, ir.Cast):
            return self.op(body, Variant("Cast", (dtype(e.ty),)), (self.expr(body, e.a),))
        if isinstance(e, ir.Splat):
            a = self.expr(body, e.a)
            return self.op(
                body,
                opaque_expr("vyre.vec", encode_datatype(dtype(e.ty))),
                (a,) * ir.VECTORS[e.ty][1],
            )
        if isinstance(e, ir.Construct):
            args = tuple(self.expr(body, a) for a in e.args)
            return self.op(body, opaque_expr("vyre.vec", encode_datatype(dtype(e.ty))), args)
        if isinstance(e, ir.Extract):
            return self.op(
                body, opaque_expr("vyre.extract", bytes([e.index])), (self.expr(body, e.a),)
            )
        if isinstance(e, ir.Bitcast):
            return self.op(
                body,
                opaque_expr("vyre.bitcast", encode_datatype(dtype(e.ty))),
                (self.expr(body, e.a),),
            )
        if isinstance(e, ir.Subgroup):
            args = tuple(self.expr(body, a) for a in e.args)
            kind = _SUBGROUP_KINDS.get(e.op) or opaque_expr("vyre.subgroup", e.op.encode("ascii"))
            return self.op(body, kind, args)
        if isinstance(e, ir.CoopLoad):
            operands = (self.slot_of[e.array], self.expr(body, e.offset), self.expr(body, e.stride))
            kind = opaque_expr(matrices.LOAD, encode_datatype(dtype(e.ty)))
            return self.op(body, kind, operands)
        if isinstance(e, ir.CoopFill):
            kind = opaque_expr(matrices.FILL, encode_datatype(dtype(e.ty)))
            return self.op(body, kind, (self.expr(body, e.value),))
        if isinstance(e, ir.CoopMma):
            args = (self.expr(body, e.a), self.expr(body, e.b), self.expr(body, e.c))
            return self.op(body, matrices.mma_kind(e.a.ty, e.b.ty, e.ty), args)
        if isinstance(e, ir.Atomic):
            idx = self.expr(body, e.index)
            self.bounds(body, e, idx, "atomic")
            vals = tuple(self.expr(body, a) for a in e.args)
            return self.atomic(body, e, (self.slot_of[e.array], idx) + vals)
        raise RuntimeError(f"lowering: unknown expression {e!r}")


def _atomic_kind(e: ir.Atomic, shared: bool) -> tuple[Variant, bool]:
    """(descriptor kind, has a result) of an atomic (descriptor/memory_order.py): the schema's
    Atomic{op, Relaxed} at the slot's own scope and relaxed order, else an extension."""
    scope = e.scope or ("workgroup" if shared else "device")
    if e.op == "Load":
        return opaque_expr(mo.LOAD, mo.payload(mo.LOAD, scope, e.order)), True
    if e.op == "Store":
        return Variant("OpaqueNode", (mo.STORE, mo.payload(mo.STORE, scope, e.order))), False
    if e.scope is None and e.order == "relaxed":
        return Variant("Atomic", (Variant(e.op), "Relaxed")), True
    return opaque_expr(mo.ATOMIC, mo.payload(mo.ATOMIC, scope, e.order, e.op)), True


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
