"""KernelChecker: one kernel instantiation (kernel + variant) from `ast` to a typed `Program`.

This module holds the checker's state and plumbing (frames, fresh names, the size and
nesting limits), the types annotations name, which names may be indexed, and `check()`, which
checks the kernel's signature and body and then its uniformity. The rest are mixins, one a
module: statements in statements.py, the @kernel options and variant bindings in options.py,
expressions in expressions.py (operators in operators.py), calls in calls.py (builtin
handlers in builtin_calls.py, helper inlining in inlining.py), control flow
(if/for/while/break/continue/return) in control.py, plus coop.py, debug.py and
memory_order.py.
Guarantee: either a `Program` that passes `Program.validate()`, or a `KernelError`.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field

from vyre_build.frontend import ir
from vyre_build.frontend.builtin_calls import BuiltinCallChecker
from vyre_build.frontend.calls import CallChecker
from vyre_build.frontend.control import ControlChecker
from vyre_build.frontend.coop import CoopChecker
from vyre_build.frontend.debug import DebugChecker
from vyre_build.frontend.declarations import (
    KernelDef,
    KernelModule,
    fold_grid,
    fold_workgroup_size,
)
from vyre_build.frontend.expressions import ExprChecker
from vyre_build.frontend.inlining import HelperInliner
from vyre_build.core.limits import (
    MAX_BLOCK_NESTING,
    MAX_NESTING,
    MAX_OPERATIONS,
    shown,
)
from vyre_build.frontend.memory_order import MemoryOrderChecker
from vyre_build.frontend.names import TYPE_NAMES
from vyre_build.frontend.operators import OperatorChecker
from vyre_build.frontend.options import OptionsChecker
from vyre_build.frontend.parsing import BLOCKS_FIX, NESTING_FIX
from vyre_build.frontend.statements import StatementChecker
from vyre_build.frontend.uniformity import check_uniformity

_ACCESS = ("r", "w", "rw")
# What an unknown type's fix lists: every type of the table, the scalars, then the vectors
# in the README's order (f, i, u, then the f16 ones h, then bf16's; 2 before 4).
_VECTOR_ORDER = sorted(ir.VECTORS, key=lambda v: (v.endswith("bf"), v.endswith("h"), v[-1], v[3]))
# Python's and other languages' names of a type the language has at another width or name.
_NEAREST_TYPE = {"float": "f32", "f64": "f32", "double": "f32", "half": "f16", "int": "i32"}
_NEAREST_TYPE |= {"i64": "i32", "u64": "u32", "i16": "i32", "u16": "u32", "i8": "i32"}
_NEAREST_TYPE |= {"u8": "u32"}
TYPE_LIST = (
    f"types are {', '.join(ir.SCALARS)}, {'/'.join(_VECTOR_ORDER)} (or a variant type parameter)"
)


def snippet(src, node) -> str:
    """The source text of `node` for a message, shortened (no recursion, unlike unparse)."""
    text = ast.get_source_segment(src.text, node) or type(node).__name__
    return shown(" ".join(text.split()))


@dataclass
class Frame:
    module: KernelModule
    helper: str | None = None
    vars: dict = field(default_factory=dict)  # source name -> (ir name, type)
    arrays: dict = field(default_factory=dict)  # source name -> array name in the program
    scalars: dict = field(default_factory=dict)  # source name -> ir.Param
    loops: dict = field(default_factory=dict)  # source name -> ir.LoopVar
    loop_depth: int = 0
    ret_var: str | None = None
    ret_type: str | None = None
    wrapped: bool = False
    returned_var: str | None = None  # set when a return sits inside one of the helper's loops
    effects: bool = False


class KernelChecker(
    StatementChecker,
    OptionsChecker,
    ExprChecker,
    OperatorChecker,
    CallChecker,
    BuiltinCallChecker,
    HelperInliner,
    CoopChecker,
    ControlChecker,
    DebugChecker,
    MemoryOrderChecker,
):
    def __init__(
        self,
        module: KernelModule,
        kdef: KernelDef,
        variant: str | None,
        env: dict,
        debug: bool = False,
        debug_dir: str = "",
    ):
        self.debug = debug  # keep print/assert and give accesses bounds-report sites
        self.debug_dir = debug_dir  # what site files are relative to
        self.kdef = kdef
        self.variant = variant
        self.variant_env = {k: v for k, v in env.items()}
        self.used_variant_params: set[str] = set()
        self.variant_constants = None  # this file's constants under the variant, when asked
        self.workgroup_size = kdef.workgroup_size
        self.buffers: dict[str, ir.BufferParam] = {}
        self.arrays: dict[str, ir.ArrayDecl] = {}
        self.locals: dict[str, str] = {}
        self.names: set[str] = set()
        self.frames = [Frame(module)]
        self.block: list = []
        self.inline_stack: list = []
        self.cond_depth = 0
        self.loop_names: set[str] = set()
        self.depth = 0  # expressions and blocks being checked, inside one another
        self.blocks = 0  # blocks being checked, inside one another
        self.ops = 0  # expressions and statements checked so far (helpers inlined)
        self.next_suffix: dict[str, int] = {}
        self.where: dict[int, tuple] = {}  # id(IR statement) -> (Source, ast statement, it)

    # -- plumbing ---------------------------------------------------------------------
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    @property
    def src(self):
        return self.frame.module.source

    def err(self, node, message, fix=None):
        return self.src.error(node, message, fix)

    def new_frame(self, module, helper=None) -> Frame:
        return Frame(module, helper=helper)

    def unique(self, base: str) -> str:
        # Names only accumulate, so the search resumes where it last stopped for this base.
        name, n = base, self.next_suffix.get(base, 1)
        if name in self.names:
            name = f"{base}_{n}"
            while name in self.names:
                n += 1
                name = f"{base}_{n}"
            self.next_suffix[base] = n + 1
        self.names.add(name)
        return name

    # -- limits -----------------------------------------------------------------------
    def too_large(self, node, helper: str | None = None):
        what = (
            f"inlining helper '{helper}' here makes kernel '{self.kdef.name}' larger"
            if helper
            else f"kernel '{self.kdef.name}' is larger"
        )
        return self.err(
            node,
            f"{what} than {MAX_OPERATIONS} operations once helpers are inlined and unroll() "
            "bodies copied (the limit)",
            "call large helpers fewer times (one call inside a loop rather than many calls), "
            "unroll fewer copies, or split the kernel",
        )

    def too_deep(self, node, extra: int = 0):
        """Raise if `extra` more levels below the current depth pass the nesting limit."""
        if self.depth + extra > MAX_NESTING:
            raise self.err(
                node,
                f"nesting deeper than {MAX_NESTING} levels (the limit; helpers count "
                "where they are inlined)",
                NESTING_FIX,
            )

    def enter_block(self, node) -> None:
        self.depth += 1
        self.blocks += 1
        if self.blocks > MAX_BLOCK_NESTING:
            raise self.err(
                node,
                f"blocks nested deeper than {MAX_BLOCK_NESTING} (the limit; an elif nests in "
                "the if before it, a helper that returns early counts where it is inlined)",
                BLOCKS_FIX,
            )
        self.too_deep(node)

    def leave_block(self) -> None:
        self.depth -= 1
        self.blocks -= 1

    def fresh_local(self, base: str, ty: str) -> str:
        name = self.unique(base)
        self.locals[name] = ty
        return name

    def declare(self, name: str, ty: str, node) -> str:
        prefix = f"{self.frame.helper}_" if self.frame.helper else ""
        irname = self.fresh_local(prefix + name, ty)
        self.frame.vars[name] = (irname, ty)
        return irname

    def resolve_type(self, node, module=None) -> str:
        module = module or self.frame.module
        if isinstance(node, ast.Name):
            if node.id in TYPE_NAMES:
                return node.id
            if node.id in self.variant_env and isinstance(self.variant_env[node.id], str):
                self.used_variant_params.add(node.id)
                return self.variant_env[node.id]
        if isinstance(node, ast.Constant) and node.value in TYPE_NAMES:
            return node.value
        text = snippet(module.source, node)
        close = [_NEAREST_TYPE[text]] if text in _NEAREST_TYPE else []
        close = close or difflib.get_close_matches(text, TYPE_NAMES, n=1)
        raise module.source.error(
            node,
            f"unknown type '{text}'",
            (f"did you mean '{close[0]}'? " if close else "") + TYPE_LIST,
        )

    def resolve_param_type(self, ann, module):
        """-> ("buffer", dtype, access) or ("scalar", dtype, None)."""
        src = module.source
        if (
            isinstance(ann, ast.Subscript)
            and isinstance(ann.value, ast.Name)
            and ann.value.id == "Buffer"
        ):
            items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            if not 1 <= len(items) <= 2:
                raise src.error(
                    ann,
                    "Buffer takes an element type and an optional access mode",
                    'write Buffer[f32] or Buffer[f32, "rw"]',
                )
            ty = self.resolve_type(items[0], module)
            if ty == "bool":
                raise src.error(items[0], "buffers cannot hold bool", "use u32 with 0/1")
            access = "r"
            if len(items) == 2:
                a = items[1]
                if not (isinstance(a, ast.Constant) and a.value in _ACCESS):
                    raise src.error(
                        a,
                        f"unknown buffer access mode {snippet(src, a)}",
                        'use "r" (read), "w" (write) or "rw" (read-write)',
                    )
                access = a.value
            return "buffer", ty, access
        if isinstance(ann, ast.Name) and ann.id == "Buffer":
            raise src.error(ann, "Buffer needs an element type", "write Buffer[f32]")
        return "scalar", self.resolve_type(ann, module), None

    def array_name(self, node) -> str:
        if isinstance(node, ast.Name) and node.id in self.frame.arrays:
            return self.frame.arrays[node.id]
        if isinstance(node, ast.Name):
            if (
                node.id in self.frame.vars
                or node.id in self.frame.scalars
                or node.id in self.frame.loops
            ):
                ty = self.frame.vars.get(node.id, (None, None))[1]
                if ty in ir.VECTORS:
                    raise self.err(
                        node,
                        f"'{node.id}' is a {ty}, not an array or buffer",
                        "read its components with .x .y .z .w",
                    )
                raise self.err(
                    node,
                    f"'{node.id}' is a scalar, not an array or buffer",
                    "index a buffer or a shared/local array",
                )
            raise self.unknown(node, node.id)
        raise self.err(
            node,
            "only named buffers and arrays can be indexed",
            "index a buffer parameter or a shared/local array by name",
        )

    def element_type(self, arr: str) -> str:
        return self.buffers[arr].dtype if arr in self.buffers else self.arrays[arr].dtype

    def check_access(self, node, arr: str, how: str) -> None:
        b = self.buffers.get(arr)
        if b is None:
            return
        if how in ("write", "atomic", "readwrite") and b.access == "r":
            raise self.err(
                node,
                f"buffer '{arr}' is read-only",
                f'declare it as Buffer[{b.dtype}, "rw"]'
                if how != "write"
                else f'declare it as Buffer[{b.dtype}, "w"] or "rw"',
            )
        if how in ("read", "atomic", "readwrite") and b.access == "w":
            raise self.err(
                node,
                f"buffer '{arr}' is write-only and cannot be read",
                f'declare it as Buffer[{b.dtype}, "rw"]',
            )
        if how in ("write", "atomic", "readwrite"):
            self.frame.effects = True

    # -- the kernel -------------------------------------------------------------------
    def check(self) -> ir.Program:
        fn = self.kdef.node
        self.declared_shared = self.shared_declaration()
        self.workgroup_size = self.decorator_option(
            "workgroup_size",
            self.kdef.workgroup_size_node,
            self.kdef.workgroup_size,
            fold_workgroup_size,
        )
        self.grid_entries = self.decorator_option(
            "grid", self.kdef.grid_node, self.kdef.grid, fold_grid
        )
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.err(
                fn,
                f"kernel '{fn.name}' may only have plain typed parameters",
                "remove *args, **kwargs, defaults and keyword-only parameters",
            )
        if fn.returns is not None and not (
            isinstance(fn.returns, ast.Constant) and fn.returns.value is None
        ):
            raise self.err(fn.returns, "kernels return nothing", "write results into a buffer")
        params = []
        for arg in a.args:
            if arg.annotation is None:
                raise self.err(
                    arg,
                    f"kernel parameter '{arg.arg}' has no type",
                    f"annotate it, e.g. {arg.arg}: Buffer[f32] or {arg.arg}: u32",
                )
            if arg.arg in self.names:
                raise self.err(
                    arg,
                    f"parameter '{arg.arg}' is declared twice",
                    "give each parameter its own name",
                )
            kind, ty, access = self.resolve_param_type(arg.annotation, self.frame.module)
            self.names.add(arg.arg)
            if kind == "buffer":
                p = ir.BufferParam(arg.arg, ty, access)
                self.buffers[arg.arg] = p
                self.frame.arrays[arg.arg] = arg.arg
            else:
                if ty in ir.VECTORS:
                    raise self.err(
                        arg.annotation,
                        f"kernel parameter '{arg.arg}' cannot be a vector "
                        "(uniform blocks hold scalars)",
                        f"pass its components as scalars, or use a Buffer[{ty}]",
                    )
                if ty == "bool":
                    raise self.err(
                        arg.annotation,
                        f"scalar parameter '{arg.arg}' cannot be bool "
                        "(uniform blocks hold 32-bit values)",
                        f"take a u32 and test it: {arg.arg}: u32 ... if {arg.arg} != 0:",
                    )
                if ty in ("f16", "bf16"):
                    raise self.err(
                        arg.annotation,
                        f"scalar parameter '{arg.arg}' cannot be {ty} "
                        "(uniform blocks hold 32-bit values)",
                        f"take an f32 and convert it: {arg.arg}: f32 ... {ty}({arg.arg})",
                    )
                p = ir.ScalarParam(arg.arg, ty)
                self.frame.scalars[arg.arg] = ir.Param(arg.arg, ty)
            params.append(p)
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        self.statements(body, top=True)
        self.check_variant_use()
        grid = self.grid(params)
        free = self.any_length(params)
        prog = ir.Program(
            name=fn.name,
            variant=self.variant,
            workgroup_size=self.workgroup_size,
            params=tuple(params),
            arrays=tuple(self.arrays.values()),
            locals=tuple(self.locals.items()),
            body=tuple(self.block),
            grid=grid,
            variant_values=tuple(
                sorted(
                    (k, v if isinstance(v, str) else repr(v.value))
                    for k, v in self.variant_env.items()
                )
            ),
            any_length=free,
            shared_bytes=self.declared_shared,
        )
        prog.validate()
        check_uniformity(prog, self.where)
        return prog
