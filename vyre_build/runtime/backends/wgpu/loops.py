"""Whether every loop of a WGSL module provably ends, read from the text itself.

naga's `ForceLoopBounding` adds a counter to every loop so that a loop that never ends
still stops (a WebGPU promise). It is a check like the bounds checks the wgpu backend
already leaves out (backends/wgpu/module.py), and it costs: 4-5% of lib_matmul.f32 on an
H100 (bench/RESULTS.md, 2026-12-06 06:1x UTC). This module proves the counter unnecessary
where it is: `ends(code)` is True only when every loop of `code` is one of

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

The reading is conservative: anything it does not recognise (a nested block comment, a
`for` of another shape, a compound assignment of the counter, a bound declared `var`
anywhere, unbalanced braces) answers False, and the module keeps the counter.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_TOKEN = re.compile(r"(?<![\w.])(for|loop|while|switch|continue|continuing)(?!\w)|[{}]")
_LAST_BREAK = re.compile(r"(?<![\w.])break\s*;\s*\Z")  # a body's last statement
_COUNTED = re.compile(
    r"for \(var (?P<c>[A-Za-z_]\w*): (?P<t>u32|i32) = [^;{}]+; (?P=c) < "
    r"(?:(?P<name>[A-Za-z_]\w*)|(?P<lit>\d+)(?P<ls>[ui]?)); "
    r"(?P=c) = (?P=c) \+ (?P<step>\d+)(?P<ss>[ui]?)\) \{"
)
_MOST = {"u32": 2**32 - 1, "i32": 2**31 - 1}
_SUFFIX = {"u32": "u", "i32": "i"}


def _assignments(text: str, name: str) -> int:
    """How many times `text` assigns `name` (plain or compound assignment, ++ or --), -1
    where it takes its address (a write could go through the pointer)."""
    n = re.escape(name)
    if re.search(rf"(?<![\w.&])&\s*{n}(?!\w)", text):
        return -1
    return len(
        re.findall(rf"(?<![\w.]){n}\s*(?:\+\+|--|(?:<<|>>|[-+*/%&|^])?=(?!=))", text)
    )


def _mutable(text: str, name: str) -> bool:
    """Whether `name` is declared with `var` anywhere in `text` (any address space)."""
    return re.search(rf"(?<![\w.])var(?:<[^>]*>)?\s+{re.escape(name)}(?!\w)", text) is not None


def _counted(text: str, at: int, headers: dict[str, int]) -> bool:
    """Whether the `for` at `at` is a counted loop (module docstring) over a bound that its
    counter cannot wrap past; its counter is counted into `headers`."""
    h = _COUNTED.match(text, at)
    if h is None:
        return False
    ty, step = h["t"], int(h["step"])
    if h["ss"] not in ("", _SUFFIX[ty]) or step < 1:
        return False
    if h["name"] is not None:
        if step != 1 or h["name"] == h["c"] or _mutable(text, h["name"]):
            return False
    elif h["ls"] not in ("", _SUFFIX[ty]) or int(h["lit"]) - 1 + step > _MOST[ty]:
        return False
    headers[h["c"]] = headers.get(h["c"], 0) + 1
    return True


def ends(code: str) -> bool:
    """Whether every loop of WGSL module `code` provably ends (module docstring): counted
    `for` loops and loops run once only; False for anything else, whatever it is."""
    text = _COMMENT.sub(" ", code)
    if "/*" in text or "*/" in text:  # a nested block comment: not read
        return False
    headers: dict[str, int] = {}
    blocks: list[tuple[str, int]] = []  # the open braces: (for / loop / block, where)
    opens = "block"  # what the next brace opens
    for m in _TOKEN.finditer(text):
        word = m.group(1)
        if word == "for":
            if not _counted(text, m.start(), headers):
                return False
            opens = "for"
        elif word == "loop":
            opens = "loop"
        elif word == "continue":  # a continue of a loop run once would run it again
            inner = next((kind for kind, _ in reversed(blocks) if kind != "block"), None)
            if inner != "for":
                return False
        elif word is not None:  # while, switch, continuing
            return False
        elif m.group(0) == "{":
            blocks.append((opens, m.end()))
            opens = "block"
        else:
            if not blocks:
                return False
            kind, start = blocks.pop()
            if kind == "loop" and not _LAST_BREAK.search(text, start, m.start()):
                return False
    if blocks:
        return False
    return all(_assignments(text, c) == k for c, k in headers.items())
