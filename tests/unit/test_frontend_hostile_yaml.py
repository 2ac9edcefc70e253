"""Hostile variants YAMLs and other inputs the frontend reads: clear errors at line:col,
never a traceback (UnicodeDecodeError, RecursionError inside the YAML composer, ...)."""

import pytest

from vyre_build.compiler import compile_file
from vyre_build.descriptor import decode
from vyre_build.core.errors import KernelError

KERNEL = (
    "from vyre_build.lang import *\n"
    "@kernel(workgroup_size=64)\n"
    'def add(a: Buffer[T], out: Buffer[T, "w"]):\n'
    "    out[0] = a[0]\n"
)
SHAPE = "variants.yaml maps file -> kernel -> variant -> {param: value}, in plain YAML"


def yaml_error(tmp_path, yaml_bytes: bytes) -> tuple[str, str | None]:
    (tmp_path / "variants.yaml").write_bytes(yaml_bytes)
    (tmp_path / "add.py").write_text(KERNEL)
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / "add.py"), display_path="add.py", targets=("kdesc",))
    assert "Traceback" not in str(info.value)
    return str(info.value).splitlines()[0], info.value.fix


CASES = {
    "byte_0xff": (
        b"add.py:\n  add:\n    f\xff: {T: f32}\n",
        "variants.yaml:3:6: error: this variants file is not valid UTF-8 (byte 0xff: "
        "invalid start byte)",
        "save it as UTF-8 text",
    ),
    "nested_10000_deep_flow": (
        b"add.py: " + b"[" * 10000 + b"]" * 10000 + b"\n",
        "variants.yaml:1:24: error: nesting deeper than 16 levels (the limit)",
        SHAPE,
    ),
    "nested_deep_block": (
        b"".join(b" " * i + b"k%d:\n" % i for i in range(40)) + b" " * 40 + b"x: 1\n",
        "variants.yaml:17:17: error: nesting deeper than 16 levels (the limit)",
        SHAPE,
    ),
    "too_large": (
        b"# " + b"x" * (1 << 20) + b"\n",
        "variants.yaml:1:1: error: variants.yaml is larger than 1048576 bytes (the limit for "
        "one file)",
        "split it into several kernel files",
    ),
    "anchors_and_aliases": (
        b"add.py:\n  add:\n    f32: &v {T: f32}\n    i32: *v\n",
        "variants.yaml:3:10: error: YAML anchors and aliases (&name, *name) are not allowed here",
        SHAPE,
    ),
    "python_tag": (
        b"add.py:\n  add:\n    f32: {T: !!python/name:os.system f32}\n",
        "variants.yaml:3:14: error: YAML tags (tag:yaml.org,2002:python/name:os.system) are "
        "not allowed here",
        SHAPE,
    ),
    "duplicate_key": (
        b"add.py:\n  add:\n    f32: {T: f32}\n    f32: {T: i32}\n",
        "variants.yaml:4:5: error: 'f32' appears twice in this mapping",
        "keep one of them",
    ),
    "huge_hex_value": (
        b"add.py:\n  add:\n    f32: {T: f32, N: 0x" + b"f" * 80 + b"}\n",
        "variants.yaml:3:22: error: integer constant out of range: a 320-bit integer does "
        "not fit in 64 bits",
        "constants are folded in 64 bits (-2**63 .. 2**64-1); use a smaller value",
    ),
    "huge_decimal_value": (
        b"add.py:\n  add:\n    f32: {T: f32, N: " + b"9" * 5000 + b"}\n",
        "variants.yaml:3:22: error: variant value '9999999999999999999999999999999999999...' "
        "is neither a type nor a number",
        "use bool, i32, u32, f32, a vector type (vec4f, vec2u, ...) or a number",
    ),
    "float_past_f32": (
        b"add.py:\n  add:\n    f32: {T: f32, N: 1e39}\n",
        "variants.yaml:3:22: error: constant 1e+39 does not fit in f32 (largest is 3.402823e+38)",
        "use a smaller value",
    ),
    "unicode_position": (
        "add.py:\n  add:\n    жжж: {T: f65}\n".encode(),
        "variants.yaml:3:14: error: variant value 'f65' is neither a type nor a number",
        "use bool, i32, u32, f32, a vector type (vec4f, vec2u, ...) or a number",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_variants_yaml(tmp_path, case):
    data, first, fix = CASES[case]
    assert yaml_error(tmp_path, data) == (first, fix)


def test_an_empty_variants_yaml_declares_nothing(tmp_path):
    (tmp_path / "variants.yaml").write_text("# nothing yet\n")
    (tmp_path / "k.py").write_text(KERNEL.replace("T]", "f32]").replace("T,", "f32,"))
    assert [k.stem for k in compile_file(str(tmp_path / "k.py"), targets=("kdesc",))] == ["add"]


def test_a_fifo_variants_yaml_is_refused_without_blocking(tmp_path):
    import os

    os.mkfifo(tmp_path / "variants.yaml")
    (tmp_path / "add.py").write_text(KERNEL)
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / "add.py"), display_path="add.py")
    assert str(info.value).splitlines()[0] == (
        "variants.yaml:1:1: error: variants.yaml is a FIFO, not a kernel source"
    )


