"""Calls in the kernel language: which function a call names, its arity, and conversions.

`CallChecker` is a mixin of `KernelChecker`: `expr_Call` sends a call to an inlined helper
(inlining.py), a type's conversion (here: scalar casts and vector constructors), a memory
builtin (memory_order.py) or the handler its builtin registry row names (bitcast here, the
others in builtin_calls.py and coop.py). Guarantees: a call of a name that is not a helper,
a type or a builtin, keyword arguments (but the memory builtins' scope= and order=), a call
where its row says it may not stand and a wrong number of arguments are KernelErrors at the
call, with the fix.
"""

from __future__ import annotations

import ast

from vyre_build.frontend import ir
from vyre_build.frontend.builtins import BUILTINS
from vyre_build.frontend.names import ATOMICS, MEMORY_BUILTINS, TYPE_NAMES

MEMORY_KEYWORDS = frozenset(ATOMICS) | frozenset(MEMORY_BUILTINS)


def call_shape(name: str, n: int) -> str:
    """How builtin (or type) `name` is called with `n` arguments, its parameters named:
    max(a, b), u32(x); a fix shows it."""
    row = BUILTINS.get(name)
    if row is None:  # a type's conversion
        return f"{name}(x)"
    sig = next((s for s in row.signatures if len(s.params) == n), row.signatures[0])
    return f"{name}({', '.join(p.name for p in sig.params)})"


