"""Bundle writer and reader: round trip, determinism, laziness, and every refusal's message."""

from __future__ import annotations

import copy
import json
import os
import struct
import subprocess
import sys

import blake3
import pytest

from runtime_fakes import SAXPY as SAXPY_META

from vyre_build.bundle import (
    ALIGN,
    HEADER_SIZE,
    MAGIC,
    encode_bundle,
    read_bundle,
    read_bundle_bytes,
    write_bundle,
)
from vyre_build.cli import main as cli_main
from vyre_build.commands.bundle_write import _safe_target
from vyre_build.core.errors import BundleError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_meta(name: str, variant: str | None = None, **extra) -> dict:
    ident = name if variant is None else f"{name}.{variant}"
    meta = {
        **copy.deepcopy(SAXPY_META),
        "name": name,
        "variant": variant,
        "id": ident,
        "variant_values": {} if variant is None else {"T": variant},
        "provenance": {
            "compiler": {"version": "0.1.0", "source_hash": "ab" * 32},
            "sources": {"kernels/add.py": "cd" * 32},
        },
    }
    meta.update(extra)
    return meta


def make_entry(name: str, variant: str | None = None, **artifacts) -> dict:
    ident = name if variant is None else f"{name}.{variant}"
    arts = {
        ".wgsl": f"// {ident}\n@compute fn main() {{}}\n".encode(),
        ".spv": b"\x03\x02\x23\x07" + ident.encode() * 3,
        ".kdesc": b"\x01" + ident.encode(),
    }
    arts.update({"." + k: v for k, v in artifacts.items()})
    return {"meta": make_meta(name, variant), "artifacts": arts}


ENTRIES = [make_entry("saxpy"), make_entry("add", "f32"), make_entry("add", "i32")]


def header(data: bytes) -> list:
    return list(struct.unpack("<8sIIQQQII32s", data[:HEADER_SIZE]))


def with_header(data: bytes, **fields) -> bytes:
    names = [
        "magic",
        "version",
        "flags",
        "file_size",
        "m_off",
        "m_size",
        "kernels",
        "artifacts",
        "m_hash",
    ]
    values = dict(zip(names, header(data)))
    values.update(fields)
    return struct.pack("<8sIIQQQII32s", *[values[n] for n in names]) + data[HEADER_SIZE:]


def with_manifest(data: bytes, manifest: bytes | dict) -> bytes:
    """Replace the manifest and fix the header (size, hash) so only the manifest is wrong."""
    if isinstance(manifest, dict):
        manifest = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    m_off = header(data)[4]
    out = data[:m_off] + manifest
    return with_header(
        out, file_size=len(out), m_size=len(manifest), m_hash=blake3.blake3(manifest).digest()
    )


def manifest_of(data: bytes) -> dict:
    return json.loads(data[header(data)[4] :])


def refused(data: bytes) -> str:
    with pytest.raises(BundleError) as info:
        read_bundle_bytes(data, "t.vyrebundle")
    return str(info.value)


# --- round trip and layout ------------------------------------------------------------


def test_round_trip(tmp_path):
    path = tmp_path / "k.vyrebundle"
    n = write_bundle(path, ENTRIES)
    assert n == path.stat().st_size
    with read_bundle(path) as r:
        assert r.ids == ["add.f32", "add.i32", "saxpy"]
        for e in ENTRIES:
            ident = e["meta"]["id"]
            entry = r.entry(e["meta"]["name"], e["meta"]["variant"])
            assert (entry.id, entry.name, entry.variant) == (
                ident,
                e["meta"]["name"],
                e["meta"]["variant"],
            )
            assert entry.meta == e["meta"]
            assert sorted(entry.artifacts) == [".kdesc", ".spv", ".wgsl"]
            for suffix, data in e["artifacts"].items():
                info = entry.artifacts[suffix]
                assert info["size"] == len(data)
                assert info["blake3"] == blake3.blake3(data).hexdigest()
                assert info["offset"] % ALIGN == 0
                assert r.read_artifact(ident, suffix) == data
        assert r.verify() == []


def test_entry_by_id_and_variant_hint():
    r = read_bundle_bytes(encode_bundle(ENTRIES))
    assert r.entry("add.f32").variant == "f32"
    assert r.entry("add", "i32").id == "add.i32"
    with pytest.raises(
        BundleError,
        match=r"no kernel 'add' in the bundle; it has variants "
        r"f32, i32: ask for one",
    ):
        r.entry("add")
    with pytest.raises(BundleError, match=r"no kernel 'nope'.*holds add.f32, add.i32, saxpy"):
        r.entry("nope")
    with pytest.raises(
        BundleError,
        match=r"kernel 'saxpy' has no '.ptx' artifact "
        r"\(it has .kdesc, .spv, .wgsl\)",
    ):
        r.read_artifact("saxpy", ".ptx")


def test_subset_of_artifacts_and_empty_bundle():
    entry = {"meta": make_meta("only"), "artifacts": {".wgsl": b"fn main() {}"}}
    r = read_bundle_bytes(encode_bundle([entry]))
    assert r.entry("only").artifacts.keys() == {".wgsl"}
    empty = read_bundle_bytes(encode_bundle([]))
    assert empty.ids == [] and empty.verify() == []


def test_header_fields_and_layout():
    data = encode_bundle(ENTRIES)
    magic, version, flags, size, m_off, m_size, nk, na, m_hash = header(data)
    assert (magic, version, flags, size, nk, na) == (MAGIC, 2, 0, len(data), 3, 9)
    assert m_off % ALIGN == 0 and m_off + m_size == len(data)
    assert m_hash == blake3.blake3(data[m_off:]).digest()
    offsets = [
        (i["offset"], k["id"], s)
        for k in manifest_of(data)["kernels"]
        for s, i in k["artifacts"].items()
    ]
    # Artifacts are laid out in id then suffix order.
    assert [o[1:] for o in sorted(offsets)] == sorted(o[1:] for o in offsets)
    assert min(o[0] for o in offsets) == HEADER_SIZE


