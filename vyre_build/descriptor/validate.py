"""Validation: a KernelDescriptor checked once against docs/descriptor-conventions.md.

`validate(desc)` checks everything the emitters rely on and returns the `DescriptorInfo`
they (and the metadata) read, so no emitter re-derives a type or re-checks structure:
- slots: unique and sorted numbers, unique names, element types and counts each memory
  class allows, atomics only on read-write integer slots;
- ops: every id defined once and before use (same body earlier, or an enclosing body),
  operand counts, slot numbers of the right class, child indices in range, loop variables
  bound, break/continue inside loops, terminators last, no exit from a continuing block,
  the payloads of the opaque extensions;
- types: every value op's (op, operand types) is a row of `descriptor.ops.OPS`.
The extensions' checks (loops, memory scopes and orders, cooperative matrices, debug ops)
are `validate_extensions.ExtensionChecks`, a mixin of the checker here.
Any defect raises `DescriptorFormatError` naming the descriptor, the op and the reason.
"""

from __future__ import annotations

from vyre_build.descriptor.codec import KernelDescriptor
from vyre_build.descriptor import matrices as mx
from vyre_build.descriptor import memory_order as mo
from vyre_build.descriptor.facts import DescriptorInfo, uniform_block
from vyre_build.descriptor.ops import OPS, SUBGROUP_FEATURE
from vyre_build.descriptor.ranges import Proofs
from vyre_build.descriptor.ranges import analyze as _analyze
from vyre_build.descriptor.types import TYPES, literal_type, type_of
from vyre_build.descriptor.validate_extensions import ExtensionChecks
from vyre_build.descriptor.view import BodyView, Break, Continue, Return, Walker, decode_view
from vyre_build.core.errors import DescriptorFormatError

__all__ = ["validate"]

# Operand counts of the fixed-arity kinds (Atomic and the opaque extensions are checked below).
ARITY = {
    "Literal": 1,
    "GlobalInvocationId": 1,
    "LocalInvocationId": 1,
    "WorkgroupId": 1,
    "LoopIndex": 0,
    "LoadGlobal": 2,
    "LoadShared": 2,
    "LoadConstant": 2,
    "BufferLength": 1,
    "StoreGlobal": 3,
    "StoreShared": 3,
    "BinOpKind": 2,
    "UnOpKind": 1,
    "Fma": 3,
    "Select": 3,
    "Cast": 1,
    "StructuredIfThen": 2,
    "StructuredIfThenElse": 3,
    "StructuredForLoop": 3,
    "Return": 0,
    "Barrier": 0,
    "SubgroupLocalId": 0,
    "SubgroupSize": 0,
    "SubgroupAdd": 1,
    "SubgroupBallot": 1,
    "SubgroupShuffle": 2,
    "MatrixMma": 3,
}
MAX_DEBUG_VALUES = 16  # values one vyre.debug.print / vyre.debug.assert reports
OPAQUE_ARITY = {
    "vyre.loop": (1, 2),
    "vyre.break": (0,),
    "vyre.continue": (0,),
    "vyre.num_workgroups": (1,),
    "vyre.subgroup_id": (0,),
    "vyre.num_subgroups": (0,),
    "vyre.checked": (0,),
    "vyre.bitcast": (1,),
    "vyre.vec": (2, 4),
    "vyre.extract": (1,),
    "vyre.subgroup": (0, 1, 2),
    mx.LOAD: (3,),
    mx.FILL: (1,),
    mx.MMA: (3,),
    mx.STORE: (4,),
    # Memory scopes and orders (descriptor/memory_order.py): payload [(op,) scope, order].
    mo.ATOMIC: (3, 4),
    mo.LOAD: (2,),
    mo.STORE: (3,),
    mo.FENCE: (0,),
    # Debug builds (docs/descriptor-conventions.md, "Debug builds"): payload = site id.
    "vyre.debug.print": tuple(range(MAX_DEBUG_VALUES + 1)),
    "vyre.debug.assert": tuple(range(1, MAX_DEBUG_VALUES + 2)),
    "vyre.debug.bounds": (2,),
}
_BUILTINS = ("GlobalInvocationId", "LocalInvocationId", "WorkgroupId")
_LOAD_CLASSES = {"LoadGlobal": ("Global",), "LoadShared": ("Shared", "Scratch")}
_STORE_CLASSES = {"StoreGlobal": ("Global",), "StoreShared": ("Shared", "Scratch")}
_BARRIERS = ("AcqRel", "SeqCst")


