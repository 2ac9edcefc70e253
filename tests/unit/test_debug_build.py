"""Debug builds without a GPU: print/assert checking, the release build's byte identity,
the constant-index error, the descriptor ops and site table, the cache key, the CLI and
bundle flag, spirv-val of every debug module, and the debug buffer's bounds.
(Dispatching debug builds on every backend: tests/gpu/test_debug.py.)"""

from __future__ import annotations

import glob
import json
import os
import struct

import numpy as np
import pytest

from test_spirv import needs_val, spirv_val
from vyre_build.build.step import build_kernel_file
from vyre_build.bundle import write_bundle
from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.cache.store import Store
from vyre_build.cli import main as cli_main
from vyre_build.commands.compile import _display as cli_display
from vyre_build.compiler import compile_file
from vyre_build.descriptor import decode, validate
from vyre_build.core.errors import KernelAssertion, KernelError
from vyre_build.runtime import debug as rdebug

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAD = "from vyre_build.lang import *\n\n\n"

WITH = HEAD + (
    "@kernel(workgroup_size=64)\n"
    "def k(x: Buffer[f32], out: Buffer[f32, 'w'], n: u32):\n"
    "    i = global_id().x\n"
    '    print("i =", i, x[i], i < n)\n'
    '    assert i < n, "i in range"\n'
    "    if i < len(out):\n"
    "        out[i] = x[i + 1] * 2.0\n"
)
WITHOUT = HEAD + (
    "@kernel(workgroup_size=64)\n"
    "def k(x: Buffer[f32], out: Buffer[f32, 'w'], n: u32):\n"
    "    i = global_id().x\n"
    "    if i < len(out):\n"
    "        out[i] = x[i + 1] * 2.0\n"
)


