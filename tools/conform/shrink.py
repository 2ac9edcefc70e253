"""Delta-debugging a program while its finding persists (check.persists).

Passes, repeated until none makes progress (or the budget of test runs is spent):
drop statements (halves, quarters, ... then one by one, per block), replace an if by one of
its branches, replace an expression by a literal or by one of its own operands (only where
the operand's facts are within the original's, so every invariant the generator proved
still holds), drop helpers, constants and parameters nothing uses, then shrink the run:
fewer workgroups, inputs zeroed in chunks, scalars set to 0. Pinned statements (barriers,
loop guards and counters, the chk store) and frozen expressions (loop bounds, own-element
indices) are never touched: removing them could make a program racy or non-terminating.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace

import numpy as np

from .check import persists
from .prog import lanes
from .values import zero


class Shrinker:
    def __init__(self, finding, backends, runners=None, budget: int = 600, seconds: float = 240):
        self.finding, self.backends, self.runners = finding, backends, runners
        # A compile finding never runs, so races and termination do not matter: pinned
        # statements and frozen expressions may go too.
        self.free = finding.kind == "compile"
        self.budget, self.deadline, self.tests = budget, time.monotonic() + seconds, 0

    def ok(self, prog) -> bool:
        if self.tests >= self.budget or time.monotonic() > self.deadline:
            return False
        self.tests += 1
        return persists(prog, self.finding, self.backends, self.runners)

    @property
    def spent(self) -> bool:
        return self.tests >= self.budget or time.monotonic() > self.deadline

    def run(self, prog):
        if prog.default_grid and not self.finding.backend.endswith("-x4"):
            # The metadata's grid follows a buffer's length, which shrinking changes (the
            # reference would then run other invocations than the GPUs): pin the grid.
            cand = prog.copy()
            cand.default_grid = False
            if self.ok(cand):
                prog = cand
        for _ in range(6):
            before = size(prog)
            for step in (
                self.drop_statements,
                self.flatten_ifs,
                self.simplify,
                self.drop_unused,
                self.tidy,
                self.shrink_run,
            ):
                prog = step(prog)
                if self.spent:
                    return prog
            if size(prog) >= before:
                break
        return prog

    # -- statements -------------------------------------------------------------------
    def each(self, prog, count, step):
        """step(prog, k) for k = 0, 1, ... while k < count(prog) (which steps may change)."""
        k = 0
        while k < count(prog) and not self.spent:
            prog = step(prog, k)
            k += 1
        return prog

    def drop_statements(self, prog):
        return self.each(prog, lambda p: len(blocks(p)), self.ddmin_block)

    def ddmin_block(self, prog, k: int):
        chunk = max(1, len(blocks(prog)[k]) // 2)
        while chunk >= 1 and not self.spent:
            i = 0
            while i < len(blocks(prog)[k]) and not self.spent:
                cand = prog.copy()
                block = blocks(cand)[k]
                span = [
                    j
                    for j in range(i, min(i + chunk, len(block)))
                    if self.free or removable(block[j])
                ]
                if span:
                    for j in reversed(span):
                        del block[j]
                    if self.ok(cand):
                        prog = cand
                        continue
                i += chunk
            chunk //= 2
        return prog

    def flatten_ifs(self, prog):
        k = 0
        while k < len(blocks(prog)) and not self.spent:
            j = 0
            while j < len(blocks(prog)[k]) and not self.spent:
                s = blocks(prog)[k][j]
                if s.kind == "if" and (self.free or not s.pinned):
                    for branch in range(len(s.blocks)):
                        cand = prog.copy()
                        block = blocks(cand)[k]
                        block[j : j + 1] = block[j].blocks[branch]
                        if self.ok(cand):
                            prog = cand
                            break
                j += 1
            k += 1
        return prog

    # -- expressions ------------------------------------------------------------------
    def simplify(self, prog):
        return self.each(prog, lambda p: len(statements(p)), self.simplify_statement)

    def simplify_statement(self, prog, k: int):
        s = statements(prog)[k]
        for x in range(len(s.exprs)):
            path: list = []
            while not self.spent:
                e = at(statements(prog)[k].exprs[x], path)
                if e is None:
                    break
                better = self.replace_node(prog, k, x, path, e)
                if better is not None:
                    prog = better
                    continue
                path = next_path(statements(prog)[k].exprs[x], path)
                if path is None:
                    break
        return prog

    def replace_node(self, prog, k, x, path, e):
        if e.frozen and not self.free:
            return None
        options = [zero(e.ty)] if e.tag != "lit" else []
        options += [kid for kid in e.kids if kid.ty == e.ty and (self.free or not kid.frozen)]
        parent = at(statements(prog)[k].exprs[x], path[:-1]) if path else None
        # Under + - * (and negation, which passes a chain on), a float that newly folds with
        # a constant could regroup: its parent's facts would no longer hold.
        arithmetic = parent is not None and parent.tag in ARITHMETIC and is_float(e.ty)
        root = statements(prog)[k].exprs[x]
        for new in options:
            if not self.free and not new.facts.within(e.facts):
                continue
            if not self.free and arithmetic and not new.facts.regroups_like(e.facts):
                continue
            new_root = put(root, path, new)
            if not self.free and not konst_safe(root, new_root, path):
                continue
            cand = prog.copy()
            s = statements(cand)[k]
            exprs = list(s.exprs)
            exprs[x] = new_root
            s.exprs = tuple(exprs)
            if self.ok(cand):
                return cand
        return None

    # -- declarations and the run -----------------------------------------------------
    def tidy(self, prog):
        """Counters no loop uses any more, and declarations nothing reads."""
        for name in counters(prog):
            uses = [s for s in statements(prog) if re.search(rf"\b{name}\b", s.line())]
            if all(s.kind == "decl" or s.line() == f"{name} = 0" for s in uses):
                cand = prog.copy()
                for b in blocks(cand):
                    b[:] = [s for s in b if s.line() not in (f"{name} = 0", f"{name}: u32 = 0")]
                if self.ok(cand):
                    prog = cand
        i = 0
        while i < len(prog.decls) and not self.spent:
            s = prog.decls[i]
            counter = re.fullmatch(r"[nw]\d+: u32 = 0", s.line())
            if s.kind == "decl" and not counter and not s.line().startswith("chk_v"):
                cand = prog.copy()
                del cand.decls[i]
                if self.ok(cand):
                    prog = cand
                    continue
            i += 1
        return prog

    def drop_unused(self, prog):
        for i in reversed(range(len(prog.helpers))):
            cand = prog.copy()
            del cand.helpers[i]
            if self.ok(cand):
                prog = cand
        for i in reversed(range(len(prog.consts))):
            cand = prog.copy()
            del cand.consts[i]
            if self.ok(cand):
                prog = cand
        for i in reversed(range(len(prog.params))):
            p = prog.params[i]
            if p.role == "chk":
                continue
            cand = prog.copy()
            del cand.params[i]
            cand.inputs.pop(p.name, None)
            cand.scalars.pop(p.name, None)
            if self.ok(cand):
                prog = cand
        return prog

    def shrink_run(self, prog):
        while prog.groups > 1 and not self.spent:
            cand = prog.copy()
            cand.groups = prog.groups // 2
            cand.inputs["chk"] = np.zeros(cand.invocations, np.uint32)
            if not self.ok(cand):
                break
            prog = cand
        for name in list(prog.scalars):
            if prog.scalars[name] not in (0, 0.0) and not self.spent:
                cand = prog.copy()
                cand.scalars[name] = type(prog.scalars[name])(0)
                if self.ok(cand):
                    prog = cand
        lanes_of = {p.name: lanes(p.ty) for p in prog.params if p.kind == "buffer"}
        for name in list(prog.inputs):
            if name == "chk" or name not in lanes_of:
                continue
            while prog.inputs[name].size > lanes_of[name] and not self.spent:
                cand = prog.copy()
                keep = max(1, prog.inputs[name].size // lanes_of[name] // 2) * lanes_of[name]
                cand.inputs[name] = cand.inputs[name][:keep].copy()
                if not self.ok(cand):
                    break
                prog = cand
            prog = self.zero_chunks(prog, name)
        return prog

    def zero_chunks(self, prog, name):
        n = prog.inputs[name].size
        chunk = max(1, n // 2)
        while chunk >= 1 and not self.spent:
            i = 0
            while i < n and not self.spent:
                part = prog.inputs[name][i : i + chunk]
                if part.any() or (part.dtype == np.float32 and np.signbit(part).any()):
                    cand = prog.copy()
                    cand.inputs[name][i : i + chunk] = 0
                    if self.ok(cand):
                        prog = cand
                i += chunk
            if chunk == 1:
                break
            chunk = max(1, chunk // 4)
        return prog


ARITHMETIC = {"+", "-", "*", "neg", "pow", "scale", "//"}


def is_float(ty: str) -> bool:
    return ty == "f32" or (ty.startswith("vec") and ty.endswith("f"))


def konst_safe(old_root, new_root, path) -> bool:
    """No float operand of + - * (or negation) turns into a compile-time constant: the
    op's error bound assumed no constant to fold and regroup with (floats.py)."""
    for depth in range(len(path), 0, -1):
        old, new = at(old_root, path[:depth]), at(new_root, path[:depth])
        parent = at(old_root, path[: depth - 1])
        if (
            new.facts.konst
            and not old.facts.konst
            and parent.tag in ARITHMETIC
            and is_float(old.ty)
        ):
            return False
    return True


