"""Validation of a KernelDescriptor against docs/descriptor-conventions.md.

`validate_descriptor(d)` checks what the emitters rely on: every id defined once and
before use (lexically: same body earlier, or an enclosing body), operand counts, slot
numbers that exist and are used with the right op, child indices in range, loop
variables bound, break/continue inside loops, operand types consistent, and returns the
type of every SSA id. It raises `DescriptorFormatError` naming the op on any defect.
"""

from __future__ import annotations

from vyre_build.descriptor import KernelBody, KernelDescriptor, decode_datatype
from vyre_build.errors import DescriptorFormatError
from vyre_build.ir import VECTORS, element, vector_of

SCALAR = {"U32": "u32", "I32": "i32", "F32": "f32", "Bool": "bool"}
_CMP = {"Eq", "Ne", "Lt", "Gt", "Le", "Ge"}
_SHIFT = {"Shl", "Shr", "RotateLeft", "RotateRight"}
_BINOPS = (
    {
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Mod",
        "BitAnd",
        "BitOr",
        "BitXor",
        "Min",
        "Max",
        "AbsDiff",
        "MulHigh",
        "WrappingAdd",
        "WrappingSub",
        "And",
        "Or",
    }
    | _CMP
    | _SHIFT
)
_PRED = {"IsNan", "IsInf", "IsFinite"}
_FLOAT_UNOPS = {
    "Cos",
    "Sin",
    "Sqrt",
    "Floor",
    "Ceil",
    "Round",
    "Trunc",
    "Sign",
    "Exp",
    "Log",
    "Log2",
    "Exp2",
    "Tan",
    "Tanh",
    "InverseSqrt",
    "Reciprocal",
    "Acos",
    "Asin",
    "Atan",
    "Sinh",
    "Cosh",
} | _PRED
_INT_UNOPS = {"BitNot", "Popcount", "Clz", "Ctz", "ReverseBits"}
_ATOMIC_OPS = {"Add", "Or", "And", "Xor", "Min", "Max", "Exchange", "CompareExchange"}
_ARITY = {
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
}
_OPAQUE_ARITY = {
    "vyre.loop": (1, 2),
    "vyre.break": (0,),
    "vyre.continue": (0,),
    "vyre.num_workgroups": (1,),
    "vyre.bitcast": (1,),
    "vyre.vec": (2, 4),
    "vyre.extract": (1,),
}


def scalar_type(t) -> str:
    """The type name ("f32", "vec4f", ...) of a DataType vyre_build uses."""
    if (
        t.name == "Vec"
        and len(t.args) == 2
        and t.args[0].name in ("U32", "I32", "F32")
        and t.args[1] in (2, 4)
    ):
        return vector_of(SCALAR[t.args[0].name], t.args[1])
    if t.name not in SCALAR:
        raise DescriptorFormatError(f"unsupported data type {t!r}")
    return SCALAR[t.name]


_VEC_BINOPS = {"Add", "Sub", "Mul", "Min", "Max"}
_VEC_FLOAT_BINOPS = {"Div"}
_VEC_INT_BINOPS = {"BitAnd", "BitOr", "BitXor"}
_VEC_UNOPS = {"Negate"}


