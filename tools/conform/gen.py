"""The random kernel generator: `generate(seed, index)` -> a Program (prog.py).

One kernel module per program: module constants (some of them expressions of others),
0-3 inlined helpers (early returns, returns inside loops), and one kernel over typed
buffers of every role (read-only inputs, edge-value inputs, read-write, write-only, atomic
counters with own or shared cells, the self-check `chk`), scalar parameters, shared and
local arrays. Expressions: gen_int.py, gen_float.py and, in a share of the programs,
gen_half.py (f16 buffers, values and conversions); statements: gen_stmt.py and
gen_memory.py; the module around the kernel: gen_module.py.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from .gen_float import FloatGen
from .gen_half import HALF_TYPES, IN_FACTS, HalfGen, out_want
from .gen_half import EDGE_FACTS as HALF_EDGE
from .gen_int import IntGen
from .gen_memory import MemoryGen
from .gen_module import F_ELEM, SCALAR_TYPES, VECTOR_TYPES, WORKGROUP_SIZES, ModuleGen
from .gen_stmt import Ctx, StmtGen
from .gen_subgroup import SubgroupGen
from .inputs import make_inputs
from .prog import E, Facts, Program, S
from .values import Buf, Val, params_of

__all__ = ["Options", "WORKGROUP_SIZES", "generate"]


@dataclass(frozen=True)
class Options:
    denormals: bool = True  # edge inputs include denormals
    max_depth: int = 3  # nesting of if/for/while
    max_expr_depth: int = 4
    statements: int = 10  # at most this many top-level statements in the kernel body
    elementwise: float = 0.25  # share of programs shaped for coarsening (descriptor/coarsen.py)
    subgroup_size: int = 8  # the devices' (lavapipe: 8); the reference runs with it
    half: float = 0.15  # share of (non-elementwise) programs with f16 (gen_half.py)


class Gen(IntGen, FloatGen, HalfGen, StmtGen, MemoryGen, ModuleGen, SubgroupGen):
    def __init__(self, r: random.Random, opts: Options, half: bool = False):
        self.r, self.opts = r, opts
        self.max_depth, self.max_expr_depth = opts.max_depth, opts.max_expr_depth
        self.counts: dict = {}
        self.scopes: list = [[]]
        self.bufs: list = []
        self.scalars: list = []
        self.consts: list = []  # (Val with .value, line)
        self.sigs: list = []
        self.helpers: list = []
        self.helper_limit = 0  # helpers callable from here (those defined earlier)
        self.counter_decls: list = []
        self.nonuni_returned = False
        self.uses_cas = False
        self.bits = 0
        self.loop_bits: dict = {}  # chk bit -> [(type, lo, hi, step, trips allowed)]
        self.in_helper = False
        self.nested_loads = 0
        self.diverged: list = []  # per enclosing loop: a divergent exit was made in it
        self.elementwise = r.random() < opts.elementwise
        self.local_types = ["i32", "u32", "f32", "bool", "i32", "u32", "f32"] + VECTOR_TYPES
        # f16 programs: drawn from their own generator (gen.generate), so the others are
        # the programs they were before f16 came
        self.half = half and not self.elementwise
        self.local_types += HALF_TYPES if self.half else []

    # -- names ------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, -1) + 1
        return f"{prefix}{self.counts[prefix]}"

    def next_bit(self) -> int:
        self.bits += 1
        return (self.bits - 1) % 32

    def counter(self, uni: bool, helper) -> str:
        name = self.fresh("w" if helper is not None else "n")  # not f: f16 is a type
        decl = S("decl", f"{name}: u32 = 0", pinned=True)
        (helper.decls if helper is not None else self.counter_decls).append(decl)
        return name

    # -- leaves -----------------------------------------------------------------------
    def pick_val(self, ty: str, want: Facts, clampable: bool = False):
        cands = []
        for scope in self.scopes:
            for v in scope:
                if v.ty != ty:
                    continue
                f = v.facts
                if clampable:
                    f = Facts(mag=0.0, err=f.err, uni=f.uni, mul=f.mul, nan=f.nan)
                if f.within(want):
                    cands.append(v)
        if not cands:
            return None
        v = self.r.choice(cands)
        return E(ty, v.name, facts=v.facts, tag=v.kind)

    def pick_const(self, kind: str, uni: bool, ty: str = "i32"):
        cands = [c for c, _ in self.consts if c.ty == kind]
        if kind == "int":
            lo = 0 if ty == "u32" else -(2**31)
            cands = [c for c in cands if lo <= c.value < 2**31]
        return self.r.choice(cands) if cands else None

    def id_text(self, name: str) -> str:
        if not self.in_helper:
            return name
        return {"gid": "global_id().x", "lid": "local_id().x", "wid": "workgroup_id().x"}[name]

    def arrays(self, ty: str, want: Facts):
        elem_ok = lambda b: (
            b.ty == ty
            or (  # noqa: E731 - a scalar from a vector component
                ty in SCALAR_TYPES + ["f16"] and b.ty.startswith("vec") and F_ELEM[b.ty] == ty
            )
        )
        return [
            b
            for b in self.bufs
            if b.role in ("in", "edge", "io", "accd", "local")
            and elem_ok(b)
            and (want.nan or not b.facts.nan)
            and (b.facts.raw or not want.raw)
        ]

    def load(self, ty: str, want: Facts):
        cands = self.arrays(ty, want)
        if not cands:
            return None
        b = self.r.choice(cands)
        self.nested_loads += 1  # an index may load, whose index may load...: bounded
        try:
            idx = self.own_index(b) if b.role in ("io", "accd") else self.index(b)
        finally:
            self.nested_loads -= 1
        if b.ty != ty:
            comp = self.r.choice("xyzw"[: int(b.ty[3])])
            inner = E(b.ty, f"{b.name}[{{0}}]", (idx,), facts=b.facts, tag="load")
            return E(ty, f"{{0}}.{comp}", (inner,), facts=b.facts, tag="extract")
        return E(ty, f"{b.name}[{{0}}]", (idx,), facts=b.facts, tag="load")

    def index(self, b: Buf) -> E:
        """Any index (out of bounds included): for arrays no invocation writes meanwhile."""
        r = self.r
        gid = self.id_text("gid")
        if self.nested_loads > 2 or self.elementwise:
            return E("u32", gid, tag="id")

        def data(op: str = "", ks: tuple = ()) -> E:
            x = self.iexpr(r.choice(["i32", "u32"]), False, 2)
            return E(x.ty, f"({{0}} {op} {r.choice(ks)})", (x,), tag=op) if op else x

        forms = [
            (30, lambda: E("u32", gid, tag="id")),
            (10, lambda: E("u32", f"({gid} + {r.choice([1, 3, 64, 255])})", tag="+")),
            (8, lambda: E("u32", f"({gid} - {r.choice([1, 2, 7])})", tag="-")),
            (7, lambda: E("u32", f"(len({b.name}) - 1 - {gid})", tag="-")),
            (20, lambda: data("&", (7, 63, 255))),
            (10, lambda: data("%", (5, 17, 100))),
            (15, data),
        ]
        return self.unfolded(b, r.choices([f for _, f in forms], [w for w, _ in forms])[0]())

    def unfolded(self, b: Buf, e: E) -> E:
        """`e`, or `e` plus a zero no compiler folds when `e` indexes a shared or local
        array: a constant index past such an array's end is a compile error, and the
        out-of-bounds access it makes is what the run wants to exercise. Every such index,
        not only those the facts know constant: the frontend also folds what they do not
        track (`u32(0) ** 0` is 1: seed 40's programs 9, 108, 4798 and 5863 on the H200)."""
        if b.role not in ("shared", "shatomic", "local") or e.frozen or e.fmt in ("gid", "lid"):
            return e  # `workgroup_size().x` is an id too, and a constant
        gid = self.id_text("gid")
        zero = f"({gid} - {gid})" if e.ty == "u32" else f"(i32({gid}) - i32({gid}))"
        return E(e.ty, f"({{0}} + {zero})", (e,), tag="+")

    def own_index(self, b: Buf) -> E:
        """The invocation's own element, or one out of bounds for every invocation (frozen:
        the minimiser must not make two invocations share an element)."""
        return replace(self._own_index(b), frozen=True)

    def _own_index(self, b: Buf) -> E:
        r = self.r
        gid = self.id_text("gid")
        if self.nested_loads > 2 or self.elementwise or r.random() < 0.8:
            return E("u32", gid, tag="id")
        k = r.random()
        if k < 0.25:
            return E("i32", f"i32({gid})", tag="cast")
        if k < 0.65:
            return E("u32", f"({gid} + len({b.name}))", tag="+")
        return E("u32", "u32(-1 - ({0} & 7))", (self.iexpr("i32", False, 1),), tag="oob")

    def opaque(self, e: E) -> E:
        """A float constant about to be stored (a variable, an array, a helper argument) as
        a value no compiler can see: it would forward it to the loads and regroup it with
        their neighbours, which the loads' facts do not allow for (floats.py)."""
        if not (e.facts.konst and F_ELEM.get(e.ty, e.ty) == "f32"):
            return e
        other = E(e.ty, "1.0" if e.facts.lo >= 1 else "0.0", tag="lit")
        never = E("bool", "(num_workgroups().x == u32(0))", facts=Facts(uni=True), tag="id")
        facts = replace(e.facts, konst=False, kadd=False, kmul=False, raw=False)
        return E(e.ty, "select({0}, {1}, {2})", (never, other, e), facts=facts, tag="select")

    def bound_scalar(self, ty: str) -> Val:
        for v in self.scalars:
            if v.ty == ty and v.kind == "bound":
                return v
        v = Val(self.fresh("s"), ty, Facts(uni=True), "bound")
        self.scalars.append(v)
        self.scopes[0].append(Val(v.name, ty, v.facts, "param"))
        return v

    def helper_call(self, ty: str, uni: bool, d: int, want: Facts | None = None, only=None):
        if uni:
            return None
        sigs = [
            s
            for s in self.sigs[: self.helper_limit]
            if s.ret == ty and (want is None or s.ret_facts.within(want))
        ]
        sigs = [only] if only is not None else sigs
        if not sigs:
            return None
        s = self.r.choice(sigs)
        args = []
        for p in s.params:
            args.append(self.opaque(self.value(p.ty, Ctx(uni=False), p.facts)))
        text = ", ".join(f"{{{i}}}" for i in range(len(args)))
        if s.buffer is not None:
            bufs = [b for b in self.bufs if b.role in ("in", "edge") and b.ty == s.buffer.ty]
            if not bufs:
                return None
            text += (", " if args else "") + self.r.choice(bufs).name
        return E(ty, f"{s.name}({text})", tuple(args), facts=s.ret_facts, tag="call")

    def half_buffers(self) -> None:
        """f16 / vec2h / vec4h inputs (edge values too) and outputs, before `chk`."""
        r = self.r
        new = [Buf(self.fresh("a"), r.choice(HALF_TYPES), "in", IN_FACTS)]
        if r.random() < 0.6:
            new.append(Buf(self.fresh("a"), r.choice(HALF_TYPES), "in", IN_FACTS))
        if r.random() < 0.5:
            new.append(Buf(self.fresh("e"), r.choice(["f16", "f16", "vec4h"]), "edge", HALF_EDGE))
        for _ in range(r.randint(1, 2)):
            new.append(Buf(self.fresh("o"), r.choice(HALF_TYPES), "out", out_want(r)))
        for b in new:
            self.bufs.insert(len(self.bufs) - 1, b)
            self.bufs_params.insert(len(self.bufs_params) - 1, b)

    # -- the module -------------------------------------------------------------------
    def build(self, seed: str) -> Program:
        r = self.r
        wg = r.choice(WORKGROUP_SIZES)
        groups = r.randint(1, 2 if wg >= 128 else 4)
        self.make_consts()
        self.make_buffers(wg)
        if self.half:
            self.half_buffers()
        for _ in range(r.choice([0, 1, 1, 2, 3])):
            self.make_helper()
        self.helper_limit = len(self.sigs)
        decls = self.make_arrays(wg)
        top = self.scopes[0]
        prologue = [S("decl", "gid = global_id().x", pinned=True)]
        if not self.elementwise:  # other ids keep a kernel from coarsening
            top.append(Val("wid", "u32", Facts(uni=True), "id"))
            prologue.append(S("decl", "lid = local_id().x", pinned=True))
            prologue.append(S("decl", "wid = workgroup_id().x", pinned=True))
        prologue.append(S("decl", "chk_v: u32 = 0", pinned=True))
        for v in self.scalars:
            top.append(Val(v.name, v.ty, v.facts, "param"))
        prologue += self.make_vars(top)
        body = self.subgroup_let(Ctx(), r.randint(3, 8)) if r.random() < 0.6 else []
        body += self.block(Ctx(), r.randint(min(4, self.opts.statements), self.opts.statements))
        body += self.call_every_helper(body)
        outs = [b for b in self.bufs if b.role == "out"]
        for b in outs:  # every output gets at least one store
            body.append(self.store_into(b))
        body.append(self.chk_store())
        params = params_of(self.bufs_params, self.scalars)
        prog = Program(
            consts=[line for _, line in self.consts],
            helpers=[h for h in self.helpers],
            wg=wg,
            params=params,
            decls=decls + prologue + self.counter_decls,
            body=body,
            groups=groups,
            inputs={},
            scalars={},
            uses_cas=self.uses_cas,
            seed=seed,
            stats={"loops": self.loop_bits},
            default_grid=self.elementwise,
            subgroup_size=self.opts.subgroup_size,
        )
        make_inputs(prog, self.bufs_params, self.scalars, r, self.opts)
        return prog


def generate(seed: int, index: int, opts: Options = Options()) -> Program:
    """Program `index` of the run seeded `seed` (the same pair gives the same program)."""
    r = random.Random(seed * 1_000_003 + index)
    half = random.Random(f"f16:{seed}:{index}").random() < opts.half
    return Gen(r, opts, half).build(f"{seed}:{index}")