def counters(prog) -> list:
    return [
        s.line().split(":")[0]
        for s in prog.decls
        if s.kind == "decl" and re.fullmatch(r"[nw]\d+: u32 = 0", s.line())
    ]


def removable(s) -> bool:
    return not s.pinned or (s.kind == "decl" and s.tag == "var")


def blocks(prog) -> list:
    """Every statement list of the program, in a fixed preorder."""
    out = []

    def visit(block):
        out.append(block)
        for s in block:
            for b in s.blocks:
                visit(b)

    visit(prog.decls)
    visit(prog.body)
    for h in prog.helpers:
        visit(h.body)
    return out


def statements(prog) -> list:
    return [s for b in blocks(prog) for s in b]


def size(prog) -> int:
    n = len(statements(prog)) * 100 + sum(
        len(e.render()) for s in statements(prog) for e in s.exprs
    )
    return (
        n
        + len(prog.helpers) * 50
        + len(prog.params) * 10
        + prog.groups
        + int(sum(np.count_nonzero(v) for v in prog.inputs.values()))
    )


def at(e, path):
    for i in path:
        if i >= len(e.kids):
            return None
        e = e.kids[i]
    return e


def put(e, path, new):
    if not path:
        return new
    kids = list(e.kids)
    kids[path[0]] = put(kids[path[0]], path[1:], new)
    return replace(e, kids=tuple(kids))


def next_path(root, path):
    """The next node after `path` in preorder (into the kids first), or None."""
    node = at(root, path)
    if node is not None and node.kids:
        return path + [0]
    while path:
        parent = at(root, path[:-1])
        if path[-1] + 1 < len(parent.kids):
            return path[:-1] + [path[-1] + 1]
        path = path[:-1]
    return None
