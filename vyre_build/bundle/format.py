"""Bundle format constants and the checks shared by the writer and the reader."""

from __future__ import annotations

import re
import struct
from typing import Any

import blake3

from vyre_build.core.errors import BundleError
from vyre_build.core.files import canonical_json

MAGIC = b"VYREBNDL"
VERSION = 2  # 2: optional signature block after the manifest (header flag FLAG_SIGNED)
READ_VERSIONS = (1, 2)
FLAG_SIGNED = 1
ALIGN = 16
# magic, version, flags, file_size, manifest_offset, manifest_size, kernels, artifacts, blake3
_HEADER = struct.Struct("<8sIIQQQII32s")
HEADER_SIZE = _HEADER.size  # 80: artifacts start 16-byte aligned right after it
FORMAT_NAME = "vyrebundle"
# sig magic, algorithm, reserved, Ed25519 public key, Ed25519 signature: ends a signed file
SIGNATURE = struct.Struct("<8sII32s64s")
SIGNATURE_SIZE = SIGNATURE.size  # 112
SIGNATURE_MAGIC = b"VYRESIGN"
ALG_ED25519 = 1

# Dot-separated components of safe characters: no separators, no "..", no leading dot.
_ID_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+=,-]*(\.[A-Za-z0-9_+=,-]+)*")
_SUFFIX_RE = re.compile(r"(\.[A-Za-z0-9_-]+)+")
_HEX64_RE = re.compile(r"[0-9a-f]{64}")
_MAX_NAME = 200
# Metadata records nest 4 deep; the cap keeps copying and printing them off the recursion limit.
MAX_JSON_DEPTH = 32
_JSON_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}|")  # dropped (translate)
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}|')
_MAX_SUFFIX = 32
# Keys that would make a manifest depend on when it was built.
_TIME_KEYS = frozenset(
    {
        "time",
        "timestamp",
        "mtime",
        "ctime",
        "atime",
        "date",
        "datetime",
        "created",
        "created_at",
        "built_at",
        "build_time",
        "modified",
    }
)
_ABS_PATH_RE = re.compile(r"(/|\\|[A-Za-z]:[\\/]|~/)")


# --- names ---------------------------------------------------------------------------


def kernel_id(name: str, variant: str | None) -> str:
    """The bundle id of a kernel: its name, or `name.variant`."""
    return name if variant is None else f"{name}.{variant}"


def check_id(ident: object, what: str = "kernel id") -> str:
    """Return `ident` if it is safe as a file-name stem on extract, else raise BundleError."""
    if not isinstance(ident, str) or not ident:
        raise BundleError(f"{what} must be a non-empty string, got {ident!r}")
    if len(ident) > _MAX_NAME or not _ID_RE.fullmatch(ident):
        raise BundleError(
            f"{what} {ident!r} is not a safe file name: use letters, digits, _ + = , - in "
            f"dot-separated parts (no path separators, no '..', no leading dot, at most "
            f"{_MAX_NAME} characters)"
        )
    return ident


def check_suffix(suffix: object) -> str:
    """Return `suffix` if it is a safe artifact suffix such as ".wgsl", else raise BundleError."""
    if not isinstance(suffix, str) or len(suffix) > _MAX_SUFFIX or not _SUFFIX_RE.fullmatch(suffix):
        from vyre_build.core.targets import WGSL  # for the example (reading loads no targets)

        raise BundleError(
            f"artifact name {suffix!r} is not a safe suffix: it must look like '{WGSL.suffix}' or "
            f"'.meta.json' (dot-separated letters, digits, _ -, at most {_MAX_SUFFIX} characters)"
        )
    return suffix


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _structure(text: str) -> bytes:
    """The brackets of JSON-like `text` outside its strings, and its "|" outside them (a
    separator the caller put between values), in order: C-speed passes, no object per
    string. Without escapes, when no string holds a bracket or a bar, each string's two
    quotes are adjacent once all else is dropped (so counting '""' pairs proves it) and
    dropping the quotes leaves exactly the structure; otherwise the strings are cut out
    (every quote bounds one, or the string pattern finds them)."""
    if "\\" not in text:
        kept = text.encode("utf-8", "surrogatepass").translate(None, _NOT_STRUCTURE)
        if kept.count(b'""') * 2 == kept.count(b'"'):
            return kept.translate(None, b'"')
        outside = "".join(text.split('"')[::2])
    else:
        outside = _JSON_STRING_RE.sub("", text)
    return outside.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS)


