"""vyre_build.lang and its stub match the frontend's table of names; the stub is the text the
builtin registry generates; each registry row's handler and arity are the ones the checker
applies; the frontend modules import no module that imports them back (lazy imports
counted); mypy accepts kernel files."""

import ast
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from test_import_graph import cycles, import_graph

import vyre_build.lang as lang
from vyre_build.compiler import compile_file
from vyre_build.descriptor.ops import SUBGROUP_FEATURE
from vyre_build.core.errors import KernelError
from vyre_build.frontend import builtins, names, stubgen
from vyre_build.frontend.checker import KernelChecker

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STUB = os.path.join(REPO, "vyre_build", "lang.pyi")
KERNELS = os.path.join(REPO, "kernels")


def stub_names() -> tuple[set[str], list[str]]:
    """(names the stub defines at top level, the stub's __all__)."""
    tree = ast.parse(open(STUB, encoding="utf-8").read())
    defined, listed = set(), []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == "__all__":
                    listed = [e.value for e in node.value.elts]
                elif isinstance(t, ast.Name):
                    defined.add(t.id)
    return {n for n in defined if not n.startswith("_")}, listed


def test_lang_exports_exactly_the_frontends_names():
    assert set(lang.__all__) == set(names.LANG_NAMES)
    for name in names.LANG_NAMES:
        assert hasattr(lang, name), name


def test_stub_types_exactly_the_frontends_names():
    defined, listed = stub_names()
    table = set(names.LANG_NAMES)
    assert sorted(listed) == sorted(table), "lang.pyi __all__ differs from frontend/names.py"
    assert defined == table, (
        f"typed in lang.pyi but unknown to the frontend: {sorted(defined - table)}; "
        f"known to the frontend but not typed: {sorted(table - defined)}"
    )


def stub_docstrings() -> dict[str, str | None]:
    """{name: its one-line doc} of every top-level name of the stub: a function's or class's
    docstring (an overloaded function's on its first overload), or the string right after
    an assignment (an attribute docstring, which pyright and pylance show on hover)."""
    tree = ast.parse(open(STUB, encoding="utf-8").read())
    docs: dict[str, str | None] = {}
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            if docs.get(node.name) is None:
                docs[node.name] = ast.get_docstring(node)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            after = tree.body[i + 1] if i + 1 < len(tree.body) else None
            is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            docs[node.targets[0].id] = after.value.value if is_doc else None
    return docs


def test_every_name_of_the_stub_has_a_one_line_doc():
    docs = stub_docstrings()
    _, listed = stub_names()
    undocumented = sorted(n for n in listed if not docs.get(n))
    assert undocumented == [], f"lang.pyi names without a docstring: {undocumented}"
    multi = sorted(n for n in listed if "\n" in docs[n])
    assert multi == [], f"lang.pyi docstrings of more than one line: {multi}"
    assert docs["global_id"] == "This invocation's index in the whole grid (.x, .y, .z)."
    assert docs["f32"] == "32-bit float."


def test_the_committed_stub_is_the_generated_one():
    with open(STUB, encoding="utf-8") as f:
        committed = f.read()
    assert committed == stubgen.generate(), (
        "vyre_build/lang.pyi differs from the builtin registry: "
        "run python -m vyre_build.frontend.stubgen"
    )
    assert stubgen.main(["--check"]) == 0


def test_the_stub_follows_a_changed_row(monkeypatch, capsys):
    # The drift check can fail: a row's doc (or signature) changed is a different stub.
    row = builtins.BUILTINS["sqrt"]
    changed = builtins.Builtin(**{**row.__dict__, "doc": "The square root, rounded."})
    monkeypatch.setitem(builtins.BUILTINS, "sqrt", changed)
    text = stubgen.generate()
    assert 'def sqrt(x: _F, /) -> _F:\n    """The square root, rounded."""' in text
    assert stubgen.main(["--check"]) == 1
    assert "run python -m vyre_build.frontend.stubgen" in capsys.readouterr().err


def test_every_row_is_well_formed():
    assert set(builtins.BUILTINS) == set(names.ALL_BUILTINS)
    for name, row in builtins.BUILTINS.items():
        assert callable(getattr(KernelChecker, row.handler, None)), (name, row.handler)
        assert row.group in builtins.GROUPS and row.where in builtins.WHERE, name
        assert row.doc and "\n" not in row.doc, name
        assert getattr(lang, name).__doc__ == row.doc
        if row.group == "subgroups":  # the features the descriptor's validator derives
            assert row.features == {"subgroup_basic", SUBGROUP_FEATURE[row.op]}, name
        if row.group == "coop":
            assert row.features == {"cooperative_matrix"}, name


def _arity_case(row) -> str:
    """A kernel body calling `row`'s builtin with one argument too many."""
    args = ", ".join(["1"] * (row.arity + 1))
    return f"{row.name}({args})" if row.where == "statement" else f"x = {row.name}({args})"


CALLED = [r for r in builtins.BUILTINS.values() if r.where in ("value", "statement")]


