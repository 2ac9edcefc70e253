"""Integer and bool expressions (every i32/u32 op wraps and is pinned, so any mix is legal)."""

from __future__ import annotations

from .prog import E, Facts
from .values import EXACT, bare, int_literal

BINARY = ["+", "-", "*", "//", "%", "&", "|", "^"]
BIT_COUNTS = ["popcount", "clz", "ctz", "reverse_bits"]
COMPARE = ["<", "<=", ">", ">=", "==", "!="]
SHIFT_AMOUNTS = [0, 1, 5, 16, 31, 32, 33, 40, 63, 64]


def _u(*es: E) -> Facts:
    return Facts(uni=all(e.facts.uni for e in es))


class IntGen:
    """Mixin of gen.Gen: `iexpr` and `bexpr`."""

    def iexpr(self, ty: str, uni: bool, d: int) -> E:
        r = self.r
        if d <= 0 or r.random() < 0.2:
            return self.ileaf(ty, uni)
        if self.half and r.random() < 0.04:
            return self.from_half(ty, uni, d - 1)
        k = r.random()
        if k < 0.32:
            op = r.choice(BINARY)
            a, b = self.iexpr(ty, uni, d - 1), self.iexpr(ty, uni, d - 1)
            if b.tag == "lit" and a.tag != "lit" and r.random() < 0.5:
                b = bare(b)
            return E(ty, f"({{0}} {op} {{1}})", (a, b), _u(a, b), tag=op)
        if k < 0.42:
            op = r.choice(["<<", ">>"])
            a = self.iexpr(ty, uni, d - 1)
            amount = (
                E("u32", str(r.choice(SHIFT_AMOUNTS)), facts=Facts(uni=True), tag="lit")
                if r.random() < 0.5
                else self.iexpr(r.choice(["i32", "u32"]), uni, d - 2)
            )
            return E(ty, f"({{0}} {op} {{1}})", (a, amount), _u(a, amount), tag=op)
        if k < 0.5:
            a = self.iexpr(ty, uni, d - 1)
            op = r.choice(["-", "~"] + (["abs"] if ty == "i32" else []))
            fmt = "abs({0})" if op == "abs" else f"({op}{{0}})"
            return E(ty, fmt, (a,), _u(a), tag="neg" if op == "-" else op)
        if k < 0.58:
            op = r.choice(BIT_COUNTS)
            a = self.iexpr(ty, uni, d - 1)
            return E(ty, f"{op}({{0}})", (a,), _u(a), tag=op)
        if k < 0.64:
            op = r.choice(["min", "max", "clamp", "rotl", "rotr"])
            a = self.iexpr(ty, uni, d - 1)
            if op == "clamp":
                lo, hi = self.iexpr(ty, uni, d - 2), self.iexpr(ty, uni, d - 2)
                return E(ty, "clamp({0}, {1}, {2})", (a, lo, hi), _u(a, lo, hi), tag=op)
            b = self.iexpr(ty if op in ("min", "max") else r.choice(["i32", "u32"]), uni, d - 1)
            return E(ty, f"{op}({{0}}, {{1}})", (a, b), _u(a, b), tag=op)
        if k < 0.67:
            a = self.iexpr(ty, uni, d - 1)
            n = r.randint(0, 4)
            return E(ty, f"({{0}} ** {n})", (a,), _u(a), tag="pow")
        if k < 0.78:
            return self.int_cast(ty, uni, d)
        if k < 0.85:
            c = self.bexpr(uni, d - 1)
            a, b = self.iexpr(ty, uni, d - 1), self.iexpr(ty, uni, d - 1)
            if r.random() < 0.5:
                return E(ty, "select({0}, {1}, {2})", (c, a, b), _u(c, a, b), tag="select")
            return E(ty, "({1} if {0} else {2})", (c, a, b), _u(c, a, b), tag="ifexp")
        if k < 0.9 and not uni:
            vec = r.choice(["vec2i", "vec4i"] if ty == "i32" else ["vec2u", "vec4u"])
            v = self.vexpr(vec, EXACT, d - 1)
            comp = r.choice("xyzw"[: int(vec[3])])
            return E(ty, f"{{0}}.{comp}", (v,), _u(v), tag="extract")
        if k < 0.95:
            call = self.helper_call(ty, uni, d)
            if call is not None:
                return call
        return self.ileaf(ty, uni)

    def int_cast(self, ty: str, uni: bool, d: int) -> E:
        r = self.r
        src = r.choice(["i32", "u32", "f32", "bool", "bits"])
        if src == "bits":  # reinterpret the other integer type, or a float's bits
            if r.random() < 0.5:
                other = "u32" if ty == "i32" else "i32"
                a = self.iexpr(other, uni, d - 1)
            else:
                a = self.fexpr(Facts(mag=float("inf"), nan=True, raw=True, uni=uni), d - 1)
                if a.tag == "neg" and a.kids[0].facts.nan:
                    # Negating a NaN may change its payload (SPIR-V's NaN rules; the H200
                    # does): only a NaN's copy has pinned bits.
                    a = a.kids[0]
            return E(ty, f"bitcast({ty}, {{0}})", (a,), _u(a), tag="bitcast")
        if src == "f32":  # saturating, NaN -> 0: pinned for every value, but only exact ones
            a = self.fexpr(Facts(mag=float("inf"), nan=True, mul=True, uni=uni), d - 1)
        elif src == "bool":
            a = self.bexpr(uni, d - 1)
        else:
            a = self.iexpr(src, uni, d - 1)
        return E(ty, f"{ty}({{0}})", (a,), _u(a), tag="cast")

    def ileaf(self, ty: str, uni: bool) -> E:
        r = self.r
        k = r.random()
        if k < 0.22:
            return int_literal(r, ty)
        if k < 0.55:
            v = self.pick_val(ty, Facts(uni=uni))
            if v is not None:
                return v
        if k < 0.62:
            c = self.pick_const("int", uni, ty)
            if c is not None:
                return E(ty, f"{ty}({c.name})", facts=Facts(uni=True), tag="const")
        if ty == "u32" and k < 0.75:
            ids = [self.id_text("wid"), "num_workgroups().x", "workgroup_size().x", "len({b})"]
            if not uni:
                ids += [self.id_text("gid"), self.id_text("lid"), "global_id().y", "local_id().z"]
                ids += ["subgroup_size()", "subgroup_invocation_id()"]
            if self.elementwise:  # other ids keep a kernel from coarsening
                ids = ["workgroup_size().x", "len({b})"] + (
                    [] if uni else [self.id_text("gid")] * 2
                )
            text = r.choice(ids)
            if "{b}" in text and not self.bufs:
                text = ids[0]
            if "{b}" in text:
                text = text.format(b=r.choice(self.bufs).name)
                return E("u32", text, facts=Facts(uni=True), tag="len")
            uniform = (self.id_text("wid"), "num_workgroups().x", "workgroup_size().x")
            return E("u32", text, facts=Facts(uni=text in uniform), tag="id")
        if not uni:
            load = self.load(ty, Facts())
            if load is not None:
                return load
        return int_literal(r, ty)

    def bexpr(self, uni: bool, d: int) -> E:
        r = self.r
        k = r.random()
        if d <= 0 or k < 0.12:
            v = self.pick_val("bool", Facts(uni=uni)) if r.random() < 0.5 else None
            if v is not None:
                return v
            if r.random() < 0.3:
                text = r.choice(["True", "False"])
                return E("bool", text, facts=Facts(uni=True), tag="lit")
        if k < 0.5 or d <= 0:
            return self.compare(uni, max(d - 1, 0))
        if k < 0.65:
            op = r.choice(["and", "or"])
            a, b = self.bexpr(uni, d - 1), self.bexpr(uni, d - 1)
            return E("bool", f"({{0}} {op} {{1}})", (a, b), _u(a, b), tag=op)
        if k < 0.72:
            a = self.bexpr(uni, d - 1)
            return E("bool", "(not {0})", (a,), _u(a), tag="not")
        if k < 0.8:
            op = r.choice(["isnan", "isinf", "isfinite"])
            a = self.fexpr(Facts(mag=float("inf"), nan=True, mul=True, uni=uni), d - 1)
            return E("bool", f"{op}({{0}})", (a,), _u(a), tag=op)
        if k < 0.86:
            ty = r.choice(["i32", "u32", "f32"])
            a = (
                self.fexpr(Facts(mag=float("inf"), nan=True, mul=True, uni=uni), d - 1)
                if ty == "f32"
                else self.iexpr(ty, uni, d - 1)
            )
            return E("bool", "bool({0})", (a,), _u(a), tag="cast")
        if k < 0.92:
            c, a, b = self.bexpr(uni, d - 1), self.bexpr(uni, d - 1), self.bexpr(uni, d - 1)
            if r.random() < 0.5:
                return E("bool", "select({0}, {1}, {2})", (c, a, b), _u(c, a, b), tag="select")
            return E("bool", "({1} if {0} else {2})", (c, a, b), _u(c, a, b), tag="ifexp")
        if k < 0.96:
            call = self.helper_call("bool", uni, d)
            if call is not None:
                return call
        a, b = self.bexpr(uni, d - 1), self.bexpr(uni, d - 1)
        op = r.choice(["==", "!="])
        return E("bool", f"({{0}} {op} {{1}})", (a, b), _u(a, b), tag=op)

    def compare(self, uni: bool, d: int) -> E:
        r = self.r
        if self.half and r.random() < 0.15:
            return self.half_compare(uni, d)
        ty = r.choice(["i32", "u32", "f32", "i32", "u32"])

        def side():
            if ty == "f32":  # comparisons are discontinuous: exact operands only
                return self.fexpr(Facts(mag=float("inf"), nan=True, mul=True, uni=uni), d)
            return self.iexpr(ty, uni, d)

        a, b = side(), side()
        if b.tag == "lit" and a.tag != "lit":
            b = bare(b)
        if r.random() < 0.15:  # chained: a < b < c
            c = side()
            op1, op2 = r.choice(COMPARE[:4]), r.choice(COMPARE[:4])
            return E("bool", f"({{0}} {op1} {{1}} {op2} {{2}})", (a, b, c), _u(a, b, c), "chain")
        op = r.choice(COMPARE)
        return E("bool", f"({{0}} {op} {{1}})", (a, b), _u(a, b), tag=op)
