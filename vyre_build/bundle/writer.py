"""Bundle writer: deterministic bytes, written atomically."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable

import blake3

from vyre_build.core.errors import BundleError
from vyre_build.core.files import atomic_write, canonical_json
from vyre_build.bundle.format import (
    FLAG_SIGNED,
    FORMAT_NAME,
    HEADER_SIZE,
    SIGNATURE_SIZE,
    MAGIC,
    VERSION,
    _HEADER,
    _align,
    _check_meta,
    _hash,
    check_suffix,
)


def _normalize(entries: Iterable[dict]) -> list[tuple[str, dict, list[tuple[str, bytes]]]]:
    """Validate entries; return (id, meta copy, sorted artifacts) sorted by id."""
    if isinstance(entries, (dict, str, bytes)):
        raise BundleError("entries must be an iterable of {'meta', 'artifacts'} dicts")
    out: dict[str, tuple[str, dict, list[tuple[str, bytes]]]] = {}
    for n, entry in enumerate(entries):
        where = f"bundle entry {n}"
        if not isinstance(entry, dict) or "meta" not in entry or "artifacts" not in entry:
            raise BundleError(f"{where}: must be a dict with 'meta' and 'artifacts'")
        ident = _check_meta(entry["meta"], where)
        where = f"bundle entry {ident!r}"
        if ident in out:
            raise BundleError(
                f"{where}: duplicate kernel id; each kernel and variant may appear once in a bundle"
            )
        artifacts = entry["artifacts"]
        if not isinstance(artifacts, dict):
            raise BundleError(f"{where}: 'artifacts' must be a dict suffix -> bytes")
        items = []
        for suffix, data in artifacts.items():
            check_suffix(suffix)
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise BundleError(
                    f"{where}: artifact {suffix!r} must be bytes, got "
                    f"{type(data).__name__} (encode text as UTF-8)"
                )
            items.append((suffix, bytes(data)))
        items.sort()
        out[ident] = (ident, copy.deepcopy(entry["meta"]), items)
    return [out[k] for k in sorted(out)]


def _secret_key(sign_key):
    from vyre_build.bundle.keys import SecretKey, load_secret_key

    if sign_key is None or isinstance(sign_key, SecretKey):
        return sign_key
    if isinstance(sign_key, (str, os.PathLike)):
        return load_secret_key(sign_key)
    raise BundleError(f"sign_key must be a secret key file or a SecretKey, got {sign_key!r}")


def encode_bundle(entries: Iterable[dict], *, sign_key=None, tuning=None) -> bytes:
    """The bundle bytes for `entries` (see `write_bundle`); identical for any entry order."""
    key = _secret_key(sign_key)  # a bad key file is refused before any work
    kernels = _normalize(entries)
    doc: dict = {"format": FORMAT_NAME, "version": VERSION}
    if tuning is not None:
        from vyre_build.bundle.tuning import check_tuning

        if check_tuning(tuning)["tunables"] or tuning["records"]:
            doc["tuning"] = copy.deepcopy(tuning)
    body = bytearray()
    pos = HEADER_SIZE
    records = []
    n_artifacts = 0
    for ident, meta, items in kernels:
        index = {}
        for suffix, data in items:
            pad = _align(pos) - pos
            body += b"\0" * pad
            pos += pad
            index[suffix] = {"offset": pos, "size": len(data), "blake3": _hash(data)}
            body += data
            pos += len(data)
            n_artifacts += 1
        records.append({"id": ident, "meta": meta, "artifacts": index})
    pad = _align(pos) - pos
    body += b"\0" * pad
    manifest_offset = pos + pad
    manifest = canonical_json({**doc, "kernels": records})
    file_size = manifest_offset + len(manifest) + (SIGNATURE_SIZE if key else 0)
    header = _HEADER.pack(
        MAGIC,
        VERSION,
        FLAG_SIGNED if key else 0,
        file_size,
        manifest_offset,
        len(manifest),
        len(records),
        n_artifacts,
        blake3.blake3(manifest).digest(),
    )
    if key is None:
        return header + bytes(body) + manifest
    from vyre_build.bundle.signing import signature_block

    return header + bytes(body) + manifest + signature_block(header, key)


def write_bundle(
    out_path: str | os.PathLike, entries: Iterable[dict], *, sign_key=None, tuning=None
) -> int:
    """Write a bundle of `entries` to `out_path` atomically; return the bytes written.

    Arguments:
        out_path: destination file; its directory is created if missing.
        entries: dicts {"meta": metadata record (with "name", "variant", "id", optionally
            "provenance"), "artifacts": {suffix: bytes}}, e.g. {".wgsl", ".spv", ".kdesc"}.
        sign_key: a secret key file (`vyre-build key generate`) or `SecretKey`: the bundle
            is signed with it (Ed25519, deterministic); None writes it unsigned.
        tuning: the manifest's "tuning" object ({"tunables", "records"}: bundle/tuning.py),
            or None (none; also when both are empty).
    Returns:
        the size of the written file. The bytes are identical for the same entries in any
        order. Duplicate ids, unsafe names or suffixes, and absolute paths or time stamps
        in provenance raise BundleError before anything is written.
    """
    data = encode_bundle(entries, sign_key=sign_key, tuning=tuning)
    out_path = os.fspath(out_path)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    except OSError as exc:
        raise BundleError(
            f"{out_path}: cannot write bundle: {exc.strerror} ({exc.filename})"
        ) from None
    try:
        atomic_write(out_path, data, durable=True)
    except OSError as exc:
        raise BundleError(f"{out_path}: cannot write bundle: {exc.strerror or exc}") from None
    return len(data)