def test_carets_count_characters_on_non_ascii_lines(tmp_path):
    (tmp_path / "k.py").write_text(
        "from vyre_build.lang import *\n@kernel\ndef k(o: Buffer[u32, 'w']):\n"
        "    ж = 1\n    o[0] = жж\n"
    )
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / "k.py"), display_path="k.py")
    lines = str(info.value).splitlines()
    assert lines[0] == "k.py:5:12: error: unknown name 'жж'"
    assert lines[2] == "    " + " " * 11 + "^~"


def test_at_the_block_limit_the_descriptor_still_decodes(tmp_path):
    # 29 blocks in the kernel + a helper that returns early from a stepped loop (3 more):
    # the deepest body the frontend lets through, well within the .kdesc decoder's 64.
    helper = (
        "def h(v: u32) -> vec4f:\n    for q in range(0, v, 3):\n        if q > 5:\n"
        "            return vec4f(1.0)\n    return vec4f(2.0)\n"
    )
    body, indent = "", "    "
    for i in range(29):
        body += indent + (
            f"while x > {i}:\n"
            if i % 3 == 0
            else f"for j{i} in range(0, x, 2):\n"
            if i % 3 == 1
            else f"if x > {i}:\n"
        )
        indent += "    "
    body += indent + "o[0] = h(x)\n" + indent + "break\n"
    src = "@kernel(workgroup_size=64)\ndef k(o: Buffer[vec4f, 'rw'], x: u32):\n" + body
    (tmp_path / "k.py").write_text("from vyre_build.lang import *\n" + helper + src)
    (k,) = compile_file(str(tmp_path / "k.py"))
    assert decode(k.kdesc) == k.descriptor
    # One block more is refused by the frontend, not by the decoder.
    (tmp_path / "k.py").write_text(
        "from vyre_build.lang import *\n"
        + helper
        + src.replace("o[0] = h(x)", "if x > 99:\n" + indent + "    o[0] = h(x)")
    )
    with pytest.raises(KernelError, match="blocks nested deeper than 32"):
        compile_file(str(tmp_path / "k.py"))


def test_the_build_keys_section_of_a_hostile_variants_file_is_bounded_too(tmp_path):
    # the cache key reads the variants file's section before any compile: a deep, aliased or
    # undecodable file is passed on whole (the compile then reports it), never a traceback
    from vyre_build.build.inputs import variants_section

    src = tmp_path / "k.py"
    src.write_text("x = 1\n")
    yml = tmp_path / "variants.yaml"
    for raw in (
        b"[" * 20000 + b"]" * 20000,
        b"\xff\xfe\x00",
        b"a: &x [1]\nb: *x\n",
        b"!!python/none\n",
    ):
        yml.write_bytes(raw)
        assert variants_section(str(yml), str(src)) == raw
    yml.write_bytes(b"k.py: {a: {T: f32}}\nother.py: {b: {T: u32}}\n")
    assert variants_section(str(yml), str(src)) == b"k.py:\n  a:\n    T: f32\n"
