"""`bundle verify --rebuild-from SRC_DIR`: rebuild a bundle from its kernel tree and compare."""

from __future__ import annotations

import json
import os
import shutil

import blake3
import pytest

import vyre_build.build.step
from vyre_build.bundle import read_bundle, write_bundle
from vyre_build.bundle.keys import generate_key_pair, write_key_pair
from vyre_build.build.rebuild import rebuild_and_compare
from vyre_build.cli import main as cli_main
from vyre_build.compiler import compile_file, compiler_identity
from vyre_build.core.errors import BundleError

HELPER = """\
from vyre_build.lang import f32


def twice(v: f32) -> f32:
    return v * 2.0
"""

SCALE = """\
from vyre_build.lang import Buffer, f32, global_id, kernel

from .helpers import twice


@kernel(workgroup_size=64)
def scale(x: Buffer[f32], y: Buffer[f32, "w"]):
    i = global_id().x
    if i < len(y):
        y[i] = twice(x[i]) + 1.0
"""

ADD = """\
from vyre_build.lang import Buffer, f32, i32, global_id, kernel


@kernel(workgroup_size=64, variants={"f32": {"T": f32}, "i32": {"T": i32}})
def add(a: Buffer[T], b: Buffer[T], out: Buffer[T, "w"]):
    i = global_id().x
    if i < len(out):
        out[i] = a[i] + b[i]
"""


def write_tree(root) -> str:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (("helpers.py", HELPER), ("scale.py", SCALE), ("add.py", ADD)):
        (root / name).write_text(text)
    return str(root)


def build(tree: str, out: str, sign_key=None) -> None:
    """A bundle of every kernel of `tree`, made through compile_file (not the rebuild path)."""
    entries = []
    for name in sorted(os.listdir(tree)):
        for k in compile_file(os.path.join(tree, name), targets=("kdesc", "spirv", "wgsl")):
            arts = {s: b for s, b in k.artifacts.items() if s != ".meta.json"}
            entries.append({"meta": k.meta, "artifacts": arts})
    write_bundle(out, entries, sign_key=sign_key)


@pytest.fixture
def shipped(tmp_path):
    """(bundle path, kernel tree it was built from, secret key, public key)."""
    tree = write_tree(tmp_path / "kernels")
    secret, public = write_key_pair(tmp_path / "rel.key", generate_key_pair("release"))
    bundle = str(tmp_path / "k.vyrebundle")
    build(tree, bundle, sign_key=secret)
    return bundle, tree, secret, public


def compare(bundle: str, tree: str, **kw) -> dict:
    with read_bundle(bundle) as r:
        return rebuild_and_compare(r, tree, **kw)


def by_id(report: dict) -> dict:
    return {k["id"]: k for k in report["kernels"]}


def test_rebuild_matches_byte_for_byte(shipped):
    bundle, tree, _, _ = shipped
    report = compare(bundle, tree)
    assert report["identical"] is True and report["same_kernels"] is True
    assert report["compiler"] == compiler_identity()
    assert report["targets"] == ["kdesc", "spirv", "wgsl"]
    assert {k["id"]: (k["status"], k["file"]) for k in report["kernels"]} == {
        "add.f32": ("same", "add.py"),
        "add.i32": ("same", "add.py"),
        "scale": ("same", "scale.py"),
    }
    assert report["source_mismatches"] == [] and report["errors"] == []


def test_one_edited_kernel_is_named_with_its_artifacts_and_source_hash(shipped):
    bundle, tree, _, _ = shipped
    path = os.path.join(tree, "scale.py")
    recorded = blake3.blake3(open(path, "rb").read()).hexdigest()
    edited = SCALE.replace("+ 1.0", "+ 3.0")
    with open(path, "w") as f:
        f.write(edited)
    report = compare(bundle, tree)
    assert report["identical"] is False and report["same_kernels"] is False
    kernels = by_id(report)
    assert kernels["add.f32"]["status"] == kernels["add.i32"]["status"] == "same"
    scale = kernels["scale"]
    assert (scale["status"], scale["file"], scale["meta_differs"]) == ("differs", "scale.py", True)
    assert [d["suffix"] for d in scale["artifacts"]] == [".kdesc", ".spv", ".wgsl"]
    assert all(0 < d["first_offset"] < d["bundle_size"] for d in scale["artifacts"])
    assert report["source_mismatches"] == [
        {
            "kernel": "scale",
            "kind": "source",
            "recorded": recorded,
            "tree": blake3.blake3(edited.encode()).hexdigest(),
            "tree_file": "scale.py",
            "recorded_matches": None,
        }
    ]


