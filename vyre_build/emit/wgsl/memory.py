"""Slots and memory ops of the WGSL emitter (a mixin of `function.FunctionWriter`).

Declarations follow the slot table of docs/descriptor-conventions.md: storage buffers
(atomic elements where an Atomic targets them), one uniform `Params` block, workgroup
arrays (zeroed cooperatively on entry), zero-initialised function-local scratch. Every
access of the legal form (descriptor.legalize) is in bounds: the bounds rules (a clamped
index and a select, a write under a check) are ops of the descriptor.
"""

from __future__ import annotations

import re

from vyre_build.emit.wgsl.values import RULES, ZERO, wgsl_type

__all__ = ["MemoryRules", "ident", "RESERVED"]

_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# WGSL keywords, reserved words, type and builtin names, and the emitter's own names in `main`.
_RESERVED_WORDS = """
alias break case const const_assert continue continuing default diagnostic discard else
enable false fn for if let loop override requires return struct switch true var while
NULL Self abstract active alignas alignof as asm asm_fragment async attribute auto await
become binding_array cast catch class co_await co_return co_yield coherent column_major
common compile compile_fragment concept const_cast consteval constexpr constinit crate
debugger decltype delete demote demote_to_helper do dynamic_cast enum explicit export
extends extern external fallthrough filter final finally friend from fxgroup get goto
groupshared highp impl implements import inline instanceof interface layout lowp macro
macro_rules match mediump meta mod module move mut mutable namespace new nil noexcept
noinline nointerpolation noperspective null nullptr of operator package packoffset
partition pass patch pixelfragment precise precision premerge priv protected pub public
readonly ref regardless register reinterpret_cast require resource restrict self set
shared sizeof smooth snorm static static_assert static_cast std subroutine super target
template this thread_local throw trait try type typedef typeid typename typeof union
unless unorm unsafe unsized use using varying virtual volatile wgsl where with writeonly
yield
bool f16 f32 i32 u32 vec2 vec3 vec4 mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 mat4x2
mat4x3 mat4x4 array atomic ptr sampler sampler_comparison read write read_write function
private workgroup uniform storage
abs acos asin atan ceil clamp cos cosh countLeadingZeros countOneBits countTrailingZeros
exp exp2 floor fma inverseSqrt log log2 max min reverseBits round select sign sin sinh
sqrt tan tanh trunc bitcast arrayLength atomicLoad atomicStore atomicAdd atomicOr
atomicAnd atomicXor atomicMin atomicMax atomicExchange atomicCompareExchangeWeak
workgroupBarrier storageBarrier
main params Params gid lid wid nwg vyre_wg_base
"""
RESERVED = frozenset(_RESERVED_WORDS.split())


def ident(name: str) -> str:
    """Map a descriptor name to a WGSL identifier, injectively and deterministically.

    A plain ASCII name that is not reserved and does not start with `u_` is kept; any
    other name becomes `u_` + the name with each non-alphanumeric character written as
    `_<hex>_`, so it can clash neither with a kept name nor with the emitter's `_`-names.
    """
    if _PLAIN.match(name) and name not in RESERVED and not name.startswith("u_"):
        return name
    return "u_" + "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):x}_" for c in name)


