"""Module constants under a variant (frontend/constants.py): a constant of the kernel's file
that reads a name the variant binds, directly or through other constants of the file, is
folded again with the variant's bindings; every other constant keeps its folded value, and
constants imported from another file keep that file's values. The kernels run on the cpu
backend, so the values checked are the ones the kernel writes."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelError
from vyre_build.core.limits import MAX_FOLD_STEPS
from vyre_build.frontend import check_module, load_module
from vyre_build.frontend.ir import Const
from vyre_build.runtime import load_kernel
from vyre_build.runtime.backends.cpu import CpuDevice

PANEL = """\
from vyre_build.lang import *

BK = 8
PANEL = BK * 32
A = 3
B = A * 2
C: u32 = B + 1
OTHER = 5 * 7


@kernel(workgroup_size=1, grid=1{variants})
def k(out: Buffer[u32, "w"]):
    out[0] = u32(PANEL)
    out[1] = C
    out[2] = u32(OTHER)
"""

DECORATOR = ', variants={"big": {"BK": 16, "A": 10}, "base": {"BK": 8, "A": 3}}'


def written(tmp_path, source: str, name: str = "k.py", files: dict | None = None) -> dict:
    """Compile `source` as `name` (beside `files`: name -> text) and run each kernel
    instance on the cpu backend: stem -> the values it writes to `out` (4 u32)."""
    for other, text in (files or {}).items():
        (tmp_path / other).write_text(text)
    path = tmp_path / name
    path.write_text(source)
    out = {}
    for k in compile_file(str(path), targets=("kdesc",), display_path=name):
        kern = load_kernel(k.meta, kdesc=k.kdesc, device=CpuDevice())
        out[k.stem] = kern(out=4).array("out", np.uint32).tolist()[:3]
    return out


def error_of(tmp_path, source: str, name: str = "k.py", files: dict | None = None):
    for other, text in (files or {}).items():
        (tmp_path / other).write_text(text)
    (tmp_path / name).write_text(source)
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / name), targets=("kdesc",), display_path=name)
    return info.value


def test_a_derived_constant_follows_the_variant_and_keeps_the_module_value_without(tmp_path):
    got = written(tmp_path, PANEL.format(variants=DECORATOR))
    assert got == {
        "k.base": [8 * 32, 3 * 2 + 1, 35],
        "k.big": [16 * 32, 10 * 2 + 1, 35],  # PANEL and the chain C = B + 1, B = A * 2
    }
    assert written(tmp_path, PANEL.format(variants=""), "plain.py") == {"k": [256, 7, 35]}


def test_variants_yaml_binds_the_same_way(tmp_path):
    yaml = "k.py:\n  k:\n    big: {BK: 16, A: 10}\n    base: {BK: 8, A: 3}\n"
    got = written(tmp_path, PANEL.format(variants=""), files={"variants.yaml": yaml})
    assert got == {"k.base": [256, 7, 35], "k.big": [512, 21, 35]}


def test_only_the_constants_that_read_a_bound_name_are_folded_again(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(PANEL.format(variants=', variants={"big": {"BK": 16}}').replace("C\n", "7\n"))
    mod = load_module(str(path))
    base = dict(mod.constants)
    (prog,) = check_module(mod)
    assert [s.value.value for s in prog.body] == [512, 7, 35]
    (under,) = mod.variant_constants.values()
    assert under.values == {"PANEL": Const("int", 512)}
    assert under.depends["OTHER"] == frozenset()  # looked at, not folded again
    assert mod.constants == base  # the module's own values are untouched
    # A kernel without variants builds no variant table.
    path.write_text(PANEL.format(variants=""))
    mod = load_module(str(path))
    check_module(mod)
    assert mod.variant_constants == {}


def test_a_parameter_used_only_through_a_constant_counts_as_used(tmp_path):
    src = PANEL.format(variants=', variants={"big": {"BK": 16}}')
    src = src.replace("    out[1] = C\n", "").replace("u32(OTHER)", "u32(A)")
    assert written(tmp_path, src) == {"k.big": [512, 0, 3]}
    unused = src.replace('"BK": 16', '"BK": 16, "B": 2')  # nothing reads B any more
    err = error_of(tmp_path, unused, "u.py")
    assert err.message == "variant 'big' sets B, which kernel 'k' never uses"


def test_a_bound_constant_is_the_variants_value_and_what_reads_it_follows(tmp_path):
    src = PANEL.format(variants=', variants={"v": {"B": 100}}')
    assert written(tmp_path, src) == {"k.v": [256, 101, 35]}


def test_imported_constants_keep_their_files_values(tmp_path):
    lib = "BK = 8\nPANEL = BK * 32\n"
    src = (
        "from vyre_build.lang import *\n"
        "from .lib import BK, PANEL\n"
        "Q = BK * 2\n"
        '@kernel(workgroup_size=1, grid=1, variants={"v": {"BK": 16}})\n'
        'def k(out: Buffer[u32, "w"]):\n'
        "    out[0] = u32(PANEL)\n"
        "    out[1] = u32(Q)\n"
        "    out[2] = u32(BK)\n"
    )
    # PANEL is lib.py's (it reads lib.py's BK); Q is this file's and reads the bound BK.
    assert written(tmp_path, src, files={"lib.py": lib}) == {"k.v": [256, 32, 16]}


def test_shared_bytes_from_a_derived_constant(tmp_path):
    src = (
        "from vyre_build.lang import *\n"
        "N = 4096\n"
        "BYTES = N * 4\n"
        '@kernel(workgroup_size=1, grid=1, shared_bytes=BYTES, variants={"big": {"N": 8192}})\n'
        'def k(out: Buffer[u32, "w"]):\n'
        "    tile = shared(u32, N)\n"
        "    tile[0] = u32(BYTES)\n"
        "    barrier()\n"
        "    out[0] = tile[0]\n"
    )
    (tmp_path / "k.py").write_text(src)
    (k,) = compile_file(str(tmp_path / "k.py"), targets=("kdesc",))
    assert k.meta["shared_bytes"] == 32768
    kern = load_kernel(k.meta, kdesc=k.kdesc, device=CpuDevice())
    assert kern(out=1).array("out", np.uint32).tolist() == [32768]


def test_an_error_only_under_a_variant_names_it(tmp_path):
    src = PANEL.format(variants=DECORATOR).replace("OTHER = 5 * 7", "OTHER = 64 // (16 - BK)")
    err = error_of(tmp_path, src)
    assert (err.path, err.line, err.col) == ("k.py", 8, 9)
    assert err.message == (
        "division by zero in a constant expression (constant 'OTHER' under variant 'big' "
        "of kernel 'k', which sets BK = 16)"
    )
    assert err.fix == "check the divisor"
    assert str(err).splitlines()[1:3] == [
        "    OTHER = 64 // (16 - BK)",
        "            ^~~~~~~~~~~~~~~",
    ]


def test_a_constant_the_kernel_does_not_read_is_not_folded_again(tmp_path):
    src = PANEL.format(variants=DECORATOR).replace(
        "OTHER = 5 * 7", "OTHER = 5 * 7\nUNUSED = 64 // (BK - 16)"
    )
    assert written(tmp_path, src)["k.big"] == [512, 21, 35]


@pytest.mark.parametrize(
    ("binding", "where", "message", "fix"),
    [
        (
            '"A": 1.5',
            (7, 10),
            "a constant of type f32 cannot be used as u32 (constant 'C' under variant 'v' "
            "of kernel 'k', which sets A = 1.5)",
            "cast it explicitly, e.g. u32(...)",
        ),
        (
            '"A": f32',
            (6, 5),
            "'A' is a type (f32), not a number (constant 'B' under variant 'v' of kernel "
            "'k', which sets A = f32)",
            "bind a number, or give the type parameter a name no constant reads",
        ),
    ],
)
def test_a_type_change_under_a_variant_names_it(tmp_path, binding, where, message, fix):
    err = error_of(tmp_path, PANEL.format(variants=f', variants={{"v": {{{binding}}}}}'))
    assert ((err.line, err.col), err.message, err.fix) == (where, message, fix)


def test_refolding_counts_against_the_files_folding_steps(tmp_path):
    n = 9000  # a chain: each link is 3 steps to fold, and refolding it walks it again
    lines = ["from vyre_build.lang import *", "C0 = 1"]
    lines += [f"C{i} = C{i - 1} + 1" for i in range(1, n)]
    variants = ", ".join(f'"v{j}": {{"C0": {j + 2}}}' for j in range(4))
    lines += [
        f"@kernel(workgroup_size=1, grid=1, variants={{{variants}}})",
        'def k(out: Buffer[u32, "w"]):',
        f"    out[0] = u32(C{n - 1})",
    ]
    assert 3 * n < MAX_FOLD_STEPS < 3 * n + 4 * 4 * n  # the load fits; four refolds do not
    err = error_of(tmp_path, "\n".join(lines) + "\n")
    assert err.message.startswith(
        f"constant folding in this file takes more than {MAX_FOLD_STEPS} steps (the limit) "
        "(constant '"
    )
    assert "under variant 'v" in err.message and "which sets C0 = " in err.message


def test_helpers_see_their_own_files_constants(tmp_path):
    lib = (
        "from vyre_build.lang import *\n"
        "BK = 8\n"
        "PANEL = BK * 32\n"
        "def lib_panel() -> u32:\n"
        "    return u32(PANEL)\n"
    )
    src = (
        "from vyre_build.lang import *\n"
        "from .lib import lib_panel\n"
        "BK = 8\n"
        "PANEL = BK * 32\n"
        "def own_panel() -> u32:\n"
        "    return u32(PANEL)\n"
        '@kernel(workgroup_size=1, grid=1, variants={"v": {"BK": 16}})\n'
        'def k(out: Buffer[u32, "w"]):\n'
        "    out[0] = own_panel()\n"
        "    out[1] = lib_panel()\n"
    )
    # A helper of the kernel's file follows the variant; lib.py's helper reads lib.py's PANEL.
    assert written(tmp_path, src, files={"lib.py": lib}) == {"k.v": [512, 256, 0]}


WORKGROUP = """\
from vyre_build.lang import *

