"""Frontend: kernel source text -> typed `Program`s, or a `KernelError` (file:line:col, caret, fix).

It parses with `ast` and never executes kernel files. Pipeline: `ModuleLoader` reads the
file and what it imports; `KernelChecker` checks each kernel once per variant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vyre_build.frontend.declarations import KernelModule
    from vyre_build.frontend.ir import Program

__all__ = [
    "load_module",
    "check_module",
    "instances",
    "kernel_needs",
    "ModuleLoader",
    "KernelModule",
]


def __getattr__(name: str):
    # The checker loads on first use: vyre_build.lang and the SCons scan's pre-check
    # import parts of the frontend (names, source) without it.
    if name in ("ModuleLoader", "KernelModule"):
        from vyre_build.frontend import module

        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_module(
    path: str, *, root: str | None = None, text: str | None = None, display_path: str | None = None
) -> KernelModule:
    """Parse a kernel file and what it imports, reading only regular files under `root`
    (default: the file's folder); raises KernelError."""
    from vyre_build.frontend.module import ModuleLoader

    return ModuleLoader(root).load(path, text=text, given=display_path)


def instances(
    module: KernelModule, kernel: str | None = None
) -> list[tuple[str, str | None, dict]]:
    """(kernel name, variant name or None, variant env) for every instantiation, sorted."""
    out = []
    for name in sorted(module.kernels):
        if kernel is not None and name != kernel:
            continue
        kdef = module.kernels[name]
        if kdef.variants:
            out.extend((name, v, kdef.variants[v]) for v in sorted(kdef.variants))
        else:
            out.append((name, None, {}))
    return out


def _orders_memory(node) -> bool:
    """Whether call `node` is fence() (whose row needs the Vulkan memory model) or an atomic
    with a literal order other than relaxed."""
    import ast

    from vyre_build.core.features import VULKAN_MEMORY_MODEL
    from vyre_build.frontend.builtins import BUILTINS

    row = BUILTINS.get(node.func.id)
    if row is None:
        return False
    if VULKAN_MEMORY_MODEL in row.features:
        return True
    if row.group not in ("atomics", "memory"):
        return False
    return any(
        kw.arg == "order" and isinstance(kw.value, ast.Constant) and kw.value.value != "relaxed"
        for kw in node.keywords
    )


def kernel_needs(module: KernelModule, kernel: str) -> tuple[str, ...]:
    """The language features (vyre_build.core.targets.NEEDS) kernel `kernel` needs of a target,
    in the order its source first uses them: a target lacking one makes no artifact of it
    (Target.refusal). Decided from the syntax alone, the same at scan and at compile time:
    the kernel or a helper it calls calls a cooperative-matrix builtin (COOPERATIVE_MATRIX),
    or `fence()`, or an atomic with an order other than "relaxed" (MEMORY_ORDER:
    frontend/memory_order.py), or names a bf16 type (bf16, vec2bf, vec4bf, or a variant
    parameter one of its variants sets to one) anywhere, its signature included (BFLOAT16)."""
    import ast

    from vyre_build.core.features import COOPERATIVE_MATRIX as COOPERATIVE_MATRIX_FEATURE
    from vyre_build.frontend.builtins import BUILTINS
    from vyre_build.core.targets import BFLOAT16, COOPERATIVE_MATRIX, MEMORY_ORDER

    from vyre_build.descriptor.types import STORAGE_TYPES

    # the bf16 types by name, and the variant parameters any variant of the kernel sets to one
    storage = STORAGE_TYPES | {
        param
        for _, _, env in instances(module, kernel)
        for param, value in env.items()
        if isinstance(value, str) and value in STORAGE_TYPES
    }
    needs: dict[str, None] = {}
    seen: set[int] = set()
    todo = [(module, module.kernels[kernel].node)]
    while todo:
        mod, fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and node.id in storage:
                needs.setdefault(BFLOAT16)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                name = node.func.id
                row = BUILTINS.get(name)
                if row is not None and COOPERATIVE_MATRIX_FEATURE in row.features:
                    needs.setdefault(COOPERATIVE_MATRIX)
                elif _orders_memory(node):
                    needs.setdefault(MEMORY_ORDER)
                elif name in mod.helpers:
                    todo.append(mod.helpers[name])
    return tuple(needs)


def check_module(
    module: KernelModule, kernel: str | None = None, *, debug: bool = False, debug_dir: str = ""
) -> list[Program]:
    """Check every kernel (and variant) of a module; `kernel` restricts to one name.
    `debug`: keep print/assert and the sites of bounds reports (frontend/debug.py), whose
    files are named relative to `debug_dir` ("kernels": kernels/x.py), else bare."""
    from vyre_build.frontend.checker import KernelChecker

    return [
        KernelChecker(
            module, module.kernels[name], variant, env, debug=debug, debug_dir=debug_dir
        ).check()
        for name, variant, env in instances(module, kernel)
    ]
