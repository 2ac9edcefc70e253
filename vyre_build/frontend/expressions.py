"""Expressions of the kernel language: the entry points (typing, coercion, conditions,
indices) and the leaves (constants, names, attributes, subscripts).

`ExprChecker` is a mixin of `KernelChecker` (checker.py): one `expr_X` method per
supported `ast` expression (the operators' in operators.py, calls' in calls.py); anything
else is rejected by name with a caret.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import fields, is_dataclass

from vyre_build.frontend import ir
from vyre_build.frontend.folding import literal
from vyre_build.core.limits import MAX_OPERATIONS
from vyre_build.frontend.names import ALL_BUILTINS, ID_BUILTINS, TYPE_NAMES
from vyre_build.frontend.types import convert_const, default_type

_UNSUPPORTED_EXPR_FIX = {
    "List": "kernels have no lists; use a buffer, shared(...) or local_array(...)",
    "Tuple": "kernels have no tuples; use separate variables",
    "Dict": "kernels have no dicts",
    "Set": "kernels have no sets",
    "ListComp": "write a for loop",
    "GeneratorExp": "write a for loop",
    "Lambda": "define a helper function at module level",
    "JoinedStr": "kernels have no strings",
    "NamedExpr": "assign in a separate statement",
    "Starred": "pass arguments one by one",
    "Await": "kernels are not async",
}


def _has_effects(e) -> bool:
    if isinstance(e, ir.Atomic):
        return True
    if isinstance(e, tuple):
        return any(_has_effects(x) for x in e)
    if is_dataclass(e):
        return any(_has_effects(getattr(e, f.name)) for f in fields(e))
    return False


class ExprChecker:
    """Mixin: expression checking for KernelChecker."""

    # -- entry points ----------------------------------------------------------------
    def expr(self, node):
        """Check an expression; the result may be an untyped Const('int')."""
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            kind = type(node).__name__
            raise self.err(
                node,
                f"'{kind}' expressions are not supported in kernels",
                _UNSUPPORTED_EXPR_FIX.get(kind, "see docs/language.md for the language"),
            )
        self.ops += 1
        if self.ops > MAX_OPERATIONS:
            raise self.too_large(node)
        self.depth += 1
        try:
            self.too_deep(node)
            return self.storage_only(node, method(node))
        finally:
            self.depth -= 1

    def storage_only(self, node, e):
        """`e`, unless it computes on a storage type (bf16: loads, stores, selects and
        conversions to and from f32 only, as SPV_KHR_bfloat16 has it)."""
        if isinstance(e, (ir.Binary, ir.Unary, ir.Fma)):
            for x in (e.a, getattr(e, "b", None), getattr(e, "c", None)):
                self.no_arithmetic(node, getattr(x, "ty", None))
        return e

    def no_arithmetic(self, node, ty) -> None:
        """A KernelError at `node` if `ty` is a storage type (bf16 or its vectors)."""
        if ty in ir.STORAGE_TYPES:
            wide = ir.vector_of("f32", ir.VECTORS[ty][1]) if ty in ir.VECTORS else "f32"
            raise self.err(
                node,
                f"{ty} has no arithmetic, comparisons or math: it is a storage type",
                f"compute in f32 and convert back: {ty}({wide}(x) * 2.0)",
            )

    def typed(self, node, ty: str | None = None):
        """Check an expression and give it a concrete type (`ty` if given)."""
        if isinstance(node, ast.IfExp) and ty is not None:
            self.depth += 1
            try:
                self.too_deep(node)
                return self.expr_IfExp(node, ty)
            finally:
                self.depth -= 1
        e = self.expr(node)
        return self.coerce(node, e, ty)

    def coerce(self, node, e, ty: str | None):
        if ty in ("f16", "bf16") and isinstance(e, ir.Const) and e.ty == "f32":  # a literal
            return convert_const(self.src, node, e, ty)
        if e.ty == "int" and ty in ir.VECTORS:
            raise self.err(
                node,
                f"expected a {ty}, got an integer constant",
                f"build the vector: {ty}({e.value})",
            )
        if e.ty == "int":
            if ty is None:
                try:
                    return default_type(e)
                except OverflowError:
                    raise self.err(
                        node, f"constant {e.value} does not fit in 32 bits", "use a smaller value"
                    ) from None
            return convert_const(self.src, node, e, ty)
        if ty is not None and e.ty != ty:
            raise self.err(
                node,
                f"expected a value of type {ty}, got {e.ty}",
                f"convert it explicitly: {ty}(...)",
            )
        return e

    def cond(self, node):
        e = self.typed(node)
        if e.ty in ir.VECTORS:
            raise self.err(
                node, f"condition must be bool, got {e.ty}", "test a component, e.g. v.x != 0.0"
            )
        if e.ty != "bool":
            fix = "f32(x) != 0.0" if e.ty in ir.STORAGE_TYPES else "x != 0"
            raise self.err(
                node, f"condition must be bool, got {e.ty}", f"compare explicitly, e.g. {fix}"
            )
        return e

    def index(self, node):
        e = self.expr(node)
        if e.ty == "int":
            if e.value < 0:
                raise self.err(node, f"negative index {e.value}", "indices are unsigned")
            return self.coerce(node, e, "u32")
        if e.ty == "i32":
            return ir.Cast(e, "u32")
        if e.ty != "u32":
            raise self.err(node, f"index must be an integer, got {e.ty}", "convert it: u32(...)")
        return e

    def lazy(self, node, fn):
        """Check `node` through fn in a context evaluated eagerly but meant lazily."""
        self.cond_depth += 1
        try:
            e = fn(node)
        finally:
            self.cond_depth -= 1
        if _has_effects(e):
            raise self.err(
                node,
                "this operand has side effects (an atomic) but is evaluated unconditionally",
                "move it into an if statement",
            )
        return e

    # -- leaves ---------------------------------------------------------------------
    def expr_Constant(self, node):
        c = literal(self.src, node)
        if c is not None:
            return c
        v = node.value
        raise self.err(
            node,
            f"{type(v).__name__} constants are not supported in kernels",
            "kernels compute on bool, i32, u32 and f32 only",
        )

    def expr_Name(self, node):
        name = node.id
        f = self.frame
        if name in f.loops:
            return f.loops[name]
        if name in f.vars:
            irname, ty = f.vars[name]
            return ir.Var(irname, ty)
        if name in f.scalars:
            return f.scalars[name]
        if name in f.arrays:
            raise self.err(
                node,
                f"'{name}' is an array and cannot be used as a value",
                f"index it ({name}[i]) or take its length (len({name}))",
            )
        c = self.constant(name)
        if c is not None:
            if isinstance(c, str):
                raise self.err(node, f"'{name}' is a type, not a value", f"cast with {c}(...)")
            return c
        if name in TYPE_NAMES or name in ALL_BUILTINS or name in f.module.helpers:
            raise self.err(
                node, f"'{name}' is a function or type, not a value", f"call it: {name}(...)"
            )
        raise self.unknown(node, name)

    def constant(self, name):
        if name in self.variant_env:
            self.used_variant_params.add(name)
            return self.variant_env[name]
        return self.module_constant(self.frame.module, name)

    def unknown(self, node, name, called=False):
        """The error for an unknown `name`, with the closest known name as the fix. A name
        that is `called` is matched against what can be called (builtins, types, helpers),
        any other against the values in scope."""
        f = self.frame
        if called:
            known = (
                sorted(ALL_BUILTINS)
                + list(TYPE_NAMES)
                + list(f.module.helpers)
                + [k for k, v in self.variant_env.items() if isinstance(v, str)]
            )
            message = f"unknown function '{name}'"
            otherwise = (
                "call a builtin (the README's kernel language section), a type to convert, "
                "or a helper: a module-level def without @kernel"
            )
        else:
            known = (
                list(f.vars)
                + list(f.loops)
                + list(f.scalars)
                + list(f.arrays)
                + list(f.module.constants)
                + list(self.variant_env)
                + list(f.module.helpers)
            )
            message = f"unknown name '{name}'"
            otherwise = (
                "assign it before use, declare it as a parameter, or define a module constant"
            )
        close = difflib.get_close_matches(name, known, n=1)
        return self.err(node, message, f"did you mean '{close[0]}'?" if close else otherwise)

    def expr_Attribute(self, node):
        call = node.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in ID_BUILTINS
            and call.func.id not in self.frame.vars
        ):
            if call.args or call.keywords:
                raise self.err(
                    call, f"{call.func.id}() takes no arguments", f"write {call.func.id}().x"
                )
            axis = {"x": 0, "y": 1, "z": 2}.get(node.attr)
            if axis is None:
                raise self.err(node, f"unknown component '.{node.attr}'", "use .x, .y or .z")
            if call.func.id == "workgroup_size":
                return ir.Const("u32", self.workgroup_size[axis])
            return ir.Builtin(call.func.id, axis)
        v = self.expr(call)
        if v.ty in ir.VECTORS:
            elem, n = ir.VECTORS[v.ty]
            axis = {"x": 0, "y": 1, "z": 2, "w": 3}.get(node.attr)
            if axis is None or axis >= n:
                raise self.err(
                    node,
                    f"a {v.ty} has no component '.{node.attr}'",
                    f"use {', '.join('.' + c for c in 'xyzw'[:n])}",
                )
            return ir.Extract(v, axis, elem)
        raise self.err(
            node,
            "attribute access is only supported on id builtins and vectors",
            "write e.g. global_id().x or v.x; call math builtins directly: sqrt(x)",
        )

    def expr_Subscript(self, node):
        arr = self.array_name(node.value)
        idx = self.index(node.slice)
        self.check_access(node.value, arr, "read")
        self.check_const_index(node, arr, idx)
        return ir.Load(arr, idx, self.element_type(arr), self.site(node))