def test_meta_is_a_copy():
    r = read_bundle_bytes(encode_bundle(ENTRIES))
    r.entry("saxpy").meta["name"] = "changed"
    assert r.entry("saxpy").meta["name"] == "saxpy"


# --- determinism ----------------------------------------------------------------------


def test_same_entries_any_order_identical_bytes(tmp_path):
    a, b = tmp_path / "a.vyrebundle", tmp_path / "b.vyrebundle"
    write_bundle(a, ENTRIES)
    shuffled = [ENTRIES[2], ENTRIES[0], ENTRIES[1]]
    # Reorder the dict keys too: only content may matter.
    shuffled = [
        {
            "artifacts": dict(reversed(list(e["artifacts"].items()))),
            "meta": dict(reversed(list(e["meta"].items()))),
        }
        for e in shuffled
    ]
    write_bundle(b, shuffled)
    assert a.read_bytes() == b.read_bytes()


def test_content_change_changes_bytes():
    changed = [make_entry("saxpy", wgsl=b"other"), *ENTRIES[1:]]
    assert encode_bundle(changed) != encode_bundle(ENTRIES)


# --- writer -----------------------------------------------------------------------------


def test_write_is_atomic_and_leaves_no_temp(tmp_path):
    path = tmp_path / "out" / "k.vyrebundle"
    write_bundle(path, ENTRIES)
    first = path.read_bytes()
    with pytest.raises(BundleError, match="duplicate kernel id"):
        write_bundle(path, ENTRIES + [make_entry("saxpy")])
    assert path.read_bytes() == first
    write_bundle(path, ENTRIES[:1])
    assert read_bundle(path).ids == ["saxpy"]
    assert sorted(os.listdir(path.parent)) == ["k.vyrebundle"]
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"meta": make_meta("k")}, "must be a dict with 'meta' and 'artifacts'"),
        ({"meta": {"name": "k", "id": "k"}, "artifacts": {}}, "meta has no 'variant'"),
        (
            {"meta": make_meta("k", id="j"), "artifacts": {}},
            "meta id 'j' does not match name 'k' and variant None",
        ),
        ({"meta": make_meta("../evil"), "artifacts": {}}, "kernel name '../evil' is not a safe"),
        ({"meta": make_meta("a/b"), "artifacts": {}}, "kernel name 'a/b' is not a safe"),
        ({"meta": make_meta(".hidden"), "artifacts": {}}, "kernel name '.hidden' is not a safe"),
        ({"meta": make_meta("k", ".."), "artifacts": {}}, "variant '..' is not a safe"),
        ({"meta": make_meta("k", "x/../../y"), "artifacts": {}}, "variant 'x/../../y' is not"),
        ({"meta": make_meta("a.b"), "artifacts": {}}, "kernel name 'a.b' must not contain '.'"),
        (
            {"meta": make_meta("k"), "artifacts": {"../x": b""}},
            "artifact name '../x' is not a safe",
        ),
        (
            {"meta": make_meta("k"), "artifacts": {"/etc/passwd": b""}},
            "'/etc/passwd' is not a safe",
        ),
        ({"meta": make_meta("k"), "artifacts": {".a/b": b""}}, "'.a/b' is not a safe suffix"),
        ({"meta": make_meta("k"), "artifacts": {"wgsl": b""}}, "'wgsl' is not a safe suffix"),
        (
            {"meta": make_meta("k"), "artifacts": {".wgsl": "text"}},
            "artifact '.wgsl' must be bytes, got str",
        ),
        (
            {
                "meta": make_meta("k", provenance={"sources": {"/home/u/k.py": "00"}}),
                "artifacts": {},
            },
            "key '/home/u/k.py' is an absolute path",
        ),
        (
            {"meta": make_meta("k", provenance={"root": "C:\\src"}), "artifacts": {}},
            "provenance.root: 'C:\\\\src' is an absolute path",
        ),
        (
            {"meta": make_meta("k", provenance={"built_at": 1700000000}), "artifacts": {}},
            "provenance.built_at: a time stamp makes the bundle non-reproducible",
        ),
        (
            {"meta": make_meta("k", grid=[float("nan")]), "artifacts": {}},
            "meta is not plain JSON data",
        ),
        ({"meta": make_meta("k", grid={1, 2}), "artifacts": {}}, "meta is not plain JSON data"),
        (
            {
                "meta": make_meta(
                    "k", grid=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
                ),
                "artifacts": {},
            },
            "meta nests deeper than 29 levels",
        ),
    ],
)
def test_writer_refusals(entry, message):
    with pytest.raises(BundleError) as info:
        encode_bundle([entry])
    assert message in str(info.value)


def test_writer_os_errors_are_bundle_errors(tmp_path):
    target = tmp_path / "dir.vyrebundle"
    target.mkdir()
    with pytest.raises(BundleError, match=r"dir.vyrebundle: cannot write bundle: Is a directory"):
        write_bundle(target, ENTRIES)
    assert os.listdir(tmp_path) == ["dir.vyrebundle"]
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    with pytest.raises(
        BundleError, match=r"k.vyrebundle: cannot write bundle: File exists \(.*file\)"
    ):
        write_bundle(blocker / "k.vyrebundle", ENTRIES)


