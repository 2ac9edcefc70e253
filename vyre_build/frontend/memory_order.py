"""Memory scopes and orders in the kernel language: the `scope=` / `order=` keywords of every
atomic, `atomic_load`, `atomic_store` and `fence` (a mixin of `KernelChecker`).

    t = atomic_add(ticket, 0, 1, scope="device", order="acq_rel")
    flag = atomic_load(flags, i, order="acquire")
    atomic_store(flags, i, 1, order="release")
    fence(scope="device", order="release")

Guarantees: a keyword is a string literal naming a scope ("device", "workgroup") or an
order ("relaxed", "acquire", "release", "acq_rel") that the operation allows (a load is
relaxed or acquire, a store relaxed or release, a fence anything but relaxed); a shared
array takes only workgroup scope. Anything else is a KernelError at the keyword, with the
fix. The scope an array has anyway (device for a buffer, workgroup for a shared array) is
recorded as None, so `atomic_add(b, i, v, scope="device")` is today's atomic, byte for byte.
"""

from __future__ import annotations

import ast

from vyre_build.frontend import ir
from vyre_build.frontend.builtins import MEMORY_ORDERS, MEMORY_SCOPES
from vyre_build.frontend.builtins import ORDERS as _ORDERS  # the orders each kind allows

# What to write instead of an order the kind of operation does not allow.
_ORDER_FIX = {
    "load": 'a load is order="relaxed" or "acquire" (to publish, use atomic_store with '
    'order="release")',
    "store": 'a store is order="relaxed" or "release" (to wait for a value, use atomic_load '
    'with order="acquire")',
    "fence": 'a fence orders memory: order="acquire", "release" or "acq_rel" (a relaxed '
    "fence does nothing: remove it)",
    "rmw": 'one of order="relaxed", "acquire", "release", "acq_rel"',
}


def _quoted(values) -> str:
    return ", ".join(f'"{v}"' for v in values)


class MemoryOrderChecker:
    """Mixin: memory keywords and the memory builtins for KernelChecker."""

    def memory_keywords(self, node, name: str, kind: str, arr: str | None):
        """(scope or None, order) of call `node` of builtin `name` (`kind`: rmw, load,
        store or fence) on array `arr` (None for a fence)."""
        scope, order = None, None
        for kw in node.keywords:
            if kw.arg not in ("scope", "order"):
                what = f"'{kw.arg}'" if kw.arg is not None else "**"
                raise self.err(
                    kw.value,
                    f"{name}() takes the keywords scope= and order=, not {what}",
                    f'write e.g. {name}(..., scope="device", order="relaxed")',
                )
            v = kw.value
            if not (isinstance(v, ast.Constant) and isinstance(v.value, str)):
                raise self.err(
                    v,
                    f"the {kw.arg} of {name}() must be a string literal",
                    f'write {kw.arg}="{"device" if kw.arg == "scope" else "relaxed"}": '
                    "scopes and orders are fixed when the kernel is compiled",
                )
            if kw.arg == "scope":
                if v.value not in MEMORY_SCOPES:
                    raise self.err(
                        v,
                        f"unknown memory scope {v.value!r} in {name}()",
                        f"write scope= one of {_quoted(MEMORY_SCOPES)}",
                    )
                scope = v.value
                if arr is not None and arr in self.arrays and v.value == "device":
                    raise self.err(
                        v,
                        f"{name}() on shared array '{arr}' cannot have scope=\"device\": "
                        "workgroup memory is seen only by its own workgroup",
                        'write scope="workgroup" (or leave scope out)',
                    )
            else:
                if v.value not in MEMORY_ORDERS:
                    raise self.err(
                        v,
                        f"unknown memory order {v.value!r} in {name}()",
                        f"write order= one of {_quoted(MEMORY_ORDERS)}",
                    )
                if v.value not in _ORDERS[kind]:
                    raise self.err(v, f'{name}() cannot have order="{v.value}"', _ORDER_FIX[kind])
                order = v.value
        if kind == "fence":
            return scope or "device", order or "acq_rel"
        natural = "workgroup" if arr in self.arrays else "device"
        return (None if scope in (None, natural) else scope), order or "relaxed"

    def memory_array(self, node, name: str):
        """(array name, element type) of the first argument of an atomic-style builtin."""
        arr = self.array_name(node.args[0])
        ty = self.element_type(arr)
        decl = self.arrays.get(arr)
        if decl is not None and decl.space == "local":
            raise self.err(
                node.args[0],
                f"atomics need a buffer or a shared array; '{arr}' is local",
                "use a plain read-modify-write on local arrays",
            )
        if decl is None:
            self.check_access(node.args[0], arr, "atomic")
        if ty not in ir.INTEGER:
            raise self.err(
                node.args[0],
                f"atomics need an i32 or u32 array; '{node.args[0].id}' holds {ty}",
                'declare it Buffer[u32, "rw"] or Buffer[i32, "rw"]',
            )
        return arr, ty

    def atomic(self, node, name: str, op: str, arr: str, idx, vals, ty, scope, order):
        """The ir.Atomic of every atomic builtin, once it may run here (not under a
        conditional expression) and its constant index is checked."""
        if self.cond_depth:
            raise self.err(
                node,
                f"{name}() cannot be used where it would run unconditionally "
                "(conditional expression or right side of and/or)",
                "move it into an if statement",
            )
        self.check_const_index(ast.Subscript(node.args[0], node.args[1]), arr, idx)
        return ir.Atomic(op, arr, idx, vals, ty, self.site(node), scope, order)

    def builtin_memory(self, node, name: str, statement: bool):
        """atomic_load(buf, i), atomic_store(buf, i, v) and fence(), with their keywords."""
        if name != "atomic_load" and not statement:
            raise self.err(
                node, f"{name}() is a statement, not a value", f"call it on its own line: {name}()"
            )
        if name == "fence":
            self.nargs(node, name, 0)
            scope, order = self.memory_keywords(node, name, "fence", None)
            return ir.Fence(scope, order)
        kind = "load" if name == "atomic_load" else "store"
        self.nargs(node, name, 2 if kind == "load" else 3)
        arr, ty = self.memory_array(node, name)
        idx = self.index(node.args[1])
        args = () if kind == "load" else (self.typed(node.args[2], ty),)
        scope, order = self.memory_keywords(node, name, kind, arr)
        op = "Load" if kind == "load" else "Store"
        return self.atomic(node, name, op, arr, idx, args, ty, scope, order)