def test_edited_helper_names_the_import_hash_and_the_kernel(shipped, capsys):
    bundle, tree, _, _ = shipped
    helper = os.path.join(tree, "helpers.py")
    old = blake3.blake3(open(helper, "rb").read()).hexdigest()
    shutil.copy(helper, os.path.join(tree, "helpers_old.txt"))  # a copy keeps the old bytes
    with open(helper, "w") as f:
        f.write(HELPER.replace("2.0", "4.0"))
    report = compare(bundle, tree)
    assert by_id(report)["scale"]["status"] == "differs"
    assert report["source_mismatches"] == [
        {
            "kernel": "scale",
            "kind": "import",
            "recorded": old,
            "tree": None,
            "tree_file": "scale.py",
            "recorded_matches": "helpers_old.txt",
        }
    ]
    assert cli_main(["bundle", "verify", bundle, "--rebuild-from", tree]) == 1
    assert (
        f"  kernel 'scale': recorded import hash {old} is not among the imports of the "
        "tree's scale.py; the tree's helpers_old.txt has that hash"
    ) in capsys.readouterr().out.splitlines()


def test_missing_and_extra_kernels(shipped, capsys):
    bundle, tree, _, _ = shipped
    os.rename(os.path.join(tree, "scale.py"), os.path.join(tree, "scale_renamed.txt"))
    with open(os.path.join(tree, "more.py"), "w") as f:
        f.write(SCALE.replace("def scale", "def more"))
    report = compare(bundle, tree)
    kernels = by_id(report)
    assert kernels["scale"]["status"] == "missing-from-tree" and kernels["scale"]["file"] is None
    assert (kernels["more"]["status"], kernels["more"]["file"]) == ("not-in-bundle", "more.py")
    (mismatch,) = report["source_mismatches"]
    assert (mismatch["kind"], mismatch["tree"], mismatch["recorded_matches"]) == (
        "source",
        None,
        "scale_renamed.txt",
    )
    assert cli_main(["bundle", "verify", bundle, "--rebuild-from", tree]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[3:] == [
        "  kernel 'more' (more.py): built by the tree, not in the bundle",
        "  kernel 'scale': in the bundle, but the tree builds no such kernel",
        f"  kernel 'scale': recorded source hash {mismatch['recorded']}: the tree builds no "
        "such kernel; the tree's scale_renamed.txt has that hash",
        "2 of 4 kernel(s) differ",
    ]


def test_a_file_that_no_longer_compiles_is_reported(shipped):
    bundle, tree, _, _ = shipped
    with open(os.path.join(tree, "add.py"), "a") as f:
        f.write(
            "\n\n@kernel(workgroup_size=64)\ndef broken(x: Buffer[f32]):\n    x[0] = undefined\n"
        )
    report = compare(bundle, tree)
    (error,) = report["errors"]
    assert error.startswith("add.py: does not compile: ") and "undefined" in error
    assert by_id(report)["add.f32"]["status"] == "missing-from-tree"


def test_refuses_another_compiler_identity(shipped):
    bundle, tree, _, _ = shipped
    other = {"version": "0.0.9", "source_hash": "00" * 32}
    with pytest.raises(BundleError) as info:
        compare(bundle, tree, compiler_identity=other)
    mine = compiler_identity()
    assert str(info.value) == (
        f"{bundle}: built by vyre_build {mine['version']} (compiler source hash "
        f"{mine['source_hash']}), but the installed compiler is vyre_build 0.0.9 (compiler "
        f"source hash {'00' * 32}); install the recorded version to rebuild it (a different "
        "compiler gives different bytes whatever the sources)"
    )


def test_refuses_a_bundle_without_provenance_and_a_missing_tree(tmp_path, shipped):
    bundle, tree, _, _ = shipped
    with pytest.raises(BundleError) as info:
        compare(bundle, str(tmp_path / "nope"))
    assert str(info.value) == (
        f"--rebuild-from {tmp_path / 'nope'}: not a directory (give the kernel tree)"
    )
    (k,) = compile_file(os.path.join(tree, "scale.py"))
    meta = {key: v for key, v in k.meta.items() if key != "provenance"}
    bare = str(tmp_path / "bare.vyrebundle")
    write_bundle(bare, [{"meta": meta, "artifacts": {".wgsl": k.wgsl.encode()}}])
    with pytest.raises(BundleError) as info:
        compare(bare, tree)
    assert str(info.value) == (
        f"{bare}: kernel 'scale' records no compiler identity (meta.provenance.compiler): "
        "its origin cannot be rebuilt"
    )


# --- through the CLI --------------------------------------------------------------------------


def test_cli_verify_rebuild_from_match(shipped, capsys):
    bundle, tree, _, public = shipped
    assert cli_main(["bundle", "verify", bundle, "--key", public, "--rebuild-from", tree]) == 0
    out = capsys.readouterr().out.splitlines()
    ident = compiler_identity()
    key_id = read_bundle(bundle).signature.key_id
    assert out == [
        f"{bundle}: ok (3 kernel(s), every artifact verified)",
        f"{bundle}: signed by 'release' (key id {key_id}), a trusted key; signature verified",
        f"{bundle}: rebuilt from {tree} with vyre_build {ident['version']} (compiler source "
        f"hash {ident['source_hash']}): byte-identical (3 kernel(s); the signature aside)",
    ]


def test_cli_verify_rebuild_from_mismatch(shipped, capsys):
    bundle, tree, _, _ = shipped
    path = os.path.join(tree, "scale.py")
    recorded = blake3.blake3(open(path, "rb").read()).hexdigest()
    with open(path, "w") as f:
        f.write(SCALE.replace("+ 1.0", "+ 3.0"))
    now = blake3.blake3(open(path, "rb").read()).hexdigest()
    assert cli_main(["bundle", "verify", bundle, "--rebuild-from", tree]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[2].endswith(": DIFFERS (targets kdesc, spirv, wgsl)")
    assert out[3].startswith("  kernel 'scale' (scale.py): .kdesc differs from byte ")
    assert out[3].endswith("; metadata differs") and ".spv differs" in out[3]
    assert out[4:] == [
        f"  kernel 'scale': recorded source hash {recorded} is not the tree's scale.py (which "
        f"hashes to {now}); no file of the tree has that hash",
        "1 of 3 kernel(s) differ",
    ]
    assert cli_main(["bundle", "verify", bundle, "--rebuild-from", tree, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["problems"] == []
    assert [k["id"] for k in doc["rebuild"]["kernels"] if k["status"] != "same"] == ["scale"]


def test_cli_refuses_other_compiler_without_traceback(shipped, capsys, monkeypatch):
    bundle, tree, _, _ = shipped
    other = {"version": "9.9.9", "source_hash": "11" * 32}
    monkeypatch.setattr(vyre_build.build.step, "compiler_identity", lambda *a: other)
    assert cli_main(["bundle", "verify", bundle, "--rebuild-from", tree]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.err.startswith(f"{bundle}: built by vyre_build ")
    assert "but the installed compiler is vyre_build 9.9.9" in captured.err


def test_version_1_bundle_compared_kernel_by_kernel(shipped, tmp_path, capsys):
    _, tree, _, _ = shipped
    bundle = str(tmp_path / "v1.vyrebundle")
    build(tree, bundle)
    with open(bundle, "rb") as f:
        data = bytearray(f.read())
    # Turn it into the version 1 file the old writer made from the same entries.
    from test_bundle import manifest_of, with_header, with_manifest

    doc = manifest_of(bytes(data))
    doc["version"] = 1
    with open(bundle, "wb") as f:
        f.write(with_header(with_manifest(bytes(data), doc), version=1))
    assert cli_main(["bundle", "verify", bundle, "--rebuild-from", tree]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith(
        ": every kernel's artifacts and metadata identical (3 kernel(s); a version 1 bundle, "
        "so the file is not compared as a whole)"
    )
