"""Bundle signatures: key files, signed bytes, the trusted-key check and every refusal."""

from __future__ import annotations

import json
import os
import stat
import struct

import blake3
import pytest
from nacl.signing import VerifyKey

from test_bundle import ENTRIES, header, manifest_of, with_header, with_manifest
from vyre_build.bundle import encode_bundle, read_bundle, read_bundle_bytes, write_bundle
from vyre_build.bundle.format import SIGNATURE_SIZE
from vyre_build.bundle.keys import (
    KeyFileError,
    PublicKey,
    generate_key_pair,
    key_id,
    load_public_key,
    load_secret_key,
    write_key_pair,
)
from vyre_build.bundle.reader import BundleReader
from vyre_build.bundle.signing import DOMAIN, unsigned_bytes
from vyre_build.core.errors import BundleError
from vyre_build.runtime import open_bundle

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
V1_BUNDLE = os.path.join(DATA, "bundle_v1.vyrebundle")
HEADER = "<8sIIQQQII32s"


@pytest.fixture
def keys(tmp_path):
    """Two key pairs on disk: {"alice": (secret path, public path), "bob": (...)}."""
    out = {}
    for who in ("alice", "bob"):
        out[who] = write_key_pair(tmp_path / f"{who}.key", generate_key_pair(f"{who} release"))
    return out


def signed(keys, who="alice", entries=ENTRIES) -> bytes:
    return encode_bundle(entries, sign_key=keys[who][0])


def refusal(data: bytes, trusted) -> str:
    with pytest.raises(BundleError) as info:
        read_bundle_bytes(data, "t.vyrebundle", trusted_keys=trusted)
    return str(info.value)


def rehash(data: bytes, kernel: int, suffix: str, new: bytes) -> bytes:
    """Signed `data` with one artifact replaced (same size) and every hash over it rewritten
    (artifact blake3, manifest, header), keeping the old signature block: what an attacker
    who can rewrite the file but not sign can make."""
    m_off, m_size = header(data)[4:6]
    doc = json.loads(data[m_off : m_off + m_size])
    info = doc["kernels"][kernel]["artifacts"][suffix]
    assert len(new) == info["size"]
    info["blake3"] = blake3.blake3(new).hexdigest()
    manifest = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    body = data[: info["offset"]] + new + data[info["offset"] + info["size"] : m_off]
    out = body + manifest + data[-SIGNATURE_SIZE:]
    return with_header(
        out, file_size=len(out), m_size=len(manifest), m_hash=blake3.blake3(manifest).digest()
    )


# --- key files -----------------------------------------------------------------------------


def test_key_files_format_modes_and_round_trip(keys):
    secret_path, public_path = keys["alice"]
    assert stat.S_IMODE(os.stat(secret_path).st_mode) == 0o600
    assert public_path == secret_path + ".pub"
    secret, public = load_secret_key(secret_path), load_public_key(public_path)
    assert secret.public == public and public.comment == "alice release"
    assert public.key_id == blake3.blake3(public.raw).hexdigest()[:16] == key_id(public.raw)
    lines = open(public_path, encoding="utf-8").read().splitlines()
    assert lines[:3] == ["vyre-build public key v1", "algorithm: ed25519", "comment: alice release"]
    assert lines[3].startswith("key: ") and len(lines) == 4
    lines = open(secret_path, encoding="utf-8").read().splitlines()
    assert [line.split(":")[0] for line in lines[1:]] == ["algorithm", "comment", "key", "public"]
    assert lines[0] == "vyre-build secret key v1"
    assert "seed" not in repr(secret) and secret.seed.hex() not in repr(secret)


def test_generate_refuses_to_overwrite_either_file(tmp_path):
    (tmp_path / "a.key").write_text("mine")
    with pytest.raises(KeyFileError) as info:
        write_key_pair(tmp_path / "a.key", generate_key_pair("a"))
    assert (
        str(info.value) == f"{tmp_path / 'a.key'}: already exists; refusing to overwrite a key file"
    )
    (tmp_path / "b.key.pub").write_text("mine")
    with pytest.raises(KeyFileError, match="b.key.pub: already exists"):
        write_key_pair(tmp_path / "b.key", generate_key_pair("b"))
    assert not (tmp_path / "b.key").exists() and (tmp_path / "a.key").read_text() == "mine"


def _key_file(tmp_path, text: str | bytes):
    p = tmp_path / "k"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(p)