@pytest.mark.parametrize("row", CALLED, ids=[r.name for r in CALLED])
def test_the_checker_applies_each_rows_arity(tmp_path, row):
    src = tmp_path / "k.py"
    src.write_text(
        "from vyre_build.lang import *\n"
        '@kernel\ndef k(o: Buffer[u32, "rw"]):\n'
        f"    {_arity_case(row)}\n"
        "    o[0] = 1\n"
    )
    with pytest.raises(KernelError) as info:
        compile_file(str(src), targets=("kdesc",), display_path="k.py")
    n = row.arity
    assert str(info.value).splitlines()[0] == (
        f"k.py:4:{5 + (0 if row.where == 'statement' else 4)}: error: "
        f"{row.name}() takes {n} argument{'s' if n != 1 else ''}, got {n + 1}"
    )


def test_named_imports_work_at_run_time():
    from vyre_build.lang import bool_, round, rw, vec4f  # noqa: F401

    assert repr(vec4f) == "<vyre kernel builtin vec4f>"
    with pytest.raises(RuntimeError, match=r"round\(\) exists only inside kernels"):
        round(1.5)
    assert rw == "rw"


def test_the_frontend_accepts_importing_every_lang_name(tmp_path):
    # Everything lang exports, imported by name, compiles; a name it lacks is refused.
    every = ", ".join(sorted(lang.__all__))
    src = tmp_path / "k.py"
    body = '@kernel\ndef k(o: Buffer[u32, "w"]):\n    o[0] = 1\n'
    src.write_text(f"from vyre_build.lang import {every}\n{body}")
    assert [k.name for k in compile_file(str(src), targets=("kdesc",))] == ["k"]
    src.write_text(f"from vyre_build.lang import vec4q\n{body}")
    with pytest.raises(KernelError) as info:
        compile_file(str(src), targets=("kdesc",), display_path="k.py")
    assert str(info.value).splitlines()[0] == (
        "k.py:1:1: error: 'vec4q' is not a name of vyre_build.lang"
    )


def test_frontend_has_no_import_cycles():
    # The package-wide graph (lazy imports counted) of test_import_graph, on the frontend.
    ours = ("vyre_build.frontend", "vyre_build.lang")
    frontend = [c for c in cycles(import_graph()) if any(m.startswith(ours) for m in c)]
    assert frontend == []
    assert "vyre_build.frontend.folding" in import_graph()["vyre_build.frontend.expressions"]


MYPY = shutil.which("mypy") or (
    os.path.join(os.path.dirname(sys.executable), "mypy")
    if os.path.exists(os.path.join(os.path.dirname(sys.executable), "mypy"))
    else None
)


@pytest.mark.slow
def test_mypy_accepts_kernel_files_and_rejects_a_wrong_one(tmp_path):
    assert MYPY, "mypy is part of the test extra"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "__init__.py").write_text("")
    copied = []
    for f in sorted(os.listdir(KERNELS)):
        if not f.endswith(".py"):
            continue
        text = open(os.path.join(KERNELS, f), encoding="utf-8").read()
        if "variants" in text:
            continue  # variant parameters (T, OP) are bound by the compiler, not Python
        mod = ast.parse(text)
        lines = text.splitlines(True)
        for n in mod.body:  # import every language name, as a kernel file that lints clean does
            if isinstance(n, ast.ImportFrom) and n.module == "vyre_build.lang":
                span = n.end_lineno - n.lineno + 1
                lines[n.lineno - 1 : n.end_lineno] = ["from vyre_build.lang import *\n"] + [
                    "\n"
                ] * (span - 1)
        (tree / f).write_text("".join(lines))
        copied.append(f)
    assert len(copied) >= 15
    (tree / "wrong.py").write_text(
        textwrap.dedent(
            """\
            from vyre_build.lang import Buffer, f32, global_id, kernel, rw, sqrt, vec4f

            @kernel(workgroup_size=64)
            def wrong(y: Buffer[f32, "rw"], v: Buffer[vec4f, "rw"]):
                i = global_id().x
                y[i] = v[i]
                v[i] = sqrt(v[i]) + vec4f(1.0)
            """
        )
    )
    env = {**os.environ, "MYPYPATH": REPO}
    proc = subprocess.run(
        [MYPY, "--no-incremental", "--no-error-summary", "tree"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert errors == [
        "tree/wrong.py:6: error: Incompatible types in assignment (expression has type "
        '"vec4f", target has type "float")  [assignment]'
    ], proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_readmes_first_kernel_and_a_shared_bytes_kernel_pass_mypy_strict(tmp_path):
    # The README says a kernel file that imports the names it uses type-checks under
    # mypy --strict: its own first example, and every @kernel option (shared_bytes too).
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    first = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert "def saxpy(" in first
    (tmp_path / "first.py").write_text(first)
    (tmp_path / "big.py").write_text(
        textwrap.dedent(
            """\
            from vyre_build.lang import Buffer, barrier, kernel, local_id, rw, shared, u32


            @kernel(workgroup_size=256, grid=("n",), any_length="x", shared_bytes=32768)
            def big(x: Buffer[u32], out: Buffer[u32, "rw"], n: u32) -> None:
                s = shared(u32, 8192)
                s[local_id().x] = x[0]
                barrier()
                out[local_id().x] = s[255 - local_id().x]
            """
        )
    )
    proc = subprocess.run(
        [MYPY, "--strict", "--no-incremental", "--no-error-summary", "first.py", "big.py"],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": REPO},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout + proc.stderr
    for name in ("first.py", "big.py"):  # and the compiler takes them as they are
        assert compile_file(str(tmp_path / name), targets=("kdesc",))