class MemoryRules:
    """Declarations and the memory op handlers."""

    def declarations(self) -> tuple[list[str], list[str]]:
        """Module-scope declarations (in slot order) and the entry's scratch vars."""
        # A second entry point's module-scope names start with its prefix ("_main_x4_"):
        # no name of a first entry can (they start with a letter or "u_").
        p = self.prefix
        self.names = {
            s.slot: (p if s.memory_class in ("Global", "Shared") else "") + ident(s.name)
            for s in self.desc.slots
        }
        self.params = f"{p}params"
        uniform = self.info.uniform
        decls: list[str] = []
        if uniform is not None:
            decls.append(f"struct {p}Params {{")
            for m in uniform.members:
                # bool is not host-shareable: it travels as a u32 and is compared with 0.
                ty = "u32" if m.type == "bool" else wgsl_type(m.type)
                decls.append(f"    {ident(m.name)}: {ty},")
            decls.append("}")
            decls.append("")
        entry: list[str] = []
        atomics = self.info.atomic_slots
        for s in self.desc.slots:
            name, count = self.names[s.slot], s.element_count
            ty = wgsl_type(self.info.slot_types[s.slot])
            elem = f"atomic<{ty}>" if s.slot in atomics else ty
            if uniform is not None and s.slot == uniform.binding:
                decls.append(f"@group(0) @binding({s.slot}) var<uniform> {self.params}: {p}Params;")
            elif s.memory_class == "Global":
                access = "read" if s.visibility == "ReadOnly" else "read_write"
                decls.append(
                    f"@group(0) @binding({s.slot}) var<storage, {access}> {name}: array<{elem}>;"
                )
            elif s.memory_class == "Shared":
                decls.append(f"var<workgroup> {name}: array<{elem}, {count}>;")
            elif s.memory_class == "Scratch":
                full = ty if count == 1 else f"array<{ty}, {count}>"
                entry.append(f"var {name}: {full} = {full}();")  # explicit zero value
        if decls and decls[-1] != "":
            decls.append("")
        return decls, entry

    def zero_shared(self) -> list[str]:
        """Statements zeroing every workgroup array cooperatively, then one barrier.

        WGSL promises zeroed workgroup memory, but lavapipe through wgpu hands the next
        workgroup the previous one's values, so it is written out like every pinned rule.
        """
        unzeroed = self.info.proofs.unzeroed
        shared = [
            s for s in self.desc.slots if s.memory_class == "Shared" and s.slot not in unzeroed
        ]
        if not shared:
            return []
        wx, wy, wz = self.desc.workgroup_size
        out = [f"let _flat: u32 = lid.x + {wx}u * (lid.y + {wy}u * lid.z);"]
        for s in shared:
            ref, zero = f"{self.names[s.slot]}[_z]", ZERO[self.info.slot_types[s.slot]]
            store = (
                f"atomicStore(&{ref}, {zero});"
                if s.slot in self.info.atomic_slots
                else f"{ref} = {zero};"
            )
            out.append(
                f"for (var _z: u32 = _flat; _z < {s.element_count}u; _z = _z + "
                f"{wx * wy * wz}u) {{ {store} }}"
            )
        out.append("workgroupBarrier();")
        return out

    def element(self, s, index: str) -> str:
        """The reference to element `index` of a slot (the legal form's index is in bounds)."""
        if s.memory_class == "Scratch" and s.element_count == 1:
            return self.names[s.slot]
        return f"{self.names[s.slot]}[{index}]"

    # --- handlers ---------------------------------------------------------------------
    def visit_load(self, op, body, depth):
        # LoadGlobal, LoadShared, and a relaxed vyre.atomic.load (emit/wgsl/ordered.py)
        ref = self.element(self.slots[op.slot], f"_v{op.element}")
        self.bind(op, depth, f"atomicLoad(&{ref})" if op.slot in self.info.atomic_slots else ref)

    def visit_load_uniform(self, op, body, depth):
        s = self.slots[op.slot]
        member = f"{self.params}.{ident(s.name)}"
        bool_ = self.info.slot_types[s.slot] == "bool"
        self.bind(op, depth, f"({member} != 0u)" if bool_ else member)

    def visit_length(self, op, body, depth):
        s = self.slots[op.slot]
        if s.memory_class != "Global":
            self.bind(op, depth, f"{s.element_count}u")
            return
        # a buffer's length is read once, at the entry (`length_lets`), as the SPIR-V
        # emitter does: naga makes an OpArrayLength of every arrayLength() call, where it
        # stands, and one in a loop is read again on every iteration (a matmul's K loop)
        self.bind(op, depth, self.lengths.setdefault(s.slot, f"_len{s.slot}"))

    def length_lets(self) -> list[str]:
        """The entry's `let`s of the buffer lengths the body asked for (visit_length)."""
        return [
            f"let {name}: u32 = arrayLength(&{self.names[slot]});"
            for slot, name in sorted(self.lengths.items())
        ]

    def visit_store(self, op, body, depth):
        # StoreGlobal, StoreShared, and a relaxed vyre.atomic.store (emit/wgsl/ordered.py)
        ref, value = self.element(self.slots[op.slot], f"_v{op.element}"), f"_v{op.value}"
        atomic = op.slot in self.info.atomic_slots
        self.emit(depth, f"atomicStore(&{ref}, {value});" if atomic else f"{ref} = {value};")

    def visit_atomic(self, op, body, depth):
        # Atomic, and a relaxed vyre.atomic (emit/wgsl/ordered.py): `op.name` is the AtomicOp
        name = op.name
        s = self.slots[op.slot]
        ty = self.info.slot_types[s.slot]
        fn = RULES.get((("Atomic", name), (ty,)))
        if fn is None:
            raise self.fail(op, f"no WGSL rule for atomic {name} on {ty}")
        args = [f"_v{o}" for o in op.args]
        ref = self.element(s, f"_v{op.element}")
        call = (
            f"{fn}(&{ref}, {args[0]}, {args[1]}).old_value"
            if len(args) == 2
            else f"{fn}(&{ref}, {args[0]})"
        )
        self.bind(op, depth, call)
