"""Bundle reader: lazy, bounds-checked, hash-verified.

Opening costs what is used: the header, the signature block, the manifest's hash and, of
the manifest, the kernel ids and artifact indexes. A manifest in the writer's canonical
layout is split into its records by anchored regular expressions (C speed) and each
kernel's metadata is decoded, with every check of a full decode (duplicate keys, NaN,
depth, the record's shape), on its first use (`kernel_meta`, `entry`, `verify`); any
other manifest is decoded and checked whole at open, as before (docs/bundle-format.md,
"What the reader checks").
"""

from __future__ import annotations

import copy
import difflib
import io
import itertools
import json
import operator
import os
import re
import threading
from typing import Any, BinaryIO

import blake3

from vyre_build.core.errors import BundleError
from vyre_build.core.files import canonical_json, canonical_text
from vyre_build.bundle import signing
from vyre_build.bundle.metadata import KernelMeta, check_metadata
from vyre_build.bundle.format import (
    ALIGN,
    FLAG_SIGNED,
    FORMAT_NAME,
    HEADER_SIZE,
    MAGIC,
    MAX_JSON_DEPTH,
    READ_VERSIONS,
    SIGNATURE_SIZE,
    VERSION,
    _HEADER,
    _EMPTY_PAIR_RE,
    _HEX64_RE,
    _ID_RE,
    _MAX_NAME,
    _JSON_STRING_RE,
    _check_meta,
    _hash,
    _too_deep,
    check_id,
    check_suffix,
    kernel_id,
)

SHOWN_IDS = 12  # a lookup's error lists every id of a bundle this small, else counts them


# --- reader --------------------------------------------------------------------------


class BundleEntry:
    """One kernel (and variant) of a bundle: `id`, `name`, `variant`, its metadata record
    `meta` and artifact index `artifacts` (suffix -> {"offset", "size", "blake3"})."""

    __slots__ = ("id", "name", "variant", "meta", "artifacts")

    def __init__(
        self,
        id: str,
        name: str,
        variant: str | None,
        meta: dict,  # noqa: A002
        artifacts: dict,
    ):
        self.id, self.name, self.variant, self.meta, self.artifacts = (
            id,
            name,
            variant,
            meta,
            artifacts,
        )

    def __eq__(self, other) -> bool:
        return type(other) is BundleEntry and all(
            getattr(self, f) == getattr(other, f) for f in self.__slots__
        )

    __hash__ = None  # mutable dicts inside

    def __repr__(self) -> str:
        return f"BundleEntry(id={self.id!r}, artifacts={sorted(self.artifacts)})"


def _unique_object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {dup!r}")
    return obj


def _reject_constant(name: str):
    raise ValueError(f"non-JSON number {name}")


_INDEX_KEYS = {"offset", "size", "blake3"}
_PADDING_WINDOW = 64 << 10  # padding runs this close are read in one call (reader._padding)


# The canonical manifest (files.canonical_json of the writer's document): the root object
# holds "format", "kernels", "version" in that order; each record "artifacts", "id",
# "meta"; each index entry "blake3", "offset", "size" (split by _canonical_records).
_CANON_HEAD = '{"format":' + json.dumps(FORMAT_NAME) + ',"kernels":['
_CANON_TAIL = re.compile(r'\](?:,"tuning":(\{.*\}))?,"version":(0|[1-9][0-9]{0,8})\}', re.S)
_TUNING_AFTER = '}],"tuning":{'  # the last record's end, when tuning data follows
_CANON_INDEX = r'"([^"\\{}]*+)":\{"blake3":"([0-9a-f]{64})","offset":(0|[1-9][0-9]*+),"size":(0|[1-9][0-9]*+)\}'
_CANON_RECORD = re.compile(
    r'\{"artifacts":\{((?:' + _CANON_INDEX + r")(?:," + _CANON_INDEX + r')*+)?\},"id":"([^"\\]*+)",'
    r'"meta":'
)
_LAST_RECORD = '}],"version":'
_META_LEVELS = MAX_JSON_DEPTH - 3  # the metadata object is the fourth level of the document
_CANON_INDEX_RE = re.compile(_CANON_INDEX)


def _what(ident: str, suffix: str) -> str:
    return f"kernel {ident!r} artifact {suffix!r}"


_RECORD_KEY = '"artifacts":{'  # in every record head; in no string (its quotes)


def _safe_id(ident: str) -> bool:  # check_id's test without building its error
    return len(ident) <= _MAX_NAME and _ID_RE.fullmatch(ident) is not None


