"""What a set of programs exercised: op-table rows of their descriptors, constructs of
their source trees. The coverage test holds the generator to its claims with these."""

from __future__ import annotations

from collections import Counter

from vyre_build.descriptor import validate
from vyre_build.descriptor.ops import OPS
from vyre_build.descriptor.types import TYPES
from vyre_build.descriptor.view import Walker, view_of

# Rows of descriptor.ops.OPS that no kernel-language source can produce (the frontend
# never emits them), so no generated program can reach them. Each entry says why.
UNREACHABLE = {
    "AbsDiff": "no builtin lowers to AbsDiff",
    "MulHigh": "no builtin lowers to MulHigh",
    "WrappingAdd": "+ lowers to Add (which wraps)",
    "WrappingSub": "- lowers to Sub (which wraps)",
    "Acos": "no acos builtin",
    "Asin": "no asin builtin",
    "Atan": "no atan builtin",
    "Sinh": "no sinh builtin",
    "Cosh": "no cosh builtin",
    "Reciprocal": "no reciprocal builtin (1.0 / x is Div)",
}


# f16 ops whose result the project does not pin (gen_half.py makes only exact f16 values).
HALF_UNPINNED = {"Div", "Sqrt", "InverseSqrt", "Exp", "Exp2", "Log", "Log2"}
HALF_UNPINNED |= {"Sin", "Cos", "Tan", "Tanh"}


def _subgroups_in_language() -> bool:
    from vyre_build.frontend.expressions import ALL_BUILTINS

    return any(b.startswith("subgroup") for b in ALL_BUILTINS)


def unreachable_row(row) -> str | None:
    """Why an op-table row cannot come from source, or None if it can."""
    (family, name), operands = row
    half = any(t in ("f16", "vec2h", "vec4h") for t in (name,) + operands)
    if half and (name in HALF_UNPINNED or family == "Fma"):
        # gen_half.py: every f16 value is exact, compared bit for bit
        return "f16: precision not pinned (Vulkan's and WGSL's f16 bounds): not generated"
    if half and family == "BinOpKind" and name == "Mod":
        return "% on f16 is refused by the frontend"
    if any(t in TYPES and TYPES[t].element == "bf16" for t in (name,) + operands):
        # bf16 (a storage type: loads, stores, selects, conversions to and from f32) came with
        # library.matmul_bf16; tests/unit/test_bf16.py runs its rows on the reference.
        return "bf16 and its vectors: not generated yet (the generator makes no bf16 buffers)"
    if family == "Subgroup" and not _subgroups_in_language():
        return "subgroup ops have no builtin in the kernel language yet (issue 12)"
    if name in UNREACHABLE:
        return UNREACHABLE[name]
    if family == "UnOpKind" and name == "Sign" and operands[0] in ("i32", "u32"):
        return "sign() takes f32 only"
    if family == "BinOpKind" and name == "Mod" and operands[0] == "f32":
        return "% on f32 is refused by the frontend"
    if family == "UnOpKind" and name == "Abs" and operands[0] == "u32":
        return "abs() of a u32 is the value itself"
    if family == "BinOpKind" and name.startswith("Bit") and operands[0] == "bool":
        return "& | ^ on bool are refused (write and, or, !=)"
    if family == "UnOpKind" and name == "BitNot" and operands[0] == "bool":
        return "~ on bool is refused (not is LogicalNot)"
    if family in ("Cast", "Bitcast") and operands[0] == name:
        return "a cast to the operand's own type is no op"
    if family == "Cast" and name == "bool":
        return "bool(x) lowers to x != 0"
    return None


def rows(desc) -> Counter:
    """Op-table rows used by one descriptor (every value op, with its operand types)."""
    info = validate(desc)
    walker = _Rows(desc, info)
    found: Counter = Counter()
    for op in view_of(desc, info).ops:
        row = walker.visit(op)
        if row is not None and row in OPS:
            found[row] += 1
    return found


class _Rows(Walker):
    """The op-table row of an op (`visit(op)`), or None for an op outside the table."""

    def __init__(self, desc, info):
        self.info = info
        self.slot_types = info.slot_types

    def visit_row(self, op):
        """An op-table op: its key on its operands' types."""
        return op.key, tuple(self.info.types.get(v, "?") for v in op.operands)

    visit_binary = visit_unary = visit_fma = visit_select = visit_subgroup = visit_row
    visit_cast = visit_bitcast = visit_construct = visit_extract = visit_row

    def visit_atomic(self, op):
        """Atomic and vyre.atomic (descriptor.memory_order): the slot's element type."""
        return op.key, (self.slot_types[op.slot],)

    visit_ordered_atomic = visit_atomic

    def visit_none(self, op):
        return None

    visit_literal = visit_builtin = visit_subgroup_builtin = visit_loop_index = visit_none
    visit_load = visit_load_uniform = visit_length = visit_store = visit_none
    visit_ordered_load = visit_ordered_store = visit_fence = visit_none
    visit_coop_load = visit_coop_fill = visit_coop_mma = visit_coop_store = visit_none
    visit_if_ = visit_for_ = visit_loop = visit_break_ = visit_continue_ = visit_none
    visit_return_ = visit_barrier = visit_debug = visit_checked = visit_none


def constructs(prog) -> Counter:
    """Statement kinds and tags and expression tags of a program's source tree."""
    found: Counter = Counter()
    for s in prog.all_statements():
        found["stmt:" + (s.tag or s.kind)] += 1
        for e in s.exprs:
            for node in e.walk():
                if node.tag:
                    found[node.tag] += 1
    found[f"workgroup_size:{prog.wg}"] += 1
    found[f"workgroups:{prog.groups}"] += 1
    found["helpers"] += len(prog.helpers)
    found["consts"] += len(prog.consts)
    for p in prog.params:
        found[f"param:{p.role or p.kind}:{p.ty}"] += 1
    return found