PUB = "vyre-build public key v1\nalgorithm: ed25519\ncomment: c\nkey: {key}\n"
GOOD_KEY = "A" * 43 + "="  # 32 zero bytes in base64


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n",
            ":1: not a vyre-build key file: the first line is '-----BEGIN OPENSSH PRIVATE "
            "KEY-----', expected 'vyre-build public key v1' (an OpenSSH or PEM key? make one "
            "with `vyre-build key generate`)",
        ),
        ("ssh-ed25519 AAAAC3Nza me@host\n", ":1: not a vyre-build key file: the first line is"),
        ("", ":1: not a vyre-build key file: the first line is ''"),
        (
            "vyre-build public key v2\n",
            ":1: key file format 'v2' is not supported (this vyre-build reads v1)",
        ),
        (
            "vyre-build secret key v1\n",
            ": this is a secret key; verifying takes the public key file (KEYFILE.pub); never "
            "hand out the secret one",
        ),
        (
            PUB.replace("ed25519", "rsa").format(key=GOOD_KEY),
            ": key algorithm 'rsa' is not supported (bundles are signed with ed25519)",
        ),
        (PUB.format(key="not base64!"), ": field 'key' is not base64"),
        (PUB.format(key="AAAA"), ": field 'key' must hold 32 bytes, got 3"),
        ("vyre-build public key v1\nalgorithm: ed25519\n", ": missing field(s) comment, key"),
        (
            PUB.format(key=GOOD_KEY) + "comment: again\n",
            ":5: field 'comment' appears twice",
        ),
        (
            PUB.format(key=GOOD_KEY) + "owner: me\n",
            ":5: expected one of algorithm, comment, key as 'name: value', got 'owner: me'",
        ),
        (b"\xff\xfe", ": not a vyre-build key file (bad UTF-8 at byte 0)"),
        ("x" * 5000, ": not a key file (5000 bytes; a key file has a few hundred)"),
    ],
)
def test_public_key_file_refusals(tmp_path, text, message):
    path = _key_file(tmp_path, text)
    with pytest.raises(KeyFileError) as info:
        load_public_key(path)
    assert str(info.value).startswith(path + message)


def test_secret_key_file_refusals(tmp_path, keys):
    with pytest.raises(KeyFileError) as info:
        load_secret_key(keys["alice"][1])
    assert str(info.value) == (
        f"{keys['alice'][1]}: this is a public key; signing needs the secret key file "
        "(the same name without .pub)"
    )
    alice = open(keys["alice"][0], encoding="utf-8").read()
    bob_public = open(keys["bob"][0], encoding="utf-8").read().splitlines()[4]
    mixed = _key_file(tmp_path, "\n".join(alice.splitlines()[:4] + [bob_public]) + "\n")
    with pytest.raises(KeyFileError) as info:
        load_secret_key(mixed)
    assert str(info.value) == (
        f"{mixed}: the public key does not belong to the secret key (corrupt file)"
    )


def test_key_file_special_and_missing_files(tmp_path):
    with pytest.raises(KeyFileError) as info:
        load_public_key(tmp_path)
    assert str(info.value) == f"{tmp_path}: not a key file (it is a directory, not a regular file)"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(KeyFileError, match="not a key file \\(it is a FIFO, not a regular file\\)"):
        load_public_key(fifo)
    with pytest.raises(KeyFileError) as info:
        load_public_key(tmp_path / "nope.pub")
    assert str(info.value) == (
        f"{tmp_path / 'nope.pub'}: cannot read key file: No such file or directory"
    )


# --- signed bytes ----------------------------------------------------------------------------


def test_signed_bundle_is_deterministic_and_one_block_longer(keys):
    a, b = signed(keys), encode_bundle(ENTRIES[::-1], sign_key=load_secret_key(keys["alice"][0]))
    assert a == b and a != signed(keys, "bob")
    plain = encode_bundle(ENTRIES)
    assert len(a) == len(plain) + SIGNATURE_SIZE and a[80:-SIGNATURE_SIZE] == plain[80:]
    fields = struct.unpack(HEADER, a[:80])
    assert fields[1:4] == (2, 1, len(a)) and fields[4:] == struct.unpack(HEADER, plain[:80])[4:]
    assert unsigned_bytes(a) == plain and unsigned_bytes(plain) == plain


def test_signature_block_layout_checks_with_an_independent_verifier(keys):
    data = signed(keys)
    block = data[-SIGNATURE_SIZE:]
    public = load_public_key(keys["alice"][1]).raw
    assert block[:8] == b"VYRESIGN" and struct.unpack("<II", block[8:16]) == (1, 0)
    assert block[16:48] == public
    # PyNaCl's high-level API, not our code path: the signature is over DOMAIN + header.
    assert VerifyKey(public).verify(DOMAIN + data[:80], block[48:]) == DOMAIN + data[:80]
    assert DOMAIN == b"vyrebundle signature v1\0"


