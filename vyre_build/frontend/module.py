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
import warnings
from dataclasses import dataclass

from vyre_build.errors import KernelError
from vyre_build.frontend.source import Source
from vyre_build.frontend.variants import check_variant, yaml_variants
from vyre_build.ir import SCALARS, TYPES, Const

LANG_MODULE = "vyre_build.lang"
TYPE_NAMES = TYPES  # scalars and vectors
SCALAR_NAMES = SCALARS
MAX_INVOCATIONS = 256
MAX_WG = (256, 256, 64)


@dataclass
class KernelDef:
    name: str
    node: ast.FunctionDef
    workgroup_size: tuple[int, int, int]
    grid: tuple  # int | str per axis
    variants: dict[str, dict]  # variant name -> {param: Const | type name}
    variants_node: object  # where variants were declared (for errors)


@dataclass
class KernelModule:
    source: Source
    path: str  # real filesystem path
    constants: dict[str, Const]
    helpers: dict[str, tuple]  # name -> (KernelModule, FunctionDef)
    kernels: dict[str, KernelDef]
    imported: dict[str, tuple]  # local name -> (KernelModule, name in that module)
    dependencies: list[str]  # real paths of every file read for this module


def fold_constant(src: Source, node, env: dict[str, Const]) -> Const:
    """Evaluate a module-level constant expression (ints, floats, + - * // % << >> & | ^ ~)."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        v = node.value
        return Const("bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "f32", v)
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise src.error(
            node,
            f"unknown constant '{node.id}'",
            "define it above as a module constant (NAME = 123)",
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        v = fold_constant(src, node.operand, env)
        if isinstance(node.op, ast.Invert):
            if v.ty != "int":
                raise src.error(node, "'~' needs an integer constant")
            return Const("int", ~v.value)
        return Const(v.ty, -v.value if isinstance(node.op, ast.USub) else v.value)
    if isinstance(node, ast.BinOp):
        a, b = fold_constant(src, node.left, env), fold_constant(src, node.right, env)
        return fold_binary(src, node, type(node.op), a, b)
    raise src.error(
        node,
        "module constants must be numbers or arithmetic on other constants",
        "write e.g. N = 256 or TILE2 = TILE * TILE",
    )


def fold_binary(src: Source, node, op, a: Const, b: Const) -> Const:
    ints = a.ty == "int" and b.ty == "int"
    x, y = a.value, b.value
    try:
        if op is ast.Add:
            v = x + y
        elif op is ast.Sub:
            v = x - y
        elif op is ast.Mult:
            v = x * y
        elif op is ast.Div:
            if ints:
                raise src.error(node, "'/' is float division", "use '//' for integer division")
            v = x / y
        elif op is ast.FloorDiv and ints:
            v = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        elif op is ast.Mod and ints:
            v = x - y * (abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1))
        elif op is ast.Pow and ints and 0 <= y <= 64:
            v = x**y
        elif op in (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor) and ints:
            v = {
                ast.LShift: lambda: x << (y & 31) if y >= 0 else 0,
                ast.RShift: lambda: x >> (y & 31),
                ast.BitAnd: lambda: x & y,
                ast.BitOr: lambda: x | y,
                ast.BitXor: lambda: x ^ y,
            }[op]()
        else:
            raise src.error(
                node,
                f"operator {op.__name__} is not supported on constants of type {a.ty} and {b.ty}",
                "use + - * // % << >> & | ^ on integers",
            )
    except ZeroDivisionError:
        raise src.error(
            node, "division by zero in a constant expression", "check the divisor"
        ) from None
    if not ints and not (a.ty in ("int", "f32") and b.ty in ("int", "f32")):
        raise src.error(node, f"cannot combine constants of type {a.ty} and {b.ty}")
    if ints:
        return Const("int", v)
    from vyre_build.frontend.types import check_f32

    try:
        return Const("f32", check_f32(src, node, float(v)))
    except OverflowError:
        raise src.error(node, "constant expression overflows f32") from None


class ModuleLoader:
    """Loads kernel files and what they import, once each; detects import cycles."""

    def __init__(self, root: str | None = None, display_root: str | None = None):
        self.root = os.path.abspath(root) if root else None
        self.display_root = display_root
        self.modules: dict[str, KernelModule] = {}
        self.loading: list[str] = []

    def display(self, real: str, given: str | None) -> str:
        if given is not None:
            return given
        base = self.root or os.getcwd()
        rel = os.path.relpath(real, base)
        return real if rel.startswith("..") else rel

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
        if text is None:
            try:
                with open(real, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError) as exc:
                if importer:
                    src, node = importer
                    raise src.error(
                        node,
                        f"cannot read imported kernel file {path}: {exc}",
                        "check the module name and that the file exists",
                    ) from None
                raise KernelError(f"cannot read kernel file: {exc}", path, 1, 1) from None
        src = Source(self.display(real, given), text, text.splitlines())
        self.loading.append(real)
        try:
            module = self._parse(src, real)
        finally:
            self.loading.pop()
        self.modules[real] = module
        return module

    def _parse(self, src: Source, real: str) -> KernelModule:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # no SyntaxWarning noise on the user's terminal
                tree = ast.parse(src.text, filename=src.path)
        except SyntaxError as exc:
            line, col = exc.lineno or 1, exc.offset or 1
            srcline = src.lines[line - 1] if 0 < line <= len(src.lines) else None
            raise KernelError(
                f"invalid syntax: {exc.msg}",
                src.path,
                line,
                col,
                srcline,
                "kernel files must be valid Python syntax",
            ) from None
        mod = KernelModule(src, real, {}, {}, {}, {}, [real])
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
        yaml_variants(mod)
        return mod

    def _import_from(self, mod: KernelModule, node: ast.ImportFrom) -> None:
        src = mod.source
        if node.module == LANG_MODULE and node.level == 0:
            # The language's names are always in scope; the import is for editors, but a
            # name the language does not have is a typo worth reporting.
            from vyre_build.frontend.expressions import ALL_BUILTINS

            known = set(ALL_BUILTINS) | set(TYPE_NAMES) | {"kernel", "Buffer", "bool_", "*"}
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
        target = next((c for c in candidates if os.path.isfile(c)), None)
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
            if alias.name in other.constants:
                mod.constants[local] = other.constants[alias.name]
            else:
                mod.helpers[local] = other.helpers[alias.name]

    def _constant(self, mod: KernelModule, node) -> None:
        src = mod.source
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
            raise src.error(
                node, "a module constant is one name assigned once", "write NAME = value"
            )
        name = targets[0].id
        value = fold_constant(src, node.value, mod.constants)
        if isinstance(node, ast.AnnAssign):
            ann = node.annotation
            ty = ann.id if isinstance(ann, ast.Name) else None
            if ty not in SCALAR_NAMES:
                raise src.error(ann, "a constant's annotation must be bool, i32, u32 or f32")
            from vyre_build.frontend.types import convert_const

            value = convert_const(src, node.value, value, ty)
        if name in mod.constants or name in mod.helpers or name in mod.kernels:
            raise src.error(node, f"'{name}' is defined twice", "give each definition its own name")
        mod.constants[name] = value

    def _function(self, mod: KernelModule, node: ast.FunctionDef) -> None:
        src = mod.source
        if node.name in mod.helpers or node.name in mod.kernels or node.name in mod.constants:
            raise src.error(node, f"'{node.name}' is defined twice", "rename one of them")
        decos = node.decorator_list
        if not decos:
            mod.helpers[node.name] = (mod, node)
            return
        if len(decos) != 1:
            raise src.error(decos[1], "a kernel takes exactly one decorator, @kernel(...)")
        deco = decos[0]
        call = deco if isinstance(deco, ast.Call) else None
        fn = call.func if call else deco
        if not (isinstance(fn, ast.Name) and fn.id == "kernel"):
            raise src.error(deco, "unknown decorator", "kernels are declared with @kernel(...)")
        opts = {"workgroup_size": None, "grid": None, "variants": None}
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
                        "options are workgroup_size, grid and variants",
                    )
                opts[kw.arg] = kw.value
        wg = self._workgroup_size(src, opts["workgroup_size"], mod.constants, deco)
        grid = self._grid(src, opts["grid"], mod.constants)
        variants = (
            self._variants_literal(src, opts["variants"], mod.constants)
            if opts["variants"] is not None
            else {}
        )
        mod.kernels[node.name] = KernelDef(node.name, node, wg, grid, variants, opts["variants"])

    def _workgroup_size(self, src, node, env, deco) -> tuple[int, int, int]:
        if node is None:
            return (64, 1, 1)
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        if not 1 <= len(items) <= 3:
            raise src.error(node, "workgroup_size has 1 to 3 entries")
        sizes = []
        for item in items:
            c = fold_constant(src, item, env)
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

    def _grid(self, src, node, env) -> tuple:
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
                c = fold_constant(src, item, env)
                if c.ty != "int":
                    raise src.error(item, "grid entries are ints or parameter names as strings")
                out.append(c.value)
            else:
                raise src.error(
                    item,
                    "grid entries are ints or parameter names as strings",
                    'write e.g. grid=("cols", "rows")',
                )
        if not 1 <= len(out) <= 3:
            raise src.error(node, "grid has 1 to 3 entries")
        return tuple(out)

    def _variants_literal(self, src, node, env) -> dict:
        if not isinstance(node, ast.Dict):
            raise src.error(
                node,
                "variants must be a dict literal",
                'write variants={"f32": {"T": f32}, "i32": {"T": i32}}',
            )
        out = {}
        for k, v in zip(node.keys, node.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise src.error(k if k is not None else node, "variant names must be strings")
            if not isinstance(v, ast.Dict):
                raise src.error(
                    v,
                    f"variant '{k.value}' must map parameter names to values",
                    'write {"T": f32, "BLOCK": 64}',
                )
            params = {}
            for pk, pv in zip(v.keys, v.values):
                if not (isinstance(pk, ast.Constant) and isinstance(pk.value, str)):
                    raise src.error(
                        pk if pk is not None else v, "variant parameter names must be strings"
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
                        f"variant value {text!r} is neither a type nor a constant",
                        "use a type name (bool, i32, u32, f32, vec4f, ...) unquoted, "
                        "a number or a module constant",
                    )
                else:
                    params[pk.value] = fold_constant(src, pv, env)
            out[k.value] = check_variant(src, k, k.value, params)
        return out