def test_reader_refuses_non_string_names():
    r = read_bundle_bytes(GOOD)
    with pytest.raises(BundleError, match="kernel name and variant must be strings, got 3"):
        r.entry(3)
    with pytest.raises(BundleError, match="kernel id must be a string, got None"):
        r.read_artifact(None, ".wgsl")


def test_writer_refuses_a_single_dict():
    with pytest.raises(BundleError, match="entries must be an iterable"):
        encode_bundle(ENTRIES[0])


# --- reader refusals (each reason, with its message) -------------------------------------

GOOD = encode_bundle(ENTRIES)


def test_refuses_bad_magic():
    assert "bad magic b'NOTABNDL', expected b'VYREBNDL': not a vyre bundle" in refused(
        b"NOTABNDL" + GOOD[8:]
    )
    assert "bad magic b'\\x7fELF'" in refused(b"\x7fELF")


def test_refuses_unsupported_version():
    for version in (0, 3):
        assert f"unsupported bundle version {version} (this reader reads versions 1, 2)" in (
            refused(with_header(GOOD, version=version))
        )


def test_refuses_flags():
    assert "unknown header flags 0x00000004 at byte 12 (version 2 allows 0x00000001)" in (
        refused(with_header(GOOD, flags=4))
    )


def test_refuses_truncation():
    assert refused(GOOD[:40]) == "t.vyrebundle: truncated at byte 40: the header needs 80 bytes"
    assert refused(b"") == "t.vyrebundle: truncated at byte 0: the header needs 80 bytes"
    n = len(GOOD) - 7
    assert refused(GOOD[:n]) == (
        f"t.vyrebundle: truncated at byte {n}: the header declares {len(GOOD)} bytes"
    )


def test_refuses_trailing_bytes():
    assert f"3 trailing bytes after the declared end at byte {len(GOOD)}" in refused(GOOD + b"abc")


def test_refuses_manifest_out_of_bounds():
    m_off = header(GOOD)[4]
    assert "index out of bounds: manifest at bytes" in refused(with_header(GOOD, m_off=m_off + 1))
    assert "index out of bounds: manifest" in refused(with_header(GOOD, m_off=16))
    assert "index out of bounds: manifest" in refused(with_header(GOOD, m_size=1 << 62))
    assert "index out of bounds: manifest" in refused(with_header(GOOD, m_off=1 << 63))


def test_refuses_manifest_hash_mismatch():
    flipped = bytearray(GOOD)
    flipped[-2] ^= 0x20
    assert "manifest hash mismatch" in refused(bytes(flipped))
    assert "manifest hash mismatch" in refused(with_header(GOOD, m_hash=b"\0" * 32))


def test_refuses_bad_utf8_and_json():
    m_off = header(GOOD)[4]
    assert f"bad UTF-8 in the manifest at byte {m_off + 1}" in refused(
        with_manifest(GOOD, b"{\xff}")
    )
    assert "bad JSON in the manifest: Expecting" in refused(with_manifest(GOOD, b"{"))
    assert "bad JSON in the manifest: duplicate key 'a'" in refused(
        with_manifest(GOOD, b'{"a":1,"a":2}')
    )
    assert "bad JSON in the manifest: non-JSON number NaN" in refused(
        with_manifest(GOOD, b'{"a":NaN}')
    )
    assert "bad JSON in the manifest: nested too deeply" in refused(
        with_manifest(GOOD, b"[" * 100000 + b"]" * 100000)
    )
    assert "bad JSON in the manifest: nested deeper than 32 levels" in refused(
        with_manifest(GOOD, b'{"a":"[[[","b":' + b"[" * 32 + b"]" * 32 + b"}")
    )


def _edit(fn) -> bytes:
    doc = manifest_of(GOOD)
    fn(doc)
    return with_manifest(GOOD, doc)


def _art(doc, i=0, suffix=".wgsl") -> dict:
    return doc["kernels"][i]["artifacts"][suffix]


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(format="zip"), "manifest is not a 'vyrebundle' manifest object"),
        (lambda d: d.update(version=True), "manifest version True does not match"),
        (lambda d: d.update(extra=1), "manifest has unknown keys ['extra']"),
        (lambda d: d.update(kernels={}), "manifest 'kernels' must be a list"),
        (lambda d: d["kernels"][0].pop("meta"), "manifest kernel 0 must have exactly"),
        (
            lambda d: d["kernels"][0].update(id="../../etc/x"),
            "kernel id '../../etc/x' is not a safe",
        ),
        (
            lambda d: d["kernels"][0].update(id="add.i32"),
            "manifest kernel 'add.i32' is out of order or duplicated (after 'add.i32')",
        ),
        (lambda d: d["kernels"].reverse(), "manifest kernel 'add.i32' is out of order"),
        (
            lambda d: d["kernels"][1].update(d["kernels"][0]),
            "'add.f32' is out of order or duplicated",
        ),
        (lambda d: d["kernels"].pop(), "header kernel count 3 does not match the manifest's 2"),
    ],
)
def test_refuses_bad_manifest(edit, message):
    assert message in refused(_edit(edit))


