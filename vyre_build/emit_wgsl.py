"""WGSL emitter: `KernelDescriptor` -> WGSL source text.

`emit_wgsl(desc)` reads only the descriptor and implements docs/descriptor-conventions.md:
the slot table (storage buffers, one uniform `Params` block, workgroup arrays,
zero-initialised function-local scratch), vec2/vec4 values and slots, atomics, every op
of the tables with the pinned semantics written out explicitly (see
`vyre_build/wgsl/tables.py`), structured control flow, and the entry point `main`.

Guarantees: the text is a pure function of the descriptor (no dict/set-order, hash-seed,
time or path dependence), so `emit_wgsl(decode(encode(d))) == emit_wgsl(d)`; f32 literals
keep their exact bit pattern; a descriptor outside the conventions (an op, type, slot or
operand with no rule) raises `EmitError` naming the op, its operands and their types.
"""

from __future__ import annotations

import json
import re

from vyre_build.descriptor import KernelBody, KernelDescriptor, KernelOp
from vyre_build.errors import EmitError
from vyre_build.wgsl import tables as T
from vyre_build.wgsl.ops import OpRules

__all__ = ["emit_wgsl"]

_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_HELPER_CALL = re.compile(r"\b(_vy_[a-z0-9_]+)\(")
_INDENT = "    "


def emit_wgsl(desc: KernelDescriptor) -> str:
    """Return the WGSL module for `desc` (entry point `main`), or raise `EmitError`."""
    return _Emitter(desc).module()


def ident(name: str) -> str:
    """Map a descriptor name to a WGSL identifier, injectively and deterministically.

    A plain ASCII name that is not reserved and does not start with `u_` is kept; any
    other name becomes `u_` + the name with each non-alphanumeric character written as
    `_<hex>_`, so it can clash neither with a kept name nor with the emitter's `_`-names.
    """
    if _PLAIN.match(name) and name not in T.RESERVED and not name.startswith("u_"):
        return name
    return "u_" + "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):x}_" for c in name)


def _atomic_slots(body: KernelBody, out: set[int]) -> set[int]:
    for op in body.ops:
        if op.kind.name == "Atomic" and op.operands:
            out.add(op.operands[0])
    for child in body.children:
        _atomic_slots(child, out)
    return out


