"""The metadata checker (vyre_build/bundle/metadata_check.py): each malformed field is one
BundleError naming the kernel, the field and the bad value, from the checker, through the
reader, and through `vyre-build bundle show/ls` (no traceback, exit 1)."""

from __future__ import annotations

import copy

import pytest

from vyre_build.bundle import read_bundle, write_bundle
from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.cli import main as cli_main
from vyre_build.core.errors import BundleError

GOOD = {
    "name": "fill",
    "variant": "u32",
    "id": "fill.u32",
    "workgroup_size": [8, 8, 1],
    "grid": ["cols", "rows"],
    "bindings": [
        {"name": "src", "binding": 0, "kind": "buffer", "dtype": "vec4f", "access": "r"},
        {"name": "out", "binding": 1, "kind": "buffer", "dtype": "u32", "access": "w"},
        {"name": "cols", "binding": 2, "kind": "scalar", "dtype": "u32", "offset": 0},
        {"name": "rows", "binding": 2, "kind": "scalar", "dtype": "i32", "offset": 4},
        {"name": "scale", "binding": 2, "kind": "scalar", "dtype": "f16", "offset": 8},
    ],
    "uniform": {"binding": 2, "size": 16},
    "variant_values": {"T": "u32"},
    "features": ["subgroup_basic", "f16"],
    "some_future_key": {"ignored": True},
}


def edited(path: str, value) -> dict:
    """GOOD with the field at dotted `path` ("bindings.1.binding") set to `value`
    (a value of DELETE removes it)."""
    meta = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node = meta
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is DELETE:
        del node[last if isinstance(node, dict) else int(last)]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return meta


DELETE = object()


def message(meta) -> str:
    with pytest.raises(BundleError) as info:
        check_metadata(meta, "kernel 'fill.u32'")
    return str(info.value)


def test_a_sound_record_is_read_into_typed_fields():
    m = check_metadata(GOOD, "k")
    assert (m.id, m.name, m.variant, m.workgroup_size) == ("fill.u32", "fill", "u32", (8, 8, 1))
    assert m.grid == ("cols", "rows")
    assert [b.name for b in m.buffers] == ["src", "out"]
    assert [(b.name, b.offset) for b in m.scalars] == [("cols", 0), ("rows", 4), ("scale", 8)]
    assert (m.uniform.binding, m.uniform.size) == (2, 16)
    assert m.features == ("f16", "subgroup_basic")  # sorted
    assert m.record is GOOD and m.coarse is None
    coarse = check_metadata({**GOOD, "coarse": {"entry": "main_x4", "factor": 4}}, "k").coarse
    assert (coarse.entry, coarse.factor) == ("main_x4", 4)
    short = check_metadata({**GOOD, "workgroup_size": [64], "features": None, "grid": None}, "k")
    assert short.workgroup_size == (64, 1, 1) and short.features == () and short.grid == ()


P = "kernel 'fill.u32': metadata field "


