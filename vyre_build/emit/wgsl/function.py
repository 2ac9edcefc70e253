"""The WGSL function writer: one walk over a validated descriptor's bodies.

Every value op binds `let _v<id>: T = <expr>;` with its type from `DescriptorInfo`; value
ops take their template from `values.RULES` by (op, operand types), memory ops and control
flow have a handler each (`memory`, `control`): the writer is a `descriptor.view.Walker`
over the descriptor's decoded ops, one method per op class. The descriptor is validated, so the only
failure left is a row with no WGSL rule (EmitError naming the op and its operand types).
"""

from __future__ import annotations

import struct

from vyre_build.descriptor import DescriptorInfo, KernelDescriptor, Variant
from vyre_build.descriptor.view import BodyView, OpView, Walker, view_of
from vyre_build.emit.wgsl.control import ControlRules
from vyre_build.emit.wgsl.debug import DebugRules
from vyre_build.emit.wgsl.memory import MemoryRules
from vyre_build.emit.wgsl.ordered import OrderedRules
from vyre_build.emit.wgsl.helpers import HELPER_CALL
from vyre_build.emit.wgsl.values import COMPONENTS, I32_MIN, RULES, wgsl_type
from vyre_build.core.errors import EmitError

__all__ = ["FunctionWriter", "INDENT", "f32_literal"]

INDENT = "    "
_AXES = "xyz"
_BUILTINS = {
    "GlobalInvocationId": "gid",
    "LocalInvocationId": "lid",
    "WorkgroupId": "wid",
    "vyre.num_workgroups": "nwg",
}


def f32_literal(value: float) -> str:
    """An f32 literal with the exact bits of `value` (rounded to f32 as the codec does)."""
    bits = getattr(value, "bits", None)
    if bits is None:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if (bits >> 23) & 0xFF in (0, 0xFF) and bits & 0x7FFFFFFF:
        # NaN payloads, infinities and subnormals: only a bit pattern spells them safely.
        return f"bitcast<f32>(0x{bits:08x}u)"
    v = struct.unpack("<f", struct.pack("<I", bits))[0]
    # repr is exact for the double holding this f32, so reading it back as f32 is exact.
    return ("-" if bits >> 31 else "") + repr(abs(v)) + "f"


def literal(lit: Variant) -> str:
    """The WGSL expression of a LiteralValue."""
    (v,) = lit.args
    if lit.name == "U32":
        return f"{v}u"
    if lit.name == "I32":
        return I32_MIN if v == -(1 << 31) else f"{v}i"
    if lit.name == "F32":
        return f32_literal(v)
    return "true" if v else "false"


