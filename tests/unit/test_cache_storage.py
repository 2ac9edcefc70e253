"""The store survives its own storage: whatever sits where an entry should be, records
nested too deep or too large, unreadable files, a read-only or full file system, and
temp files left by killed writers. Nothing is served that is not intact, nothing raises
out of a lookup, a store, a verify or a build, and every problem is one clear line."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from vyre_build.build.step import build_kernel_file
from vyre_build.cache.key import content_hash, make_action_key
from vyre_build.cache.store import Store
from vyre_build.cli import main

IDENT = {"version": "0.1.0", "source_hash": "ab" * 32}


def key_of(i: int = 0):
    return make_action_key(
        identity=IDENT,
        source=("k.py", b"src %d" % i),
        imports=[],
        variants=[],
        targets=["wgsl"],
        options={},
    )


def stored(store: Store, i: int = 0, data: bytes | None = None):
    k = key_of(i)
    outputs = {f"k{i}.wgsl": data if data is not None else b"wgsl %d" % i}
    store.put_record(k.key, k.manifest, outputs)
    return k, outputs


def err_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line]


def mount(*args: str) -> bool:
    """Run mount(8) (root in CI); False where mounting is refused here."""
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@contextlib.contextmanager
def mounted_tmpfs(path: Path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    if not mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)):
        yield False
        return
    try:
        yield True
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@contextlib.contextmanager
def read_only_view(src: Path, view: Path):
    """`view`: `src` bind-mounted read-only (False where mounting is refused)."""
    view.mkdir(parents=True, exist_ok=True)
    if not mount("--bind", str(src), str(view)):
        yield False
        return
    try:
        yield mount("-o", "remount,ro,bind", str(view))
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)


@pytest.mark.parametrize("obstacle", ["directory", "fifo", "symlink", "device"])
def test_whatever_sits_where_a_blob_should_be_is_reported_removed_and_replaced(
    tmp_path, capsys, obstacle
):
    store = Store(tmp_path / "c")
    k, outputs = stored(store)
    digest = content_hash(outputs["k0.wgsl"])
    path = Path(store.blob_path(digest))
    good = path.read_bytes()
    path.chmod(0o644)
    path.unlink()
    if obstacle == "directory":
        (path / "inner").mkdir(parents=True)
        what = "a directory"
    elif obstacle == "fifo":
        os.mkfifo(path)  # opening it for reading must not block
        what = "a FIFO"
    elif obstacle == "symlink":
        (tmp_path / "elsewhere").write_bytes(good)  # even the right bytes: not followed
        path.symlink_to(tmp_path / "elsewhere")
        what = "a symbolic link"
    else:
        if os.geteuid() != 0:
            pytest.skip("creating a device node needs root")
        os.mknod(path, 0o600 | 0o020000, os.makedev(1, 3))  # like /dev/null
        what = "a character device"
    assert store.lookup(k.key) is None
    assert err_lines(capsys) == [
        f"vyre cache: warning: blob {digest} (of key {k.key}) is corrupt: it is {what}, not "
        "a file; removed, the entry will be rebuilt"
        if obstacle != "symlink"
        else f"vyre cache: warning: blob {digest} (of key {k.key}) is corrupt: it is a "
        "symbolic link, not a file; removed, the entry will be rebuilt"
    ]
    assert not os.path.lexists(path) and store.counts["corrupt"] == 1
    stored(store)
    assert store.lookup(k.key) == outputs


def test_a_directory_where_a_record_or_a_store_directory_should_be(tmp_path, capsys):
    store = Store(tmp_path / "c")
    k, outputs = stored(store)
    record = Path(store.record_path(k.key))
    record.unlink()
    record.mkdir()
    assert store.lookup(k.key) is None
    assert "is corrupt: it is a directory, not a file; removed" in err_lines(capsys)[0]
    stored(store)
    assert store.lookup(k.key) == outputs
    k2 = key_of(2)
    shard = Path(store.blob_path(content_hash(b"x2")).rsplit("/", 1)[0])
    shard.parent.mkdir(parents=True, exist_ok=True)
    shard.write_bytes(b"not a directory")  # a file where cas/<2 hex>/ should be
    store.put_record(k2.key, k2.manifest, {"k2.wgsl": b"x2"})
    assert store.lookup(k2.key) == {"k2.wgsl": b"x2"} and store.writable


def test_records_nested_too_deep_or_too_large_are_refused_without_reading_them(tmp_path, capsys):
    store = Store(tmp_path / "c")
    k, _ = stored(store)
    path = Path(store.record_path(k.key))
    path.write_bytes(b"[" * 200000 + b"]" * 200000)
    assert store.lookup(k.key) is None
    assert err_lines(capsys) == [
        f"vyre cache: warning: action record {k.key} is corrupt: its JSON is nested too "
        "deeply; removed, the entry will be rebuilt"
    ]
    k, _ = stored(store)
    path.write_bytes(b" " * (5 << 20) + b"{}")
    assert store.lookup(k.key) is None
    assert err_lines(capsys) == [
        f"vyre cache: warning: action record {k.key} is corrupt: it is {(5 << 20) + 2} bytes, "
        "over the 4194304-byte limit; removed, the entry will be rebuilt"
    ]
    k, outputs = stored(store)
    blob = Path(store.blob_path(content_hash(outputs["k0.wgsl"])))
    blob.chmod(0o644)
    blob.write_bytes(outputs["k0.wgsl"] * 1000)  # larger than the record says
    assert store.lookup(k.key) is None
    assert "over the 6-byte limit" in err_lines(capsys)[0]


def test_verify_reports_every_kind_of_damage_without_a_traceback(tmp_path, capsys):
    store = Store(tmp_path / "c")
    k0, out0 = stored(store, 0)
    k1, _ = stored(store, 1)
    k2, out2 = stored(store, 2)
    Path(store.record_path(k1.key)).write_bytes(b"[" * 100000)
    blob = Path(store.blob_path(content_hash(out2["k2.wgsl"])))
    blob.chmod(0o644)
    blob.unlink()
    blob.mkdir()
    assert main(["cache", "verify", "--cache-dir", str(tmp_path / "c")]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err and out.err == ""
    lines = out.out.splitlines()
    assert f"  CORRUPT record {k1.key}: its JSON is nested too deeply" in lines
    assert (
        f"  Unusable (it is a directory, not a file) blob {content_hash(out2['k2.wgsl'])} "
        f"(used by {k2.key})" in lines
    )
    assert lines[-1] == "FAILED" and blob.is_dir()  # verify reads, never deletes
    assert store.lookup(k0.key) == out0


def test_unreadable_files_are_one_line_each(tmp_path, capsys, monkeypatch):
    store = Store(tmp_path / "c")
    k, outputs = stored(store)
    path = store.blob_path(content_hash(outputs["k0.wgsl"]))
    if os.geteuid() != 0:
        os.chmod(path, 0)
    else:  # root reads anything: make the open fail as it does for a user without rights
        real_open = os.open

        def refusing(p, *a, **kw):
            if p == path:
                raise PermissionError(errno.EACCES, "Permission denied", p)
            return real_open(p, *a, **kw)

        monkeypatch.setattr(os, "open", refusing)
    assert store.lookup(k.key) is None
    assert err_lines(capsys)[0] == (
        f"vyre cache: warning: blob {content_hash(outputs['k0.wgsl'])} (of key {k.key}) is "
        "corrupt: it cannot be opened (Permission denied); removed, the entry will be rebuilt"
    )


def test_a_read_only_cache_serves_hits_stores_nothing_and_warns_once(tmp_path, capsys):
    warm = Store(tmp_path / "c")
    k, outputs = stored(warm)
    with read_only_view(tmp_path / "c", tmp_path / "ro") as mounted:
        if not mounted:
            pytest.skip("no read-only bind mount here (needs root): covered by injection below")
        store = Store(tmp_path / "ro")
        assert store.lookup(k.key) == outputs
        k2 = key_of(2)
        assert store.put_record(k2.key, k2.manifest, {"k2.wgsl": b"x"}) is None
        assert store.put_blob(b"more") is None
        assert store.finish_build("ro build") is not None  # counted, but nothing written
        assert err_lines(capsys) == [
            f"vyre cache: warning: cache {store.root} is on a read-only file system: serving "
            "hits, storing nothing more in this build"
        ]
        assert store.lookup(k.key) == outputs and not store.writable
        assert not os.path.exists(tmp_path / "c" / "stats.json")


def test_a_full_disk_during_a_store_leaves_nothing_corrupt(tmp_path, capsys, monkeypatch):
    with mounted_tmpfs(tmp_path / "small", "64k") as mounted:
        root = tmp_path / "small" / "c" if mounted else tmp_path / "c"
        store = Store(root)
        if not mounted:  # no tmpfs here: the disk fills up after 3 writes
            import vyre_build.cache.writer as writer_module

            real = writer_module.atomic_write
            calls = []

            def filling(path, data, **kw):
                calls.append(path)
                if len(calls) > 3:
                    raise OSError(errno.ENOSPC, "No space left on device", path)
                return real(path, data, **kw)

            monkeypatch.setattr(writer_module, "atomic_write", filling)
        kept = []
        for i in range(40):
            k = key_of(i)
            # As the build step stores: the input first, then the outputs and the record.
            if store.put_blob(b"src %d" % i) is None:
                continue
            if store.put_record(k.key, k.manifest, {f"k{i}.wgsl": os.urandom(3000)}) is not None:
                kept.append(k.key)
        lines = err_lines(capsys)
        assert kept and len(lines) == 1
        assert lines[0].startswith(f"vyre cache: warning: cache {root} is full")
        assert "No space left on device" in lines[0] and not store.writable
        assert lines[0].endswith(": serving hits, storing nothing more in this build")
        fresh = Store(root)
        assert sorted(kept) == sorted(fresh.iter_keys())  # no record without its blobs
        for key in kept:
            assert fresh.lookup(key) is not None
        assert [p for p in root.rglob("*") if p.name.startswith(".tmp.")] == []
        assert main(["cache", "verify", "--cache-dir", str(root)]) == 0
        capsys.readouterr()


def test_stale_temp_files_are_counted_and_removed_by_gc_and_after_builds(tmp_path, capsys):
    store = Store(tmp_path / "c")
    stored(store)
    old = time.time() - 7200
    leftovers = []
    for top in ("ac/ab", "cas/cd", "history", "scan"):
        d = tmp_path / "c" / top
        d.mkdir(parents=True, exist_ok=True)
        p = d / f".tmp.x.{len(leftovers)}"
        p.write_bytes(b"half")
        os.utime(p, (old, old))
        leftovers.append(p)
    fresh = tmp_path / "c" / "ac" / ".tmp.young"
    fresh.write_bytes(b"in flight")
    usage = store.usage()
    assert usage["temp_files"] == 5 and usage["stale_temp_files"] == 4
    assert main(["cache", "stats", "--cache-dir", str(tmp_path / "c")]) == 0
    assert "  Temp files:      5 (4 older than 1 h, removed by `vyre-build cache gc`)" in (
        capsys.readouterr().out.splitlines()
    )
    assert main(["cache", "gc", "--cache-dir", str(tmp_path / "c"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed_tmp_files"] == 4
    assert not any(p.exists() for p in leftovers) and fresh.exists()
    # The collection after a build runs when the last one is over a day old.
    os.utime(fresh, (old, old))
    stats_path = tmp_path / "c" / "stats.json"
    stats = json.loads(stats_path.read_text())
    stats["last_gc"] = time.time() - 2 * 86400
    stats_path.write_text(json.dumps(stats))
    build = Store(tmp_path / "c")
    stored(build, 7)
    build.finish_build("a build", max_size=5 << 30)
    assert not fresh.exists() and Store(tmp_path / "c").usage()["temp_files"] == 0


def test_a_build_over_a_store_in_trouble_still_builds(tmp_path, capsys, monkeypatch):
    src = tmp_path / "k.py"
    src.write_text(
        "from vyre_build.lang import Buffer, global_id, kernel, u32\n\n\n"
        "@kernel(workgroup_size=64)\n"
        'def kt(x: Buffer[u32], y: Buffer[u32, "w"]):\n'
        "    i = global_id().x\n"
        "    if i < len(y):\n"
        "        y[i] = x[i] + 1\n"
    )
    store = Store(tmp_path / "c")
    first = build_kernel_file(str(src), str(tmp_path / "o1"), store=store, targets=["wgsl"])
    record = Path(store.record_path(first.key.key))
    record.write_bytes(b"[" * 50000)
    second = build_kernel_file(str(src), str(tmp_path / "o2"), store=store, targets=["wgsl"])
    assert not second.hit and "nested too deeply" in capsys.readouterr().err
    assert (tmp_path / "o1" / "kt.wgsl").read_bytes() == (tmp_path / "o2" / "kt.wgsl").read_bytes()
    assert build_kernel_file(str(src), str(tmp_path / "o3"), store=store, targets=["wgsl"]).hit
