"""Action records: what a key built, in the same bytes in the local store and on a remote.

A record is canonical JSON: {"schema", "key", "manifest", "outputs": {name: {"hash",
"size"}}, "info", "checksum"}, the checksum being blake3 over the record without it.
`check_record` accepts only an intact record of the key asked for, whose every field has
the shape the build step relies on (output names are plain artifact file names, so a
record from anywhere can never make the build write outside its output directory).
`output_set_problem` checks a record's set of outputs against its step: the names the
step declares, or, where none are declared, the set the record implies itself (every
stem its info names has its metadata and one artifact per target of its key, less the
targets that metadata says it skips); a record with a missing or extra output is corrupt.
(A record whose info names no stems, stored through the Store API, implies nothing.)
"""

from __future__ import annotations

import json

from vyre_build.core.artifacts import META_SUFFIX, TARGET_SUFFIXES, split_output_name
from vyre_build.cache.key import FILE_PART_KINDS, content_hash, key_from_manifest
from vyre_build.cache.layout import is_hex_hash
from vyre_build.core.files import canonical_json

__all__ = [
    "MAX_RECORD_BYTES",
    "RECORD_SCHEMA",
    "check_record",
    "make_record",
    "output_set_problem",
    "record_blobs",
]

RECORD_SCHEMA = "vyre-action-record/1"
MAX_RECORD_BYTES = 4 << 20  # real records are a few KiB; anything larger is not one


def _checksum(record: dict) -> str:
    return content_hash(canonical_json({k: v for k, v in record.items() if k != "checksum"}))


def make_record(key: str, manifest: dict, outputs: dict[str, dict], info: dict | None) -> dict:
    """The record of `key` with `outputs` ({name: {"hash", "size"}}), checksummed."""
    record = {
        "schema": RECORD_SCHEMA,
        "key": key,
        "manifest": manifest,
        "outputs": dict(sorted(outputs.items())),
        "info": info or {},
    }
    record["checksum"] = _checksum(record)
    return record


def _output_problem(outputs) -> str | None:
    if not isinstance(outputs, dict):
        return "its outputs are not a mapping"
    for name, ref in outputs.items():
        if (
            not isinstance(name, str)
            or "/" in name
            or "\\" in name
            or "\0" in name
            or name.startswith(".")
            or split_output_name(name) is None
        ):
            return f"output name {name!r} is not an artifact file name"
        if not isinstance(ref, dict) or not is_hex_hash(str(ref.get("hash"))):
            return f"output {name} has no blob hash"
        size = ref.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            return f"output {name} has no size"
    return None


def _manifest_problem(manifest) -> str | None:
    if not isinstance(manifest, dict) or not isinstance(manifest.get("parts"), list):
        return "its manifest has no parts"
    for part in manifest["parts"]:
        if not isinstance(part, dict) or not isinstance(part.get("kind"), str):
            return "a manifest part is malformed"
        if not is_hex_hash(str(part.get("hash"))):
            return f"manifest part {part.get('kind')} has no hash"
        path = part.get("path")
        if path is not None and not isinstance(path, str):
            return f"manifest part {part['kind']} has a malformed path"
    return None


_HEAD = b'{"checksum":"'


def _raw_checksum_ok(raw: bytes | None) -> bool:
    """The checksum checked on the bytes themselves, when they are the canonical JSON a
    record writer writes: its first key is "checksum", the rest is what it covers."""
    if raw is None or not raw.startswith(_HEAD) or raw[77:79] != b'",':
        return False
    return content_hash(b"{" + raw[79:].rstrip(b"\n")).encode() == raw[13:77]


def check_record(key: str, record, raw: bytes | None = None) -> str | None:
    """None if `record` is an intact record of `key`, else what is wrong with it. `raw`:
    the bytes it was parsed from, so that the checksum is checked on them (no second
    serialisation) when they are canonical."""
    if not isinstance(record, dict) or record.get("schema") != RECORD_SCHEMA:
        return "not a " + RECORD_SCHEMA
    try:
        if not _raw_checksum_ok(raw) and record.get("checksum") != _checksum(record):
            return "checksum mismatch"
    except (TypeError, ValueError, RecursionError):
        return "it is not canonical JSON"
    if record.get("key") != key:
        return f"it is filed under {key} but names key {record.get('key')}"
    problem = _manifest_problem(record.get("manifest")) or _output_problem(record.get("outputs"))
    if problem is not None:
        return problem
    if not isinstance(record.get("info"), dict):
        return "its info is not a mapping"
    if key_from_manifest(record["manifest"]) != key:
        return "its manifest does not hash to its key"
    return None


def record_blobs(record: dict) -> list[str]:
    """Every blob a record references: its outputs and its stored input files, sorted."""
    blobs = {ref["hash"] for ref in record["outputs"].values()}
    for part in record["manifest"]["parts"]:
        if part["kind"] in FILE_PART_KINDS:
            blobs.add(part["hash"])
    return sorted(blobs)


def _skips(read, stem: str) -> set[str] | None:
    """The targets the metadata of `stem` says it gets no artifact of; None when that
    metadata cannot be read (then nothing is said about the stem's artifacts)."""
    data = read(stem + META_SUFFIX) if read is not None else None
    if data is None:
        return None
    try:
        meta = json.loads(data)
    except (ValueError, RecursionError):
        return None
    skipped = meta.get("skipped") if isinstance(meta, dict) else None
    return set(skipped) if isinstance(skipped, dict) else set()


def _implied_outputs(record: dict, read) -> set[str] | str | None:
    """The outputs an intact record implies (see the module), what makes it unable to, or
    None when it names no stems (a record stored through the API without build info)."""
    if "stems" not in record["info"]:
        return None
    stems = record["info"]["stems"]
    if not isinstance(stems, list) or not all(isinstance(s, str) and s for s in stems):
        return "its info has malformed stems"
    targets = next(
        (p.get("value") for p in record["manifest"]["parts"] if p["kind"] == "targets"), None
    )
    if not isinstance(targets, list) or not set(targets) <= set(TARGET_SUFFIXES):
        return "its manifest names no targets"
    names = set(record["outputs"])
    want = set()
    for stem in stems:
        want.add(stem + META_SUFFIX)
        skips: set[str] | None | bool = False  # False: not read yet
        for target in sorted(set(targets)):
            name = stem + TARGET_SUFFIXES[target]
            if name not in names:  # absent: right only if its metadata skips the target
                if skips is False:
                    skips = _skips(read, stem)
                if skips is None or target in skips:
                    continue
            want.add(name)
    return want


def output_set_problem(record: dict, expected=None, read=None) -> str | None:
    """None if the intact `record` has exactly the outputs of its step, else what differs.

    Arguments:
        expected: the output names the step declares (SCons: the targets of the step).
            None: the outputs the record implies (see the module); a record whose info
            names no stems implies none, and is not checked.
        read: name -> the bytes of one of the record's outputs, or None (only a stem's
            metadata is read, and only when one of its target artifacts is absent).
    """
    want = set(expected) if expected is not None else _implied_outputs(record, read)
    if want is None or isinstance(want, str):
        return want
    names = set(record["outputs"])
    missing, extra = sorted(want - names), sorted(names - want)
    if not missing and not extra:
        return None
    said = [f"missing {', '.join(missing)}"] if missing else []
    said += [f"{', '.join(extra)} not expected"] if extra else []
    return f"its outputs are not those of its step ({'; '.join(said)})"
