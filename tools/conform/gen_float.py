"""Float and vector expressions under the float policy of floats.py.

`fexpr(want, d)` returns an f32 expression whose facts are `within(want)`: want.err == 0
asks for an exact value, want.nan allows edge values, want.raw asks for a raw copy,
want.mag bounds the magnitude, want.lo the value (1 for denominators), want.uni
uniformity. Each choice is checked and retried; a fitting literal is the last resort.
"""

from __future__ import annotations

import math

from . import floats as F
from .prog import INF, E, Facts
from .values import float_literal

TRANSCENDENTAL = ["sin", "cos", "tan", "tanh", "exp", "exp2", "log", "log2", "sqrt", "rsqrt"]
ROUNDING = ["floor", "ceil", "trunc", "round"]
VEC_ELEM = {"vec2f": "f32", "vec4f": "f32", "vec2i": "i32", "vec4i": "i32"}
VEC_ELEM.update({"vec2u": "u32", "vec4u": "u32"})


def sub(want: Facts, **kw) -> Facts:
    base = dict(mag=want.mag, err=want.err, nan=False, raw=False, mul=True, uni=want.uni)
    base.update(kw)
    return Facts(**base)


def nice_bound(m: float) -> float:
    """A power of two <= m (clamp bounds are exact and readable)."""
    return 2.0 ** math.floor(math.log2(m)) if m >= 2.0**-20 else 0.0


