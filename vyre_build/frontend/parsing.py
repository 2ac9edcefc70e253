"""Kernel source text -> `ast.Module`, safely: Python's parser limits (nesting, huge
literals) and its RecursionError / MemoryError on very deep input become positioned
KernelErrors, and no name longer than the limit gets past."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings

from vyre_build.core.errors import KernelError
from vyre_build.core.limits import MAX_BLOCK_NESTING, MAX_NAME_BYTES, MAX_NESTING, shown
from vyre_build.frontend.source import Source

NESTING_FIX = "split the expression with intermediate variables (t = a + b)"
BLOCKS_FIX = "flatten the blocks: join conditions with and/or, or leave early (break, continue)"
_NESTING = f"nesting deeper than {MAX_NESTING} levels (the limit)"
_BLOCKS = f"blocks nested deeper than {MAX_BLOCK_NESTING} (the limit)"
# A name is one run of these bytes (ASCII word characters, or UTF-8 of non-ASCII ones).
_LONG_RUN = re.compile(rb"[A-Za-z0-9_\x80-\xff]{%d}" % (MAX_NAME_BYTES + 1))
_KEYWORD_OPS = frozenset({"not", "and", "or", "if", "else", "in", "is", "lambda", "await"})


def parse_source(src: Source) -> ast.Module:
    """Parse `src` (never executing it); every failure is a KernelError at a position."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no SyntaxWarning noise on the user's terminal
            tree = ast.parse(src.text, filename=src.path)
    except SyntaxError as exc:
        raise _syntax_error(src, exc) from None
    except (RecursionError, MemoryError):
        # Python's parser gives up on very deep input: find where, from the tokens.
        line, col, blocks = _deep_position(src.text)
        if blocks:
            raise _at(src, line, col, _BLOCKS, BLOCKS_FIX) from None
        raise _at(src, line, col, _NESTING, NESTING_FIX) from None
    check_names(src, tree)
    return tree


def _at(src: Source, line: int, col: int, message: str, fix: str) -> KernelError:
    srcline = src.lines[line - 1] if 0 < line <= len(src.lines) else None
    return KernelError(message, src.path, line, col, srcline, fix)


def _syntax_error(src: Source, exc: SyntaxError) -> KernelError:
    line, col = exc.lineno or 1, exc.offset or 1
    msg = exc.msg or "invalid syntax"
    if msg.startswith("too many nested parentheses"):
        return _at(src, line, col, _NESTING, NESTING_FIX)
    if msg.startswith("too many levels of indentation"):
        return _at(src, line, col, _BLOCKS, BLOCKS_FIX)
    if msg.startswith("Exceeds the limit") and "integer string conversion" in msg:
        return _at(
            src,
            line,
            col,
            "integer constant out of range: it does not fit in 64 bits",
            "constants are folded in 64 bits (-2**63 .. 2**64-1); use a smaller value",
        )
    # Python's own message often is "invalid syntax" (or "invalid syntax. Perhaps ..."):
    # said once.
    message = msg if msg.startswith("invalid syntax") else f"invalid syntax: {msg}"
    return _at(src, line, col, message, "kernel files must be valid Python syntax")


def _deep_position(text: str) -> tuple[int, int, bool]:
    """(line, column, is_blocks) of the first place where a statement chains more operators
    than MAX_NESTING, or an elif chain passes MAX_BLOCK_NESTING; (1, 1, False) if neither
    is found (the tokens themselves may be broken)."""
    ops = elifs = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                ops = 0
            elif tok.type == tokenize.OP and tok.string not in ",:;.)]}=":
                ops += 1
            elif tok.type == tokenize.NAME and tok.string in _KEYWORD_OPS:
                ops += 1
            elif tok.type == tokenize.NAME and tok.string == "elif":
                elifs += 1
                if elifs > MAX_BLOCK_NESTING:
                    return tok.start[0], tok.start[1] + 1, True
            if ops > MAX_NESTING:
                return tok.start[0], tok.start[1] + 1, False
    except (tokenize.TokenError, SyntaxError):
        pass
    return 1, 1, False


def _names(node):
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.alias):
        yield node.name
        if node.asname:
            yield node.asname
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, ast.keyword) and node.arg:
        yield node.arg
    elif isinstance(node, ast.ImportFrom) and node.module:
        yield node.module


def check_names(src: Source, tree: ast.Module) -> None:
    """Every name in the file is at most MAX_NAME_BYTES long in UTF-8."""
    if not _LONG_RUN.search(src.text.encode("utf-8")):
        return  # no run of name characters is that long, so no name is
    for node in ast.walk(tree):
        for name in _names(node):
            n = len(name.encode("utf-8"))
            if n > MAX_NAME_BYTES:
                raise src.error(
                    node,
                    f"name '{shown(name)}' is {n} bytes long, more than the limit of "
                    f"{MAX_NAME_BYTES} bytes",
                    "use a shorter name (kernel and variant names become file names)",
                )
