"""`print(...)`, `assert cond, "message"` and the sites of bounds reports (a KernelChecker mixin).

Both statements are checked in every build, with the same errors; only a debug build
(`KernelChecker(debug=True)`) keeps them, as `ir.DebugPrint` / `ir.DebugAssert`, and gives
every load, store and atomic an `ir.Site` for its bounds report. A release build keeps
nothing: their arguments may not change the kernel (no helper calls, atomics, subgroup
or matrix ops), and the checker's naming state is restored after them, so the Program is
exactly that of the kernel without them.

Accepted: `print` with string literals and i32/u32/f32/bool values (an integer literal is
an i32), at most MAX_DEBUG_VALUES values and MAX_DEBUG_TEXT characters of text; `assert`
with a bool condition and an optional string-literal message. A constant index past the end
of a shared or local array is refused here in every build (`check_const_index`).
"""

from __future__ import annotations

import ast
import os
import posixpath
from dataclasses import fields, is_dataclass

from vyre_build.frontend import ir

__all__ = ["DebugChecker", "MAX_DEBUG_TEXT", "MAX_DEBUG_VALUES", "PRINTABLE"]

MAX_DEBUG_VALUES = 16  # values one print or assert reports
MAX_DEBUG_TEXT = 256  # characters of literal text in one print or assert message
PRINTABLE = ("i32", "u32", "f32", "bool")
_NOT_IN_DEBUG = (ir.Atomic, ir.Subgroup, ir.CoopLoad, ir.CoopFill, ir.CoopMma)
_WHAT = {
    ir.Atomic: "an atomic",
    ir.Subgroup: "a subgroup operation",
    ir.CoopLoad: "a cooperative-matrix operation",
    ir.CoopFill: "a cooperative-matrix operation",
    ir.CoopMma: "a cooperative-matrix operation",
}


def _effect(e):
    """The first node of `e` a print or assert may not hold, or None."""
    if isinstance(e, _NOT_IN_DEBUG):
        return e
    if isinstance(e, tuple):
        for x in e:
            got = _effect(x)
            if got is not None:
                return got
    elif is_dataclass(e) and not isinstance(e, ir.Site):
        for f in fields(e):
            got = _effect(getattr(e, f.name))
            if got is not None:
                return got
    return None


