"""The persisted pipeline cache file (runtime/pipeline_cache.py), with no device: where it
lives, what it accepts, what it ignores (with one warning), saving, merging, bounds, and
several processes saving into one directory at once."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import warnings

import blake3
import pytest

from vyre_build.runtime.backends.vulkan.pipeline_cache import (
    MAGIC,
    PipelineCacheFile,
    PipelineCacheWarning,
    cache_dir,
    user_cache_dir,
)

UUID = bytes(range(16))
KEY = (0x10DE, 0x2335, 0x91234567, UUID)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def driver_blob(payload: bytes = b"pipelines", vendor=0x10DE, device=0x2335, uuid=UUID) -> bytes:
    """What vkGetPipelineCacheData returns: VkPipelineCacheHeaderVersionOne, then data."""
    return struct.pack("<IIII16s", 32, 1, vendor, device, uuid) + payload


def cache(tmp_path, **kw) -> PipelineCacheFile:
    return PipelineCacheFile(str(tmp_path / "pipelines"), *KEY, **kw)


def saved(f: PipelineCacheFile, blob: bytes, merged=None) -> bool:
    return f.save(lambda: blob, ([] if merged is None else merged).append)


def test_the_file_is_named_by_device_driver_and_uuid(tmp_path):
    f = cache(tmp_path)
    assert os.path.basename(f.path) == (
        "vk-10de-2335-91234567-000102030405060708090a0b0c0d0e0f.bin"
    )


def test_directory_settings(monkeypatch, tmp_path):
    monkeypatch.delenv("VYRE_PIPELINE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert user_cache_dir() == str(tmp_path / "vyre_build" / "pipelines")
    assert cache_dir(None) == user_cache_dir()
    assert cache_dir(tmp_path / "mine") == str(tmp_path / "mine")
    assert cache_dir(False) is None and cache_dir("off") is None
    monkeypatch.setenv("VYRE_PIPELINE_CACHE", str(tmp_path / "env"))
    assert cache_dir(None) == str(tmp_path / "env")
    assert cache_dir(tmp_path / "arg") == str(tmp_path / "arg")  # the argument wins
    for off in ("0", "off", "OFF", "false", "no"):
        monkeypatch.setenv("VYRE_PIPELINE_CACHE", off)
        assert cache_dir(None) is None


def test_save_then_load_in_a_later_process_and_nothing_half_written(tmp_path):
    f = cache(tmp_path)
    assert f.load() is None  # no file yet: no warning either
    blob = driver_blob(b"x" * 1000)
    assert saved(f, blob)
    data = open(f.path, "rb").read()
    assert data == MAGIC + blake3.blake3(blob).digest() + blob
    assert sorted(os.listdir(f.directory)) == [
        os.path.basename(f.path),
        os.path.basename(f.path) + ".lock",
    ]
    assert cache(tmp_path).load() == blob


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda d: d[:20], "not a vyre_build pipeline cache file"),
        (lambda d: b"XXXXXXXX" + d[8:], "not a vyre_build pipeline cache file"),
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "blake3 mismatch (corrupt)"),
    ],
)
def test_a_corrupt_file_is_ignored_with_one_warning_and_replaced(tmp_path, damage, why):
    f = cache(tmp_path)
    saved(f, driver_blob())
    with open(f.path, "rb") as fh:
        data = fh.read()
    with open(f.path, "wb") as fh:
        fh.write(damage(data))
    g = cache(tmp_path)
    with pytest.warns(PipelineCacheWarning) as caught:
        assert g.load() is None
        g.load()  # one warning per file and process
    assert [str(w.message) for w in caught] == [
        f"vyre_build: ignoring the pipeline cache {g.path}: {why}; it will be replaced"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert saved(g, driver_blob(b"fresh"))
    assert cache(tmp_path).load() == driver_blob(b"fresh")


@pytest.mark.parametrize(
    "blob",
    [
        driver_blob(vendor=0x1002),
        driver_blob(device=0x1),
        driver_blob(uuid=bytes(16)),
        struct.pack("<IIII16s", 32, 2, 0x10DE, 0x2335, UUID),
    ],
)
def test_a_blob_of_another_device_or_driver_is_ignored(tmp_path, blob):
    f = cache(tmp_path)
    os.makedirs(f.directory)
    open(f.path, "wb").write(MAGIC + blake3.blake3(blob).digest() + blob)
    with pytest.warns(PipelineCacheWarning, match="it was written for another device or driver"):
        assert f.load() is None


def test_size_bounds(tmp_path):
    big = cache(tmp_path, max_bytes=4096)
    with pytest.warns(PipelineCacheWarning, match="over the 4096-byte bound"):
        assert not saved(big, driver_blob(b"x" * 5000))
    assert not os.path.exists(big.path)
    saved(cache(tmp_path), driver_blob(b"x" * 5000))  # written by a process with no bound
    with pytest.warns(PipelineCacheWarning, match="5072 bytes is over the 4096-byte bound"):
        assert big.load() is None


def test_the_directory_is_kept_under_its_bound_oldest_first(tmp_path):
    directory = str(tmp_path / "pipelines")
    files = [
        PipelineCacheFile(directory, 0x10DE, 0x2335, v, UUID, max_bytes=3000) for v in (1, 2, 3)
    ]
    for i, f in enumerate(files):
        f.key = (0x10DE, 0x2335, UUID)
        assert saved(f, driver_blob(b"x" * 900))
        os.utime(f.path, (1000 + i, 1000 + i))
    fourth = PipelineCacheFile(directory, 0x10DE, 0x2335, 4, UUID, max_bytes=3000)
    assert saved(fourth, driver_blob(b"x" * 900))
    left = sorted(n for n in os.listdir(directory) if n.endswith(".bin"))
    assert left == sorted(os.path.basename(f.path) for f in (files[1], files[2], fourth))


def test_saving_merges_what_another_process_saved_since_loading(tmp_path):
    mine, theirs = cache(tmp_path), cache(tmp_path)
    saved(mine, driver_blob(b"first"))
    mine.load()
    theirs.load()
    saved(theirs, driver_blob(b"theirs"))
    merged = []
    saved(mine, driver_blob(b"mine"), merged)
    assert merged == [driver_blob(b"theirs")]  # handed to the device to merge before saving
    merged.clear()
    saved(mine, driver_blob(b"mine again"), merged)
    assert merged == []  # the file on disk is the one this process wrote


def test_an_unwritable_directory_is_a_warning_not_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    f = PipelineCacheFile(str(blocker / "pipelines"), *KEY)
    with pytest.warns(PipelineCacheWarning, match="cannot save the pipeline cache"):
        assert not saved(f, driver_blob())


def test_several_processes_saving_at_once_leave_one_sound_file(tmp_path):
    script = textwrap.dedent(f"""
        import struct, sys
        sys.path.insert(0, {ROOT!r})
        from vyre_build.runtime.backends.vulkan.pipeline_cache import PipelineCacheFile
        f = PipelineCacheFile({str(tmp_path / "pipelines")!r}, 0x10DE, 0x2335, 0x91234567, bytes(range(16)))
        me = int(sys.argv[1])
        for i in range(40):
            f.load()
            blob = struct.pack("<IIII16s", 32, 1, 0x10DE, 0x2335, bytes(range(16)))
            assert f.save(lambda: blob + bytes([me]) * (1000 + i), lambda theirs: None)
    """)
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(n)], stderr=subprocess.PIPE)
        for n in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        blob = cache(tmp_path).load()
    assert blob is not None and blob[32:] == bytes([blob[32]]) * (len(blob) - 32)
    assert [n for n in os.listdir(tmp_path / "pipelines") if n.startswith(".tmp.")] == []


# --- special files: never block, never read past the bound ------------------------------

SPECIAL_SCRIPT = """
import json, os, resource, struct, sys, warnings
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # /dev/zero read whole: MemoryError
sys.path.insert(0, {root!r})
from vyre_build.runtime.backends.vulkan.pipeline_cache import PipelineCacheFile
directory, kind = sys.argv[1], sys.argv[2]
f = PipelineCacheFile(directory, 0x10DE, 0x2335, 0x91234567, bytes(range(16)))
os.makedirs(directory)
if kind == "fifo":
    os.mkfifo(f.path)
