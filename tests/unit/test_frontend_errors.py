"""Bad kernel sources: each gives a KernelError with file:line:col, the line, a caret and a fix."""

import textwrap

import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelError

HEAD = "from vyre_build.lang import *\n\n"


def compile_text(tmp_path, body, name="k.py", extra_files=None):
    for fname, text in (extra_files or {}).items():
        (tmp_path / fname).write_text(textwrap.dedent(text))
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    return compile_file(str(path), targets=("kdesc",), display_path=name)


def kernel(body, sig='out: Buffer[u32, "rw"]', deco="@kernel(workgroup_size=64)"):
    return f"{deco}\ndef k({sig}):\n" + textwrap.indent(textwrap.dedent(body), "    ")


# (source, expected "line:col", message fragment, fix fragment, caret line fragment)
CASES = {
    "unknown_name": (
        kernel("out[0] = zz\n"),
        "5:14",
        "unknown name 'zz'",
        "assign it before use",
        "out[0] = zz",
    ),
    "typo_suggestion": (
        kernel("value = 1\nout[0] = u32(valeu)\n"),
        "6:18",
        "unknown name 'valeu'",
        "did you mean 'value'",
        None,
    ),
    "mixed_int_types": (
        kernel("a: i32 = 1\nb: u32 = 2\nout[0] = u32(a + b)\n"),
        "7:18",
        "mismatched operand types i32 and u32",
        "convert one side",
        None,
    ),
    "int_float_mix": (
        kernel("a = 1.5\nout[0] = u32(a + global_id().x)\n"),
        "6:18",
        "mismatched operand types f32 and u32",
        None,
        None,
    ),
    "int_true_division": (
        kernel("out[0] = out[1] / 2\n"),
        "5:14",
        "'/' is float division",
        "use '//'",
        None,
    ),
    "store_read_only": (
        kernel("x[0] = 1.0\n", sig="x: Buffer[f32]"),
        "5:5",
        "buffer 'x' is read-only",
        'Buffer[f32, "w"]',
        None,
    ),
    "read_write_only": (
        kernel("out[0] = out[1]\n", sig='out: Buffer[u32, "w"]'),
        "5:14",
        "write-only and cannot be read",
        '"rw"',
        None,
    ),
    "atomic_on_float": (
        kernel("atomic_add(x, 0, 1.0)\n", sig='x: Buffer[f32, "rw"]'),
        "5:16",
        "atomics need an i32 or u32 array",
        None,
        None,
    ),
    "atomic_read_only": (
        kernel("atomic_add(x, 0, 1)\n", sig="x: Buffer[u32]"),
        "5:16",
        "read-only",
        None,
        None,
    ),
    "while_else": (
        kernel("while out[0] < 3:\n    out[0] += 1\nelse:\n    pass\n"),
        "8:9",
        "while/else is not supported",
        "flag variable",
        None,
    ),
    "try_statement": (
        kernel("try:\n    pass\nexcept Exception:\n    pass\n"),
        "5:5",
        "'Try' statements are not supported",
        "no exceptions",
        None,
    ),
    "with_statement": (
        kernel("with open('x') as f:\n    pass\n"),
        "5:5",
        "'With' statements are not supported",
        None,
        None,
    ),
    "list_literal": (
        kernel("a = [1, 2]\n"),
        "5:9",
        "'List' expressions are not supported",
        "local_array",
        None,
    ),
    "lambda": (
        kernel("f = lambda v: v\n"),
        "5:9",
        "'Lambda' expressions are not supported",
        "helper function",
        None,
    ),
    "fstring": (
        kernel('s = f"{out}"\n'),
        "5:9",
        "'JoinedStr' expressions are not supported",
        None,
        None,
    ),
    "string_constant": (
        kernel("s = 'hello'\n"),
        "5:9",
        "str constants are not supported",
        None,
        None,
    ),
    "for_over_list": (
        kernel("for i in out:\n    pass\n"),
        "5:14",
        "for loops iterate over range",
        "range(n)",
        None,
    ),
    "float_range": (
        kernel("for i in range(1.5):\n    pass\n"),
        "5:14",
        "range() needs integers",
        None,
        None,
    ),
    "nonconstant_step": (
        kernel("for i in range(0, 10, out[0]):\n    pass\n"),
        "5:27",
        "range step must be a nonzero constant",
        "while loop",
        None,
    ),
    "assign_loop_var": (
        kernel("for i in range(4):\n    i = 2\n"),
        "6:9",
        "cannot assign to loop variable 'i'",
        None,
        None,
    ),
    "unroll_of_a_runtime_bound": (
        kernel("for i in unroll(out[0]):\n    pass\n"),
        "5:21",
        "unroll() needs constant bounds",
        "use range()",
        "for i in unroll(out[0]):",
    ),
    "unroll_too_many_copies": (
        kernel("for i in unroll(0, 2000, 2):\n    pass\n"),
        "5:14",
        "unroll() of 1000 copies of the loop body; at most 256",
        "nest an unroll inside a range loop",
        None,
    ),
    "break_in_unroll": (
        kernel("for i in unroll(4):\n    if out[i] == 0:\n        continue\n"),
        "7:13",
        "'continue' in an unroll() loop",
        "use range()",
        None,
    ),
    "break_of_an_outer_loop_in_unroll": (
        kernel(
            "for j in range(4):\n    for i in unroll(4):\n        if out[i] == 0:\n"
            "            break\n"
        ),
        "8:17",
        "'break' in an unroll() loop",
        None,
        None,
    ),
    "unroll_as_a_value": (
        kernel("out[0] = u32(unroll(3))\n"),
        "5:18",
        "unroll() can only be used as the iterable of a for loop",
        "for i in unroll(4)",
        None,
    ),
    "float_unroll": (
        kernel("for i in unroll(2.0):\n    pass\n"),
        "5:14",
        "unroll() needs integers, got f32",
        "unroll(4)",
        None,
    ),
    "break_outside_loop": (
        kernel("break\n"),
        "5:5",
        "'break' outside a loop",
        "put it inside a for or while loop",
        "break",
    ),
    "continue_in_a_helper_outside_its_loops": (
        "def h(a: i32):\n    continue\n\n" + kernel("for i in range(3):\n    h(i)\n"),
        "4:5",
        "'continue' outside a loop",
        "loop of the helper (it cannot leave its caller's loop)",
        "continue",
    ),
    "return_value_in_kernel": (
        kernel("return 1\n"),
        "5:12",
        "kernels cannot return a value",
        "buffer",
        None,
    ),
    "condition_not_bool": (
        kernel("if out[0]:\n    pass\n"),
        "5:8",
        "condition must be bool, got u32",
        "x != 0",
        None,
    ),
    "missing_annotation": (
        kernel("pass\n", sig="x"),
        "4:7",
        "kernel parameter 'x' has no type",
        "annotate it",
        None,
    ),
    "unknown_type": (
        kernel("pass\n", sig="x: Buffer[f64]"),
        "4:17",
        "unknown type 'f64'",
        "did you mean 'f32'? types are bool, i32, u32, f32, f16, bf16, vec2f",
        None,
    ),
    "bad_access_mode": (
        kernel("pass\n", sig='x: Buffer[f32, "rx"]'),
        "4:22",
        "unknown buffer access mode",
        '"rw"',
        None,
    ),
    "bool_buffer": (
        kernel("pass\n", sig='x: Buffer[bool, "rw"]'),
        "4:17",
        "buffers cannot hold bool",
        None,
        None,
    ),
    "assign_param": (
        kernel("n = 3\n", sig='out: Buffer[u32, "w"], n: u32'),
        "5:5",
        "cannot assign to kernel parameter 'n'",
        "copy it",
        None,
    ),
    "type_change": (
        kernel("a = 1\na = 1.5\n"),
        "6:9",
        "expected a value of type i32, got f32",
        None,
        None,
    ),
    "constant_too_big": (
        kernel("a: i32 = 3000000000\n"),
        "5:14",
        "does not fit in i32",
        "use u32",
        None,
    ),
    "negative_u32": (kernel("a: u32 = -1\n"), "5:14", "does not fit in u32", "i32", None),
    "import_numpy": (
        "import numpy\n",
        "3:1",
        "'import numpy' is not allowed",
        "from vyre_build.lang",
        None,
    ),
    "class_at_top": (
        "class A:\n    pass\n",
        "3:1",
        "'ClassDef' is not allowed at the top level",
        None,
        None,
    ),
    "syntax_error": (kernel("x = (1 +\n"), "5:9", "invalid syntax", "valid Python syntax", None),
    "workgroup_too_big": (
        kernel("pass\n", deco="@kernel(workgroup_size=(32, 32))"),
        "3:24",
        "exceeds the portable limit",
        "at most 256",
        None,
    ),
    "unknown_option": (
        kernel("pass\n", deco="@kernel(block=64)"),
        "3:15",
        "unknown @kernel option 'block'",
        "workgroup_size",
        None,
    ),
    "bad_variant_type": (
        kernel("pass\n", sig='x: Buffer[T, "rw"]', deco='@kernel(variants={"a": {"T": f64}})'),
        "3:30",
        "variant value 'f64' is neither a type nor a constant",
        None,
        None,
    ),
    "bad_variant_name": (
        kernel("pass\n", sig='x: Buffer[T, "rw"]', deco='@kernel(variants={"a-b": {"T": f32}})'),
        "3:19",
        "may only use letters, digits",
        None,
        None,
    ),
    "unused_variant_param": (
        kernel(
            "x[0] = 1.0\n", sig='x: Buffer[f32, "rw"]', deco='@kernel(variants={"a": {"T": f32}})'
        ),
        "3:18",
        "never uses",
        "remove it",
        None,
    ),
    "recursive_helper": (
        "def f(a: u32) -> u32:\n    return f(a)\n\n" + kernel("out[0] = f(1)\n"),
        "4:12",
        "calls itself",
        "loop",
        None,
    ),
    "helper_arg_count": (
        "def f(a: u32) -> u32:\n    return a\n\n" + kernel("out[0] = f(1, 2)\n"),
        "8:14",
        "takes 1 arguments",
        "call it as f(a)",
        None,
    ),
    "helper_one_argument_short": (
        "def h(a: u32, b: u32) -> u32:\n    return a + b\n\n" + kernel("out[0] = h(1)\n"),
        "8:14",
        "helper 'h' takes 2 arguments (a, b), got 1",
        "call it as h(a, b)",
        "h(1)",
    ),
    "builtin_argument_count": (
        kernel("y[0] = max(1.0)\n", sig='y: Buffer[f32, "rw"]'),
        "5:12",
        "max() takes 2 arguments, got 1",
        "write max(a, b)",
        "max(1.0)",
    ),
    "atomic_argument_count": (
        kernel("atomic_add(out, 0)\n"),
        "5:5",
        "atomic_add() takes 3 arguments, got 2",
        "write atomic_add(buf, index, value)",
        None,
    ),
    "range_four_arguments": (
        kernel("for i in range(0, 8, 2, 1):\n    pass\n"),
        "5:14",
        "range() takes 1 to 3 positional arguments",
        "write range(stop) or range(start, stop, step)",
        None,
    ),
    "bool_ordering": (
        kernel("if (out[0] > 0) < (out[1] > 0):\n    pass\n"),
        "5:8",
        "bools can only be compared with == and !=",
        "u32(a) < u32(b)",
        None,
    ),
    "power_assignment": (
        kernel("x = out[0]\nx **= 3\nout[0] = x\n"),
        "6:5",
        "augmented operator 'Pow' is not supported",
        "write it out: x = x ** 3",
        "x **= 3",
    ),
    "grid_four_entries": (
        kernel("pass\n", deco="@kernel(grid=(1, 1, 1, 1))"),
        "3:14",
        "grid has 1 to 3 entries",
        'give one to three entries (x, y, z), e.g. grid="n"',
        "grid=(1, 1, 1, 1)",
    ),
    "typed_constant_arithmetic_out_of_its_type": (
        "N: u32 = 5\nM = N - 10\n" + kernel("out[0] = M\n"),
        "4:5",
        "constant -5 does not fit in u32",
        "use i32 for negative values",
        "M = N - 10",
    ),
    "typed_constants_of_two_types": (
        "N: u32 = 5\nK: i32 = 2\nM = N + K\n" + kernel("out[0] = M\n"),
        "5:5",
        "cannot combine constants of type u32 and i32",
        "annotate the result",
        "M = N + K",
    ),
    "vector_constant_annotation": (
        "N: vec4f = 1.0\n" + kernel("pass\n"),
        "3:4",
        "a constant's annotation must be bool, i32, u32, f32, f16 or bf16",
        "N: u32 = 256",
        None,
    ),
    "helper_no_value": (
        "def f(a: u32):\n    pass\n\n" + kernel("out[0] = f(1)\n"),
        "8:14",
        "returns no value",
        "return annotation",
        None,
    ),
    "bool_arithmetic": (
        kernel("a = True + True\n"),
        "5:9",
        "arithmetic on bool",
        "and / or / not",
        None,
    ),
    "shared_not_top": (
        kernel("if out[0] == 0:\n    t = shared(u32, 4)\n"),
        "6:13",
        "must be at the top level",
        None,
        None,
    ),
    "barrier_as_value": (kernel("a = barrier()\n"), "5:9", "barrier() is a statement", None, None),
    "global_id_vector": (kernel("a = global_id()\n"), "5:9", "is a vector", ".x", None),
    "bad_component": (
        kernel("a = global_id().w\n"),
        "5:9",
        "unknown component '.w'",
        ".x, .y or .z",
        None,
    ),
    "atomic_in_ifexp": (
        kernel("a = atomic_add(out, 0, 1) if out[1] == 0 else 0\n"),
        "5:9",
        "would run unconditionally",
        "if statement",
        None,
    ),
    "keyword_call": (
        kernel("a = min(1, b=2)\n"),
        "5:18",
        "keyword arguments are not supported",
        None,
        None,
    ),
    "method_call": (
        kernel("a = math.sqrt(2.0)\n"),
        "5:9",
        "only plain function names",
        "sqrt(x)",
        None,
    ),
    "grid_unknown": (
        kernel("pass\n", deco='@kernel(grid="n")'),
        "3:14",
        "grid entry 'n' is not a buffer",
        None,
        '@kernel(grid="n")',
    ),
    "grid_unknown_in_a_tuple": (
        kernel("pass\n", deco='@kernel(grid=(64, "n"))'),
        "3:19",
        "grid entry 'n' is not a buffer",
        "parameters: out",
        None,
    ),
    "workgroup_size_string": (
        kernel("pass\n", deco='@kernel(workgroup_size="big")'),
        "3:24",
        "workgroup size entries must be positive integers, got 'big'",
        "workgroup_size=(16, 16)",
        None,
    ),
    "repeated_kernel_option": (
        kernel("pass\n", deco="@kernel(workgroup_size=64, workgroup_size=32)"),
        "3:43",
        "@kernel option 'workgroup_size' is given twice",
        "keep one",
        None,
    ),
    "non_ascii_kernel_name": (
        "@kernel(workgroup_size=64)\ndef ключ(out: Buffer[u32, 'w']):\n    out[0] = 1\n",
        "4:1",
        "kernel name 'ключ' may only use ASCII letters, digits and '_'",
        "its name becomes the artifact file names",
        None,
    ),
    "no_output_buffer": (
        kernel("pass\n", sig="x: Buffer[f32]"),
        "4:1",
        "writes no buffer",
        "grid=",
        None,
    ),
    "bool_scalar_param": (
        kernel("pass\n", sig='out: Buffer[u32, "w"], flag: bool'),
        "4:36",
        "cannot be bool",
        "take a u32",
        None,
    ),
    "vector_compare": (
        kernel("v = vec4f(1.0)\nif v < v:\n    pass\n"),
        "6:8",
        "comparisons are not defined on vectors",
        "v.x < w.x",
        None,
    ),
    "vector_shift": (
        kernel("v = vec4u(1)\nw = v << 2\n"),
        "6:9",
        "not defined on vec4u",
        "components",
        None,
    ),
    "vector_component": (
        kernel("v = vec2f(1.0)\nout[0] = u32(v.z)\n"),
        "6:18",
        "has no component '.z'",
        ".x, .y",
        None,
    ),
    "vector_arity": (kernel("v = vec4f(1.0, 2.0)\n"), "5:9", "takes 1 or 4 arguments", None, None),
    "vector_param": (
        kernel("pass\n", sig='out: Buffer[u32, "w"], v: vec4f'),
        "4:33",
        "cannot be a vector",
        "Buffer[vec4f]",
        None,
    ),
    "vector_component_store": (
        kernel("v = vec4f(1.0)\nv.x = 2.0\n"),
        "6:5",
        "cannot be assigned one by one",
        "new vector",
        None,
    ),
    "f32_literal_overflow": (
        kernel("x[0] = 1e40\n", sig='x: Buffer[f32, "rw"]'),
        "5:12",
        "does not fit in f32",
        "smaller value",
        None,
    ),
    "augassign_attribute": (
        kernel("x.y >>= 1\n", sig='x: Buffer[u32, "rw"]'),
        "5:5",
        "can be updated in place",
        None,
        None,
    ),
    "atomic_prefix_name": (
        kernel("atomic(out, 1, 2)\n"),
        "5:5",
        "unknown function 'atomic'",
        "did you mean 'atomic_or'?",
        None,
    ),
    "misspelt_builtin": (
        kernel("out[0] = global_idd().x\n"),
        "5:14",
        "unknown function 'global_idd'",
        "did you mean 'global_id'?",
        "out[0] = global_idd().x",
    ),
    "misspelt_helper": (
        "def scale(v: u32) -> u32:\n    return v * 2\n\n\n" + kernel("out[0] = scael(out[1])\n"),
        "9:14",
        "unknown function 'scael'",
        "did you mean 'scale'?",
        None,
    ),
    "unknown_function": (
        kernel("tally(out[0])\n"),
        "5:5",
        "unknown function 'tally'",
        "a helper: a module-level def without @kernel",
        None,
    ),
    "unknown_f16_vector_type": (
        kernel("v: vec3h = vec3h(1.0, 2.0, 3.0)\n"),
        "5:8",
        "unknown type 'vec3h'",
        "did you mean 'vec4h'? types are bool, i32, u32, f32, f16, bf16, "
        "vec2f/vec4f/vec2i/vec4i/vec2u/vec4u/vec2h/vec4h/vec2bf/vec4bf (or a variant type parameter)",
        None,
    ),
    "python_float_type": (
        kernel("v: float = 1.0\nout[0] = u32(v)\n"),
        "5:8",
        "unknown type 'float'",
        "did you mean 'f32'?",
        None,
    ),
    "lang_typo_import": (
        "from vyre_build.lang import kernal\n",
        "3:1",
        "'kernal' is not a name of vyre_build.lang",
        "did you mean 'kernel'",
        None,
    ),
    "variant_string_value": (
        kernel(
            "pass\n", sig='x: Buffer[T, "rw"]', deco='@kernel(variants={"a": {"T": "float64"}})'
        ),
        "3:30",
        "variant value 'float64'",
        "unquoted",
        None,
    ),
    "duplicate_param": (
        kernel("pass\n", sig='out: Buffer[u32, "w"], out: u32'),
        "4:30",
        "declared twice",
        "its own name",
        None,
    ),
    "shared_vector_bytes": (
        kernel("s = shared(vec4f, 1025)\n"),
        "5:23",
        "16400 bytes, more than the 16384 bytes",
        "smaller",
        None,
    ),
    "local_array_bytes": (
        kernel("s = local_array(vec2f, 4096)\n"),
        "5:28",
        "32768 bytes",
        None,
        None,
    ),
    "index_a_vector": (
        kernel("v = vec4f(1.0)\nout[0] = u32(v[0])\n"),
        "6:18",
        "'v' is a vec4f, not an array",
        ".x .y .z .w",
        None,
    ),
    "vector_condition": (
        kernel("v = vec4f(1.0)\nif v:\n    pass\n"),
        "6:8",
        "condition must be bool, got vec4f",
        "v.x != 0.0",
        None,
    ),
    "range_of_vector": (
        kernel("for j in range(vec4i(3)):\n    pass\n"),
        "5:20",
        "range() needs scalar integers",
        "range(v.x)",
        None,
    ),
    "missing_import": (
        "from .nothere import f\n",
        "3:1",
        "cannot find kernel file for module 'nothere'",
        None,
        None,
    ),
    "import_kernel": (
        "from .other import kk\n",
        "3:1",
        "is a kernel; kernels cannot be called",
        None,
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_error(tmp_path, case):
    source, where, message, fix, caret_line = CASES[case]
    extra = {
        "other.py": "from vyre_build.lang import *\n@kernel\ndef kk(o: Buffer[u32, 'w']):\n    o[0] = 1\n"
    }
    with pytest.raises(KernelError) as info:
        compile_text(tmp_path, source, extra_files=extra)
    err = info.value
    text = str(err)
    first = text.splitlines()[0]
    assert first.startswith(f"k.py:{where}: error: "), text
    assert message in first, text
    if fix is not None:
        assert "  fix: " in text and fix in text.split("  fix: ")[1], text
    lines = text.splitlines()
    assert lines[1].startswith("    ") and lines[2].strip().startswith("^"), text
    # The caret sits under the reported column.
    assert lines[2].index("^") - 4 == err.col - 1
    if caret_line:
        assert caret_line in lines[1]


def test_exact_texts_of_a_misspelt_builtin_a_bare_syntax_error_and_an_unknown_type(tmp_path):
    cases = [
        (
            kernel("i = global_idd().x\nout[i] = 1\n"),
            "k.py:5:9: error: unknown function 'global_idd'\n"
            "        i = global_idd().x\n"
            "            ^~~~~~~~~~\n"
            "  fix: did you mean 'global_id'?",
        ),
        (
            kernel("out[0] = subgroup_brodcast(out[1], 0)\n"),
            "k.py:5:14: error: unknown function 'subgroup_brodcast'\n"
            "        out[0] = subgroup_brodcast(out[1], 0)\n"
            "                 ^~~~~~~~~~~~~~~~~\n"
            "  fix: did you mean 'subgroup_broadcast'?",
        ),
        (
            kernel("x = = 1\n"),
            "k.py:5:9: error: invalid syntax\n"
            "        x = = 1\n"
            "            ^\n"
            "  fix: kernel files must be valid Python syntax",
        ),
        (
            kernel("out[0] = 1\n", sig='out: Buffer[f64, "rw"]'),
            "k.py:4:19: error: unknown type 'f64'\n"
            '    def k(out: Buffer[f64, "rw"]):\n'
            "                      ^~~\n"
            "  fix: did you mean 'f32'? types are bool, i32, u32, f32, f16, bf16, "
            "vec2f/vec4f/vec2i/vec4i/vec2u/vec4u/vec2h/vec4h/vec2bf/vec4bf (or a variant type parameter)",
        ),
    ]
    for source, expected in cases:
        with pytest.raises(KernelError) as info:
            compile_text(tmp_path, source)
        assert str(info.value) == expected


def test_the_type_list_names_every_type_of_the_language():
    from vyre_build.frontend.checker import TYPE_LIST
    from vyre_build.frontend.names import TYPE_NAMES

    listed = TYPE_LIST.removeprefix("types are ").split(" (")[0].replace("/", ", ").split(", ")
    assert sorted(listed) == sorted(TYPE_NAMES) and "f16" in listed and "vec4h" in listed


def test_error_count_is_at_least_25():
    assert len(CASES) >= 25


def test_yaml_variant_errors(tmp_path):
    (tmp_path / "variants.yaml").write_text("k.py:\n  nokernel:\n    a: {T: f32}\n")
    with pytest.raises(KernelError) as info:
        compile_text(tmp_path, kernel("pass\n", sig="x: Buffer[T, 'rw']"))
    assert str(info.value).startswith(
        "variants.yaml:2:3: error: no kernel named 'nokernel' in k.py"
    )
    (tmp_path / "variants.yaml").write_text("k.py:\n  k:\n    a: {T: f65}\n")
    with pytest.raises(KernelError) as info:
        compile_text(tmp_path, kernel("x[0] = T(1)\n", sig="x: Buffer[T, 'rw']"))
    assert "variant value 'f65' is neither a type nor a number" in str(info.value)
    # an unused parameter is shown where the YAML sets it
    (tmp_path / "variants.yaml").write_text("k.py:\n  k:\n    a: {T: f32, Q: 3}\n")
    with pytest.raises(KernelError) as info:
        compile_text(tmp_path, kernel("x[0] = T(1)\n", sig="x: Buffer[T, 'rw']"))
    assert str(info.value).startswith(
        "variants.yaml:3:17: error: variant 'a' sets Q, which kernel 'k' never uses"
    )
    # a file key naming no kernel file of the folder (its variants would be lost)
    (tmp_path / "variants.yaml").write_text(
        "k.py:\n  k:\n    a: {T: f32}\nkk.py:\n  k:\n    a: {T: f32}\n"
    )
    with pytest.raises(KernelError) as info:
        compile_text(tmp_path, kernel("x[0] = T(1)\n", sig="x: Buffer[T, 'rw']"))
    assert str(info.value).splitlines()[0] == (
        "variants.yaml:4:1: error: variants.yaml names 'kk.py', which is not a kernel file of "
        "this folder"
    )
    assert "fix: did you mean 'k.py'?" in str(info.value)


def test_cli_prints_caret_and_exits_1(tmp_path, capsys):
    from vyre_build.cli import main

    p = tmp_path / "bad.py"
    p.write_text(HEAD + kernel("out[0] = nope\n"))
    rc = main(["compile", str(p), "--target", "kdesc", "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 1
    assert ":5:14: error: unknown name 'nope'" in err
    assert "Traceback" not in err


def test_conditional_expression_literals_take_the_target_type(tmp_path):
    k = compile_text(
        tmp_path,
        kernel(
            "out[0] = 3000000000 if out[1] == 0 else 2\nv: u32 = 1 if out[2] == 0 else 2\nout[1] = v\n"
        ),
    )
    assert k[0].meta["bindings"][0]["dtype"] == "u32"


def test_grid_accepts_module_constants(tmp_path):
    k = compile_text(
        tmp_path,
        "WG = 64\n"
        + kernel("out[0] = 1\n", deco="@kernel(workgroup_size=WG, grid=(WG * 2, 'out'))"),
    )
    assert k[0].meta["grid"] == [128, "out"]


def test_select_and_conditional_expressions_broadcast_scalars(tmp_path):
    ks = compile_text(
        tmp_path,
        kernel(
            "v = o[0]\no[1] = select(o[2].x > 0.0, v, 1.0)\no[2] = 2.0 if v.y > 1.0 else v\n",
            sig='o: Buffer[vec4f, "rw"]',
        ),
    )
    assert ks[0].meta["bindings"][0]["dtype"] == "vec4f"


def test_a_helper_that_can_fall_off_its_end_is_refused(tmp_path):
    helper = (
        "def f(x: u32) -> u32:\n"
        "    if x > 3:\n        return x\n"
        "    elif x > 1:\n        return u32(2)\n\n"
    )
    with pytest.raises(KernelError) as info:
        compile_text(tmp_path, helper + kernel("    out[0] = f(out[0])\n"))
    err = info.value
    assert (err.message, err.line, err.col) == (
        "helper 'f' can reach its end without returning a value",
        3,
        1,
    )
    assert err.fix == "end it with a return (or return in both arms of its last if/else)"
    done = helper.replace("return u32(2)\n", "return u32(2)\n    else:\n        return u32(0)\n")
    compile_text(tmp_path, done + kernel("    out[0] = f(out[0])\n"))  # every path returns


def test_a_byte_order_mark_is_not_part_of_the_source(tmp_path):
    # Windows editors write UTF-8 files with a BOM; Python accepts them, and so do we.
    body = kernel("out[0] = 1\n")
    plain = compile_text(tmp_path, body, name="plain.py")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + (HEAD + body).encode("utf-8"))
    bom = compile_file(str(tmp_path / "bom.py"), targets=("kdesc",), display_path="bom.py")
    assert bom[0].kdesc == plain[0].kdesc
    (tmp_path / "bad.py").write_bytes(b"\xef\xbb\xbf" + (HEAD + kernel("out[0] = zz\n")).encode())
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / "bad.py"), targets=("kdesc",), display_path="bad.py")
    assert str(info.value).startswith("bad.py:5:14: error: unknown name 'zz'")


def test_typed_integer_constants_fold_in_their_type(tmp_path):
    from vyre_build.frontend import load_module
    from vyre_build.frontend.ir import Const

    (tmp_path / "k.py").write_text(
        HEAD
        + "N: u32 = 5\nM = N + 1\nS = N * 4 - 2\nK: i32 = -3\nJ = K * 2 + 1\nF = N // 2\n"
        + kernel("out[0] = M + S\n")
    )
    consts = load_module(str(tmp_path / "k.py"), root=str(tmp_path)).constants
    assert [consts[n] for n in ("M", "S", "J", "F")] == [
        Const("u32", 6),
        Const("u32", 18),
        Const("i32", -5),
        Const("u32", 2),
    ]
