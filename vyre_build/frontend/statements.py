"""Statements of the kernel language that are not control flow: expression statements,
assignments (plain, annotated, augmented) and the shared/local array declarations.

`StatementChecker` is a mixin of `KernelChecker` (checker.py): one `stmt_X` method per
supported statement (control flow lives in control.py); anything else is rejected by name
with a caret and a fix. Guarantees: a statement appends its IR to the current block and
counts toward MAX_OPERATIONS; an array declaration sits at the top level of a kernel body
and keeps every kernel within its local and workgroup memory limits.
"""

from __future__ import annotations

import ast

from vyre_build.frontend import ir
from vyre_build.descriptor.types import TYPES
from vyre_build.core.limits import (
    LOCAL_ARRAY_BYTES,
    MAX_OPERATIONS,
    MAX_SHARED_BYTES,
    PORTABLE_SHARED_BYTES,
)
from vyre_build.frontend.names import (
    ALL_BUILTINS,
    ARRAY_DECLARATIONS,
    BARRIERS,
    TYPE_NAMES,
)

_UNSUPPORTED_STMT_FIX = {
    "With": "kernels have no context managers",
    "Try": "kernels have no exceptions",
    "Raise": "kernels have no exceptions; return early instead",
    "Delete": "remove the del",
    "Global": "use a module constant or a parameter",
    "Nonlocal": "use a parameter",
    "FunctionDef": "define helpers at module level",
    "ClassDef": "kernels have no classes",
    "Import": "import at module level",
    "ImportFrom": "import at module level",
    "Match": "use if/elif/else",
    "AsyncFor": "kernels are not async",
    "AsyncWith": "kernels are not async",
    "AsyncFunctionDef": "kernels are not async",
    "TypeAlias": "use a variant parameter",
}
_AUG = {
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.BitAnd,
    ast.BitOr,
    ast.BitXor,
    ast.LShift,
    ast.RShift,
}


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def _element_bytes(ty: str) -> int:
    return TYPES[ty].size  # f16 two bytes, vec4f sixteen


def zero_value(ty: str):
    """The zero of a type (false, 0, 0.0, or a vector of zeros)."""
    elem = ir.element(ty)
    zero = ir.Const(elem, False if elem == "bool" else 0.0 if elem in ir.FLOAT else 0)
    return ir.Splat(zero, ty) if ty in ir.VECTORS else zero