def write(tmp_path, text: str, name: str = "x.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def compiled(tmp_path, text: str, debug: bool, name: str = "x.py", targets=("wgsl", "spirv")):
    return compile_file(write(tmp_path, text, name), targets=targets, options={"debug": debug})


def error_of(tmp_path, body: str, debug: bool = False) -> str:
    """The error compiling `body`, from "x.py:" on (the folder is the test's own)."""
    with pytest.raises(KernelError) as exc:
        compiled(tmp_path, HEAD + body, debug)
    return "x.py:" + str(exc.value).split("/x.py:", 1)[1]


# --- release builds ---------------------------------------------------------------------


def test_release_build_is_byte_identical_without_print_and_assert(tmp_path):
    (a,) = compiled(tmp_path, WITH, False, "a.py", targets=("wgsl", "spirv", "kdesc"))
    (b,) = compiled(tmp_path, WITHOUT, False, "b.py", targets=("wgsl", "spirv", "kdesc"))
    assert (a.wgsl, a.spirv, a.kdesc) == (b.wgsl, b.spirv, b.kdesc)
    # The metadata too, but for the provenance's hash of the source text itself.
    assert a.meta["provenance"]["source"] != b.meta["provenance"]["source"]
    for meta in (a.meta, b.meta):
        meta["provenance"]["source"] = "-"
    assert a.artifacts == b.artifacts
    assert "debug" not in a.meta


def test_every_library_kernel_builds_the_same_release_artifacts_as_before(tmp_path):
    # A release build of a tree with no print/assert is what it was: the golden snapshots
    # (tests/snapshots) hold the emitted text; here the options default matches debug=False.
    path = os.path.join(ROOT, "kernels", "saxpy.py")
    plain = compile_file(path, root=os.path.join(ROOT, "kernels"))
    off = compile_file(path, root=os.path.join(ROOT, "kernels"), options={"debug": False})
    assert [k.artifacts for k in plain] == [k.artifacts for k in off]


# --- debug builds: descriptor and metadata ------------------------------------------------


def test_debug_build_lowers_to_documented_ops_and_a_site_table(tmp_path):
    (ck,) = compiled(tmp_path, WITH, True, targets=("kdesc",))
    desc = decode(ck.kdesc)
    kinds = [op.kind.args[0] for op in desc.body.ops if op.kind.name == "OpaqueNode"]
    assert kinds == ["vyre.debug.bounds", "vyre.debug.print", "vyre.debug.assert"]
    payloads = [op.kind.args[1] for op in desc.body.ops if op.kind.name == "OpaqueNode"]
    assert payloads == [struct.pack("<I", n) for n in (0, 1, 2)]
    assert validate(desc).debug_binding == 3  # one past x, out and the uniform block
    table = ck.meta["debug"]
    assert table["binding"] == 3
    assert table["sites"][:3] == [
        {
            "kind": "bounds",
            "file": "x.py",
            "line": 7,
            "col": 21,
            "access": "read",
            "array": "x",
            "types": ["u32", "u32"],
        },
        {
            "kind": "print",
            "file": "x.py",
            "line": 7,
            "col": 5,
            "format": ["i =", 0, 1, 2],
            "types": ["u32", "f32", "bool"],
        },
        {
            "kind": "assert",
            "file": "x.py",
            "line": 8,
            "col": 5,
            "condition": "i < n",
            "message": "i in range",
            "labels": ["i", "n"],
            "types": ["u32", "u32"],
        },
    ]
    assert [s["access"] for s in table["sites"][3:]] == ["write", "read"]
    checked = check_metadata(ck.meta, "x")
    assert checked.debug is not None and len(checked.debug.sites) == 5
    assert "coarse" not in ck.meta  # a debug build dispatches its base entry only


def test_debug_site_names_an_imported_helper_file_relative_to_the_kernel(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "h.py").write_text(
        HEAD + "def get(x: Buffer[f32], i: u32) -> f32:\n    return x[i]\n"
    )
    (tmp_path / "k").mkdir()
    src = HEAD.replace("\n\n\n", "\nfrom lib.h import get\n\n\n") + (
        "@kernel(workgroup_size=4)\n"
        "def k(x: Buffer[f32], out: Buffer[f32, 'w']):\n"
        "    out[global_id().x] = get(x, global_id().x)\n"
    )
    path = tmp_path / "k" / "x.py"
    path.write_text(src)
    (ck,) = compile_file(str(path), root=str(tmp_path), options={"debug": True})
    reads = [s for s in ck.meta["debug"]["sites"] if s["access"] == "read"]
    assert [(s["file"], s["line"], s["col"]) for s in reads] == [("../lib/h.py", 5, 12)]


def test_debug_and_release_builds_never_share_a_cache_entry(tmp_path):
    path = write(tmp_path, WITH)
    store = Store(str(tmp_path / "cache"))
    release = build_kernel_file(path, str(tmp_path / "r"), store=store)
    debug = build_kernel_file(path, str(tmp_path / "d"), store=store, options={"debug": True})
    assert release.key.key != debug.key.key and not debug.hit
    again = build_kernel_file(path, str(tmp_path / "d2"), store=store, options={"debug": True})
    assert again.hit and again.key.key == debug.key.key
    assert (tmp_path / "d" / "k.wgsl").read_bytes() != (tmp_path / "r" / "k.wgsl").read_bytes()
    assert (tmp_path / "d2" / "k.wgsl").read_bytes() == (tmp_path / "d" / "k.wgsl").read_bytes()


# --- frontend: what print and assert accept ---------------------------------------------


@pytest.mark.parametrize("debug", [False, True])
def test_constant_index_past_a_shared_array_is_a_compile_error(tmp_path, debug):
    body = (
        "@kernel(workgroup_size=4)\n"
        "def k(out: Buffer[u32, 'w']):\n"
        "    tile = shared(u32, 4)\n"
        "    tile[4] = 1\n"
        "    out[0] = tile[0]\n"
    )
    assert error_of(tmp_path, body, debug) == (
        "x.py:7:10: error: index 4 is past the end of shared array 'tile' (4 elements)\n"
        "        tile[4] = 1\n"
        "             ^\n"
        "  fix: use an index from 0 to 3, or declare it larger: shared(u32, 5)"
    )


def test_constant_index_past_a_local_array_is_a_compile_error_on_reads_and_atomics(tmp_path):
    body = (
        "N = 3\n\n\n@kernel(workgroup_size=4)\n"
        "def k(out: Buffer[f32, 'w']):\n"
        "    acc = local_array(f32, N)\n"
        "    out[0] = acc[N]\n"
    )
    msg = error_of(tmp_path, body)
    assert msg.splitlines()[0] == (
        "x.py:10:18: error: index 3 is past the end of local array 'acc' (3 elements)"
    )
    assert msg.splitlines()[-1] == (
        "  fix: use an index from 0 to 2, or declare it larger: local_array(f32, 4)"
    )
    body = (
        "@kernel(workgroup_size=4)\n"
        "def k(out: Buffer[u32, 'w']):\n"
        "    hist = shared(u32, 8)\n"
        "    atomic_add(hist, 9, 1)\n"
        "    out[0] = hist[0]\n"
    )
    assert error_of(tmp_path, body).splitlines()[0] == (
        "x.py:7:22: error: index 9 is past the end of shared array 'hist' (8 elements)"
    )


@pytest.mark.parametrize(
    "line, message, fix",
    [
        (
            'print(f"i = {i}")',
            "8:11: error: f-strings are not supported in kernels",
            'pass the values as arguments: print("x =", x)',
        ),
        (
            "print(vec4f(1.0))",
            "8:11: error: print and assert report i32, u32, f32 and bool values, not vec4f",
            "pass its components: v.x, v.y, v.z, v.w",
        ),
        (
            'print("x", sep="")',
            "8:20: error: print takes no keyword arguments ('sep')",
            "values are printed separated by spaces, one line per call",
        ),
        (
            "print(twice(i))",
            "8:11: error: print and assert arguments cannot call helpers with statements "
            "(they run only in debug builds)",
            "assign the helper's result to a local first and pass the local",
        ),
        (
            "print(atomic_add(out, 0, 1))",
            "8:11: error: print and assert arguments cannot hold an atomic (they run only in "
            "debug builds)",
            "assign the value to a local first and pass the local",
        ),
        (
            "assert i < 4, i",
            "8:19: error: an assert message must be a string literal",
            'write assert cond, "message"; print(...) values before it to see them',
        ),
        (
            "assert i",
            "8:12: error: condition must be bool, got u32",
            "compare explicitly, e.g. x != 0",
        ),
        (
            "j = print(i)",
            "8:9: error: print(...) has no value",
            "call it as a statement of its own",
        ),
    ],
)
@pytest.mark.parametrize("debug", [False, True])
def test_print_and_assert_refuse_what_they_cannot_report(tmp_path, line, message, fix, debug):
    body = (
        "def twice(v: u32) -> u32:\n"
        "    w = v * 2\n"
        "    return w\n\n\n"
        "@kernel(workgroup_size=4)\n"
        "def k(out: Buffer[u32, 'rw']):\n"
        "    i = global_id().x\n"
        f"    {line}\n"
    )
    msg = error_of(tmp_path, body, debug)
    assert msg.splitlines()[0] == "x.py:" + message.replace("8:", "12:", 1)
    assert msg.splitlines()[-1] == f"  fix: {fix}"


def test_print_takes_at_most_sixteen_values(tmp_path):
    body = (
        "@kernel(workgroup_size=4)\n"
        "def k(out: Buffer[u32, 'w']):\n"
        f"    print({', '.join(['1'] * 17)})\n"
    )
    assert "error: print reports at most 16 values (the limit)" in error_of(tmp_path, body)


# --- the SPIR-V and WGSL of debug builds --------------------------------------------------


@needs_val
def test_every_library_kernel_debug_build_passes_spirv_val(tmp_path):
    kernels = os.path.join(ROOT, "kernels")
    count = 0
    for path in sorted(glob.glob(os.path.join(kernels, "*.py"))):
        for ck in compile_file(path, root=kernels, targets=("spirv",), options={"debug": True}):
            spirv_val(ck.spirv, tmp_path, ck.stem)
            count += 1
    assert count == 102  # 63, the 21 single-pass reduce/scan kernels (issue 23), lib_mm_f16 x2,
    # lib_mm_bf16 x2, lib_scan_pipe x3 (a bench candidate),
    # the 7 lib_matmul tile and stage variants and the 4 short-row norm designs (tuning
    # candidates)


@needs_val
def test_debug_build_of_shared_local_and_atomic_accesses_passes_spirv_val(tmp_path):
    (ck,) = compiled(tmp_path, DEBUG_MEMORY, True)
    sites = ck.meta["debug"]["sites"]
    assert [(s["access"], s["array"]) for s in sites if s["kind"] == "bounds"] == [
        ("write", "tile"),
        ("read", "idx"),  # a store's index, its check, then its value
        ("write", "acc"),
        ("read", "idx"),
        ("read", "tile"),
        ("read", "idx"),
        ("atomic", "hist"),
        ("write", "out"),
        ("read", "acc"),
    ]
    spirv_val(ck.spirv, tmp_path)
    assert "_vy_debug_claim" in ck.wgsl


DEBUG_MEMORY = HEAD + (
    "@kernel(workgroup_size=4)\n"
    "def s(idx: Buffer[u32], hist: Buffer[u32, 'rw'], out: Buffer[u32, 'w']):\n"
    "    tile = shared(u32, 4)\n"
    "    acc = local_array(u32, 2)\n"
    "    i = global_id().x\n"
    "    tile[local_id().x] = i\n"
    "    barrier()\n"
    "    if i < len(idx):\n"
    "        acc[idx[i] % 3] = tile[idx[i]]\n"
    "        atomic_add(hist, idx[i], 1)\n"
    "        out[i] = acc[1]\n"
)


# --- the debug buffer -------------------------------------------------------------------


def _meta(sites):
    return check_metadata(
        {
            "name": "k",
            "variant": None,
            "workgroup_size": [1],
            "grid": [1],
            "bindings": [],
            "uniform": None,
            "debug": {"binding": 0, "sites": sites},
        },
        "k",
    )


BOUNDS = {
    "kind": "bounds",
    "file": "x.py",
    "line": 3,
    "col": 9,
    "access": "read",
    "array": "x",
    "types": ["u32", "u32"],
}


def test_a_full_debug_buffer_counts_what_it_drops_and_writes_nothing_past_its_end(capsys):
    buf = np.zeros(2 + 13, np.uint32)  # room for two 6-word records, not three
    guard = np.full(4, 0xDEADBEEF, np.uint32)
    whole = np.concatenate([buf, guard])
    view = whole[:15]
    rows = np.array([[0, g, 0, 0, 100 + g, 100] for g in range(3)], np.uint32)
    rdebug.append_records(view, [rows])
    assert list(whole[15:]) == [0xDEADBEEF] * 4
    assert view[0] == 18 and view[1] == 1
    with pytest.raises(KernelAssertion) as exc:
        rdebug.report(_meta([BOUNDS]), view)
    assert str(exc.value) == (
        "Kernel 'k' (x.py:3:9): out-of-bounds read of 'x': index 100, length 100 "
        "(global_id (0, 0, 0))\n"
        "1 more report in this dispatch:\n"
        "  Kernel 'k' (x.py:3:9): out-of-bounds read of 'x': index 101, length 100 "
        "(global_id (1, 0, 0))\n"
        "(1 more were dropped: the debug buffer was full)"
    )
    assert exc.value.dropped == 1 and len(exc.value.reports) == 2
    assert capsys.readouterr().err == (
        "vyre: kernel 'k': the debug buffer was full: 1 reports dropped\n"
    )


def test_reports_are_ordered_by_invocation_and_values_decoded_by_type(capsys):
    site = {
        "kind": "print",
        "file": "x.py",
        "line": 5,
        "col": 5,
        "format": ["v", 0, 1, "b", 2],
        "types": ["i32", "f32", "bool"],
    }
    rows = [
        [0, 1, 0, 0, 0xFFFFFFFF, 0x3FC00000, 1],
        [0, 0, 0, 0, 7, 0x80000000, 0],
    ]
    words = np.zeros(2 + 14, np.uint32)
    rdebug.append_records(words, [np.array(rows, np.uint32)])
    rdebug.report(_meta([site]), words)
    assert capsys.readouterr().out == (
        "x.py:5:5 [k (0, 0, 0)] v 7 -0.0 b False\nx.py:5:5 [k (1, 0, 0)] v -1 1.5 b True\n"
    )


def test_cli_compile_debug_and_bundle_show_name_the_build(tmp_path, capsys):
    path = write(tmp_path, WITH)
    assert cli_main(["compile", path, "--debug", "-o", str(tmp_path / "out")]) == 0
    meta = json.loads((tmp_path / "out" / "k.meta.json").read_text())
    assert meta["debug"]["binding"] == 3
    # Files are named as the command line named them (the folder is the test's own).
    assert {s["file"] for s in meta["debug"]["sites"]} == {
        os.path.dirname(cli_display(path)) + "/x.py"
    }
    bundle = str(tmp_path / "k.vyrebundle")
    (ck,) = compiled(tmp_path, WITH, True)
    arts = {s: b for s, b in ck.artifacts.items() if s != ".meta.json"}
    write_bundle(bundle, [{"meta": ck.meta, "artifacts": arts}])
    capsys.readouterr()
    assert cli_main(["bundle", "show", bundle, "k"]) == 0
    out = capsys.readouterr().out
    assert "build      debug (1 print, 1 assert, 3 bounds sites; debug buffer at binding 3)" in out
    assert cli_main(["bundle", "ls", bundle]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"1 kernel(s) in {bundle} (1 of them a debug build: bundle show says more)"
    )


def test_a_bad_debug_record_in_metadata_is_refused_by_field():
    from vyre_build.core.errors import BundleError

    with pytest.raises(BundleError) as exc:
        _meta([{**BOUNDS, "kind": "trace"}])
    assert str(exc.value) == (
        "k: metadata field 'debug.sites[0].kind' must be one of print, assert, bounds, got 'trace'"
    )
    with pytest.raises(BundleError) as exc:
        _meta([{**BOUNDS, "kind": "print", "format": ["x", 2]}])
    assert str(exc.value) == (
        "k: metadata field 'debug.sites[0].format[1]' must be an integer in 0..1, got 2"
    )


def test_the_cpu_backend_refuses_a_kdesc_whose_debug_buffer_the_metadata_lacks(tmp_path):
    from vyre_build.core.errors import DeviceError
    from vyre_build.runtime import load_kernel

    (debug,) = compiled(tmp_path, WITH, True, targets=("kdesc",))
    (release,) = compiled(tmp_path, WITH, False, name="y.py", targets=("kdesc",))
    with pytest.raises(DeviceError) as exc:
        load_kernel(release.meta, kdesc=debug.kdesc, backend="cpu")
    assert str(exc.value) == (
        "Kernel 'k': the .kdesc has its debug buffer at binding 3, the metadata at None "
        "(rebuild both together)"
    )
