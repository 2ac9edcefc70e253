"""How much work compiling a kernel file is, counted from its parse before anything compiles.

Each kernel is checked, lowered and emitted once per variant, so a file costs about its
kernels' operations (expressions and statements, each helper call counting the helper's
inlined size, as `calls.inline_size` counts them) times their variants. `file_work` gives
that count, reading only the syntax trees (linear in the file: each helper is sized once),
and refuses a file whose count passes MAX_FILE_OPERATIONS (README: "Limits"): the compiler
asks it before checking the first kernel, a build's scan (build.parse) before declaring the
file's outputs, and a build step before charging the file to the build-wide budget
(`build.budget`); the count is kept on the module, so these count once. A plain load does
not count.

The count is an upper bound of what the checker counts for a kernel, within a small
factor: `x ** n` counts as the 16 multiplications its largest exponent expands to, and
each kernel at most MAX_OPERATIONS + 1 (the checker refuses a larger one at its first
variant). An `unroll()` whose bounds a variant binds (`unroll(HELD)`, HELD a variant value)
is counted with each variant's value: the variants are counted once per distinct binding
of the names their unroll bounds read (and the names the file's constants among them
read: the checker folds those again per variant), so a kernel whose unrolls no variant
binds is counted once. Counting stops as soon as a file is known to pass the limit.
"""

from __future__ import annotations

import ast
import operator

from vyre_build.core.limits import MAX_FILE_OPERATIONS, MAX_OPERATIONS, MAX_UNROLL

POW_EXPANSION = 16  # '**' takes a constant exponent of at most 16 (operators.py)


Bound = dict | None  # a variant's values ({name: Const | type name}), or None: unknown


def _is_unroll(loop: ast.For) -> bool:
    it = loop.iter
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "unroll"


def _copies(loop: ast.For, module, bound: Bound, shadow: frozenset) -> int:
    """How many copies of its body the checker makes of `loop`: 1 for a range() loop; an
    unroll() loop's count where its bounds are integer literals, values of the variant
    `bound` or this file's folded constants, else MAX_UNROLL (the most the checker
    allows)."""
    if not _is_unroll(loop):
        return 1
    bounds = [_known_int(a, module, bound, shadow) for a in loop.iter.args]
    if not 1 <= len(bounds) <= 3 or None in bounds or len(bounds) == 3 and bounds[2] == 0:
        return MAX_UNROLL
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
    return min(len(range(start, stop, step)), MAX_UNROLL)


def _known_int(node: ast.expr, module, bound: Bound, shadow: frozenset) -> int | None:
    # An integer literal (also through a u32()/i32() cast, and + - * // % of such), a
    # value of the variant `bound`, or a constant of the module folded to an integer that
    # reads nothing the variant binds (the checker folds such a constant again per
    # variant), else None. With `bound` None (the kernel counted for any of its variants),
    # nothing any of them binds (`shadow`) or reads.
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
        if node.func.id in ("u32", "i32") and not node.keywords:
            return _known_int(node.args[0], module, bound, shadow)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLDED:
        left = _known_int(node.left, module, bound, shadow)
        right = _known_int(node.right, module, bound, shadow)
        if left is None or right is None:
            return None
        if type(node.op) in (ast.FloorDiv, ast.Mod) and (left < 0 or right <= 0):
            return None  # (a zero divisor; and the language truncates, Python floors)
        return _FOLDED[type(node.op)](left, right)
    if isinstance(node, ast.Name):
        if bound is not None:  # one variant: its value, else the file's (not re-folded)
            if node.id in bound:
                value = getattr(bound[node.id], "value", None)
                return value if type(value) is int else None
            unsure = not _reads(module, node.id, set()).isdisjoint(bound)
        else:  # any variant: unknown where one may rebind it
            unsure = node.id in shadow or not _reads(module, node.id, set()).isdisjoint(shadow)
        return None if unsure else _constant(module, node.id)
    return None


# The integer operators an unroll bound may use that the count folds (HELD // 4).
_FOLDED = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _constant(module, name: str) -> int | None:
    value = getattr(module.constants.get(name), "value", None)
    return value if type(value) is int else None


def _reads(module, name: str, seen: set) -> set:
    # Every name constant `name` of `module` reads, through the file's other constants.
    definition = module.const_defs.get(name)
    if definition is None or name in seen:
        return set()
    seen.add(name)
    return set(definition.reads).union(*(_reads(module, r, seen) for r in definition.reads))


def _bound_key(bound: Bound) -> tuple | None:
    # An exact, hashable key of a variant's values (the memo's: equal bindings share it).
    if bound is None:
        return None
    return tuple(sorted((k, repr(getattr(v, "value", v))) for k, v in bound.items()))


def _size(nodes, module, memo: dict, depth: int, cap: int, bound: Bound, shadow: frozenset) -> int:
    """Operations of `nodes` and everything below them, helper calls inlined, an unroll()
    loop's body counted once per copy; the count stops once it passes `cap` (the result is
    then some value > cap). Iterative: the trees are not checked for depth yet."""
    total = 0
    todo = [(n, 1) for n in reversed(nodes)]  # (node, copies of it the checker makes)
    while todo:
        n, times = todo.pop()
        if isinstance(n, (ast.expr, ast.stmt)):
            total += times
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow):
            total += times * POW_EXPANSION
        elif (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in module.helpers
            and depth <= 32  # deeper chains are refused when inlined
        ):
            hmod, fn = module.helpers[n.func.id]
            left = (cap - total) // times
            total += times * _helper_size(hmod, fn, memo, depth + 1, left, bound, shadow)
        if total > cap:
            return total
        if isinstance(n, ast.For) and (copies := _copies(n, module, bound, shadow)) > 1:
            todo += [(c, times * copies) for c in reversed(n.body)]
            todo += [(n.iter, times), (n.target, times)]
        else:
            todo += [(c, times) for c in reversed(list(ast.iter_child_nodes(n)))]
    return total


