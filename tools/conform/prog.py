"""The generated program as data: typed expressions, statements, a module, a run config.

A program is kept as a tree (not text) so that the minimiser can drop statements and
replace expressions while every invariant the generator proved still holds; `render`
turns it into kernel-language source. Expressions carry their facts (`Facts`): the
float analysis of floats.py and uniformity, which the minimiser keeps monotone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

INF = math.inf
RUNTIME_TAGS = {"load", "id", "len", "index"}  # values only known when the kernel runs


@dataclass(frozen=True)
class Facts:
    """What the generator proved about a value (floats.py has the rules).

    mag: bound on |value|; err: bound on the difference between two conforming backends
    (0: bit for bit, up to the sign of zero and NaN payloads); lo: lower bound of the value;
    nan: may be NaN, an infinity or a denormal (edge inputs); raw: a copy of an input or a
    literal (no arithmetic, so even the sign of zero is fixed); mul: a product that an add
    may contract into an fma; uni: the same in every invocation of a workgroup; konst: a
    compile-time constant; kadd / kmul: part of an add (mul) chain, which a compiler may
    regroup (floats.py); grain: f16 values only (gen_half.py), a power of two the value is
    a multiple of (0: no claim).
    """

    mag: float = 0.0
    err: float = 0.0
    lo: float = -INF
    nan: bool = False
    raw: bool = False
    mul: bool = False
    uni: bool = False
    konst: bool = False
    kadd: bool = False
    kmul: bool = False
    grain: float = 0.0

    def regroups_like(self, old: Facts) -> bool:
        """May a value with these facts replace one with `old` under an arithmetic parent,
        whose facts assumed `old`'s (no new constant folding across the parent)?"""
        return (
            (old.konst or not self.konst)
            and (old.kadd or not self.kadd)
            and (old.kmul or not self.kmul)
        )

    def within(self, old: Facts) -> bool:
        """Can a value with these facts stand where `old` was proved to be enough?"""
        return (
            self.mag <= old.mag
            and self.err <= old.err
            and self.lo >= old.lo
            and (old.nan or not self.nan)
            and (self.raw or not old.raw)
            and (old.mul or not self.mul)
            and (self.uni or not old.uni)
            and self.grain >= old.grain
        )


@dataclass(frozen=True)
class E:
    """An expression: `fmt` with {0}, {1}... for the rendered `kids`."""

    ty: str
    fmt: str
    kids: tuple[E, ...] = ()
    facts: Facts = Facts()
    tag: str = ""  # the construct, for coverage counts ("Add", "sqrt", "cast", ...)
    frozen: bool = False  # the minimiser leaves it (and its kids) alone: loop bounds

    def __post_init__(self):
        # Constness is structural: literals, constants, and ops on nothing else (a
        # compiler folds those). Over-approximated (calls with constant arguments count),
        # which is the safe side: it only widens a float's error bound (floats.py).
        konst = self.tag in ("lit", "const") or self.fmt == "workgroup_size().x"
        if self.kids and self.tag not in RUNTIME_TAGS:
            konst = all(k.facts.konst for k in self.kids)
        if konst != self.facts.konst:
            object.__setattr__(self, "facts", replace(self.facts, konst=konst))

    def render(self) -> str:
        return self.fmt.format(*(k.render() for k in self.kids)) if self.kids else self.fmt

    def walk(self):
        yield self
        for k in self.kids:
            yield from k.walk()


@dataclass
class S:
    """A statement: `head` with {0}, {1}... for `exprs`, then indented `blocks`.

    kind: assign store if for while break continue return barrier atomic decl guard;
    an "if" has one or two blocks (the second is the else; a lone if there renders elif).
    pinned statements (loop counters, barriers, declarations) are never dropped.
    """

    kind: str
    head: str
    exprs: tuple[E, ...] = ()
    blocks: tuple[list, ...] = ()
    pinned: bool = False
    tag: str = ""  # the construct, for coverage counts
    target: str = ""  # the buffer a store or atomic writes

    def line(self) -> str:
        return self.head.format(*(e.render() for e in self.exprs))

    def walk(self):
        yield self
        for b in self.blocks:
            for s in b:
                yield from s.walk()


