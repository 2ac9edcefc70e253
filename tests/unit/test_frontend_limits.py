"""Each limit of the frontend (README "Limits") on the hostile inputs of issue 15: a clear
KernelError at file:line:col with the limit's value and a fix, never a traceback."""

import os

import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelError
from vyre_build.core import limits

HEAD = "from vyre_build.lang import *\n"
SIG = 'o: Buffer[u32, "rw"], x: u32'
NEST = "split the expression with intermediate variables (t = a + b)"
BLOCKS = "flatten the blocks: join conditions with and/or, or leave early (break, continue)"
INT64 = "constants are folded in 64 bits (-2**63 .. 2**64-1); use a smaller value"
DEEP = "nesting deeper than 100 levels (the limit; helpers count where they are inlined)"
DEEP_PARSE = "nesting deeper than 100 levels (the limit)"


def kernel(body: str, sig: str = SIG, name: str = "k") -> str:
    return f"@kernel(workgroup_size=64)\ndef {name}({sig}):\n" + body


def compile_src(tmp_path, text: str, name: str = "k.py"):
    path = tmp_path / name
    path.write_text(HEAD + text)
    return compile_file(str(path), targets=("kdesc", "wgsl", "spirv"), display_path=name)


def error(tmp_path, text: str) -> tuple[str, str]:
    """(first line, fix) of the KernelError compiling `text` as k.py."""
    with pytest.raises(KernelError) as info:
        compile_src(tmp_path, text)
    lines = str(info.value).splitlines()
    assert "Traceback" not in str(info.value)
    fix = next(line for line in lines if line.startswith("  fix: "))
    return lines[0], fix[len("  fix: ") :]