@pytest.mark.parametrize(
    "path, value, expected",
    [
        ("bindings", "abc", "'bindings' must be a list, got 'abc'"),
        ("bindings", None, "'bindings' must be a list, got None"),
        ("bindings", DELETE, "'bindings' must be a list, got None"),
        ("bindings.0", 1, "'bindings[0]' must be an object, got 1"),
        (
            "bindings.0.binding",
            2**40,
            "'bindings[0].binding' must be an integer in 0..2147483647, got 1099511627776",
        ),
        (
            "bindings.0.binding",
            -1,
            "'bindings[0].binding' must be an integer in 0..2147483647, got -1",
        ),
        (
            "bindings.0.binding",
            10**400,
            "'bindings[0].binding' must be an integer in 0..2147483647, got an integer of 1329 bits",
        ),
        (
            "bindings.0.binding",
            True,
            "'bindings[0].binding' must be an integer in 0..2147483647, got True",
        ),
        (
            "bindings.0.binding",
            "0",
            "'bindings[0].binding' must be an integer in 0..2147483647, got '0'",
        ),
        (
            "bindings.1.binding",
            0,
            "'bindings[1].binding' 0 of buffer 'out' is also that of buffer 'src'",
        ),
        (
            "bindings.1.binding",
            2,
            "'bindings[1].binding' 2 of buffer 'out' is also that of the uniform block",
        ),
        (
            "bindings.2.binding",
            0,
            "'bindings[2].binding' 0 of scalar 'cols' is that of buffer 'src'",
        ),
        ("bindings.0.name", "x y", "'bindings[0].name' must be a parameter name, got 'x y'"),
        ("bindings.0.name", "class", "'bindings[0].name' must be a parameter name, got 'class'"),
        ("bindings.0.name", 7, "'bindings[0].name' must be a parameter name, got 7"),
        ("bindings.1.name", "src", "'bindings[1].name' repeats 'src' (also bindings[0])"),
        (
            "bindings.0.kind",
            "image",
            "'bindings[0].kind' must be one of buffer, scalar, got 'image'",
        ),
        (
            "bindings.0.dtype",
            "f64",
            "'bindings[0].dtype' must be one of f32, i32, u32, f16, bf16, vec2f, vec4f, vec2i, vec4i, vec2u, vec4u, vec2h, vec4h, vec2bf, vec4bf, got 'f64'",
        ),
        (
            "bindings.2.dtype",
            "vec4f",
            "'bindings[2].dtype' must be one of f32, i32, u32, f16, bf16, got 'vec4f'",
        ),
        ("bindings.0.access", "x", "'bindings[0].access' must be one of r, w, rw, got 'x'"),
        ("bindings.0.access", DELETE, "'bindings[0].access' must be one of r, w, rw, got None"),
        (
            "bindings.2.offset",
            2,
            "'bindings[2].offset' must be a non-negative multiple of 4, got 2",
        ),
        (
            "bindings.2.offset",
            None,
            "'bindings[2].offset' must be a non-negative multiple of 4, got None",
        ),
        ("bindings.3.offset", 0, "'bindings' place scalars 'cols' and 'rows' at the same offset 0"),
        (
            "bindings.3.offset",
            16,
            "'uniform.size' is 16 bytes but scalar 'rows' ends at byte 20 (offset 16)",
        ),
        ("uniform", 5, "'uniform' must be an object {binding, size} or null, got 5"),
        ("uniform", None, "'uniform' is null but scalar 'cols' needs a uniform block"),
        ("uniform.size", 12, "'uniform.size' must be an integer in 16..65536, got 12"),
        ("uniform.size", 24, "'uniform.size' must be a multiple of 16, got 24"),
        ("uniform.size", 2**31, "'uniform.size' must be an integer in 16..65536, got 2147483648"),
        ("uniform.binding", [1], "'uniform.binding' must be an integer in 0..2147483647, got [1]"),
        ("workgroup_size", [], "'workgroup_size' must list 1-3 sizes, got []"),
        ("workgroup_size", 64, "'workgroup_size' must be a list, got 64"),
        ("workgroup_size", [1, 2, 3, 4], "'workgroup_size' has 4 entries, more than 3"),
        ("workgroup_size.1", 0, "'workgroup_size[1]' must be an integer in 1..2147483647, got 0"),
        ("grid", "y", "'grid' must be a list, got 'y'"),
        ("grid.0", "nope", "'grid[0]' names no parameter: 'nope'"),
        ("grid.0", "scale", "'grid[0]' names scalar 'scale' of type f16; a grid needs i32 or u32"),
        ("grid.0", -3, "'grid[0]' must be an integer in 0..4294967295, got -3"),
        ("grid.0", 1.5, "'grid[0]' must be an integer in 0..4294967295, got 1.5"),
        ("features", "f16", "'features' must be a list, got 'f16'"),
        (
            "features.0",
            3,
            "'features[0]' must be a feature name (a string of 1..128 characters), got 3",
        ),
        ("features.1", "subgroup_basic", "'features' lists 'subgroup_basic' twice"),
        ("variant_values", [1], "'variant_values' must be an object of names to values, got [1]"),
        (
            "variant_values.T",
            {"x": 1},
            "'variant_values' must be an object of names to values, got {'T': {'x': 1}}",
        ),
        ("coarse", 4, "'coarse' must be an object {entry, factor} or null, got 4"),
        (
            "coarse",
            {"entry": "main x4", "factor": 4},
            "'coarse.entry' must be an entry point name, got 'main x4'",
        ),
        (
            "coarse",
            {"entry": "main_x4", "factor": 1},
            "'coarse.factor' must be an integer in 2..64, got 1",
        ),
        ("name", "", "'name' must be a non-empty string, got ''"),
        ("variant", 3, "'variant' must be a non-empty string or null, got 3"),
        ("id", "fill", "'id' must be name[.variant] ('fill', 'u32'), got 'fill'"),
    ],
)
def test_each_malformed_field_is_named(path, value, expected):
    assert message(edited(path, value)) == P + expected


def test_a_record_that_is_not_an_object():
    with pytest.raises(BundleError) as info:
        check_metadata([1], "kernel 'k'")
    assert str(info.value) == "kernel 'k': metadata must be an object, got [1]"