def refused_at_first_use(data: bytes) -> str:
    """The refusal of a bundle whose open succeeds (its ids are read) and whose first use
    of any kernel's artifacts is refused, as is every later use of another kernel."""
    r = read_bundle_bytes(data, "t.vyrebundle")
    assert r.ids == ["add.f32", "add.i32", "saxpy"]
    with pytest.raises(BundleError) as first:
        r.kernel_meta("saxpy")
    for use in (lambda: r.read_artifact("add.f32", ".wgsl"), lambda: r.entry("add.i32")):
        with pytest.raises(BundleError) as later:
            use()
        assert str(later.value) == str(first.value)
    return str(first.value)


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda d: d["kernels"][0]["artifacts"].update({"/x": _art(d)}),
            "'/x' is not a safe suffix",
        ),
        (lambda d: _art(d).update(offset=-16), "offset -16 and size"),
        (lambda d: _art(d).update(size=False), "offset"),
        (lambda d: _art(d).update(offset=96.0), "must be non-negative integers"),
        (
            lambda d: _art(d).update(offset=_art(d)["offset"] + 1),
            "index out of bounds: kernel 'add.f32' artifact '.wgsl'",
        ),
        (lambda d: _art(d).update(offset=0), "index out of bounds"),
        (lambda d: _art(d).update(size=1 << 40), "index out of bounds"),
        (lambda d: _art(d).pop("blake3"), "index entry must have exactly offset, size, blake3"),
        (lambda d: _art(d).update(blake3="AB" * 32), "is not 64 lowercase hex digits"),
        (
            lambda d: _art(d, 0, ".spv").update(offset=_art(d, 0, ".kdesc")["offset"]),
            "overlapping ranges: kernel 'add.f32' artifact '.kdesc'",
        ),
        (
            lambda d: d["kernels"][2]["artifacts"].pop(".spv"),
            "header artifact count 9 does not match the manifest's 8",
        ),
    ],
)
def test_refuses_a_bad_artifact_index_at_the_first_use_of_any(edit, message):
    # Open reads the ids; the artifact ranges are checked as a whole before the first
    # artifact index is served, each index in full on its kernel's first use.
    assert message in refused_at_first_use(_edit(edit))


def test_a_bad_index_is_refused_where_its_kernel_is_first_used():
    # Every range sound (checked before the first use of any index), one kernel's index
    # not the writer's: the kernels used before it are served, and it is refused, with
    # the whole decoder's reason, at its first use and the first use of any other.
    doc = manifest_of(GOOD)
    doc["kernels"][2]["artifacts"]["/x"] = doc["kernels"][2]["artifacts"].pop(".spv")
    data = with_manifest(GOOD, doc)
    r = read_bundle_bytes(data, "t.vyrebundle")
    assert r.read_artifact("add.f32", ".wgsl") == ENTRIES[1]["artifacts"][".wgsl"]
    message = "t.vyrebundle: manifest kernel 'saxpy': artifact name '/x' is not a safe suffix"
    for ident in ("saxpy", "add.i32"):
        with pytest.raises(BundleError) as info:
            r.kernel_meta(ident)
        assert str(info.value).startswith(message)
    assert r.kernel_meta("add.f32").id == "add.f32"  # what was served stays served
    with pytest.raises(BundleError) as info:
        r.verify()  # the bundle is refused, as its open once refused it
    assert str(info.value).startswith(message)


def test_an_index_in_another_json_form_is_read_as_written():
    # valid JSON, not the writer's spelling: the whole decode takes over at the first use
    doc = manifest_of(GOOD)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    spaced = text.replace('"offset":', '"offset": ', 1)
    r = read_bundle_bytes(with_manifest(GOOD, spaced.encode()), "t.vyrebundle")
    assert r.ids == ["add.f32", "add.i32", "saxpy"] and r._metas == {}
    assert r.read_artifact("saxpy", ".wgsl") == ENTRIES[0]["artifacts"][".wgsl"]
    assert [r.entry(i).artifacts for i in r.ids] == [k["artifacts"] for k in doc["kernels"]]
    assert [r._meta(i) for i in r.ids] == [k["meta"] for k in doc["kernels"]]
    assert r.verify() == ["manifest is not in canonical JSON form (sorted keys, no spaces)"]


@pytest.mark.parametrize("canonical", [True, False])
def test_metadata_is_decoded_and_checked_on_first_use(canonical):
    """A canonical manifest's metadata records are decoded on first use, with the checks
    of a whole decode; any other layout is decoded whole at open and refused there."""
    doc = manifest_of(GOOD)
    doc["kernels"][0]["id"] = "add.f16"  # still in order: its meta says add.f32
    doc["kernels"][2]["meta"]["grid"] = "@@"  # replaced below by text no decoder accepts
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    text = text.replace('"grid":"@@"', '"grid":[1 2],"grid":3')
    if not canonical:
        text = text.replace(',"kernels":', ', "kernels":')
        message = "bad JSON in the manifest: Expecting ',' delimiter"
        assert message in refused(with_manifest(GOOD, text.encode()))
        return
    r = read_bundle_bytes(with_manifest(GOOD, text.encode()), "t.vyrebundle")
    assert r.ids == ["add.f16", "add.i32", "saxpy"]
    assert r.kernel_meta("add.i32").id == "add.i32"
    with pytest.raises(BundleError) as info:
        r.kernel_meta("add.f16")
    assert str(info.value) == (
        "t.vyrebundle: manifest kernel 'add.f16' carries metadata of 'add.f32'"
    )
    with pytest.raises(BundleError) as info:
        r.entry("saxpy")
    assert str(info.value).startswith(
        "t.vyrebundle: bad JSON in the manifest (kernel 'saxpy' metadata): Expecting ',' "
        "delimiter: line 1 column "
    )
    assert r.verify() == [
        "t.vyrebundle: manifest kernel 'add.f16' carries metadata of 'add.f32'",
        str(info.value),
    ]


@pytest.mark.parametrize(
    "meta, message",
    [
        ('{"a":1,"a":2}', "duplicate key 'a'"),
        ('{"a":NaN}', "non-JSON number NaN"),
        ("[1]", "'meta' must be a dict, got list"),
    ],
)
def test_a_lazily_decoded_record_gets_the_whole_decoders_checks(meta, message):
    doc = manifest_of(GOOD)
    doc["kernels"][1]["meta"] = "@@"
    text = json.dumps(doc, sort_keys=True, separators=(",", ":")).replace('"@@"', meta)
    r = read_bundle_bytes(with_manifest(GOOD, text.encode()), "t.vyrebundle")
    assert r.kernel_meta("add.f32").id == "add.f32"
    with pytest.raises(BundleError) as info:
        r.kernel_meta("add.i32")
    assert message in str(info.value)