class FunctionWriter(Walker, MemoryRules, ControlRules, DebugRules, OrderedRules):
    """Writes the statements of `main` into `self.lines` (see module docstring): one
    `Walker` method per op class, `visit(op, body, depth)`."""

    def __init__(
        self,
        desc: KernelDescriptor,
        info: DescriptorInfo,
        prefix: str = "",
        notes: dict[int, str] | None = None,
    ):
        self.desc = desc
        self.view = view_of(desc, info)
        self.notes = notes or {}  # id(KernelOp) -> a comment line written before it
        self.prefix = prefix
        self.info = info
        self.slots = {s.slot: s for s in desc.slots}
        self.lines: list[str] = []
        self.loops: list[tuple[str, str]] = []  # (loop_var, WGSL variable) of enclosing for loops
        self.helpers: set[str] = set()  # `_vy_*` helper functions the templates used call
        self.inputs: set[str] = set()  # subgroup builtins the entry point takes: sgid, sgsz, ...
        self.loop_count = 0
        self.lengths: dict[int, str] = {}  # buffer slot -> its length's `let` (visit_length)

    def write(self) -> tuple[list[str], list[str]]:
        """(module-scope declarations, the entry point's body lines)."""
        decls, entry_vars = self.declarations()
        self.lines = [INDENT + v for v in entry_vars + self.zero_shared()]
        head = len(self.lines)
        self.body(self.view.body, depth=1)
        self.lines[head:head] = [INDENT + v for v in self.length_lets()]
        return decls, self.lines

    def fail(self, op: OpView, why: str) -> EmitError:
        types = ", ".join(f"{o}: {self.info.types.get(o, '?')}" for o in op.operands)
        return EmitError(
            f"kernel {self.desc.id!r}: cannot emit WGSL for op {op.kind!r} "
            f"(operands [{types}], result {op.result}): {why}"
        )

    def emit(self, depth: int, line: str) -> None:
        self.lines.append(INDENT * depth + line)

    def body(self, body: BodyView, depth: int) -> None:
        for op in body.ops:
            for note in self.notes.get(id(op.op), "").splitlines():
                self.emit(depth, note)
            self.visit(op, body, depth)

    def child(self, body: BodyView, index: int, depth: int) -> None:
        self.body(body.children[index], depth)

    def bind(self, op: OpView, depth: int, expr: str) -> None:
        self.emit(depth, f"let _v{op.result}: {wgsl_type(self.info.types[op.result])} = {expr};")

    # --- value ops ------------------------------------------------------------------
    def visit_literal(self, op, body, depth):
        self.bind(op, depth, literal(op.value))

    def visit_builtin(self, op, body, depth):
        self.bind(op, depth, f"{_BUILTINS[op.name]}.{_AXES[op.axis]}")

    def visit_subgroup_builtin(self, op, body, depth):
        if op.name == "SubgroupLocalId":
            self.inputs.add("sgid")
            self.bind(op, depth, "sgid")
        elif op.name == "SubgroupSize":
            self.inputs.add("sgsz")
            self.bind(op, depth, "sgsz")
        elif op.name == "vyre.subgroup_id":  # naga's @builtin(subgroup_id)
            self.inputs.add("sgix")
            self.bind(op, depth, "sgix")
        else:  # vyre.num_subgroups: derived, as in the SPIR-V (emit/spirv/function.py)
            self.inputs.add("sgsz")
            wx, wy, wz = self.desc.workgroup_size
            self.bind(op, depth, f"(({wx * wy * wz - 1}u + sgsz) / sgsz)")

    def visit_checked(self, op, body, depth):
        # WGSL's legal form keeps every check in the module (legalize(device_checks=False)); a
        # descriptor that holds vyre.checked anyway gets its default
        self.bind(op, depth, "true")

    def rule(self, op, key) -> str:
        row = (key, tuple(self.info.types[o] for o in op.operands))
        if row not in RULES:
            what = " ".join(k for k in key if k)
            raise self.fail(op, f"no WGSL rule for {what} on ({', '.join(row[1])})")
        tpl = RULES[row]
        if tpl and "_vy_" in tpl:
            self.helpers.update(HELPER_CALL.findall(tpl))
        return tpl

    def value(self, op, body, depth) -> None:
        """An op-table op: its rule's template on the operands (`op.key` names the row)."""
        key = op.key
        names = {k: f"_v{o}" for k, o in zip("abc", op.operands)}
        if key == ("Subgroup", "broadcast"):  # WGSL wants the lane as a const-expression
            names["lane"] = f"{self.info.constants[op.operands[1]]}u"
        if key == ("Subgroup", "elect"):
            self.inputs.add("sgid")
        self.bind(op, depth, self.rule(op, key).format(**names))

    visit_binary = visit_unary = visit_fma = visit_select = visit_cast = visit_bitcast = (
        visit_subgroup
    ) = value

    def visit_construct(self, op, body, depth):
        ty = self.info.types[op.result]
        self.rule(op, ("Construct", ty))
        parts = [f"_v{o}" for o in op.operands]
        args = parts[0] if len(set(parts)) == 1 else ", ".join(parts)  # a splat
        self.bind(op, depth, f"{wgsl_type(ty)}({args})")

    def visit_extract(self, op, body, depth):
        self.rule(op, op.key)
        self.bind(op, depth, f"_v{op.a}.{COMPONENTS[op.component]}")

    def visit_loop_index(self, op, body, depth):
        for loop_var, var in reversed(self.loops):
            if loop_var == op.var:
                self.bind(op, depth, var)
                return

    # --- cooperative matrices: none in WGSL (compile_file never asks: wgsl_refusal) ---------
    def no_matrices(self, op, body, depth):
        raise self.fail(op, "WGSL has no cooperative matrices (emit SPIR-V for this kernel)")

    visit_coop_load = visit_coop_fill = visit_coop_mma = visit_coop_store = no_matrices
