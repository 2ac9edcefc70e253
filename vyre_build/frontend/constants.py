"""Module constants under a variant.

A module constant is folded once, when its file loads. A variant binds names (`{"BK": 16}`):
inside the kernel a bound name has the variant's value, and so does every constant of the
same file whose definition reads a bound name, directly or through other constants of the
file (`PANEL = BK * 32` is 512 under `BK: 16`). Such a constant is folded again, from the
expression recorded at load, with the variant's bindings; every other constant keeps its
folded value. Constants imported from another kernel file keep that file's values: a
variant binds names of its kernel's file.

The work is done lazily, for the constants a kernel instance reads, and is shared by the
instances of a file with the same bindings; it counts against the file's folding steps
(limits.MAX_FOLD_STEPS), so a file's constants take bounded work whatever its variants.
"""

from __future__ import annotations

import ast
from collections import ChainMap
from dataclasses import dataclass, field

from vyre_build.core.errors import KernelError
from vyre_build.core.limits import shown
from vyre_build.frontend.ir import Const
from vyre_build.frontend.types import convert_const


@dataclass(frozen=True)
class ConstDef:
    """A constant defined in its file (not imported): what refolding it needs."""

    index: int  # definition order in the file
    node: ast.AST  # the assignment
    value: ast.expr  # its expression
    ty: str | None  # the annotation's scalar type, if any
    reads: tuple[str, ...]  # the names the expression reads, each once, in order


def reads_of(value: ast.expr) -> tuple[str, ...]:
    """The names a constant expression reads, each once, in source order."""
    return tuple(dict.fromkeys(n.id for n in ast.walk(value) if isinstance(n, ast.Name)))


def _key(env: dict) -> tuple:
    """A hashable, exact key of a variant's bindings (floats by their repr: -0.0 is not 0.0)."""
    return tuple(
        sorted((k, v) if isinstance(v, str) else (k, v.ty, repr(v.value)) for k, v in env.items())
    )


def effective(module, env: dict, kernel: str, variant: str) -> VariantConstants:
    """The constants of `module` (a declarations.KernelModule) as kernel `kernel`'s variant
    `variant` (bindings `env`) sees them: one object per file and distinct bindings,
    shared by the instances that bind the same values."""
    key = _key(env)
    got = module.variant_constants.get(key)
    if got is None:
        got = module.variant_constants[key] = VariantConstants(module, env)
    got.names = (kernel, variant)  # errors name the instance being checked
    return got


@dataclass
class VariantConstants:
    module: object  # the declarations.KernelModule of the kernel's file
    env: dict  # the variant's bindings: name -> Const or type name
    names: tuple = ("", "")  # (kernel, variant) for messages
    depends: dict = field(default_factory=dict)  # defined name -> bound names it reads (all)
    values: dict = field(default_factory=dict)  # defined name -> Const under the bindings

    def lookup(self, name: str) -> tuple[Const | None, frozenset]:
        """(value under the bindings, bound names it reads) of constant `name` of this file
        when it reads a bound name; (None, empty) when the module's value stands."""
        defs = self.module.const_defs
        if name not in defs or name in self.env:
            return None, frozenset()
        bound = self._bound_reads(name)
        if not bound:
            return None, bound
        if name not in self.values:
            self._refold(name)
        return self.values[name], bound

    def _closure(self, name: str, todo) -> list[str]:
        """The constants of this file that `name` reads, itself included, that `todo` keeps,
        in definition order (iterative: a chain of constants may be long)."""
        defs, seen, stack = self.module.const_defs, {name}, [name]
        while stack:
            for r in defs[stack.pop()].reads:
                if r in defs and r not in seen and r not in self.env and todo(r):
                    seen.add(r)
                    stack.append(r)
        return sorted(seen, key=lambda n: defs[n].index)

    def _bound_reads(self, name: str) -> frozenset:
        if name in self.depends:
            return self.depends[name]
        defs, folder = self.module.const_defs, self.module.folder
        for c in self._closure(name, lambda r: r not in self.depends):
            d = defs[c]
            try:
                folder.count(d.value)
            except KernelError as e:
                raise self._named(e, c) from None
            bound: set[str] = set()
            for r in d.reads:
                if r in self.env:
                    bound.add(r)
                elif r in defs:
                    bound |= self.depends[r]
            self.depends[c] = frozenset(bound)
        return self.depends[name]

    def _refold(self, name: str) -> None:
        mod = self.module
        defs, src = mod.const_defs, mod.source
        scope = ChainMap(
            {k: v for k, v in self.env.items() if isinstance(v, Const)},
            self.values,
            mod.constants,
        )
        for c in self._closure(name, lambda r: r not in self.values and self.depends[r]):
            d = defs[c]
            try:
                for n in ast.walk(d.value):
                    if isinstance(n, ast.Name) and isinstance(self.env.get(n.id), str):
                        raise src.error(
                            n,
                            f"'{n.id}' is a type ({self.env[n.id]}), not a number",
                            "bind a number, or give the type parameter a name no constant reads",
                        )
                value = mod.folder.fold(d.value, scope)
                if d.ty is not None:
                    value = convert_const(src, d.value, value, d.ty)
            except KernelError as e:
                raise self._named(e, c) from None
            self.values[c] = value

    def _named(self, e: KernelError, name: str) -> KernelError:
        kernel, variant = self.names
        bound = self.depends.get(name, self.env)
        sets = ", ".join(
            f"{k} = {v if isinstance(v, str) else shown(repr(v.value))}"
            for k, v in sorted(self.env.items())
            if k in bound
        )
        return KernelError(
            f"{e.message} (constant '{name}' under variant '{variant}' of kernel "
            f"'{kernel}', which sets {sets})",
            e.path,
            e.line,
            e.col,
            e.source_line,
            e.fix,
            e.end_col,
        )
