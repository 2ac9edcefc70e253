"""The random kernel generator: `generate(seed, index)` -> a Program (prog.py).

One kernel module per program: module constants (some of them expressions of others),
0-3 inlined helpers (early returns, returns inside loops), and one kernel over typed
buffers of every role (read-only inputs, edge-value inputs, read-write, write-only, atomic
counters with own or shared cells, the self-check `chk`), scalar parameters, shared and
local arrays. Expressions: gen_int.py and gen_float.py; statements: gen_stmt.py.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from . import floats as F
from .gen_float import FloatGen
from .gen_int import IntGen
from .gen_stmt import Ctx, StmtGen
from .inputs import make_inputs
from .prog import INF, E, Facts, Helper, Program, S
from .values import EDGE_F, SMALL, Buf, Val, params_of

SCALAR_TYPES = ["i32", "u32", "f32", "bool"]
VECTOR_TYPES = ["vec2f", "vec4f", "vec2i", "vec4i", "vec2u", "vec4u"]
ELEMENT_TYPES = ["i32", "u32", "f32", "f32"] + VECTOR_TYPES
WORKGROUP_SIZES = [1, 7, 13, 32, 64, 64, 128, 256]
ARRAY_FACTS = Facts(mag=64.0, lo=-64.0)  # what float shared/local arrays and io buffers hold
EXACT_OUT = Facts(mag=INF, nan=True, mul=True)  # a bit-exact float output
APPROX_OUT = Facts(mag=2.0**16, lo=-(2.0**16), err=2.0**-4, mul=True)


@dataclass(frozen=True)
class Options:
    contract: bool = True  # an add of a product may become an fma (floats.py)
    denormals: bool = True  # edge inputs include denormals
    max_depth: int = 3  # nesting of if/for/while
    max_expr_depth: int = 4
    statements: int = 10  # at most this many top-level statements in the kernel body
    elementwise: float = 0.25  # share of programs shaped for coarsening (descriptor/coarsen.py)


@dataclass
class HelperSig:
    name: str
    params: list  # [Val]
    ret: str
    ret_facts: Facts
    buffer: Buf | None
    index: int


def float_facts(ty: str, facts: Facts, ints: Facts | None = None) -> Facts:
    return facts if ty == "f32" or ty.endswith("f") else (ints or Facts())


class Gen(IntGen, FloatGen, StmtGen):
    def __init__(self, r: random.Random, opts: Options):
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
        self.elementwise = r.random() < opts.elementwise
        self.local_types = ["i32", "u32", "f32", "bool", "i32", "u32", "f32"] + VECTOR_TYPES

    # -- names ------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, -1) + 1
        return f"{prefix}{self.counts[prefix]}"

    def next_bit(self) -> int:
        self.bits += 1
        return (self.bits - 1) % 32

    def counter(self, uni: bool, helper) -> str:
        name = self.fresh("w" if helper is not None else "f")
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
                ty in SCALAR_TYPES and b.ty.startswith("vec") and F_ELEM[b.ty] == ty
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
        r = self.r
        gid = self.id_text("gid")
        k = r.random()
        if k < 0.3 or self.nested_loads > 2 or self.elementwise:
            return E("u32", gid, tag="id")
        if k < 0.4:
            return E("u32", f"({gid} + {r.choice([1, 3, 64, 255])})", tag="+")
        if k < 0.48:
            return E("u32", f"({gid} - {r.choice([1, 2, 7])})", tag="-")
        if k < 0.55:
            return E("u32", f"(len({b.name}) - 1 - {gid})", tag="-")
        x = self.iexpr(r.choice(["i32", "u32"]), False, 2)
        if k < 0.75:
            return E(x.ty, f"({{0}} & {r.choice([7, 63, 255])})", (x,), tag="&")
        if k < 0.85:
            return E(x.ty, f"({{0}} % {r.choice([5, 17, 100])})", (x,), tag="%")
        return x

    def own_index(self, b: Buf) -> E:
        """The invocation's own element, or one out of bounds for every invocation (frozen:
        the minimiser must not make two invocations share an element)."""
        return replace(self._own_index(b), frozen=True)

    def _own_index(self, b: Buf) -> E:
        r = self.r
        gid = self.id_text("gid")
        k = r.random()
        if k < 0.8 or self.nested_loads > 2 or self.elementwise:
            return E("u32", gid, tag="id")
        if k < 0.85:
            return E("i32", f"i32({gid})", tag="cast")
        if k < 0.93:
            return E("u32", f"({gid} + len({b.name}))", tag="+")
        x = self.iexpr("i32", False, 1)
        return E("u32", "u32(-1 - ({0} & 7))", (x,), tag="oob")

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
            args.append(self.value(p.ty, Ctx(uni=False), p.facts))
        text = ", ".join(f"{{{i}}}" for i in range(len(args)))
        if s.buffer is not None:
            bufs = [b for b in self.bufs if b.role in ("in", "edge") and b.ty == s.buffer.ty]
            if not bufs:
                return None
            text += (", " if args else "") + self.r.choice(bufs).name
        return E(ty, f"{s.name}({text})", tuple(args), facts=s.ret_facts, tag="call")

    # -- the module -------------------------------------------------------------------
    def build(self, seed: str) -> Program:
        r = self.r
        wg = r.choice(WORKGROUP_SIZES)
        groups = r.randint(1, 2 if wg >= 128 else 4)
        self.make_consts()
        self.make_buffers(wg)
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
        body = self.block(Ctx(), r.randint(min(4, self.opts.statements), self.opts.statements))
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
        )
        make_inputs(prog, self.bufs_params, self.scalars, r, self.opts)
        return prog

    def call_every_helper(self, body: list) -> list:
        """A helper no statement calls would be dead code: store a call of it."""
        text = "\n".join(s.line() for b in [body] for st in b for s in st.walk())
        out = []
        for sig in self.sigs:
            if sig.name + "(" in text:
                continue
            call = self.helper_call(sig.ret, False, 2, None, only=sig)
            if call is None:
                continue
            ty = "u32" if sig.ret == "bool" else sig.ret
            value = E("u32", "u32({0})", (call,), tag="cast") if sig.ret == "bool" else call
            facts = sig.ret_facts if ty == "f32" or ty.endswith("f") else Facts()
            b = Buf(self.fresh("o"), ty, "out", facts)
            self.bufs.append(b)
            self.bufs_params.insert(len(self.bufs_params) - 1, b)  # chk stays last
            out.append(
                S(
                    "store",
                    f"{b.name}[{{0}}] = {{1}}",
                    (E("u32", "gid", tag="id", frozen=True), value),
                    tag="store:out",
                    target=b.name,
                )
            )
        return out

    def store_into(self, b: Buf) -> S:
        idx = E("u32", "gid", tag="id", frozen=True)
        e = self.value(b.ty, Ctx(), b.facts)
        return S("store", f"{b.name}[{{0}}] = {{1}}", (idx, e), tag="store", target=b.name)

    def make_consts(self) -> None:
        r = self.r
        for _ in range(r.randint(0, 4)):
            name = self.fresh("C")
            ints = [c for c, _ in self.consts if c.ty == "int"]
            if ints and r.random() < 0.4:
                a, b = r.choice(ints), r.choice(ints)
                k = r.choice([2, 3, -5])
                value = a.value * k - b.value
                line = f"{name} = {a.name} * {k} - {b.name}"
            else:
                value = r.choice([0, 1, 7, -3, 255, 1000, -(2**31), 2**31 - 1, 12345])
                line = f"{name} = {value}"
            if -(2**31) <= value < 2**31:
                self.consts.append((Val(name, "int", Facts(uni=True), "const"), line))
                self.consts[-1][0].value = value
        for _ in range(r.randint(0, 2)):
            name = self.fresh("K")
            value = r.choice([0.5, 1.5, -2.0, 0.1, 3.0, 0.25])
            c = Val(name, "float", F.literal(value), "const")
            c.value = value
            self.consts.append((c, f"{name} = {value!r}"))

    def make_buffers(self, wg: int) -> None:
        r = self.r
        bufs: list = []

        def add(role: str, ty: str, facts: Facts, **kw) -> Buf:
            b = Buf(
                self.fresh({"in": "a", "edge": "e", "io": "io", "out": "o"}.get(role, role)),
                ty,
                role,
                facts,
                **kw,
            )
            bufs.append(b)
            return b

        # Elementwise programs: 4-byte scalar buffers only, no atomics (descriptor/coarsen.py).
        elements = ["i32", "u32", "f32"] if self.elementwise else ELEMENT_TYPES
        for _ in range(r.randint(1, 3)):
            ty = r.choice(elements)
            add("in", ty, float_facts(ty, SMALL, Facts(raw=True)))
        if r.random() < 0.6:
            add(
                "edge",
                "f32" if self.elementwise else r.choice(["f32", "f32", "vec4f", "vec2f"]),
                EDGE_F,
            )
        if r.random() < 0.5:
            ty = r.choice(["i32", "u32", "f32"] + ([] if self.elementwise else ["vec4i", "vec2f"]))
            add("io", ty, float_facts(ty, ARRAY_FACTS))
        for _ in range(r.randint(1, 3)):
            ty = r.choice(elements)
            add("out", ty, float_facts(ty, EXACT_OUT if r.random() < 0.5 else APPROX_OUT))
        if r.random() < 0.5 and not self.elementwise:
            add("accd", r.choice(["u32", "i32"]), Facts())
        if r.random() < 0.5 and not self.elementwise:
            b = add("accs", r.choice(["u32", "i32"]), Facts(), size=r.randint(1, 8))
            b.ops.append(r.choice(["add", "sub", "or", "and", "xor", "min", "max"]))
        bufs.append(Buf("chk", "u32", "chk", Facts()))
        for _ in range(r.randint(0, 3)):
            ty = r.choice(["i32", "u32", "f32", "f32"])
            kind = "value"
            facts = Facts(uni=True)
            if ty == "f32":
                kind = r.choice(["fsmall", "fsmall", "fedge"])
                facts = (
                    Facts(mag=4.0, lo=-4.0, raw=True, uni=True)
                    if kind == "fsmall"
                    else Facts(mag=INF, nan=True, raw=True, uni=True)
                )
            self.scalars.append(Val(self.fresh("s"), ty, facts, kind))
        self.bufs = list(bufs)
        self.bufs_params = bufs
        for b in bufs:
            b.facts = b.facts if b.role != "io" else Facts(mag=b.facts.mag, lo=b.facts.lo)

    def make_arrays(self, wg: int) -> list:
        r = self.r
        decls = []
        for _ in range(0 if self.elementwise else r.choice([0, 1, 1, 2])):
            ty = r.choice(["i32", "u32", "f32", "vec4f", "vec2i"])
            n = r.choice([wg, wg + 3, max(1, wg - 2)])
            b = Buf(self.fresh("sh"), ty, "shared", float_facts(ty, ARRAY_FACTS), size=n)
            self.bufs.append(b)
            decls.append(S("decl", f"{b.name} = shared({ty}, {n})", pinned=True))
        if r.random() < 0.5 and not self.elementwise:
            ty = r.choice(["u32", "i32"])
            b = Buf(self.fresh("sa"), ty, "shatomic", Facts(), size=r.randint(1, 8))
            b.ops.append(r.choice(["add", "or", "and", "xor", "min", "max"]))
            self.bufs.append(b)
            decls.append(S("decl", f"{b.name} = shared({ty}, {b.size})", pinned=True))
        if self.elementwise and r.random() < 0.5:
            return decls
        ty = r.choice(["i32", "u32", "f32", "vec2f", "vec4u"])
        b = Buf(self.fresh("la"), ty, "local", float_facts(ty, ARRAY_FACTS), size=r.randint(1, 9))
        self.bufs.append(b)
        decls.append(S("decl", f"{b.name} = local_array({ty}, {b.size})", pinned=True))
        return decls

    def make_vars(self, top: list) -> list:
        r = self.r
        out = []
        for _ in range(r.randint(2, 5)):
            ty = r.choice(self.local_types)
            uni = r.random() < 0.4
            isf = ty == "f32" or ty.endswith("f")
            facts = (
                Facts(mag=2.0**20, lo=-(2.0**20), mul=r.random() < 0.5, uni=uni)
                if isf
                else Facts(uni=uni)
            )
            name = self.fresh("v")
            e = self.value(ty, Ctx(), facts)
            out.append(S("decl", f"{name}: {ty} = {{0}}", (e,), pinned=True, tag="var"))
            top.append(Val(name, ty, facts, "var", mutable=True))
        return out

    def make_helper(self) -> None:
        r = self.r
        name = self.fresh("h")
        params = []
        for _ in range(r.randint(1, 3)):
            ty = r.choice(SCALAR_TYPES + ["vec4f", "vec2i"])
            facts = float_facts(ty, Facts(mag=8.0, lo=-8.0, mul=True))
            params.append(Val(self.fresh("p"), ty, facts, "param"))
        ret = r.choice(SCALAR_TYPES + ["i32", "u32", "f32", "vec4f"])
        approx = r.random() < 0.4
        ret_facts = float_facts(
            ret,
            Facts(mag=2.0**12, lo=-(2.0**12), err=2.0**-6, mul=True)
            if approx
            else Facts(mag=2.0**20, lo=-(2.0**20), mul=True),
        )
        buffer = None
        if r.random() < 0.3:
            ty = r.choice(["i32", "u32", "f32"])
            buffer = Buf(self.fresh("hb"), ty, "in", float_facts(ty, EDGE_F, Facts(raw=True)))
        sig = HelperSig(name, params, ret, ret_facts, buffer, len(self.sigs))
        sig.decls = []
        saved = self.scopes, self.bufs, self.helper_limit, self.in_helper
        self.scopes = [list(params)]
        self.bufs = [buffer] if buffer is not None else []
        self.helper_limit, self.in_helper = len(self.sigs), True
        try:
            ctx = Ctx(uni=False, helper=sig)
            hvars = []
            for _ in range(r.randint(0, 2)):
                ty = r.choice(["i32", "u32", "bool"])
                v = Val(self.fresh("q"), ty, Facts(), "var", mutable=True)
                hvars.append(
                    S(
                        "decl",
                        f"{v.name}: {ty} = {{0}}",
                        (self.value(ty, ctx, v.facts),),
                        pinned=True,
                    )
                )
                self.scopes[0].append(v)
            body = self.block(ctx, r.randint(1, 4))
            ret_e = self.value(ret, ctx, ret_facts)
        finally:
            self.scopes, self.bufs, self.helper_limit, self.in_helper = saved
        body = (
            sig.decls
            + hvars
            + body
            + [S("return", "return {0}", (ret_e,), pinned=True, tag="return")]
        )
        plist = [(p.name, p.ty) for p in params]
        if buffer is not None:
            plist.append((buffer.name, f"Buffer[{buffer.ty}]"))
        self.helpers.append(Helper(name, plist, ret, body))
        self.sigs.append(sig)


F_ELEM = {
    "vec2f": "f32",
    "vec4f": "f32",
    "vec2i": "i32",
    "vec4i": "i32",
    "vec2u": "u32",
    "vec4u": "u32",
}


def generate(seed: int, index: int, opts: Options = Options()) -> Program:
    """Program `index` of the run seeded `seed` (the same pair gives the same program)."""
    r = random.Random(seed * 1_000_003 + index)
    return Gen(r, opts).build(f"{seed}:{index}")
