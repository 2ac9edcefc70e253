"""The @kernel(...) options of one kernel instance, and its variant's bindings (a mixin of
`KernelChecker`).

`OptionsChecker` folds workgroup_size, grid and shared_bytes again where the variant binds
a name they read (directly or through constants of the kernel's own file, which are
refolded with the variant's bindings: frontend/constants.py), checks the grid's entries and
any_length's names against the kernel's parameters, and refuses a variant binding the kernel
never reads. Guarantees: an option the variant leaves alone keeps the value folded at load;
an error only the variant's values cause names the variant and what it sets; every error is
a KernelError at the option (or the unused binding), with the fix.
"""

from __future__ import annotations

import ast
from collections import ChainMap

from vyre_build.frontend import ir
from vyre_build.core.errors import KernelError
from vyre_build.frontend.constants import effective
from vyre_build.core.limits import MAX_SHARED_BYTES, PORTABLE_SHARED_BYTES, shown


class OptionsChecker:
    """Mixin: the @kernel options and variant bindings for KernelChecker."""

    def module_constant(self, module, name: str):
        """Module constant `name` of `module` as this kernel instance sees it: a constant of
        the kernel's own file that reads a name the variant binds is refolded with the
        variant's bindings (frontend/constants.py); any other keeps its folded value."""
        if self.variant_env and module is self.frames[0].module:
            value, bound = self.own_constant(name)
            if value is not None:
                self.used_variant_params |= bound
                return value
        return module.constants.get(name)

    def own_constant(self, name: str) -> tuple:
        """(value under the variant, bound names it reads) of constant `name` of the kernel's
        file where it reads a name the variant binds; (None, empty) where it does not."""
        if self.variant_constants is None:
            self.variant_constants = effective(
                self.frames[0].module, self.variant_env, self.kdef.name, self.variant
            )
        return self.variant_constants.lookup(name)

    def decorator_option(self, what: str, node, folded, fold):
        """The @kernel option `what` (expression `node`, `folded` with the module's
        constants at load) as this instance sees it: folded again by `fold` (declarations.py's
        fold_workgroup_size or fold_grid) where the variant binds a name it reads, directly or
        through constants of the kernel's file; an error only the variant's values cause
        names the variant."""
        if node is None or not self.variant_env:
            return folded
        module = self.frames[0].module
        local: dict = {}
        bound: set[str] = set()
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Name):
                continue
            if sub.id in self.variant_env:
                value = self.variant_env[sub.id]
                if isinstance(value, str):
                    raise self.err(
                        sub,
                        f"'{sub.id}' is a type ({value}), not a number "
                        f"({what} under variant '{self.variant}' of kernel '{self.kdef.name}')",
                        f"bind a number to {sub.id} in variant '{self.variant}', or give the "
                        f"type parameter a name {what} does not read",
                    )
                local[sub.id] = value
                bound.add(sub.id)
            elif sub.id in module.const_defs:
                value, reads = self.own_constant(sub.id)
                if value is not None:
                    local[sub.id] = value
                    bound |= reads
        if not bound:
            return folded
        self.used_variant_params |= bound
        try:
            return fold(module, node, ChainMap(local, module.constants))
        except KernelError as e:
            sets = ", ".join(
                f"{k} = {shown(repr(v.value))}"
                for k, v in sorted(self.variant_env.items())
                if k in bound
            )
            change = f"change {', '.join(sorted(bound))} in variant '{self.variant}'"
            raise KernelError(
                f"{e.message} ({what} under variant '{self.variant}' of kernel "
                f"'{self.kdef.name}', which sets {sets})",
                e.path,
                e.line,
                e.col,
                e.source_line,
                f"{e.fix}, or {change}" if e.fix else change,
                e.end_col,
            ) from None

    def shared_declaration(self) -> int | None:
        """The value of @kernel(shared_bytes=...), folded with the module's constants and
        this variant's (a variant may set it), or None where the kernel declares none."""
        node = self.kdef.shared_bytes
        if node is None:
            return None
        module = self.frames[0].module
        env = dict(module.constants)
        for name, value in self.variant_env.items():
            if isinstance(value, ir.Const):
                env[name] = value
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.variant_env:
                self.used_variant_params.add(sub.id)
            elif isinstance(sub, ast.Name) and sub.id in module.constants:
                env[sub.id] = self.module_constant(module, sub.id)
        if isinstance(node, ast.Name) and node.id not in env:
            raise self.err(
                node,
                f"shared_bytes names '{shown(node.id)}', which is neither a module constant "
                "nor a parameter of this variant",
                "write a number of bytes, e.g. shared_bytes=49152, or a constant",
            )
        got = module.folder.fold(node, env)
        if got.ty != "int" or not PORTABLE_SHARED_BYTES <= got.value <= MAX_SHARED_BYTES:
            value = got.value if got.ty == "int" else f"{got.value!r} ({got.ty})"
            raise self.err(
                node,
                f"shared_bytes must be an integer from {PORTABLE_SHARED_BYTES} (the portable "
                f"default) to {MAX_SHARED_BYTES}, got {value}",
                "write the bytes of shared memory the kernel needs, e.g. shared_bytes=49152",
            )
        return got.value

    def check_variant_use(self):
        unused = sorted(set(self.variant_env) - self.used_variant_params)
        if unused:
            node = self.kdef.variant_param_pos.get(
                (self.variant, unused[0]), self.kdef.variants_node
            )
            src = getattr(self.kdef, "variants_source", self.frame.module.source)
            raise src.error(
                node,
                f"variant '{self.variant}' sets {', '.join(unused)}, which kernel "
                f"'{self.kdef.name}' never uses",
                "remove it or use it in the kernel",
            )

    def any_length(self, params) -> tuple:
        """The names of @kernel(any_length=...), each a read-only buffer parameter."""
        names = {p.name: p for p in params}
        buffers = [n for n, q in names.items() if isinstance(q, ir.BufferParam)]
        for name, node in self.kdef.any_length:
            p = names.get(name)
            if not isinstance(p, ir.BufferParam):
                raise self.err(
                    node,
                    f"any_length entry '{name}' is not a buffer parameter of kernel "
                    f"'{self.kdef.name}'",
                    f"buffer parameters: {', '.join(buffers) or 'none'}",
                )
            if p.access != "r":
                raise self.err(
                    node,
                    f"any_length entry '{name}' is a written buffer (access \"{p.access}\"); "
                    "only read-only buffers are held to the grid's length",
                    f"remove '{name}' from any_length",
                )
        return tuple(name for name, _ in self.kdef.any_length)

    def grid(self, params) -> tuple:
        names = {p.name: p for p in params}
        grid = self.grid_entries
        for entry in grid:
            if isinstance(entry, int):
                if entry < 1:
                    raise self.err(
                        self.kdef.node,
                        f"grid entry {entry} must be positive",
                        "give each axis a count of at least 1",
                    )
                continue
            p = names.get(entry)
            if p is None or (isinstance(p, ir.ScalarParam) and p.dtype not in ir.INTEGER):
                raise self.err(
                    self.grid_entry_node(entry),
                    f"grid entry '{entry}' is not a buffer or an integer "
                    f"parameter of kernel '{self.kdef.name}'",
                    f"parameters: {', '.join(names) or 'none'}",
                )
        if not grid:
            written = [p.name for p in params if isinstance(p, ir.BufferParam) and p.access != "r"]
            if not written:
                raise self.err(
                    self.kdef.node,
                    f"kernel '{self.kdef.name}' writes no buffer, so its default grid is unknown",
                    'declare an output Buffer[T, "w"] or give grid=',
                )
            grid = (written[0],)
        return tuple(grid)

    def grid_entry_node(self, entry: str):
        """Where grid entry `entry` (a name) is written in @kernel(grid=...), else the def."""
        node = self.kdef.grid_node
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        return next(
            (n for n in items if isinstance(n, ast.Constant) and n.value == entry),
            self.kdef.node,
        )