_BRACKETS_AND_BARS = {c: None for c in range(128) if chr(c) not in "[]{}|"}


def _all_balanced(spans: list[str], levels: int) -> bool:
    """Whether the brackets outside strings of every one of `spans` pair up, each nested
    at most `levels` deep (C-speed passes over all of them at once: a "|" between spans
    stays when every span's strings close in it, and each pass peels one level)."""
    joined = "|".join(spans)
    if "\\" in joined:
        outside = _JSON_STRING_RE.sub("", joined)
    else:  # no escapes: every quote bounds a string, so even pieces lie outside them
        outside = "".join(joined.split('"')[::2])
    brackets = outside.translate(_BRACKETS_AND_BARS)
    bars = "|" * (len(spans) - 1)
    for _ in range(levels):
        if brackets == bars:
            return True
        brackets = _EMPTY_PAIR_RE.sub("", brackets)
    return brackets == bars


_OFFSET, _SIZE = operator.itemgetter(2), operator.itemgetter(3)  # of a found index entry


def _ranges_of(records: dict[str, dict]) -> list[tuple[int, int, str, str]]:
    """(start, end, id, suffix) of every artifact of `records` (index entries as found by
    the canonical split, or decoded dicts)."""
    out = []
    for ident, rec in records.items():
        arts = rec["artifacts"]
        if type(arts) is list:
            out += [(int(o), int(o) + int(z), ident, x) for x, _, o, z in arts]
        else:
            out += [(a["offset"], a["offset"] + a["size"], ident, x) for x, a in arts.items()]
    return out


