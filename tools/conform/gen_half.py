"""f16 and vec2h / vec4h expressions, in some programs (`self.half`, gen.Gen).

Every f16 value is exact: Facts.grain is a power of two the value is a multiple of and
mag <= 2048 * grain (<= 65504), so it has at most 11 significant bits and every + - *
on such operands (held to a bound that keeps the result so) is exact in f16. Contraction
into an fma, regrouping and the f32-then-round evaluation of the reference all give the
same value, so f16 outputs are compared bit for bit (up to the sign of zero and NaN
payloads). The ops whose f16 precision the project does not pin (division, fma,
transcendentals, sqrt: Vulkan's and WGSL's f16 bounds, which floats.py does not model)
are not generated; coverage.py lists their rows as such. Values from f32 or integers
come in through floor and clamp (`f16(clamp(floor(x), -1024.0, 1024.0))`), so no
conversion rounds.

Edge values (f16 NaNs, +-inf, +-65504, denormals unless --no-denormals) come from "edge"
f16 buffers and literals only and, as for f32 (floats.py), reach only moves, select,
negation, abs, comparisons, classification, floor/ceil/trunc/round and casts to f32 and
the integers (NaN -> 0, saturating: pinned). f16 needs the device's `f16` and
`storage_16bit` features; backends.skip_reason skips a device without them.
"""

from __future__ import annotations

import math

from .prog import INF, E, Facts

HALF_VECTORS = ["vec2h", "vec4h"]
HALF_TYPES = ["f16"] + HALF_VECTORS
SIBLING = {"vec2h": ["vec2f", "vec2i", "vec2u"], "vec4h": ["vec4f", "vec4i", "vec4u"]}
MIN_GRAIN = 2.0**-14  # no arithmetic result is an f16 denormal
BIG_GRAIN = 2.0**20  # the grain of 0
HALF_LITERALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 0.25, -2.5, 1.5, -0.75, 4.0, 100.0, 1024.0]
HALF_EDGE_LITERALS = [65504.0, -65504.0, 2.0**-14]
HALF_DENORMAL_LITERALS = [2.0**-24, -(2.0**-20)]
IN_FACTS = Facts(mag=4.0, lo=-4.0, raw=True, grain=2.0**-3)  # "in" f16 buffers
EDGE_FACTS = Facts(mag=INF, nan=True, raw=True, grain=2.0**20)  # "edge" f16 buffers
ROUNDING = ["floor", "ceil", "trunc", "round"]


def pow2_up(x: float) -> float:
    return 2.0 ** math.ceil(math.log2(x)) if x > 0 else MIN_GRAIN


def grain_of(v: float) -> float:
    if v == 0:
        return BIG_GRAIN
    g = 1.0
    while v / g != math.floor(v / g):
        g /= 2
    while (v / (2 * g)) == math.floor(v / (2 * g)) and g < BIG_GRAIN:
        g *= 2
    return g


def half_want(grain: float, nan: bool = False, uni: bool = False) -> Facts:
    """What an f16 consumer takes: multiples of `grain`, at most 11 bits of them."""
    mag = min(2048 * grain, 60000.0)
    return Facts(mag=INF if nan else mag, lo=-INF if nan else -mag, nan=nan, uni=uni, grain=grain)


def out_want(r) -> Facts:
    return half_want(r.choice([2.0**-6, 2.0**-6, 2.0**-8, 2.0**-3]), nan=r.random() < 0.5)


def _cap(want: Facts) -> float:
    return min(want.mag, 2048 * want.grain, 60000.0) if want.grain else min(want.mag, 60000.0)


def _exact(want: Facts, mag: float, grain: float) -> Facts:
    return Facts(mag=mag, lo=-mag, uni=want.uni, grain=grain)


def _join(*fs: Facts) -> Facts:
    return Facts(
        mag=max(f.mag for f in fs),
        lo=min(f.lo for f in fs),
        nan=any(f.nan for f in fs),
        raw=all(f.raw for f in fs),
        uni=all(f.uni for f in fs),
        grain=min(f.grain for f in fs),
    )


