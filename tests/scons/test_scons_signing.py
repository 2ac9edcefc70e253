"""End-to-end: `$VYRESIGNKEY` makes scons sign the bundle; the signed bundle is proven from source."""

from __future__ import annotations


import pytest
from scons_helpers import SCONSTRUCT, bundled, compiled, run_scons, vyre

from vyre_build.bundle import read_bundle
from vyre_build.bundle.keys import generate_key_pair, load_public_key, write_key_pair

pytestmark = pytest.mark.scons

SIGNED = SCONSTRUCT.replace(
    "toolpath=[vyre_build.build.scons_tool.toolpath()])",
    "toolpath=[vyre_build.build.scons_tool.toolpath()],\n"
    "                  VYRESIGNKEY=ARGUMENTS.get('key', '#keys/release.key'))",
)


def test_scons_signs_reproducibly_and_the_bundle_proves_its_origin(project):
    root, cache = project
    assert SIGNED != SCONSTRUCT
    (root / "SConstruct").write_text(SIGNED)
    (root / "keys").mkdir()
    secret, public = write_key_pair(root / "keys" / "release.key", generate_key_pair("release"))
    run_scons(root, cache)
    bundle = root / "dist" / "kernels.vyrebundle"
    first = bundle.read_bytes()
    with read_bundle(bundle, trusted_keys=[public]) as r:
        assert r.signer == load_public_key(public) and len(r.ids) == 4
    assert not bundled(run_scons(root, cache))  # a null build stays null
    run_scons(root, cache, "-c")
    run_scons(root, cache)
    assert bundle.read_bytes() == first  # Ed25519 is deterministic: the whole file repeats

    proc = vyre(
        root, cache, "bundle", "verify", str(bundle), "--key", public, "--rebuild-from", "kernels"
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].endswith("a trusted key; signature verified")
    assert lines[2].endswith("byte-identical (4 kernel(s); the signature aside)")

    k2 = root / "kernels" / "k2.py"
    k2.write_text(k2.read_text().replace("x[i] * 3", "x[i] * 7"))
    proc = vyre(root, cache, "bundle", "verify", str(bundle), "--rebuild-from", "kernels")
    assert proc.returncode == 1
    assert [line.split(":")[0] for line in proc.stdout.splitlines()[3:5]] == [
        "  kernel 'k2' (k2.py)",
        "  kernel 'k2'",
    ]
    assert proc.stdout.splitlines()[-1] == "1 of 4 kernel(s) differ"


def test_a_new_key_re_signs_and_a_missing_key_fails_cleanly(project):
    root, cache = project
    (root / "SConstruct").write_text(SIGNED)
    (root / "keys").mkdir()
    write_key_pair(root / "keys" / "release.key", generate_key_pair("release"))
    _, other_public = write_key_pair(root / "keys" / "other.key", generate_key_pair("other"))
    run_scons(root, cache)
    proc = run_scons(root, cache, "key=#keys/other.key")
    assert bundled(proc)
    with read_bundle(root / "dist" / "kernels.vyrebundle", trusted_keys=[other_public]) as r:
        assert r.signer.comment == "other"
    proc = run_scons(root, cache, "key=#keys/missing.key", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert (
        f"dist/kernels.vyrebundle: {root / 'keys' / 'missing.key'}: cannot read key file: "
        "No such file or directory"
    ) in proc.stderr


def test_the_environment_variable_signs_and_the_sconstruct_value_wins(project):
    root, cache = project
    (root / "keys").mkdir()
    _, release = write_key_pair(root / "keys" / "release.key", generate_key_pair("release"))
    _, other = write_key_pair(root / "keys" / "other.key", generate_key_pair("other"))
    bundle = root / "dist" / "kernels.vyrebundle"
    run_scons(root, cache)  # the plain SConstruct, no variable anywhere: unsigned
    with read_bundle(bundle) as r:
        assert r.signer is None
    # `VYRESIGNKEY=keys/release.key scons`: relative to the SConstruct's folder; the new
    # key is in the bundle action's signature, so the bundle is rebuilt and signed.
    proc = run_scons(root, cache, env={"VYRESIGNKEY": "keys/release.key"})
    assert bundled(proc) and not compiled(proc)
    with read_bundle(bundle, trusted_keys=[release]) as r:
        assert r.signer.comment == "release"
    assert not bundled(run_scons(root, cache, env={"VYRESIGNKEY": "keys/release.key"}))
    proc = run_scons(root, cache, env={"VYRESIGNKEY": str(root / "keys" / "other.key")})
    with read_bundle(bundle, trusted_keys=[other]) as r:
        assert bundled(proc) and r.signer.comment == "other"
    # The SConstruct's construction variable wins over the environment's.
    (root / "SConstruct").write_text(SIGNED)
    run_scons(root, cache, env={"VYRESIGNKEY": "keys/other.key"})
    with read_bundle(bundle, trusted_keys=[release]) as r:
        assert r.signer.comment == "release"
    proc = run_scons(root, cache, check=False, env={"VYRESIGNKEY": "keys/none.key"})
    assert proc.returncode == 0  # the SConstruct's key is used; the missing one never read
    (root / "SConstruct").write_text(SCONSTRUCT)
    proc = run_scons(root, cache, check=False, env={"VYRESIGNKEY": "keys/none.key"})
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert (
        f"dist/kernels.vyrebundle: {root / 'keys' / 'none.key'}: cannot read key file: "
        "No such file or directory"
    ) in proc.stderr