WG = 64
GRID = WG * 3


@kernel(workgroup_size=(WG, 1), grid=GRID{variants})
def k(out: Buffer[u32, "w"]):
    i = global_id().x
    out[i] = local_id().x * 1000 + workgroup_id().x + workgroup_size().x * 100000
"""


def test_workgroup_size_and_grid_follow_the_variant(tmp_path):
    src = WORKGROUP.format(variants=', variants={"small": {"WG": 4}, "odd": {"WG": 3}}')
    (tmp_path / "k.py").write_text(src)
    got = {}
    for k in compile_file(str(tmp_path / "k.py"), targets=("kdesc",)):
        got[k.stem] = (k.meta["workgroup_size"], k.meta["grid"])
        kern = load_kernel(k.meta, kdesc=k.kdesc, device=CpuDevice())
        wg = k.meta["workgroup_size"][0]
        values = kern(out=16).array("out", np.uint32).tolist()
        # Invocation i of the grid (3 * WG of them) is local id i % WG of workgroup i // WG;
        # past the grid nothing is written.
        want = [(i % wg) * 1000 + i // wg + wg * 100000 for i in range(3 * wg)]
        assert values == want + [0] * (16 - 3 * wg)
    # WG is read only by the decorator (and GRID), and counts as used.
    assert got == {"k.odd": ([3, 1, 1], [9]), "k.small": ([4, 1, 1], [12])}
    # Without variants, or where no variant binds WG, the module's values stand.
    (tmp_path / "m.py").write_text(WORKGROUP.format(variants=""))
    (k,) = compile_file(str(tmp_path / "m.py"), targets=("kdesc",))
    assert (k.meta["workgroup_size"], k.meta["grid"]) == ([64, 1, 1], [192])


def test_variants_yaml_sets_the_workgroup_size_the_same_way(tmp_path):
    (tmp_path / "variants.yaml").write_text("k.py:\n  k:\n    small: {WG: 4}\n")
    (tmp_path / "k.py").write_text(WORKGROUP.format(variants=""))
    (k,) = compile_file(str(tmp_path / "k.py"), targets=("kdesc",))
    assert (k.stem, k.meta["workgroup_size"], k.meta["grid"]) == ("k.small", [4, 1, 1], [12])


@pytest.mark.parametrize(
    ("binding", "col", "message", "fix"),
    [
        (
            '"WG": 512',
            24,
            "workgroup size (512, 1, 1) (512 invocations) exceeds the portable limit of 256 "
            "invocations (per axis (256, 256, 64)) (workgroup_size under variant 'v' of kernel "
            "'k', which sets WG = 512)",
            "use at most 256 invocations, e.g. (16, 16), or change WG in variant 'v'",
        ),
        (
            '"WG": 0',
            25,
            "workgroup size entries must be positive integers, got 0 (workgroup_size under "
            "variant 'v' of kernel 'k', which sets WG = 0)",
            "write e.g. workgroup_size=(16, 16), or change WG in variant 'v'",
        ),
        (
            '"GRID": 4294967296',
            38,
            "grid entry 4294967296 is out of range: invocations per axis are 1 .. 4294967295 "
            "(grid under variant 'v' of kernel 'k', which sets GRID = 4294967296)",
            "give a positive count that fits in u32, or change GRID in variant 'v'",
        ),
        (
            '"WG": f32',
            25,
            "'WG' is a type (f32), not a number (workgroup_size under variant 'v' of kernel 'k')",
            "bind a number to WG in variant 'v', or give the type parameter a name "
            "workgroup_size does not read",
        ),
    ],
)
def test_a_decorator_error_only_under_a_variant_names_it(tmp_path, binding, col, message, fix):
    err = error_of(tmp_path, WORKGROUP.format(variants=f', variants={{"v": {{{binding}}}}}'))
    assert (err.path, err.line, err.col) == ("k.py", 7, col)
    assert (err.message, err.fix) == (message, fix)
    assert str(err).splitlines()[1] == "    " + WORKGROUP.splitlines()[6].format(
        variants=f', variants={{"v": {{{binding}}}}}'
    )


@pytest.mark.parametrize(
    ("first", "imported"),
    [
        ("X = 1", "BK as X"),
        ("BK = 1", "BK"),
        ("def X() -> u32:\n    return u32(1)", "BK as X"),
        ("X = 1", "helper as X"),
        ('@kernel(grid=1)\ndef X(out: Buffer[u32, "w"]):\n    out[0] = u32(1)', "BK as X"),
    ],
)
def test_an_import_cannot_replace_a_name_already_defined(tmp_path, first, imported):
    lib = "from vyre_build.lang import *\nBK = 8\ndef helper() -> u32:\n    return u32(2)\n"
    src = f"from vyre_build.lang import *\n{first}\nfrom .lib import {imported}\n"
    err = error_of(tmp_path, src, files={"lib.py": lib})
    line = 2 + first.count("\n") + 1
    name = imported.split()[-1]
    assert (err.path, err.line, err.col) == ("k.py", line, 18)
    assert (err.message, err.fix) == (
        f"'{name}' is defined twice",
        "give each definition its own name",
    )
    assert str(err).splitlines()[1:3] == [
        f"    from .lib import {imported}",
        "                     " + "^" + "~" * (len(imported) - 1),
    ]