def test_a_uniform_without_scalars_and_long_values_are_bounded():
    no_scalars = {**GOOD, "bindings": GOOD["bindings"][:2], "grid": ["out"]}
    assert message(no_scalars) == P + "'uniform' is given but the kernel has no scalar parameters"
    long_name = edited("bindings.0.name", "n" * 1000)
    assert message(long_name) == P + "'bindings[0].name' is longer than 200 characters"
    assert len(message(edited("grid.0", "g" * 10_000))) < 200


# --- through the reader and the CLI ----------------------------------------------------


def bundle_with(tmp_path, meta: dict):
    path = tmp_path / "bad.vyrebundle"
    # The writer checks only what makes an id; the rest is what a hostile file could hold.
    write_bundle(path, [{"meta": meta, "artifacts": {".wgsl": b"// k\n"}}])
    return path


ISSUE_CASES = [  # the cases issue 15 and issue 13 name
    ({"bindings": "abc"}, "'bindings' must be a list, got 'abc'"),
    ({"bindings": [1]}, "'bindings[0]' must be an object, got 1"),
    ({"bindings": None}, "'bindings' must be a list, got None"),
    ({"uniform": 5}, "'uniform' must be an object {binding, size} or null, got 5"),
]


@pytest.mark.parametrize("edit, expected", ISSUE_CASES)
def test_the_reader_checks_a_kernels_metadata_on_first_read(tmp_path, edit, expected):
    path = bundle_with(tmp_path, {**GOOD, **edit})
    with read_bundle(path) as reader:  # opening reads the manifest only
        assert reader.ids == ["fill.u32"]
        with pytest.raises(BundleError) as info:
            reader.entry("fill.u32")
    assert str(info.value) == f"{path}: kernel 'fill.u32': metadata field {expected}"


@pytest.mark.parametrize("command", ["show", "ls"])
@pytest.mark.parametrize("edit, expected", ISSUE_CASES)
def test_bundle_show_and_ls_report_malformed_metadata(tmp_path, capsys, command, edit, expected):
    path = bundle_with(tmp_path, {**GOOD, **edit})
    argv = ["bundle", command, str(path)] + (["fill.u32"] if command == "show" else [])
    assert cli_main(argv) == 1
    captured = capsys.readouterr()
    assert captured.err == f"{path}: kernel 'fill.u32': metadata field {expected}\n"
    assert captured.out == ""


def test_bundle_show_lists_the_features(tmp_path, capsys):
    path = bundle_with(tmp_path, GOOD)
    assert cli_main(["bundle", "show", str(path), "fill.u32"]) == 0
    assert "features   subgroup_basic, f16\n" in capsys.readouterr().out


def test_the_reader_checks_each_kernel_once(tmp_path, monkeypatch):
    import vyre_build.bundle.reader as reader_module

    calls = []
    real = reader_module.check_metadata
    monkeypatch.setattr(reader_module, "check_metadata", lambda m, w: calls.append(w) or real(m, w))
    with read_bundle(bundle_with(tmp_path, GOOD)) as reader:
        for _ in range(3):
            reader.entry("fill.u32")
        assert reader.kernel_meta("fill.u32").id == "fill.u32"
    assert len(calls) == 1


@pytest.mark.parametrize(
    "path, value, problem",
    [
        ("bindings.0.binding", True, "'bindings[0].binding' must be an integer"),
        ("bindings.0.binding", 0.0, "'bindings[0].binding' must be an integer"),
        ("bindings.0.any_length", 1, "'bindings[0].any_length' must be true or false"),
        ("bindings.1.any_length", True, "'bindings[1].any_length' is true but buffer 'out'"),
        ("bindings.0.access", "x", "'bindings[0].access' must be one of r, w, rw"),
        ("bindings.0.name", "class", "'bindings[0].name' must be a parameter name"),
        ("bindings.2.offset", False, "'bindings[2].offset' must be a non-negative multiple"),
        ("bindings.2.offset", 0.0, "'bindings[2].offset' must be a non-negative multiple"),
        ("bindings.2.binding", 2.0, "'bindings[2].binding' must be an integer"),
        ("bindings.2.dtype", "f64", "'bindings[2].dtype' must be one of"),
        ("bindings.3.offset", 6, "'bindings[3].offset' must be a non-negative multiple"),
    ],
)
def test_a_binding_checked_before_does_not_let_a_look_alike_through(path, value, problem):
    # checked buffer bindings are kept by value and type (True == 1 == 1.0 in a dict key)
    first = check_metadata(copy.deepcopy(GOOD), "k")
    again = check_metadata(copy.deepcopy(GOOD), "k")
    assert again.bindings == first.bindings
    with pytest.raises(BundleError) as info:
        check_metadata(edited(path, value), "k")
    assert problem in str(info.value)