def validate(
    desc: KernelDescriptor, *, analyze: bool = True, legal: bool = False
) -> DescriptorInfo:
    """Check `desc` against the conventions; return the facts the emitters read.
    `analyze=False` skips the range analysis (no proofs: `descriptor.legalize` carries
    its input's over). `legal`: `desc` is a legal form (descriptor.legalize's output), the
    one place `vyre.checked` may stand."""
    return _Checker(desc, legal).run(analyze)


def _terminator(op) -> bool:
    return isinstance(op, (Return, Break, Continue))


class _Checker(Walker, ExtensionChecks):
    """The checks, one `visit_<class>(op, ctx)` per op class of the decoded view (after
    `arity`, which reads the raw op): each returns the op's value type, or None."""

    def __init__(self, d: KernelDescriptor, legal: bool = False):
        self.d = d
        self.legal = legal
        self.slots = {s.slot: s for s in d.slots}
        self.slot_types: dict[int, str] = {}
        self.types: dict[int, str] = {}
        self.constants: dict[int, int] = {}
        self.atomic: set[int] = set()
        self.features: set[str] = set()
        self.coop_slots: set[int] = set()  # slots cooperative loads/stores use
        self.debug_sites: set[int] = set()  # site ids of vyre.debug.* ops
        self.device_fence = False  # a vyre.fence at device scope

    def error(self, msg: str) -> DescriptorFormatError:
        return DescriptorFormatError(f"descriptor {self.d.id!r}: {msg}")

    def fail(self, op, msg):
        raise self.error(f"{op.kind!r} {list(op.operands)}: {msg}")

    # --- slots ----------------------------------------------------------------------
    def run(self, analyze: bool = True) -> DescriptorInfo:
        d = self.d
        wg = d.workgroup_size
        if len(wg) != 3 or not all(isinstance(w, int) and w >= 1 for w in wg):
            raise self.error(f"workgroup size {wg}: expected three integers >= 1")
        numbers = [s.slot for s in d.slots]
        if len(self.slots) != len(numbers):
            twice = sorted({n for n in numbers if numbers.count(n) > 1})
            raise self.error(f"slot numbers used twice: {twice}")
        if numbers != sorted(numbers):
            raise self.error(f"slots must be sorted by slot number, got {numbers}")
        names = [s.name for s in d.slots]
        if len(set(names)) != len(names):
            raise self.error(f"slot names are not unique: {names}")
        for s in d.slots:
            self.slot_types[s.slot] = self.check_slot(s)
        view = decode_view(d)
        self.body(view.body, [set()], loops={}, loop_depth=0, continuing=False)
        return DescriptorInfo(
            types=self.types,
            slot_types=self.slot_types,
            atomic_slots=frozenset(self.atomic),
            uniform=uniform_block(d.slots, self.slot_types),
            constants=self.constants,
            proofs=(
                _analyze(view, self.types, self.slot_types)
                if analyze
                else Proofs(frozenset(), frozenset())
            ),
            features=self.type_features() | frozenset(self.features) | self.model_features(),
            debug_binding=self.debug_binding(),
            view=view,
        )

    def debug_binding(self) -> int | None:
        """The debug buffer's binding: one past the last host-visible slot (None: no debug op)."""
        if not self.debug_sites:
            return None
        host = [s.slot for s in self.d.slots if s.memory_class in ("Global", "Uniform")]
        return max(host, default=-1) + 1

    def type_features(self) -> frozenset:
        """f16 anywhere needs shaderFloat16, bf16 anywhere shaderBFloat16Type; storage
        buffers of either 16-bit storage too."""
        out = set()
        elements = {TYPES[t].element for t in (*self.types.values(), *self.slot_types.values())}
        out.update(elements & {"f16", "bf16"})
        if any(
            TYPES[self.slot_types[s.slot]].element in ("f16", "bf16")
            for s in self.d.slots
            if s.memory_class == "Global"
        ):
            out.add("storage_16bit")
        if mx.uses_matrices((*self.types.values(), *self.slot_types.values())):
            out.add(mx.FEATURE)
        return frozenset(out)

    def check_slot(self, s) -> str:
        where = f"slot {s.slot} {s.name!r} ({s.memory_class})"
        try:
            ty = type_of(s.element_type)
        except DescriptorFormatError as exc:
            raise self.error(f"{where}: {exc}") from None
        info = TYPES[ty]
        mc = s.memory_class
        if info.matrix is not None:
            if mc != "Scratch" or s.element_count != 1:
                raise self.error(
                    f"{where}: a cooperative matrix {ty} lives only in a one-element Scratch "
                    f"slot (a local variable), got {mc} x {s.element_count}"
                )
        elif mc == "Global":
            if not info.storage or s.element_count is not None:
                raise self.error(
                    f"{where}: storage buffers hold runtime arrays of U32/I32/F32 "
                    f"or their vec2/vec4, got {s.element_type!r} x {s.element_count}"
                )
        elif mc == "Uniform":
            if not info.uniform or s.element_count != 1 or s.visibility != "ReadOnly":
                raise self.error(
                    f"{where} holds {ty} x {s.element_count}; uniform members are "
                    "one read-only U32/I32/F32/Bool scalar"
                )
        elif mc in ("Shared", "Scratch"):
            if not isinstance(s.element_count, int) or s.element_count < 1:
                raise self.error(f"{where}: needs element_count >= 1, got {s.element_count}")
        else:
            raise self.error(f"{where}: memory class {mc} is not used by vyre_build")
        return ty

    def slot(self, op, number, classes):
        s = self.slots.get(number)
        if s is None:
            self.fail(op, f"slot {number} does not exist")
        if s.memory_class not in classes:
            self.fail(
                op, f"slot {number} {s.name!r} is {s.memory_class}, expected {'/'.join(classes)}"
            )
        return s

    # --- bodies ---------------------------------------------------------------------
    def body(self, b: BodyView, scopes, loops, loop_depth, continuing):
        """`loop_depth` counts loops opened inside the innermost continuing block (or the
        function); `continuing` says whether that block is a loop's continuing block."""
        scope: set[int] = set()
        scopes = scopes + [scope]
        ctx = (b, scopes, loops, loop_depth, continuing)
        for i, op in enumerate(b.ops):
            self.arity(op)
            ty = self.visit(op, ctx)
            if _terminator(op) and i != len(b.ops) - 1:
                self.fail(op, "break/continue/return must end its body")
            if op.result is not None:
                if ty is None:
                    self.fail(op, "has a result but produces no value")
                if op.result in self.types:
                    self.fail(op, f"result id {op.result} defined twice")
                self.types[op.result] = ty
                scope.add(op.result)
            elif ty is not None:
                self.fail(op, "produces a value but has no result id")

    def arity(self, op) -> None:
        name = op.kind.name
        if name == "OpaqueNode" or name == "OpaqueExpr":
            kind = op.kind.args[0] if name == "OpaqueNode" else op.kind.args[1]
            if kind not in OPAQUE_ARITY:
                self.fail(op, f"unknown extension {kind!r}")
            if len(op.operands) not in OPAQUE_ARITY[kind]:
                counts = " or ".join(str(n) for n in OPAQUE_ARITY[kind])
                self.fail(op, f"{kind} takes {counts} operands, got {len(op.operands)}")
            if name == "OpaqueExpr" and op.kind.args[0] != 0:
                self.fail(op, f"OpaqueExpr extension_id must be 0, got {op.kind.args[0]}")
        elif name == "Atomic":
            n = 4 if op.kind.args[0].name == "CompareExchange" else 3
            if len(op.operands) != n:
                self.fail(op, f"atomic {op.kind.args[0].name} takes {n} operands")
        elif name not in ARITY:
            self.fail(op, "op kind not used by vyre_build")
        elif len(op.operands) != ARITY[name]:
            self.fail(op, f"takes {ARITY[name]} operands, got {len(op.operands)}")

    def val(self, op, scopes, i) -> str:
        v = op.operands[i]
        if not any(v in s for s in scopes):
            self.fail(op, f"operand {v} is not defined before use in scope")
        return self.types[v]

    def index(self, op, scopes) -> None:
        ty = self.val(op, scopes, 1)
        if ty != "u32":
            self.fail(op, f"index has type {ty}, expected u32")

    def child(self, op, ctx, idx, **over):
        b, scopes, loops, loop_depth, continuing = ctx
        if idx >= len(b.children):
            self.fail(op, f"child body {idx} does not exist")
        self.body(
            b.children[idx],
            scopes,
            over.get("loops", loops),
            over.get("loop_depth", loop_depth),
            over.get("continuing", continuing),
        )

    def typed(self, op, key, operands) -> str:
        result = OPS.get((key, operands))
        if result is None:
            family, name = key
            what = f"{family} {name}".strip()
            self.fail(op, f"{what} is not defined on ({', '.join(operands)})")
        return result

    # --- one method per op class (descriptor.view) ---------------------------------------
    def operand_types(self, op, scopes) -> tuple[str, ...]:
        return tuple(self.val(op, scopes, i) for i in range(len(op.operands)))

    def visit_value(self, op, ctx) -> str:
        """An op-table op: its row's result on its operands' types."""
        return self.typed(op, op.key, self.operand_types(op, ctx[1]))

    visit_binary = visit_unary = visit_fma = visit_select = visit_value

    def visit_subgroup(self, op, ctx) -> str:
        result = self.visit_value(op, ctx)
        self.features.update(("subgroup_basic", SUBGROUP_FEATURE[op.name]))
        if op.name == "broadcast" and op.operands[1] not in self.constants:
            self.fail(op, "the lane of a subgroup broadcast must be a u32 literal")
        return result

    def visit_subgroup_builtin(self, op, ctx) -> str:
        if op.kind.name == "OpaqueExpr" and op.kind.args[2]:
            self.fail(op, f"{op.name} takes no payload, got {op.kind.args[2].hex()}")
        self.features.add("subgroup_basic")
        return "u32"

    def visit_checked(self, op, ctx) -> str:
        if not self.legal:  # its value is the target's: only legalize may write it
            self.fail(
                op, "vyre.checked stands only in a legal form (descriptor.legalize writes it)"
            )
        if op.kind.args[2]:
            self.fail(op, f"vyre.checked takes no payload, got {op.kind.args[2].hex()}")
        return "bool"

    def visit_literal(self, op, ctx) -> str:
        if op.value is None:
            self.fail(op, "literal pool index out of range")
        lit = op.value
        if lit.name in ("U32", "I32") and op.result is not None:
            self.constants[op.result] = lit.args[0] & 0xFFFFFFFF
        return literal_type(lit)

    def visit_builtin(self, op, ctx) -> str:
        if op.kind.name == "OpaqueExpr":  # vyre.num_workgroups: its operand is an axis
            if op.kind.args[2] or op.axis > 2:
                self.fail(op, "vyre.num_workgroups takes an axis 0, 1 or 2 and no payload")
        elif op.axis > 2:
            self.fail(op, "axis must be 0, 1 or 2")
        return "u32"

    def visit_loop_index(self, op, ctx) -> str:
        if op.var not in ctx[2]:
            self.fail(op, "loop variable is not bound by an enclosing loop")
        return ctx[2][op.var]

    def visit_load(self, op, ctx) -> str:
        s = self.slot(op, op.slot, ("Shared", "Scratch") if op.shared else ("Global",))
        if s.visibility == "WriteOnly":
            self.fail(op, f"load from write-only slot {s.slot} {s.name!r}")
        self.index(op, ctx[1])
        return self.slot_types[s.slot]

    def visit_load_uniform(self, op, ctx) -> str:
        s = self.slot(op, op.slot, ("Uniform",))
        index = op.operands[1]
        if self.val(op, ctx[1], 1) != "u32" or self.constants.get(index) != 0:
            self.fail(op, "the index of LoadConstant must be the u32 literal 0")
        return self.slot_types[s.slot]

    def visit_store(self, op, ctx) -> None:
        s = self.slot(op, op.slot, ("Shared", "Scratch") if op.shared else ("Global",))
        if s.visibility == "ReadOnly":
            self.fail(op, f"store to read-only slot {s.slot} {s.name!r}")
        self.index(op, ctx[1])
        value, held = self.val(op, ctx[1], 2), self.slot_types[s.slot]
        if value != held:
            self.fail(op, f"stores a {value} into slot {s.slot} {s.name!r} of {held}")
        return None

    def visit_length(self, op, ctx) -> str:
        self.slot(op, op.slot, ("Global", "Shared", "Scratch"))
        return "u32"

    def visit_cast(self, op, ctx) -> str:
        try:
            target = type_of(op.kind.args[0])
        except DescriptorFormatError as exc:
            self.fail(op, f"cast target: {exc}")
        return self.typed(op, ("Cast", target), (self.val(op, ctx[1], 0),))

    def visit_atomic(self, op, ctx) -> str:
        return self.atomic_op(op, ctx[1])

    def visit_if_(self, op, ctx) -> None:
        cond = self.val(op, ctx[1], 0)
        if cond != "bool":
            self.fail(op, f"condition has type {cond}, expected bool")
        for idx in op.children:
            self.child(op, ctx, idx)
        return None

    def visit_for_(self, op, ctx) -> None:
        lo, hi = self.val(op, ctx[1], 0), self.val(op, ctx[1], 1)
        if lo != hi or lo not in ("u32", "i32"):
            self.fail(op, f"loop bounds must be one integer type, got {lo}, {hi}")
        self.child(op, ctx, op.body, loops={**ctx[2], op.var: lo}, loop_depth=ctx[3] + 1)
        return None

    def visit_return_(self, op, ctx) -> None:
        if ctx[4]:
            self.fail(op, "return inside a loop's continuing block")
        return None

    def visit_barrier(self, op, ctx) -> None:
        if op.ordering not in _BARRIERS:
            self.fail(op, f"barrier ordering {op.ordering} is not AcqRel or SeqCst")
        return None

    def visit_unknown(self, op, ctx):
        """`arity` refused every kind and extension vyre_build does not use, so this is a
        known extension in the other container."""
        if op.kind.name == "OpaqueNode":
            self.fail(op, f"{op.kind.args[0]} is an OpaqueExpr, not an OpaqueNode")
        self.fail(op, f"{op.kind.args[1]} is an OpaqueNode, not an OpaqueExpr")

    def atomic_op(self, op, scopes) -> str:
        aop, ordering = op.kind.args
        if ordering != "Relaxed":
            self.fail(op, f"atomic ordering {ordering} is not Relaxed")
        s = self.slot(op, op.operands[0], ("Global", "Shared"))
        if s.memory_class == "Global" and s.visibility != "ReadWrite":
            self.fail(op, f"atomic on a {s.visibility} buffer")
        self.index(op, scopes)
        ty = self.slot_types[s.slot]
        for i in range(2, len(op.operands)):
            got = self.val(op, scopes, i)
            if got != ty:
                self.fail(
                    op, f"value operand {i} has type {got}, slot {s.slot} {s.name!r} holds {ty}"
                )
        if s.slot in self.coop_slots:
            self.fail(op, f"atomic on slot {s.slot} {s.name!r}, which cooperative matrices use")
        self.atomic.add(s.slot)
        return self.typed(op, ("Atomic", aop.name), (ty,))