class CallChecker:
    """Mixin: call expressions for KernelChecker."""

    def expr_Call(self, node, statement: bool = False):
        # scope= / order= of the memory builtins (frontend/memory_order.py)
        if node.keywords and not (
            isinstance(node.func, ast.Name)
            and node.func.id in MEMORY_KEYWORDS
            and node.func.id not in self.frame.module.helpers
        ):
            raise self.err(
                node.keywords[0].value,
                "keyword arguments are not supported in kernels",
                "pass arguments by position",
            )
        if not isinstance(node.func, ast.Name):
            raise self.err(
                node.func,
                "only plain function names can be called",
                "call builtins and helpers directly, e.g. sqrt(x) rather than math.sqrt(x)",
            )
        name = node.func.id
        f = self.frame
        if name in f.vars or name in f.loops or name in f.scalars or name in f.arrays:
            hidden = name in f.module.helpers or name in BUILTINS or name in TYPE_NAMES
            raise self.err(
                node.func,
                f"'{name}' is a variable, not a function",
                f"rename the variable: it hides {name}()"
                if hidden
                else f"write {name} without (...) to use its value",
            )
        if name in f.module.helpers:
            result = self.inline(node, *f.module.helpers[name], statement=statement)
            if result is None and not statement:
                raise self.err(
                    node,
                    f"helper '{name}' returns no value",
                    "give it a return annotation and a return statement",
                )
            return result
        if name in TYPE_NAMES:
            return self.cast(node, name)
        row = BUILTINS.get(name)
        if row is not None and row.group == "memory":
            return self.builtin_memory(node, name, statement)
        if isinstance(self.variant_env.get(name), str):
            self.used_variant_params.add(name)
            return self.cast(node, self.variant_env[name])
        if row is None:
            if name == "print":
                raise self.err(node, "print(...) has no value", "call it as a statement of its own")
            raise self.unknown(node.func, name, called=True)
        # A builtin: where its row says a call may stand, then the handler the row names.
        if row.where == "statement" and not statement:
            raise self.err(
                node, f"{name}() is a statement, not a value", f"call it on its own line: {name}()"
            )
        if row.where == "axis":
            raise self.err(node, f"{name}() is a vector", f"take one component: {name}().x")
        if row.where == "declaration":
            raise self.err(
                node,
                f"{name}(...) can only be assigned to a name at the top level of a kernel body",
                f"write: tile = {name}(f32, 256)",
            )
        return getattr(self, row.handler)(node, name)

    def nargs(self, node, name, n=None):
        """A call of `name` has `n` positional arguments (None: builtin `name`'s arity, from
        its row), else a KernelError at the call."""
        if n is None:
            n = BUILTINS[name].arity
        if len(node.args) != n:
            raise self.err(
                node,
                f"{name}() takes {n} argument{'s' if n != 1 else ''}, got {len(node.args)}",
                f"write {call_shape(name, n)}",
            )

    # -- casts ------------------------------------------------------------------------
    def cast(self, node, ty):
        if ty in ir.VECTORS:
            return self.vector(node, ty)
        self.nargs(node, ty, 1)
        a = self.expr(node.args[0])
        if a.ty in ir.VECTORS:
            raise self.err(
                node.args[0], f"cannot convert a {a.ty} to {ty}", "take a component: v.x"
            )
        if isinstance(a, ir.Const) and a.ty == "int":
            if ty == "bool":
                return ir.Const("bool", a.value != 0)
            return self.coerce(node.args[0], a, ty)
        if a.ty == ty:
            return a
        a = self.via_f32(a, ty)
        if a.ty == ty:
            return a
        if ty == "bool":
            zero = ir.Const(a.ty, 0.0 if a.ty in ir.FLOAT else 0)
            return ir.Binary("Ne", a, zero, "bool")
        return ir.Cast(a, ty)

    @staticmethod
    def via_f32(a, ty: str):
        """`a`, first converted to f32 (or the f32 vector of its length) where it or `ty` is a
        storage type and neither is that: bf16 converts to and from f32 only."""
        wide = ir.vector_of("f32", ir.VECTORS[ty][1]) if ty in ir.VECTORS else "f32"
        if {a.ty, ty} & ir.STORAGE_TYPES and wide not in (a.ty, ty):
            return ir.Cast(a, wide)
        return a

    def vector(self, node, ty):
        """vec4f(x) splats a scalar or converts another 4-vector; vec4f(a, b, c, d) builds one."""
        elem, n = ir.VECTORS[ty]
        if len(node.args) == 1:
            a = self.expr(node.args[0])
            if a.ty in ir.VECTORS:
                if ir.VECTORS[a.ty][1] != n:
                    raise self.err(
                        node.args[0],
                        f"cannot convert a {a.ty} to {ty}",
                        "vectors convert only between equal component counts",
                    )
                if a.ty == ty:
                    return a
                a = self.via_f32(a, ty)
                return a if a.ty == ty else ir.Cast(a, ty)
            return ir.Splat(self.cast_scalar(node.args[0], a, elem), ty)
        if len(node.args) != n:
            raise self.err(
                node,
                f"{ty}() takes 1 or {n} arguments, got {len(node.args)}",
                f"write {ty}(x) for all components equal, or give all {n}",
            )
        return ir.Construct(
            tuple(self.cast_scalar(an, self.expr(an), elem) for an in node.args), ty
        )

    def cast_scalar(self, node, a, elem):
        if a.ty in ir.VECTORS:
            raise self.err(
                node,
                f"expected one {elem} component, got a {a.ty}",
                "pass components: e.g. v.x, v.y",
            )
        if (
            a.ty == "int"
            or a.ty == elem
            or (elem in ("f16", "bf16") and isinstance(a, ir.Const) and a.ty == "f32")
        ):
            return self.coerce(node, a, elem)
        raise self.err(
            node,
            f"expected one {elem} component, got {a.ty}",
            f"convert it explicitly: {elem}(...)",
        )

    def builtin_bitcast(self, node, name):
        self.nargs(node, name)
        t = node.args[0]
        ty = self.resolve_type(t)
        if ty not in ("i32", "u32", "f32"):
            raise self.err(
                t,
                "bitcast needs a 32-bit scalar type: i32, u32 or f32",
                "bitcast each component: bitcast(u32, v.x)",
            )
        a = self.typed(node.args[1])
        if a.ty not in ("i32", "u32", "f32"):
            what = "a bool" if a.ty == "bool" else f"an {a.ty}" if a.ty == "f16" else f"a {a.ty}"
            raise self.err(
                node.args[1], f"cannot bitcast {what}", "bitcast 32-bit scalars: i32, u32, f32"
            )
        return a if a.ty == ty else ir.Bitcast(a, ty)
