"""Walk a KernelDescriptor and write its one compute function into a `SpirvModule`.

`FunctionWriter` keeps the function's entry-block variables, the entry-block prologue
(builtin loads, hoisted so they dominate every use) and the body words apart, and
tracks the current block: after a terminator (return, break, continue) the rest of a
body is unreachable and is not emitted. Value ops live in `ops`, slots and memory in
`memory`, structured control flow in `control`; this class dispatches each op kind to
its handler (an unknown kind is an EmitError naming the op, its operands and types).
Value types are names: "U32" "I32" "F32" "Bool", and "Vec4F32"-style vectors (`vectors`),
whose OpTypeVector is declared on first use, so scalar-only modules never mention one.
Result ids are handed out in walk order, so output is deterministic.
"""

from __future__ import annotations

import struct
from typing import ClassVar

from vyre_build.descriptor import (
    DescriptorError,
    F32Bits,
    KernelBody,
    KernelDescriptor,
    KernelOp,
    decode_datatype,
)
from vyre_build.errors import EmitError
from vyre_build.spirv import grammar as g
from vyre_build.spirv.control import CONTROL_NONE, ControlFlow, Loop
from vyre_build.spirv.memory import MemoryOps
from vyre_build.spirv.module import OP, SpirvModule
from vyre_build.spirv.ops import ValueOps
from vyre_build.spirv.vectors import VECTOR_TYPES, VectorOps, datatype_name

BUILTINS = {
    "GlobalInvocationId": "GlobalInvocationId",
    "LocalInvocationId": "LocalInvocationId",
    "WorkgroupId": "WorkgroupId",
    "vyre.num_workgroups": "NumWorkgroups",
}
SCALARS = ("U32", "I32", "F32", "Bool")
_LITERAL_TYPES = {"U32": "U32", "I32": "I32", "F32": "F32", "Bool": "Bool"}


def _f32_bits(value) -> int:
    if isinstance(value, F32Bits):
        return value.bits
    return struct.unpack("<I", struct.pack("<f", value))[0]


