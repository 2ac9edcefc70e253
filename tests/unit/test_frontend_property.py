"""Property: no mutated kernel source makes the compiler raise anything but KernelError."""

import glob
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelError

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


# --- pathological sources: depth, size, huge literals, unicode, special files ---------------

HEAD = "from vyre_build.lang import *\n"
SIG = '@kernel(workgroup_size=64)\ndef k(o: Buffer[u32, "rw"], x: u32):\n'
# A wall-clock hang guard (not a speed measure): any one file far past it is a hang.
FILE_BUDGET_S = 20.0
MEMORY_BOUND = 256 << 20  # bytes Python may allocate for one hostile file
DEEP = {
    "plus": lambda n: SIG + "    o[0] = " + "+".join(["x"] * n) + "\n",
    "unary": lambda n: SIG + "    o[0] = u32(" + "-" * n + "i32(x))\n",
    "not": lambda n: SIG + "    o[0] = u32(" + "not " * n + "(x > 1))\n",
    "ternary": lambda n: SIG + "    o[0] = " + " if x > 1 else ".join(["x"] * n) + "\n",
    "compare": lambda n: SIG + "    o[0] = u32(" + " < ".join(["x"] * n) + ")\n",
    "and": lambda n: SIG + "    o[0] = u32(" + " and ".join(["x > 1"] * n) + ")\n",
    "parens": lambda n: SIG + "    o[0] = " + "(" * n + "x" + ")" * n + "\n",
    "calls": lambda n: SIG + "    o[0] = " + "u32(" * n + "x" + ")" * n + "\n",
    "subscripts": lambda n: SIG + "    o[0] = " + "o[" * n + "0" + "]" * n + "\n",
    "attributes": lambda n: SIG + "    o[0] = x" + ".x" * n + "\n",
    "elif": lambda n: (
        SIG
        + "    if x == 0:\n        o[0] = 0\n"
        + "".join(f"    elif x == {i}:\n        o[0] = 1\n" for i in range(1, n))
    ),
    "ifs": lambda n: (
        SIG
        + "".join("    " * (i + 1) + f"if x > {i}:\n" for i in range(n))
        + "    " * (n + 1)
        + "o[0] = 1\n"
    ),
    "constants": lambda n: "N = " + "-" * n + "1\n" + SIG + "    o[0] = 1\n",
    "helpers": lambda n: (
        "".join(
            f"def h{i}(v: u32) -> u32:\n    return h{i - 1}(v) + h{i - 1}(v)\n"
            if i
            else "def h0(v: u32) -> u32:\n    return v\n"
            for i in range(n)
        )
        + SIG
        + f"    o[0] = h{n - 1}(x)\n"
    ),
    "imports_chain": None,  # built on disk: a chain of files importing the next
}
LITERALS = [
    "0x" + "f" * 5000,
    "9" * 5000,
    "1e39",
    "-1e39",
    "1e999",
    "2 ** 64",
    "-(2 ** 63) - 1",
    "10 ** 60 + 1.5",
    "(1 << 31) * (1 << 31) * (1 << 31)",
    "0b" + "1" * 70,
    "~(2 ** 64 - 1)",
    "1.5 % 0.0",
]


