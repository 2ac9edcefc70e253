"""Find the smallest part of a kernel's expression on which two paths disagree.

    python tools/bisect_case.py CASE.py CASE.json [--backends reference,wgpu,vulkan,wgpu-spirv]

CASE.py holds one kernel whose last statement stores an expression (`out[i] = EXPR`); CASE.json
holds its inputs (`inputs`: buffers by name and scalars, `grid`), as the cases in
../shared/cases/ do. Every subexpression of EXPR (a call, an operator, a conditional) becomes a
kernel of its own storing that subexpression, as the same bits in an i32 output, compiled
once; each runs on every backend of --backends and is compared bit for bit with the first.
The report lists the subexpressions on which a backend differs, smallest first: the smallest
one names the operation whose lowering, emitter rule or third-party reading to look at. A
subexpression that does not compile on its own (its type is not a scalar) is skipped.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from types import SimpleNamespace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from conform import backends as B  # noqa: E402

WRAPS = ("{}", "bitcast(i32, {})", "i32({})")  # as the same bits in an i32, where it can


def subexpressions(expr: ast.expr) -> list[ast.expr]:
    """Every operator, call and conditional of `expr`, each once, smallest first."""
    found: dict[str, ast.expr] = {}
    for node in ast.walk(expr):
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call, ast.IfExp, ast.Compare)):
            text = ast.unparse(node)
            if text not in ("global_id()", "global_id().x") and "global_id()" != text:
                found.setdefault(text, node)
    return sorted(found.values(), key=lambda n: len(ast.unparse(n)))


def variants(source: str) -> list[tuple[str, str]]:
    """(subexpression, kernel source storing it) for each subexpression of the last store."""
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    store = fn.body[-1]
    if not (isinstance(store, ast.Assign) and isinstance(store.targets[0], ast.Subscript)):
        raise SystemExit("bisect_case: the kernel's last statement must be `out[i] = EXPR`")
    lines = source.splitlines()
    head = "\n".join(lines[: store.lineno - 1])
    indent = " " * store.col_offset
    target = ast.unparse(store.targets[0])
    return [
        (ast.unparse(node), f"{head}\n{indent}{target} = {{}}\n")
        for node in subexpressions(store.value)
    ]


def compile_one(path: str, text: str):
    from vyre_build.compiler import compile_file
    from vyre_build.core.errors import VyreError

    try:
        (compiled,) = compile_file(path, text=text, targets=("wgsl", "spirv", "kdesc"))
    except VyreError:
        return None
    return compiled


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case")
    ap.add_argument("inputs")
    ap.add_argument("--backends", default="reference,wgpu,vulkan,wgpu-spirv")
    ap.add_argument("--subgroup-size", type=int, default=32)
    args = ap.parse_args(argv)
    source = open(args.case, encoding="utf-8").read()
    case = json.load(open(args.inputs, encoding="utf-8"))
    grid = int(case["grid"])
    backends = args.backends.split(",")
    rows = []
    for text, template in variants(source):
        compiled = None
        for wrap in WRAPS:
            compiled = compile_one(args.case, template.format(wrap.format(text)))
            if compiled is not None:
                break
        if compiled is None:
            continue
        meta = compiled.meta
        inputs, scalars = {}, {}
        for b in meta["bindings"]:
            value = case["inputs"].get(b["name"])
            if b["kind"] == "scalar":
                scalars[b["name"]] = value
            elif value is None:  # the output
                inputs[b["name"]] = np.zeros(grid, np.int32)
            else:
                inputs[b["name"]] = np.array(
                    value, dtype={"i32": np.int32, "u32": np.uint32, "f32": np.float32}[b["dtype"]]
                ).reshape(-1)
        wg = meta["workgroup_size"][0]
        prog = SimpleNamespace(
            inputs=inputs,
            scalars=scalars,
            groups=-(-grid // wg),
            invocations=grid,
            default_grid=False,
            subgroup_size=args.subgroup_size,
            uses_cas=False,
        )
        results = {}
        for name in backends:
            try:
                results[name] = B.RUNNERS[name](compiled, prog)
            except Exception as exc:  # noqa: BLE001 - a backend that fails is reported
                results[name] = exc
        first = results[backends[0]]
        differ = []
        for name in backends[1:]:
            got = results[name]
            if isinstance(got, Exception) or isinstance(first, Exception):
                differ.append(f"{name}: {got!r}"[:200])
                continue
            bad = [k for k in got if np.asarray(got[k]).tobytes() != np.asarray(first[k]).tobytes()]
            if bad:
                n = sum(
                    int(np.sum(got[k].view(np.uint32) != first[k].view(np.uint32))) for k in bad
                )
                differ.append(f"{name}: {n} values differ")
        rows.append((text, differ))
        print(
            f"{'DIFFERS' if differ else 'agrees '} {text}"
            + (f"   [{'; '.join(differ)}]" if differ else ""),
            flush=True,
        )
    bad = [t for t, d in rows if d]
    print(f"\n{len(rows)} subexpressions, {len(bad)} differ; smallest: {bad[0] if bad else '-'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
