"""Issue 26, found on the way: a pinned open refuses edited padding (the only bytes no hash
covers), and a secret key file that others may read gets ssh's warning; `key generate`
writes it 0600 whatever the umask."""

from __future__ import annotations

import json
import os
import stat

import pytest

from test_bundle import ENTRIES, header
from test_signing import keys  # noqa: F401 - the fixture
from vyre_build.bundle import encode_bundle, read_bundle, read_bundle_bytes, write_bundle
from vyre_build.bundle.keys import generate_key_pair, load_secret_key, write_key_pair
from vyre_build.cli import main as cli_main
from vyre_build.core.errors import BundleError
from vyre_build.runtime import open_bundle


def paddings(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every padding run of a bundle: between artifacts, before the manifest."""
    m_off, m_size = header(data)[4:6]
    doc = json.loads(data[m_off : m_off + m_size])
    ranges = sorted(
        (a["offset"], a["offset"] + a["size"])
        for k in doc["kernels"]
        for a in k["artifacts"].values()
    )
    out, pos = [], 80
    for start, end in ranges + [(m_off, m_off)]:
        if start > pos:
            out.append((pos, start))
        pos = max(pos, end)
    return out


def edited(data: bytes, at: int) -> bytes:
    return data[:at] + b"\x01" + data[at + 1 :]


def test_edited_padding_is_refused_when_keys_are_pinned(keys):  # noqa: F811
    data = encode_bundle(ENTRIES, sign_key=keys["alice"][0])
    gaps = paddings(data)
    assert len(gaps) >= 3 and all(0 < b - a < 16 for a, b in gaps)
    a, b = gaps[1]
    bad = edited(data, a)
    with pytest.raises(BundleError) as info:
        read_bundle_bytes(bad, "t.vyrebundle", trusted_keys=[keys["alice"][1]])
    assert str(info.value) == (
        f"t.vyrebundle: non-zero padding bytes at {a}..{b}, which no hash or signature "
        "covers: the bundle was changed after signing (rebuild or re-sign it)"
    )
    # The padding before the manifest too; the untouched bundle opens.
    a, b = gaps[-1]
    with pytest.raises(BundleError, match=f"non-zero padding bytes at {a}..{b}, "):
        read_bundle_bytes(edited(data, b - 1), "t.vyrebundle", trusted_keys=[keys["alice"][1]])
    with read_bundle_bytes(data, "t.vyrebundle", trusted_keys=[keys["alice"][1]]) as r:
        assert r.ids == ["add.f32", "add.i32", "saxpy"]
    # Unpinned, the edit opens as before and `verify` reports it.
    with read_bundle_bytes(bad, "t.vyrebundle", trusted_keys=False) as r:
        assert f"non-zero padding bytes at {gaps[1][0]}..{gaps[1][1]}" in r.verify()


def test_edited_padding_is_refused_by_a_pinned_open_from_a_file(keys, tmp_path):  # noqa: F811
    # Artifacts tens of KiB apart, read from a file (pread): every padding run is checked.
    big = [
        {
            "meta": dict(e["meta"]),
            "artifacts": {s: blob * 3000 + b"x" for s, blob in e["artifacts"].items()},
        }
        for e in ENTRIES
    ]
    path = tmp_path / "b.vyrebundle"
    write_bundle(path, big, sign_key=keys["alice"][0])
    data = path.read_bytes()
    for a, b in paddings(data):
        path.write_bytes(edited(data, a))
        with pytest.raises(BundleError, match=f": non-zero padding bytes at {a}..{b}, "):
            open_bundle(str(path), trusted_keys=[keys["alice"][1]])
    path.write_bytes(data)
    with read_bundle(path, trusted_keys=[keys["alice"][1]]) as r:
        assert r.verify() == []


# -- secret key permissions -----------------------------------------------------------------


def warning(path: str, mode: str) -> str:
    return (
        "vyre: WARNING: UNPROTECTED PRIVATE KEY FILE! "
        f"Permissions {mode} for '{path}' are too open.\n"
        "vyre: a secret key must not be accessible by others: whoever reads it can sign "
        f"bundles as you. It is used anyway; run chmod 600 '{path}' (and make a new key "
        "if others may have read it).\n"
    )


def test_key_generate_writes_the_secret_0600_whatever_the_umask(tmp_path, capsys):
    old = os.umask(0)
    try:
        assert cli_main(["key", "generate", str(tmp_path / "k.key")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "k.key").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "k.key.pub").st_mode) == 0o644
    load_secret_key(tmp_path / "k.key")
    assert capsys.readouterr().err == ""


def test_a_secret_key_others_can_read_is_warned_about_once(tmp_path, capsys):
    secret, _ = write_key_pair(tmp_path / "k.key", generate_key_pair("k"))
    os.chmod(secret, 0o644)
    load_secret_key(secret)
    load_secret_key(secret)
    assert capsys.readouterr().err == warning(secret, "0644")
    other, _ = write_key_pair(tmp_path / "g.key", generate_key_pair("g"))
    os.chmod(other, 0o620)  # group-writable counts too, as for ssh
    load_secret_key(other)
    assert capsys.readouterr().err == warning(other, "0620")


def test_bundle_sign_warns_about_an_unprotected_key_and_signs(tmp_path, capsys):
    bundle = str(tmp_path / "k.vyrebundle")
    write_bundle(bundle, ENTRIES)
    secret, public = write_key_pair(tmp_path / "s.key", generate_key_pair("s"))
    os.chmod(secret, 0o644)
    assert cli_main(["bundle", "sign", bundle, "--key", secret, "--json"]) == 0
    out = capsys.readouterr()
    assert out.err == warning(secret, "0644")
    assert json.loads(out.out)["bundle"] == bundle  # stdout stays JSON
    with read_bundle(bundle, trusted_keys=[public]) as r:
        assert r.signer is not None


def test_a_public_key_passed_as_secret_gets_no_warning(tmp_path, capsys):
    _, public = write_key_pair(tmp_path / "p.key", generate_key_pair("p"))
    with pytest.raises(BundleError):
        load_secret_key(public)
    assert capsys.readouterr().err == ""
