"""Memory statements: stores, atomics, shared-memory rounds and bounds-guarded accesses,
race-free by construction (gen_stmt.py's docstring has the rules)."""

from __future__ import annotations

from dataclasses import replace

from .gen_stmt import AUG_INT, Ctx
from .prog import E, Facts, S
from .values import Val

ATOMIC_OPS = ["add", "sub", "or", "and", "xor", "min", "max"]
# Memory scopes and orders (frontend/memory_order.py): the same results at every scope and
# order in a race-free program, so they vary the code (SPIR-V under the Vulkan memory model,
# no WGSL for an order) and never the values.
ORDERS = ["acquire", "release", "acq_rel"]


class MemoryGen:
    """Mixin of gen.Gen: statements that write or read memory."""

    def store(self, ctx: Ctx) -> S:
        r = self.r
        outs = [b for b in self.bufs if b.role in ("out", "io", "accd")]
        b = r.choice(outs)
        idx = self.own_index(b)
        if b.role == "io" and b.ty in ("i32", "u32") and r.random() < 0.3:
            op = r.choice(AUG_INT[:8])
            e = self.iexpr(b.ty, False, self.r.randint(0, 2))
            return S(
                "store", f"{b.name}[{{0}}] {op} {{1}}", (idx, e), tag="store:aug", target=b.name
            )
        e = self.value(b.ty, ctx, b.facts)
        e = self.opaque(e) if b.role == "io" else e  # io is read back: no constant to forward
        return S(
            "store", f"{b.name}[{{0}}] = {{1}}", (idx, e), tag=f"store:{b.role}", target=b.name
        )

    def local_store(self, ctx: Ctx) -> S:
        arrays = [b for b in self.bufs if b.role == "local"]
        b = self.r.choice(arrays)
        idx = self.index(b)
        e = self.opaque(self.value(b.ty, ctx, b.facts))
        return S("store", f"{b.name}[{{0}}] = {{1}}", (idx, e), tag="store:local", target=b.name)

    def atomic(self, ctx: Ctx) -> list:
        r = self.r
        accs = [b for b in self.bufs if b.role == "accs"]
        accd = [b for b in self.bufs if b.role == "accd"]
        if accs and (not accd or r.random() < 0.5):
            b = r.choice(accs)
            idx = self.iexpr(r.choice(["u32", "i32"]), False, 1)
            if r.random() < 0.6:
                idx = E(idx.ty, f"({{0}} % {b.size})", (idx,), tag="%")
            v = self.iexpr(b.ty, False, r.randint(0, 2))
            call = f"atomic_{b.ops[0]}({b.name}, {{0}}, {{1}}{self.memory_keywords(True)})"
            return [S("atomic", call, (idx, v), tag=f"atomic:accs:{b.ops[0]}", target=b.name)]
        b = r.choice(accd)
        idx = self.own_index(b)
        if r.random() < 0.15:
            return self.atomic_load_store(b, idx)
        op = r.choice(ATOMIC_OPS + ["exchange", "compare_exchange"])
        v = self.iexpr(b.ty, False, r.randint(0, 2))
        if op == "compare_exchange":
            self.uses_cas = True
            expected = self.iexpr(b.ty, False, 1)
            kw = self.memory_keywords(True)
            args, call = (idx, expected, v), f"atomic_{op}({b.name}, {{0}}, {{1}}, {{2}}{kw})"
        else:
            args, call = (
                (idx, v),
                f"atomic_{op}({b.name}, {{0}}, {{1}}{self.memory_keywords(True)})",
            )
        if r.random() < 0.6:  # the old value of an own cell is deterministic
            name = self.fresh("t")
            self.scopes[-1].append(Val(name, b.ty, Facts(), "let"))
            return [S("assign", f"{name} = {call}", args, tag=f"atomic:old:{op}", target=b.name)]
        return [S("atomic", call, args, tag=f"atomic:accd:{op}", target=b.name)]

    def memory_keywords(self, buffer: bool, kind: str = "rmw") -> str:
        """Random scope= / order= keywords of an atomic ("" most of the time: today's form)."""
        r, out = self.r, ""
        if r.random() < 0.2:
            out += f', scope="{r.choice(["device", "workgroup"]) if buffer else "workgroup"}"'
        if r.random() < 0.15:
            orders = {"rmw": ["relaxed", *ORDERS], "load": ["relaxed", "acquire"]}.get(
                kind, ["relaxed", "release"]
            )
            out += f', order="{r.choice(orders)}"'
        return out

    def atomic_load_store(self, b, idx) -> list:
        """atomic_store to / atomic_load of an invocation's own cell (deterministic)."""
        r = self.r
        if r.random() < 0.5:
            v = self.iexpr(b.ty, False, r.randint(0, 2))
            kw = self.memory_keywords(True, "store")
            call = f"atomic_store({b.name}, {{0}}, {{1}}{kw})"
            return [S("atomic", call, (idx, v), tag="atomic:store", target=b.name)]
        name = self.fresh("t")
        self.scopes[-1].append(Val(name, b.ty, Facts(), "let"))
        call = f"{name} = atomic_load({b.name}, {{0}}{self.memory_keywords(True, 'load')})"
        return [S("assign", call, (idx,), tag="atomic:load", target=b.name)]

    def fence(self) -> S:
        """fence(...): orders memory, changes no value."""
        scope, order = self.r.choice(["device", "workgroup"]), self.r.choice(ORDERS)
        return S("atomic", f'fence(scope="{scope}", order="{order}")', (), tag="fence")

    def shared_round(self, ctx: Ctx) -> list:
        """barrier; sh[lid] = v; barrier; t = sh[j]: a race-free exchange (or atomics)."""
        r = self.r
        arrays = [b for b in self.bufs if b.role in ("shared", "shatomic")]
        b = r.choice(arrays)
        word = r.choice(["barrier()", "barrier()", "storage_barrier()"])
        out = [S("barrier", "barrier()", pinned=True, tag="barrier")]
        if b.role == "shatomic":
            idx = E("u32", f"({{0}} % {b.size + 1})", (self.iexpr("u32", False, 1),), tag="%")
            idx = self.unfolded(b, idx)
            v = self.iexpr(b.ty, False, r.randint(0, 2))
            write = S(
                "atomic",
                f"atomic_{b.ops[0]}({b.name}, {{0}}, {{1}}{self.memory_keywords(False)})",
                (idx, v),
                tag="shared_atomic",
            )
        else:
            v = self.opaque(self.value(b.ty, replace(ctx, uni=False), b.facts))
            lid = E("u32", "lid", facts=Facts(), tag="id", frozen=True)
            write = S("store", f"{b.name}[{{0}}] = {{1}}", (lid, v), tag="shared_store")
        if r.random() < 0.3:
            write = S("if", "", (self.bexpr(False, 2),), ([write],), tag="if")
        out += [write, S("barrier", word, pinned=True, tag=word[:-2])]
        name = self.fresh("t")
        idx = self.index(b)
        out.append(S("assign", f"{name} = {b.name}[{{0}}]", (idx,), tag="shared_load"))
        self.scopes[-1].append(Val(name, b.ty, b.facts, "let"))
        return out

    def guarded_access(self, ctx: Ctx, deep: bool) -> list:
        """Accesses under bounds guards, right and off by one: what range analysis proves
        (descriptor/ranges.py drops the checks it proves), and must not prove wrongly."""
        r = self.r
        arrays = [b for b in self.bufs if b.role in ("in", "edge", "local")]
        if not arrays:
            return [self.let(ctx)]
        b = r.choice(arrays)
        gid = self.id_text("gid")
        if not deep and r.random() < 0.35:  # a loop over the whole buffer, one past its end
            var = self.fresh("j")
            end = r.choice([f"len({b.name})", f"len({b.name}) + 1", f"len({b.name}) - 1"])
            name = self.fresh("t")
            self.scopes[-1].append(Val(name, b.ty, b.facts, "let"))
            body = [S("assign", f"{name} = {b.name}[{var}]", tag="guarded")]
            loop = S("for", f"for {var} in range({end}):", (), (body,), tag="for:len")
            init = S("assign", f"{name} = {b.name}[0]", tag="let")
            return [init, loop]
        j = r.choice([gid, f"({gid} + 1)", f"({gid} - 1)", f"({gid} * 2)", "x"])
        if j == "x":
            x = self.iexpr(r.choice(["u32", "i32"]), False, 1)
            j_e = E(x.ty, "({0} & 63)" if x.ty == "u32" else "{0}", (x,), tag="index")
        else:
            j_e = E("u32", j, tag="id")
        signed = j_e.ty == "i32"
        conds = (
            ["(0 <= {0} < i32(len(B)))", "({0} < i32(len(B)))", "({0} >= 0 and {0} < i32(len(B)))"]
            if signed
            else [
                "({0} < len(B))",
                "({0} <= len(B))",
                "({0} < len(B) - 1)",
                "(({0} + 1) < len(B))",
                "(len(B) > {0})",
                "(not ({0} >= len(B)))",
            ]
        )
        cond = E("bool", r.choice(conds).replace("B", b.name), (j_e,), tag="guard:bounds")
        name = self.fresh("t")
        load = S("assign", f"{name} = {b.name}[{{0}}]", (j_e,), tag="guarded")
        self.scopes[-1].append(Val(name, b.ty, b.facts, "let"))
        pre = S("assign", f"{name} = {b.name}[{gid}]", tag="let")  # declared on every path
        then = [load]
        if b.role == "local" and r.random() < 0.5:
            v = self.opaque(self.value(b.ty, ctx, b.facts))
            then.append(S("store", f"{b.name}[{{0}}] = {{1}}", (j_e, v), tag="store:guarded"))
        return [pre, S("if", "", (cond,), (then,), tag="if")]