def test_write_bundle_signs_and_the_reader_names_the_signer(keys, tmp_path):
    path = tmp_path / "s.vyrebundle"
    write_bundle(path, ENTRIES, sign_key=keys["alice"][0])
    with read_bundle(path, trusted_keys=[keys["bob"][1], keys["alice"][1]]) as r:
        assert r.signer == load_public_key(keys["alice"][1]) and r.version == 2
        assert r.signature.key_id == r.signer.key_id and r.verify() == []
        assert r.read_artifact("saxpy", ".wgsl") == ENTRIES[0]["artifacts"][".wgsl"]
    with read_bundle(path) as r:  # no keys pinned: the signature is parsed, not checked
        assert r.signer is None and r.signature.key_id == load_public_key(keys["alice"][1]).key_id


# --- refusals with keys pinned ---------------------------------------------------------------


def test_unsigned_bundle_refused_when_keys_are_pinned(keys):
    alice = load_public_key(keys["alice"][1])
    assert refusal(encode_bundle(ENTRIES), [alice]) == (
        f"t.vyrebundle: bundle is not signed, and trusted keys are pinned (trusted: 'alice "
        f"release' (key id {alice.key_id})); refusing to load it (sign it with `vyre-build "
        "bundle sign BUNDLE --key KEYFILE`)"
    )
    assert read_bundle_bytes(encode_bundle(ENTRIES)).ids == ["add.f32", "add.i32", "saxpy"]


def test_other_key_refused(keys):
    alice, bob = load_public_key(keys["alice"][1]), load_public_key(keys["bob"][1])
    assert refusal(signed(keys, "bob"), [alice]) == (
        f"t.vyrebundle: bundle is signed by key id {bob.key_id}, which is not a trusted key "
        f"(trusted: 'alice release' (key id {alice.key_id})); refusing to load it"
    )


def test_tampered_artifact_rehashed_refused_pinned_accepted_unpinned(keys, monkeypatch):
    data = signed(keys)
    wgsl = ENTRIES[0]["artifacts"][".wgsl"]
    evil = b"X" * len(wgsl)
    tampered = rehash(data, 2, ".wgsl", evil)  # kernels sorted: saxpy is the third
    alice = load_public_key(keys["alice"][1])
    reads = []
    real = BundleReader._read_at
    monkeypatch.setattr(
        BundleReader, "_read_at", lambda self, o, n: reads.append((o, n)) or real(self, o, n)
    )
    assert refusal(tampered, [alice]) == (
        f"t.vyrebundle: the signature by trusted key 'alice release' (key id {alice.key_id}) "
        "does not match the bundle: its header or manifest changed after it was signed "
        "(artifacts edited and re-hashed?) or the signature was made over another bundle; "
        "refusing to load it"
    )
    # Only the header and the signature block were read: no artifact, not even the manifest.
    assert reads == [(0, 80), (len(tampered) - SIGNATURE_SIZE, SIGNATURE_SIZE)]
    # Without keys the re-hashed bundle is well-formed and serves the edited bytes, as before.
    r = read_bundle_bytes(tampered)
    assert r.read_artifact("saxpy", ".wgsl") == evil
    assert r.verify() == [
        f"the signature does not verify under the key it names (key id {alice.key_id}): the "
        "header or manifest changed after signing, or it was made over another bundle"
    ]


def test_signature_over_another_bundle_refused(keys):
    mine, other = signed(keys, entries=ENTRIES[:2]), signed(keys)
    forged = mine[:-SIGNATURE_SIZE] + other[-SIGNATURE_SIZE:]
    alice = load_public_key(keys["alice"][1])
    assert "does not match the bundle" in refusal(forged, [alice])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d[:-SIGNATURE_SIZE] + b"\0" * SIGNATURE_SIZE,
            "signature block at byte {at}: bad magic b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
            "\\x00', expected b'VYRESIGN' (garbage or a truncated signature; re-sign the "
            "bundle with `vyre-build bundle sign`)",
        ),
        (
            lambda d: d[:-SIGNATURE_SIZE] + b"VYRESIGN" + struct.pack("<I", 7) + d[-100:],
            "signature block at byte {at}: unknown signature algorithm 7 at byte {at8} (this "
            "reader knows 1 = Ed25519)",
        ),
        (
            lambda d: d[:-SIGNATURE_SIZE] + d[-SIGNATURE_SIZE:-100] + b"\1" + d[-99:],
            "signature block at byte {at}: reserved field at byte {at12} is 1, must be 0",
        ),
        (lambda d: d[:-10], "truncated at byte {cut}: the header declares {size} bytes"),
        (
            lambda d: with_header(d, flags=0),
            "index out of bounds: manifest at bytes {m_off}..{m_end} must be 16-aligned, after "
            "the 80-byte header and end at the file end (byte {size})",
        ),
    ],
)
def test_bad_signature_blocks_refused_with_and_without_keys(keys, edit, message):
    data = signed(keys)
    fields = struct.unpack(HEADER, data[:80])
    at = len(data) - SIGNATURE_SIZE
    text = message.format(
        at=at,
        at8=at + 8,
        at12=at + 12,
        cut=len(data) - 10,
        size=len(data),
        m_off=fields[4],
        m_end=fields[4] + fields[5],
    )
    bad = edit(data)
    alice = load_public_key(keys["alice"][1])
    assert refusal(bad, None) == refusal(bad, [alice]) == f"t.vyrebundle: {text}"


