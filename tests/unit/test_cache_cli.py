"""`vyre-build cache` acts on vyre caches only, and `cache verify` repairs what it finds.

- A directory that is not a vyre cache (no CACHEDIR.TAG of vyre-build, and files no cache
  holds) is refused by every subcommand with one clear line: nothing is created in it or
  removed from it. An empty one reads as an empty cache and is refused by the commands
  that change a cache; a cache made before the marker is accepted by its layout and gets
  the marker from the first command (or build) that changes it.
- `clear` removes records, blobs, history and scan memos by name, reports the true
  counts, and leaves every other file as it was.
- A bad path, a file given as the directory and an unreadable directory are one line
  each, never a traceback.
- `verify` reports corrupt, missing and unusable blobs and says which command repairs;
  `verify --repair` (and `--rebuild`) removes them and rebuilds the entries that used
  them from their recorded inputs, or removes an entry that cannot be rebuilt, so the
  next `verify` passes; a build reports a missing blob as it reports a corrupt one.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from vyre_build.build.step import build_kernel_file
from vyre_build.cache.config import format_size
from vyre_build.cache.key import content_hash, make_action_key
from vyre_build.cache.layout import MARKER
from vyre_build.cache.record import make_record
from vyre_build.cache.store import Store
from vyre_build.cli import main
from vyre_build.core.errors import CacheError
from vyre_build.core.files import canonical_json

# The language doc's first example, as the project builds it.
SAXPY = Path(__file__).resolve().parents[2] / "kernels" / "saxpy.py"


def tree_of(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` (relative) -> its bytes, None for a directory."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["cache", *argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out, out.err


def stored(store: Store, i: int):
    k = make_action_key(
        identity={"version": "0", "source_hash": "ab" * 32},
        source=("k.py", b"src %d" % i),
        imports=[],
        variants=[],
        targets=["wgsl"],
        options={},
    )
    store.put_record(k.key, k.manifest, {f"k{i}.wgsl": b"wgsl %d" % i})
    return k.key


@pytest.fixture
def foreign(tmp_path) -> Path:
    """The audit's repro: a directory with cas/ and ac/ that are not a cache's."""
    d = tmp_path / "d"
    (d / "cas").mkdir(parents=True)
    (d / "ac" / "ab").mkdir(parents=True)
    (d / "cas" / "important").write_text("y\n")
    (d / "ac" / "ab" / "t.json").write_text("z\n")
    return d


# --- 1. nothing but a vyre cache is touched -----------------------------------------------

COMMANDS = [
    ["clear"],
    ["-C"],
    ["gc"],
    ["gc", "--max-size", "0"],
    ["zero"],
    ["-z"],
    ["verify", "--repair"],
    ["verify", "--rebuild"],
    ["verify"],
    ["stats"],
    ["ls"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_directory_that_is_not_a_cache_is_refused_and_left_as_it_is(command, foreign, capsys):
    before = tree_of(foreign)
    rc, out, err = run(capsys, *command, "--cache-dir", str(foreign))
    assert rc == 1 and out == ""
    assert err == (
        f"{foreign} (from --cache-dir) is not a vyre cache: it has no CACHEDIR.TAG of "
        "vyre-build and holds ac/ab/t.json, cas/important, which no vyre cache holds; nothing "
        "was changed. Pass --cache-dir the cache builds use (`vyre-build cache config` shows "
        "it) or set VYRE_CACHE_DIR\n"
    )
    assert tree_of(foreign) == before  # no stats.json, locks/ or marker either


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if c not in (["stats"], ["ls"], ["verify"])], ids=" ".join
)
def test_commands_that_change_a_cache_refuse_an_empty_directory(command, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".gitkeep").write_bytes(b"")  # as the project's own cache/ holds
    rc, _, err = run(capsys, *command, "--cache-dir", str(empty))
    assert rc == 1 and err.startswith(
        f"no cache at {empty} (from --cache-dir) yet: the directory is empty, nothing was "
        "changed; build first"
    )
    assert tree_of(empty) == {".gitkeep": b""}


def test_reading_an_empty_directory_shows_an_empty_cache_and_writes_nothing(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    for command in (["stats", "--json"], ["ls"], ["verify"]):
        rc, out, _ = run(capsys, *command, "--cache-dir", str(empty))
        assert rc == 0, command
    assert list(empty.iterdir()) == []


def test_bad_paths_are_one_line_each_never_a_traceback(tmp_path, capsys, monkeypatch):
    afile = tmp_path / "f"
    afile.write_text("hi\n")
    for command in (["stats"], ["clear"], ["gc"], ["verify", "--repair"]):
        rc, _, err = run(capsys, *command, "--cache-dir", str(afile))
        assert rc == 1 and err == (
            f"{afile} (from --cache-dir) is not a directory, so not a cache; pass --cache-dir "
            "the cache builds use (`vyre-build cache config` shows it) or set VYRE_CACHE_DIR\n"
        )
        rc, _, err = run(capsys, *command, "--cache-dir", str(tmp_path / "none"))
        assert rc == 1 and err.startswith(f"no cache at {tmp_path / 'none'} (from --cache-dir)")
    assert afile.read_text() == "hi\n" and not (tmp_path / "none").exists()
    locked = tmp_path / "locked"
    stored(Store(locked), 0)
    real_listdir = os.listdir

    def refusing(path="."):  # root reads anything: fail as for a user without rights
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", refusing)
    (locked / MARKER).unlink()  # unmarked: only its listing can tell what it is
    for command in (["ls"], ["clear"]):
        rc, _, err = run(capsys, *command, "--cache-dir", str(locked))
        assert rc == 1 and err == (
            f"cannot read the cache directory {locked} (from --cache-dir): Permission denied; "
            "make it readable (chmod u+rx), or pass --cache-dir the cache builds use "
            "(`vyre-build cache config` shows it) or set VYRE_CACHE_DIR\n"
        )


def test_an_unreadable_entry_directory_is_named_by_clear_and_the_rest_goes(
    tmp_path, capsys, monkeypatch
):
    store = Store(tmp_path / "c")
    keys = [stored(store, i) for i in range(2)]
    stuck = os.path.dirname(store.record_path(keys[0]))
    real_listdir = os.listdir

    def refusing(path="."):
        if os.fspath(path) == stuck:
            raise PermissionError(13, "Permission denied", stuck)
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", refusing)
    rc, _, err = run(capsys, "clear", "--cache-dir", str(tmp_path / "c"))
    assert rc == 1 and err.startswith(
        f"cannot clear the cache {store.root} completely: {stuck}: cannot be read; removed 1 "
        "entries and 2 blobs. Make what is named removable"
    )
    assert os.path.exists(store.record_path(keys[0]))
    assert not os.path.exists(store.record_path(keys[1]))


def test_clear_removes_entries_by_name_reports_true_counts_and_leaves_the_rest(tmp_path, capsys):
    root = tmp_path / "c"
    store = Store(root, project=str(tmp_path / "p"))
    keys = [stored(store, i) for i in range(3)]
    store.note_built(["build/k"], keys[0])
    store.finish_build("b")
    (root / "scan").mkdir()
    (root / "scan" / ("ab" * 32 + ".json")).write_bytes(b"memo")
    (root / "cas" / "notes.txt").write_text("mine\n")
    (root / "README").write_text("mine too\n")
    usage = store.usage()
    assert (usage["entries"], usage["blobs"]) == (3, 3)
    rc, out, _ = run(capsys, "clear", "--cache-dir", str(root))
    assert rc == 0
    assert out.splitlines() == [
        f"Removed 3 entries and 3 blobs ({format_size(usage['total_bytes'])}) from {root}",
        f"Left 2 files that are no cache entries, as they were: {root / 'README'}, "
        f"{root / 'cas' / 'notes.txt'}",
    ]
    left = tree_of(root)
    assert left["README"] == b"mine too\n" and left["cas/notes.txt"] == b"mine\n"
    assert MARKER in left and "stats.json" in left  # statistics and the marker stay
    assert not [p for p in left if p.startswith(("ac", "history", "scan/"))]
    assert Store(root).usage()["entries"] == 0
    rc, out, _ = run(capsys, "clear", "--json", "--cache-dir", str(root))
    report = json.loads(out)
    assert (report["removed_entries"], report["removed_blobs"], report["freed_bytes"]) == (0, 0, 0)
    assert len(report["kept"]) == 2


def test_a_cache_made_before_the_marker_is_read_as_it_is_and_marked_by_a_change(tmp_path, capsys):
    root = tmp_path / "c"
    store = Store(root)
    stored(store, 0)
    store.finish_build("old")
    (root / MARKER).unlink()  # as every cache was before the marker
    (root / ".gitkeep").write_bytes(b"")
    rc, out, _ = run(capsys, "ls", "--cache-dir", str(root))
    assert rc == 0 and len(out.splitlines()) == 1 and not (root / MARKER).exists()
    rc, _, _ = run(capsys, "zero", "--cache-dir", str(root))
    assert rc == 0 and (root / MARKER).read_bytes().startswith(b"Signature: 8a477f597d28d172")
    # One file no cache holds, and it is no longer taken for a cache (unless marked).
    (root / MARKER).unlink()
    (root / "ac" / "notes.txt").write_text("x")
    rc, _, err = run(capsys, "gc", "--cache-dir", str(root))
    assert rc == 1 and "holds ac/notes.txt, which no vyre cache holds" in err


def test_names_alone_do_not_make_a_cache_its_entries_or_statistics_do(tmp_path, capsys):
    """A lone stats.json is someone's file unless it is vyre's; a cache cleared before the
    marker (stats.json and locks/ left) is still one."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "stats.json").write_text('{"runs": 3}\n')
    rc, _, err = run(capsys, "zero", "--cache-dir", str(other))
    assert rc == 1 and err.startswith(
        f"{other} (from --cache-dir) is not a vyre cache: it has no CACHEDIR.TAG of "
        "vyre-build, and neither a cache entry nor a stats.json of vyre's shows that it is one"
    )
    assert stored(Store(other), 0) and tree_of(other) == {"stats.json": b'{"runs": 3}\n'}
    capsys.readouterr()
    cleared = tmp_path / "cleared"
    store = Store(cleared)
    stored(store, 0)
    store.count("misses")
    store.finish_build("old")
    shutil.rmtree(cleared / "ac")  # what clear left before the marker
    shutil.rmtree(cleared / "cas")
    (cleared / MARKER).unlink()
    assert sorted(tree_of(cleared)) == ["locks", "locks/stats.lock", "stats.json"]
    rc, out, _ = run(capsys, "zero", "--cache-dir", str(cleared))
    assert rc == 0 and out == "Statistics zeroed\n" and (cleared / MARKER).exists()


