"""Coarsening: an elementwise kernel also gets an entry in which each invocation handles
FACTOR consecutive elements, every load issued first as one vector load per buffer.

Eligible: a 1-D workgroup; storage buffers of 4-byte scalars (u32, i32, f32); every
storage access at the invocation's own index (the value of `global_id().x`); no shared
memory, barriers, atomics, other ids or workgroup counts; `return` only outside loops.
The coarse descriptor sees every buffer as vec4s of its element type:

    base = gid * 4;  e_j = base + j                     (element j of this invocation)
    old_b = b4[gid]                                     (one 16-byte load per buffer read)
    copy j of the body, with gid -> e_j, b[e_j] -> old_b.j (or the working vec4 of b),
      b[e_j] = v -> the working vec4 of b gets component j, len(b) -> 4 * len(b4),
      its locals private, `return` -> leaving the copy
    b4[gid] = working vec4 of b                         (one 16-byte store per buffer written)

A buffer every copy stores under bounds guards only (`i < len(b)`, `0 <= i`) starts its
working vec4 at zero; any other written buffer starts from its old contents (read even
if the kernel declares it write-only: the invocation owns those four elements, so writing
back the untouched ones changes nothing). The runtime dispatches this entry only when
every buffer's length is the same multiple of FACTOR and the grid is the default one, so
an invocation's four elements are in bounds together or out of bounds together, exactly
as the four invocations of the original would be (docs/descriptor-conventions.md).
"""

from __future__ import annotations

from vyre_build.descriptor.builder import BodyBuilder, KernelBuilder
from vyre_build.descriptor.codec import SHARED_SLOT_BASE, BindingSlot, KernelDescriptor, Variant
from vyre_build.descriptor.facts import DescriptorInfo
from vyre_build.descriptor.types import datatype, vector_of
from vyre_build.descriptor.validate import validate
from vyre_build.descriptor.view import (
    Binary,
    BodyView,
    Break,
    Builtin,
    Continue,
    CoopStore,
    Debug,
    Fence,
    For,
    If,
    Length,
    Load,
    Loop,
    OpView,
    OrderedStore,
    Return,
    Store,
    Unary,
    Walker,
    view_of,
)

__all__ = ["FACTOR", "ENTRY", "coarsenable", "coarsen"]

FACTOR = 4
ENTRY = "main_x4"  # the coarse entry point's name in the WGSL and SPIR-V modules
_GID = "GlobalInvocationId"
# The OpaqueNode statements (an exit, a loop, or a side effect _stores_in does not follow).
_NODES = (Loop, Break, Continue, CoopStore, OrderedStore, Fence, Debug)


def _walk(body: BodyView, in_loop: bool = False):
    """(op, body, in_loop) for every op (views), nested bodies included."""
    for op in body.ops:
        yield op, body, in_loop
        for k in op.children:
            yield from _walk(body.children[k], in_loop or op.loops)


def _within(op: OpView, body: BodyView):
    """`op` and every op nested in it."""
    yield op
    for k in op.children:
        for sub, _, _ in _walk(body.children[k]):
            yield sub


class _Refused(Walker):
    """Whether an op keeps a kernel from a coarse entry (`visit(op, in_loop)`), by the
    module docstring's rules."""

    def __init__(self, slots):
        self.slots = slots

    def visit_no(self, op, in_loop) -> bool:
        return False

    def visit_yes(self, op, in_loop) -> bool:
        return True

    visit_literal = visit_loop_index = visit_binary = visit_unary = visit_fma = visit_no
    visit_select = visit_cast = visit_bitcast = visit_construct = visit_extract = visit_no
    visit_load_uniform = visit_length = visit_debug = visit_checked = visit_no
    visit_if_ = visit_for_ = visit_loop = visit_break_ = visit_continue_ = visit_no
    # Subgroup ops and ids: a coarse invocation stands for FACTOR elements, so the lanes a
    # subgroup op combines are not the elements it combined in the base entry.
    visit_subgroup = visit_subgroup_builtin = visit_yes
    visit_barrier = visit_atomic = visit_yes
    visit_ordered_atomic = visit_ordered_load = visit_ordered_store = visit_fence = visit_yes
    visit_coop_load = visit_coop_fill = visit_coop_mma = visit_coop_store = visit_yes

    def visit_builtin(self, op, in_loop) -> bool:
        # global_id().x only (local and workgroup ids, workgroup counts: refused)
        return op.name != _GID or op.axis != 0

    def visit_load(self, op, in_loop) -> bool:
        # LoadShared/StoreShared of a Scratch slot: a local, private to each copy
        return op.shared and self.slots[op.slot].memory_class != "Scratch"

    visit_store = visit_load

    def visit_return_(self, op, in_loop) -> bool:
        return in_loop


