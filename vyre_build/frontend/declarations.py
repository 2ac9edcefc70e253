"""The declarations of a kernel file: `KernelModule` (what a loaded file holds),
`KernelDef` (one `@kernel` function) and the `@kernel(...)` decorator read into a KernelDef.

`KernelDeclarations` is a mixin of `ModuleLoader` (module.py): `_function` takes a
module-level def, a helper without a decorator or a kernel with `@kernel(...)`, whose
options (workgroup_size, grid, variants, any_length, shared_bytes) it reads;
`fold_workgroup_size` and `fold_grid` fold those two options (again for each variant that
binds a name they read: options.py). Guarantees: a kernel's name is a file-name stem, its
workgroup size within the portable limits, its grid 1 to 3 entries of u32 counts or
parameter names, its variants checked; every problem is a `KernelError` with a caret and a
fix.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from vyre_build.frontend.folding import ConstantFolder
from vyre_build.core.limits import shown as short
from vyre_build.frontend.names import TYPE_NAMES
from vyre_build.frontend.source import Source
from vyre_build.frontend.variants import check_variant
from vyre_build.frontend.ir import Const

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


class KernelDeclarations:
    """Mixin: the @kernel declarations of ModuleLoader."""

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
