"""Whether every loop of a WGSL module provably ends, read from the text itself.

naga's `ForceLoopBounding` adds a counter to every loop so that a loop that never ends
still stops (a WebGPU promise). It is a check like the bounds checks the wgpu backend
already leaves out (backends/wgpu/module.py), and it costs: naga's module of lib_matmul.f32
ran 4-5% faster without it on an H100 (bench/RESULTS.md, 2026-12-06 06:xx UTC; that
kernel's K loop is a `while`, which this module does not prove, so it keeps the counter).
This module proves the counter unnecessary where it is: `ends(code)` is True only when
every loop of `code` is one of

- a counted `for`

      for (var C: u32 = INIT; C < BOUND; C = C + STEP) {        (or i32, with `i` literals)

  whose counter C is assigned nowhere but in the increments of headers that declare C (and
  never has its address taken), whose BOUND is either a name never declared with `var`
  (a `let`, a parameter or a constant: immutable) with STEP 1, or a literal with
  BOUND - 1 + STEP inside the type's range (so C + STEP cannot wrap back below BOUND): it
  runs at most BOUND - INIT times;
- a `loop { ... break; }` whose body ends in an unconditional `break` and holds no
  `continue` of its own and no `continuing` block: it runs at most once;

and there is no `while` and no `switch`. WGSL has no recursion and no other backward jump,
so such a module ends. The WGSL emitter writes exactly these forms for the descriptor's
counted loops (emit/wgsl/control.py's `for`, a step-1 counter over a `let` bound;
memory.py's zero-fill loops over a literal bound) and for a legalized early return (a loop
run once); a kernel's `while` (the descriptor's `vyre.loop`) is not proven.

Reading a module costs about 0.3 ms per 100 KB of WGSL (the tree's 73 modules, 2.2 MB: 26
ms in all, on this project's 2-core CI machine). The reading is conservative: anything
it does not recognise (a nested block comment, a `for` of another shape, a compound
assignment of the counter, a bound declared `var` anywhere, unbalanced braces) answers
False, and the module keeps the counter.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# the words that make or leave loops (whole words: `_word_at` checks what precedes them)
_WORD = re.compile(r"(?:for|loop|while|switch|continue|continuing)(?!\w)")
_BRACE = re.compile(r"[{}]")
_LAST_BREAK = re.compile(r"[\s;{}]break\s*;\s*\Z")  # a body's last statement
_COUNTED = re.compile(
    r"for \(var (?P<c>[A-Za-z_]\w*): (?P<t>u32|i32) = [^;{}]+; (?P=c) < "
    r"(?:(?P<name>[A-Za-z_]\w*)|(?P<lit>\d+)(?P<ls>[ui]?)); "
    r"(?P=c) = (?P=c) \+ (?P<step>\d+)(?P<ss>[ui]?)\) \{"
)
_MOST = {"u32": 2**32 - 1, "i32": 2**31 - 1}
_SUFFIX = {"u32": "u", "i32": "i"}
_ASSIGN = r"\s*(?:\+\+|--|(?:<<|>>|[-+*/%&|^])?=(?!=))"


def _word_at(text: str, at: int) -> bool:
    """Whether the name at `at` starts there (not the tail of a longer name or a member)."""
    return at == 0 or not (text[at - 1].isalnum() or text[at - 1] in "_.")


def _assignments(text: str, name: str) -> int:
    """How many times `text` assigns `name` (plain or compound assignment, ++ or --), -1
    where it takes its address (a write could go through the pointer). Patterns start with
    the name itself, so that the search runs at the speed of a plain find."""
    n = re.escape(name)
    for m in re.finditer(n + r"(?!\w)", text):
        j = m.start() - 1
        while j >= 0 and text[j].isspace():
            j -= 1
        if _word_at(text, m.start()) and text[j] == "&" and (j == 0 or text[j - 1] != "&"):
            return -1
    return sum(_word_at(text, m.start()) for m in re.finditer(n + _ASSIGN, text))


def _mutable(text: str, name: str) -> bool:
    """Whether `name` is declared with `var` anywhere in `text` (any address space)."""
    return any(
        _word_at(text, m.start())
        for m in re.finditer(r"var(?:<[^>]*>)?\s+" + re.escape(name) + r"(?!\w)", text)
    )


def _counted(text: str, at: int, headers: dict[str, int]) -> int:
    """Where the body of the `for` at `at` opens (its brace), if it is a counted loop
    (module docstring) over a bound that its counter cannot wrap past (its counter counted
    into `headers`); -1 if not."""
    h = _COUNTED.match(text, at)
    if h is None:
        return -1
    ty, step = h["t"], int(h["step"])
    if h["ss"] not in ("", _SUFFIX[ty]) or step < 1:
        return -1
    if h["name"] is not None:
        if step != 1 or h["name"] == h["c"] or _mutable(text, h["name"]):
            return -1
    elif h["ls"] not in ("", _SUFFIX[ty]) or int(h["lit"]) - 1 + step > _MOST[ty]:
        return -1
    headers[h["c"]] = headers.get(h["c"], 0) + 1
    return h.end() - 1


def _close(text: str, brace: int) -> int:
    """Where the brace opened at `brace` closes, -1 if it does not."""
    depth = 0
    for m in _BRACE.finditer(text, brace):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.start()
    return -1


def ends(code: str) -> bool:
    """Whether every loop of WGSL module `code` provably ends (module docstring): counted
    `for` loops and loops run once only; False for anything else, whatever it is."""
    text = _COMMENT.sub(" ", code)
    if "/*" in text or "*/" in text or text.count("{") != text.count("}"):
        return False  # a nested block comment, unbalanced braces: not read
    headers: dict[str, int] = {}
    loops: list[tuple[int, int, str]] = []  # (opening brace, closing brace, for / loop)
    continues: list[int] = []
    for m in _WORD.finditer(text):
        word, at = m.group(), m.start()
        if not _word_at(text, at):
            continue
        if word == "continue":
            continues.append(at)
            continue
        if word == "for":
            brace = _counted(text, at, headers)
        elif word == "loop":
            after = text[m.end() : m.end() + 64]
            brace = m.end() + len(after) - len(after.lstrip())
            brace = brace if text.startswith("{", brace) else -1
        else:  # while, switch, continuing
            return False
        close = -1 if brace < 0 else _close(text, brace)
        if close < 0:
            return False
        if word == "loop" and not _LAST_BREAK.search(text[max(brace, close - 64) : close]):
            return False
        loops.append((brace, close, word))
    for at in continues:  # a continue of a loop run once would run it again
        inner = max((lp for lp in loops if lp[0] < at < lp[1]), default=None)
        if inner is None or inner[2] != "for":
            return False
    return all(_assignments(text, c) == k for c, k in headers.items())
