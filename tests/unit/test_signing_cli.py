"""`vyre-build key generate`, `bundle sign`, `bundle verify --key`: the CLI round trip."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from test_bundle import ENTRIES
from test_signing import V1_BUNDLE, rehash
from vyre_build.bundle import encode_bundle, read_bundle, write_bundle
from vyre_build.bundle.keys import load_public_key
from vyre_build.cli import main as cli_main


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


@pytest.fixture
def setup(tmp_path, capsys):
    """(unsigned bundle path, {"alice"/"bob": secret key path}) made through the CLI."""
    keys = {}
    for who in ("alice", "bob"):
        path = str(tmp_path / f"{who}.key")
        code, out, _ = run(
            capsys, "key", "generate", path, *(["--comment", "Alice"] * (who == "alice"))
        )
        assert code == 0
        keys[who] = path
    bundle = str(tmp_path / "k.vyrebundle")
    write_bundle(bundle, ENTRIES)
    return bundle, keys


def test_key_generate_output_modes_and_refusal(tmp_path, capsys):
    path = str(tmp_path / "release.key")
    code, out, _ = run(capsys, "key", "generate", path)
    public = load_public_key(path + ".pub")
    assert code == 0 and out.splitlines() == [
        f"secret key: {path} (keep it private; mode 0600)",
        f"public key: {path}.pub (give it to those who load your bundles)",
        f"key id {public.key_id}, comment 'release.key'",
    ]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    before = open(path, "rb").read()
    code, _, err = run(capsys, "key", "generate", path)
    assert code == 1 and err == f"{path}: already exists; refusing to overwrite a key file\n"
    assert open(path, "rb").read() == before
    code, _, err = run(capsys, "key", "generate", str(tmp_path / "x.key"), "--comment", "a\nb")
    assert code == 1 and err == (
        "--comment 'a\\nb': must be one line of at most 200 printable characters\n"
    )


def test_sign_then_verify_names_the_signer(setup, capsys):
    bundle, keys = setup
    code, out, _ = run(capsys, "bundle", "sign", bundle, "--key", keys["alice"])
    alice = load_public_key(keys["alice"] + ".pub")
    size = os.path.getsize(bundle)
    assert (
        code == 0 and out == f"{bundle}: signed by 'Alice' (key id {alice.key_id}) ({size} bytes)\n"
    )
    assert open(bundle, "rb").read() == encode_bundle(ENTRIES, sign_key=keys["alice"])
    code, out, _ = run(capsys, "bundle", "verify", bundle, "--key", keys["alice"] + ".pub")
    assert code == 0 and out.splitlines() == [
        f"{bundle}: ok (3 kernel(s), every artifact verified)",
        f"{bundle}: signed by 'Alice' (key id {alice.key_id}), a trusted key; signature verified",
    ]
    code, out, _ = run(capsys, "bundle", "verify", bundle)
    assert code == 0 and out.splitlines()[1] == (
        f"{bundle}: signed by key id {alice.key_id} (not checked against a trusted key: "
        "give --key PUB)"
    )
    code, out, _ = run(
        capsys, "bundle", "verify", bundle, "--key", keys["alice"] + ".pub", "--json"
    )
    doc = json.loads(out)
    assert (
        code == 0
        and doc["ok"] is True
        and doc["signature"]
        == {
            "signed": True,
            "key_id": alice.key_id,
            "trusted": True,
            "comment": "Alice",
        }
    )


def test_sign_is_idempotent_and_reports_a_replaced_signature(setup, capsys, tmp_path):
    bundle, keys = setup
    out_path = str(tmp_path / "signed.vyrebundle")
    assert run(capsys, "bundle", "sign", bundle, "--key", keys["bob"], "-o", out_path)[0] == 0
    assert read_bundle(bundle).signature is None  # -o leaves the input as it was
    first = open(out_path, "rb").read()
    assert run(capsys, "bundle", "sign", out_path, "--key", keys["bob"])[0] == 0
    assert open(out_path, "rb").read() == first
    bob = load_public_key(keys["bob"] + ".pub")
    code, out, _ = run(capsys, "bundle", "sign", out_path, "--key", keys["alice"])
    assert code == 0 and out.endswith(f"; replaced the signature by key id {bob.key_id}\n")
    assert open(out_path, "rb").read() == encode_bundle(ENTRIES, sign_key=keys["alice"])


def test_verify_refusals_each_with_its_reason(setup, capsys):
    bundle, keys = setup
    alice_pub, bob_pub = keys["alice"] + ".pub", keys["bob"] + ".pub"
    code, _, err = run(capsys, "bundle", "verify", bundle, "--key", alice_pub)
    assert code == 1 and "bundle is not signed, and trusted keys are pinned" in err
    run(capsys, "bundle", "sign", bundle, "--key", keys["bob"])
    code, _, err = run(capsys, "bundle", "verify", bundle, "--key", alice_pub)
    bob = load_public_key(bob_pub)
    assert code == 1 and f"bundle is signed by key id {bob.key_id}, which is not a trusted" in err
    data = open(bundle, "rb").read()
    wgsl = ENTRIES[0]["artifacts"][".wgsl"]
    with open(bundle, "wb") as f:
        f.write(rehash(data, 2, ".wgsl", b"Y" * len(wgsl)))
    code, _, err = run(capsys, "bundle", "verify", bundle, "--key", bob_pub)
    assert code == 1 and "does not match the bundle: its header or manifest changed" in err
    code, out, _ = run(capsys, "bundle", "verify", bundle, "--key", bob_pub, "--json")
    assert code == 1 and "does not match the bundle" in json.loads(out)["problems"][0]
    code, _, err = run(capsys, "bundle", "verify", bundle)  # no key: the signature is still checked
    assert code == 1 and "the signature does not verify under the key it names" in err


def test_verify_key_file_errors_name_the_file(setup, capsys, tmp_path):
    bundle, keys = setup
    missing = str(tmp_path / "nope.pub")
    code, _, err = run(capsys, "bundle", "verify", bundle, "--key", missing)
    assert code == 1 and err == f"{missing}: cannot read key file: No such file or directory\n"
    code, _, err = run(capsys, "bundle", "verify", bundle, "--key", keys["alice"])
    assert code == 1 and err == (
        f"{keys['alice']}: this is a secret key; verifying takes the public key file "
        "(KEYFILE.pub); never hand out the secret one\n"
    )


def test_sign_refusals(setup, capsys):
    bundle, keys = setup
    pub = keys["alice"] + ".pub"
    code, _, err = run(capsys, "bundle", "sign", bundle, "--key", pub)
    assert code == 1 and err == (
        f"{pub}: this is a public key; signing needs the secret key file (the same name "
        "without .pub)\n"
    )
    data = bytearray(open(bundle, "rb").read())
    data[100] ^= 0xFF  # inside the first artifact
    with open(bundle, "wb") as f:
        f.write(data)
    code, _, err = run(capsys, "bundle", "sign", bundle, "--key", keys["alice"])
    assert code == 1 and err.startswith(f"{bundle}: refusing to sign a bundle with 1 problem(s): ")
    assert read_bundle(bundle).signature is None


def test_sign_and_generate_refuse_paths_that_are_not_files(setup, capsys, tmp_path):
    # -o "" used to sign in place; -o into a missing folder created it; an empty KEYFILE
    # was blamed on the comment made from it.
    bundle, keys = setup
    before = open(bundle, "rb").read()
    for out, want in (
        (
            "",
            "error: -o '': give the signed bundle's file path (leave -o out to sign the "
            "bundle in place)\n",
        ),
        (str(tmp_path), f"error: -o {str(tmp_path)!r}: give the signed bundle's file path"),
        (
            str(tmp_path / "no" / "x.vyrebundle"),
            f"error: -o {tmp_path / 'no' / 'x.vyrebundle'}: folder {tmp_path / 'no'} does not exist\n",
        ),
    ):
        code, _, err = run(capsys, "bundle", "sign", bundle, "--key", keys["alice"], "-o", out)
        assert code == 1 and err.startswith(want), err
    assert open(bundle, "rb").read() == before and not (tmp_path / "no").exists()
    for path in ("", str(tmp_path)):
        code, _, err = run(capsys, "key", "generate", path)
        assert code == 1 and err.startswith(f"error: KEYFILE {path!r}: give the secret key's file")


def test_sign_a_version_1_bundle_upgrades_it(setup, capsys, tmp_path):
    _, keys = setup
    old = str(tmp_path / "old.vyrebundle")
    shutil.copy(V1_BUNDLE, old)
    assert run(capsys, "bundle", "sign", old, "--key", keys["alice"])[0] == 0
    with read_bundle(old, trusted_keys=[keys["alice"] + ".pub"]) as r:
        assert r.version == 2 and r.signer.comment == "Alice"
    assert open(old, "rb").read() == encode_bundle(ENTRIES, sign_key=keys["alice"])


def test_inspection_commands_honour_trusted_keys_env(setup, capsys, monkeypatch):
    bundle, keys = setup
    monkeypatch.setenv("VYRE_TRUSTED_KEYS", keys["alice"] + ".pub")
    code, _, err = run(capsys, "bundle", "ls", bundle)
    assert code == 1 and "bundle is not signed, and trusted keys are pinned" in err
    assert run(capsys, "bundle", "sign", bundle, "--key", keys["alice"])[0] == 0
    code, out, _ = run(capsys, "bundle", "ls", bundle)
    assert code == 0 and out.endswith(f"3 kernel(s) in {bundle}\n")
    code, out, _ = run(capsys, "bundle", "verify", bundle)
    assert code == 0 and "a trusted key; signature verified" in out


def test_key_generate_creates_missing_folders(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "key", "generate", "keys/release.key")
    assert code == 0 and out.splitlines()[:3] == [
        "created folder keys (mode 0700)",
        "secret key: keys/release.key (keep it private; mode 0600)",
        "public key: keys/release.key.pub (give it to those who load your bundles)",
    ]
    assert stat.S_IMODE(os.stat("keys").st_mode) == 0o700
    assert load_public_key("keys/release.key.pub").key_id in out
    code, out, _ = run(capsys, "key", "generate", "a/b/c.key")
    assert code == 0 and out.splitlines()[0] == "created folder a/b (mode 0700)"
    assert os.path.isfile("a/b/c.key")
    open("plain", "w").close()
    code, out, err = run(capsys, "key", "generate", "plain/x.key")
    assert code == 1 and out == "" and err == "error: plain: exists and is not a folder\n"
