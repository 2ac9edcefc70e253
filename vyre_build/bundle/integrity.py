"""The reader's byte-level checks: the header and signature block at open, the padding
between artifacts (with keys pinned) and `verify()`'s re-read of every byte.

Functions of a BundleReader (`reader`, untyped here: reader.py imports this module);
they read through `reader._read_at` and raise through `reader._fail` (which names the
file).
"""

from __future__ import annotations

import os
from typing import Any

import blake3

from vyre_build.bundle import signing
from vyre_build.bundle.format import (
    ALIGN,
    FLAG_SIGNED,
    HEADER_SIZE,
    MAGIC,
    READ_VERSIONS,
    SIGNATURE_SIZE,
    _HEADER,
    _hash,
)
from vyre_build.bundle.manifest import decode_strict
from vyre_build.core.errors import BundleError
from vyre_build.core.files import canonical_json

_PADDING_WINDOW = 64 << 10  # padding runs this close are read in one call


class Header:
    """The checked header fields the manifest's checks need."""

    __slots__ = ("file_size", "m_off", "m_size", "n_kernels", "n_artifacts", "m_hash")

    def __init__(self, file_size, m_off, m_size, n_kernels, n_artifacts, m_hash):
        self.file_size, self.m_off, self.m_size = file_size, m_off, m_size
        self.n_kernels, self.n_artifacts, self.m_hash = n_kernels, n_artifacts, m_hash


def check_header(reader: Any) -> Header:
    """Checks 1-4 of docs/bundle-format.md ("What the reader checks"): size, magic,
    version, flags, file size, the manifest's range and the signature block; with keys
    pinned, the signature (before the manifest is even read). Sets `reader.version`,
    `signature` and `signer`."""
    size, fail = reader._size, reader._fail
    if size < HEADER_SIZE:
        head = reader._read_at(0, size)
        if not MAGIC.startswith(head[: len(MAGIC)]):
            raise fail(f"bad magic {head[: len(MAGIC)]!r}, expected {MAGIC!r}: not a vyre bundle")
        raise fail(f"truncated at byte {size}: the header needs {HEADER_SIZE} bytes")
    header = reader._read_at(0, HEADER_SIZE)
    (magic, version, flags, file_size, m_off, m_size, n_kernels, n_artifacts, m_hash) = (
        _HEADER.unpack(header)
    )
    if magic != MAGIC:
        raise fail(f"bad magic {magic!r}, expected {MAGIC!r}: not a vyre bundle")
    if version not in READ_VERSIONS:
        raise fail(
            f"unsupported bundle version {version} (this reader reads versions "
            f"{', '.join(map(str, READ_VERSIONS))}); rebuild the bundle with this vyre_build"
        )
    known = FLAG_SIGNED if version >= 2 else 0
    if flags & ~known:
        raise fail(
            f"unknown header flags 0x{flags:08x} at byte 12 (version {version} allows "
            f"0x{known:08x})"
        )
    reader.version = version
    sig_size = SIGNATURE_SIZE if flags & FLAG_SIGNED else 0
    if size < file_size:
        raise fail(f"truncated at byte {size}: the header declares {file_size} bytes")
    if size > file_size:
        raise fail(f"{size - file_size} trailing bytes after the declared end at byte {file_size}")
    data_end = file_size - sig_size
    if m_off < HEADER_SIZE or m_off % ALIGN or m_off > data_end or m_size != data_end - m_off:
        end = "the signature block" if sig_size else "the file end"
        raise fail(
            f"index out of bounds: manifest at bytes {m_off}..{m_off + m_size} "
            f"must be {ALIGN}-aligned, after the {HEADER_SIZE}-byte header "
            f"and end at {end} (byte {data_end})"
        )
    if sig_size:
        try:
            block = reader._read_at(data_end, sig_size)
            reader.signature = signing.parse_signature_block(block, data_end)
        except BundleError as exc:
            raise fail(str(exc)) from None
    if reader._trusted is not None:
        # Before the manifest is even read: an untrusted file gets no further than this.
        try:
            reader.signer = signing.check_signer(reader.signature, header, reader._trusted)
        except BundleError as exc:
            raise fail(str(exc)) from None
    return Header(file_size, m_off, m_size, n_kernels, n_artifacts, m_hash)


