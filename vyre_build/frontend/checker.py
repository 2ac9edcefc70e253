"""KernelChecker: one kernel instantiation (kernel + variant) from `ast` to a typed `Program`.

One `stmt_X` method per supported statement; anything else is rejected by name with a
caret and a fix. Expressions live in expressions.py, calls and helper inlining in calls.py,
control flow (if/for/while/break/continue/return) in control.py.
Guarantee: either a `Program` that passes `Program.validate()`, or a `KernelError`.
"""

from __future__ import annotations

import ast
import difflib
from collections import ChainMap
from dataclasses import dataclass, field

from vyre_build.frontend import ir
from vyre_build.descriptor.types import TYPES
from vyre_build.frontend.calls import CallChecker
from vyre_build.frontend.control import ControlChecker
from vyre_build.core.errors import KernelError
from vyre_build.frontend.constants import effective
from vyre_build.frontend.coop import CoopChecker
from vyre_build.frontend.debug import DebugChecker
from vyre_build.frontend.expressions import ExprChecker
from vyre_build.core.limits import (
    LOCAL_ARRAY_BYTES,
    MAX_BLOCK_NESTING,
    MAX_NESTING,
    MAX_OPERATIONS,
    MAX_SHARED_BYTES,
    PORTABLE_SHARED_BYTES,
    shown,
)
from vyre_build.frontend.memory_order import MemoryOrderChecker
from vyre_build.frontend.module import (
    KernelDef,
    KernelModule,
    fold_grid,
    fold_workgroup_size,
)
from vyre_build.frontend.names import (
    ALL_BUILTINS,
    ARRAY_DECLARATIONS,
    BARRIERS,
    TYPE_NAMES,
)
from vyre_build.frontend.parsing import BLOCKS_FIX, NESTING_FIX
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
_UNSUPPORTED_STMT_FIX = {
    "With": "kernels have no context managers",
    "Try": "kernels have no exceptions",
    "Raise": "kernels have no exceptions; return early instead",
    "Delete": "remove the del",
    "Global": "use a module constant or a parameter",
    "Nonlocal": "use a parameter",
    "FunctionDef": "define helpers at module level",
    "ClassDef": "kernels have no classes",
    "Import": "import at module level",
    "ImportFrom": "import at module level",
    "Match": "use if/elif/else",
    "AsyncFor": "kernels are not async",
    "AsyncWith": "kernels are not async",
    "AsyncFunctionDef": "kernels are not async",
    "TypeAlias": "use a variant parameter",
}
_AUG = {
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.BitAnd,
    ast.BitOr,
    ast.BitXor,
    ast.LShift,
    ast.RShift,
}


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def _element_bytes(ty: str) -> int:
    return TYPES[ty].size  # f16 two bytes, vec4f sixteen


def snippet(src, node) -> str:
    """The source text of `node` for a message, shortened (no recursion, unlike unparse)."""
    text = ast.get_source_segment(src.text, node) or type(node).__name__
    return shown(" ".join(text.split()))