elif kind == "lock-fifo":
    os.mkfifo(f.path + ".lock")
elif kind == "directory":
    os.mkdir(f.path)
else:
    os.symlink(kind, f.path)
blob = struct.pack("<IIII16s", 32, 1, 0x10DE, 0x2335, bytes(range(16))) + b"mine"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    loaded = f.load()
    saved = f.save(lambda: blob, lambda theirs: None)
    again = PipelineCacheFile(directory, 0x10DE, 0x2335, 0x91234567, bytes(range(16))).load()
print(json.dumps({{
    "loaded": loaded is not None,
    "saved": saved,
    "regular": os.path.isfile(f.path) and not os.path.islink(f.path),
    "again": again == blob,
    "warnings": [str(w.message) for w in caught],
}}))
"""


def special(tmp_path, kind: str) -> dict:
    """Load and save with the cache file (or its lock) made `kind`, in a subprocess bounded
    in time and memory, so that a regression fails instead of hanging or swapping."""
    directory = str(tmp_path / "pipelines")
    done = subprocess.run(
        [sys.executable, "-c", SPECIAL_SCRIPT.format(root=ROOT), directory, kind],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
@pytest.mark.parametrize(
    "kind, what",
    [
        ("fifo", "a FIFO"),  # opened for reading, it blocked until a writer came
        ("/dev/zero", "a character device"),  # read without bound
        ("/dev/urandom", "a character device"),
        ("directory", "a directory"),
    ],
)
def test_a_special_file_is_ignored_with_one_warning_and_never_read(tmp_path, kind, what):
    report = special(tmp_path, kind)
    path = str(tmp_path / "pipelines" / os.path.basename(cache(tmp_path).path))
    ignored = f"vyre_build: ignoring the pipeline cache {path}: it is {what}, not a regular file"
    if kind == "directory":  # nothing can be renamed over a directory
        assert report == {
            "loaded": False,
            "saved": False,
            "regular": False,
            "again": False,
            "warnings": [
                f"{ignored}; it will be replaced",
                f"vyre_build: cannot save the pipeline cache {path}: Is a directory",
                f"{ignored}; it will be replaced",
            ],
        }
        return
    # The save renames a new file over the name: nothing is written into the special file.
    assert report == {
        "loaded": False,
        "saved": True,
        "regular": True,
        "again": True,
        "warnings": [f"{ignored}; it will be replaced"],
    }


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
def test_a_lock_file_that_is_not_a_regular_file_skips_the_save_with_a_warning(tmp_path):
    report = special(tmp_path, "lock-fifo")
    path = str(tmp_path / "pipelines" / os.path.basename(cache(tmp_path).path))
    assert report == {
        "loaded": False,
        "saved": False,
        "regular": False,
        "again": False,
        "warnings": [
            f"vyre_build: cannot save the pipeline cache {path}: its lock file {path}.lock is "
            "a FIFO, not a regular file"
        ],
    }


def test_the_read_is_bounded_by_the_directory_limit(tmp_path, monkeypatch):
    # A file that grows while it is read (fstat said it fits) is still read only up to the bound.
    f = cache(tmp_path, max_bytes=4096)
    saved(cache(tmp_path), driver_blob(b"x" * 100))
    sizes = []
    real_read = os.read

    def growing(fd, n):
        sizes.append(n)
        return b"y" * n  # an endless file

    monkeypatch.setattr(os, "read", growing)
    with pytest.warns(PipelineCacheWarning) as caught:
        assert f.load() is None
    monkeypatch.setattr(os, "read", real_read)
    assert sum(sizes) == 4097
    assert [str(w.message) for w in caught] == [
        f"vyre_build: ignoring the pipeline cache {f.path}: it grew over the 4096-byte bound "
        "while it was read; it will be replaced"
    ]