def coarsenable(desc: KernelDescriptor, info: DescriptorInfo) -> bool:
    """Whether `desc` qualifies for a coarse entry (see the module docstring)."""
    wx, wy, wz = desc.workgroup_size
    if wy != 1 or wz != 1:
        return False
    slots = {s.slot: s for s in desc.slots}
    for s in desc.slots:
        if s.memory_class == "Shared":
            return False
        if s.memory_class == "Global" and info.slot_types[s.slot] not in ("u32", "i32", "f32"):
            return False
    if not any(s.memory_class == "Global" for s in desc.slots):
        return False
    view = view_of(desc, info)
    refused = _Refused(slots)
    if any(refused.visit(op, in_loop) for op, _, in_loop in _walk(view.body)):
        return False
    gids = {op.result for op in view.ops if isinstance(op, Builtin) and op.name == _GID}
    for op in view.ops:
        if isinstance(op, (Load, Store)) and not op.shared and op.element not in gids:
            return False
    return True


class _Coarsener:
    def __init__(self, desc: KernelDescriptor, info: DescriptorInfo):
        self.desc, self.info = desc, info
        self.slots = {s.slot: s for s in desc.slots}
        self.kernel = KernelBuilder(
            f"{desc.id}+x{FACTOR}",
            desc.workgroup_size,
            first_id=max(info.types, default=-1) + 1,
            first_private=max(
                [s.slot + 1 for s in desc.slots if s.slot >= SHARED_SLOT_BASE],
                default=SHARED_SLOT_BASE,
            ),
        )
        self.view = view_of(desc, info)
        ops = self.view.ops
        self.defs = {op.result: op for op in ops if op.result is not None}
        self.gids = {
            r for r, op in self.defs.items() if isinstance(op, Builtin) and op.name == _GID
        }
        self.loaded = {op.slot for op in ops if isinstance(op, Load) and not op.shared}
        self.stored = {op.slot for op in ops if isinstance(op, Store) and not op.shared}
        self.returns = any(isinstance(op, Return) for op in ops)

    def scratch(self, ty: str, name: str, count: int = 1) -> int:
        return self.kernel.local("Scratch", datatype(ty), count, name)

    # --- the new descriptor ---------------------------------------------------------
    def run(self) -> KernelDescriptor:
        d, out = self.desc, self.kernel.body
        gid = out.gid(0)
        base = out.bin("Mul", gid, out.u32(FACTOR))
        elems = [base] + [out.bin("Add", base, out.u32(j)) for j in range(1, FACTOR)]
        vec = {s: vector_of(self.info.slot_types[s], FACTOR) for s in self.loaded | self.stored}
        full = {s for s in self.stored if s not in self.loaded and self._always_stored(s)}
        old = {s: out.load(s, gid) for s in sorted(vec) if s not in full}
        work = {}
        zero = None
        for s in sorted(self.stored):
            work[s] = self.scratch(vec[s], f"x{FACTOR}.{self.slots[s].name}")
            if s in full:
                if zero is None:
                    zero = {}
                ty = self.info.slot_types[s]
                if ty not in zero:
                    z = out.lit(ty.upper(), 0.0 if ty == "f32" else 0)
                    zero[ty] = out.vec(datatype(vec[s]), *(z,) * FACTOR)
                start = zero[ty]
            else:
                start = old[s]
            out.store(work[s], out.u32(0), start)
        for j in range(FACTOR):
            locals_ = {  # each copy its own locals and local arrays, of their sizes
                s.slot: self.scratch(
                    self.info.slot_types[s.slot], f"x{FACTOR}.{j}.{s.name}", s.element_count
                )
                for s in d.slots
                if s.memory_class == "Scratch"
            }
            copy = _Copy(self, j, elems[j], old, work, locals_, vec)
            if self.returns:  # a copy's `return` leaves that copy only
                body = out.loop()
                copy.body(self.view.body, body)
                if not body.ends():  # a body that ends in a return already breaks
                    body.brk()
            else:
                copy.body(self.view.body, out)
        for s in sorted(self.stored):
            out.store(s, gid, out.load(work[s], out.u32(0)))
        for s in d.slots:
            if s.memory_class == "Global":
                vis = s.visibility
                if s.slot in vec and s.slot not in full and vis == "WriteOnly":
                    vis = "ReadWrite"  # its old contents are read back (see module docstring)
                ty = datatype(vector_of(self.info.slot_types[s.slot], FACTOR))
                self.kernel.slots.append(BindingSlot(s.slot, ty, None, "Global", vis, s.name))
            elif s.memory_class != "Scratch":
                self.kernel.slots.append(s)
        return self.kernel.build()

    # --- which stores happen in every copy whose elements are in bounds ----------------
    def _always_stored(self, slot: int) -> bool:
        return self._stores_in(self.view.body, slot)

    def _stores_in(self, body: BodyView, slot: int) -> bool:
        for op in body.ops:
            if isinstance(op, Store) and not op.shared and op.slot == slot:
                return True
            if isinstance(op, If) and op.other is None and self._in_bounds(op.cond, True):
                if self._stores_in(body.children[op.then], slot):
                    return True
            elif isinstance(op, If) and self._in_bounds(op.cond, False):
                pass  # its then-arm runs only out of bounds
            elif isinstance(op, (If, For, Return) + _NODES):
                if any(isinstance(o, (Return,) + _NODES) for o in _within(op, body)):
                    return False  # an exit or a loop that may skip the rest
        return False

    def _in_bounds(self, cond: int, truth: bool) -> bool:
        """Whether `cond == truth` holds exactly when the invocation's element is in bounds
        of every buffer (all lengths equal: the runtime's condition for this entry)."""
        op = self.defs.get(cond)
        if isinstance(op, Unary) and op.name == "LogicalNot":
            return self._in_bounds(op.a, not truth)
        if not isinstance(op, Binary):
            return False
        bop, a, b = op.name, op.a, op.b
        if bop in ("And", "Or"):
            if (bop == "And") == truth:
                return all(
                    self._in_bounds(x, truth) or self._always(x, truth) for x in (a, b)
                ) and (self._in_bounds(a, truth) or self._in_bounds(b, truth))
            return False
        if truth:
            return (bop == "Lt" and a in self.gids and self._length(b)) or (
                bop == "Gt" and b in self.gids and self._length(a)
            )
        return (bop == "Ge" and a in self.gids and self._length(b)) or (
            bop == "Le" and b in self.gids and self._length(a)
        )

    def _always(self, cond: int, truth: bool) -> bool:
        """`0 <= gid` (u32: always true) and its mirror."""
        op = self.defs.get(cond)
        if not isinstance(op, Binary) or not truth:
            return False
        bop, a, b = op.name, op.a, op.b
        zero = lambda x: self.info.constants.get(x) == 0  # noqa: E731
        return (bop == "Le" and zero(a) and b in self.gids) or (
            bop == "Ge" and a in self.gids and zero(b)
        )

    def _length(self, vid: int) -> bool:
        op = self.defs.get(vid)
        return isinstance(op, Length) and self.slots[op.slot].memory_class == "Global"


