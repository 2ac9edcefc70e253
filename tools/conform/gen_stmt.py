"""Statements: control flow, stores, atomics and barriers, race-free and terminating by
construction.

- Each invocation writes only its own index of an output (`gid`) or an index that is out
  of bounds for every invocation; "accs" buffers take only order-independent atomics
  (one op per buffer, old value unused); shared arrays are written at `lid` between a
  leading and a trailing barrier and read only after the trailing one.
- Barriers only in uniform control flow: not under a condition on ids or loaded values,
  not in a loop that such a condition can leave early, not after a return under one.
  Subgroup ops there too, and under a condition uniform within a subgroup (gen_subgroup).
- Every for loop counts its trips (a pinned guard): more than Python's range() would make
  sets a bit of `chk` and breaks, so a miscompiled bound or step terminates and shows up.
  While loops carry a pinned fuel counter in their condition.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .gen_half import out_want
from .prog import E, Facts, S
from .values import I32_MAX, I32_MIN, U32_MAX, Val

AUG_INT = ["+=", "-=", "*=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>="]


@dataclass(frozen=True)
class Ctx:
    uni: bool = True  # control flow here is uniform (same path for a whole workgroup)
    loop: str | None = None  # innermost loop: None, "free" or "uniform" (may hold barriers)
    in_uniform_loop: bool = False  # some enclosing loop may hold barriers
    depth: int = 0
    helper: object = None  # the HelperSig being generated, or None in the kernel


def frozen(e: E) -> E:
    return replace(e, frozen=True)


def lit(ty: str, v: int) -> E:
    return frozen(E(ty, f"{ty}({v})", facts=Facts(uni=True), tag="lit"))


def edge_ranges(ty: str):
    """(lo, hi, step) triples whose range is at an edge of the type (some step past it)."""
    if ty == "i32":
        return [
            (I32_MAX - 7, I32_MAX, 1),
            (I32_MAX - 7, I32_MAX, 3),
            (I32_MAX - 10, I32_MAX - 1, 4),
            (I32_MIN, I32_MIN + 5, 2),
            (I32_MIN + 6, I32_MIN, -2),
            (I32_MIN + 5, I32_MIN, -2),
            (I32_MIN + 5, I32_MIN - 0, -1),
            (-3, 4, 1),
            (9, -1, -3),
            (5, 2, 1),
        ]
    return [
        (U32_MAX - 6, U32_MAX, 1),
        (U32_MAX - 6, U32_MAX, 4),
        (5, 0, -2),
        (7, 0, -3),
        (6, 0, -1),
        (0, 9, 3),
        (3, 3, 1),
    ]


def trips(lo: int, hi: int, step: int) -> int:
    return len(range(lo, hi, step))


class StmtGen:
    """Mixin of gen.Gen: blocks of statements."""

    def block(self, ctx: Ctx, n: int) -> list:
        out: list = []
        self.scopes.append([])
        try:
            for _ in range(n):
                if self.diverged and self.diverged[-1]:
                    # Past a break, continue or return under a divergent condition, the
                    # rest of this loop's body runs in only some invocations.
                    ctx = replace(ctx, uni=False)
                out.extend(self.statement(ctx))
        finally:
            self.scopes.pop()
        return out

    def loop_body(self, ctx: Ctx, n: int) -> list:
        """A loop's body: divergence inside it ends with the loop (it reconverges after)."""
        self.diverged.append(False)
        try:
            return self.block(ctx, n)
        finally:
            self.diverged.pop()

    def diverge(self, ctx: Ctx, cond: E) -> None:
        """An exit under `cond` was made: mark the enclosing loop if it was divergent."""
        if self.diverged and not (ctx.uni and cond.facts.uni):
            self.diverged[-1] = True

    def barrier_ok(self, ctx: Ctx) -> bool:
        return (
            ctx.helper is None
            and ctx.uni
            and not self.nonuni_returned
            and ctx.loop in (None, "uniform")
        )

    def statement(self, ctx: Ctx) -> list:
        r = self.r
        deep = ctx.depth >= self.max_depth
        k = r.random()
        if k < 0.06 and not self.elementwise:
            return self.guarded_access(ctx, deep)
        if k < 0.22:
            return [self.let(ctx)]
        if k < 0.36:
            s = self.assign(ctx)
            if s is not None:
                return [s]
        if k < 0.48 and ctx.helper is None:
            return [self.store(ctx)]
        if k < 0.6 and not deep:
            return [self.if_stmt(ctx)]
        if k < 0.7 and not deep:
            return self.for_loop(ctx)
        if k < 0.75 and not deep:
            return self.while_loop(ctx)
        if k < 0.8 and ctx.loop is not None and (ctx.uni or ctx.loop == "free"):
            word = r.choice(["break", "continue"])
            c = self.bexpr(ctx.uni and ctx.loop == "uniform", 2)
            self.diverge(ctx, c)
            return [S("if", "", (c,), ([S(word, word, tag=word)],), tag=f"{word}")]
        if k < 0.83 and (ctx.helper is not None or ctx.uni or not ctx.in_uniform_loop):
            if not (self.elementwise and ctx.helper is None and ctx.loop is not None):
                return [self.early_return(ctx)]
        if ctx.helper is None and k < 0.92:
            if self.barrier_ok(ctx) and r.random() < 0.45:
                if not deep and r.random() < 0.35:
                    return [self.subgroup_if(ctx)]
                return self.subgroup_let(ctx)
            shared = [b for b in self.bufs if b.role in ("shared", "shatomic")]
            if shared and self.barrier_ok(ctx) and r.random() < 0.55:
                return self.shared_round(ctx)
            if any(b.role in ("accs", "accd") for b in self.bufs):
                return [self.fence()] if r.random() < 0.08 else self.atomic(ctx)
        if k < 0.96 and ctx.helper is None and any(b.role == "local" for b in self.bufs):
            return [self.local_store(ctx)]
        return [self.let(ctx)]

    # -- values -----------------------------------------------------------------------
    def let(self, ctx: Ctx) -> S:
        r = self.r
        ty = r.choice(self.local_types)
        name = self.fresh("t")
        e = self.value(ty, ctx, self.let_want(ty))
        self.scopes[-1].append(Val(name, ty, e.facts, "let"))
        return S("assign", f"{name} = {{0}}", (e,), tag="let")

    def let_want(self, ty: str) -> Facts:
        r = self.r
        if ty in ("f16", "vec2h", "vec4h"):
            return out_want(r)
        if ty in ("f32", "vec2f", "vec4f"):
            k = r.random()
            if k < 0.5:
                return Facts(mag=2.0**24, lo=-(2.0**24), mul=True)  # exact
            if k < 0.8:
                return Facts(mag=2.0**12, lo=-(2.0**12), err=2.0**-6, mul=True)
            if ty == "f32":
                return Facts(mag=float("inf"), nan=True, mul=True)  # edge values too
            return Facts(mag=2.0**24, lo=-(2.0**24), mul=True)
        return Facts()

    def value(self, ty: str, ctx: Ctx, want: Facts) -> E:
        d = self.r.randint(1, self.max_expr_depth)
        if ty == "bool":
            return self.bexpr(want.uni, d)
        if ty in ("i32", "u32"):
            return self.iexpr(ty, want.uni, d)
        if ty == "f32":
            return self.fexpr(want, d)
        if ty == "f16":
            return self.hexpr(want, d)
        if ty in ("vec2h", "vec4h"):
            return self.hvexpr(ty, want, d)
        return self.vexpr(ty, want, d)

    def assign(self, ctx: Ctx) -> S | None:
        r = self.r
        # A uniform variable stays uniform: assigned only uniform values in uniform flow.
        cands = [
            v for scope in self.scopes for v in scope if v.mutable and (ctx.uni or not v.facts.uni)
        ]
        if not cands:
            return None
        v = r.choice(cands)
        if v.ty in ("i32", "u32") and r.random() < 0.5:
            op = r.choice(AUG_INT)
            amount_ty = r.choice(["i32", "u32"]) if op in ("<<=", ">>=") else v.ty
            e = self.iexpr(amount_ty, v.facts.uni, self.r.randint(0, 2))
            return S("assign", f"{v.name} {op} {{0}}", (e,), tag="aug")
        if v.ty == "f32" and r.random() < 0.2:
            op = r.choice(["/= 2.0", "*= 0.5", "/= 4.0"])
            return S("assign", f"{v.name} {op}", (), tag="aug")
        e = self.opaque(self.value(v.ty, ctx, v.facts))
        return S("assign", f"{v.name} = {{0}}", (e,), tag="assign")

    # -- control flow -----------------------------------------------------------------
    def if_stmt(self, ctx: Ctx) -> S:
        r = self.r
        want_uni = ctx.uni and r.random() < 0.5
        c = self.bexpr(want_uni, r.randint(1, 3))
        sub = replace(ctx, uni=ctx.uni and c.facts.uni, depth=ctx.depth + 1)
        then = self.block(sub, r.randint(1, 3))
        k = r.random()
        if k < 0.4:
            return S("if", "", (c,), (then,), tag="if")
        if k < 0.65:
            c2 = self.bexpr(want_uni, 2)
            sub2 = replace(ctx, uni=sub.uni and c2.facts.uni, depth=ctx.depth + 1)
            inner = S(
                "if",
                "",
                (c2,),
                (self.block(sub2, r.randint(1, 2)), self.block(sub2, 1)),
                tag="elif",
            )
            return S("if", "", (c,), (then, [inner]), tag="if")
        return S("if", "", (c,), (then, self.block(sub, r.randint(1, 3))), tag="ifelse")

    def early_return(self, ctx: Ctx) -> S:
        r = self.r
        # In a loop that holds barriers, a return must be uniform: the next trip's barrier
        # would be reached by only some invocations otherwise.
        in_barrier_loop = ctx.in_uniform_loop and ctx.helper is None
        c = self.bexpr(ctx.uni and (in_barrier_loop or r.random() < 0.3), 2)
        if ctx.helper is not None:
            ret = self.value(ctx.helper.ret, ctx, ctx.helper.ret_facts)
            body = [S("return", "return {0}", (ret,), tag="return")]
        else:
            body = [self.chk_store(), S("return", "return", tag="return")]
            if not (ctx.uni and c.facts.uni):
                self.nonuni_returned = True
        self.diverge(ctx, c)
        return S("if", "", (c,), (body,), tag="if")

    def chk_store(self) -> S:
        return S("store", "chk[gid] = chk_v", pinned=True, tag="chk")

    def loop_kind(self, ctx: Ctx, bounds_uni: bool) -> str:
        if self.barrier_ok(ctx) and bounds_uni and self.r.random() < 0.6:
            return "uniform"
        return "free"

    def for_loop(self, ctx: Ctx) -> list:
        r = self.r
        ty = r.choice(["i32", "u32"])
        form = r.random()
        var = self.fresh("j")
        if form < 0.35 and ctx.helper is None:  # literal bounds, edges of the type included
            lo, hi, step = r.choice(edge_ranges(ty))
            t, bounds_uni, spec = trips(lo, hi, step), True, (lo, hi)
            args = [lit(ty, lo), lit(ty, hi)] + ([E(ty, str(step), tag="lit")] if step != 1 else [])
            tag = "for:edge" if abs(hi) > 2**30 else ("for:step" if step != 1 else "for:lit")
        elif form < 0.55:
            n = r.randint(0, 6)
            args, t, bounds_uni, step, tag = [E("i32", str(n), tag="lit")], n, True, 1, "for:lit"
            spec = (0, n)
            ty = "i32"
        elif form < 0.75 and ctx.helper is None:
            s = self.bound_scalar(ty)
            step = r.choice([1, 1, 2, 3, -1, -2])
            if step > 0:
                args = [lit(ty, 0), frozen(E(ty, s.name, facts=Facts(uni=True)))]
                spec = (0, s.name)
            else:
                args = [frozen(E(ty, s.name, facts=Facts(uni=True))), lit(ty, 0)]
                spec = (s.name, 0)
            args += [E(ty, str(step), tag="lit")] if step != 1 else []
            t, bounds_uni, tag = 16 // abs(step) + 1, True, "for:scalar"
        else:  # data-dependent trip count: never uniform
            x = self.iexpr(ty, False, 1)
            mask = r.choice([3, 7])
            lo = frozen(E(ty, "({0} & 3)", (x,), x.facts, tag="&"))
            hi = frozen(E(ty, f"(({{0}} & 3) + {mask})", (x,), x.facts, tag="&"))
            step = r.choice([1, 2])
            args = [lo, hi] + ([E(ty, "2", tag="lit")] if step == 2 else [])
            t, bounds_uni, tag, spec = mask, False, "for:data", (None, None)
        bounds_uni = bounds_uni and ctx.uni
        kind = self.loop_kind(ctx, bounds_uni)
        sub = Ctx(
            # A free loop may be left early under divergent conditions, which makes every
            # trip after that divergent, its first statements included: its body is too.
            uni=ctx.uni and bounds_uni and kind == "uniform",
            loop=kind,
            in_uniform_loop=ctx.in_uniform_loop or kind == "uniform",
            depth=ctx.depth + 1,
            helper=ctx.helper,
        )
        fmt = f"for {var} in range(" + ", ".join(f"{{{i}}}" for i in range(len(args))) + "):"
        self.scopes.append(
            [Val(var, args[0].ty if args[0].ty != "int" else ty, Facts(uni=sub.uni), "loop")]
        )
        try:
            body = self.loop_body(sub, r.randint(1, 3))
        finally:
            self.scopes.pop()
        if ctx.helper is not None:
            return [S("for", fmt, tuple(frozen(a) for a in args), (body,), tag=tag)]
        counter = self.counter(sub.uni, None)
        bit = self.next_bit()
        self.loop_bits.setdefault(bit, []).append((ty, spec[0], spec[1], step, t))
        guard = [
            S("assign", f"{counter} += 1", pinned=True, tag="guard"),
            S(
                "if",
                "",
                (frozen(E("bool", f"({counter} > {t})", facts=Facts(uni=sub.uni))),),
                (
                    [
                        S("assign", f"chk_v |= {1 << bit}", pinned=True),
                        S("break", "break", pinned=True),
                    ],
                ),
                pinned=True,
                tag="guard",
            ),
        ]
        loop = S("for", fmt, tuple(frozen(a) for a in args), (guard + body,), tag=tag)
        return [S("assign", f"{counter} = 0", pinned=True, tag="guard"), loop]

    def while_loop(self, ctx: Ctx) -> list:
        r = self.r
        limit = r.randint(1, 5)
        c = self.bexpr(ctx.uni and r.random() < 0.5, 2)
        uni = ctx.uni and c.facts.uni
        kind = self.loop_kind(ctx, uni)
        sub = Ctx(
            uni=uni and kind == "uniform",  # a free loop's body is divergent (see for_loop)
            loop=kind,
            in_uniform_loop=ctx.in_uniform_loop or kind == "uniform",
            depth=ctx.depth + 1,
            helper=ctx.helper,
        )
        counter = self.counter(uni, ctx.helper)
        body = self.loop_body(sub, r.randint(1, 3))
        step = S("assign", f"{counter} += 1", pinned=True, tag="guard")
        reset = S("assign", f"{counter} = 0", pinned=True, tag="guard")
        if r.random() < 0.5:
            head = frozen(E("bool", f"({counter} < {limit})", facts=Facts(uni=uni)))
            loop = S("while", "while {0} and {1}:", (head, c), ([step] + body,), tag="while")
        else:
            stop = S(
                "if",
                "",
                (frozen(E("bool", f"({counter} > {limit})", facts=Facts(uni=uni))),),
                ([S("break", "break", pinned=True)],),
                pinned=True,
            )
            brk = S("if", "", (c,), ([S("break", "break")],), tag="break")
            loop = S("while", "while True:", (), ([step, stop, brk] + body,), tag="while:true")
        return [reset, loop]