class StatementChecker:
    """Mixin: statements (other than control flow) for KernelChecker."""

    def statements(self, stmts, top=False):
        for s in stmts:
            start = len(self.block)
            self.statement(s, top)
            src = self.src
            for node in self.block[start:]:  # where each IR statement came from (uniformity);
                self.where.setdefault(id(node), (src, s, node))  # holding node keeps its id unique

    def statement(self, s, top):
        self.ops += 1
        if self.ops > MAX_OPERATIONS:
            raise self.too_large(s)
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            kind = type(s).__name__
            raise self.err(
                s,
                f"'{kind}' statements are not supported in kernels",
                _UNSUPPORTED_STMT_FIX.get(kind, "see docs/language.md"),
            )
        method(s, top) if type(s).__name__ == "Assign" else method(s)

    def sub_block(self, stmts, loop=False) -> tuple:
        saved, self.block = self.block, []
        if loop:
            self.frame.loop_depth += 1
        self.enter_block(stmts[0] if stmts else None)
        try:
            self.statements(stmts)
            return tuple(self.block)
        finally:
            self.leave_block()
            if loop:
                self.frame.loop_depth -= 1
            self.block = saved

    def stmt_Pass(self, node):
        pass

    def stmt_Expr(self, node):
        v = node.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return
        if not isinstance(v, ast.Call):
            raise self.err(node, "this expression has no effect", "assign it or remove it")
        if isinstance(v.func, ast.Name) and v.func.id == "print" and "print" not in self.frame.vars:
            return self.debug_print(v)
        if (
            isinstance(v.func, ast.Name)
            and v.func.id in BARRIERS
            and v.func.id not in self.frame.vars
        ):
            return self.builtin_barrier(v, v.func.id)
        e = self.expr_Call(v, statement=True)
        if isinstance(e, ir.Atomic):
            self.frame.effects = True
            self.block.append(ir.Eval(e))
        elif isinstance(e, (ir.CoopStore, ir.Fence)):
            self.block.append(e)

    def stmt_Assign(self, node, top=False):
        if len(node.targets) != 1:
            raise self.err(node, "chained assignment is not supported", "assign one name at a time")
        target = node.targets[0]
        v = node.value
        if (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Name)
            and v.func.id in ARRAY_DECLARATIONS
            and v.func.id not in self.frame.vars
        ):
            return self.declare_array(node, target, v, top)
        self.assign(node, target, lambda ty: self.typed(v, ty))

    def declare_array(self, node, target, call, top):
        kind = call.func.id
        if not top or self.frame.helper is not None:
            raise self.err(
                call,
                f"{kind}(...) must be at the top level of a kernel body",
                "declare arrays before any if/for/while",
            )
        if not isinstance(target, ast.Name):
            raise self.err(
                target, f"assign {kind}(...) to a plain name", f"write: tile = {kind}(f32, 256)"
            )
        self.nargs(call, kind, 2)
        ty = self.resolve_type(call.args[0])
        if ty == "bool":
            raise self.err(call.args[0], "arrays of bool are not supported", "use u32 with 0/1")
        n = self.expr(call.args[1])
        if not (isinstance(n, ir.Const) and n.ty in ("int", "u32", "i32")) or n.value < 1:
            raise self.err(
                call.args[1],
                f"{kind} size must be a positive constant integer",
                "use a literal or a module constant",
            )
        nbytes = n.value * _element_bytes(ty)
        total = nbytes + (self.shared_bytes() if kind == "shared" else 0)
        cap = LOCAL_ARRAY_BYTES
        if kind == "shared":
            cap = self.declared_shared or PORTABLE_SHARED_BYTES
        if total > cap:
            what = "a local array (per invocation)"
            fix = "use fewer or smaller elements"
            if kind == "shared" and self.declared_shared is None:
                what = "workgroup memory (all shared arrays of a kernel; the portable default)"
                fix = (
                    "use fewer or smaller elements, or declare more with "
                    f"@kernel(shared_bytes={_round_up(total, 1024)}) (the runtime then refuses "
                    "the kernel on a device with less)"
                )
            elif kind == "shared":
                what = "workgroup memory the kernel declares (shared_bytes)"
                fix = f"use fewer or smaller elements, or declare more (up to {MAX_SHARED_BYTES})"
            raise self.err(
                call.args[1],
                f"{kind} memory limit exceeded: {total} bytes, more than the {cap} bytes of {what}",
                fix,
            )
        name = target.id
        if name in self.frame.vars or name in self.frame.arrays or name in self.frame.scalars:
            raise self.err(target, f"'{name}' is already defined", "use a new name for the array")
        irname = self.unique(name)
        self.arrays[irname] = ir.ArrayDecl(
            irname, ty, n.value, "shared" if kind == "shared" else "local"
        )
        self.frame.arrays[name] = irname

    def shared_bytes(self) -> int:
        return sum(
            a.count * _element_bytes(a.dtype) for a in self.arrays.values() if a.space == "shared"
        )

    def assign(self, node, target, value_fn, ann_ty=None):
        f = self.frame
        if isinstance(target, ast.Subscript):
            arr = self.array_name(target.value)
            idx = self.index(target.slice)
            self.check_access(target.value, arr, "write")
            self.check_const_index(target, arr, idx)
            f.effects = True
            value = value_fn(self.element_type(arr))
            self.block.append(ir.Store(arr, idx, value, self.site(target)))
            return
        if isinstance(target, ast.Attribute):
            raise self.err(
                target,
                "vector components cannot be assigned one by one",
                "build a new vector, e.g. v = vec4f(x, v.y, v.z, v.w)",
            )
        if not isinstance(target, ast.Name):
            raise self.err(
                target,
                "only names and buffer elements can be assigned",
                "assign one name at a time: a = ...; b = ...",
            )
        name = target.id
        if name in f.scalars or (name in f.arrays) or name in f.loops:
            what = (
                "kernel parameter"
                if name in f.scalars
                else "array"
                if name in f.arrays
                else "loop variable"
            )
            raise self.err(
                target,
                f"cannot assign to {what} '{name}'",
                "copy it into a new local variable first",
            )
        if name in TYPE_NAMES or name in ALL_BUILTINS:
            raise self.err(
                target, f"'{name}' is a builtin and cannot be reassigned", "choose another name"
            )
        if name in f.vars:
            irname, ty = f.vars[name]
            if ann_ty is not None and ann_ty != ty:
                raise self.err(
                    target, f"'{name}' is already a {ty}", "use a new name for a new type"
                )
            value = value_fn(ty)
        else:
            value = value_fn(ann_ty)
            irname = self.declare(name, value.ty, target)
        self.block.append(ir.Assign(irname, value))

    def stmt_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.err(
                node.target,
                "only plain names can be annotated",
                f"drop the annotation: {ast.unparse(node.target)} = ...",
            )
        ty = self.resolve_type(node.annotation)
        if node.value is None:
            name = node.target.id
            if name in self.frame.vars:
                raise self.err(
                    node.target,
                    f"'{name}' is already declared",
                    f"assign it without the annotation ({name} = ...), or use a new name",
                )
            irname = self.declare(name, ty, node.target)
            self.block.append(ir.Assign(irname, zero_value(ty)))
            return
        self.assign(node, node.target, lambda t: self.typed(node.value, t), ann_ty=ty)

    def stmt_AugAssign(self, node):
        if type(node.op) not in _AUG:
            t = ast.unparse(node.target)
            raise self.err(
                node,
                f"augmented operator '{type(node.op).__name__}' is not supported",
                f"write it out: {t} = {t} ** {ast.unparse(node.value)}"
                if isinstance(node.op, ast.Pow)
                else "use one of += -= *= /= //= %= &= |= ^= <<= >>=",
            )
        target = node.target
        if not isinstance(target, (ast.Name, ast.Subscript)):
            raise self.err(
                target,
                "only a local variable or a buffer element (buf[i]) can be updated in place",
                "write v = vec4f(...) to change a vector",
            )
        if isinstance(target, ast.Subscript) and not isinstance(
            target.slice, (ast.Name, ast.Constant)
        ):
            # Evaluate a computed index once.
            tmp = ast.Name(id=self.unique("_idx"), ctx=ast.Store())
            ast.copy_location(tmp, target.slice)
            self.assign(node, tmp, lambda t: self.index(target.slice))
            target = ast.Subscript(
                value=target.value, slice=ast.Name(id=tmp.id, ctx=ast.Load()), ctx=ast.Store()
            )
            ast.copy_location(target, node.target)
            ast.copy_location(target.slice, node.target.slice)
        load = ast.copy_location(
            ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load())
            if isinstance(target, ast.Subscript)
            else ast.Name(id=target.id, ctx=ast.Load()),
            node.target,
        )
        binop = ast.copy_location(ast.BinOp(left=load, op=node.op, right=node.value), node)
        if isinstance(target, ast.Name) and target.id not in self.frame.vars:
            raise self.unknown(target, target.id)
        self.assign(node, target, lambda t: self.typed(binop, t))