def _peeled(brackets: bytes, rest: bytes, limit: int) -> bool:
    """Whether removing every innermost pair ("[]" or "{}") at most `limit` times over
    leaves exactly `rest`: the brackets pair up, nested at most `limit` deep. Each pass
    marks the pairs in place, then drops the marks (no pair formed within a pass)."""
    for _ in range(limit):
        if brackets == rest:
            return True
        brackets = brackets.replace(b"[]", b"..").replace(b"{}", b"..").translate(None, b".")
    return brackets == rest


def _too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether valid JSON `text` nests arrays/objects deeper than `limit` (C-speed passes).

    Outside its strings valid JSON is ASCII, so its brackets outside strings are exactly
    its structure (`_structure`); each pass peels one level of empty pairs.
    """
    return not _peeled(_structure(text), b"", limit)


def _hash(data: bytes | memoryview) -> str:
    return blake3.blake3(data).hexdigest()


# --- writer --------------------------------------------------------------------------


def _check_reproducible(value: Any, where: str) -> None:
    """Refuse absolute paths and time stamps anywhere in provenance (they break determinism)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise BundleError(f"{where}: key {key!r} is not a string")
            if key.lower() in _TIME_KEYS:
                raise BundleError(
                    f"{where}.{key}: a time stamp makes the bundle "
                    f"non-reproducible; leave it out of the metadata"
                )
            if _ABS_PATH_RE.match(key):
                raise BundleError(
                    f"{where}: key {key!r} is an absolute path; record sources "
                    f"relative to the project root"
                )
            _check_reproducible(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_reproducible(item, f"{where}[{i}]")
    elif isinstance(value, str) and _ABS_PATH_RE.match(value):
        raise BundleError(
            f"{where}: {value!r} is an absolute path; record sources relative to the project root"
        )


def _check_meta(meta: object, where: str, writing: bool = True) -> str:
    """Validate one metadata record; return its id.

    When writing, also refuse non-JSON values and non-reproducible provenance; a record
    read back from a manifest is JSON already and was checked when it was written.
    """
    if not isinstance(meta, dict):
        raise BundleError(f"{where}: 'meta' must be a dict, got {type(meta).__name__}")
    for key in ("name", "variant", "id"):
        if key not in meta:
            raise BundleError(f"{where}: meta has no {key!r} (see docs/descriptor-conventions.md)")
    name, variant, ident = meta["name"], meta["variant"], meta["id"]
    check_id(name, f"{where}: kernel name")
    if "." in name:
        raise BundleError(f"{where}: kernel name {name!r} must not contain '.'")
    if variant is not None:
        check_id(variant, f"{where}: variant")
    if ident != kernel_id(name, variant):
        raise BundleError(
            f"{where}: meta id {ident!r} does not match name {name!r} and "
            f"variant {variant!r} (expected {kernel_id(name, variant)!r})"
        )
    if not writing:
        return ident
    try:
        text = canonical_json(meta).decode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        raise BundleError(f"{where}: meta is not plain JSON data ({exc})") from None
    # The manifest nests kernels two levels below its root.
    if _too_deep(text, MAX_JSON_DEPTH - 3):
        raise BundleError(f"{where}: meta nests deeper than {MAX_JSON_DEPTH - 3} levels")
    if "provenance" in meta:
        _check_reproducible(meta["provenance"], f"{where}: meta.provenance")
    return ident
