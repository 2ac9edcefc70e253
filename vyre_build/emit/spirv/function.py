"""The SPIR-V function writer: one walk over a validated descriptor into a `SpirvModule`.

`FunctionWriter` keeps the function's entry-block variables, the entry-block prologue
(builtin loads, hoisted so they dominate every use) and the body words apart, and
tracks the current block: after a terminator (return, break, continue) the rest of a
body is unreachable and is not emitted. Value ops take their rule from `values.RULES` by
(op, operand types); memory ops and control flow have a handler each (`memory`,
`control`). Value types are the descriptor's names ("u32", "vec4f"; "vec4b" is the
writer's own bool vector), each type declared on first use. Result ids are handed out in
walk order, so output is deterministic. The only failure left is a row with no rule.
"""

from __future__ import annotations

import struct

from vyre_build.core import bfloat16
from vyre_build.descriptor import DescriptorInfo, F32Bits, KernelDescriptor, KernelOp
from vyre_build.descriptor.view import Barrier, BodyView, DescriptorView, OpView, Walker, view_of
from vyre_build.descriptor.types import MATRICES, TYPES
from vyre_build.emit.spirv import grammar as g
from vyre_build.emit.spirv.control import CONTROL_NONE, ControlFlow, Loop
from vyre_build.emit.spirv.debug import DebugOps
from vyre_build.emit.spirv.matrices import CoopOps
from vyre_build.emit.spirv.memory import MemoryOps
from vyre_build.emit.spirv.module import OP, SpirvModule
from vyre_build.emit.spirv.ordered import OrderedOps
from vyre_build.emit.spirv.values import RULES
from vyre_build.core.errors import EmitError
from vyre_build.core.features import VULKAN_MEMORY_MODEL

__all__ = ["FunctionWriter"]

BUILTINS = {
    "GlobalInvocationId": "GlobalInvocationId",
    "LocalInvocationId": "LocalInvocationId",
    "WorkgroupId": "WorkgroupId",
    "vyre.num_workgroups": "NumWorkgroups",
}


def _f32_bits(value) -> int:
    if isinstance(value, F32Bits):
        return value.bits
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _shape(ty: str) -> tuple[str, int]:
    """(element, count) of a value type or of the writer's bool vectors ("vec2b", "vec4b")."""
    if ty in TYPES:
        return TYPES[ty].element, TYPES[ty].count
    return "bool", int(ty[3])


def _has_storage_barrier(view: DescriptorView) -> bool:
    return any(isinstance(op, Barrier) and op.ordering == "SeqCst" for op in view.ops)


_SUBGROUP_BUILTINS = {
    "SubgroupLocalId": "SubgroupLocalInvocationId",
    "SubgroupSize": "SubgroupSize",
    "vyre.subgroup_id": "SubgroupId",
}


