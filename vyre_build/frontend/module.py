"""Module level of a kernel file: imports, constants, helpers, kernels and variants.

`ModuleLoader.load(path)` parses a kernel file (never executing it) into a
`KernelModule`, following `from .other import name` imports to other kernel files
(cycles are an error) and reading `variants.yaml` beside the file. Every problem is a
`KernelError` naming file:line:col with a caret and a fix.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from dataclasses import dataclass, field

from vyre_build.core.errors import KernelError
from vyre_build.frontend.constants import ConstDef, reads_of
from vyre_build.frontend.folding import ConstantFolder
from vyre_build.core.limits import (
    MAX_CONSTANTS,
    MAX_FILES,
    MAX_HELPERS,
    MAX_IMPORT_DEPTH,
    MAX_KERNELS,
)
from vyre_build.core.limits import shown as short
from vyre_build.frontend.names import LANG_NAMES, SCALAR_NAMES, TYPE_NAMES
from vyre_build.frontend.parsing import parse_source
from vyre_build.frontend.source import Refusal, Source, decode_source, inside, read_tree_file
from vyre_build.frontend.types import convert_const
from vyre_build.frontend.variants import check_variant, yaml_variants
from vyre_build.frontend.ir import Const

LANG_MODULE = "vyre_build.lang"
MAX_INVOCATIONS = 256
MAX_WG = (256, 256, 64)
_KERNEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a file-name stem on every system
_GRID_EXAMPLE = 'grid="n" or grid=("cols", "rows")'


@dataclass
class KernelDef:
    name: str
    node: ast.FunctionDef
    workgroup_size: tuple[int, int, int]
    grid: tuple  # int | str per axis
    variants: dict[str, dict]  # variant name -> {param: Const | type name}
    variants_node: object  # where variants were declared (for errors)
    any_length: tuple = ()  # ((name, node), ...): buffers not held to the grid's length
    shared_bytes: object = None  # the @kernel(shared_bytes=...) expression (options.py folds it)
    # The @kernel(workgroup_size=...) and grid=... expressions: an instance whose variant
    # binds a name they read, directly or through this file's constants, folds them again.
    workgroup_size_node: object = None
    grid_node: object = None
    # (variant, parameter) -> where variants.yaml sets it (for errors naming the parameter)
    variant_param_pos: dict = field(default_factory=dict)


@dataclass
class KernelModule:
    source: Source
    path: str  # real filesystem path
    constants: dict[str, Const]
    helpers: dict[str, tuple]  # name -> (KernelModule, FunctionDef)
    kernels: dict[str, KernelDef]
    imported: dict[str, tuple]  # local name -> (KernelModule, name in that module)
    dependencies: list[str]  # real paths of every file read for this module
    folder: ConstantFolder  # folds this file's top-level constants (and counts the work)
    sizes: dict[str, int] = field(default_factory=dict)  # helper -> inlined size (inlining.py)
    work: int | None = None  # operations x variants of its kernels, once counted (work.py)
    # name -> ConstDef of each constant defined here (not imported): what a variant refolds
    const_defs: dict = field(default_factory=dict)
    variant_constants: dict = field(default_factory=dict)  # bindings -> VariantConstants


def fold_workgroup_size(mod: KernelModule, node, env) -> tuple[int, int, int]:
    """The @kernel(workgroup_size=...) expression `node` folded with constants `env`
    (the module's, or a variant's: options.py): three sizes within the portable limits."""
    src = mod.source
    if node is None:
        return (64, 1, 1)
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    if not 1 <= len(items) <= 3:
        raise src.error(
            node,
            "workgroup_size has 1 to 3 entries",
            "write e.g. workgroup_size=256 or workgroup_size=(16, 16)",
        )
    sizes = []
    for item in items:
        if isinstance(item, ast.Constant) and type(item.value) is not int:
            raise src.error(
                item,
                f"workgroup size entries must be positive integers, got {short(repr(item.value))}",
                "write e.g. workgroup_size=256 or workgroup_size=(16, 16)",
            )
        c = mod.folder.fold(item, env)
        if c.ty != "int" or c.value < 1:
            raise src.error(
                item,
                f"workgroup size entries must be positive integers, got {c.value!r}",
                "write e.g. workgroup_size=(16, 16)",
            )
        sizes.append(c.value)
    sizes += [1] * (3 - len(sizes))
    total = sizes[0] * sizes[1] * sizes[2]
    if total > MAX_INVOCATIONS or any(s > m for s, m in zip(sizes, MAX_WG)):
        raise src.error(
            node,
            f"workgroup size {tuple(sizes)} ({total} invocations) exceeds "
            f"the portable limit of {MAX_INVOCATIONS} invocations "
            f"(per axis {MAX_WG})",
            "use at most 256 invocations, e.g. (16, 16)",
        )
    return tuple(sizes)


def fold_grid(mod: KernelModule, node, env) -> tuple:
    """The @kernel(grid=...) expression `node`, its numbers folded with constants `env`:
    per axis an int, or a parameter name (a string)."""
    src = mod.source
    if node is None:
        return ()
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    out = []
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        elif not (
            isinstance(item, ast.Constant) and isinstance(item.value, (bool, float))
        ) and isinstance(item, (ast.Constant, ast.Name, ast.BinOp)):
            c = mod.folder.fold(item, env)
            if c.ty != "int":
                raise src.error(
                    item,
                    "grid entries are ints or parameter names as strings",
                    f"write e.g. {_GRID_EXAMPLE}",
                )
            if not 1 <= c.value <= 0xFFFFFFFF:
                raise src.error(
                    item,
                    f"grid entry {c.value} is out of range: invocations per axis are 1 .. "
                    "4294967295",
                    "give a positive count that fits in u32",
                )
            out.append(c.value)
        else:
            raise src.error(
                item,
                "grid entries are ints or parameter names as strings",
                f"write e.g. {_GRID_EXAMPLE}",
            )
    if not 1 <= len(out) <= 3:
        raise src.error(
            node,
            "grid has 1 to 3 entries",
            f"give one to three entries (x, y, z), e.g. {_GRID_EXAMPLE}",
        )
    return tuple(out)


class ModuleLoader:
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

    def _function(self, mod: KernelModule, node: ast.FunctionDef) -> None:
        src = mod.source
        if node.name in mod.helpers or node.name in mod.kernels or node.name in mod.constants:
            raise src.error(node, f"'{node.name}' is defined twice", "rename one of them")
        decos = node.decorator_list
        if not decos:
            mod.helpers[node.name] = (mod, node)
            self._check_count(mod, node, "helpers")
            return
        if len(decos) != 1:
            raise src.error(
                decos[1],
                "a kernel takes exactly one decorator, @kernel(...)",
                "remove the other decorators: keep only @kernel(...)",
            )
        deco = decos[0]
        call = deco if isinstance(deco, ast.Call) else None
        fn = call.func if call else deco
        if not (isinstance(fn, ast.Name) and fn.id == "kernel"):
            raise src.error(deco, "unknown decorator", "kernels are declared with @kernel(...)")
        if not _KERNEL_NAME.fullmatch(node.name):
            raise src.error(
                node,
                f"kernel name '{short(node.name)}' may only use ASCII letters, digits and '_'",
                "rename the kernel: its name becomes the artifact file names and the bundle's "
                "kernel id",
            )
        opts = {
            "workgroup_size": None,
            "grid": None,
            "variants": None,
            "any_length": None,
            "shared_bytes": None,
        }
        if call is not None:
            if call.args:
                raise src.error(
                    call.args[0],
                    "@kernel takes keyword arguments only",
                    "write @kernel(workgroup_size=256)",
                )
            for kw in call.keywords:
                if kw.arg not in opts:
                    raise src.error(
                        kw.value,
                        f"unknown @kernel option '{kw.arg}'",
                        "options are workgroup_size, grid, variants, any_length and shared_bytes",
                    )
                if opts[kw.arg] is not None:
                    raise src.error(
                        kw.value, f"@kernel option '{kw.arg}' is given twice", "keep one of them"
                    )
                opts[kw.arg] = kw.value
        wg = fold_workgroup_size(mod, opts["workgroup_size"], mod.constants)
        grid = fold_grid(mod, opts["grid"], mod.constants)
        variants = (
            self._variants_literal(mod, opts["variants"]) if opts["variants"] is not None else {}
        )
        free = self._any_length(mod, opts["any_length"])
        mod.kernels[node.name] = KernelDef(
            node.name,
            node,
            wg,
            grid,
            variants,
            opts["variants"],
            free,
            opts["shared_bytes"],
            opts["workgroup_size"],
            opts["grid"],
        )

    def _any_length(self, mod, node) -> tuple:
        # any_length="bias" or ("bias", "table"): parameter names as string literals.
        if node is None:
            return ()
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for item in items:
            if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                raise mod.source.error(
                    item,
                    "any_length entries are buffer parameter names as strings",
                    'write e.g. any_length="bias" or any_length=("bias", "table")',
                )
            if item.value in [name for name, _ in out]:
                raise mod.source.error(
                    item, f"any_length names '{item.value}' twice", "keep one of them"
                )
            out.append((item.value, item))
        return tuple(out)

    def _variants_literal(self, mod, node) -> dict:
        src, env = mod.source, mod.constants
        if not isinstance(node, ast.Dict):
            raise src.error(
                node,
                "variants must be a dict literal",
                'write variants={"f32": {"T": f32}, "i32": {"T": i32}}',
            )
        out = {}
        for k, v in zip(node.keys, node.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise src.error(
                    k if k is not None else node,
                    "variant names must be strings",
                    'quote each name: variants={"f32": {"T": f32}}',
                )
            if not isinstance(v, ast.Dict):
                raise src.error(
                    v,
                    f"variant '{short(k.value)}' must map parameter names to values",
                    'write {"T": f32, "BLOCK": 64}',
                )
            params = {}
            for pk, pv in zip(v.keys, v.values):
                if not (isinstance(pk, ast.Constant) and isinstance(pk.value, str)):
                    raise src.error(
                        pk if pk is not None else v,
                        "variant parameter names must be strings",
                        'quote each name: {"T": f32, "BLOCK": 64}',
                    )
                if isinstance(pv, ast.Name) and pv.id in TYPE_NAMES:
                    params[pk.value] = pv.id
                elif (
                    isinstance(pv, ast.Name)
                    and pv.id not in env
                    or isinstance(pv, ast.Constant)
                    and isinstance(pv.value, str)
                ):
                    text = pv.id if isinstance(pv, ast.Name) else pv.value
                    raise src.error(
                        pv,
                        f"variant value {short(text)!r} is neither a type nor a constant",
                        "use a type name (bool, i32, u32, f32, vec4f, ...) unquoted, "
                        "a number or a module constant",
                    )
                else:
                    params[pk.value] = mod.folder.fold(pv, env)
            out[k.value] = check_variant(src, k, k.value, params)
        return out