def test_a_store_never_writes_into_a_directory_that_is_not_a_cache(foreign, capsys):
    before = tree_of(foreign)
    store = Store(foreign)
    stored(store, 0)
    stored(store, 1)
    assert store.iter_keys() == [] and not store.writable
    store.count("misses")
    store.finish_build("b", max_size=0)
    assert capsys.readouterr().err.splitlines() == [
        f"vyre cache: warning: {foreign} is not a vyre cache: it has no CACHEDIR.TAG of "
        "vyre-build and holds ac/ab/t.json, cas/important, which no vyre cache holds: storing "
        "nothing in it; point VYRE_CACHE_DIR / $VYRECACHEDIR at a new or empty directory"
    ]
    with pytest.raises(CacheError, match="is not a vyre cache: .*; nothing was changed"):
        store.clear()
    with pytest.raises(CacheError, match="is not a vyre cache"):
        store.gc(max_size=0)
    assert tree_of(foreign) == before


def test_a_new_store_marks_its_directory_first(tmp_path):
    store = Store(tmp_path / "new" / "c")
    stored(store, 0)
    assert (tmp_path / "new" / "c" / MARKER).read_bytes().startswith(b"Signature: ")
    assert b"vyre-build" in (tmp_path / "new" / "c" / MARKER).read_bytes()