CASES = {
    # 1,000-deep nesting of each kind the issue lists, and deeper than Python's parser allows
    "plus_chain": (
        kernel("    o[0] = " + "+".join(["x"] * 1000) + "\n"),
        f"k.py:4:12: error: {DEEP}",
        NEST,
    ),
    "plus_chain_past_the_parser": (
        kernel("    o[0] = " + "+".join(["x"] * 20000) + "\n"),
        f"k.py:4:211: error: {DEEP_PARSE}",
        NEST,
    ),
    "unary_chain": (
        kernel("    o[0] = u32(" + "-" * 1000 + "i32(x))\n"),
        f"k.py:4:115: error: {DEEP}",
        NEST,
    ),
    "unary_chain_past_the_parser": (
        kernel("    o[0] = u32(" + "-" * 20000 + "i32(x))\n"),
        f"k.py:4:114: error: {DEEP_PARSE}",
        NEST,
    ),
    "ternary_chain": (
        kernel("    o[0] = " + " if x > 1 else ".join(["x"] * 1000) + "\n"),
        f"k.py:4:1585: error: {DEEP}",
        NEST,
    ),
    "comparison_chain": (
        kernel("    o[0] = u32(" + " < ".join(["x"] * 1000) + ")\n"),
        f"k.py:4:16: error: {DEEP}",
        NEST,
    ),
    "and_chain": (
        kernel("    o[0] = u32(" + " and ".join(["x > 1"] * 1000) + ")\n"),
        f"k.py:4:16: error: {DEEP}",
        NEST,
    ),
    "elif_chain": (
        kernel(
            "    if x == 0:\n        o[0] = 0\n"
            + "".join(f"    elif x == {i}:\n        o[0] = {i}\n" for i in range(1, 1000))
        ),
        "k.py:69:9: error: blocks nested deeper than 32 (the limit; an elif nests in the if "
        "before it, a helper that returns early counts where it is inlined)",
        BLOCKS,
    ),
    "elif_chain_past_the_parser": (
        kernel(
            "    if x == 0:\n        o[0] = 0\n"
            + "".join(f"    elif x == {i}:\n        o[0] = {i}\n" for i in range(1, 10000))
        ),
        "k.py:70:5: error: blocks nested deeper than 32 (the limit)",
        BLOCKS,
    ),
    "nested_ifs": (
        kernel(
            "".join("    " * (i + 1) + f"if x > {i}:\n" for i in range(33))
            + " " * 136
            + "o[0] = 1\n"
        ),
        "k.py:37:137: error: blocks nested deeper than 32 (the limit; an elif nests in the if "
        "before it, a helper that returns early counts where it is inlined)",
        BLOCKS,
    ),
    "indentation_past_the_parser": (
        kernel(
            "".join("    " * (i + 1) + f"if x > {i}:\n" for i in range(120))
            + " " * 484
            + "o[0] = 1\n"
        ),
        "k.py:103:1: error: blocks nested deeper than 32 (the limit)",
        BLOCKS,
    ),
    "parentheses": (
        kernel("    o[0] = " + "(" * 1000 + "x" + ")" * 1000 + "\n"),
        f"k.py:4:212: error: {DEEP_PARSE}",
        NEST,
    ),
    "module_constant_chain": (
        "N = " + "-" * 150 + "1\n" + kernel("    o[0] = 1\n"),
        "k.py:2:106: error: constant expression nested deeper than 100 levels (the limit)",
        "use fewer or simpler constants",
    ),
    # constants: magnitudes and the work of folding them
    "int_over_4300_digits_hex": (
        "N = 0x" + "f" * 4400 + "\n" + kernel("    o[0] = N\n"),
        "k.py:2:5: error: integer constant out of range: a 17600-bit integer does not fit in 64 bits",
        INT64,
    ),
    "int_over_4300_digits_decimal": (
        "N = " + "9" * 5000 + "\n" + kernel("    o[0] = N\n"),
        "k.py:2:1: error: integer constant out of range: it does not fit in 64 bits",
        INT64,
    ),
    "f32_too_large": (
        "N = 1e39\n" + kernel("    o[0] = u32(N)\n"),
        "k.py:2:5: error: constant 1e+39 does not fit in f32 (largest is 3.402823e+38)",
        "use a smaller value",
    ),
    "huge_int_mixed_with_a_float": (
        "N = 10 ** 60 + 1.5\n" + kernel("    o[0] = u32(N)\n"),
        "k.py:2:5: error: integer constant out of range: a 200-bit integer does not fit in 64 bits",
        INT64,
    ),
    "squaring_28_times": (
        "A0 = 2\n"
        + "".join(f"A{j + 1} = A{j} * A{j}\n" for j in range(28))
        + kernel("    o[0] = 1\n"),
        "k.py:8:6: error: integer constant out of range: a 65-bit integer does not fit in 64 bits",
        INT64,
    ),
    "huge_literal_in_a_kernel": (
        kernel("    o[0] = u32(0x" + "f" * 100 + ")\n"),
        "k.py:4:16: error: integer constant out of range: a 400-bit integer does not fit in 64 bits",
        INT64,
    ),
    "range_of_both_signs_past_i32": (
        kernel("    for j in range(-1, 2**31):\n        o[0] = u32(j)\n"),
        "k.py:4:14: error: range bounds -1 and 2147483648 do not fit one loop type (i32 or u32)",
        "use bounds from -2147483648 to 2147483647 (i32) or 0 to 4294967295 (u32)",
    ),
    "range_step_past_i32": (
        kernel("    for j in range(0, 10, 2**31):\n        o[0] = u32(j)\n"),
        "k.py:4:27: error: the range step 2147483648 does not fit the i32 loop variable",
        "use a step from -2147483647 to 2147483647",
    ),
    "grid_past_u32": (
        kernel("    o[0] = 1\n").replace("(workgroup_size=64)", "(workgroup_size=64, grid=2**40)"),
        "k.py:2:33: error: grid entry 1099511627776 is out of range: invocations per axis are "
        "1 .. 4294967295",
        "give a positive count that fits in u32",
    ),
    # names
    "parameter_name_of_a_million_characters": (
        kernel("    o[0] = 1\n", sig="o: Buffer[u32, 'rw'], " + "p" * 1_000_000 + ": u32"),
        "k.py:3:29: error: name 'ppppppppppppppppppppppppppppppppppppp...' is 1000000 bytes "
        "long, more than the limit of 100 bytes",
        "use a shorter name (kernel and variant names become file names)",
    ),
    "kernel_name_of_1000_characters": (
        kernel("    o[0] = 1\n", name="k" * 1000),
        "k.py:3:1: error: name 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...' is 1000 bytes long, "
        "more than the limit of 100 bytes",
        "use a shorter name (kernel and variant names become file names)",
    ),
    "unicode_name_over_100_bytes": (
        kernel("    о" * 1 + "ж" * 51 + " = x\n    o[0] = 1\n"),
        "k.py:4:5: error: name '" + "о" + "ж" * 36 + "...' is 104 bytes long, more than the "
        "limit of 100 bytes",
        "use a shorter name (kernel and variant names become file names)",
    ),
    # sizes and counts
    "helpers_calling_the_previous_one_twice": (
        "".join(
            f"def h{i}(v: u32) -> u32:\n    return h{i - 1}(v) + h{i - 1}(v)\n"
            if i
            else "def h0(v: u32) -> u32:\n    return v + 1\n"
            for i in range(30)
        )
        + kernel("    o[0] = h29(x)\n"),
        "k.py:64:12: error: inlining helper 'h29' here makes kernel 'k' larger than 100000 "
        "operations once helpers are inlined and unroll() bodies copied (the limit)",
        "call large helpers fewer times (one call inside a loop rather than many calls), "
        "unroll fewer copies, or split the kernel",
    ),
    "unrolls_inside_unrolls": (
        kernel(
            "    for a in unroll(256):\n        for b in unroll(256):\n"
            "            for c in unroll(256):\n                o[0] += x\n"
        ),
        "k.py:7:17: error: kernel 'k' is larger than 100000 operations once helpers are "
        "inlined and unroll() bodies copied (the limit)",
        "call large helpers fewer times (one call inside a loop rather than many calls), "
        "unroll fewer copies, or split the kernel",
    ),
    "constants": (
        "".join(f"C{i} = {i}\n" for i in range(10001)) + kernel("    o[0] = 1\n"),
        "k.py:10002:1: error: this file has more than 10000 constants, imported ones included "
        "(the limit)",
        "split the file, or import fewer names",
    ),
    "helpers": (
        "".join(f"def h{i}(v: u32) -> u32:\n    return v\n" for i in range(1001))
        + kernel("    o[0] = 1\n"),
        "k.py:2002:1: error: this file has more than 1000 helpers, imported ones included "
        "(the limit)",
        "split the file, or import fewer names",
    ),
    "kernels": (
        "".join(kernel("    o[0] = 1\n", name=f"k{i}") for i in range(1001)),
        "k.py:3003:1: error: this file defines more than 1000 kernels, each variant counted "
        "(the limit)",
        "split the kernels over several files",
    ),
    "file_size": (
        "# " + "x" * (1 << 20) + "\n" + kernel("    o[0] = 1\n"),
        "k.py:1:1: error: k.py is larger than 1048576 bytes (the limit for one file)",
        "split it into several kernel files",
    ),
    "nul_character": (
        kernel("    o[0] = 1\x00\n"),
        "k.py:4:13: error: this kernel file contains a NUL character",
        "save it as UTF-8 text",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_limit(tmp_path, case):
    text, first, fix = CASES[case]
    assert error(tmp_path, text) == (first, fix)


def test_limits_have_the_documented_values():
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    section = readme.split("## Limits", 1)[1].split("\n## ", 1)[0]
    for name in (
        "MAX_SOURCE_BYTES",
        "MAX_FILES",
        "MAX_IMPORT_DEPTH",
        "MAX_NESTING",
        "MAX_BLOCK_NESTING",
        "MAX_NAME_BYTES",
        "MAX_CONSTANTS",
        "MAX_HELPERS",
        "MAX_KERNELS",
        "MAX_OPERATIONS",
        "MAX_FOLD_STEPS",
        "MAX_YAML_NESTING",
    ):
        value = getattr(limits, name)
        assert f"{value:,}" in section, f"README's Limits section lacks {name} = {value:,}"


def test_range_past_i32_gets_a_u32_loop_variable(tmp_path):
    (k,) = compile_src(tmp_path, kernel("    for j in range(2**31):\n        o[0] = j\n"))
    assert "2147483648u" in k.wgsl


def test_at_the_limits_everything_still_compiles(tmp_path):
    # One short of each nesting limit, helpers inlined included, builds and round-trips.
    from vyre_build.descriptor import decode

    helper = "def inc(v: u32) -> u32:\n    return " + "+".join(["v"] * 60) + "\n"
    blocks = "".join("    " * (i + 1) + f"if x > {i}:\n" for i in range(31))
    body = blocks + "    " * 32 + "o[0] = inc(" + "+".join(["x"] * 30) + ")\n"
    (k,) = compile_src(tmp_path, helper + kernel(body))
    assert decode(k.kdesc) == k.descriptor


def test_folding_work_is_bounded(tmp_path):
    # Each constant refers back to the previous ones: the steps are counted across the file.
    terms = " + ".join(f"C{i}" for i in range(50))
    text = "".join(f"C{i} = {i}\n" for i in range(50))
    text += "".join(f"D{i} = {terms}\n" for i in range(1100))
    first, fix = error(tmp_path, text + kernel("    o[0] = 1\n"))
    assert first.startswith("k.py:1061:59: ")
    assert first.endswith(
        "error: constant folding in this file takes more than 100000 steps (the limit)"
    )
    assert fix == "use fewer or simpler constants"