class _Checker:
    def __init__(self, d: KernelDescriptor):
        self.d = d
        self.slots = {s.slot: s for s in d.slots}
        self.types: dict[int, str] = {}

    def fail(self, op, msg):
        raise DescriptorFormatError(
            f"descriptor {self.d.id!r}: {op.kind!r} {list(op.operands)}: {msg}"
        )

    def run(self) -> dict[int, str]:
        if len(self.slots) != len(self.d.slots):
            raise DescriptorFormatError(f"descriptor {self.d.id!r}: duplicate slot numbers")
        if any(w < 1 for w in self.d.workgroup_size):
            raise DescriptorFormatError(
                f"descriptor {self.d.id!r}: workgroup size {self.d.workgroup_size}"
            )
        for s in self.d.slots:
            ty = scalar_type(s.element_type)
            if s.memory_class == "Uniform" and ty in VECTORS:
                raise DescriptorFormatError(
                    f"descriptor {self.d.id!r}: uniform slot {s.name!r} "
                    f"holds a {ty}; uniform members are scalars"
                )
        self.body(self.d.body, [set()], loops={}, in_loop=False)
        return self.types

    def body(self, b: KernelBody, scopes, loops, in_loop):
        scope: set[int] = set()
        scopes = scopes + [scope]
        for i, op in enumerate(b.ops):
            name = op.kind.name
            if name == "OpaqueNode" or name == "OpaqueExpr":
                kind = op.kind.args[0] if name == "OpaqueNode" else op.kind.args[1]
                if kind not in _OPAQUE_ARITY or len(op.operands) not in _OPAQUE_ARITY[kind]:
                    self.fail(op, f"unknown extension or operand count for {kind!r}")
            elif name == "Atomic":
                pass  # operand count depends on the atomic op
            elif name not in _ARITY:
                self.fail(op, "op kind not used by vyre_build")
            elif len(op.operands) != _ARITY[name]:
                self.fail(op, f"expects {_ARITY[name]} operands")
            ty = self.op(op, b, scopes, loops, in_loop)
            terminator = name == "Return" or (
                name == "OpaqueNode" and op.kind.args[0] in ("vyre.break", "vyre.continue")
            )
            if terminator and i != len(b.ops) - 1:
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

    def val(self, op, scopes, i) -> str:
        v = op.operands[i]
        if not any(v in s for s in scopes):
            self.fail(op, f"operand {v} is not defined before use in scope")
        return self.types[v]

    def slot(self, op, number, classes):
        s = self.slots.get(number)
        if s is None or s.memory_class not in classes:
            self.fail(op, f"slot {number} is not a {'/'.join(classes)} slot")
        return s

    def child(self, op, b, idx, scopes, loops, in_loop):
        if idx >= len(b.children):
            self.fail(op, f"child body {idx} does not exist")
        self.body(b.children[idx], scopes, loops, in_loop)

    def op(self, op, b, scopes, loops, in_loop):  # noqa: C901 - one branch per op kind
        name, o = op.kind.name, op.operands
        v = lambda i: self.val(op, scopes, i)  # noqa: E731
        if name == "Literal":
            if o[0] >= len(b.literals):
                self.fail(op, "literal pool index out of range")
            return SCALAR[b.literals[o[0]].name]
        if name in ("GlobalInvocationId", "LocalInvocationId", "WorkgroupId"):
            if o[0] > 2:
                self.fail(op, "axis must be 0, 1 or 2")
            return "u32"
        if name == "LoopIndex":
            if op.kind.args[0] not in loops:
                self.fail(op, "loop variable is not bound by an enclosing loop")
            return loops[op.kind.args[0]]
        if name in ("LoadGlobal", "LoadShared", "LoadConstant"):
            cls = {
                "LoadGlobal": ("Global",),
                "LoadShared": ("Shared", "Scratch"),
                "LoadConstant": ("Uniform",),
            }[name]
            s = self.slot(op, o[0], cls)
            if v(1) != "u32":
                self.fail(op, "index must be u32")
            return scalar_type(s.element_type)
        if name in ("StoreGlobal", "StoreShared"):
            s = self.slot(op, o[0], ("Global",) if name == "StoreGlobal" else ("Shared", "Scratch"))
            if s.visibility == "ReadOnly":
                self.fail(op, "store to a read-only slot")
            if v(1) != "u32" or v(2) != scalar_type(s.element_type):
                self.fail(op, "index must be u32 and the value the slot's type")
            return None
        if name == "BufferLength":
            self.slot(op, o[0], ("Global", "Shared", "Scratch"))
            return "u32"
        if name == "BinOpKind":
            bop = op.kind.args[0].name
            a, c = v(0), v(1)
            if bop not in _BINOPS:
                self.fail(op, f"binary op {bop} not used by vyre_build")
            if bop in _SHIFT:
                if a not in ("u32", "i32") or c != "u32":
                    self.fail(op, f"shift needs an integer and a u32, got {a}, {c}")
                return a
            if a != c:
                self.fail(op, f"operand types differ: {a}, {c}")
            if a in VECTORS:
                ok = _VEC_BINOPS | (_VEC_FLOAT_BINOPS if element(a) == "f32" else _VEC_INT_BINOPS)
                if bop not in ok:
                    self.fail(op, f"{bop} is not defined on {a}")
                return a
            if bop in ("And", "Or") and a != "bool":
                self.fail(op, "logical op on non-bool")
            return "bool" if bop in _CMP or bop in ("And", "Or") else a
        if name == "UnOpKind":
            uop, a = op.kind.args[0].name, v(0)
            if a in VECTORS:
                e = element(a)
                if not (
                    uop == "Negate"
                    or uop == "BitNot"
                    and e != "f32"
                    or uop == "Abs"
                    and e != "u32"
                    or e == "f32"
                    and uop in _FLOAT_UNOPS - _PRED
                ):
                    self.fail(op, f"{uop} is not defined on {a}")
                return a
            if (
                uop in _FLOAT_UNOPS
                and a != "f32"
                or uop in _INT_UNOPS
                and a not in ("u32", "i32")
                or uop == "LogicalNot"
                and a != "bool"
            ):
                self.fail(op, f"{uop} does not take {a}")
            return "bool" if uop in _PRED else a
        if name == "Fma":
            ty = v(0)
            if element(ty) != "f32" or v(1) != ty or v(2) != ty:
                self.fail(op, "fma takes three f32 values (or f32 vectors) of one type")
            return ty
        if name == "Select":
            if v(0) != "bool" or v(1) != v(2):
                self.fail(op, "select takes a bool and two values of one type")
            return v(1)
        if name == "Cast":
            src, dst = v(0), scalar_type(op.kind.args[0])
            if (
                (src in VECTORS) != (dst in VECTORS)
                or src in VECTORS
                and VECTORS[src][1] != VECTORS[dst][1]
            ):
                self.fail(op, f"cannot cast {src} to {dst}")
            return dst
        if name == "Atomic":
            aop = op.kind.args[0].name
            n = 4 if aop == "CompareExchange" else 3
            if aop not in _ATOMIC_OPS or len(o) != n:
                self.fail(op, f"atomic {aop} takes {n} operands")
            s = self.slot(op, o[0], ("Global", "Shared"))
            ty = scalar_type(s.element_type)
            if ty not in ("u32", "i32") or v(1) != "u32" or any(v(i) != ty for i in range(2, n)):
                self.fail(op, "atomics take an integer slot, a u32 index and values of its type")
            return ty
        if name in ("StructuredIfThen", "StructuredIfThenElse"):
            if v(0) != "bool":
                self.fail(op, "condition must be bool")
            for idx in o[1:]:
                self.child(op, b, idx, scopes, loops, in_loop)
            return None
        if name == "StructuredForLoop":
            lo, hi = v(0), v(1)
            if lo != hi or lo not in ("u32", "i32"):
                self.fail(op, f"loop bounds must be one integer type, got {lo}, {hi}")
            self.child(op, b, o[2], scopes, {**loops, op.kind.args[0]: lo}, True)
            return None
        if name in ("Return", "Barrier"):
            return None
        if name == "OpaqueNode":
            kind = op.kind.args[0]
            if kind == "vyre.loop":
                self.child(op, b, o[0], scopes, loops, True)
                if len(o) == 2:
                    self.child(op, b, o[1], scopes, loops, False)
            elif not in_loop:
                self.fail(op, f"{kind} outside a loop")
            return None
        if name == "OpaqueExpr":
            kind = op.kind.args[1]
            if kind == "vyre.num_workgroups":
                return "u32"
            if kind == "vyre.vec":
                ty = scalar_type(decode_datatype(op.kind.args[2]))
                if (
                    ty not in VECTORS
                    or len(o) != VECTORS[ty][1]
                    or any(v(i) != element(ty) for i in range(len(o)))
                ):
                    self.fail(
                        op, f"constructing a {ty} needs {VECTORS[ty][1]} {element(ty)} operands"
                    )
                return ty
            if kind == "vyre.extract":
                ty, payload = v(0), op.kind.args[2]
                if ty not in VECTORS or len(payload) != 1 or payload[0] >= VECTORS[ty][1]:
                    self.fail(op, f"no component {list(payload)} in a {ty}")
                return element(ty)
            src, dst = v(0), scalar_type(decode_datatype(op.kind.args[2]))
            if src in VECTORS or dst in VECTORS:
                self.fail(op, "bitcast is defined on scalars only")
            return dst
        self.fail(op, "unhandled op")


def validate_descriptor(d: KernelDescriptor) -> dict[int, str]:
    """Check a descriptor against the conventions; returns {result id: scalar type}."""
    return _Checker(d).run()