# --- 2. verify reports, --repair repairs ---------------------------------------------------


@pytest.fixture
def built(tmp_path):
    """A cache holding one real saxpy entry: (store, key, record, outputs' bytes by name)."""
    (tmp_path / "kernels").mkdir()
    src = shutil.copy(SAXPY, tmp_path / "kernels")
    store = Store(tmp_path / "c")
    result = build_kernel_file(str(src), str(tmp_path / "out"), store=store)
    record = store.get_record(result.key.key)
    data = {n: store.get_blob(r["hash"]) for n, r in record["outputs"].items()}
    return store, result.key.key, record, data


def blob_file(store: Store, digest: str) -> Path:
    path = Path(store.blob_path(digest))
    path.chmod(0o644)
    return path


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))


def test_verify_names_a_corrupt_blob_and_the_command_that_repairs_it(built, capsys):
    store, key, record, data = built
    digest = record["outputs"]["saxpy.spv"]["hash"]
    flip(blob_file(store, digest))
    before = tree_of(Path(store.root))
    for _ in range(2):  # reading changes nothing: it says the same again
        rc, out, _ = run(capsys, "verify", "--cache-dir", store.root)
        assert rc == 1 and out.splitlines()[1:] == [
            f"  CORRUPT blob {digest} (used by {key})",
            "found 1 corrupt blob; nothing was changed: `vyre-build cache verify --repair "
            f"--cache-dir {store.root}` repairs the cache (removes what is corrupt, rebuilds each "
            "entry that uses a lost blob)",
            "FAILED",
        ]
    assert tree_of(Path(store.root)) == before
    rc, out, _ = run(capsys, "verify", "--repair", "--cache-dir", store.root)
    assert rc == 0 and out.splitlines()[1:] == [
        f"  CORRUPT blob {digest} (used by {key})",
        f"  removed blob {digest}",
        f"  rebuilt entry {key}: blob {digest} written again",
        "found 1 corrupt blob: removed 1 blob; rebuilt 1 entry",
        "OK",
    ]
    assert store.get_blob(digest) == data["saxpy.spv"]
    rc, out, _ = run(capsys, "verify", "--cache-dir", store.root)
    assert rc == 0 and out.splitlines()[-1] == "OK"


