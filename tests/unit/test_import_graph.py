"""The package's import graph: no cycles, and a layer order that every import keeps.

Every `import` / `from ... import` in every module of vyre_build/ (module level or
nested) is an edge to the vyre_build module it names; `from pkg import name` where `name`
is a submodule is an edge to that submodule. The cycle tests check the graph without and
with the imports under `if TYPE_CHECKING:`; the layer test counts those too: a package
imports, even for a type, only from the layers below it (LAYERS, bottom first).
"""

from __future__ import annotations

import ast
import functools
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG = os.path.join(ROOT, "vyre_build")


def _modules() -> dict[str, str]:
    out = {}
    for d, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), ROOT)[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(
                    d, f
                )
    return out


def _type_checking_lines(tree) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                lines.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return lines


@functools.lru_cache(maxsize=2)
def import_graph(type_level: bool = False) -> dict[str, set[str]]:
    """Module -> the vyre_build modules it imports; `type_level`: with the imports under
    `if TYPE_CHECKING:` too."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        skip = set() if type_level else _type_checking_lines(tree)
        is_pkg = path.endswith("__init__.py")
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = mod.split(".")
                    anchor = parts if is_pkg else parts[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
                ]
            for t in targets:
                if t in mods and t != mod:
                    graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_graph_sees_known_edges():
    g = import_graph()
    assert "vyre_build.descriptor.codec" in g["vyre_build.descriptor.validate"]
    assert "vyre_build.frontend.ir" in g["vyre_build.frontend.lower"]  # `from vyre_build import ir`
    assert "vyre_build.emit.wgsl" in g["vyre_build.commands.listing"]  # a lazy import counts


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_scons_tool_imports_no_cli_module():
    g = import_graph()
    seen, todo = set(), ["vyre_build.build.scons_tool"]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(g[m])
    assert not [m for m in seen if m == "vyre_build.cli" or m.startswith("vyre_build.commands")]


# The layers, bottom first: a module imports only from its own package and from the
# layers below its own (docs/architecture.md). Packages of one layer do not import each
# other: emit/ and reference/ are independent judges of the same descriptor.
LAYERS = (
    ("vyre_build", "vyre_build.core"),  # the version; errors, files, features, artifacts, limits
    ("vyre_build.cache",),
    ("vyre_build.descriptor",),
    ("vyre_build.bundle",),
    ("vyre_build.frontend",),
    ("vyre_build.lang",),  # the names kernel files import, over the frontend's builtins
    ("vyre_build.emit", "vyre_build.reference"),
    ("vyre_build.compiler",),
    ("vyre_build.build",),
    ("vyre_build.runtime",),
    ("vyre_build.library",),
    ("vyre_build.commands",),
    ("vyre_build.cli",),
    ("vyre_build.__main__",),
)
# Targets and backends: one package each, imported by nothing but their registries.
TARGETS = ("vyre_build.emit.wgsl", "vyre_build.emit.spirv")
BACKENDS = (
    "vyre_build.runtime.backends.wgpu",
    "vyre_build.runtime.backends.cpu",
    "vyre_build.runtime.backends.vulkan",
)
REGISTRIES = {"vyre_build.compiler", "vyre_build.commands.listing"}


def _package(mod: str) -> tuple[int, str]:
    """(layer index, package) of a module: its longest LAYERS prefix."""
    best = None
    for i, layer in enumerate(LAYERS):
        for pkg in layer:
            if (mod == pkg or mod.startswith(pkg + ".")) and (
                best is None or len(pkg) > len(best[1])
            ):
                best = (i, pkg)
    assert best is not None, f"{mod} is in no layer: add its package to LAYERS"
    return best


def _within(mod: str, pkgs: tuple[str, ...]) -> str | None:
    return next((p for p in pkgs if mod == p or mod.startswith(p + ".")), None)


def test_every_module_has_a_layer():
    for mod in import_graph():
        _package(mod)


def test_imports_go_down_the_layers_type_level_included():
    bad = []
    for mod, targets in import_graph(type_level=True).items():
        layer, pkg = _package(mod)
        for t in targets:
            t_layer, t_pkg = _package(t)
            if t_layer > layer or (t_layer == layer and t_pkg != pkg and t_pkg != "vyre_build"):
                bad.append(f"{mod} -> {t} ({pkg} is not above {t_pkg})")
    assert bad == []


def test_targets_and_backends_are_imported_only_by_their_registries():
    bad = []
    for mod, targets in import_graph(type_level=True).items():
        own = _within(mod, TARGETS) or _within(mod, BACKENDS)
        for t in targets:
            other = _within(t, TARGETS) or _within(t, BACKENDS)
            if other and other != own and mod not in REGISTRIES:
                bad.append(f"{mod} -> {t}")
    assert bad == []


def test_the_runtime_core_does_not_import_a_backend():
    # backends import the runtime's device, buffers and calls, never the other way round
    g = import_graph(type_level=True)
    core = [m for m in g if m.startswith("vyre_build.runtime") and not _within(m, BACKENDS)]
    assert [f"{m} -> {t}" for m in core for t in g[m] if _within(t, BACKENDS)] == []


def test_cycles_and_type_level_edges_are_seen():
    # what the no-cycle tests rest on: a cycle is found, and an import under
    # TYPE_CHECKING is an edge of the type-level graph only
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    device = "vyre_build.runtime.backends.vulkan.device"
    typed = "vyre_build.runtime.backends.vulkan.pipeline_cache"  # its PipelineCacheFile type
    assert typed in import_graph(type_level=True)[device]
    assert typed not in import_graph()[device]


def test_no_type_level_cycles():
    # the runtime's Device and DeviceBuffer share device.py (they name each other; the
    # Device's base classes below it, Batch's batching.py among them, name neither, and
    # the Plan, in plan.py, names no Device); the Vulkan pipelines are an object the device
    # makes with what it uses of it
    assert cycles(import_graph(type_level=True)) == []


# -- names: a registered target or backend is spelled only in its own package and in its
# registry (vyre_build/core/targets.py, backends.py); everywhere else its name, suffix and
# title come from the registered objects (WGSL.suffix, BACKENDS.default.name, REFERENCE,
# Backend.title), and policies read capabilities (Backend.gpu, forward_progress,
# Target.offers), so that a new target or backend is its package and one registry line.

NAME_REGISTRIES = ("vyre_build.core.targets", "vyre_build.core.backends")
# Modules that may name targets or backends anyway, each with its reason; a stale entry
# (one the module no longer needs) fails too.
NAMES_ALLOWED = {
    # The CLI's help pages: prose and example command lines ("--backend vulkan"), read as
    # docstrings and docs/*.md are; the list of backends it gives is BACKENDS'.
    "vyre_build.commands.helptext": {"wgsl", ".wgsl", "spirv", ".kdesc", "wgpu", "vulkan", "cpu"},
}


def _home(ref: object, base: str) -> str:
    """The package a registered object's code lives in: emit/<t>/, runtime/backends/<b>,
    or the module its "module:name" reference names."""
    module = ref.partition(":")[0] if isinstance(ref, str) else ref.__module__
    if module.startswith(base + "."):
        return ".".join(module.split(".")[: base.count(".") + 2])
    return module


def registered_names() -> dict[str, str]:
    """Each registered target's and backend's name, and each target's suffix -> the
    package that may spell it."""
    from vyre_build.core.backends import BACKENDS
    from vyre_build.core.targets import TARGETS

    homes = {}
    for t in TARGETS.values():
        homes[t.name] = homes[t.suffix] = _home(t.emitter, "vyre_build.emit")
    for b in BACKENDS.values():
        homes[b.name] = _home(b.device, "vyre_build.runtime.backends")
    return homes


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.add(id(first.value))
    return found


def names_in(source: str, names) -> list[tuple[int, str]]:
    """(line, name) for each of `names` a string constant of `source` equals or holds as a
    word: every string but docstrings, f-string text and messages included. A word is
    bounded by anything but letters, digits, "_" and "-", so that "vulkan_memory_model"
    (a device feature), "spirv-opt" (a tool) and "spirv_opt" (an option) are other words,
    while ".wgsl", "--backend vulkan" and "(cpu backend" name one."""
    pattern = re.compile(
        r"(?<![\w-])("
        + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
        + r")(?![\w-])"
    )
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found.extend((node.lineno, word) for word in pattern.findall(node.value))
    return sorted(found)


def test_names_in_sees_strings_messages_and_f_strings_not_docstrings():
    source = '''
"""Module docstring: wgsl and vulkan may be named here."""
def f(x):
    """So may spirv here."""
    if x == "vulkan":
        raise ValueError(f"the {x} is not a .spv file; try --backend cpu")
    return {"spirv_opt": 1, "tool": "spirv-opt", "feature": "vulkan_memory_model"}
'''
    names = ("wgsl", "spirv", ".spv", "vulkan", "cpu")
    assert names_in(source, names) == [(5, "vulkan"), (6, ".spv"), (6, "cpu")]


def test_target_and_backend_names_appear_only_in_their_packages_and_registries():
    homes = registered_names()
    assert {"wgsl", ".spv", "kdesc", "wgpu", "vulkan", "cpu"} <= set(homes)
    assert homes["spirv"] == "vyre_build.emit.spirv"
    assert homes["vulkan"] == "vyre_build.runtime.backends.vulkan"
    assert homes["kdesc"] == "vyre_build.descriptor.codec"
    bad, used = [], {}
    for mod, path in sorted(_modules().items()):
        if mod in NAME_REGISTRIES:
            continue
        with open(path, encoding="utf-8") as f:
            source = f.read()
        for line, name in names_in(source, homes):
            if _within(mod, (homes[name],)):
                continue
            if name in NAMES_ALLOWED.get(mod, ()):
                used.setdefault(mod, set()).add(name)
                continue
            bad.append(f"{os.path.relpath(path, ROOT)}:{line}: {name!r}")
    assert bad == []
    assert used == NAMES_ALLOWED  # no stale allowance
