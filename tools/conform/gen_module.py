"""The module around a kernel: constants, buffers and scalars of every role, shared and
local arrays, variables, helpers (with their bodies), and a call of every helper."""

from __future__ import annotations

from dataclasses import dataclass

from . import floats as F
from .gen_half import HALF_TYPES, half_want
from .gen_stmt import Ctx
from .prog import INF, E, Facts, Helper, S
from .values import EDGE_F, SMALL, Buf, Val

SCALAR_TYPES = ["i32", "u32", "f32", "bool"]
VECTOR_TYPES = ["vec2f", "vec4f", "vec2i", "vec4i", "vec2u", "vec4u"]
ELEMENT_TYPES = ["i32", "u32", "f32", "f32"] + VECTOR_TYPES
WORKGROUP_SIZES = [1, 7, 13, 32, 64, 64, 128, 256]
ARRAY_FACTS = Facts(mag=64.0, lo=-64.0)  # what float shared/local arrays and io buffers hold
EXACT_OUT = Facts(mag=INF, nan=True, mul=True)  # a bit-exact float output
APPROX_OUT = Facts(mag=2.0**16, lo=-(2.0**16), err=2.0**-4, mul=True)


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


F_ELEM = {
    "vec2f": "f32",
    "vec4f": "f32",
    "vec2i": "i32",
    "vec4i": "i32",
    "vec2u": "u32",
    "vec4u": "u32",
    "vec2h": "f16",
    "vec4h": "f16",
}


class ModuleGen:
    """Mixin of gen.Gen: everything but the kernel body."""

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
            if ty in HALF_TYPES:
                facts = half_want(r.choice([2.0**-3, 2.0**-6]), uni=uni)
            name = self.fresh("v")
            e = self.opaque(self.value(ty, Ctx(), facts))
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