def test_version_1_bundles_still_read(keys):
    with open(V1_BUNDLE, "rb") as f:
        v1 = f.read()
    # Version 1 is version 2's unsigned layout with 1 in the header and the manifest.
    doc = manifest_of(encode_bundle(ENTRIES))
    doc["version"] = 1
    assert with_header(with_manifest(encode_bundle(ENTRIES), doc), version=1) == v1
    with read_bundle(V1_BUNDLE) as r:
        assert r.version == 1 and r.signature is None and r.verify() == []
        assert r.read_artifact("add.f32", ".spv") == ENTRIES[1]["artifacts"][".spv"]
    assert "unknown header flags 0x00000001 at byte 12 (version 1 allows 0x00000000)" in (
        refusal(with_header(v1, flags=1), None)
    )
    assert "bundle is not signed, and trusted keys are pinned" in refusal(v1, [keys["alice"][1]])


# --- where the trusted keys come from --------------------------------------------------------


def test_trusted_keys_argument_errors(keys, tmp_path):
    data = signed(keys)
    assert refusal(data, []) == (
        "trusted_keys is empty: give at least one public key (None opens without a check)"
    )
    assert refusal(data, keys["alice"][1]) == (
        "trusted_keys must be a list of public key files or PublicKey objects, got str"
    )
    assert (
        refusal(data, [b"raw"]) == "trusted_keys: b'raw' is neither a key file path nor a PublicKey"
    )
    assert refusal(data, [keys["alice"][0]]) == (
        f"trusted_keys: {keys['alice'][0]}: this is a secret key; verifying takes the public "
        "key file (KEYFILE.pub); never hand out the secret one"
    )
    missing = tmp_path / "gone.pub"
    assert refusal(data, [missing]) == (
        f"trusted_keys: {missing}: cannot read key file: No such file or directory"
    )
    alice = load_public_key(keys["alice"][1])
    pinned = read_bundle_bytes(data, trusted_keys=[PublicKey(alice.raw, "from memory")])
    assert pinned.signer.comment == "from memory"


def test_env_trusted_keys(keys, monkeypatch, tmp_path):
    path = tmp_path / "s.vyrebundle"
    path.write_bytes(signed(keys, "bob"))
    monkeypatch.setenv("VYRE_TRUSTED_KEYS", keys["alice"][1])
    with pytest.raises(BundleError, match="which is not a trusted key"):
        read_bundle(path)
    with pytest.raises(BundleError, match="which is not a trusted key"):
        open_bundle(path)
    monkeypatch.setenv("VYRE_TRUSTED_KEYS", os.pathsep.join([keys["alice"][1], keys["bob"][1]]))
    with open_bundle(path) as b:
        assert b.reader.signer.comment == "bob release" and "saxpy" in b
    assert read_bundle(path, trusted_keys=False).signer is None  # explicit: no check at all
    monkeypatch.setenv("VYRE_TRUSTED_KEYS", str(tmp_path / "missing.pub"))
    with pytest.raises(BundleError) as info:
        read_bundle(path)
    assert str(info.value) == (
        f"VYRE_TRUSTED_KEYS: {tmp_path / 'missing.pub'}: cannot read key file: No such file "
        "or directory"
    )
    monkeypatch.setenv("VYRE_TRUSTED_KEYS", "")
    assert read_bundle(path).signer is None


def test_runtime_open_bundle_passes_trusted_keys(keys, tmp_path):
    path = tmp_path / "s.vyrebundle"
    path.write_bytes(encode_bundle(ENTRIES))
    with pytest.raises(BundleError, match="bundle is not signed, and trusted keys are pinned"):
        open_bundle(path, trusted_keys=[keys["alice"][1]])
    path.write_bytes(signed(keys))
    with open_bundle(path, trusted_keys=[keys["alice"][1]]) as b:
        assert b.reader.signer.comment == "alice release"
        assert json.loads(json.dumps(b.ids)) == ["add.f32", "add.i32", "saxpy"]
