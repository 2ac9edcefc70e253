"""Bundle signatures: what is signed, the signature block, and the trusted-key check.

A signed bundle (format version 2, header flag FLAG_SIGNED) ends with a 112-byte block
holding the signer's Ed25519 public key and the signature of

    b"vyrebundle signature v1\\0" + the 80 header bytes (as stored, flag and size included)

The header holds the blake3 of the manifest, which holds the blake3 of every artifact, so
the signature covers the header, the manifest and every artifact hash. The reader checks
it before it reads the manifest: with keys pinned, nothing else of an untrusted file is
parsed. Ed25519 is deterministic, so a signed bundle is byte-identical across rebuilds.
PyNaCl is imported on the first signature check, never by an open without trusted keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from vyre_build.bundle.format import (
    _HEADER,
    ALG_ED25519,
    FLAG_SIGNED,
    HEADER_SIZE,
    SIGNATURE,
    SIGNATURE_MAGIC,
    SIGNATURE_SIZE,
)
from vyre_build.bundle.keys import PublicKey, SecretKey, key_id, load_public_key
from vyre_build.core.errors import BundleError

__all__ = [
    "TRUSTED_KEYS_ENV",
    "Signature",
    "check_signer",
    "parse_signature_block",
    "resolve_trusted_keys",
    "signature_block",
    "signed_message",
    "unsigned_bytes",
    "verify_signature",
]

TRUSTED_KEYS_ENV = "VYRE_TRUSTED_KEYS"
DOMAIN = b"vyrebundle signature v1\0"


class Signature:
    """The signature block of a bundle: the signer's raw public key, the signature, and
    the block's byte offset."""

    __slots__ = ("public", "signature", "offset")

    def __init__(self, public: bytes, signature: bytes, offset: int):
        self.public, self.signature, self.offset = public, signature, offset

    def __repr__(self) -> str:
        return f"Signature(key id {self.key_id}, at byte {self.offset})"

    @property
    def key_id(self) -> str:
        return key_id(self.public)


def signed_message(header: bytes) -> bytes:
    """The bytes an Ed25519 signature of a bundle with this 80-byte header signs."""
    return DOMAIN + header


def signature_block(header: bytes, key: SecretKey) -> bytes:
    """The 112-byte block that ends a bundle with this (signed) header."""
    return SIGNATURE.pack(
        SIGNATURE_MAGIC, ALG_ED25519, 0, key.public.raw, key.sign(signed_message(header))
    )


def parse_signature_block(block: bytes, offset: int) -> Signature:
    """The Signature in `block` (read at `offset`), or BundleError saying what is wrong."""
    magic, algorithm, reserved, public, signature = SIGNATURE.unpack(block)
    where = f"signature block at byte {offset}"
    if magic != SIGNATURE_MAGIC:
        raise BundleError(
            f"{where}: bad magic {magic!r}, expected {SIGNATURE_MAGIC!r} (garbage or a "
            "truncated signature; re-sign the bundle with `vyre-build bundle sign`)"
        )
    if algorithm != ALG_ED25519:
        raise BundleError(
            f"{where}: unknown signature algorithm {algorithm} at byte {offset + 8} "
            f"(this reader knows {ALG_ED25519} = Ed25519)"
        )
    if reserved != 0:
        raise BundleError(f"{where}: reserved field at byte {offset + 12} is {reserved}, must be 0")
    return Signature(public, signature, offset)


def verify_signature(sig: Signature, header: bytes, public: bytes) -> bool:
    """Whether `sig` is a valid Ed25519 signature of `header` by the key `public`."""
    from nacl.bindings import crypto_sign_open
    from nacl.exceptions import CryptoError

    try:
        crypto_sign_open(sig.signature + signed_message(header), public)
    except CryptoError:
        return False
    return True


def check_signer(sig: Signature | None, header: bytes, trusted: list[PublicKey]) -> PublicKey:
    """The trusted key that signed this bundle; BundleError with the reason otherwise."""
    if sig is None:
        raise BundleError(
            f"bundle is not signed, and trusted keys are pinned ({_names(trusted)}); "
            "refusing to load it (sign it with `vyre-build bundle sign BUNDLE --key KEYFILE`)"
        )
    signer = next((k for k in trusted if k.raw == sig.public), None)
    if signer is None:
        raise BundleError(
            f"bundle is signed by key id {sig.key_id}, which is not a trusted key "
            f"({_names(trusted)}); refusing to load it"
        )
    if not verify_signature(sig, header, signer.raw):
        raise BundleError(
            f"the signature by trusted key {signer.describe()} does not match the bundle: "
            "its header or manifest changed after it was signed (artifacts edited and "
            "re-hashed?) or the signature was made over another bundle; refusing to load it"
        )
    return signer


def _names(keys: list[PublicKey]) -> str:
    return "trusted: " + ", ".join(k.describe() for k in keys)


def resolve_trusted_keys(trusted_keys) -> list[PublicKey] | None:
    """The keys a bundle must be signed by, or None for no check.

    Arguments:
        trusted_keys: None (then `$VYRE_TRUSTED_KEYS`, public key files separated by
            os.pathsep, if set and non-empty), False (no check at all), or an iterable of
            public key file paths and `PublicKey`s (at least one).
    """
    if trusted_keys is False:
        return None
    where = "trusted_keys"
    if trusted_keys is None:
        raw = os.environ.get(TRUSTED_KEYS_ENV, "")
        if not raw.strip():
            return None
        trusted_keys, where = [p for p in raw.split(os.pathsep) if p], TRUSTED_KEYS_ENV
    if isinstance(trusted_keys, (str, bytes, os.PathLike, PublicKey)) or not isinstance(
        trusted_keys, Iterable
    ):
        raise BundleError(
            f"{where} must be a list of public key files or PublicKey objects, got "
            f"{type(trusted_keys).__name__}"
        )
    keys = []
    for item in trusted_keys:
        if isinstance(item, PublicKey):
            keys.append(item)
        elif isinstance(item, (str, os.PathLike)):
            try:
                keys.append(load_public_key(item))
            except BundleError as exc:
                raise BundleError(f"{where}: {exc}") from None
        else:
            raise BundleError(f"{where}: {item!r} is neither a key file path nor a PublicKey")
    if not keys:
        raise BundleError(
            f"{where} is empty: give at least one public key (None opens without a check)"
        )
    return keys


def unsigned_bytes(data: bytes) -> bytes:
    """`data`, a well-formed bundle, without its signature (as the writer made it unsigned)."""
    fields = list(_HEADER.unpack(data[:HEADER_SIZE]))
    if not fields[2] & FLAG_SIGNED:
        return bytes(data)
    fields[2] &= ~FLAG_SIGNED
    fields[3] -= SIGNATURE_SIZE
    return _HEADER.pack(*fields) + bytes(data[HEADER_SIZE : fields[3]])