@st.composite
def pathological(draw):
    """(kind, files {name: text or special marker}) for one hostile tree."""
    kind = draw(st.sampled_from(["deep", "literal", "size", "unicode", "special"]))
    if kind == "deep":
        shape = draw(st.sampled_from(sorted(DEEP)))
        n = draw(st.sampled_from([2, 31, 33, 99, 101, 150, 400, 1000, 5000, 30000]))
        if shape == "imports_chain":
            n = min(n, 300)
            files = {
                f"m{i}.py": HEAD + f"from .m{i + 1} import C{i + 1}\nC{i} = C{i + 1}\n"
                for i in range(n)
            }
            files[f"m{n}.py"] = f"C{n} = 1\n"
            files["k.py"] = HEAD + "from .m0 import C0\n" + SIG + "    o[0] = C0\n"
            return kind, files
        if shape == "helpers":
            n = min(n, 60)
        return kind, {"k.py": HEAD + DEEP[shape](n)}
    if kind == "literal":
        lit = draw(st.sampled_from(LITERALS))
        where = draw(st.sampled_from(["module", "kernel", "range", "grid", "variant"]))
        text = {
            "module": f"N = {lit}\n{SIG}    o[0] = u32(N)\n",
            "kernel": f"{SIG}    o[0] = u32({lit})\n",
            "range": f"{SIG}    for j in range(0, {lit}, {lit}):\n        o[0] = 1\n",
            "grid": SIG.replace("workgroup_size=64", f"workgroup_size=64, grid={lit}")
            + "    o[0] = 1\n",
            "variant": SIG.replace("workgroup_size=64", f'variants={{"a": {{"N": {lit}}}}}')
            + "    o[0] = u32(N)\n",
        }[where]
        return kind, {"k.py": HEAD + text}
    if kind == "size":
        what = draw(st.sampled_from(["comment", "constants", "helpers", "kernels", "name"]))
        n = draw(st.sampled_from([1000, 10001, 200000]))
        text = {
            "comment": "#" + "x" * (n * 10) + "\n" + SIG + "    o[0] = 1\n",
            "constants": "".join(f"C{i} = {i}\n" for i in range(n)) + SIG + "    o[0] = 1\n",
            "helpers": "".join(f"def h{i}(v: u32) -> u32:\n    return v\n" for i in range(n // 10)),
            "kernels": "".join(
                SIG.replace("def k(", f"def k{i}(") + "    o[0] = 1\n" for i in range(n // 10)
            ),
            "name": SIG.replace("def k(", "def " + "k" * n + "(") + "    o[0] = 1\n",
        }[what]
        return kind, {"k.py": HEAD + text}
    if kind == "unicode":
        name = draw(st.sampled_from(sorted(SEEDS)))
        text = SEEDS[name]
        for _ in range(draw(st.integers(1, 4))):
            pos = draw(st.integers(0, len(text)))
            junk = draw(st.text(min_size=1, max_size=8))
            text = text[:pos] + junk + text[pos:]
        return kind, {"k.py": text, "yaml": draw(st.text(max_size=40))}
    special = draw(
        st.sampled_from(["fifo", "socket", "dir", "dev_zero", "loop", "broken", "yaml_fifo"])
    )
    return kind, {"k.py": special}


def _make(tree: str, files: dict) -> str:
    import socket

    for name, text in files.items():
        path = os.path.join(tree, name)
        if name == "yaml":
            with open(os.path.join(tree, "variants.yaml"), "w", encoding="utf-8") as f:
                f.write("k.py:\n  k:\n    " + text)
        elif text == "fifo":
            os.mkfifo(path)
        elif text == "socket":
            s = socket.socket(socket.AF_UNIX)
            s.bind(path)
            s.close()
        elif text == "dir":
            os.mkdir(path)
        elif text == "dev_zero":
            os.symlink("/dev/zero", path)
        elif text == "loop":
            os.symlink(path, path)
        elif text == "broken":
            os.symlink(os.path.join(tree, "missing.py"), path)
        elif text == "yaml_fifo":
            os.mkfifo(os.path.join(tree, "variants.yaml"))
            with open(path, "w", encoding="utf-8") as f:
                f.write(HEAD + SIG + "    o[0] = 1\n")
        else:
            with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(text)
    return os.path.join(tree, "k.py")


@settings(
    max_examples=int(os.environ.get("VYRE_FUZZ_PATHOLOGICAL", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(pathological())
def test_pathological_sources_only_raise_kernel_error(case):
    import tempfile
    import time
    import tracemalloc

    kind, files = case
    with tempfile.TemporaryDirectory() as tree:
        path = _make(tree, files)
        tracemalloc.start()
        t = time.perf_counter()
        try:
            compile_file(path, display_path="k.py", targets=("wgsl", "spirv", "kdesc"))
        except KernelError as exc:
            rendered = str(exc)
            assert rendered.startswith(f"{exc.path}:{exc.line}:{exc.col}: error: ")
            assert exc.line >= 1 and exc.col >= 1
            assert len(rendered) < 2000, "an error message must stay readable"
        finally:
            elapsed = time.perf_counter() - t
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert elapsed < FILE_BUDGET_S, f"{kind}: {elapsed:.1f} s for one file (a hang?)"
        assert peak < MEMORY_BOUND, f"{kind}: {peak >> 20} MiB for one file"
