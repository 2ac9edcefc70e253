"""Module level of a kernel file: imports, constants, helpers, kernels and variants.

`ModuleLoader.load(path)` parses a kernel file (never executing it) into a
`KernelModule`, following `from .other import name` imports to other kernel files
(cycles are an error) and reading `variants.yaml` beside the file. Every problem is a
`KernelError` naming file:line:col with a caret and a fix. A kernel's `@kernel(...)`
declaration, and the `KernelModule` / `KernelDef` records, are in declarations.py.
"""

from __future__ import annotations

import ast
import difflib
import os

from vyre_build.core.errors import KernelError
from vyre_build.frontend.constants import ConstDef, reads_of
from vyre_build.frontend.declarations import KernelDeclarations, KernelModule
from vyre_build.frontend.folding import ConstantFolder
from vyre_build.core.limits import (
    MAX_CONSTANTS,
    MAX_FILES,
    MAX_HELPERS,
    MAX_IMPORT_DEPTH,
    MAX_KERNELS,
)
from vyre_build.core.limits import shown as short
from vyre_build.frontend.names import LANG_NAMES, SCALAR_NAMES
from vyre_build.frontend.parsing import parse_source
from vyre_build.frontend.source import Refusal, Source, decode_source, inside, read_tree_file
from vyre_build.frontend.types import convert_const
from vyre_build.frontend.variants import yaml_variants

LANG_MODULE = "vyre_build.lang"


