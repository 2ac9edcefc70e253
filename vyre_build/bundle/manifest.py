"""The bundle manifest's JSON: the strict decoder, the canonical split and the whole check.

A manifest in the writer's canonical layout (files.canonical_json of its document) is cut
into its records by `split_canonical` with a few C-speed passes (a split on the record
head, one partition per record): the kernel ids, each record's artifact index text and
metadata text. What the first use of any index needs of all of them (every range's offset
and size, each digest) comes from one regular-expression pass (`index_ranges`); a
record's index is parsed in full on its first use (`parse_index`) and its metadata
decoded on its first use (`decode_strict`), once the split up to it is proven
(`meta_spans`, `balanced`). Any other manifest is decoded whole and checked by
`check_manifest` (docs/bundle-format.md, "What the reader checks").

Every check raises through `fail` (the reader's: it prefixes the bundle's path).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable
from itertools import pairwise, repeat
from typing import Any, NamedTuple

from vyre_build.bundle.format import (
    ALIGN,
    FORMAT_NAME,
    HEADER_SIZE,
    MAX_JSON_DEPTH,
    _HEX64_RE,
    _ID_RE,
    _MAX_NAME,
    _MAX_SUFFIX,
    _SUFFIX_RE,
    _check_meta,
    _peeled,
    _structure,
    _too_deep,
    check_id,
    check_suffix,
)
from vyre_build.core.errors import BundleError

Fail = Callable[[str], BundleError]

# The canonical manifest: the root object holds "format", "kernels", ("tuning",) "version"
# in that order; each record "artifacts", "id", "meta"; each index entry "blake3",
# "offset", "size".
_PREFIX = '{"format":' + json.dumps(FORMAT_NAME) + ',"kernels":['
_HEAD = '{"artifacts":{'  # each record's head; in no string (its quotes)
_ID_AFTER = '},"id":"'  # ends a record's index (no index entry holds it)
_META_AFTER = '","meta":'  # ends its id (an id holds no quote)
_RECORD_END = "},"  # the metadata's end and the record's, before the next head
_TAIL = re.compile(r'\](?:,"tuning":(\{.*\}))?,"version":(0|[1-9][0-9]{0,8})\}', re.S)
_TUNING_AFTER = '}],"tuning":{'  # the last record's end, when tuning data follows
_LAST_RECORD = '}],"version":'
_NUMBER = r"(0|[1-9][0-9]*+)"
_ENTRY = r'"([^"\\{}]*+)":\{"blake3":"([0-9a-f]{64})","offset":' + _NUMBER + ',"size":' + _NUMBER
_ENTRY_RE = re.compile(_ENTRY + r"\}")
_ENTRY_NC = _ENTRY.replace("(", "(?:") + r"\}"  # the same, capturing nothing
_INDEX_RE = re.compile(rf"{_ENTRY_NC}(?:,{_ENTRY_NC})*+")
# What index_ranges reads of every index entry: 64 characters of digest, the offset and
# the size (one pass from the literal '"blake3":"' of each); the rest by parse_index.
_RANGE_RE = re.compile(r'"blake3":"([^"]{64})","offset":' + _NUMBER + ',"size":' + _NUMBER + r"\}")
_IDS_RE = re.compile(rf"{_ID_RE.pattern}(?:\n{_ID_RE.pattern})*")
META_LEVELS = MAX_JSON_DEPTH - 3  # the metadata object is the fourth level of the document
_INDEX_KEYS = {"offset", "size", "blake3"}


class Split(NamedTuple):
    """A canonical manifest cut into its records (nothing checked but the layout)."""

    ids: list[str]
    indexes: list[str]  # each record's artifact index text, between its braces
    rests: list[str]  # each record's metadata text, then "}," (the last's: then the tail)
    last_meta: str  # the last record's metadata text
    tuning: str | None  # the tuning object's text, if any
    version: int


def split_canonical(text: str, n_kernels: int) -> Split | None:
    """`text` cut into `n_kernels` records when it is in the writer's layout, else None
    (the caller then decodes it whole, and its errors are the full decoder's).

    A record's head `{"artifacts":{` is in no JSON string (a quote in a string is
    escaped), so outside the heads only a metadata object whose first key is "artifacts"
    holding an object spells it. When the text holds it exactly as many times as the
    header counts kernels (the split's piece count), JSON in the writer's layout has no
    other: no metadata record holds a cut. Otherwise (a metadata record spelling a head,
    which the writer's metadata never does, or a header that miscounts) the caller decodes
    the whole manifest and reads it as written or refuses it with the full decoder's
    reason. What the count cannot see is a manifest that is not JSON (a string left open
    in one metadata record swallowing the next head): `balanced` proves the metadata
    spans before any is served."""
    if not text.startswith(_PREFIX):
        return None
    if n_kernels == 0:
        tail = _TAIL.fullmatch(text, len(_PREFIX))
        if tail is None:
            return None
        return Split([], [], [], "", tail.group(1), int(tail.group(2)))
    pieces = text.split(_HEAD)
    if len(pieces) != n_kernels + 1 or pieces[0] != _PREFIX:
        return None
    cut = [p.partition(_ID_AFTER) for p in pieces[1:]]
    if not all(map(operator.itemgetter(1), cut)):
        return None
    named = [c[2].partition(_META_AFTER) for c in cut]
    if not all(map(operator.itemgetter(1), named)):
        return None
    rests = [n[2] for n in named]
    last = rests[-1]
    end = last.rfind(_TUNING_AFTER)  # the last record's closing brace
    end = last.rfind(_LAST_RECORD) if end < 0 else end
    if end < 1:
        return None
    tail = _TAIL.fullmatch(last, end + 1)
    if tail is None:
        return None
    return Split(
        [n[0] for n in named],
        [c[0] for c in cut],
        rests,
        last[:end],
        tail.group(1),
        int(tail.group(2)),
    )


def meta_spans(rests: list[str], last_meta: str, lo: int, hi: int) -> list[str] | None:
    """The metadata texts of records lo..hi-1 of a split, or None where one is not in the
    writer's layout (a record that does not end right after its metadata, or metadata
    that does not start an object or array): the caller then decodes the whole manifest,
    whose checks name the problem."""
    whole = rests[lo : min(hi, len(rests) - 1)]
    if not all(map(str.endswith, whole, repeat(_RECORD_END))):
        return None
    spans = [r[: -len(_RECORD_END)] for r in whole]
    if hi == len(rests):
        spans.append(last_meta)
    if not all(map(str.startswith, spans, repeat(("{", "[")))):
        return None
    return spans


def check_ids(ids: list[str], fail: Fail) -> bool:
    """Every id of a split (its JSON text) safe, and sorted and unique: one regex pass
    over them all (no id holds the newline between them); the loop that names the culprit
    runs only when it fails. False when an id is spelled with an escape, which the writer
    never writes: the caller decodes the whole manifest, which reads it as written."""
    joined = "\n".join(ids)
    if ids and (
        max(map(len, ids)) > _MAX_NAME
        or joined.count("\n") != len(ids) - 1
        or _IDS_RE.fullmatch(joined) is None
    ):
        if "\\" in joined:
            return False
        for ident in ids:
            try:
                check_id(ident)
            except BundleError as exc:
                raise fail(f"in the manifest: {exc}") from None
    if any(map(operator.ge, ids, ids[1:])):
        previous, ident = next((a, b) for a, b in pairwise(ids) if b <= a)
        raise fail(f"manifest kernel {ident!r} is out of order or duplicated (after {previous!r})")
    return True


def index_ranges(indexes: list[str], n_artifacts: int, data_end: int) -> list | None:
    """The (start, end) of every artifact of the canonical indexes `indexes`, sorted,
    when there are `n_artifacts`, each 16-aligned in [80, data_end), none overlapping,
    each digest 64 lowercase hex digits; else None (the caller decodes the manifest whole
    to name the problem). One regular-expression pass and C-level maps; what the pass
    does not read of an entry (its suffix, and that nothing else lies between entries) is
    checked when its record is first used (`parse_index`)."""
    found = _RANGE_RE.findall("|".join(indexes))
    if len(found) != n_artifacts:
        return None
    if not found:
        return []
    digests = "".join(map(operator.itemgetter(0), found))
    try:  # 64 characters each: every one a lowercase hex digit
        if len(bytes.fromhex(digests)) * 2 != len(digests) or digests.lower() != digests:
            return None
    except ValueError:
        return None
    offs = list(map(int, map(operator.itemgetter(1), found)))
    ends = list(map(operator.add, offs, map(int, map(operator.itemgetter(2), found))))
    if min(offs) < HEADER_SIZE or max(ends) > data_end or any(map(ALIGN.__rmod__, offs)):
        return None
    ranges = list(zip(offs, ends))
    if any(map(operator.lt, offs[1:], ends[:-1])):  # not in file order: sort, then look
        ranges.sort()
        if any(s1 < e0 for (_, e0), (s1, _) in pairwise(ranges)):
            return None
    return ranges


def parse_index(text: str) -> dict | None:
    """The artifact index of one canonical record (suffix -> {"blake3", "offset",
    "size"}), or None when `text` is not exactly the writer's entries with safe, distinct
    suffixes (the caller decodes the manifest whole: its checks name the problem)."""
    if not text:
        return {}
    if _INDEX_RE.fullmatch(text) is None:
        return None
    found = _ENTRY_RE.findall(text)
    arts = {x: {"blake3": d, "offset": int(o), "size": int(z)} for x, d, o, z in found}
    if len(arts) != len(found):
        return None
    for suffix in arts:
        if len(suffix) > _MAX_SUFFIX or _SUFFIX_RE.fullmatch(suffix) is None:
            return None
    return arts


# --- JSON -------------------------------------------------------------------------------


def _unique_object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {dup!r}")
    return obj


def _reject_constant(name: str):
    raise ValueError(f"non-JSON number {name}")


# One decoder for every strict decode (json.loads with hooks would make one per call). Its
# per-object hook costs less than proving a text canonical by encoding it again (0.99 against
# 1.58 ms for the 96 metadata records of the kernels/ tree, Python 3.11).
_STRICT = json.JSONDecoder(object_pairs_hook=_unique_object, parse_constant=_reject_constant)


def decode_strict(text: str, what: str, fail: Fail) -> Any:
    """`text` decoded as strict JSON (no duplicate keys, no NaN, at most MAX_JSON_DEPTH
    levels); `what` names it in the errors ("the manifest", or a part of it)."""
    where = "" if what == "the manifest" else f" ({what})"
    try:
        doc = _STRICT.decode(text)
    except RecursionError:
        raise fail(f"bad JSON in the manifest{where}: nested too deeply") from None
    except ValueError as exc:
        raise fail(f"bad JSON in the manifest{where}: {exc}") from None
    if what == "the manifest" and _too_deep(text):
        raise fail(f"bad JSON in the manifest: nested deeper than {MAX_JSON_DEPTH} levels")
    return doc


def balanced(spans: list[str], levels: int = META_LEVELS) -> bool:
    """Whether the brackets outside strings of every one of `spans` pair up, each nested
    at most `levels` deep (C-speed passes over all of them at once: a "|" between spans
    stays when every span's strings close in it, and each pass peels one level)."""
    return _peeled(_structure("|".join(spans)), b"|" * (len(spans) - 1), levels)


# --- the whole check ------------------------------------------------------------------


def check_record_meta(ident: str, meta: object, fail: Fail) -> None:
    """One decoded metadata record: its shape, names and `meta.id` == `ident`."""
    try:
        meta_id = _check_meta(meta, f"manifest kernel {ident!r}", writing=False)
    except BundleError as exc:
        raise fail(f"in the manifest: {exc}") from None
    if meta_id != ident:
        raise fail(f"manifest kernel {ident!r} carries metadata of {meta_id!r}")


def _what(ident: str, suffix: str) -> str:
    return f"kernel {ident!r} artifact {suffix!r}"


def check_overlaps(ranges: list[tuple[int, int, str, str]], fail: Fail) -> None:
    """Refuse the first two of (start, end, id, suffix) `ranges` that overlap."""
    ranges.sort()
    for (s0, e0, i0, x0), (s1, e1, i1, x1) in pairwise(ranges):
        if s1 < e0:
            raise fail(
                f"overlapping ranges: {_what(i0, x0)} at bytes {s0}..{e0} and "
                f"{_what(i1, x1)} at bytes {s1}..{e1}"
            )


def _check_entry(ident: str, suffix: str, info: object, data_end: int, fail: Fail) -> tuple:
    if type(info) is not dict or info.keys() != _INDEX_KEYS:
        raise fail(f"{_what(ident, suffix)}: index entry must have exactly offset, size, blake3")
    off, size, digest = info["offset"], info["size"], info["blake3"]
    if type(off) is not int or type(size) is not int or off < 0 or size < 0:
        raise fail(
            f"{_what(ident, suffix)}: offset {off!r} and size {size!r} must be "
            "non-negative integers"
        )
    if off < HEADER_SIZE or off % ALIGN or off + size > data_end:
        raise fail(
            f"index out of bounds: {_what(ident, suffix)} at bytes {off}..{off + size} "
            f"must be {ALIGN}-aligned within the data region {HEADER_SIZE}..{data_end}"
        )
    if type(digest) is not str or not _HEX64_RE.fullmatch(digest):
        raise fail(f"{_what(ident, suffix)}: blake3 {digest!r} is not 64 lowercase hex digits")
    return (off, off + size, ident, suffix)


class Checked(NamedTuple):
    """A whole manifest, checked: the artifact indexes and metadata records by id (in id
    order) and every range (start, end, id, suffix), sorted."""

    artifacts: dict[str, dict]
    metas: dict[str, dict]
    ranges: list[tuple[int, int, str, str]]


def check_manifest(
    doc: object, version: int, data_end: int, fail: Fail, on_tuning: Callable[[object], None]
) -> Checked:
    """Check a decoded manifest's shape, names, metadata records and artifact ranges;
    its tuning data, if any, goes to `on_tuning` (which checks it) before the kernels."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise fail(f"manifest is not a {FORMAT_NAME!r} manifest object")
    found = doc.get("version")
    if found != version or type(found) is not int:
        raise fail(f"manifest version {found!r} does not match the header's {version}")
    known = {"format", "version", "kernels", "tuning"}
    if not {"format", "version", "kernels"} <= set(doc) <= known:
        raise fail(f"manifest has unknown keys {sorted(set(doc) - known)}")
    if "tuning" in doc:
        on_tuning(doc["tuning"])
    kernels = doc["kernels"]
    if not isinstance(kernels, list):
        raise fail("manifest 'kernels' must be a list")
    artifacts: dict[str, dict] = {}
    metas: dict[str, dict] = {}
    ranges: list[tuple[int, int, str, str]] = []
    previous, suffixes = None, set()
    for n, rec in enumerate(kernels):
        if not isinstance(rec, dict) or set(rec) != {"id", "meta", "artifacts"}:
            raise fail(f"manifest kernel {n} must have exactly 'id', 'meta', 'artifacts'")
        try:
            ident = check_id(rec["id"])
        except BundleError as exc:
            raise fail(f"in the manifest: {exc}") from None
        check_record_meta(ident, rec["meta"], fail)
        metas[ident] = rec["meta"]
        if previous is not None and ident <= previous:
            raise fail(
                f"manifest kernel {ident!r} is out of order or duplicated (after {previous!r})"
            )
        previous = ident
        arts = rec["artifacts"]
        if not isinstance(arts, dict):
            raise fail(f"manifest kernel {ident!r}: 'artifacts' must be an object")
        for suffix, info in arts.items():
            if suffix not in suffixes:  # the same few suffixes recur: check each once
                try:
                    suffixes.add(check_suffix(suffix))
                except BundleError as exc:
                    raise fail(f"manifest kernel {ident!r}: {exc}") from None
            ranges.append(_check_entry(ident, suffix, info, data_end, fail))
        artifacts[ident] = arts
    check_overlaps(ranges, fail)
    return Checked(artifacts, metas, ranges)