@pytest.mark.parametrize(
    "meta, message",
    [
        ('{"a":1,"a":2}', "duplicate key 'a'"),
        ('{"a":NaN}', "non-JSON number NaN"),
        ("[1]", "'meta' must be a dict, got list"),
        ('{"a":1},{"b":2}', "Extra data"),  # two values in one span: the count changes
        ('{"deep":' + "[" * 29 + "]" * 29 + "}", "nested deeper than 32 levels"),
    ],
)
def test_a_batch_decode_refuses_what_each_records_own_decode_refuses(meta, message):
    # Bundle.warm() decodes the records in one pass (decode_metas); a bad record keeps
    # nothing of the batch it spoils, and its use names the problem as before
    doc = manifest_of(GOOD)
    doc["kernels"][1]["meta"] = "@@"
    text = json.dumps(doc, sort_keys=True, separators=(",", ":")).replace('"@@"', meta)
    r = read_bundle_bytes(with_manifest(GOOD, text.encode()), "t.vyrebundle")
    r.decode_metas(r.ids)
    assert r.kernel_meta("add.f32").id == "add.f32"
    with pytest.raises(BundleError) as info:
        r.kernel_meta("add.i32")
    assert message in str(info.value)


def test_a_batch_decode_gives_each_records_own_decode():
    one, batch = (read_bundle_bytes(GOOD, "t.vyrebundle") for _ in range(2))
    batch.decode_metas(["saxpy", "add.i32", "nothing such", "add.f32"])
    assert sorted(batch._metas) == sorted(batch.ids)
    for ident in one.ids:
        assert batch.kernel_meta(ident) == one.kernel_meta(ident)
        assert batch.entry(ident) == one.entry(ident)


def test_a_canonical_record_nested_past_the_limit_is_refused_before_it_is_served():
    doc = manifest_of(GOOD)
    doc["kernels"][1]["meta"]["deep"] = "@@"
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    for levels, ok in ((28, True), (29, False)):  # the meta object is the fourth level
        data = with_manifest(GOOD, text.replace('"@@"', "[" * levels + "]" * levels).encode())
        r = read_bundle_bytes(data, "t.vyrebundle")  # the open decodes no metadata
        if ok:
            assert r.kernel_meta("add.i32").id == "add.i32"
            continue
        # nor is any record after it served: the split is proven in order
        for ident in ("add.i32", "saxpy"):
            with pytest.raises(BundleError) as info:
                r.kernel_meta(ident)
            assert str(info.value) == (
                "t.vyrebundle: bad JSON in the manifest: nested deeper than 32 levels"
            )
        assert r.kernel_meta("add.f32").id == "add.f32"  # the record before it is whole


def test_a_string_left_open_in_metadata_never_yields_the_record_it_swallows():
    # not JSON: the first record's string runs into the next head, which the count of
    # heads cannot tell from a real one; no record at or after it is served
    doc = manifest_of(GOOD)
    doc["kernels"][0]["meta"]["provenance"] = "@@"
    text = json.dumps(doc, sort_keys=True, separators=(",", ":")).replace('"@@"', '"open')
    r = read_bundle_bytes(with_manifest(GOOD, text.encode()), "t.vyrebundle")
    for ident in ("add.f32", "add.i32", "saxpy"):
        with pytest.raises(BundleError) as info:
            r.kernel_meta(ident)
        assert str(info.value).startswith("t.vyrebundle: bad JSON in the manifest: ")


def test_artifact_corruption_is_lazy_and_named(tmp_path):
    path = tmp_path / "k.vyrebundle"
    write_bundle(path, ENTRIES)
    data = bytearray(path.read_bytes())
    info = manifest_of(bytes(data))["kernels"][2]["artifacts"][".spv"]
    data[info["offset"]] ^= 0xFF
    path.write_bytes(bytes(data))
    with read_bundle(path) as r:  # open reads only header + manifest: it succeeds
        assert r.read_artifact("add.f32", ".wgsl") == ENTRIES[1]["artifacts"][".wgsl"]
        with pytest.raises(BundleError, match=r"kernel 'saxpy' artifact '.spv': blake3 mismatch"):
            r.read_artifact("saxpy", ".spv")
        end = info["offset"] + info["size"]
        assert r.verify() == [
            f"kernel 'saxpy' artifact '.spv': blake3 mismatch at bytes {info['offset']}..{end}"
        ]


def test_verified_bytes_are_cached(tmp_path):
    path = tmp_path / "k.vyrebundle"
    write_bundle(path, ENTRIES)
    r = read_bundle(path)
    first = r.read_artifact("saxpy", ".wgsl")
    info = r.entry("saxpy").artifacts[".wgsl"]
    data = bytearray(path.read_bytes())
    data[info["offset"]] ^= 0xFF
    path.write_bytes(bytes(data))  # same size, in place: the open file sees it
    assert r.read_artifact("saxpy", ".wgsl") is first
    assert any("blake3 mismatch" in p for p in r.verify())  # verify re-reads the file
    r.close()
    assert r.read_artifact("saxpy", ".wgsl") == first
    with pytest.raises(BundleError, match="bundle is closed"):
        r.read_artifact("saxpy", ".spv")