def test_verify_rebuild_repairs_too_and_compares_the_rest(built, capsys):
    """The audit's repro: --rebuild said `1 identical` and FAILED, and FAILED ever after."""
    store, key, record, data = built
    digest = record["outputs"]["saxpy.wgsl"]["hash"]
    flip(blob_file(store, digest))
    src = Path(store.root).parent / "kernels" / "saxpy2.py"
    src.write_text(SAXPY.read_text().replace("def saxpy", "def saxpy2").replace("+ y", "- y"))
    other = build_kernel_file(str(src), str(src.parent / "out"), store=store).key.key
    rc, out, _ = run(capsys, "verify", "--rebuild", "--json", "--cache-dir", store.root)
    report = json.loads(out)
    assert rc == 0 and report["ok"]
    assert report["bad_blobs"] == [{"blob": digest, "state": "corrupt", "keys": [key]}]
    assert report["repair"]["removed_blobs"] == [digest]
    assert [e["key"] for e in report["repair"]["rebuilt"]] == [key]
    assert [(r["key"], r["status"]) for r in report["rebuilds"]] == [(other, "same")]
    assert store.get_blob(digest) == data["saxpy.wgsl"]
    assert run(capsys, "verify", "--cache-dir", store.root)[0] == 0


def test_a_missing_blob_is_reported_by_verify_and_by_a_build_and_repaired(built, tmp_path, capsys):
    store, key, record, data = built
    digest = record["outputs"]["saxpy.kdesc"]["hash"]
    blob_file(store, digest).unlink()
    rc, out, _ = run(capsys, "verify", "--cache-dir", store.root)
    assert rc == 1 and f"  MISSING blob {digest} (used by {key})" in out.splitlines()
    assert "found 1 missing blob; nothing was changed" in out
    rc, out, _ = run(capsys, "verify", "--repair", "--cache-dir", store.root)
    assert rc == 0 and out.splitlines()[-3:] == [
        f"  rebuilt entry {key}: blob {digest} written again",
        "found 1 missing blob: rebuilt 1 entry",
        "OK",
    ]
    assert store.get_blob(digest) == data["saxpy.kdesc"]
    # A build that meets the missing blob says so and counts it, as for a corrupt one.
    blob_file(store, digest).unlink()
    fresh = Store(store.root)
    assert fresh.lookup(key) is None
    assert capsys.readouterr().err.splitlines() == [
        f"vyre cache: warning: blob {digest} (of key {key}) is missing: its action record "
        "names it but the cache has no such blob; the entry will be rebuilt"
    ]
    assert fresh.counts["corrupt"] == 1 and fresh.counts["local_misses"] == 1
    # A record evicted with its blobs (a concurrent gc) is a plain miss, not damage.
    os.unlink(store.record_path(key))
    assert fresh.lookup(key) is None and capsys.readouterr().err == ""