class _Emitter(OpRules):
    """One walk over the descriptor's bodies, writing statements into `self.lines`."""

    def __init__(self, desc: KernelDescriptor):
        self.desc = desc
        self.slots = {s.slot: s for s in desc.slots}
        self.atomic = _atomic_slots(desc.body, set())
        self.lines: list[str] = []
        self.loops: list[tuple[str | None, str, str]] = []  # (loop_var, wgsl var, type)
        self.loop_count = 0
        self.names: dict[int, str] = {}
        self.defined: set[int] = set()
        self.u32_literals: dict[int, int] = {}  # result id -> value of a U32 Literal

    # --- errors -------------------------------------------------------------------
    def fail(self, op: KernelOp, env: dict[int, str], why: str) -> EmitError:
        types = ", ".join(f"{o}: {env.get(o, '?')}" for o in op.operands)
        return EmitError(
            f"kernel {self.desc.id!r}: cannot emit WGSL for op {op.kind!r} "
            f"(operands [{types}], result {op.result}): {why}"
        )

    # --- module -------------------------------------------------------------------
    def module(self) -> str:
        decls, entry_vars = self.declarations()
        wx, wy, wz = self.desc.workgroup_size
        if not all(isinstance(w, int) and w >= 1 for w in (wx, wy, wz)):
            raise EmitError(
                f"kernel {self.desc.id!r}: workgroup_size {self.desc.workgroup_size} "
                "must be three integers >= 1"
            )
        self.lines = [_INDENT + v for v in entry_vars + self.zero_shared()]
        self.body(self.desc.body, {}, depth=1, in_continuing=False, loops_in_cont=0)
        body = "\n".join(self.lines)
        helpers = self.helpers(body + "\n".join(decls))
        header = (
            f"// vyre_build WGSL for kernel {json.dumps(self.desc.id)}; generated from "
            "its descriptor, do not edit."
        )
        out = [header, ""]
        out += decls
        out += [h + "\n" for h in helpers]
        out.append(f"@compute @workgroup_size({wx}, {wy}, {wz})")
        out.append(
            "fn main(@builtin(global_invocation_id) gid: vec3<u32>, "
            "@builtin(local_invocation_id) lid: vec3<u32>, "
            "@builtin(workgroup_id) wid: vec3<u32>, "
            "@builtin(num_workgroups) nwg: vec3<u32>) {"
        )
        out += self.lines
        out.append("}")
        return "\n".join(out) + "\n"

    def helpers(self, text: str) -> list[str]:
        wanted: set[str] = set()
        todo = set(_HELPER_CALL.findall(text))
        while todo:
            name = todo.pop()
            if name in wanted:
                continue
            if name not in T.HELPERS:
                raise RuntimeError(f"template calls unknown helper {name}")  # pragma: no cover
            wanted.add(name)
            todo |= set(_HELPER_CALL.findall(T.HELPERS[name]))
        return [T.HELPERS[n] for n in sorted(wanted)]

    def zero_shared(self) -> list[str]:
        """Statements zeroing every workgroup array cooperatively, then one barrier.

        WGSL promises zeroed workgroup memory, but lavapipe through wgpu hands the next
        workgroup the previous one's values, so it is written out like every pinned rule.
        """
        shared = [s for s in self.desc.slots if s.memory_class == "Shared"]
        if not shared:
            return []
        wx, wy, wz = self.desc.workgroup_size
        out = [f"let _flat: u32 = lid.x + {wx}u * (lid.y + {wy}u * lid.z);"]
        for s in shared:
            name, ty = self.names[s.slot], T.type_key(s.element_type)
            ref = f"{name}[_z]"
            zero = (
                f"atomicStore(&{ref}, {T.ZERO[ty]});"
                if s.slot in self.atomic
                else f"{ref} = {T.ZERO[ty]};"
            )
            out.append(
                f"for (var _z: u32 = _flat; _z < {s.element_count}u; _z = _z + "
                f"{wx * wy * wz}u) {{ {zero} }}"
            )
        out.append("workgroupBarrier();")
        return out

    def declarations(self) -> tuple[list[str], list[str]]:
        """Module-scope declarations (in slot order) and the entry's scratch vars."""
        kid = repr(self.desc.id)
        numbers = [s.slot for s in self.desc.slots]
        if numbers != sorted(set(numbers)):
            raise EmitError(
                f"kernel {kid}: slots must be sorted by unique slot number, got {numbers}"
            )
        seen: dict[str, str] = {}
        for s in self.desc.slots:
            n = ident(s.name)
            if n in seen:
                raise EmitError(
                    f"kernel {kid}: slot names {seen[n]!r} and {s.name!r} are not unique"
                )
            seen[n] = s.name
            self.names[s.slot] = n
        uniforms = [s for s in self.desc.slots if s.memory_class == "Uniform"]
        decls: list[str] = []
        if uniforms:
            decls.append("struct Params {")
            for s in uniforms:
                if T.type_key(s.element_type) not in T.SCALARS or s.element_count != 1:
                    raise EmitError(
                        f"kernel {kid}: uniform slot {s.slot} {s.name!r} must be one "
                        f"U32/I32/F32/Bool, got {s.element_type!r} x {s.element_count}"
                    )
                # bool is not host-shareable: it travels as a u32 and is compared with 0.
                ty = "u32" if s.element_type.name == "Bool" else T.TYPE_MAP[s.element_type.name]
                decls.append(f"{_INDENT}{self.names[s.slot]}: {ty},")
            decls.append("}")
            decls.append("")
        entry: list[str] = []
        for s in self.desc.slots:
            name, ty, count = self.names[s.slot], T.type_key(s.element_type), s.element_count
            where = f"kernel {kid}: slot {s.slot} {s.name!r} ({s.memory_class})"
            atomic = s.slot in self.atomic
            if s.memory_class == "Uniform":
                if s is uniforms[0]:
                    decls.append(f"@group(0) @binding({s.slot}) var<uniform> params: Params;")
                continue
            if s.memory_class == "Global":
                if ty not in T.STORAGE_TYPES:
                    raise EmitError(
                        f"{where}: storage buffers hold U32/I32/F32 or their vec2/vec4, "
                        f"got {s.element_type!r}"
                    )
                if atomic and (ty not in T.ATOMIC_TYPES or s.visibility == "ReadOnly"):
                    raise EmitError(
                        f"{where}: atomics need a read-write U32/I32 buffer, "
                        f"got {s.visibility} {s.element_type!r}"
                    )
                access = "read" if s.visibility == "ReadOnly" else "read_write"
                elem = f"atomic<{T.TYPE_MAP[ty]}>" if atomic else T.TYPE_MAP[ty]
                decls.append(
                    f"@group(0) @binding({s.slot}) var<storage, {access}> {name}: array<{elem}>;"
                )
                continue
            if s.memory_class not in ("Shared", "Scratch"):
                raise EmitError(f"{where}: memory class {s.memory_class} has no WGSL rule")
            if ty not in T.TYPE_MAP or not isinstance(count, int) or count < 1:
                raise EmitError(
                    f"{where}: needs a U32/I32/F32/Bool (or vec2/vec4 of U32/I32/F32) "
                    f"element type and element_count >= 1, got {s.element_type!r} x {count}"
                )
            if s.memory_class == "Shared":
                if atomic and ty not in T.ATOMIC_TYPES:
                    raise EmitError(
                        f"{where}: atomics need U32/I32 elements, got {s.element_type!r}"
                    )
                elem = f"atomic<{T.TYPE_MAP[ty]}>" if atomic else T.TYPE_MAP[ty]
                decls.append(f"var<workgroup> {name}: array<{elem}, {count}>;")
            else:
                if atomic:
                    raise EmitError(f"{where}: function-local scratch cannot be atomic")
                full = T.TYPE_MAP[ty] if count == 1 else f"array<{T.TYPE_MAP[ty]}, {count}>"
                entry.append(f"var {name}: {full} = {full}();")  # explicit zero value
        if decls and decls[-1] != "":
            decls.append("")
        return decls, entry

    # --- bodies -------------------------------------------------------------------
    def emit(self, depth: int, line: str) -> None:
        self.lines.append(_INDENT * depth + line)

    def body(
        self,
        body: KernelBody,
        env: dict[int, str],
        depth: int,
        in_continuing: bool,
        loops_in_cont: int,
    ) -> None:
        env = dict(env)  # ids defined here stay visible only here and in nested bodies
        ctx = (body, env, depth, in_continuing, loops_in_cont)
        for pos, op in enumerate(body.ops):
            kind = op.kind.name
            if (
                kind in ("Return", "OpaqueNode")
                and pos != len(body.ops) - 1
                and (kind == "Return" or op.kind.args[0] in ("vyre.break", "vyre.continue"))
            ):
                raise self.fail(op, env, "break/continue/return must be the last op of its body")
            handler = getattr(self, "op_" + kind, None)
            if handler is None:
                raise self.fail(op, env, f"no WGSL rule for op kind {kind}")
            handler(op, ctx)

    def child(self, op: KernelOp, ctx, index: int, **over) -> None:
        body, env, depth, in_cont, loops_in_cont = ctx
        if not 0 <= index < len(body.children):
            raise self.fail(
                op, env, f"child body {index} does not exist (the body has {len(body.children)})"
            )
        self.body(
            body.children[index],
            env,
            over.get("depth", depth + 1),
            over.get("in_continuing", in_cont),
            over.get("loops_in_cont", loops_in_cont),
        )

    def arity(self, op: KernelOp, env, *counts: int) -> None:
        if len(op.operands) not in counts:
            raise self.fail(op, env, f"expects {' or '.join(map(str, counts))} operands")

    def val(self, op: KernelOp, env, i: int, *types: str) -> tuple[str, str]:
        """The WGSL name and type of value operand `i`, checked against `types` if given."""
        vid = op.operands[i]
        if vid not in env:
            raise self.fail(op, env, f"operand {i} (id {vid}) is not defined in this scope")
        if types and env[vid] not in types:
            raise self.fail(op, env, f"operand {i} has type {env[vid]}, expected {'/'.join(types)}")
        return f"_v{vid}", env[vid]

    def bind(self, op: KernelOp, ctx, ty: str, expr: str) -> None:
        _, env, depth, _, _ = ctx
        r = op.result
        if r is None:
            raise self.fail(op, env, "a value op needs a result id")
        if r in self.defined:
            raise self.fail(op, env, f"result id {r} is defined twice")
        self.defined.add(r)
        env[r] = ty
        self.emit(depth, f"let _v{r}: {T.TYPE_MAP[ty]} = {expr};")

    def no_result(self, op: KernelOp, env) -> None:
        if op.result is not None:
            raise self.fail(op, env, "a control op or store has no result")

    def slot(self, op: KernelOp, env, classes: tuple[str, ...]):
        s = self.slots.get(op.operands[0])
        if s is None:
            raise self.fail(op, env, f"slot {op.operands[0]} does not exist")
        if s.memory_class not in classes:
            raise self.fail(
                op,
                env,
                f"slot {s.slot} {s.name!r} is {s.memory_class}, expected {'/'.join(classes)}",
            )
        return s

    def element(self, s, index: str) -> tuple[str, str, str]:
        """(reference to element `index` clamped in bounds, exact ref, bound check) for a slot."""
        name = self.names[s.slot]
        if s.memory_class == "Global":
            length = f"arrayLength(&{name})"
        else:
            length = f"{s.element_count}u"
            if s.memory_class == "Scratch" and s.element_count == 1:
                return name, name, f"({index} < 1u)"
        return f"{name}[min({index}, {length} - 1u)]", f"{name}[{index}]", f"({index} < {length})"

    def write_target(self, s, index_id: int, index: str) -> tuple[str, str]:
        """(reference, bound check) for a store or atomic on element `index` of a slot.

        The reference is exact, under the check. A literal index past a fixed-size array
        gets the clamped reference instead: naga rejects a constant out-of-range index even
        in a branch that never runs, and the check keeps the write from happening.
        """
        clamped, exact, ok = self.element(s, index)
        static = self.u32_literals.get(index_id)
        if s.memory_class != "Global" and static is not None and static >= s.element_count:
            return clamped, ok
        return exact, ok