def render_block(stmts: list, indent: int, out: list) -> None:
    pad = "    " * indent
    if not stmts:
        out.append(pad + "pass")
    for s in stmts:
        if s.kind == "if":
            _render_if(s, indent, out, "if")
        elif s.blocks:
            out.append(pad + s.line())
            render_block(s.blocks[0], indent + 1, out)
        else:
            out.append(pad + s.line())


def _render_if(s: S, indent: int, out: list, word: str) -> None:
    pad = "    " * indent
    out.append(f"{pad}{word} {s.exprs[0].render()}:")
    render_block(s.blocks[0], indent + 1, out)
    if len(s.blocks) > 1 and s.blocks[1]:
        orelse = s.blocks[1]
        if len(orelse) == 1 and orelse[0].kind == "if":
            _render_if(orelse[0], indent, out, "elif")
        else:
            out.append(pad + "else:")
            render_block(orelse, indent + 1, out)


@dataclass
class Helper:
    name: str
    params: list  # [(name, type text)]
    ret: str | None
    body: list


@dataclass
class Param:
    name: str
    ty: str  # element type for buffers
    kind: str  # "buffer" | "scalar"
    access: str = "r"  # "r" | "w" | "rw" (buffers)
    role: str = (
        ""  # in | edge | io | out | accd (atomic, own cell) | accs (atomic, shared cells) | chk
    )


@dataclass
class Program:
    """One generated kernel module and how to run it."""

    consts: list  # ["C0 = -7", ...]
    helpers: list
    wg: int
    params: list
    decls: list  # shared / local array declarations (statements)
    body: list
    groups: int  # workgroups on x
    inputs: dict  # buffer name -> numpy array in host layout (every buffer)
    scalars: dict  # scalar name -> value
    uses_cas: bool = False  # atomic_compare_exchange (naga's SPIR-V reader cannot take it)
    default_grid: bool = False  # dispatched with the metadata's grid (an elementwise program)
    subgroup_size: int = 8  # what the reference runs subgroup ops with (the devices' size)
    seed: str = ""
    stats: dict = field(default_factory=dict)

    @property
    def invocations(self) -> int:
        return self.groups * self.wg

    def buffers(self) -> list:
        return [p for p in self.params if p.kind == "buffer"]

    def tolerances(self) -> dict:
        """Per float output buffer: the largest err of any value stored into it."""
        tol: dict = {}
        for s in self.all_statements():
            if s.target and s.exprs:
                tol[s.target] = max(tol.get(s.target, 0.0), s.exprs[-1].facts.err)
        return tol

    def all_statements(self):
        for b in (self.decls, self.body):
            for s in b:
                yield from s.walk()
        for h in self.helpers:
            for s in h.body:
                yield from s.walk()

    def source(self) -> str:
        out = ["from vyre_build.lang import *", ""]
        out += self.consts
        for h in self.helpers:
            params = ", ".join(f"{n}: {t}" for n, t in h.params)
            out += ["", ""]
            out.append(f"def {h.name}({params})" + (f" -> {h.ret}:" if h.ret else ":"))
            render_block(h.body, 1, out)
        params = ", ".join(
            f'{p.name}: Buffer[{p.ty}, "{p.access}"]' if p.kind == "buffer" else f"{p.name}: {p.ty}"
            for p in self.params
        )
        out += ["", "", f"@kernel(workgroup_size={self.wg})", f"def k({params}):"]
        render_block(self.decls + self.body, 1, out)
        return "\n".join(out) + "\n"

    def copy(self) -> Program:
        import copy

        return replace(
            self,
            consts=list(self.consts),
            helpers=copy.deepcopy(self.helpers),
            params=list(self.params),
            decls=copy.deepcopy(self.decls),
            body=copy.deepcopy(self.body),
            inputs={k: v.copy() for k, v in self.inputs.items()},
            scalars=dict(self.scalars),
            stats=dict(self.stats),
        )


def host_dtype(ty: str):
    """The numpy dtype of a buffer of element type `ty` (a vector is its components)."""
    elem = {"f": "f32", "h": "f16", "i": "i32", "u": "u32"}[ty[-1]] if ty.startswith("vec") else ty
    return {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u32": np.uint32}[elem]


def lanes(ty: str) -> int:
    return int(ty[3]) if ty.startswith("vec") else 1