def test_an_entry_whose_input_blob_is_lost_is_removed_and_rebuilt_by_the_next_build(
    built, tmp_path, capsys
):
    store, key, record, _ = built
    source = next(p for p in record["manifest"]["parts"] if p["kind"] == "source")
    flip(blob_file(store, source["hash"]))
    rc, out, _ = run(capsys, "verify", "--repair", "--cache-dir", store.root)
    assert rc == 0 and out.splitlines()[-4:] == [
        f"  removed blob {source['hash']}",
        f"  removed entry {key}: its input blob {source['hash']} is lost, so it cannot be "
        "rebuilt here; the next build that needs it compiles it",
        "found 1 corrupt blob: removed 1 blob; removed 1 entry that cannot be rebuilt here "
        "(the next build compiles them)",
        "OK",
    ]
    assert store.get_record(key) is None
    assert run(capsys, "verify", "--cache-dir", store.root)[0] == 0
    src = tmp_path / "kernels" / "saxpy.py"
    again = build_kernel_file(str(src), str(tmp_path / "out2"), store=Store(store.root))
    assert not again.hit and again.key.key == key
    assert run(capsys, "verify", "--cache-dir", store.root)[0] == 0


def test_repair_rebuilds_a_record_with_the_wrong_outputs_and_removes_unreadable_ones(built, capsys):
    store, key, record, _ = built
    refs = {n: r for n, r in record["outputs"].items() if n != "saxpy.spv"}
    bad = make_record(key, record["manifest"], refs, record["info"])
    Path(store.record_path(key)).chmod(0o644)
    store.put_record_bytes(key, canonical_json(bad) + b"\n")
    broken = stored(store, 7)
    Path(store.record_path(broken)).write_bytes(b"[" * 100000)
    rc, out, _ = run(capsys, "verify", "--repair", "--cache-dir", store.root)
    assert rc == 0
    lines = out.splitlines()
    assert f"  removed record {broken}" in lines
    assert f"  rebuilt entry {key}: its record replaced, with the outputs of its step" in lines
    assert lines[-2:] == [
        "found 2 corrupt records: removed 1 record; rebuilt 1 entry",
        "OK",
    ]
    assert sorted(store.get_record(key)["outputs"]) == sorted(record["outputs"])
    assert not os.path.exists(store.record_path(broken))
    assert run(capsys, "verify", "--cache-dir", store.root)[0] == 0


def test_a_repair_that_cannot_remove_says_so_and_fails(built, capsys, monkeypatch):
    import vyre_build.commands.cache_verify as cache_verify

    store, key, record, _ = built
    digest = record["outputs"]["saxpy.spv"]["hash"]
    flip(blob_file(store, digest))
    monkeypatch.setattr(cache_verify, "remove_entry", lambda path: "Read-only file system")
    rc, out, _ = run(capsys, "verify", "--repair", "--cache-dir", store.root)
    assert rc == 1 and out.splitlines()[-3:] == [
        f"  CANNOT REPAIR blob {digest}: cannot be removed (Read-only file system)",
        "found 1 corrupt blob: could not repair 1 (see above)",
        "FAILED",
    ]


def test_unusable_blobs_are_removed_by_repair(built, capsys):
    store, key, record, data = built
    digest = record["outputs"]["saxpy.meta.json"]["hash"]
    path = blob_file(store, digest)
    path.unlink()
    path.mkdir()
    (path / "x").write_bytes(b"")
    assert run(capsys, "verify", "--cache-dir", store.root)[0] == 1
    rc, out, _ = run(capsys, "verify", "--repair", "--cache-dir", store.root)
    assert rc == 0 and "found 1 unusable blob: removed 1 blob; rebuilt 1 entry" in out
    assert store.get_blob(digest) == data["saxpy.meta.json"]
    assert content_hash(path.read_bytes()) == digest