class DebugChecker:
    """Mixin of KernelChecker: print, assert, debug sites and constant-index checks."""

    debug = False
    debug_dir = ""

    def site(self, node) -> ir.Site | None:
        """Where `node` is, for a debug report (None in a release build). The file is named
        as the action key names inputs, relative to the compiled kernel file's folder, under
        `debug_dir` (that folder as the user sees it, a compiler option: part of the key)."""
        if not self.debug:
            return None
        main = os.path.dirname(self.frames[0].module.path)
        rel = os.path.relpath(self.frame.module.path, main).replace(os.sep, "/")
        if self.debug_dir:
            rel = posixpath.normpath(posixpath.join(self.debug_dir, rel))
        return ir.Site(rel, getattr(node, "lineno", 1) or 1, self.src.column(node))

    def check_const_index(self, node, arr: str, idx) -> None:
        """A constant index at or past the end of a shared or local array is an error."""
        decl = self.arrays.get(arr)
        if decl is None or not isinstance(idx, ir.Const):
            return
        if int(idx.value) >= decl.count:
            kind = "shared" if decl.space == "shared" else "local_array"
            shown = ast.get_source_segment(self.src.text, node.value) or arr
            raise self.err(
                node.slice,
                f"index {int(idx.value)} is past the end of {decl.space} array '{shown}' "
                f"({decl.count} elements)",
                f"use an index from 0 to {decl.count - 1}, or declare it larger: "
                f"{kind}({decl.dtype}, {int(idx.value) + 1})",
            )

    # -- the statements ------------------------------------------------------------------
    def _pure(self, node, fn):
        """Check `node` through `fn` as a print/assert argument: an expression with no effect
        on the kernel. In a release build the checker's naming state is put back after."""
        saved = (len(self.block), len(self.locals), set(self.names), dict(self.next_suffix))
        e = fn(node)
        if len(self.block) != saved[0] or len(self.locals) != saved[1]:
            raise self.err(
                node,
                "print and assert arguments cannot call helpers with statements "
                "(they run only in debug builds)",
                "assign the helper's result to a local first and pass the local",
            )
        bad = _effect(e)
        if bad is not None:
            raise self.err(
                node,
                f"print and assert arguments cannot hold {_WHAT[type(bad)]} "
                "(they run only in debug builds)",
                "assign the value to a local first and pass the local",
            )
        if not self.debug:
            self.names, self.next_suffix = saved[2], saved[3]
        return e

    def _printable(self, node):
        e = self._pure(node, self.expr)
        if e.ty == "int":
            e = self.coerce(node, e, None)  # an integer literal is an i32
        if e.ty in PRINTABLE:
            return e
        if e.ty in ir.VECTORS:
            comps = ", ".join(f"v.{c}" for c in "xyzw"[: ir.VECTORS[e.ty][1]])
            fix = f"pass its components: {comps}"
        elif e.ty in ("f16", "bf16"):
            fix = "convert it: f32(x)"
        else:
            fix = "pass i32, u32, f32 or bool values"
        raise self.err(
            node, f"print and assert report i32, u32, f32 and bool values, not {e.ty}", fix
        )

    def debug_print(self, call) -> None:
        """`print("text", value, ...)` as a statement."""
        if call.keywords:
            raise self.err(
                call.keywords[0].value,
                f"print takes no keyword arguments ('{call.keywords[0].arg}')",
                "values are printed separated by spaces, one line per call",
            )
        parts: list = []
        values = text = 0
        for arg in call.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                text += len(arg.value)
                parts.append(arg.value)
            elif isinstance(arg, ast.JoinedStr):
                raise self.err(
                    arg,
                    "f-strings are not supported in kernels",
                    'pass the values as arguments: print("x =", x)',
                )
            elif isinstance(arg, ast.Starred):
                raise self.err(arg, "print takes no *arguments", "pass each value")
            else:
                values += 1
                parts.append(self._printable(arg))
            if values > MAX_DEBUG_VALUES:
                raise self.err(
                    arg,
                    f"print reports at most {MAX_DEBUG_VALUES} values (the limit)",
                    "split it into several prints",
                )
            if text > MAX_DEBUG_TEXT:
                raise self.err(
                    arg,
                    f"print's text is longer than {MAX_DEBUG_TEXT} characters (the limit)",
                    "shorten it",
                )
        if self.debug:
            self.block.append(ir.DebugPrint(tuple(parts), self.site(call)))

    def stmt_Assert(self, node) -> None:
        msg = node.msg
        if msg is not None and not (isinstance(msg, ast.Constant) and isinstance(msg.value, str)):
            raise self.err(
                msg,
                "an assert message must be a string literal",
                'write assert cond, "message"; print(...) values before it to see them',
            )
        if msg is not None and len(msg.value) > MAX_DEBUG_TEXT:
            raise self.err(
                msg,
                f"an assert message is longer than {MAX_DEBUG_TEXT} characters (the limit)",
                f"shorten it to at most {MAX_DEBUG_TEXT} characters",
            )
        cond = self._pure(node.test, self.cond)
        values = []
        test = node.test
        operands = [test.left, *test.comparators] if isinstance(test, ast.Compare) else []
        for sub in operands:  # the compared values are reported (a literal needs no report)
            if isinstance(sub, ast.Constant) or len(values) == MAX_DEBUG_VALUES:
                continue
            e = self._pure(sub, self.expr)
            if e.ty in PRINTABLE:
                label = " ".join((ast.get_source_segment(self.src.text, sub) or "value").split())
                values.append((label[:MAX_DEBUG_TEXT], e))
        if self.debug:
            text = " ".join((ast.get_source_segment(self.src.text, test) or "").split())
            self.block.append(
                ir.DebugAssert(
                    cond,
                    text[:MAX_DEBUG_TEXT],
                    None if msg is None else msg.value,
                    tuple(values),
                    self.site(node),
                )
            )
