"""Every kernel error the frontend raises says a fix: each `self.err(node, message, fix)`,
`src.error(node, message, fix)` and `KernelError(...)` in vyre_build/frontend/ passes one
(the "  fix: ..." line under the caret that tells the user what to write instead). Read
from the source with ast, so an error added without a fix fails here, named by file and
line, before a user meets it. A fix computed at run time (a variable, a conditional
expression) counts as given; None or an empty string does not."""

import ast
import pathlib

import vyre_build.frontend

FRONTEND = pathlib.Path(vyre_build.frontend.__file__).parent
# name -> (position of the message, position of the fix): err/error(node, message, fix),
# KernelError(message, path, line, col, source_line, fix, end_col).
_ARGS = {"err": (1, 2), "error": (1, 2), "KernelError": (0, 5)}


def _error_call(call: ast.Call):
    """(message, fix) of an error call (fix None where it passes none), else None."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in _ARGS or (name == "KernelError") != isinstance(func, ast.Name):
        return None
    at_message, at_fix = _ARGS[name]
    message = call.args[at_message] if len(call.args) > at_message else call
    fix = next((kw.value for kw in call.keywords if kw.arg == "fix"), None)
    if fix is None and len(call.args) > at_fix:
        fix = call.args[at_fix]
    if any(isinstance(a, ast.Starred) for a in call.args):
        fix = fix or call  # arguments passed with * are not read here
    return message, fix


def _without_fix(path: pathlib.Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        found = _error_call(node) if isinstance(node, ast.Call) else None
        if found is None:
            continue
        message, fix = found
        if fix is None or (isinstance(fix, ast.Constant) and not fix.value):
            out.append((node.lineno, f"{path.name}:{node.lineno}: {ast.unparse(message)}"))
    return [row for _, row in sorted(out)]


def test_every_frontend_error_says_a_fix():
    missing = [row for path in sorted(FRONTEND.glob("*.py")) for row in _without_fix(path)]
    assert not missing, "kernel errors without a fix:\n" + "\n".join(missing)


def test_the_scan_finds_an_error_without_a_fix(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(
        "raise self.err(node, 'a')\n"
        "raise src.error(node, f'b {x}', None)\n"
        "raise self.err(node, 'c', fix='')\n"
        "raise KernelError('d', path, 1, 1, line)\n"
        "raise self.err(node, 'e', 'write e')\n"
        "raise src.error(node, 'f', fix)\n"
        "raise KernelError('g', path, 1, 1, line, 'write g')\n"
        "logger.warning(node, 'h')\n"
    )
    assert _without_fix(path) == [
        "bad.py:1: 'a'",
        "bad.py:2: f'b {x}'",
        "bad.py:3: 'c'",
        "bad.py:4: 'd'",
    ]
