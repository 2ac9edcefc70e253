"""Program: the typed kernel IR between the frontend and lowering.

A `Program` is one kernel instantiation (one variant), fully resolved: helpers are
inlined, constants folded, variant parameters substituted, every expression typed.
It is a tree of frozen dataclasses, so equal programs compare equal and have equal
`fingerprint()`s (blake3 of a canonical encoding that ignores source positions).

Debug builds only: `DebugPrint` / `DebugAssert` statements and the `site` of loads,
stores and atomics (where a bounds report points); a release build's frontend makes none
of them, so its Program (and everything lowered from it) is that of the same kernel
without print/assert.

Types are the names of `vyre_build.descriptor.types` ("bool", "i32", "u32", "f32",
"vec2f", "vec4f", "vec2i", "vec4i", "vec2u", "vec4u").

This module holds the program, its parameters and arrays, the canonical encoding and the
validator of `Program.validate()`; the expression and statement nodes are in ir_nodes.py
(re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass

import blake3

# Re-exported for the frontend, which names types through `ir`.
from vyre_build.descriptor.matrices import mma_shape
from vyre_build.descriptor.types import (  # noqa: F401
    FLOAT,
    INTEGER,
    MATRICES,
    NUMERIC,
    SCALARS,
    STORAGE_ONLY,
    STORAGE_TYPES,
    VECTORS,
    element,
    vector_of,
)

# The nodes (ir_nodes.py), re-exported: the frontend names them through `ir`.
from vyre_build.frontend.ir_nodes import (  # noqa: F401
    Assign,
    Atomic,
    Barrier,
    Binary,
    Bitcast,
    Break,
    Builtin,
    Cast,
    Const,
    Construct,
    Continue,
    CoopFill,
    CoopLoad,
    CoopMma,
    CoopStore,
    DebugAssert,
    DebugPrint,
    Eval,
    Extract,
    Fence,
    Fma,
    For,
    If,
    Length,
    Load,
    Loop,
    LoopVar,
    Param,
    Return,
    Select,
    Site,
    Splat,
    Store,
    Subgroup,
    Unary,
    Var,
)

# The type vocabulary is the descriptor's (one row per type, every spelling of it there).
TYPES = SCALARS + tuple(sorted(VECTORS))
_PRINTABLE = ("i32", "u32", "f32", "bool")  # what print and assert report


# --- the program -------------------------------------------------------------------


@dataclass(frozen=True)
class BufferParam:
    name: str
    dtype: str
    access: str  # "r" | "w" | "rw"


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: str


@dataclass(frozen=True)
class ArrayDecl:
    """A workgroup-shared ("shared") or function-local ("local") array or variable."""

    name: str
    dtype: str
    count: int
    space: str  # "shared" | "local"


@dataclass(frozen=True)
class Program:
    name: str
    variant: str | None
    workgroup_size: tuple[int, int, int]
    params: tuple  # BufferParam | ScalarParam, in declaration order
    arrays: tuple  # ArrayDecl (shared arrays and local arrays)
    locals: tuple  # (name, type) of every local variable, in first-assignment order
    body: tuple
    grid: tuple = ()  # int | parameter name, per axis
    variant_values: tuple = field(default=())  # ((name, value-as-text), ...)
    any_length: tuple = ()  # read-only buffers not held to the grid's length (metadata only)
    shared_bytes: int | None = None  # @kernel(shared_bytes=N): the declared cap (metadata only)

    @property
    def id(self) -> str:
        return self.name if self.variant is None else f"{self.name}.{self.variant}"

    def fingerprint(self) -> str:
        return blake3.blake3(canonical(self).encode("utf-8")).hexdigest()

    def validate(self) -> None:
        """Raise RuntimeError if the program breaks an IR invariant (a frontend bug)."""
        _Validator(self).run()


def canonical(node) -> str:
    """A canonical text encoding of an IR tree (type names, fields in order, exact floats)."""
    if is_dataclass(node):
        # A debug site is a position, not a value: left out (it is None in release builds).
        shown = [f for f in fields(node) if not (f.name == "site" and node.site is None)]
        inner = ",".join(canonical(getattr(node, f.name)) for f in shown)
        return f"{type(node).__name__}({inner})"
    if isinstance(node, tuple):
        return "(" + ",".join(canonical(x) for x in node) + ")"
    if isinstance(node, bool) or node is None:
        return repr(node)
    if isinstance(node, float):
        return float.hex(node)
    if isinstance(node, (int, str)):
        return repr(node)
    raise RuntimeError(f"not an IR value: {node!r}")


class _Validator:
    def __init__(self, program: Program):
        self.p = program
        self.arrays = {a.name: a for a in program.arrays}
        self.buffers = {b.name: b for b in program.params if isinstance(b, BufferParam)}
        self.scalars = {s.name: s.dtype for s in program.params if isinstance(s, ScalarParam)}
        self.locals = dict(program.locals)
        self.loops: list[str] = []

    def fail(self, msg: str):
        raise RuntimeError(f"invalid IR in {self.p.id}: {msg}")

    def run(self):
        if any(not 1 <= w for w in self.p.workgroup_size) or len(self.p.workgroup_size) != 3:
            self.fail(f"workgroup size {self.p.workgroup_size}")
        self.block(self.p.body, in_loop=False)

    def element(self, name: str) -> str:
        if name in self.buffers:
            return self.buffers[name].dtype
        if name in self.arrays:
            return self.arrays[name].dtype
        self.fail(f"unknown array {name}")

    def block(self, stmts, in_loop):
        for s in stmts:
            self.stmt(s, in_loop)

    def stmt(self, s, in_loop):
        if isinstance(s, Assign):
            if self.locals.get(s.var) != self.expr(s.value):
                self.fail(f"assignment type of {s.var}")
        elif isinstance(s, Store):
            self.index(s.index)
            if self.expr(s.value) != self.element(s.array):
                self.fail(f"store type into {s.array}")
        elif isinstance(s, If):
            self.bool(s.cond)
            self.block(s.then, in_loop)
            self.block(s.orelse, in_loop)
        elif isinstance(s, For):
            lo, hi = self.expr(s.lo), self.expr(s.hi)
            if lo != hi or lo not in INTEGER or s.step == 0:
                self.fail(f"for range types {lo}, {hi}")
            self.loops.append(s.var)
            self.block(s.body, True)
            self.loops.pop()
        elif isinstance(s, Loop):
            self.block(s.body, True)
            self.block(s.continuing, False)
        elif isinstance(s, (Break, Continue)):
            if not in_loop:
                self.fail("break/continue outside a loop")
        elif isinstance(s, Eval):
            self.expr(s.expr)
        elif isinstance(s, DebugPrint):
            for part in s.parts:
                if not isinstance(part, str) and self.expr(part) not in _PRINTABLE:
                    self.fail("print of a non-scalar value")
        elif isinstance(s, DebugAssert):
            self.bool(s.cond)
            for _, v in s.values:
                if self.expr(v) not in _PRINTABLE:
                    self.fail("assert reports a non-scalar value")
        elif isinstance(s, CoopStore):
            self.index(s.offset), self.index(s.stride)
            ty = self.expr(s.value)
            if ty not in MATRICES or element(self.element(s.array)) != element(ty):
                self.fail(f"cooperative store of {ty} into {s.array}")
        elif not isinstance(s, (Return, Barrier, Fence)):
            self.fail(f"unknown statement {s!r}")

    def bool(self, e):
        if self.expr(e) != "bool":
            self.fail("condition is not bool")

    def index(self, e):
        if self.expr(e) != "u32":
            self.fail("index is not u32")

    def expr(self, e) -> str:
        if isinstance(e, Const):
            return e.ty
        if isinstance(e, Var):
            if self.locals.get(e.name) != e.ty:
                self.fail(f"variable {e.name}")
        elif isinstance(e, Param):
            if self.scalars.get(e.name) != e.ty:
                self.fail(f"parameter {e.name}")
        elif isinstance(e, LoopVar):
            if e.name not in self.loops:
                self.fail(f"loop variable {e.name} outside its loop")
        elif isinstance(e, Load):
            self.index(e.index)
            if self.element(e.array) != e.ty:
                self.fail(f"load type from {e.array}")
        elif isinstance(e, Length):
            self.element(e.array)
        elif isinstance(e, Binary):
            self.expr(e.a), self.expr(e.b)
        elif isinstance(e, (Unary, Cast, Bitcast)):
            self.expr(e.a)
        elif isinstance(e, Splat):
            if self.expr(e.a) != element(e.ty) or e.ty not in VECTORS:
                self.fail("splat type")
        elif isinstance(e, Construct):
            if (
                e.ty not in VECTORS
                or len(e.args) != VECTORS[e.ty][1]
                or any(self.expr(a) != element(e.ty) for a in e.args)
            ):
                self.fail("vector construction")
        elif isinstance(e, Extract):
            vt = self.expr(e.a)
            if vt not in VECTORS or not 0 <= e.index < VECTORS[vt][1] or e.ty != element(vt):
                self.fail("vector component")
        elif isinstance(e, Fma):
            self.expr(e.a), self.expr(e.b), self.expr(e.c)
        elif isinstance(e, Select):
            self.bool(e.cond)
            if self.expr(e.if_true) != e.ty or self.expr(e.if_false) != e.ty:
                self.fail("select arms")
        elif isinstance(e, Atomic):
            self.index(e.index)
            for a in e.args:
                self.expr(a)
        elif isinstance(e, Subgroup):
            for a in e.args:
                self.expr(a)
        elif isinstance(e, CoopLoad):
            self.index(e.offset), self.index(e.stride)
            if e.ty not in MATRICES or element(self.element(e.array)) != element(e.ty):
                self.fail(f"cooperative load of {e.ty} from {e.array}")
        elif isinstance(e, CoopFill):
            if e.ty not in MATRICES or self.expr(e.value) != element(e.ty):
                self.fail(f"cooperative fill of {e.ty}")
        elif isinstance(e, CoopMma):
            if self.expr(e.c) != e.ty or mma_shape(self.expr(e.a), self.expr(e.b), e.ty) is None:
                self.fail(f"cooperative multiply-add into {e.ty}")
        elif not isinstance(e, Builtin):
            self.fail(f"unknown expression {e!r}")
        return e.ty