def _helper_size(
    module, fn: ast.FunctionDef, memo: dict, depth: int, cap: int, bound: Bound, shadow: frozenset
) -> int:
    """A helper's inlined size under variant `bound`, memoised as (count, complete); a
    count stopped at a cap still answers any smaller cap."""
    key = (module.path, fn.name, _bound_key(bound), shadow)
    got = memo.get(key)
    if got is not None and (got[1] or got[0] > cap):
        return got[0]
    memo[key] = (0, True)  # recursion counts as nothing (the checker reports it)
    count = _size(fn.body, module, memo, depth, cap, bound, shadow)
    memo[key] = (count, count <= cap)
    return count


def kernel_work(
    module, kdef, memo: dict | None = None, cap: int = MAX_OPERATIONS, bound: Bound = None
) -> int:
    """About how many operations checking one instance of kernel `kdef` of `module` takes
    (its body, helpers inlined; decorator and annotations left out): the instance of the
    variant whose values are `bound`, or (None) any instance; past `cap` the count stops
    and gives cap + 1."""
    memo = {} if memo is None else memo
    shadow = frozenset(name for values in kdef.variants.values() for name in values)
    return min(_size(kdef.node.body, module, memo, 0, cap, bound, shadow), cap + 1)


def _unroll_names(nodes, module, seen: set) -> set:
    """The names read by the bounds of the unroll() loops of `nodes` and of the helpers
    they call (each helper walked once: `seen`)."""
    names: set = set()
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.For) and _is_unroll(n):
            names |= {x.id for a in n.iter.args for x in ast.walk(a) if isinstance(x, ast.Name)}
        elif (
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in module.helpers
        ):
            hmod, fn = module.helpers[n.func.id]
            if (hmod.path, fn.name) not in seen:
                seen.add((hmod.path, fn.name))
                names |= _unroll_names(fn.body, hmod, seen)
        todo += ast.iter_child_nodes(n)
    return names


def _bindings(module, kdef) -> list[tuple[int, Bound]]:
    """(variants, binding) per distinct binding of the names kdef's unroll bounds read:
    [(1, None)] without variants, [(variants, None)] where no variant binds those names."""
    if not kdef.variants:
        return [(1, None)]
    names = _unroll_names(kdef.node.body, module, set())
    names |= {r for n in names for r in _reads(module, n, set())}  # and what constants read
    groups: dict = {}
    for values in kdef.variants.values():
        key = tuple(
            (n, repr(getattr(values[n], "value", values[n]))) for n in sorted(names) if n in values
        )
        count, first = groups.get(key, (0, values))
        groups[key] = (count + 1, first)
    if list(groups) == [()]:
        return [(len(kdef.variants), None)]
    return [groups[key] for key in sorted(groups)]


def file_work(module) -> int:
    """About how many operations compiling `module` takes: each kernel's `kernel_work`
    times its variants (one instance without variants; a kernel past MAX_OPERATIONS counts
    that much, as the checker stops it at its first variant). Memoised on the module.

    Raises a KernelError at the kernel (its variants, if it has some) that brings the
    file past MAX_FILE_OPERATIONS. Each kernel is counted only up to its share of what is
    left, so refusing costs about MAX_FILE_OPERATIONS / variants, not the file."""
    if module.work is None:
        module.work = _count_file(module)
    return module.work


def _count_file(module) -> int:
    memo: dict = {}
    total = 0
    for name in sorted(module.kernels):
        kdef = module.kernels[name]
        count = max(1, len(kdef.variants))
        cap = min(MAX_OPERATIONS, (MAX_FILE_OPERATIONS - total) // count)
        ops, spent = 0, 0  # the largest instance counted; the variants' sum
        for variants, bound in _bindings(module, kdef):
            # each instance's count within its even share of what the file has left
            this = kernel_work(module, kdef, memo, cap, bound)
            ops, spent = max(ops, this), spent + this * variants
            if ops > cap:
                break
        if ops <= cap:
            total += spent
            continue
        if cap == MAX_OPERATIONS:  # the checker refuses it at its first variant, by name
            total += MAX_OPERATIONS
            continue
        src, node = module.source, kdef.node
        if kdef.variants and kdef.variants_node is not None:
            src = getattr(kdef, "variants_source", module.source)
            node = kdef.variants_node
        what = (
            f"{count} variants of kernel '{name}' pass it, at more than {cap} operations each"
            if kdef.variants
            else f"kernel '{name}' passes it, at more than {cap} operations"
        )
        before = f", after {total} for the kernels before it" if total else ""
        raise src.error(
            node,
            f"compiling this file takes more than {MAX_FILE_OPERATIONS} operations, each "
            f"variant counted (the limit): {what}{before}",
            "declare fewer variants, make the kernel smaller, or split its kernels and "
            "variants over several kernel files",
        )
    return total