class _Copy(Walker):
    """Copy j of the body: fresh ids, gid -> e_j, storage accesses through the vec4s
    (`visit(op, src, out)`: op of body `src` appended to the body `out` being built)."""

    def __init__(self, c: _Coarsener, j, elem, old, work, locals_, vec):
        self.c, self.j, self.elem = c, j, elem
        self.old, self.work, self.locals, self.vec = old, work, locals_, vec
        self.ids: dict[int, int] = {}

    def v(self, vid: int) -> int:
        return self.ids[vid]

    def body(self, src: BodyView, out: BodyBuilder) -> None:
        """Every op of `src`, copied into `out`."""
        for op in src.ops:
            self.visit(op, src, out)

    def child(self, src: BodyView, k: int, out: BodyBuilder) -> int:
        """Child body `k` of `src`, copied into a new child of `out`: its index there."""
        index, body = out.child()
        self.body(src.children[k], body)
        return index

    def define(self, op, new_id) -> None:
        if op.result is not None:
            self.ids[op.result] = new_id

    def visit_renamed(self, op, src, out) -> None:
        """The op itself on the copy's ids."""
        operands = tuple(self.v(x) for x in op.operands)
        self.define(op, out.op(op.kind, *operands, value=op.result is not None))

    visit_binary = visit_unary = visit_fma = visit_select = visit_cast = visit_renamed
    visit_bitcast = visit_construct = visit_extract = visit_checked = visit_renamed
    # refused by coarsenable (subgroups, atomics, memory orders, matrices); kept exact
    visit_subgroup = visit_subgroup_builtin = visit_atomic = visit_renamed
    visit_ordered_atomic = visit_ordered_load = visit_coop_load = visit_renamed
    visit_coop_fill = visit_coop_mma = visit_renamed

    def visit_verbatim(self, op, src, out) -> None:
        """A statement whose operands are no SSA values: as it is."""
        out.op(op.kind, *op.operands, value=False)

    visit_break_ = visit_continue_ = visit_barrier = visit_debug = visit_verbatim
    visit_fence = visit_ordered_store = visit_coop_store = visit_verbatim

    def visit_builtin(self, op, src, out) -> None:
        if op.name == _GID:
            self.ids[op.result] = self.elem
        else:  # refused by coarsenable; kept exact
            self.define(op, out.op(op.kind, *op.operands))

    def visit_literal(self, op, src, out) -> None:
        lit = op.value
        self.define(op, out.lit(lit.name, lit.args[0]))

    def visit_load(self, op, src, out) -> None:
        if op.shared:
            return self.local(op, src, out)
        s = op.slot
        vec = out.load(self.work[s], out.u32(0)) if s in self.work else self.old[s]
        self.define(op, out.extract(vec, self.j))

    def visit_store(self, op, src, out) -> None:
        if op.shared:
            return self.local(op, src, out)
        s, value = op.slot, self.v(op.value)
        cur = out.load(self.work[s], out.u32(0))
        parts = [value if k == self.j else out.extract(cur, k) for k in range(FACTOR)]
        new = out.vec(datatype(self.vec[s]), *parts)
        out.store(self.work[s], out.u32(0), new)

    def visit_length(self, op, src, out) -> None:
        if self.c.slots[op.slot].memory_class != "Global":
            return self.local(op, src, out)
        n = out.length(op.slot)
        self.define(op, out.bin("Mul", n, out.u32(FACTOR)))

    def local(self, op, src, out) -> None:
        """A load, store or length of a Scratch slot: the copy's own."""
        o = op.operands
        operands = (self.locals[o[0]],) + tuple(self.v(x) for x in o[1:])
        self.define(op, out.op(op.kind, *operands, value=op.result is not None))

    def visit_load_uniform(self, op, src, out) -> None:  # [uniform slot, index]
        o = op.operands
        self.define(op, out.op(op.kind, o[0], self.v(o[1])))

    def visit_return_(self, op, src, out) -> None:
        out.brk()

    def visit_if_(self, op, src, out) -> None:
        kids = tuple(self.child(src, k, out) for k in op.children)
        out.op(op.kind, self.v(op.cond), *kids, value=False)

    def visit_for_(self, op, src, out) -> None:
        lo, hi = self.v(op.lo), self.v(op.hi)
        kid = self.child(src, op.body, out)
        kind = Variant("StructuredForLoop", (f"{op.var}_x{self.j}",))
        out.op(kind, lo, hi, kid, value=False)

    def visit_loop_index(self, op, src, out) -> None:
        self.define(op, out.loop_index(f"{op.var}_x{self.j}"))

    def visit_loop(self, op, src, out) -> None:
        kids = tuple(self.child(src, k, out) for k in op.children)
        out.op(op.kind, *kids, value=False)


def coarsen(desc: KernelDescriptor, info: DescriptorInfo) -> KernelDescriptor:
    """The coarse descriptor of an eligible `desc` (check `coarsenable` first)."""
    return _Coarsener(desc, info).run()


def entries(desc: KernelDescriptor, info: DescriptorInfo) -> tuple:
    """The extra entry points both emitters give `desc`: ((ENTRY, coarse, its info),) for a
    coarsenable kernel, else (). A pure function of the descriptor, so decode -> emit of a
    .kdesc reproduces the compiler's modules."""
    if not coarsenable(desc, info):
        return ()
    coarse = coarsen(desc, info)
    return ((ENTRY, coarse, validate(coarse)),)
