"""Property: no mutated kernel source makes the compiler raise anything but KernelError."""

import glob
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vyre_build.compiler import compile_file
from vyre_build.errors import KernelError

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "kernels")
SEEDS = {
    os.path.basename(p): open(p, encoding="utf-8").read()
    for p in sorted(glob.glob(os.path.join(ROOT, "*.py")))
}
TOKENS = [
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    ".",
    "0",
    "1",
    "-1",
    "1.5",
    "x",
    "i",
    "u32",
    "f32",
    "i32",
    "bool",
    "if ",
    "else",
    "for ",
    "while ",
    "return",
    "break",
    "continue",
    " = ",
    " + ",
    " // ",
    " / ",
    " % ",
    " << ",
    " and ",
    " not ",
    "len(",
    "shared(",
    "barrier()",
    "atomic_add(",
    "global_id()",
    ".x",
    "\n",
    "    ",
    "#",
    "'rw'",
    '"w"',
    "lambda",
    "None",
    "True",
    "**",
    "~",
    "yield",
    "@kernel",
    "def ",
    "import os\n",
    "Buffer[",
    "]",
    "1e40",
    "-3.5e38",
    ".y",
    ".w",
    "atomic(",
    "f32_unary(",
    "vec4f(",
    "vec2u(1, 2)",
    "x.x",
    " >>= ",
    " += ",
    "0xFFFFFFFF",
    "1 << 40",
]


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(sorted(SEEDS)))
    text = SEEDS[name]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "swap_lines", "dup_line"]))
        pos = draw(st.integers(0, max(len(text) - 1, 0)))
        if kind == "delete":
            n = draw(st.integers(1, 12))
            text = text[:pos] + text[pos + n :]
        elif kind == "insert":
            text = text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos:]
        elif kind == "replace":
            n = draw(st.integers(1, 6))
            text = text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos + n :]
        else:
            lines = text.split("\n")
            a = draw(st.integers(0, len(lines) - 1))
            b = draw(st.integers(0, len(lines) - 1))
            if kind == "swap_lines":
                lines[a], lines[b] = lines[b], lines[a]
            else:
                lines.insert(b, lines[a])
            text = "\n".join(lines)
    return name, text


@settings(
    max_examples=int(os.environ.get("VYRE_FUZZ_EXAMPLES", "400")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(mutated())
def test_mutated_sources_only_raise_kernel_error(case):
    name, text = case
    try:
        compile_file(
            os.path.join(ROOT, name),
            text=text,
            display_path=name,
            targets=("wgsl", "spirv", "kdesc"),
        )
    except KernelError as exc:
        rendered = str(exc)
        assert rendered.startswith(f"{exc.path}:{exc.line}:{exc.col}: error: ")
        assert exc.line >= 1 and exc.col >= 1
