"""Per-op rules of the WGSL emitter: one `op_<KernelOpKind>` method per supported kind.

`OpRules` is mixed into the emitter (`vyre_build/emit_wgsl.py`), which provides the
walk and the checked accessors (`arity`, `val`, `slot`, `bind`, `child`, `element`,
`fail`). Each rule checks its operands against docs/descriptor-conventions.md and
either writes statements or raises `EmitError` naming the op, operands and types.
`ctx` is `(body, env, depth, in_continuing, loops_in_continuing)`.
"""

from __future__ import annotations

import struct

from vyre_build.descriptor import ENUMS, DescriptorError, Variant, decode_datatype
from vyre_build.wgsl import tables as T

_AXES = "xyz"


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


def literal(lit: Variant) -> tuple[str, str]:
    """(type, WGSL expression) of a LiteralValue."""
    (v,) = lit.args
    if lit.name == "U32":
        return "U32", f"{v}u"
    if lit.name == "I32":
        return "I32", T.I32_MIN if v == -(1 << 31) else f"{v}i"
    if lit.name == "F32":
        return "F32", f32_literal(v)
    return "Bool", "true" if v else "false"


def bitcast_target(payload: bytes) -> str | None:
    """The DataType name a `vyre.bitcast` payload encodes (the value types are 1-byte variants)."""
    if len(payload) == 1 and payload[0] < len(ENUMS["DataType"]):
        name, fields = ENUMS["DataType"][payload[0]]
        if not fields:
            return name
    return None


