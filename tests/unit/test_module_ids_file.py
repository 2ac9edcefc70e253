"""The persisted shader module identifiers (runtime/backends/vulkan/module_ids.py): what one
process saves, the next loads; a file that is corrupt, of another identifier algorithm,
not a regular file or over the bound is ignored with one warning; saves merge what another
process saved, without reviving an identifier this one forgot."""

from __future__ import annotations

import os
import struct
import warnings

import blake3
import pytest

vk = pytest.importorskip("vulkan")
from vyre_build.core.errors import PipelineCacheWarning  # noqa: E402
from vyre_build.runtime.backends.vulkan import module_ids as mids  # noqa: E402

UUID = bytes(range(16))


def _ids(path, uuid: bytes = UUID) -> mids.ModuleIds:
    return mids.ModuleIds(vk.ffi.NULL, uuid, str(path), str(path) + ".lock")


def _with(ids: mids.ModuleIds, entries: dict[bytes, bytes]) -> None:
    ids.known.update(entries)
    ids.changed = True


def _loaded(path, uuid: bytes = UUID) -> tuple[dict, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = _ids(path, uuid)
    return ids.known, [
        str(w.message) for w in caught if issubclass(w.category, PipelineCacheWarning)
    ]


ENTRIES = {
    blake3.blake3(b"a").digest(): b"\x01" * 32,
    blake3.blake3(b"b").digest(): b"\x02" * 7,
    blake3.blake3(b"c").digest(): b"\x03",
}


def test_what_one_process_saves_the_next_loads(tmp_path):
    path = tmp_path / "vk.bin.ids"
    ids = _ids(path)
    assert ids.known == {} and not ids.save()  # nothing learned: nothing written
    _with(ids, ENTRIES)
    assert ids.save() and not ids.changed
    known, warned = _loaded(path)
    assert known == ENTRIES and warned == []
    # byte-identical for the same identifiers, whatever order they were learned in
    again = _ids(tmp_path / "other.ids")
    _with(again, dict(reversed(list(ENTRIES.items()))))
    assert again.save()
    assert path.read_bytes() == (tmp_path / "other.ids").read_bytes()


def test_a_code_key_is_the_blake3_of_the_spirv():
    assert mids.code_key(b"\x03\x02\x23\x07") == blake3.blake3(b"\x03\x02\x23\x07").digest()


def _saved(path) -> bytes:
    ids = _ids(path)
    _with(ids, ENTRIES)
    assert ids.save()
    return path.read_bytes()


def _resealed(body: bytes) -> bytes:
    return mids.MAGIC + blake3.blake3(body).digest() + body


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "blake3 mismatch"),
        (lambda d: b"NOTOURS!" + d[8:], "not a vyre_build shader module identifier file"),
        (lambda d: d[:20], "not a vyre_build shader module identifier file"),
        (lambda d: _resealed(bytes(16) + d[56:]), "another identifier algorithm"),
        # a count that disagrees with the entries, sealed with a right blake3
        (lambda d: _resealed(d[40:56] + struct.pack("<I", 9) + d[60:]), "do not add up"),
        (lambda d: _resealed(d[40:-1]), "do not add up"),  # an entry cut short
    ],
)
def test_a_damaged_file_is_ignored_with_one_warning(tmp_path, damage, why):
    path = tmp_path / "vk.bin.ids"
    path.write_bytes(damage(_saved(path)))
    known, warned = _loaded(path)
    assert known == {}
    assert len(warned) == 1 and why in warned[0] and str(path) in warned[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PipelineCacheWarning)
        ids = _ids(path)  # and the next save replaces it
    _with(ids, ENTRIES)
    assert ids.save() and _loaded(path) == (ENTRIES, [])


def test_a_file_that_is_not_regular_or_over_the_bound_is_ignored(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo.ids"
    os.mkfifo(fifo)
    known, warned = _loaded(fifo)  # never blocks on the FIFO
    assert known == {} and "FIFO" in warned[0]
    path = tmp_path / "vk.bin.ids"
    _saved(path)
    monkeypatch.setattr(mids, "MAX_BYTES", 64)
    known, warned = _loaded(path)
    assert known == {} and "over the 64-byte bound" in warned[0]


def test_saves_merge_another_process_and_keep_what_this_one_forgot_out(tmp_path):
    path = tmp_path / "vk.bin.ids"
    (a, b, c) = ENTRIES
    ours = _ids(path)
    _with(ours, {a: ENTRIES[a], b: ENTRIES[b]})
    theirs = _ids(path)  # another process, started before ours saved
    assert ours.save()
    _with(theirs, {c: ENTRIES[c]})
    theirs.forget(a)  # a no-op: it never knew a
    assert theirs.save()
    assert _loaded(path)[0] == ENTRIES  # theirs merged ours in
    ours.forget(b)  # the driver refused b: its pipeline is gone
    assert ours.save()
    assert _loaded(path)[0] == {a: ENTRIES[a], c: ENTRIES[c]}