class FunctionWriter(ValueOps, VectorOps, MemoryOps, ControlFlow):
    """Emits the `main` compute function of one descriptor into `module`."""

    def __init__(self, module: SpirvModule, desc: KernelDescriptor):
        self.m = module
        self.desc = desc
        self.vals: dict[int, tuple[int, str]] = {}  # descriptor SSA id -> (SPIR-V id, type)
        self.known: dict[int, int] = {}  # SSA id -> value, for integer literals
        self.const_bits: dict[int, int] = {}  # SPIR-V constant id -> its 32 bits (integers)
        self.var_words: list[int] = []
        self.prologue: list[int] = []
        self.words: list[int] = []
        self.label = 0
        self.open = False
        self.loops: list[Loop] = []
        self.loop_vars: dict[str, tuple[int, str]] = {}
        self.interface: list[int] = []
        self._builtin_vars: dict[str, int] = {}
        self._builtin_vals: dict[tuple[str, int], int] = {}
        self._builtin_vecs: dict[str, int] = {}
        self._glsl = 0
        self._type_ids = {
            "U32": module.type_int(False),
            "I32": module.type_int(True),
            "F32": module.type_float(),
            "Bool": module.type_bool(),
        }

    # --- small builders ------------------------------------------------------------

    def tid(self, ty: str) -> int:
        got = self._type_ids.get(ty)
        if got is None:  # vector types are declared on first use only
            if ty not in VECTOR_TYPES:
                raise EmitError(f"SPIR-V emitter: internal type {ty!r} is unknown")
            got = self._type_ids[ty] = self.vector_type_id(ty)
        return got

    def const(self, ty: str, value) -> int:
        if ty == "U32":
            return self.m.const_u32(value)
        if ty == "I32":
            return self.m.const_i32(value)
        if ty == "F32":
            return self.m.const_f32_bits(_f32_bits(float(value)))
        if ty in VECTOR_TYPES:
            return self.vector_const(ty, value)
        return self.m.const_bool(bool(value))

    def op_typed(self, opname: str, type_id: int, *operands: int) -> int:
        rid = self.m.new_id()
        w = self.words
        w.append(((len(operands) + 3) << 16) | OP[opname])
        w.append(type_id)
        w.append(rid)
        w.extend(operands)
        return rid

    def op(self, opname: str, ty: str, *operands: int) -> int:
        return self.op_typed(opname, self.tid(ty), *operands)

    def inst(self, opname: str, *operands: int) -> None:
        self.words.append(((len(operands) + 1) << 16) | OP[opname])
        self.words.extend(operands)

    def glsl(self, name: str, ty: str, *operands: int) -> int:
        if not self._glsl:
            self._glsl = self.m.ext_inst_import("GLSL.std.450")
        return self.op("OpExtInst", ty, self._glsl, g.GLSL_STD_450[name], *operands)

    def fail(self, kop: KernelOp, reason: str):
        types = [self.vals[o][1] if o in self.vals else "?" for o in kop.operands]
        raise EmitError(
            f"SPIR-V emitter: cannot emit op {kop.kind!r} with operands "
            f"{list(kop.operands)} (types {types}) in kernel {self.desc.id!r}: {reason}"
        )

    # --- blocks --------------------------------------------------------------------

    def start_block(self, label: int) -> None:
        self.inst("OpLabel", label)
        self.label = label
        self.open = True

    def branch(self, target: int) -> bool:
        """Close the current block with a branch to `target`; False if it was already closed."""
        if not self.open:
            return False
        self.inst("OpBranch", target)
        self.open = False
        return True

    def selection(self, cond: int, then_label: int, else_label: int, merge: int) -> None:
        self.inst("OpSelectionMerge", merge, CONTROL_NONE)
        self.inst("OpBranchConditional", cond, then_label, else_label)
        self.open = False

    def function_var(self, type_id: int, initializer: int | None = None) -> int:
        """An OpVariable in the entry block (where SPIR-V requires Function variables)."""
        ptr = self.m.type_pointer("Function", type_id)
        vid = self.m.new_id()
        extra = () if initializer is None else (initializer,)
        self.m.emit(self.var_words, "OpVariable", ptr, vid, g.STORAGECLASS["Function"], *extra)
        return vid

    # --- builtins ------------------------------------------------------------------

    def builtin(self, name: str, axis: int, kop: KernelOp) -> int:
        if axis > 2:
            self.fail(kop, f"axis {axis} is not 0, 1 or 2")
        key = (name, axis)
        got = self._builtin_vals.get(key)
        if got is not None:
            return got
        vec = self._builtin_vecs.get(name)
        m = self.m
        u32 = self._type_ids["U32"]
        if vec is None:
            v3 = m.type_vector(u32, 3)
            var = m.global_variable(m.type_pointer("Input", v3), "Input")
            m.decorate(var, "BuiltIn", g.BUILTIN[name])
            m.name(var, name)
            self.interface.append(var)
            vec = self._builtin_vecs[name] = m.new_id()
            m.emit(self.prologue, "OpLoad", v3, vec, var)
        rid = m.new_id()
        m.emit(self.prologue, "OpCompositeExtract", u32, rid, vec, axis)
        self._builtin_vals[key] = rid
        return rid

    def builtin_scalar(self, name: str) -> int:
        """A scalar u32 input builtin (LocalInvocationIndex), loaded once in the entry block."""
        got = self._builtin_vals.get((name, -1))
        if got is None:
            m = self.m
            u32 = self._type_ids["U32"]
            var = m.global_variable(m.type_pointer("Input", u32), "Input")
            m.decorate(var, "BuiltIn", g.BUILTIN[name])
            m.name(var, name)
            self.interface.append(var)
            got = self._builtin_vals[(name, -1)] = m.new_id()
            m.emit(self.prologue, "OpLoad", u32, got, var)
        return got

    # --- the walk --------------------------------------------------------------------

    def value(self, ssa: int, kop: KernelOp) -> tuple[int, str]:
        got = self.vals.get(ssa)
        if got is None:
            self.fail(kop, f"operand %{ssa} is not defined in scope")
        return got

    def body(self, body: KernelBody) -> None:
        handlers = self.HANDLERS
        for kop in body.ops:
            if not self.open:
                return  # everything after a return/break/continue is unreachable
            handler = handlers.get(kop.kind.name)
            if handler is None:
                self.fail(
                    kop, "op kind not supported by vyre_build (see docs/descriptor-conventions.md)"
                )
            rv = handler(self, kop, body)
            if rv is not None:
                if kop.result is None:
                    self.fail(kop, "value op without a result id")
                self.vals[kop.result] = rv

    def child(self, body: KernelBody, index: int, kop: KernelOp) -> KernelBody:
        if index >= len(body.children):
            self.fail(kop, f"child body {index} does not exist ({len(body.children)} children)")
        return body.children[index]

    def operands(self, kop: KernelOp, n: int) -> tuple[int, ...]:
        if len(kop.operands) != n:
            self.fail(kop, f"expects {n} operands, got {len(kop.operands)}")
        return kop.operands

    def h_literal(self, kop: KernelOp, body: KernelBody):
        (index,) = self.operands(kop, 1)
        if index >= len(body.literals):
            self.fail(
                kop, f"literal pool index {index} out of range ({len(body.literals)} literals)"
            )
        lit = body.literals[index]
        ty = _LITERAL_TYPES.get(lit.name)
        if ty is None:
            self.fail(kop, f"literal {lit!r} has no supported type")
        value = lit.args[0]
        if ty == "F32":
            return self.m.const_f32_bits(_f32_bits(value)), ty
        cid = self.const(ty, value)
        if ty in ("U32", "I32"):
            self.const_bits[cid] = value & 0xFFFFFFFF
            if kop.result is not None:
                self.known[kop.result] = value & 0xFFFFFFFF
        return cid, ty

    def h_copy(self, kop: KernelOp, body: KernelBody):
        (x,) = self.operands(kop, 1)
        if x in self.known and kop.result is not None:
            self.known[kop.result] = self.known[x]
        return self.value(x, kop)

    def h_builtin(self, kop: KernelOp, body: KernelBody):
        (axis,) = self.operands(kop, 1)
        return self.builtin(BUILTINS[kop.kind.name], axis, kop), "U32"

    def h_binop(self, kop: KernelOp, body: KernelBody):
        a, b = self.operands(kop, 2)
        (ai, at), (bi, bt) = self.value(a, kop), self.value(b, kop)
        return self.binary(kop.kind.args[0].name, ai, at, bi, bt, kop)

    def h_unop(self, kop: KernelOp, body: KernelBody):
        (a,) = self.operands(kop, 1)
        ai, at = self.value(a, kop)
        return self.unary(kop.kind.args[0].name, ai, at, kop)

    def h_fma(self, kop: KernelOp, body: KernelBody):
        vals = [self.value(x, kop) for x in self.operands(kop, 3)]
        ty = vals[0][1]
        if ty not in ("F32", "Vec2F32", "Vec4F32") or any(t != ty for _, t in vals):
            self.fail(kop, "Fma needs three F32 operands (or three F32 vectors of one size)")
        return self.glsl("Fma", ty, *(i for i, _ in vals)), ty

    def h_select(self, kop: KernelOp, body: KernelBody):
        c, t, f = (self.value(x, kop) for x in self.operands(kop, 3))
        if c[1] != "Bool" or t[1] != f[1]:
            self.fail(kop, "Select needs a Bool condition and two values of one type")
        return self.select_value(t[1], c[0], t[0], f[0]), t[1]

    def h_cast(self, kop: KernelOp, body: KernelBody):
        (x,) = self.operands(kop, 1)
        xi, xt = self.value(x, kop)
        dt = kop.kind.args[0]
        target = datatype_name(dt) or repr(dt)
        return self.cast(xi, xt, target, kop), target

    def h_opaque_expr(self, kop: KernelOp, body: KernelBody):
        _, kind, payload = kop.kind.args
        if kind == "vyre.num_workgroups":
            return self.h_builtin_named("vyre.num_workgroups", kop)
        if kind == "vyre.bitcast":
            (x,) = self.operands(kop, 1)
            xi, xt = self.value(x, kop)
            try:
                dt = decode_datatype(payload)
            except DescriptorError as exc:
                self.fail(kop, f"bitcast payload is not a DataType: {exc}")
            target = dt.name if not dt.args else repr(dt)
            if target not in ("U32", "I32", "F32") or xt not in ("U32", "I32", "F32"):
                self.fail(
                    kop, f"bitcast from {xt} to DataType payload {payload.hex()} is not supported"
                )
            return (xi if target == xt else self.op("OpBitcast", target, xi)), target
        if kind == "vyre.vec":
            return self.vector_construct(kop, payload)
        if kind == "vyre.extract":
            return self.vector_extract(kop, payload)
        self.fail(kop, f"OpaqueExpr extension_kind {kind!r} is unknown")

    def h_builtin_named(self, name: str, kop: KernelOp):
        (axis,) = self.operands(kop, 1)
        return self.builtin(BUILTINS[name], axis, kop), "U32"

    HANDLERS: ClassVar[dict] = {
        "Literal": h_literal,
        "Copy": h_copy,
        "GlobalInvocationId": h_builtin,
        "LocalInvocationId": h_builtin,
        "WorkgroupId": h_builtin,
        "BinOpKind": h_binop,
        "UnOpKind": h_unop,
        "Fma": h_fma,
        "Select": h_select,
        "Cast": h_cast,
        "OpaqueExpr": h_opaque_expr,
        "StructuredIfThen": ControlFlow.h_if,
        "StructuredIfThenElse": ControlFlow.h_if,
        "StructuredForLoop": ControlFlow.h_for,
        "LoopIndex": ControlFlow.h_loop_index,
        "OpaqueNode": ControlFlow.h_opaque_node,
        "Return": ControlFlow.h_return,
        "Barrier": ControlFlow.h_barrier,
        "LoadGlobal": MemoryOps.h_load,
        "LoadShared": MemoryOps.h_load,
        "LoadConstant": MemoryOps.h_load_constant,
        "StoreGlobal": MemoryOps.h_store,
        "StoreShared": MemoryOps.h_store,
        "BufferLength": MemoryOps.h_length,
        "Atomic": MemoryOps.h_atomic,
    }

    # --- the function ------------------------------------------------------------------

    def write(self) -> int:
        """Emit the whole function; returns its id (for OpEntryPoint)."""
        m = self.m
        void = m.type_void()
        fn_type = m.type_function(void)
        fn = m.new_id()
        entry = m.new_id()
        self.declare_slots()
        self.label = entry
        self.open = True
        self.zero_init_shared()
        self.body(self.desc.body)
        if self.open:
            self.inst("OpReturn")
        out = m.functions
        m.emit(out, "OpFunction", void, fn, CONTROL_NONE, fn_type)
        m.emit(out, "OpLabel", entry)
        out += self.var_words
        out += self.prologue
        out += self.words
        m.emit(out, "OpFunctionEnd")
        return fn