def _canonical_decode(text: str) -> Any:
    """`text` decoded, when it is canonical JSON (the writer's form: what re-encodes to
    exactly `text` has no duplicate key, NaN or infinity); else None. Both passes run in
    C, several times faster than the strict decoder's per-object hook."""
    try:
        value = json.loads(text)
        again = canonical_text(value)
    except (ValueError, RecursionError):
        return None
    return value if again == text else None


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class BundleReader:
    """An open bundle. Construct with `read_bundle(path)` or `read_bundle_bytes(data)`.

    Opening checks the header, the signature when keys are pinned (before anything else
    is read), and the manifest (bounds, alignment, overlaps, hash), and with keys pinned
    that the padding between artifacts, which no hash covers, is zero; each kernel's
    metadata record is decoded and checked on its first use; `read_artifact` reads
    and verifies artifact bytes on first use, then serves them from memory. `signature`
    is the Signature block (None when unsigned), `signer` the trusted PublicKey that
    signed it (None when no keys were pinned). Safe to share between threads. Use as a
    context manager or `close()`.
    """

    def __init__(self, fileobj: BinaryIO, name: str, size: int, trusted: list | None = None):
        self._f = fileobj
        self.path = name
        self._size = size
        self._trusted = trusted
        self.version, self.signature, self.signer = VERSION, None, None
        self.tuning: dict = {"tunables": {}, "records": []}  # the manifest's tuning data
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], bytes] = {}
        self._checked: dict[str, KernelMeta] = {}
        self._metas: dict[str, dict] = {}  # decoded metadata records by id (_meta)
        self._cuts: list[tuple[int, int]] = []  # undecoded ones: spans of _text (_order)
        self._order: dict[str, int] = {}
        try:
            self._open()
        except BaseException:
            fileobj.close()
            raise

    # -- opening --

    def _fail(self, reason: str) -> BundleError:
        return BundleError(f"{self.path}: {reason}")

    def _read_at(self, offset: int, size: int) -> bytes:
        """Read exactly `size` bytes at `offset` (already checked against the file size)."""
        with self._lock:
            if self._f is None:
                raise self._fail("bundle is closed")
            self._f.seek(offset)
            data = self._f.read(size)
        if len(data) != size:
            raise self._fail(
                f"truncated at byte {offset + len(data)}: needed bytes "
                f"{offset}..{offset + size} (the file shrank after opening?)"
            )
        return data

    def _open(self) -> None:
        if self._size < HEADER_SIZE:
            head = self._read_at(0, self._size)
            if not MAGIC.startswith(head[: len(MAGIC)]):
                raise self._fail(
                    f"bad magic {head[: len(MAGIC)]!r}, expected {MAGIC!r}: not a vyre bundle"
                )
            raise self._fail(
                f"truncated at byte {self._size}: the header needs {HEADER_SIZE} bytes"
            )
        header = self._read_at(0, HEADER_SIZE)
        (magic, version, flags, file_size, m_off, m_size, n_kernels, n_artifacts, m_hash) = (
            _HEADER.unpack(header)
        )
        if magic != MAGIC:
            raise self._fail(f"bad magic {magic!r}, expected {MAGIC!r}: not a vyre bundle")
        if version not in READ_VERSIONS:
            raise self._fail(
                f"unsupported bundle version {version} (this reader reads versions "
                f"{', '.join(map(str, READ_VERSIONS))}); rebuild the bundle with this vyre_build"
            )
        known = FLAG_SIGNED if version >= 2 else 0
        if flags & ~known:
            raise self._fail(
                f"unknown header flags 0x{flags:08x} at byte 12 (version {version} allows "
                f"0x{known:08x})"
            )
        self.version = version
        sig_size = SIGNATURE_SIZE if flags & FLAG_SIGNED else 0
        if self._size < file_size:
            raise self._fail(
                f"truncated at byte {self._size}: the header declares {file_size} bytes"
            )
        if self._size > file_size:
            raise self._fail(
                f"{self._size - file_size} trailing bytes after the declared "
                f"end at byte {file_size}"
            )
        data_end = file_size - sig_size
        if m_off < HEADER_SIZE or m_off % ALIGN or m_off > data_end or m_size != data_end - m_off:
            end = "the signature block" if sig_size else "the file end"
            raise self._fail(
                f"index out of bounds: manifest at bytes {m_off}..{m_off + m_size} "
                f"must be {ALIGN}-aligned, after the {HEADER_SIZE}-byte header "
                f"and end at {end} (byte {data_end})"
            )
        if sig_size:
            try:
                block = self._read_at(data_end, sig_size)
                self.signature = signing.parse_signature_block(block, data_end)
            except BundleError as exc:
                raise self._fail(str(exc)) from None
        if self._trusted is not None:
            # Before the manifest is even read: an untrusted file gets no further than this.
            try:
                self.signer = signing.check_signer(self.signature, header, self._trusted)
            except BundleError as exc:
                raise self._fail(str(exc)) from None
        manifest = self._read_at(m_off, m_size)
        if blake3.blake3(manifest).digest() != m_hash:
            raise self._fail(
                f"manifest hash mismatch: bytes {m_off}..{file_size} do not hash "
                f"to the header's blake3 {m_hash.hex()} (corrupt bundle)"
            )
        try:
            text = manifest.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail(f"bad UTF-8 in the manifest at byte {m_off + exc.start}") from None
        self._text = text
        records = self._canonical_records(text, m_off, n_kernels)
        if records is None:  # not the writer's layout: decode and check it whole
            records = self._check_manifest(self._decode(text, "the manifest"), m_off)
        self._manifest_offset = m_off
        self._manifest_bytes = manifest
        self._records = records
        if len(self._records) != n_kernels:
            raise self._fail(
                f"header kernel count {n_kernels} does not match the manifest's "
                f"{len(self._records)}"
            )
        found = sum(len(r["artifacts"]) for r in self._records.values())
        if found != n_artifacts:
            raise self._fail(
                f"header artifact count {n_artifacts} does not match the manifest's {found}"
            )
        if self._trusted is not None:
            self._check_padding(m_off)

    def _set_tuning(self, doc: object) -> None:
        """Check the manifest's tuning data (bundle/tuning.py) and keep it as `tuning`."""
        from vyre_build.bundle.tuning import check_tuning

        try:
            self.tuning = check_tuning(doc)
        except BundleError as exc:
            raise self._fail(f"in the manifest: {exc}") from None

    def _decode(self, text: str, what: str) -> Any:
        """`text` decoded as strict JSON (no duplicate keys, no NaN, at most
        MAX_JSON_DEPTH levels); `what` names it in the errors."""
        where = "" if what == "the manifest" else f" ({what})"
        try:
            doc = json.loads(
                text, object_pairs_hook=_unique_object, parse_constant=_reject_constant
            )
        except RecursionError:
            raise self._fail(f"bad JSON in the manifest{where}: nested too deeply") from None
        except ValueError as exc:
            raise self._fail(f"bad JSON in the manifest{where}: {exc}") from None
        if what == "the manifest" and _too_deep(text):
            raise self._fail(
                f"bad JSON in the manifest: nested deeper than {MAX_JSON_DEPTH} levels"
            )
        return doc

    def _canonical_records(
        self, text: str, data_end: int, n_kernels: int
    ) -> dict[str, dict] | None:
        """The records by id of a manifest in the writer's canonical layout, each kernel's
        "meta" left undecoded (its span in `_cuts`, decoded by `_meta`), with every check
        `_check_manifest` makes of the rest; None when `text` is not in that layout (the
        caller then decodes it whole, and its errors are the full decoder's).

        First the split, checking nothing: a record's metadata runs to the next
        `},{"artifacts":{` (the last one's to `}],"version":`). No string holds the text
        `"artifacts":{` (a quote inside a string is escaped), so outside the record heads
        only a metadata object with an "artifacts" key holding an object spells it. When
        the text holds it exactly as many times as the header counts kernels (one C-speed
        count), JSON in the writer's layout has no other: no metadata record holds a cut.
        Otherwise (a metadata record spelling a head, which the writer's metadata never
        does, or a header that miscounts) the manifest is decoded whole and read as
        written or refused with the full decoder's reason.

        What the count cannot see is a manifest that is not JSON (a string left open in
        one metadata record swallowing the next head): before any metadata record is
        served, `_meta` proves that it and every record before it pair their brackets
        outside strings, nested at most _META_LEVELS deep (`_all_balanced`, C-speed), and
        refuses the bundle with the full decoder's reason where they do not."""
        if not text.startswith(_CANON_HEAD) or text.count(_RECORD_KEY) != n_kernels:
            return None
        # every "artifacts":{ is a record head now: find them all in one C-speed pass
        pos = len(_CANON_HEAD)
        heads = list(_CANON_RECORD.finditer(text, pos))
        if len(heads) != n_kernels:  # a head that is not in the canonical layout
            return None
        cuts: list[tuple[int, int]] = []
        for m, after in zip(heads, heads[1:]):
            if m.start() != pos or not text.startswith("},", after.start() - 2):
                return None
            cuts.append((m.end(), after.start() - 2))
            pos = after.start()
        if heads:
            last = text.rfind(_TUNING_AFTER)  # the last record's closing brace
            last = text.rfind(_LAST_RECORD) if last < 0 else last
            if heads[-1].start() != pos or last < heads[-1].end():
                return None
            cuts.append((heads[-1].end(), last))
            pos = last + 1  # at the tail's "]"
        if any(end <= start or text[start] not in "{[" for start, end in cuts):
            return None
        tail = _CANON_TAIL.fullmatch(text, pos)
        if tail is None:
            return None
        ids = [m.group(10) for m in heads]
        for ident in ids:
            if not _safe_id(ident):
                try:
                    check_id(ident)
                except BundleError as exc:
                    raise self._fail(f"in the manifest: {exc}") from None
        for previous, ident in itertools.pairwise(ids):
            if ident <= previous:
                raise self._fail(
                    f"manifest kernel {ident!r} is out of order or duplicated (after {previous!r})"
                )
        records: dict[str, dict] = {}
        bodies = [m.group(1) or "" for m in heads]
        # each index entry holds one '{"blake3":"' (no suffix holds a quote or a brace)
        flat = _CANON_INDEX_RE.findall("|".join(bodies))
        at = 0
        for ident, body in zip(ids, bodies):
            count = body.count('{"blake3":"')
            found = flat[at : at + count]
            at += count
            if count > 1 and len({f[0] for f in found}) != count:  # the full decoder names it
                return None
            # the index as found: `_artifacts` builds its dicts on first use
            records[ident] = {"id": ident, "artifacts": found}
        for suffix in sorted({f[0] for f in flat}):
            try:
                check_suffix(suffix)
            except BundleError as exc:
                ident = next(i for i in ids if suffix in self._artifacts(i, records))
                raise self._fail(f"manifest kernel {ident!r}: {exc}") from None
        # bounds, alignment and overlaps in C-level passes (map, min, max, sorted); the
        # per-range loops below only run to name a range that fails
        offs = list(map(int, map(_OFFSET, flat)))
        ends = list(map(operator.add, offs, map(int, map(_SIZE, flat))))
        if flat and (
            min(offs) < HEADER_SIZE or max(ends) > data_end or any(map(ALIGN.__rmod__, offs))
        ):
            for off, end, ident, suffix in _ranges_of(records):
                if off < HEADER_SIZE or off % ALIGN or end > data_end:
                    raise self._fail(
                        f"index out of bounds: {_what(ident, suffix)} at bytes "
                        f"{off}..{end} must be {ALIGN}-aligned within the "
                        f"data region {HEADER_SIZE}..{data_end}"
                    )
        order = sorted(range(len(offs)), key=list(zip(offs, ends)).__getitem__)
        starts = list(map(offs.__getitem__, order))
        stops = list(map(ends.__getitem__, order))
        if any(map(operator.lt, starts[1:], stops[:-1])):
            self._check_overlaps(_ranges_of(records))
        if int(tail.group(2)) != self.version:
            raise self._fail(
                f"manifest version {int(tail.group(2))!r} does not match the header's "
                f"{self.version}"
            )
        if tail.group(1) is not None:
            try:
                tuning = json.loads(
                    tail.group(1), object_pairs_hook=_unique_object, parse_constant=_reject_constant
                )
            except (ValueError, RecursionError):
                return None  # not the writer's split: the full decoder names the problem
            self._set_tuning(tuning)
        self._ranges = None  # built when the padding check needs them (_ranges_of)
        self._cuts = cuts  # each kernel's metadata span of _text, in manifest order
        self._order = {ident: i for i, ident in enumerate(ids)}
        self._proven = 0  # metadata spans proven to be whole (_prove_split)
        return records

    def _meta(self, ident: str) -> dict:
        """The manifest record of kernel `ident`'s metadata, decoded and checked (JSON,
        shape, `meta.id`) on first use. Do not modify it."""
        meta = self._metas.get(ident)
        if meta is None:
            start, end = self._cuts[self._order[ident]]
            self._prove_split(ident)
            span = self._text[start:end]
            meta = _canonical_decode(span)
            if meta is None:  # not the writer's form: the strict decoder names the problem
                meta = self._decode(span, f"kernel {ident!r} metadata")

            self._check_record_meta(ident, meta)
            meta = self._metas.setdefault(ident, meta)
        return meta

    def decode_metas(self, idents: list[str]) -> None:
        """Decode the metadata records of `idents` not decoded yet in one pass (what
        `Bundle.warm()` asks for): their spans, proven whole as `_meta` proves them, are
        decoded as one JSON array and re-encoded once, so each record gets the checks of
        `_meta` (canonical JSON: no duplicate key, NaN or infinity; the record's shape
        and id) for one C call instead of one per kernel. Where the batch is not
        canonical, nothing is kept: each record's first use decodes it alone and names
        its problem. Unknown ids are left to that use too."""
        todo = sorted(
            {i for i in idents if i in self._order and i not in self._metas},
            key=self._order.__getitem__,
        )
        if len(todo) < 2:
            return
        try:
            self._prove_split(todo[-1])
        except BundleError:  # the records before the bad one are still served alone
            return
        cuts = map(self._cuts.__getitem__, map(self._order.__getitem__, todo))
        metas = _canonical_decode("[" + ",".join(self._text[a:b] for a, b in cuts) + "]")
        # a span holding more than one value (or none) changes the count: each its own then
        if type(metas) is not list or len(metas) != len(todo):
            return
        for ident, meta in zip(todo, metas):
            try:
                self._check_record_meta(ident, meta)
            except BundleError:  # refused, with this reason, where it is used
                continue
            self._metas.setdefault(ident, meta)

    def _prove_split(self, ident: str) -> None:
        """That the cuts up to kernel `ident`'s are the document's (`_canonical_records`):
        the metadata spans up to and including its own pair their brackets; proven once,
        in order, so each span is scanned at most once whatever is used."""
        upto = self._order[ident] + 1
        done = self._proven
        if upto <= done:
            return
        spans = [self._text[a:b] for a, b in self._cuts[done:upto]]
        if not _all_balanced(spans, _META_LEVELS):
            self._decode(self._text, "the manifest")  # raises the full decoder's reason
            raise self._fail("bad JSON in the manifest: a metadata record is cut short")
        self._proven = max(self._proven, upto)

    def _check_record_meta(self, ident: str, meta: object) -> None:
        try:
            meta_id = _check_meta(meta, f"manifest kernel {ident!r}", writing=False)
        except BundleError as exc:
            raise self._fail(f"in the manifest: {exc}") from None
        if meta_id != ident:
            raise self._fail(f"manifest kernel {ident!r} carries metadata of {meta_id!r}")

    def _check_overlaps(self, ranges: list[tuple[int, int, str, str]]) -> None:
        ranges.sort()
        self._ranges = ranges
        for (s0, e0, i0, x0), (s1, e1, i1, x1) in itertools.pairwise(ranges):
            if s1 < e0:
                raise self._fail(
                    f"overlapping ranges: {_what(i0, x0)} at bytes {s0}..{e0} and "
                    f"{_what(i1, x1)} at bytes {s1}..{e1}"
                )

    def _check_padding(self, m_off: int) -> None:
        """With keys pinned, the only bytes that no signed hash covers are the padding
        between artifacts (and before the manifest): refuse any that is not zero, so that
        a pinned open accepts nothing the signer did not write. Padding is under 16 bytes
        per artifact; runs of it within 64 KiB are read together, with one pread (no seek,
        no buffer refill): about 0.6 us per artifact."""
        gaps, pos = [], HEADER_SIZE
        if self._ranges is None:
            self._ranges = sorted(_ranges_of(self._records))
        for start, end, _, _ in self._ranges + [(m_off, m_off, "", "")]:
            if start > pos:
                gaps.append((pos, start))
            pos = max(pos, end)
        i = 0
        while i < len(gaps):
            first, j = gaps[i][0], i
            while j + 1 < len(gaps) and gaps[j + 1][1] - first <= _PADDING_WINDOW:
                j += 1
            window = self._padding(first, gaps[j][1])
            for a, b in gaps[i : j + 1]:
                if window[a - first : b - first].strip(b"\0"):
                    raise self._fail(
                        f"non-zero padding bytes at {a}..{b}, which no hash or signature "
                        "covers: the bundle was changed after signing (rebuild or re-sign it)"
                    )
            i = j + 1

    def _padding(self, start: int, end: int) -> bytes:
        try:
            fd = self._f.fileno()
        except (OSError, AttributeError):  # in memory (read_bundle_bytes)
            fd = None
        if fd is None or not hasattr(os, "pread"):
            return self._read_at(start, end - start)
        try:
            data = os.pread(fd, end - start, start)
        except OSError as exc:
            raise self._fail(f"cannot read bytes {start}..{end}: {exc.strerror}") from None
        if len(data) != end - start:
            raise self._fail(
                f"truncated at byte {start + len(data)}: needed bytes {start}..{end} (the "
                "file shrank after opening?)"
            )
        return data

    def _check_manifest(self, doc: object, data_end: int) -> dict[str, dict]:
        """Check the manifest's shape, names and artifact ranges; return records by id."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise self._fail(f"manifest is not a {FORMAT_NAME!r} manifest object")
        if doc.get("version") != self.version or not _is_int(doc.get("version")):
            raise self._fail(
                f"manifest version {doc.get('version')!r} does not match the header's "
                f"{self.version}"
            )
        known = {"format", "version", "kernels", "tuning"}
        if not {"format", "version", "kernels"} <= set(doc) <= known:
            raise self._fail(f"manifest has unknown keys {sorted(set(doc) - known)}")
        if "tuning" in doc:
            self._set_tuning(doc["tuning"])
        kernels = doc["kernels"]
        if not isinstance(kernels, list):
            raise self._fail("manifest 'kernels' must be a list")
        records: dict[str, dict] = {}
        ranges: list[tuple[int, int, str, str]] = []
        previous, suffixes = None, set()
        for n, rec in enumerate(kernels):
            if not isinstance(rec, dict) or set(rec) != {"id", "meta", "artifacts"}:
                raise self._fail(f"manifest kernel {n} must have exactly 'id', 'meta', 'artifacts'")
            try:
                ident = check_id(rec["id"])
            except BundleError as exc:
                raise self._fail(f"in the manifest: {exc}") from None
            self._check_record_meta(ident, rec["meta"])
            self._metas[ident] = rec["meta"]
            if previous is not None and ident <= previous:
                raise self._fail(
                    f"manifest kernel {ident!r} is out of order or duplicated (after {previous!r})"
                )
            previous = ident
            arts = rec["artifacts"]
            if not isinstance(arts, dict):
                raise self._fail(f"manifest kernel {ident!r}: 'artifacts' must be an object")
            for suffix, info in arts.items():
                if suffix not in suffixes:  # the same few suffixes recur: check each once
                    try:
                        suffixes.add(check_suffix(suffix))
                    except BundleError as exc:
                        raise self._fail(f"manifest kernel {ident!r}: {exc}") from None
                if type(info) is not dict or info.keys() != _INDEX_KEYS:
                    raise self._fail(
                        f"{_what(ident, suffix)}: index entry must have exactly "
                        f"offset, size, blake3"
                    )
                off, size, digest = info["offset"], info["size"], info["blake3"]
                if type(off) is not int or type(size) is not int or off < 0 or size < 0:
                    raise self._fail(
                        f"{_what(ident, suffix)}: offset {off!r} and size "
                        f"{size!r} must be non-negative integers"
                    )
                if off < HEADER_SIZE or off % ALIGN or off + size > data_end:
                    raise self._fail(
                        f"index out of bounds: {_what(ident, suffix)} at bytes "
                        f"{off}..{off + size} must be {ALIGN}-aligned within the "
                        f"data region {HEADER_SIZE}..{data_end}"
                    )
                if type(digest) is not str or not _HEX64_RE.fullmatch(digest):
                    raise self._fail(
                        f"{_what(ident, suffix)}: blake3 {digest!r} is not 64 lowercase hex digits"
                    )
                ranges.append((off, off + size, ident, suffix))
            records[ident] = {"id": ident, "artifacts": arts}
        self._check_overlaps(ranges)
        return records

    # -- queries --

    @property
    def ids(self) -> list[str]:
        """Sorted kernel ids, e.g. ["add.f32", "add.i32", "saxpy"]."""
        return list(self._records)

    def _record(self, ident: str) -> dict:
        if not isinstance(ident, str):
            raise self._fail(f"kernel id must be a string, got {ident!r}")
        rec = self._records.get(ident)
        if rec is None:
            variants = sorted(
                i[len(ident) + 1 :] for i in self._records if i.startswith(ident + ".")
            )
            hint = (
                f"; it has variants {', '.join(variants)}: ask for one"
                if variants
                else self._near_misses(ident)
            )
            raise self._fail(f"no kernel {ident!r} in the bundle{hint}")
        self._artifacts(ident)
        return rec

    def _artifacts(self, ident: str, records: dict[str, dict] | None = None) -> dict:
        """Kernel `ident`'s artifact index (suffix -> {"blake3", "offset", "size"}), built
        on first use from the entries the canonical split found (all checked at open)."""
        rec = (self._records if records is None else records)[ident]
        arts = rec["artifacts"]
        if type(arts) is list:
            arts = {x: {"blake3": d, "offset": int(o), "size": int(z)} for x, d, o, z in arts}
            rec["artifacts"] = arts
        return arts

    def _near_misses(self, ident: str) -> str:
        """What a lookup of an unknown `ident` says after "no kernel ...": the closest ids
        and names (difflib) first, then every id of a small bundle or the count of a big
        one (a misspelt name should not scroll 63 ids past)."""
        names = {i.partition(".")[0] for i in self._records} - set(self._records)
        close = difflib.get_close_matches(ident, list(self._records), n=3)
        close = close or difflib.get_close_matches(ident, sorted(names), n=3)  # "add" of add.f32
        guess = f"; did you mean {' or '.join(repr(c) for c in close)}? It" if close else "; it"
        if len(self._records) <= SHOWN_IDS:
            return f"{guess} holds {', '.join(self._records) or 'no kernels'}"
        return (
            f"{guess} holds {len(self._records)} kernels "
            f"(`vyre-build bundle ls {self.path}` lists them)"
        )

    def entry(self, name: str, variant: str | None = None) -> BundleEntry:
        """The kernel `name` (variant `variant`, or an id "name.variant" as `name`)."""
        if not isinstance(name, str) or not (variant is None or isinstance(variant, str)):
            raise self._fail(f"kernel name and variant must be strings, got {name!r}, {variant!r}")
        rec = self._record(kernel_id(name, variant))
        self.kernel_meta(rec["id"])
        meta = copy.deepcopy(self._meta(rec["id"]))
        return BundleEntry(
            rec["id"], meta["name"], meta["variant"], meta, copy.deepcopy(rec["artifacts"])
        )

    def kernel_meta(self, ident: str) -> KernelMeta:
        """The checked metadata of kernel `ident` (checked on its first read; BundleError
        naming the field when malformed). Its `record` is the manifest's: do not modify it."""
        checked = self._checked.get(ident)
        if checked is None:
            meta = self._meta(self._record(ident)["id"])
            checked = self._checked[ident] = check_metadata(meta, f"{self.path}: kernel {ident!r}")
        return checked

    def entries(self) -> list[BundleEntry]:
        """Every entry, in id order."""
        return [self.entry(i) for i in self._records]

    def read_artifact(self, ident: str, suffix: str) -> bytes:
        """The bytes of artifact `suffix` of kernel `ident`, verified by blake3 on first read."""
        key = (ident, suffix)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        info = self._record(ident)["artifacts"].get(suffix)
        if info is None:
            have = ", ".join(sorted(self._artifacts(ident))) or "none"
            raise self._fail(f"kernel {ident!r} has no {suffix!r} artifact (it has {have})")
        data = self._read_at(info["offset"], info["size"])
        if _hash(data) != info["blake3"]:
            raise self._fail(
                f"kernel {ident!r} artifact {suffix!r}: blake3 mismatch at bytes "
                f"{info['offset']}..{info['offset'] + info['size']} (corrupt "
                f"bundle; rebuild it)"
            )
        self._cache[key] = data
        return data

    def verify(self) -> list[str]:
        """Re-read and check every byte; return the problems found (empty when sound).

        Checks each artifact's blake3 (re-read from disk, not from the cache), that the
        padding between ranges is zero and no bytes lie outside a range, each kernel's
        metadata (decoded if no use did yet), that the manifest is in canonical form and, in a signed bundle, that the signature is valid
        for the public key in its block (whether that key is trusted is `signer`'s job).
        """
        problems = []
        pos = HEADER_SIZE
        ranges = sorted(
            (info["offset"], info["size"], ident, suffix)
            for ident in self._records
            for suffix, info in self._artifacts(ident).items()
        )
        for off, size, ident, suffix in ranges + [(self._manifest_offset, 0, None, None)]:
            gap = off - pos
            if gap >= ALIGN:
                problems.append(
                    f"{gap} unused bytes at {pos}..{off} (a canonical bundle "
                    f"only pads to {ALIGN}-byte alignment)"
                )
            if gap > 0 and self._read_at(pos, gap).strip(b"\0"):
                problems.append(f"non-zero padding bytes at {pos}..{off}")
            if ident is None:
                break
            try:
                data = self._read_at(off, size)
            except BundleError as exc:
                problems.append(str(exc))
                break
            want = self._artifacts(ident)[suffix]["blake3"]
            if _hash(data) != want:
                problems.append(
                    f"kernel {ident!r} artifact {suffix!r}: blake3 mismatch at "
                    f"bytes {off}..{off + size}"
                )
            pos = max(pos, off + size)
        undecoded = []
        for ident in self._records:  # each kernel's metadata, decoded now if it was not
            try:
                self._meta(ident)
            except BundleError as exc:
                undecoded.append(str(exc))
        problems += undecoded
        if not undecoded and canonical_json(self._decode(self._text, "the manifest")) != (
            self._manifest_bytes
        ):
            problems.append("manifest is not in canonical JSON form (sorted keys, no spaces)")
        sig = self.signature
        if sig is not None and not signing.verify_signature(
            sig, self._read_at(0, HEADER_SIZE), sig.public
        ):
            problems.append(
                f"the signature does not verify under the key it names (key id {sig.key_id}): "
                "the header or manifest changed after signing, or it was made over another bundle"
            )
        return problems

    # -- lifetime --

    def close(self) -> None:
        """Close the file; cached artifact bytes stay readable, uncached ones raise."""
        with self._lock:
            if self._f is not None:
                self._f.close()
                self._f = None

    def __enter__(self) -> BundleReader:  # noqa: PYI034 - typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<BundleReader {self.path!r}: {len(self._records)} kernels>"