def test_file_shrinking_after_open(tmp_path):
    path = tmp_path / "k.vyrebundle"
    write_bundle(path, ENTRIES)
    r = read_bundle(path)
    os.truncate(path, HEADER_SIZE + 4)
    with pytest.raises(BundleError, match=r"truncated at byte 84: needed bytes 80\.\."):
        r.read_artifact("add.f32", ".kdesc")
    r.close()


def test_verify_reports_padding_gaps_and_noncanonical_manifest():
    data = bytearray(GOOD)
    first = manifest_of(GOOD)["kernels"][0]["artifacts"][".kdesc"]
    end = first["offset"] + first["size"]
    assert end % ALIGN  # there is padding after the first artifact
    data[end] = 1
    assert read_bundle_bytes(bytes(data)).verify() == [
        f"non-zero padding bytes at {end}..{(end + ALIGN - 1) // ALIGN * ALIGN}"
    ]
    doc = manifest_of(GOOD)
    spaced = json.dumps(doc, indent=1).encode()
    assert read_bundle_bytes(with_manifest(GOOD, spaced)).verify() == [
        "manifest is not in canonical JSON form (sorted keys, no spaces)"
    ]
    for k in doc["kernels"]:
        for info in k["artifacts"].values():
            info["offset"] += 32  # every range moves: a 32-byte gap opens after the header
    m_off = header(GOOD)[4]
    moved = with_header(GOOD[:HEADER_SIZE] + b"\0" * 32 + GOOD[HEADER_SIZE:m_off], m_off=m_off + 32)
    moved = with_manifest(moved, doc)
    gap = (
        f"32 unused bytes at {HEADER_SIZE}..112 (a canonical bundle only pads to 16-byte alignment)"
    )
    assert read_bundle_bytes(moved).verify() == [gap]


def test_missing_file():
    with pytest.raises(BundleError, match=r"nowhere.vyrebundle: cannot open bundle: No such file"):
        read_bundle("/nonexistent/nowhere.vyrebundle")


def test_a_fifo_a_device_or_a_directory_is_refused_without_blocking(tmp_path):
    # A FIFO with no writer would block a plain open() forever; /dev/zero would read as an
    # endless run of zeros: each is refused by kind before anything is read.
    fifo = tmp_path / "b.vyrebundle"
    os.mkfifo(fifo)
    for path, kind in (
        (fifo, "a FIFO"),
        ("/dev/zero", "a character device"),
        (tmp_path, "a directory"),
    ):
        with pytest.raises(BundleError) as info:
            read_bundle(path)
        assert str(info.value) == f"{path}: cannot open bundle: it is {kind}, not a regular file"


# --- speed and independence ------------------------------------------------------------


def test_bundle_module_imports_no_compiler():
    code = (
        "import sys, vyre_build.bundle; "
        "print(sorted(m for m in sys.modules if m.startswith('vyre_build')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": REPO},
        check=True,
    ).stdout
    loaded = eval(out)  # noqa: S307 - our own subprocess's repr of a list of names
    # The writer loads on first use of write_bundle/encode_bundle, never for reading.
    assert loaded == sorted(
        [
            "vyre_build",
            "vyre_build.core",
            "vyre_build.core.errors",
            "vyre_build.core.files",
            "vyre_build.core.scalars",
            "vyre_build.bundle",
            "vyre_build.bundle.format",
            "vyre_build.bundle.integrity",
            "vyre_build.bundle.keys",
            "vyre_build.bundle.manifest",
            "vyre_build.bundle.metadata",
            "vyre_build.bundle.metadata_check",
            "vyre_build.bundle.reader",
            "vyre_build.bundle.records",
            "vyre_build.bundle.signing",
        ]
    )


# --- CLI ---------------------------------------------------------------------------------


@pytest.fixture
def bundle_file(tmp_path):
    path = tmp_path / "k.vyrebundle"
    write_bundle(path, ENTRIES)
    return str(path)