class HalfGen:
    """Mixin of gen.Gen: `hexpr` (f16), `hvexpr` (vec2h, vec4h), their entries elsewhere."""

    def hexpr(self, want: Facts, d: int) -> E:
        for attempt in range(4):
            e = self._hexpr(want, d if attempt < 2 else 0)
            if e.facts.within(want):
                return e
        return self.hliteral(want)

    def hliteral(self, want: Facts) -> E:
        pool = [v for v in HALF_LITERALS if abs(v) <= _cap(want) and grain_of(v) >= want.grain]
        if want.nan:
            pool += HALF_EDGE_LITERALS + (HALF_DENORMAL_LITERALS if self.opts.denormals else [])
        v = self.r.choice(pool) if pool else 0.0
        edge = v in HALF_EDGE_LITERALS or v in HALF_DENORMAL_LITERALS
        facts = Facts(mag=INF if edge else abs(v), lo=v, nan=edge, raw=True, uni=True)
        facts = Facts(**{**facts.__dict__, "grain": BIG_GRAIN if edge else grain_of(v)})
        return E("f16", f"f16({v!r})", facts=facts, tag="lit")

    def hclamp(self, a: E, bound: float) -> E:
        b = 2.0 ** math.floor(math.log2(bound)) if bound >= 1 else 0.0
        facts = Facts(mag=b, lo=-b, uni=a.facts.uni, grain=a.facts.grain)
        return E(a.ty, f"clamp({{0}}, f16({-b!r}), f16({b!r}))", (a,), facts, tag="clamp")

    def _hexpr(self, want: Facts, d: int) -> E:
        r = self.r
        k = r.random()
        cap, g = _cap(want), want.grain
        if d <= 0 or k < 0.2:
            return self.hleaf(want)
        if k < 0.35:
            op = r.choice(["+", "-"])
            half = Facts(mag=cap / 2, lo=-cap / 2, uni=want.uni, grain=g)
            a, b = self.hexpr(half, d - 1), self.hexpr(half, d - 1)
            facts = _exact(want, a.facts.mag + b.facts.mag, min(a.facts.grain, b.facts.grain))
            return E("f16", f"({{0}} {op} {{1}})", (a, b), facts, tag=op)
        if k < 0.45 and g <= 2.0**-2 and cap > 0:  # a product of cap 0 would divide by 0
            ga = 2.0**-3 if g <= 2.0**-6 else pow2_up(math.sqrt(g))
            gb = max(pow2_up(g / ga), MIN_GRAIN)
            ma = min(math.sqrt(cap), 2048 * ga)
            wa = Facts(mag=ma, lo=-ma, uni=want.uni, grain=ga)
            wb = Facts(mag=min(cap / ma, 2048 * gb), lo=-min(cap / ma, 2048 * gb), uni=want.uni)
            a, b = self.hexpr(wa, d - 1), self.hexpr(Facts(**{**wb.__dict__, "grain": gb}), d - 1)
            facts = _exact(want, a.facts.mag * b.facts.mag, a.facts.grain * b.facts.grain)
            return E("f16", "({0} * {1})", (a, b), facts, tag="*")
        if k < 0.55:
            a = self.hexpr(Facts(**{**want.__dict__, "raw": False}), d - 1)
            if r.random() < 0.5:
                return E(
                    "f16", "(-{0})", (a,), Facts(**{**a.facts.__dict__, "lo": -a.facts.mag}), "neg"
                )
            facts = Facts(**{**a.facts.__dict__, "lo": 0.0, "raw": False})
            return E("f16", "abs({0})", (a,), facts, tag="abs")
        if k < 0.62:
            op = r.choice(["min", "max", "clamp"])
            inner = Facts(mag=cap, lo=-cap, uni=want.uni, grain=g)
            a = self.hexpr(inner, d - 1)
            if op == "clamp":
                return self.hclamp(a, max(cap, 1.0))
            b = self.hexpr(inner, d - 1)
            return E("f16", f"{op}({{0}}, {{1}})", (a, b), _join(a.facts, b.facts), tag=op)
        if k < 0.68 and g <= 1.0:  # discontinuous: exact anyway; edge values allowed
            op = r.choice(ROUNDING + ["sign"])
            m = max(min(cap - 1, 1024.0), 0.0)
            nan = want.nan and op != "sign"
            inner = Facts(mag=INF if nan else m, lo=-INF if nan else -m, nan=nan, uni=want.uni)
            a = self.hexpr(Facts(**{**inner.__dict__, "grain": MIN_GRAIN}), d - 1)
            if op == "sign":
                facts = Facts(mag=1.0, lo=-1.0, uni=a.facts.uni, grain=1.0)
            else:
                m = a.facts.mag + 1
                lo = -INF if a.facts.nan else -m
                facts = Facts(mag=m, lo=lo, nan=a.facts.nan, uni=a.facts.uni, grain=1.0)
            return E("f16", f"{op}({{0}})", (a,), facts, tag=op)
        if k < 0.78 and g <= 1.0:
            return self.hconvert(want, d)
        if k < 0.86:
            c = self.bexpr(want.uni, d - 1)
            a, b = self.hexpr(want, d - 1), self.hexpr(want, d - 1)
            facts = _join(a.facts, b.facts, Facts(uni=c.facts.uni, raw=True, grain=BIG_GRAIN))
            fmt = "select({0}, {1}, {2})" if r.random() < 0.5 else "({1} if {0} else {2})"
            return E("f16", fmt, (c, a, b), facts, tag="select" if "select" in fmt else "ifexp")
        if k < 0.94 and not want.uni:
            vec = r.choice(HALF_VECTORS)
            v = self.hvexpr(vec, want, d - 1)
            return E("f16", f"{{0}}.{r.choice('xyzw'[: int(vec[3])])}", (v,), v.facts, "extract")
        return self.hleaf(want)

    def hconvert(self, want: Facts, d: int) -> E:
        """f16 of an f32, an integer or a bool: integers within +-1024 (exact)."""
        r = self.r
        src = r.choice(["f32", "i32", "u32", "bool"])
        facts = Facts(mag=1024.0, lo=-1024.0, uni=want.uni, grain=1.0)
        if src == "f32":
            x = self.fexpr(Facts(mag=2.0**100, lo=-(2.0**100), mul=True, uni=want.uni), d - 1)
            text = "f16(clamp(floor({0}), -1024.0, 1024.0))"
        elif src == "bool":
            x, text = self.bexpr(want.uni, d - 1), "f16({0})"
            facts = Facts(mag=1.0, lo=0.0, uni=want.uni, grain=1.0)
        else:
            x = self.iexpr(src, want.uni, d - 1)
            text = f"f16(clamp({{0}}, {src}(0), {src}(1024)))" if src == "u32" else ""
            text = text or "f16(clamp({0}, -1024, 1024))"
        facts = Facts(**{**facts.__dict__, "uni": x.facts.uni})
        e = E("f16", text, (x,), facts, tag="cast")
        return self.hclamp(e, _cap(want)) if facts.mag > _cap(want) else e

    def hleaf(self, want: Facts) -> E:
        r = self.r
        k = r.random()
        if k < 0.25:
            return self.hliteral(want)
        if k < 0.55:
            v = self.pick_val("f16", want)
            if v is not None:
                return v
        if not want.uni:
            load = self.load("f16", want)
            if load is not None:
                return load
            load = self.load("f16", Facts(**{**want.__dict__, "mag": INF, "lo": -INF}))
            if load is not None and not load.facts.nan and _cap(want) >= 1:
                return self.hclamp(load, _cap(want))
        return self.hliteral(want)

    def hvexpr(self, ty: str, want: Facts, d: int) -> E:
        for attempt in range(4):
            e = self._hvexpr(ty, want, d if attempt < 2 else 0)
            if e.facts.within(want):
                return e
        x = self.hexpr(want, 0)
        return E(ty, f"{ty}({{0}})", (x,), x.facts, tag="splat")

    def _hvexpr(self, ty: str, want: Facts, d: int) -> E:
        r = self.r
        k = r.random()
        n = int(ty[3])
        if d <= 0 or k < 0.2:
            if not want.uni and r.random() < 0.5:
                load = self.load(ty, want)
                if load is not None:
                    return load
            v = self.pick_val(ty, want) if r.random() < 0.5 else None
            if v is not None:
                return v
            x = self.hexpr(want, min(d, 1))
            return E(ty, f"{ty}({{0}})", (x,), x.facts, tag="splat")
        if k < 0.4:  # + - * lane by lane (a scalar beside a vector is splatted)
            e = self._hexpr(want, 1)  # the scalar op's shape, on vectors
            if e.tag in ("+", "-", "*") and len(e.kids) == 2:
                a = self.hvexpr(ty, e.kids[0].facts, d - 1)
                b = self.hvexpr(ty, e.kids[1].facts, d - 1) if r.random() < 0.7 else e.kids[1]
                return E(ty, e.fmt, (a, b), _join(a.facts, b.facts, e.facts), tag=e.tag)
        if k < 0.5:
            a = self.hvexpr(ty, Facts(**{**want.__dict__, "raw": False}), d - 1)
            if r.random() < 0.5:
                return E(
                    ty, "(-{0})", (a,), Facts(**{**a.facts.__dict__, "lo": -a.facts.mag}), "neg"
                )
            return E(ty, "abs({0})", (a,), Facts(**{**a.facts.__dict__, "lo": 0.0}), tag="abs")
        if k < 0.6:
            op = r.choice(["min", "max", "select"])
            inner = Facts(mag=_cap(want), lo=-_cap(want), uni=want.uni, grain=want.grain)
            a, b = self.hvexpr(ty, inner, d - 1), self.hvexpr(ty, inner, d - 1)
            if op == "select":
                c = self.bexpr(want.uni, d - 1)
                facts = _join(a.facts, b.facts, Facts(uni=c.facts.uni, raw=True, grain=BIG_GRAIN))
                return E(ty, "select({0}, {1}, {2})", (c, a, b), facts, tag="select")
            return E(ty, f"{op}({{0}}, {{1}})", (a, b), _join(a.facts, b.facts), tag=op)
        if k < 0.7 and want.grain <= 1.0:
            op = r.choice(ROUNDING + ["sign"])
            m = max(min(_cap(want) - 1, 1024.0), 0.0)
            a = self.hvexpr(ty, Facts(mag=m, lo=-m, uni=want.uni, grain=MIN_GRAIN), d - 1)
            facts = Facts(mag=1.0 if op == "sign" else a.facts.mag + 1, uni=a.facts.uni, grain=1.0)
            return E(ty, f"{op}({{0}})", (a,), Facts(**{**facts.__dict__, "lo": -facts.mag}), op)
        if k < 0.8 and want.grain <= 1.0:  # from a vector of f32 / i32 / u32 of the width
            src = r.choice(SIBLING[ty])
            x = self.vexpr(src, Facts(mag=2.0**100, lo=-(2.0**100), mul=True, uni=want.uni), d - 1)
            inner = {
                "f": "clamp(floor({0}), -1024.0, 1024.0)",
                "i": "clamp({0}, -1024, 1024)",
                "u": "clamp({0}, 0, 1024)",
            }[src[-1]]
            facts = Facts(mag=1024.0, lo=-1024.0, uni=x.facts.uni, grain=1.0)
            e = E(ty, f"{ty}({inner})", (x,), facts, tag="vcast")
            return self.hclamp(e, _cap(want)) if _cap(want) < 1024 else e
        parts = [self.hexpr(want, d - 1) for _ in range(n)]
        fmt = f"{ty}(" + ", ".join(f"{{{i}}}" for i in range(n)) + ")"
        return E(ty, fmt, tuple(parts), _join(*(p.facts for p in parts)), tag="construct")

    # -- f16 inside the other types' expressions ----------------------------------------
    def from_half(self, ty: str, uni: bool, d: int, want: Facts | None = None) -> E:
        """f32, i32, u32 (or a vector of them) of an f16 expression: exact, edge values
        allowed for the integers (NaN -> 0, saturating) and where `want` allows them."""
        r = self.r
        vec = ty.startswith("vec")
        hty = ("vec2h" if ty[3] == "2" else "vec4h") if vec else "f16"
        if ty in ("f32", "vec2f", "vec4f") and want is not None:
            g = pow2_up(max(min(want.mag, 60000.0), 1.0) / 2048)
            w = half_want(g, nan=want.nan, uni=uni)
            if not want.nan:
                w = Facts(
                    **{**w.__dict__, "mag": min(w.mag, want.mag), "lo": -min(w.mag, want.mag)}
                )
        else:
            w = half_want(r.choice([2.0**-3, 2.0**-6, 1.0]), nan=True, uni=uni)
        h = self.hvexpr(hty, w, d) if vec else self.hexpr(w, d)
        f = h.facts
        facts = (
            Facts(mag=f.mag, lo=f.lo, nan=f.nan, uni=f.uni) if ty.endswith(("f32", "f")) else None
        )
        return E(
            ty, f"{ty}({{0}})", (h,), facts or Facts(uni=f.uni), tag="vcast" if vec else "cast"
        )

    def half_compare(self, uni: bool, d: int) -> E:
        r = self.r
        w = half_want(r.choice([2.0**-3, 2.0**-6, 1.0]), nan=True, uni=uni)
        a = self.hexpr(w, d)
        uni_ = lambda *es: Facts(uni=all(e.facts.uni for e in es))  # noqa: E731
        if r.random() < 0.3:
            op = r.choice(["isnan", "isinf", "isfinite"])
            return E("bool", f"{op}({{0}})", (a,), uni_(a), tag=op)
        b = self.hexpr(w, d)
        op = r.choice(["<", "<=", ">", ">=", "==", "!="])
        return E("bool", f"({{0}} {op} {{1}})", (a, b), uni_(a, b), tag=op)