def read_bundle(path: str | os.PathLike, *, trusted_keys=None) -> BundleReader:
    """Open the bundle at `path` lazily (header and manifest only); see `BundleReader`.

    Arguments:
        path: the .vyrebundle file.
        trusted_keys: public key files or PublicKeys of which one must have signed the
            bundle (refused before the manifest is read otherwise); None: those of
            $VYRE_TRUSTED_KEYS, or no check when it is unset; False: no check at all.
    """
    trusted = signing.resolve_trusted_keys(trusted_keys)
    name = os.fspath(path)
    try:
        f = open(name, "rb")  # noqa: SIM115 - the reader owns the file until close()
    except OSError as exc:
        raise BundleError(f"{name}: cannot open bundle: {exc.strerror}") from None
    try:
        size = os.fstat(f.fileno()).st_size
    except OSError as exc:
        f.close()
        raise BundleError(f"{name}: cannot stat bundle: {exc.strerror}") from None
    return BundleReader(f, name, size, trusted)


def read_bundle_bytes(
    data: bytes, name: str = "<bundle bytes>", *, trusted_keys=None
) -> BundleReader:
    """Open a bundle held in memory (same checks and `trusted_keys` as `read_bundle`)."""
    trusted = signing.resolve_trusted_keys(trusted_keys)
    return BundleReader(io.BytesIO(bytes(data)), name, len(data), trusted)