class FloatGen:
    """Mixin of gen.Gen: `fexpr`, `vexpr`, loads."""

    def fexpr(self, want: Facts, d: int) -> E:
        for attempt in range(4):
            e = self._fexpr(want, d if attempt < 2 else 0)
            if e.facts.within(want):
                return e
        return float_literal(self.r, want, self.opts.denormals)

    def _fexpr(self, want: Facts, d: int) -> E:
        r = self.r
        if want.raw:
            return self.fraw(want, d)
        if want.lo >= 1.0:  # a denominator or a log argument
            x = self.fexpr(sub(want, mag=max(want.mag - 2, 0), lo=-INF), d - 1)
            c = r.choice([1.0, 2.0, 1.5])
            return E("f32", f"(abs({{0}}) + {c})", (x,), F.plus_const(x.facts, c), tag="abs")
        if d <= 0 or r.random() < 0.2:
            return self.fleaf(want)
        if self.half and r.random() < 0.08:
            return self.from_half("f32", want.uni, d - 1, want)
        k = r.random()
        exact = want.err == 0
        if not exact and r.random() < 0.35:
            return self.inexact("f32", want, d)
        if k < 0.2:
            op = r.choice(["+", "-"])
            half = sub(want, mag=want.mag / 2, err=want.err / 2, mul=not exact)
            a, b = self.fexpr(half, d - 1), self.fexpr(half, d - 1)
            return E("f32", f"({{0}} {op} {{1}})", (a, b), F.add(a.facts, b.facts, True), tag=op)
        if k < 0.32 and want.mul:
            root = sub(want, mag=math.sqrt(want.mag), err=want.err / (4 + 2 * math.sqrt(want.mag)))
            a, b = self.fexpr(root, d - 1), self.fexpr(root, d - 1)
            if r.random() < 0.15:
                return E("f32", "({0} ** 2)", (a,), F.mul(a.facts, a.facts), tag="pow")
            return E("f32", "({0} * {1})", (a, b), F.mul(a.facts, b.facts), tag="*")
        if k < 0.4:
            a = self.fexpr(sub(want, nan=want.nan, mul=want.mul), d - 1)
            if r.random() < 0.5:
                return E("f32", "(-{0})", (a,), F.neg(a.facts), tag="neg")
            return E("f32", "abs({0})", (a,), F.absolute(a.facts), tag="abs")
        if k < 0.48:
            op = r.choice(["min", "max", "clamp"])
            if op == "clamp":
                a = self.fexpr(sub(want, mag=F.MAX_MAG), d - 1)
                return self.clamped(a, want.mag)
            a, b = self.fexpr(sub(want), d - 1), self.fexpr(sub(want), d - 1)
            return E("f32", f"{op}({{0}}, {{1}})", (a, b), F.join(a.facts, b.facts), tag=op)
        if k < 0.54:  # discontinuous: exact operand, edge values allowed
            op = r.choice(ROUNDING + ["sign"])
            a = self.fexpr(
                sub(want, mag=max(want.mag - 1, 0), err=0, nan=want.nan and op != "sign"), d - 1
            )
            facts = (
                Facts(mag=1.0, uni=a.facts.uni, lo=-1.0) if op == "sign" else F.rounding(a.facts)
            )
            return E("f32", f"{op}({{0}})", (a,), facts, tag=op)
        if k < 0.6:  # exact scaling by a power of two
            p = r.choice([2.0, 4.0, 0.5, 0.25])
            a = self.fexpr(sub(want, mag=want.mag / max(p, 1.0), err=want.err / max(p, 1.0)), d - 1)
            if r.random() < 0.3:  # f32 floor division: floor(a / p), exact for powers of two
                return E(
                    "f32", f"({{0}} // {p})", (a,), F.rounding(F.scale(a.facts, 1 / p)), tag="//"
                )
            op = r.choice(["*", "/"])
            f = p if op == "*" else 1 / p
            return E("f32", f"({{0}} {op} {p})", (a,), F.scale(a.facts, f), tag="scale")
        if k < 0.68:
            src = r.choice(["i32", "u32", "bool"])
            a = self.bexpr(want.uni, d - 1) if src == "bool" else self.iexpr(src, want.uni, d - 1)
            facts = (
                Facts(mag=1.0, uni=a.facts.uni, lo=0.0)
                if src == "bool"
                else F.from_int(src, a.facts.uni)
            )
            e = E("f32", "f32({0})", (a,), facts, tag="cast")
            return self.clamped(e, want.mag) if facts.mag > want.mag else e
        if k < 0.74:
            c = self.bexpr(want.uni, d - 1)
            a, b = (
                self.fexpr(sub(want, nan=want.nan), d - 1),
                self.fexpr(sub(want, nan=want.nan), d - 1),
            )
            facts = F.join(a.facts, b.facts, Facts(uni=c.facts.uni, raw=True))
            if r.random() < 0.5:
                return E("f32", "select({0}, {1}, {2})", (c, a, b), facts, tag="select")
            return E("f32", "({1} if {0} else {2})", (c, a, b), facts, tag="ifexp")
        if k < 0.8 and not want.uni:
            vec = r.choice(["vec2f", "vec4f"])
            v = self.vexpr(vec, sub(want, nan=want.nan), d - 1)
            return E(
                "f32", f"{{0}}.{r.choice('xyzw'[: int(vec[3])])}", (v,), v.facts, tag="extract"
            )
        if k < 0.84:
            call = self.helper_call("f32", want.uni, d, want)
            if call is not None:
                return call
        if not exact and k < 0.97:
            return self.inexact("f32", want, d)
        if want.nan and k < 0.9:
            ity = r.choice(["i32", "u32"])
            a = self.iexpr(ity, want.uni, d - 1)
            # A device that flushes denormals (--no-denormals) must not get one from the
            # bits either: setting the exponent's low bit keeps every result normal, inf or NaN.
            bits = (
                "bitcast(f32, {0})"
                if self.opts.denormals
                else f"bitcast(f32, ({{0}} | {ity}(8388608)))"
            )
            return E(
                "f32",
                bits,
                (a,),
                Facts(mag=INF, nan=True, raw=True, uni=a.facts.uni),
                tag="bitcast",
            )
        return self.fleaf(want)

    def inexact(self, ty: str, want: Facts, d: int) -> E:
        """An op with a rounding error of its own: a transcendental, a division, an fma."""
        r = self.r
        k = r.random()
        budget = want.err / 4
        if k < 0.6:
            op = r.choice(TRANSCENDENTAL)
            if op in ("log", "log2", "rsqrt"):
                a = self.typed(ty, sub(want, mag=min(want.mag, 2.0**20), err=budget, lo=1.0), d - 1)
            elif op == "sqrt":
                a = self.typed(ty, sub(want, mag=min(want.mag**2, 2.0**20), err=budget**2), d - 1)
                a = E(ty, "abs({0})", (a,), F.absolute(a.facts), tag="abs")
            else:
                bound = F.transcendental(op, Facts())[1]
                if op in ("exp", "exp2"):
                    base = math.e if op == "exp" else 2.0
                    bound = min(bound, math.log(max(want.mag, 1.0), base))
                a = self.typed(ty, sub(want, mag=bound, err=budget / 64), d - 1)
                if a.facts.mag > bound:
                    a = self.clamped(a, bound)
            facts = F.transcendental(op, a.facts)[0]
            return E(ty, f"{op}({{0}})", (a,), facts, tag=op)
        if k < 0.85:
            a = self.typed(ty, sub(want, err=budget), d - 1)
            b = self.typed(
                ty, sub(want, mag=2.0**20, err=budget / (1 + a.facts.mag), lo=1.0), d - 1
            )
            return E(ty, "({0} / {1})", (a, b), F.div(a.facts, b.facts), tag="/")
        root = sub(want, mag=math.sqrt(want.mag / 2), err=budget / (1 + math.sqrt(want.mag)))
        a, b = self.typed(ty, root, d - 1), self.typed(ty, root, d - 1)
        c = self.typed(ty, sub(want, mag=want.mag / 2, err=budget), d - 1)
        return E(ty, "fma({0}, {1}, {2})", (a, b, c), F.fma(a.facts, b.facts, c.facts), tag="fma")

    def typed(self, ty: str, want: Facts, d: int) -> E:
        return self.fexpr(want, d) if ty == "f32" else self.vexpr(ty, want, d)

    def clamped(self, a: E, bound: float) -> E:
        b = nice_bound(min(bound, F.MAX_MAG))
        ty = a.ty
        return E(ty, f"clamp({{0}}, {-b!r}, {b!r})", (a,), F.clamp(a.facts, b), tag="clamp")

    def fraw(self, want: Facts, d: int) -> E:
        r = self.r
        leaf = self.fleaf(want)
        if d > 0 and r.random() < 0.3:
            return E("f32", "(-{0})", (leaf,), F.neg(leaf.facts), tag="neg")
        return leaf

    def fleaf(self, want: Facts) -> E:
        r = self.r
        k = r.random()
        if k < 0.2:
            return float_literal(r, want, self.opts.denormals)
        if k < 0.5:
            v = self.pick_val("f32", want)
            if v is not None:
                return v
        if k < 0.56:
            c = self.pick_const("float", want.uni)
            if c is not None and abs(c.value) <= want.mag:
                return E("f32", c.name, facts=F.literal(c.value), tag="const")
        if not want.uni:
            load = self.load("f32", want)
            if load is not None:
                return (
                    load
                    if load.facts.within(want) or load.facts.nan
                    else self.clamped(load, want.mag)
                )
        v = self.pick_val(
            "f32", Facts(mag=INF, err=want.err, mul=want.mul, uni=want.uni), clampable=True
        )
        if v is not None and not want.raw and not v.facts.nan:
            return self.clamped(v, want.mag)
        return float_literal(r, want, self.opts.denormals)

    def vexpr(self, ty: str, want: Facts, d: int) -> E:
        for attempt in range(4):
            e = self._vexpr(ty, want, d if attempt < 2 else 0)
            if e.facts.within(want):
                return e
        elem = VEC_ELEM[ty]
        x = self.fexpr(want, 0) if elem == "f32" else self.iexpr(elem, want.uni, 0)
        return E(ty, f"{ty}({{0}})", (x,), x.facts, tag="splat")

    def _vexpr(self, ty: str, want: Facts, d: int) -> E:
        r = self.r
        elem = VEC_ELEM[ty]
        isf = elem == "f32"
        k = r.random()
        if want.lo >= 1.0:
            x = self.vexpr(ty, sub(want, mag=max(want.mag - 2, 0), lo=-INF), d - 1)
            return E(ty, "(abs({0}) + 1.0)", (x,), F.plus_const(x.facts, 1.0), tag="abs")
        if isf and want.err > 0 and d >= 0 and r.random() < 0.4:
            return self.inexact(ty, want, d)
        if d <= 0 or k < 0.25:
            return self.vleaf(ty, want, d)
        if self.half and r.random() < 0.1 and (not isf or want.lo < 0):
            return self.from_half(ty, want.uni, d - 1, want if isf else None)
        if k < 0.45:
            op = r.choice(["+", "-", "*"] + ([] if isf else ["&", "|", "^"]))
            if op == "*" and isf and not want.mul:
                op = "+"
            if isf and op == "*":
                root = sub(
                    want, mag=math.sqrt(want.mag), err=want.err / (4 + 2 * math.sqrt(want.mag))
                )
                a, b = self.vexpr(ty, root, d - 1), self.vexpr(ty, root, d - 1)
                facts = F.mul(a.facts, b.facts)
            elif isf:
                half = sub(want, mag=want.mag / 2, err=want.err / 2, mul=want.err > 0)
                a, b = self.vexpr(ty, half, d - 1), self.vexpr(ty, half, d - 1)
                facts = F.add(a.facts, b.facts, True)
            else:
                a, b = self.vexpr(ty, want, d - 1), self.vexpr(ty, want, d - 1)
                facts = F.join(a.facts, b.facts)
            if r.random() < 0.3:  # a scalar beside a vector is splatted
                s = self.fexpr(b.facts, 0) if isf else self.iexpr(elem, want.uni, 0)
                # the op's bound again with the scalar, which may be a literal where the
                # vector was not (a constant to fold and regroup with): the scalar stands
                # in only where the bound computed above still holds
                again = F.mul(a.facts, s.facts) if op == "*" else F.add(a.facts, s.facts, True)
                if not isf or again.err <= facts.err:
                    b = s
            return E(ty, f"({{0}} {op} {{1}})", (a, b), facts, tag=op)
        if k < 0.55:
            a = self.vexpr(ty, sub(want, mul=want.mul, nan=want.nan), d - 1)
            if r.random() < 0.4 and (isf or elem == "i32"):
                return E(ty, "abs({0})", (a,), F.absolute(a.facts), tag="abs")
            op = "-" if isf or r.random() < 0.5 else "~"
            return E(ty, f"({op}{{0}})", (a,), F.neg(a.facts), tag="neg" if op == "-" else "~")
        if k < 0.65:
            op = r.choice(["min", "max", "clamp", "select", "ifexp"])
            a, b = self.vexpr(ty, sub(want), d - 1), self.vexpr(ty, sub(want), d - 1)
            if op == "clamp":
                return (
                    self.clamped(a, want.mag)
                    if isf
                    else E(ty, "clamp({0}, 0, 100)", (a,), a.facts, tag="clamp")
                )
            if op in ("select", "ifexp"):
                c = self.bexpr(want.uni, d - 1)
                fmt = "select({0}, {1}, {2})" if op == "select" else "({1} if {0} else {2})"
                return E(
                    ty,
                    fmt,
                    (c, a, b),
                    F.join(a.facts, b.facts, Facts(uni=c.facts.uni, raw=True)),
                    tag=op,
                )
            return E(ty, f"{op}({{0}}, {{1}})", (a, b), F.join(a.facts, b.facts), tag=op)
        if k < 0.75:  # conversion between vectors of the same width
            src = r.choice([t for t in VEC_ELEM if t[3] == ty[3] and t != ty])
            from_float = Facts(mag=INF, nan=True, mul=True, uni=want.uni)
            a = self.vexpr(src, from_float if src.endswith("f") else Facts(uni=want.uni), d - 1)
            facts = Facts(mag=2.0**32, uni=a.facts.uni) if isf else Facts(uni=a.facts.uni)
            e = E(ty, f"{ty}({{0}})", (a,), facts, tag="vcast")
            return self.clamped(e, want.mag) if isf and facts.mag > want.mag else e
        if k < 0.85 and isf:
            op = r.choice(ROUNDING + ["sign"])
            a = self.vexpr(
                ty, sub(want, mag=max(want.mag - 1, 0), err=0, nan=want.nan and op != "sign"), d - 1
            )
            facts = (
                Facts(mag=1.0, uni=a.facts.uni, lo=-1.0) if op == "sign" else F.rounding(a.facts)
            )
            return E(ty, f"{op}({{0}})", (a,), facts, tag=op)
        return self.construct(ty, want, d)

    def construct(self, ty: str, want: Facts, d: int) -> E:
        elem, n = VEC_ELEM[ty], int(ty[3])
        if elem == "f32":
            parts = [self.fexpr(sub(want, nan=want.nan), d - 1) for _ in range(n)]
        else:
            parts = [self.iexpr(elem, want.uni, d - 1) for _ in range(n)]
        fmt = f"{ty}(" + ", ".join(f"{{{i}}}" for i in range(n)) + ")"
        return E(ty, fmt, tuple(parts), F.join(*(p.facts for p in parts)), tag="construct")

    def vleaf(self, ty: str, want: Facts, d: int) -> E:
        r = self.r
        k = r.random()
        if k < 0.35:
            v = self.pick_val(ty, want)
            if v is not None:
                return v
        if k < 0.65 and not want.uni:
            load = self.load(ty, want)
            if load is not None and load.facts.within(want):
                return load
        elem = VEC_ELEM[ty]
        if r.random() < 0.5:
            return self.construct(ty, want, min(d, 1))
        x = (
            self.fexpr(sub(want, nan=want.nan), min(d, 1))
            if elem == "f32"
            else self.iexpr(elem, want.uni, min(d, 1))
        )
        return E(ty, f"{ty}({{0}})", (x,), x.facts, tag="splat")