class ModuleLoader(KernelDeclarations):
    """Loads kernel files and what they import, once each; detects import cycles.

    Arguments:
        root: the kernel tree; only regular files under it are read (default: the
            folder of the first file loaded).
        display_root: paths in messages are relative to it (default: the working
            directory).
    """

    def __init__(self, root: str | None = None, display_root: str | None = None):
        self.root = os.path.abspath(root) if root else None
        self.display_root = display_root
        self.real_root = os.path.realpath(self.root) if self.root else None
        self.modules: dict[str, KernelModule] = {}
        self.loading: list[str] = []
        self.files_read = 0

    def display(self, real: str, given: str | None) -> str:
        if given is not None:
            return given
        base = self.display_root or os.getcwd()
        rel = os.path.relpath(real, base)
        return real if rel.startswith("..") else rel

    def read(self, path: str, shown: str, what: str, at: tuple | None = None) -> tuple[str, str]:
        """(real path, text) of a file of the tree, or a KernelError at `at` = (src, node)
        (else at line 1 of the file itself): refused outside the root, if not a regular
        file, if too large, if not UTF-8, or past MAX_FILES files."""
        if self.real_root is None:
            self.root = os.path.dirname(os.path.abspath(path))
            self.real_root = os.path.realpath(self.root)
        self.files_read += 1
        try:
            if self.files_read > MAX_FILES:
                raise Refusal(
                    f"compiling this file reads more than {MAX_FILES} files (the limit)",
                    "import from fewer kernel files",
                )
            real, data = read_tree_file(path, shown, self.real_root)
        except Refusal as r:
            if at is not None:
                raise at[0].error(at[1], r.message, r.fix) from None
            raise KernelError(r.message, shown, 1, 1, None, r.fix) from None
        return real, decode_source(data, shown, what)

    def load(
        self,
        path: str,
        text: str | None = None,
        given: str | None = None,
        importer: tuple | None = None,
    ) -> KernelModule:
        real = os.path.realpath(path)
        if real in self.modules:
            return self.modules[real]
        if real in self.loading:
            src, node = importer
            chain = " -> ".join(
                os.path.basename(p) for p in self.loading[self.loading.index(real) :]
            )
            raise src.error(
                node,
                f"import cycle: {chain} -> {os.path.basename(real)}",
                "move the shared helpers into a file that imports neither",
            )
        if len(self.loading) >= MAX_IMPORT_DEPTH:
            src, node = importer
            raise src.error(
                node,
                f"imports nested more than {MAX_IMPORT_DEPTH} files deep (the limit)",
                "import the helpers from a file nearer the kernel",
            )
        if text is None:
            shown = given if given is not None else self.display(os.path.abspath(path), None)
            real, text = self.read(path, shown, "kernel file", importer)
        elif self.real_root is None:
            self.root = os.path.dirname(os.path.abspath(path))
            self.real_root = os.path.realpath(self.root)
        src = Source(self.display(real, given), text, text.splitlines())
        self.loading.append(real)
        try:
            module = self._parse(src, real)
        finally:
            self.loading.pop()
        self.modules[real] = module
        return module

    def _parse(self, src: Source, real: str) -> KernelModule:
        tree = parse_source(src)
        mod = KernelModule(src, real, {}, {}, {}, {}, [real], ConstantFolder(src))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                self._import_from(mod, node)
            elif isinstance(node, ast.Import):
                names = ", ".join(a.name for a in node.names)
                raise src.error(
                    node,
                    f"'import {names}' is not allowed in a kernel file",
                    "use 'from vyre_build.lang import ...' or "
                    "'from .other_kernel_file import helper'",
                )
            elif isinstance(node, ast.FunctionDef):
                self._function(mod, node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                self._constant(mod, node)
            elif (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                continue  # docstring
            else:
                raise src.error(
                    node,
                    f"'{type(node).__name__}' is not allowed at the top level of a kernel file",
                    "a kernel file holds only imports, constants, helpers and kernels",
                )
        yaml_variants(mod, self.read)
        self._count_kernels(mod)
        return mod

    def _count_kernels(self, mod: KernelModule) -> None:
        total = 0
        for kdef in mod.kernels.values():
            total += max(1, len(kdef.variants))
            if total > MAX_KERNELS:
                raise mod.source.error(
                    kdef.node,
                    f"this file defines more than {MAX_KERNELS} kernels, each variant "
                    "counted (the limit)",
                    "split the kernels over several files",
                )

    def _check_count(self, mod: KernelModule, node, kind: str) -> None:
        table, limit = (
            (mod.constants, MAX_CONSTANTS) if kind == "constants" else (mod.helpers, MAX_HELPERS)
        )
        if len(table) > limit:
            raise mod.source.error(
                node,
                f"this file has more than {limit} {kind}, imported ones included (the limit)",
                "split the file, or import fewer names",
            )

    def _import_from(self, mod: KernelModule, node: ast.ImportFrom) -> None:
        src = mod.source
        if node.module == LANG_MODULE and node.level == 0:
            # The language's names are always in scope; the import is for editors, but a
            # name the language does not have is a typo worth reporting.
            known = LANG_NAMES | {"*"}
            for alias in node.names:
                if alias.name not in known:
                    close = difflib.get_close_matches(alias.name, sorted(known), n=1)
                    raise src.error(
                        node,
                        f"'{alias.name}' is not a name of {LANG_MODULE}",
                        f"did you mean '{close[0]}'?"
                        if close
                        else "see the README's kernel language section",
                    )
            return
        if node.module is None or any(a.name == "*" for a in node.names):
            raise src.error(
                node,
                "this import form is not supported",
                "import names explicitly: from .other import helper, CONST",
            )
        parts = node.module.split(".")
        base = os.path.dirname(mod.path)
        for _ in range(max(node.level - 1, 0)):
            base = os.path.dirname(base)
        candidates = [os.path.join(base, *parts) + ".py"]
        if node.level == 0 and self.root:
            candidates.append(os.path.join(self.root, *parts) + ".py")
        for c in candidates:
            # Refused before anything is looked up outside the tree (not even whether it exists).
            if not inside(os.path.normpath(c), self.root):
                raise src.error(
                    node,
                    f"module '{short(node.module)}' would be {os.path.normpath(c)}, outside "
                    f"the kernel tree {self.root}",
                    "imports may only name kernel files inside the tree's root "
                    "(--root, or the kernel directory given to the SCons tool)",
                )
        target = next((c for c in candidates if os.path.lexists(c)), None)
        if target is None:
            raise src.error(
                node,
                f"cannot find kernel file for module '{node.module}' "
                f"(looked for {os.path.relpath(candidates[0], base)} beside this file)",
                "imports may only name other kernel files of the tree, or vyre_build.lang",
            )
        shown = os.path.normpath(
            os.path.join(
                os.path.dirname(src.path), os.path.relpath(target, os.path.dirname(mod.path))
            )
        )
        other = self.load(target, importer=(src, node), given=shown)
        mod.dependencies.extend(d for d in other.dependencies if d not in mod.dependencies)
        for alias in node.names:
            if alias.name not in other.constants and alias.name not in other.helpers:
                what = (
                    "a kernel; kernels cannot be called"
                    if alias.name in other.kernels
                    else "not defined there"
                )
                raise src.error(
                    node,
                    f"'{alias.name}' imported from '{node.module}' is {what}",
                    "import a helper function or a constant",
                )
            local = alias.asname or alias.name
            if local in mod.constants or local in mod.helpers or local in mod.kernels:
                raise src.error(
                    alias, f"'{local}' is defined twice", "give each definition its own name"
                )
            if alias.name in other.constants:
                mod.constants[local] = other.constants[alias.name]
                self._check_count(mod, node, "constants")
            else:
                mod.helpers[local] = other.helpers[alias.name]
                self._check_count(mod, node, "helpers")

    def _constant(self, mod: KernelModule, node) -> None:
        src = mod.source
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
            raise src.error(
                node, "a module constant is one name assigned once", "write NAME = value"
            )
        name = targets[0].id
        value = mod.folder.fold(node.value, mod.constants)
        if isinstance(node, ast.AnnAssign):
            ann = node.annotation
            ty = ann.id if isinstance(ann, ast.Name) else None
            if ty not in SCALAR_NAMES:
                raise src.error(
                    ann,
                    f"a constant's annotation must be {', '.join(SCALAR_NAMES[:-1])} or "
                    f"{SCALAR_NAMES[-1]}",
                    "write e.g. N: u32 = 256, or leave the annotation out",
                )
            value = convert_const(src, node.value, value, ty)
        if name in mod.constants or name in mod.helpers or name in mod.kernels:
            raise src.error(node, f"'{name}' is defined twice", "give each definition its own name")
        mod.constants[name] = value
        ty = node.annotation.id if isinstance(node, ast.AnnAssign) else None
        mod.const_defs[name] = ConstDef(
            len(mod.const_defs), node, node.value, ty, reads_of(node.value)
        )
        self._check_count(mod, node, "constants")