class FunctionWriter(Walker, MemoryOps, ControlFlow, CoopOps, DebugOps, OrderedOps):
    """Emits the `main` compute function of one descriptor into `module` (`vmm`: the
    module uses the Vulkan memory model, as cooperative matrices need): a
    `descriptor.view.Walker`, one method per op class."""

    def __init__(
        self, module: SpirvModule, desc: KernelDescriptor, info: DescriptorInfo, vmm=False
    ):
        self.m = module
        self.vmm = vmm
        # storage accesses are NonPrivate where a storage barrier or an order synchronises them
        self.view = view_of(desc, info)
        self.ordered = VULKAN_MEMORY_MODEL in info.features
        self.storage_sync = vmm and (_has_storage_barrier(self.view) or self.ordered)
        self.coop_views: dict[int, tuple[int, int]] = {}
        self.desc = desc
        self.info = info
        self.vals: dict[int, int] = {}  # descriptor SSA id -> SPIR-V id
        self.const_bits: dict[int, int] = {}  # SPIR-V constant id -> its 32 bits (integers)
        self.var_words: list[int] = []
        self.prologue: list[int] = []
        self.words: list[int] = []
        self.label = 0
        self.open = False
        self.loops: list[Loop] = []
        self.loop_vars: dict[str, int] = {}
        self.interface: list[int] = []
        self._builtin_vars: dict[str, int] = {}
        self._builtin_vals: dict[tuple[str, int], int] = {}
        self._builtin_vecs: dict[str, int] = {}
        self._type_ids = {
            "u32": module.type_int(False),
            "i32": module.type_int(True),
            "f32": module.type_float(),
            "bool": module.type_bool(),
        }

    # --- small builders ------------------------------------------------------------

    def tid(self, ty: str) -> int:
        got = self._type_ids.get(ty)
        if got is None and ty in MATRICES:
            got = self._type_ids[ty] = self.matrix_type(ty)
        if got is None:  # f16, bf16 and vector types are declared on first use only
            element, n = _shape(ty)
            if ty == "bf16":
                got = self._type_ids[ty] = self.m.type_bfloat16()
            elif n == 1:  # f16
                got = self._type_ids[ty] = self.m.type_float(16)
            else:
                got = self._type_ids[ty] = self.m.type_vector(self.tid(element), n)
        return got

    def const(self, ty: str, value) -> int:
        if ty in MATRICES:  # a cooperative matrix constant has one constituent
            return self.m.const_composite(self.tid(ty), (self.const(TYPES[ty].element, value),))
        element, n = _shape(ty)
        if n > 1:  # every component `value` (OpConstantComposite, deduplicated)
            return self.m.const_composite(self.tid(ty), (self.const(element, value),) * n)
        if ty == "u32":
            return self.m.const_u32(value)
        if ty == "i32":
            return self.m.const_i32(value)
        if ty == "f32":
            return self.m.const_f32_bits(_f32_bits(float(value)))
        if ty == "f16":
            return self.m.const_f16_bits(struct.unpack("<H", struct.pack("<e", float(value)))[0])
        if ty == "bf16":
            return self.m.const_bf16_bits(bfloat16.bits_of(float(value)))
        return self.m.const_bool(bool(value))

    def zero(self, ty: str) -> int:
        return self.const(ty, 0)

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
        return self.op("OpExtInst", ty, self.m.glsl_std_450(), g.GLSL_STD_450[name], *operands)

    def splat(self, ty: str, scalar: int) -> int:
        """A vector of type `ty` with every component the (runtime) scalar `scalar`."""
        return self.op("OpCompositeConstruct", ty, *(scalar,) * _shape(ty)[1])

    def select_value(self, ty: str, cond: int, if_true: int, if_false: int) -> int:
        """OpSelect on a scalar bool `cond`; a vector `ty` gets the condition splatted first."""
        n = _shape(ty)[1]
        if n > 1:
            cond = self.splat(f"vec{n}b", cond)
        return self.op("OpSelect", ty, cond, if_true, if_false)

    def fail(self, kop: KernelOp, reason: str):
        types = [self.info.types.get(o, "?") for o in kop.operands]
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

    def builtin(self, name: str, axis: int) -> int:
        key = (name, axis)
        got = self._builtin_vals.get(key)
        if got is not None:
            return got
        vec = self._builtin_vecs.get(name)
        m = self.m
        u32 = self._type_ids["u32"]
        if vec is None:
            v3 = m.type_vector(u32, 3)
            var = m.global_variable(m.type_pointer("Input", v3), "Input")
            m.decorate(var, "BuiltIn", g.BUILTIN[name])
            m.name(var, name)
            self.interface.append(var)
            vec = self._builtin_vecs[name] = m.new_id()
            m.emit(self.prologue, "OpLoad", v3, vec, var)
            if name in ("GlobalInvocationId", "WorkgroupId"):
                vec = self._builtin_vecs[name] = self._offset(vec, name)
        rid = m.new_id()
        m.emit(self.prologue, "OpCompositeExtract", u32, rid, vec, axis)
        self._builtin_vals[key] = rid
        return rid

    def _offset(self, raw: int, name: str) -> int:
        # A split dispatch's piece starts at the base workgroup its pipeline specialises
        # (0 otherwise, which the driver folds away): WorkgroupId + base, and
        # GlobalInvocationId + base * workgroup size.
        m = self.m
        u32 = self._type_ids["u32"]
        v3 = m.type_vector(u32, 3)
        base = m.new_id()
        m.emit(self.prologue, "OpCompositeConstruct", v3, base, *m.workgroup_base())
        if name == "GlobalInvocationId":
            size = m.const_composite(v3, tuple(m.const_u32(n) for n in self.desc.workgroup_size))
            scaled = m.new_id()
            m.emit(self.prologue, "OpIMul", v3, scaled, base, size)
            base = scaled
        out = m.new_id()
        m.emit(self.prologue, "OpIAdd", v3, out, raw, base)
        return out

    def num_subgroups(self) -> int:
        """ceil(workgroup invocations / SubgroupSize), not the NumSubgroups builtin: lavapipe
        reports floor() for a workgroup that is not a multiple (12 invocations, 8 lanes: 1)."""
        per = self.desc.workgroup_size[0] * self.desc.workgroup_size[1]
        per *= self.desc.workgroup_size[2]
        size = self.builtin_scalar("SubgroupSize")
        top = self.op("OpIAdd", "u32", size, self.const("u32", per - 1))
        return self.op("OpUDiv", "u32", top, size)

    def builtin_scalar(self, name: str) -> int:
        """A scalar u32 input builtin (LocalInvocationIndex), loaded once in the entry block."""
        got = self._builtin_vals.get((name, -1))
        if got is None:
            m = self.m
            u32 = self._type_ids["u32"]
            var = m.global_variable(m.type_pointer("Input", u32), "Input")
            m.decorate(var, "BuiltIn", g.BUILTIN[name])
            m.name(var, name)
            self.interface.append(var)
            got = self._builtin_vals[(name, -1)] = m.new_id()
            m.emit(self.prologue, "OpLoad", u32, got, var)
        return got

    # --- the walk --------------------------------------------------------------------

    def body(self, body: BodyView) -> None:
        for kop in body.ops:
            if not self.open:
                return  # everything after a return/break/continue is unreachable
            rv = self.visit(kop, body)
            if rv is not None:
                self.vals[kop.result] = rv

    def h_literal(self, kop: OpView, body):
        ty, value = self.info.types[kop.result], kop.value.args[0]
        if ty == "f32":
            return self.m.const_f32_bits(_f32_bits(value))
        cid = self.const(ty, value)
        if ty in ("u32", "i32"):
            self.const_bits[cid] = value & 0xFFFFFFFF
        return cid

    def h_builtin(self, kop: OpView, body):
        return self.builtin(BUILTINS[kop.name], kop.axis)

    def rule(self, kop: OpView, key):
        types = tuple(self.info.types[o] for o in kop.operands)
        rule = RULES.get((key, types))
        if rule is None:
            what = " ".join(k for k in key if k)
            self.fail(kop, f"no SPIR-V rule for {what} on ({', '.join(types)})")
        ids = tuple(self.vals[o] for o in kop.operands)
        return rule(self, ids, types, self.info.types[kop.result])

    def h_value(self, kop: OpView, body):
        """An op-table op: its rule (`kop.key` names the row)."""
        return self.rule(kop, kop.key)

    def h_subgroup_builtin(self, kop: OpView, body):
        if kop.name == "vyre.num_subgroups":  # ceil(invocations / SubgroupSize): see below
            return self.num_subgroups()
        return self.builtin_scalar(_SUBGROUP_BUILTINS[kop.name])

    def h_checked(self, kop: OpView, body):
        return self.m.checked()

    def h_typed(self, kop: OpView, body):
        """Cast, Bitcast, Construct: the row of their result type."""
        return self.rule(kop, (kop.key[0], self.info.types[kop.result]))

    def h_extract(self, kop: OpView, body):
        ty = self.info.types[kop.result]
        return self.op("OpCompositeExtract", ty, self.vals[kop.operands[0]], kop.component)

    # One method per op class of descriptor.view (the Walker's table).
    visit_literal, visit_builtin, visit_subgroup_builtin = h_literal, h_builtin, h_subgroup_builtin
    visit_binary = visit_unary = visit_fma = visit_select = visit_subgroup = h_value
    visit_cast = visit_bitcast = visit_construct = h_typed
    visit_extract, visit_checked = h_extract, h_checked
    visit_load, visit_store, visit_atomic = MemoryOps.h_load, MemoryOps.h_store, MemoryOps.h_atomic
    visit_load_uniform, visit_length = MemoryOps.h_load_constant, MemoryOps.h_length
    visit_ordered_atomic = visit_ordered_load = OrderedOps.h_memory_expr
    visit_ordered_store = visit_fence = OrderedOps.h_memory_node
    visit_coop_load, visit_coop_fill = CoopOps.h_coop_load, CoopOps.h_coop_fill
    visit_coop_mma, visit_coop_store = CoopOps.h_coop_mma, CoopOps.h_coop_store
    visit_if_, visit_for_, visit_loop = ControlFlow.h_if, ControlFlow.h_for, ControlFlow.h_loop
    visit_loop_index = ControlFlow.h_loop_index
    visit_break_, visit_continue_ = ControlFlow.h_break, ControlFlow.h_continue
    visit_return_, visit_barrier = ControlFlow.h_return, ControlFlow.h_barrier
    visit_debug = DebugOps.h_debug

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
        self.body(self.view.body)
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