class OpRules:
    """The op -> WGSL rules (see module docstring)."""

    # --- values -------------------------------------------------------------------
    def op_Literal(self, op, ctx):
        body, env = ctx[0], ctx[1]
        self.arity(op, env, 1)
        i = op.operands[0]
        if not 0 <= i < len(body.literals):
            raise self.fail(
                op,
                env,
                f"literal pool index {i} out of range (the body has {len(body.literals)} literals)",
            )
        ty, expr = literal(body.literals[i])
        if ty == "U32":
            self.u32_literals[op.result] = body.literals[i].args[0]
        self.bind(op, ctx, ty, expr)

    def _builtin(self, op, ctx, vec: str):
        self.arity(op, ctx[1], 1)
        axis = op.operands[0]
        if axis not in (0, 1, 2):
            raise self.fail(op, ctx[1], f"axis {axis} is not 0, 1 or 2")
        self.bind(op, ctx, "U32", f"{vec}.{_AXES[axis]}")

    def op_GlobalInvocationId(self, op, ctx):
        self._builtin(op, ctx, "gid")

    def op_LocalInvocationId(self, op, ctx):
        self._builtin(op, ctx, "lid")

    def op_WorkgroupId(self, op, ctx):
        self._builtin(op, ctx, "wid")

    def _load(self, op, ctx, classes):
        env = ctx[1]
        self.arity(op, env, 2)
        s = self.slot(op, env, classes)
        index, _ = self.val(op, env, 1, "U32")
        ref, _, ok = self.element(s, index)
        ty = T.type_key(s.element_type)
        value = f"atomicLoad(&{ref})" if s.slot in self.atomic else ref
        self.bind(op, ctx, ty, f"select({T.ZERO[ty]}, {value}, {ok})")

    def op_LoadGlobal(self, op, ctx):
        self._load(op, ctx, ("Global",))

    def op_LoadShared(self, op, ctx):
        self._load(op, ctx, ("Shared", "Scratch"))

    def op_LoadConstant(self, op, ctx):
        env = ctx[1]
        self.arity(op, env, 2)
        s = self.slot(op, env, ("Uniform",))
        self.val(op, env, 1, "U32")
        member = f"params.{self.names[s.slot]}"
        ty = T.type_key(s.element_type)
        self.bind(op, ctx, ty, f"({member} != 0u)" if ty == "Bool" else member)

    def op_BufferLength(self, op, ctx):
        env = ctx[1]
        self.arity(op, env, 1)
        s = self.slot(op, env, ("Global", "Shared", "Scratch"))
        name = self.names[s.slot]
        self.bind(
            op,
            ctx,
            "U32",
            f"arrayLength(&{name})" if s.memory_class == "Global" else f"{s.element_count}u",
        )

    def op_BinOpKind(self, op, ctx):
        env = ctx[1]
        self.arity(op, env, 2)
        name = op.kind.args[0].name
        a, ta = self.val(op, env, 0)
        if (name, ta) in T.SHIFTS:
            b, _ = self.val(op, env, 1, "U32")
            ty, tpl = T.SHIFTS[(name, ta)]
        elif (name, ta) in T.BINOPS:
            b, _ = self.val(op, env, 1, ta)
            ty, tpl = T.BINOPS[(name, ta)]
        else:
            raise self.fail(op, env, f"no WGSL rule for binary {name} on {ta}")
        self.bind(op, ctx, ty, tpl.format(a=a, b=b))

    def op_UnOpKind(self, op, ctx):
        env = ctx[1]
        self.arity(op, env, 1)
        name = op.kind.args[0].name
        a, ta = self.val(op, env, 0)
        if (name, ta) not in T.UNOPS:
            raise self.fail(op, env, f"no WGSL rule for unary {name} on {ta}")
        ty, tpl = T.UNOPS[(name, ta)]
        self.bind(op, ctx, ty, tpl.format(a=a))

    def op_Fma(self, op, ctx):
        env = ctx[1]
        self.arity(op, env, 3)
        a, ty = self.val(op, env, 0, *T.FMA_TYPES)
        b, c = (self.val(op, env, i, ty)[0] for i in (1, 2))
        self.bind(op, ctx, ty, f"fma({a}, {b}, {c})")

    def op_Select(self, op, ctx):
        env = ctx[1]
        self.arity(op, env, 3)
        cond, _ = self.val(op, env, 0, "Bool")
        t, ty = self.val(op, env, 1)
        f, _ = self.val(op, env, 2, ty)
        self.bind(op, ctx, ty, f"select({f}, {t}, {cond})")

    def op_Cast(self, op, ctx):
        env = ctx[1]
        self.arity(op, env, 1)
        target = T.type_key(op.kind.args[0])
        a, ta = self.val(op, env, 0)
        if (ta, target) not in T.CASTS:
            raise self.fail(op, env, f"no WGSL rule for a cast from {ta} to {op.kind.args[0]!r}")
        self.bind(op, ctx, target, T.CASTS[(ta, target)].format(a=a))

    def op_OpaqueExpr(self, op, ctx):
        env = ctx[1]
        ext_id, kind, payload = op.kind.args
        if ext_id != 0:
            raise self.fail(op, env, f"OpaqueExpr extension_id must be 0, got {ext_id}")
        if kind == "vyre.num_workgroups" and not payload:
            self._builtin(op, ctx, "nwg")
        elif kind == "vyre.bitcast":
            self.arity(op, env, 1)
            target = bitcast_target(payload)
            a, ta = self.val(op, env, 0)
            if (ta, target) not in T.BITCASTS:
                raise self.fail(
                    op,
                    env,
                    f"no WGSL rule for a bitcast from {ta} to payload {payload.hex()} ({target})",
                )
            self.bind(op, ctx, target, a if ta == target else f"bitcast<{T.TYPE_MAP[target]}>({a})")
        elif kind == "vyre.vec":
            self._vec_construct(op, ctx, payload)
        elif kind == "vyre.extract":
            self.arity(op, env, 1)
            a, ta = self.val(op, env, 0, *T.VECTORS)
            elem, count = T.VECTORS[ta]
            if len(payload) != 1 or payload[0] >= count:
                raise self.fail(
                    op,
                    env,
                    f"vyre.extract payload {payload.hex()} is not one byte "
                    f"holding a component index < {count} of {ta}",
                )
            self.bind(op, ctx, elem, f"{a}.{T.COMPONENTS[payload[0]]}")
        else:
            raise self.fail(
                op, env, f"no WGSL rule for OpaqueExpr {kind!r} (payload {payload.hex()})"
            )

    def _vec_construct(self, op, ctx, payload: bytes):
        """`vyre.vec`: a vector from `count` operands of its element type (a splat when all
        operands are one value)."""
        env = ctx[1]
        try:
            ty = T.type_key(decode_datatype(payload))
        except DescriptorError as exc:
            raise self.fail(
                op, env, f"vyre.vec payload {payload.hex()} is not a DataType: {exc}"
            ) from None
        if ty not in T.VECTORS:
            raise self.fail(
                op,
                env,
                f"vyre.vec payload {payload.hex()} decodes to {ty}, not a "
                "vector of U32/I32/F32 with 2 or 4 components",
            )
        elem, count = T.VECTORS[ty]
        self.arity(op, env, count)
        parts = [self.val(op, env, i, elem)[0] for i in range(count)]
        args = parts[0] if len(set(parts)) == 1 else ", ".join(parts)
        self.bind(op, ctx, ty, f"{T.TYPE_MAP[ty]}({args})")

    def op_LoopIndex(self, op, ctx):
        env = ctx[1]
        self.arity(op, env, 0)
        for loop_var, var, ty in reversed(self.loops):
            if loop_var == op.kind.args[0]:
                self.bind(op, ctx, ty, var)
                return
        raise self.fail(op, env, f"no enclosing StructuredForLoop has loop_var {op.kind.args[0]!r}")

    # --- memory writes and atomics ---------------------------------------------------
    def _store(self, op, ctx, classes):
        env, depth = ctx[1], ctx[2]
        self.no_result(op, env)
        self.arity(op, env, 3)
        s = self.slot(op, env, classes)
        if s.visibility == "ReadOnly":
            raise self.fail(op, env, f"slot {s.slot} {s.name!r} is read-only")
        index, _ = self.val(op, env, 1, "U32")
        value, _ = self.val(op, env, 2, T.type_key(s.element_type))
        ref, ok = self.write_target(s, op.operands[1], index)
        store = f"atomicStore(&{ref}, {value});" if s.slot in self.atomic else f"{ref} = {value};"
        self.emit(depth, f"if {ok} {{ {store} }}")

    def op_StoreGlobal(self, op, ctx):
        self._store(op, ctx, ("Global",))

    def op_StoreShared(self, op, ctx):
        self._store(op, ctx, ("Shared", "Scratch"))

    def op_Atomic(self, op, ctx):
        env, depth = ctx[1], ctx[2]
        aop, ordering = op.kind.args
        cmpxchg = aop.name == "CompareExchange"
        if op.result is None:
            raise self.fail(op, env, "an atomic needs a result id (the old value)")
        self.arity(op, env, 4 if cmpxchg else 3)
        if ordering != "Relaxed" or not (cmpxchg or aop.name in T.ATOMICS):
            raise self.fail(op, env, f"no WGSL rule for atomic {aop!r} with ordering {ordering}")
        s = self.slot(op, env, ("Global", "Shared"))
        ty = T.type_key(s.element_type)
        index, _ = self.val(op, env, 1, "U32")
        args = [self.val(op, env, i, ty)[0] for i in range(2, len(op.operands))]
        ref, ok = self.write_target(s, op.operands[1], index)
        call = (
            f"atomicCompareExchangeWeak(&{ref}, {args[0]}, {args[1]}).old_value"
            if cmpxchg
            else f"{T.ATOMICS[aop.name]}(&{ref}, {args[0]})"
        )
        old = f"_o{op.result}"
        # Out of bounds the atomic does nothing and yields 0 (pinned).
        self.emit(depth, f"var {old}: {T.TYPE_MAP[ty]} = {T.ZERO[ty]};")
        self.emit(depth, f"if {ok} {{ {old} = {call}; }}")
        self.bind(op, ctx, ty, old)

    # --- control flow ---------------------------------------------------------------
    def op_StructuredIfThenElse(self, op, ctx):
        # Also StructuredIfThen: [cond, then] or [cond, then, else].
        env, depth = ctx[1], ctx[2]
        self.no_result(op, env)
        self.arity(op, env, 2 if op.kind.name == "StructuredIfThen" else 3)
        cond, _ = self.val(op, env, 0, "Bool")
        self.emit(depth, f"if {cond} {{")
        self.child(op, ctx, op.operands[1])
        if len(op.operands) == 3:
            self.emit(depth, "} else {")
            self.child(op, ctx, op.operands[2])
        self.emit(depth, "}")

    op_StructuredIfThen = op_StructuredIfThenElse

    def op_StructuredForLoop(self, op, ctx):
        env, depth = ctx[1], ctx[2]
        self.no_result(op, env)
        self.arity(op, env, 3)
        lo, ty = self.val(op, env, 0, *T.INTS)
        hi, _ = self.val(op, env, 1, ty)
        var = f"_i{self.loop_count}"
        self.loop_count += 1
        self.emit(
            depth,
            f"for (var {var}: {T.TYPE_MAP[ty]} = {lo}; {var} < {hi}; "
            f"{var} = {var} + {T.ONE[ty]}) {{",
        )
        self.loops.append((op.kind.args[0], var, ty))
        self.child(op, ctx, op.operands[2], loops_in_cont=ctx[4] + 1)
        self.loops.pop()
        self.emit(depth, "}")

    def op_OpaqueNode(self, op, ctx):
        env, depth, in_cont, loops_in_cont = ctx[1], ctx[2], ctx[3], ctx[4]
        kind, payload = op.kind.args
        self.no_result(op, env)
        if payload:
            raise self.fail(op, env, f"OpaqueNode {kind!r} takes no payload, got {payload.hex()}")
        if kind == "vyre.loop":
            self.arity(op, env, 1, 2)
            self.loops.append((None, "", ""))
            self.emit(depth, "loop {")
            self.child(op, ctx, op.operands[0], loops_in_cont=loops_in_cont + 1)
            if len(op.operands) == 2:
                # WGSL forbids return, and break/continue of this loop, inside `continuing`.
                self.emit(depth + 1, "continuing {")
                self.child(
                    op, ctx, op.operands[1], depth=depth + 2, in_continuing=True, loops_in_cont=0
                )
                self.emit(depth + 1, "}")
            self.loops.pop()
            self.emit(depth, "}")
        elif kind in ("vyre.break", "vyre.continue"):
            self.arity(op, env, 0)
            if in_cont and loops_in_cont == 0:
                raise self.fail(op, env, f"{kind} directly inside a loop's continuing block")
            if not self.loops:
                raise self.fail(op, env, f"{kind} outside a loop body")
            self.emit(depth, kind[5:] + ";")
        else:
            raise self.fail(op, env, f"no WGSL rule for OpaqueNode {kind!r}")

    def op_Return(self, op, ctx):
        env = ctx[1]
        self.no_result(op, env)
        self.arity(op, env, 0)
        if ctx[3]:
            raise self.fail(op, env, "return inside a loop's continuing block")
        self.emit(ctx[2], "return;")

    def op_Barrier(self, op, ctx):
        env = ctx[1]
        self.no_result(op, env)
        self.arity(op, env, 0)
        ordering = op.kind.args[0]
        if ordering == "AcqRel":
            self.emit(ctx[2], "workgroupBarrier();")
        elif ordering == "SeqCst":
            self.emit(ctx[2], "storageBarrier();")
            self.emit(ctx[2], "workgroupBarrier();")
        else:
            raise self.fail(op, env, f"no WGSL rule for Barrier ordering {ordering}")