def test_cli_ls(bundle_file, capsys):
    assert cli_main(["bundle", "ls", bundle_file]) == 0
    out = capsys.readouterr().out
    assert "add.f32  64x1x1     y     3         .kdesc:" in out
    assert out.endswith(f"3 kernel(s) in {bundle_file}\n")
    assert cli_main(["bundle", "ls", bundle_file, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [k["id"] for k in doc["kernels"]] == ["add.f32", "add.i32", "saxpy"]
    assert doc["kernels"][0]["meta"] == ENTRIES[1]["meta"]


def test_cli_show(bundle_file, capsys):
    assert cli_main(["bundle", "show", bundle_file, "add.i32"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("kernel     add.i32  (name add, variant i32)\nworkgroup  64x1x1\n")
    assert "binding      2  scalar f32  a                offset 0" in out
    assert "uniform    binding 2, 16 bytes" in out
    assert cli_main(["bundle", "show", bundle_file, "saxpy", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["id"] == "saxpy" and doc["variant"] is None
    assert cli_main(["bundle", "show", bundle_file, "add"]) == 1
    assert "it has variants f32, i32" in capsys.readouterr().err


def test_cli_verify(bundle_file, tmp_path, capsys):
    assert cli_main(["bundle", "verify", bundle_file]) == 0
    assert "ok (3 kernel(s), every artifact verified)" in capsys.readouterr().out
    with open(bundle_file, "rb") as f:
        data = bytearray(f.read())
    data[HEADER_SIZE] ^= 1
    bad = tmp_path / "bad.vyrebundle"
    bad.write_bytes(bytes(data))
    assert cli_main(["bundle", "verify", str(bad)]) == 1
    assert "kernel 'add.f32' artifact '.kdesc': blake3 mismatch" in capsys.readouterr().err
    assert cli_main(["bundle", "verify", str(bad), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and len(doc["problems"]) == 1
    bad.write_bytes(b"garbage")
    assert cli_main(["bundle", "verify", str(bad), "--json"]) == 1
    assert "bad magic" in json.loads(capsys.readouterr().out)["problems"][0]
    assert cli_main(["bundle", "verify", str(bad)]) == 1
    assert "bad magic" in capsys.readouterr().err


def test_cli_extract(bundle_file, tmp_path, capsys):
    out_dir = tmp_path / "x"
    assert cli_main(["bundle", "extract", bundle_file, "-o", str(out_dir), "--json"]) == 0
    names = json.loads(capsys.readouterr().out)["files"]
    assert sorted(os.listdir(out_dir)) == sorted(names)
    assert len(names) == 12
    for e in ENTRIES:
        ident = e["meta"]["id"]
        for suffix, data in e["artifacts"].items():
            assert (out_dir / f"{ident}{suffix}").read_bytes() == data
        assert json.loads((out_dir / f"{ident}.meta.json").read_text()) == e["meta"]


def test_cli_extract_writes_nothing_when_an_artifact_is_corrupt(bundle_file, tmp_path, capsys):
    with open(bundle_file, "rb") as f:
        data = bytearray(f.read())
    info = manifest_of(bytes(data))["kernels"][2]["artifacts"][".wgsl"]
    data[info["offset"]] ^= 1
    with open(bundle_file, "wb") as f:
        f.write(bytes(data))
    out_dir = tmp_path / "x"
    assert cli_main(["bundle", "extract", bundle_file, "-o", str(out_dir)]) == 1
    assert "kernel 'saxpy' artifact '.wgsl': blake3 mismatch" in capsys.readouterr().err
    assert not out_dir.exists()


@pytest.mark.parametrize(
    "ident, suffix",
    [
        ("..", ".wgsl"),
        ("a", "/../../x"),
        ("/abs", ".spv"),
        ("a/b", ".spv"),
        ("a", ".."),
        ("a.", ".wgsl"),
    ],
)
def test_extract_refuses_escaping_names(tmp_path, ident, suffix):
    with pytest.raises(BundleError, match="is not a safe"):
        _safe_target(str(tmp_path), ident, suffix)


# --- with the real compiler ----------------------------------------------------------------

SAXPY = """from vyre_build.lang import kernel, Buffer, f32, global_id

@kernel(workgroup_size=64)
def saxpy(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32):
    i = global_id().x
    if i < len(y):
        y[i] = a * x[i] + y[i]
"""


def test_compiled_kernel_round_trip(tmp_path):
    from vyre_build.compiler import compile_file
    from vyre_build.descriptor import decode

    src = tmp_path / "saxpy.py"
    src.write_text(SAXPY)
    kernels = compile_file(str(src), root=str(tmp_path))
    entries = [
        {"meta": k.meta, "artifacts": {s: b for s, b in k.artifacts.items() if s != ".meta.json"}}
        for k in kernels
    ]
    path = tmp_path / "dist" / "k.vyrebundle"
    write_bundle(path, entries)
    moved = tmp_path / "elsewhere" / "saxpy"
    moved.parent.mkdir()
    src.rename(moved.with_suffix(".py"))
    again = compile_file(str(moved.with_suffix(".py")), root=str(moved.parent))
    entries2 = [
        {"meta": k.meta, "artifacts": {s: b for s, b in k.artifacts.items() if s != ".meta.json"}}
        for k in again
    ]
    # A moved source tree gives the same bundle: no absolute paths reach the manifest.
    assert encode_bundle(entries2) == path.read_bytes()
    with read_bundle(path) as r:
        assert r.ids == ["saxpy"] and r.verify() == []
        assert decode(r.read_artifact("saxpy", ".kdesc")) == kernels[0].descriptor
        assert r.read_artifact("saxpy", ".wgsl").decode() == kernels[0].wgsl
        assert r.entry("saxpy").meta == kernels[0].meta


def test_depth_check_ignores_brackets_inside_strings_with_and_without_escapes():
    from vyre_build.bundle.format import _too_deep

    plain = '{"a": "[[[[[[[[{{{{", "b": [[1]]}'
    escaped = '{"a": "\\"[[[[[[[[\\\\", "b": [[1]]}'
    for text in (plain, escaped):
        assert json.loads(text)["b"] == [[1]]
        assert not _too_deep(text, 3)
        assert _too_deep(text, 2)


def test_a_misspelt_kernel_gets_suggestions_first_and_a_big_bundle_is_counted(tmp_path, capsys):
    from vyre_build.cli import main as cli_main
    from vyre_build.runtime import KernelNotFound, open_bundle

    small = read_bundle_bytes(encode_bundle(ENTRIES), "s.vyrebundle")
    with pytest.raises(BundleError) as info:
        small.entry("sxapy")
    assert str(info.value) == (
        "s.vyrebundle: no kernel 'sxapy' in the bundle; did you mean 'saxpy'? "
        "It holds add.f32, add.i32, saxpy"
    )
    names = [f"k{i:02d}_scale" for i in range(20)] + ["saxpy", "reduce_sum"]
    path = tmp_path / "big.vyrebundle"
    write_bundle(path, [make_entry(n) for n in names] + [make_entry("add", "f32")])
    big = read_bundle(path)
    cases = {
        "sxapy": "did you mean 'saxpy'? It holds 23 kernels",
        "reduce_summ": "did you mean 'reduce_sum'? It holds 23 kernels",
        "add.f23": "did you mean 'add.f32'? It holds 23 kernels",
        "k05_scael": "did you mean 'k05_scale' or 'k15_scale' or 'k10_scale'? It holds 23 kernels",
        "ad": "did you mean 'add'? It holds 23 kernels",  # a name with variants
        "nothing_like_it": "it holds 23 kernels",
    }
    for ident, hint in cases.items():
        expected = (
            f"{path}: no kernel {ident!r} in the bundle; {hint} "
            f"(`vyre-build bundle ls {path}` lists them)"
        )
        with pytest.raises(BundleError) as info:
            big.entry(ident)
        assert str(info.value) == expected
    with open_bundle(path, backend="cpu") as bundle:  # the runtime's Bundle says the same
        with pytest.raises(KernelNotFound) as info:
            bundle["sxapy"]
        assert isinstance(info.value, KeyError) and str(info.value) == (
            f"{path}: no kernel 'sxapy' in the bundle; did you mean 'saxpy'? It holds 23 "
            f"kernels (`vyre-build bundle ls {path}` lists them)"
        )
    code = cli_main(["bundle", "show", str(path), "sxapy"])
    err = capsys.readouterr().err
    assert code == 1 and err == (
        f"{path}: no kernel 'sxapy' in the bundle; did you mean 'saxpy'? It holds 23 kernels "
        f"(`vyre-build bundle ls {path}` lists them)\n"
    )


def test_compile_kernel_misspelt_suggests_the_kernel(tmp_path, capsys):
    from vyre_build.cli import main as cli_main

    src = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "reduce.py")
    code = cli_main(["compile", src, "--kernel", "reduce_summ", "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and err.endswith(
        "reduce.py: no kernel named 'reduce_summ'; did you mean 'reduce_sum' or "
        "'reduce_sum_f32'? kernels: block_min_max, reduce_sum, reduce_sum_f32\n"
    )
    assert os.listdir(tmp_path) == []


def test_opening_decodes_no_metadata_until_it_is_used():
    r = read_bundle_bytes(GOOD, "t.vyrebundle")
    assert r.ids == ["add.f32", "add.i32", "saxpy"] and r._metas == {}
    assert r._arts == {} and r._ranges is None  # no artifact index read either
    assert r.kernel_meta("saxpy").id == "saxpy"
    assert list(r._metas) == ["saxpy"] and list(r._arts) == ["saxpy"]
    assert len(r._ranges) == 9  # every range checked before the first index was served
    assert r.entry("add.i32").meta == ENTRIES[2]["meta"]
    assert list(r._metas) == ["saxpy", "add.i32"]


def test_a_record_not_in_the_writers_layout_is_refused_where_it_is_first_used():
    # a metadata record that is no object: the split cannot prove it, the whole decode
    # names it at the record's first use (and the first use of any record after it)
    doc = manifest_of(GOOD)
    doc["kernels"][1]["meta"] = "abc"
    r = read_bundle_bytes(with_manifest(GOOD, doc), "t.vyrebundle")
    assert r.kernel_meta("add.f32").id == "add.f32"
    message = (
        "t.vyrebundle: in the manifest: manifest kernel 'add.i32': 'meta' must be a dict, got str"
    )
    for ident in ("add.i32", "saxpy"):
        with pytest.raises(BundleError) as info:
            r.kernel_meta(ident)
        assert str(info.value) == message


def test_an_id_with_a_raw_newline_is_refused_and_an_escaped_id_read_as_written():
    text = json.dumps(manifest_of(GOOD), sort_keys=True, separators=(",", ":"))
    # not JSON (a raw newline in a string): two safe-looking lines, one unsafe id
    raw = text.replace('"id":"add.f32","meta"', '"id":"add\nf32","meta"', 1)
    assert "kernel id 'add\\nf32' is not a safe file name" in refused(
        with_manifest(GOOD, raw.encode())
    )
    # JSON, not the writer's spelling: the whole decode reads the id as written
    escaped = text.replace('"id":"add.f32","meta"', '"id":"add\\u002ef32","meta"', 1)
    r = read_bundle_bytes(with_manifest(GOOD, escaped.encode()), "t.vyrebundle")
    assert r.ids == ["add.f32", "add.i32", "saxpy"] and r.kernel_meta("add.f32").id == "add.f32"


def test_a_manifest_cut_short_in_place_is_refused_not_a_crash(tmp_path):
    # the manifest is read, never mapped: a file truncated under the reader is a refusal
    path = tmp_path / "k.vyrebundle"
    write_bundle(path, ENTRIES)
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    with pytest.raises(BundleError, match="truncated|manifest"):
        read_bundle(path)
    data = bytearray(data)
    data[-3] ^= 1  # in the manifest: its hash is checked
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match="manifest hash mismatch"):
        read_bundle(path)


@pytest.mark.parametrize(
    "provenance",
    [
        # a nested value spelling the text between two records
        {"x": [{"a": 1}, {"artifacts": {"q": 1}, "id": "zzz", "meta": {}}]},
        {"x": [{"a": 1}, {"artifacts": {}, "id": "aaa", "meta": {}}]},  # a record head
        {"x": [{"a": 1}, {"artifacts": {}, "id": "add.f33", "meta": {"a": 1}}]},
        {"x": [[{"a": 1}], {"artifacts": {}}], "y": '"},{"artifacts":{"\\\\'},
        {"x": '}],"version":2}'},  # the tail's text, in a string
    ],
)
def test_metadata_that_spells_a_record_boundary_is_read_as_written(provenance):
    doc = manifest_of(GOOD)
    doc["kernels"][0]["meta"]["provenance"] = provenance
    r = read_bundle_bytes(with_manifest(GOOD, doc), "t.vyrebundle")
    assert r.ids == ["add.f32", "add.i32", "saxpy"]
    assert [r._record(i)["artifacts"] for i in r.ids] == [k["artifacts"] for k in doc["kernels"]]
    assert [r._meta(i) for i in r.ids] == [k["meta"] for k in doc["kernels"]]
    assert r.verify() == []