def zero_value(ty: str):
    """The zero of a type (false, 0, 0.0, or a vector of zeros)."""
    elem = ir.element(ty)
    zero = ir.Const(elem, False if elem == "bool" else 0.0 if elem in ir.FLOAT else 0)
    return ir.Splat(zero, ty) if ty in ir.VECTORS else zero


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
    ExprChecker, CallChecker, CoopChecker, ControlChecker, DebugChecker, MemoryOrderChecker
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
        constants at load) as this instance sees it: folded again by `fold` (module.py's
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

    # -- statements -------------------------------------------------------------------
    def statements(self, stmts, top=False):
        for s in stmts:
            start = len(self.block)
            self.statement(s, top)
            src = self.src
            for node in self.block[start:]:  # where each IR statement came from (uniformity);
                self.where.setdefault(id(node), (src, s, node))  # holding node keeps its id unique

    def statement(self, s, top):
        self.ops += 1
        if self.ops > MAX_OPERATIONS:
            raise self.too_large(s)
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            kind = type(s).__name__
            raise self.err(
                s,
                f"'{kind}' statements are not supported in kernels",
                _UNSUPPORTED_STMT_FIX.get(kind, "see docs/language.md"),
            )
        method(s, top) if type(s).__name__ == "Assign" else method(s)

    def sub_block(self, stmts, loop=False) -> tuple:
        saved, self.block = self.block, []
        if loop:
            self.frame.loop_depth += 1
        self.enter_block(stmts[0] if stmts else None)
        try:
            self.statements(stmts)
            return tuple(self.block)
        finally:
            self.leave_block()
            if loop:
                self.frame.loop_depth -= 1
            self.block = saved

    def stmt_Pass(self, node):
        pass

    def stmt_Expr(self, node):
        v = node.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return
        if not isinstance(v, ast.Call):
            raise self.err(node, "this expression has no effect", "assign it or remove it")
        if isinstance(v.func, ast.Name) and v.func.id == "print" and "print" not in self.frame.vars:
            return self.debug_print(v)
        if (
            isinstance(v.func, ast.Name)
            and v.func.id in BARRIERS
            and v.func.id not in self.frame.vars
        ):
            return self.builtin_barrier(v, v.func.id)
        e = self.expr_Call(v, statement=True)
        if isinstance(e, ir.Atomic):
            self.frame.effects = True
            self.block.append(ir.Eval(e))
        elif isinstance(e, (ir.CoopStore, ir.Fence)):
            self.block.append(e)

    def stmt_Assign(self, node, top=False):
        if len(node.targets) != 1:
            raise self.err(node, "chained assignment is not supported", "assign one name at a time")
        target = node.targets[0]
        v = node.value
        if (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Name)
            and v.func.id in ARRAY_DECLARATIONS
            and v.func.id not in self.frame.vars
        ):
            return self.declare_array(node, target, v, top)
        self.assign(node, target, lambda ty: self.typed(v, ty))

    def declare_array(self, node, target, call, top):
        kind = call.func.id
        if not top or self.frame.helper is not None:
            raise self.err(
                call,
                f"{kind}(...) must be at the top level of a kernel body",
                "declare arrays before any if/for/while",
            )
        if not isinstance(target, ast.Name):
            raise self.err(
                target, f"assign {kind}(...) to a plain name", f"write: tile = {kind}(f32, 256)"
            )
        self.nargs(call, kind, 2)
        ty = self.resolve_type(call.args[0])
        if ty == "bool":
            raise self.err(call.args[0], "arrays of bool are not supported", "use u32 with 0/1")
        n = self.expr(call.args[1])
        if not (isinstance(n, ir.Const) and n.ty in ("int", "u32", "i32")) or n.value < 1:
            raise self.err(
                call.args[1],
                f"{kind} size must be a positive constant integer",
                "use a literal or a module constant",
            )
        nbytes = n.value * _element_bytes(ty)
        total = nbytes + (self.shared_bytes() if kind == "shared" else 0)
        cap = LOCAL_ARRAY_BYTES
        if kind == "shared":
            cap = self.declared_shared or PORTABLE_SHARED_BYTES
        if total > cap:
            what = "a local array (per invocation)"
            fix = "use fewer or smaller elements"
            if kind == "shared" and self.declared_shared is None:
                what = "workgroup memory (all shared arrays of a kernel; the portable default)"
                fix = (
                    "use fewer or smaller elements, or declare more with "
                    f"@kernel(shared_bytes={_round_up(total, 1024)}) (the runtime then refuses "
                    "the kernel on a device with less)"
                )
            elif kind == "shared":
                what = "workgroup memory the kernel declares (shared_bytes)"
                fix = f"use fewer or smaller elements, or declare more (up to {MAX_SHARED_BYTES})"
            raise self.err(
                call.args[1],
                f"{kind} memory limit exceeded: {total} bytes, more than the {cap} bytes of {what}",
                fix,
            )
        name = target.id
        if name in self.frame.vars or name in self.frame.arrays or name in self.frame.scalars:
            raise self.err(target, f"'{name}' is already defined", "use a new name for the array")
        irname = self.unique(name)
        self.arrays[irname] = ir.ArrayDecl(
            irname, ty, n.value, "shared" if kind == "shared" else "local"
        )
        self.frame.arrays[name] = irname

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

    def shared_bytes(self) -> int:
        return sum(
            a.count * _element_bytes(a.dtype) for a in self.arrays.values() if a.space == "shared"
        )

    def assign(self, node, target, value_fn, ann_ty=None):
        f = self.frame
        if isinstance(target, ast.Subscript):
            arr = self.array_name(target.value)
            idx = self.index(target.slice)
            self.check_access(target.value, arr, "write")
            self.check_const_index(target, arr, idx)
            f.effects = True
            value = value_fn(self.element_type(arr))
            self.block.append(ir.Store(arr, idx, value, self.site(target)))
            return
        if isinstance(target, ast.Attribute):
            raise self.err(
                target,
                "vector components cannot be assigned one by one",
                "build a new vector, e.g. v = vec4f(x, v.y, v.z, v.w)",
            )
        if not isinstance(target, ast.Name):
            raise self.err(
                target,
                "only names and buffer elements can be assigned",
                "assign one name at a time: a = ...; b = ...",
            )
        name = target.id
        if name in f.scalars or (name in f.arrays) or name in f.loops:
            what = (
                "kernel parameter"
                if name in f.scalars
                else "array"
                if name in f.arrays
                else "loop variable"
            )
            raise self.err(
                target,
                f"cannot assign to {what} '{name}'",
                "copy it into a new local variable first",
            )
        if name in TYPE_NAMES or name in ALL_BUILTINS:
            raise self.err(
                target, f"'{name}' is a builtin and cannot be reassigned", "choose another name"
            )
        if name in f.vars:
            irname, ty = f.vars[name]
            if ann_ty is not None and ann_ty != ty:
                raise self.err(
                    target, f"'{name}' is already a {ty}", "use a new name for a new type"
                )
            value = value_fn(ty)
        else:
            value = value_fn(ann_ty)
            irname = self.declare(name, value.ty, target)
        self.block.append(ir.Assign(irname, value))

    def stmt_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.err(
                node.target,
                "only plain names can be annotated",
                f"drop the annotation: {ast.unparse(node.target)} = ...",
            )
        ty = self.resolve_type(node.annotation)
        if node.value is None:
            name = node.target.id
            if name in self.frame.vars:
                raise self.err(
                    node.target,
                    f"'{name}' is already declared",
                    f"assign it without the annotation ({name} = ...), or use a new name",
                )
            irname = self.declare(name, ty, node.target)
            self.block.append(ir.Assign(irname, zero_value(ty)))
            return
        self.assign(node, node.target, lambda t: self.typed(node.value, t), ann_ty=ty)

    def stmt_AugAssign(self, node):
        if type(node.op) not in _AUG:
            t = ast.unparse(node.target)
            raise self.err(
                node,
                f"augmented operator '{type(node.op).__name__}' is not supported",
                f"write it out: {t} = {t} ** {ast.unparse(node.value)}"
                if isinstance(node.op, ast.Pow)
                else "use one of += -= *= /= //= %= &= |= ^= <<= >>=",
            )
        target = node.target
        if not isinstance(target, (ast.Name, ast.Subscript)):
            raise self.err(
                target,
                "only a local variable or a buffer element (buf[i]) can be updated in place",
                "write v = vec4f(...) to change a vector",
            )
        if isinstance(target, ast.Subscript) and not isinstance(
            target.slice, (ast.Name, ast.Constant)
        ):
            # Evaluate a computed index once.
            tmp = ast.Name(id=self.unique("_idx"), ctx=ast.Store())
            ast.copy_location(tmp, target.slice)
            self.assign(node, tmp, lambda t: self.index(target.slice))
            target = ast.Subscript(
                value=target.value, slice=ast.Name(id=tmp.id, ctx=ast.Load()), ctx=ast.Store()
            )
            ast.copy_location(target, node.target)
            ast.copy_location(target.slice, node.target.slice)
        load = ast.copy_location(
            ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load())
            if isinstance(target, ast.Subscript)
            else ast.Name(id=target.id, ctx=ast.Load()),
            node.target,
        )
        binop = ast.copy_location(ast.BinOp(left=load, op=node.op, right=node.value), node)
        if isinstance(target, ast.Name) and target.id not in self.frame.vars:
            raise self.unknown(target, target.id)
        self.assign(node, target, lambda t: self.typed(binop, t))
