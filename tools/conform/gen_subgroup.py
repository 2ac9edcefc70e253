"""Subgroup operations, defined on every device whatever its subgroup size.

They appear in uniform control flow (gen_stmt.barrier_ok) and, one level down, under a
condition uniform within each subgroup only (`subgroup_if`: on subgroup_id(),
num_subgroups() or a subgroup reduction or vote), where a barrier may not go. Their
results depend on the size (8 on lavapipe, 32 on NVIDIA): the reference runs with the
size given (--subgroup-size). Each op is used so that its result is defined:
- a shuffle or broadcast reads lane L only where L is a lane of the subgroup that is
  active (L < subgroup_size() and lid - sid + L < the workgroup size: the last subgroup
  of a workgroup of 7 or 13 is partial); elsewhere select keeps the invocation's own value;
- f32 reductions and scans take multiples of 1/8 in [-4, 4], whose sums over up to 128
  lanes are exact in any order.
"""

from __future__ import annotations

from dataclasses import replace

from .prog import E, Facts, S
from .values import Val

REDUCE = ["add", "min", "max", "inclusive_add", "exclusive_add"]
BITWISE = ["and", "or", "xor"]
LANE_OPS = ["broadcast", "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down"]
TYPES = ["i32", "u32", "f32", "vec2i", "vec4i", "vec2u", "vec4u", "vec2f", "vec4f"]
DYADIC = Facts(mag=512.0, lo=-512.0)  # sums of up to 128 multiples of 1/8 in [-4, 4]


class SubgroupGen:
    """Mixin of gen.Gen: `subgroup_let`."""

    def subgroup_arg(self, ty: str) -> E:
        if ty == "f32" or ty.endswith("f"):
            x = self.typed(ty, Facts(mag=2.0**20, lo=-(2.0**20), mul=True), 2)
            return E(ty, "(floor(clamp({0}, -4.0, 4.0) * 8.0) * 0.125)", (x,), DYADIC, tag="dyadic")
        elem = {"i32": "i32", "u32": "u32"}.get(ty)
        return self.iexpr(elem, False, 2) if elem else self.vexpr(ty, Facts(), 2)

    def subgroup_let(self, ctx, n: int = 0) -> list:
        """n (default 1-4) lets of subgroup ops, each (op, type) drawn from all of them."""
        out = []
        for _ in range(n or self.r.randint(1, 4)):
            op, ty = self.r.choice(self.combos())
            if (
                op == "broadcast_first"
                and (ty == "f32" or ty.endswith("f"))
                and self.r.random() > 0.3
            ):
                ty = "i32"  # rare: lavapipe aborts on it, so the GPU paths skip such programs
            e = self.subgroup_op(op, ty)
            name = self.fresh("t")
            self.scopes[-1].append(Val(name, e.ty, e.facts, "let"))
            out.append(S("assign", f"{name} = {{0}}", (e,), tag="subgroup"))
        return out

    def subgroup_cond(self) -> E:
        """A condition that is the same in every invocation of a subgroup, not of a workgroup."""
        r = self.r
        k = r.random()
        if k < 0.35:
            m = r.choice([2, 3])
            return E(
                "bool",
                f"(subgroup_id() % u32({m}) == u32({r.randrange(m)}))",
                (),
                tag="subgroup_id",
            )
        if k < 0.5:  # the last subgroup is partial where the workgroup size is not a multiple
            return E("bool", "(subgroup_id() + u32(1) < num_subgroups())", (), tag="subgroup_id")
        if k < 0.75:
            vote = r.choice(["any", "all"])
            return E(
                "bool", f"subgroup_{vote}({{0}})", (self.bexpr(False, 2),), tag=f"subgroup_{vote}"
            )
        op = r.choice(["max", "min", "and", "or", "xor", "add"])
        v = self.iexpr("u32", False, 2)
        return E(
            "bool",
            f"(subgroup_{op}({{0}}) % u32(3) != u32({r.randrange(3)}))",
            (v,),
            tag=f"subgroup_{op}",
        )

    def subgroup_if(self, ctx) -> S:
        """`if <subgroup-uniform>:` holding subgroup ops (and other statements after them)."""
        r = self.r
        sub = replace(ctx, uni=False, depth=ctx.depth + 1)

        def branch(n: int) -> list:
            self.scopes.append([])
            try:
                # a return under divergent control, even in the other branch, ends it
                out = [] if self.nonuni_returned else self.subgroup_let(sub, r.randint(1, 3))
                for _ in range(n):
                    out.extend(self.statement(sub))
                return out
            finally:
                self.scopes.pop()

        c = self.subgroup_cond()
        then = branch(r.randint(1, 3))
        if r.random() < 0.5:
            return S("if", "", (c,), (then,), tag="subgroup_if")
        return S("if", "", (c,), (then, branch(r.randint(0, 2))), tag="subgroup_if")

    def combos(self) -> list:
        lane_ops = [] if self.elementwise else LANE_OPS  # a lane read needs the local id
        found = [("all", "bool"), ("any", "bool"), ("ballot", "bool"), ("elect", "bool")]
        for ty in TYPES:
            isf = ty == "f32" or ty.endswith("f")
            ops = REDUCE + ["broadcast_first"] + lane_ops + ([] if isf else BITWISE)
            found += [(op, ty) for op in ops]
        return found

    def subgroup_op(self, op: str, ty: str) -> E:
        if op in ("all", "any", "ballot"):
            c = self.bexpr(False, 2)
            return E(
                "vec4u" if op == "ballot" else "bool",
                f"subgroup_{op}({{0}})",
                (c,),
                tag=f"subgroup_{op}",
            )
        if op == "elect":
            return E("bool", "subgroup_elect()", (), tag="subgroup_elect")
        if op in LANE_OPS:
            return self.lane_read(op, ty)
        v = self.subgroup_arg(ty)
        facts = v.facts if ty == "f32" or ty.endswith("f") else Facts()
        return E(ty, f"subgroup_{op}({{0}})", (v,), facts, tag=f"subgroup_{op}")

    def lane_read(self, op: str, ty: str) -> E:
        """A shuffle or broadcast, guarded to read only active lanes of the subgroup."""
        v = self.subgroup_arg(ty)
        d = self.r.choice([1, 2, 3, 4])
        lane, call = {
            "broadcast": (f"u32({d - 1})", f"subgroup_broadcast({{0}}, {d - 1})"),
            "shuffle": ("(u32(7) - sid)", "subgroup_shuffle({0}, u32(7) - sid)"),
            "shuffle_xor": (f"(sid ^ u32({d}))", f"subgroup_shuffle_xor({{0}}, u32({d}))"),
            "shuffle_up": (f"(sid - u32({d}))", f"subgroup_shuffle_up({{0}}, u32({d}))"),
            "shuffle_down": (f"(sid + u32({d}))", f"subgroup_shuffle_down({{0}}, u32({d}))"),
        }[op]
        sid = "subgroup_invocation_id()"
        lane, call = lane.replace("sid", sid), call.replace("sid", sid)
        ok = (
            f"((({self.id_text('lid')} - {sid}) + {lane} < workgroup_size().x)"
            f" and ({lane} < subgroup_size()))"
        )
        facts = v.facts if ty == "f32" or ty.endswith("f") else Facts()
        fmt = f"select({ok}, {call}, {{0}})"
        return E(ty, fmt, (v,), facts, tag=f"subgroup_{op}")