def manifest_text(reader: Any, head: Header) -> str:
    """Checks 5 and the UTF-8 of 6: the manifest, read (or taken from memory) once, hashed
    and decoded. Read rather than mapped: a file cut short in place while mapped would
    kill the process (SIGBUS) instead of being refused, for some 50 us saved per open."""
    m_off, m_size, fail = head.m_off, head.m_size, reader._fail
    if reader._mem is not None:
        manifest = memoryview(reader._mem)[m_off : m_off + m_size]
    else:
        manifest = memoryview(reader._read_at(m_off, m_size))  # names a short file's byte
    with manifest:
        if blake3.blake3(manifest).digest() != head.m_hash:
            raise fail(
                f"manifest hash mismatch: bytes {m_off}..{head.file_size} do not hash "
                f"to the header's blake3 {head.m_hash.hex()} (corrupt bundle)"
            )
        try:
            return str(manifest, "utf-8")
        except UnicodeDecodeError as exc:
            raise fail(f"bad UTF-8 in the manifest at byte {m_off + exc.start}") from None


def check_padding(reader: Any, m_off: int) -> None:
    """With keys pinned, the only bytes that no signed hash covers are the padding
    between artifacts (and before the manifest): refuse any that is not zero, so that
    a pinned open accepts nothing the signer did not write. Padding is under 16 bytes
    per artifact; runs of it within 64 KiB are read together, with one pread (no seek,
    no buffer refill): about 0.6 us per artifact."""
    gaps, pos = [], HEADER_SIZE
    for start, end in reader._ranges + [(m_off, m_off)]:
        if start > pos:
            gaps.append((pos, start))
        pos = max(pos, end)
    i = 0
    while i < len(gaps):
        first, j = gaps[i][0], i
        while j + 1 < len(gaps) and gaps[j + 1][1] - first <= _PADDING_WINDOW:
            j += 1
        window = reader._read_at(first, gaps[j][1] - first)
        for a, b in gaps[i : j + 1]:
            if window[a - first : b - first].strip(b"\0"):
                raise reader._fail(
                    f"non-zero padding bytes at {a}..{b}, which no hash or signature "
                    "covers: the bundle was changed after signing (rebuild or re-sign it)"
                )
        i = j + 1


def verify(reader: Any) -> list[str]:
    """BundleReader.verify(): every problem found re-reading the whole file. A manifest
    refused on first use (its indexes) raises that BundleError, as its open once did."""
    ranges = sorted(
        (info["offset"], info["size"], ident, suffix)
        for ident in reader._ids
        for suffix, info in reader._artifacts(ident).items()
    )
    problems = []
    pos = HEADER_SIZE
    for off, size, ident, suffix in ranges + [(reader._manifest_offset, 0, None, None)]:
        gap = off - pos
        if gap >= ALIGN:
            problems.append(
                f"{gap} unused bytes at {pos}..{off} (a canonical bundle "
                f"only pads to {ALIGN}-byte alignment)"
            )
        if gap > 0 and reader._read_at(pos, gap).strip(b"\0"):
            problems.append(f"non-zero padding bytes at {pos}..{off}")
        if ident is None:
            break
        try:
            data = reader._read_at(off, size)
        except BundleError as exc:
            problems.append(str(exc))
            break
        if _hash(data) != reader._artifacts(ident)[suffix]["blake3"]:
            problems.append(
                f"kernel {ident!r} artifact {suffix!r}: blake3 mismatch at bytes {off}..{off + size}"
            )
        pos = max(pos, off + size)
    undecoded = []
    for ident in reader._ids:  # each kernel's metadata, decoded now if it was not
        try:
            reader._meta(ident)
        except BundleError as exc:
            undecoded.append(str(exc))
    problems += undecoded
    text = reader._text
    if not undecoded and canonical_json(decode_strict(text, "the manifest", reader._fail)) != (
        text.encode("utf-8")
    ):
        problems.append("manifest is not in canonical JSON form (sorted keys, no spaces)")
    sig = reader.signature
    if sig is not None and not signing.verify_signature(
        sig, reader._read_at(0, HEADER_SIZE), sig.public
    ):
        problems.append(
            f"the signature does not verify under the key it names (key id {sig.key_id}): "
            "the header or manifest changed after signing, or it was made over another bundle"
        )
    return problems


def pread(fd: int, size: int, offset: int) -> bytes:
    """`size` bytes at `offset` of file descriptor `fd` (fewer at its end); where the
    platform has no pread (Windows), the caller holds the reader's lock."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)
