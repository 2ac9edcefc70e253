"""Unit tests of the artifact cache: keys, store integrity, gc, history, build step.

No SCons and no real compiler: the build step is driven by a small stand-in compiler
module written into a temp dir (same API as vyre_build.compiler), counting its calls.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vyre_build.build.step import build_kernel_file, compute_key, rebuild_record
from vyre_build.cache.history import output_name
from vyre_build.cache.key import content_hash, diff_manifests, make_action_key
from vyre_build.cache.stats import read_stats
from vyre_build.cache.store import Store
from vyre_build.core.errors import CacheError

IDENT = {"version": "0.1.0", "source_hash": "ab" * 32}

FAKE_COMPILER = '''
"""Stand-in compiler: one kernel per `# kernel NAME` line; outputs derived from the text."""
import json
import os
calls = []

class CK:
    def __init__(self, stem, arts):
        self.stem, self.artifacts = stem, arts

def _helpers(path):
    base = os.path.dirname(path)
    out = []
    for line in open(path).read().splitlines():
        if line.startswith("# import "):
            out.append(os.path.join(base, line.split()[2]))
    return out

def kernel_dependencies(path, root=None):
    seen, todo = set(), _helpers(os.path.abspath(path))
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo += _helpers(p)
    return sorted(seen)

def list_kernels(path, root=None):
    return [l.split()[2] for l in open(path).read().splitlines() if l.startswith("# kernel ")]

def compiler_identity():
    return {"version": "fake-1", "source_hash": "00" * 32}

def compile_file(path, *, root=None, targets=("wgsl", "spirv", "kdesc"), options=None):
    calls.append(os.path.basename(path))
    text = open(path).read() + "".join(open(d).read() for d in kernel_dependencies(path))
    out = []
    for stem in list_kernels(path):
        name, _, variant = stem.partition(".")
        meta = {"name": name, "variant": variant or None, "id": stem}
        arts = {".meta.json": (json.dumps(meta, sort_keys=True) + "\\n").encode()}
        if "wgsl" in targets:
            arts[".wgsl"] = ("// %s %s %r\\n" % (stem, len(text), sorted((options or {}).items()))).encode()
        if "spirv" in targets:
            arts[".spv"] = bytes([len(text) % 256, 3, 2, 7])
        if "kdesc" in targets:
            arts[".kdesc"] = stem.encode() * 2
        out.append(CK(stem, arts))
    return out
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
    mod_dir = tmp_path / "mods"
    mod_dir.mkdir()
    (mod_dir / "fake_vyre_compiler.py").write_text(FAKE_COMPILER)
    monkeypatch.syspath_prepend(str(mod_dir))
    sys.modules.pop("fake_vyre_compiler", None)
    import fake_vyre_compiler

    yield fake_vyre_compiler
    sys.modules.pop("fake_vyre_compiler", None)


def tree(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root


def build(src, out, store, **kw):
    return build_kernel_file(str(src), str(out), store=store, compiler="fake_vyre_compiler", **kw)


# --- keys ------------------------------------------------------------------------------


def key_of(**over):
    args = {
        "identity": IDENT,
        "source": ("k.py", b"src"),
        "imports": [("h.py", b"helper")],
        "variants": [],
        "targets": ["wgsl", "spirv"],
        "options": {"a": 1, "b": [2]},
    }
    args.update(over)
    return make_action_key(**args)


def test_key_is_canonical_and_order_independent():
    a = key_of()
    b = key_of(targets=["spirv", "wgsl", "wgsl"], options={"b": [2], "a": 1})
    assert a.key == b.key and len(a.key) == 64
    assert (
        key_of(imports=[("x.py", b"1"), ("h.py", b"2")]).key
        == key_of(imports=[("h.py", b"2"), ("x.py", b"1")]).key
    )


@pytest.mark.parametrize(
    "change",
    [
        {"source": ("k.py", b"src!")},
        {"imports": [("h.py", b"helper!")]},
        {"variants": [("variants.yaml", b"k: {}")]},
        {"targets": ["wgsl"]},
        {"options": {"a": 2, "b": [2]}},
        {"identity": dict(IDENT, source_hash="cd" * 32)},
        {"source": ("other.py", b"src")},
    ],
)
def test_every_input_changes_the_key(change):
    assert key_of(**change).key != key_of().key


def test_key_rejects_absolute_paths_and_diff_names_parts():
    with pytest.raises(CacheError, match="relative POSIX path"):
        key_of(source=("/abs/k.py", b"x"))
    diff = diff_manifests(
        key_of().manifest, key_of(imports=[("h.py", b"x")], options={"a": 3}).manifest
    )
    assert [d["part"] for d in diff] == ["import h.py", "options"]
    assert diff[0]["old"] == content_hash(b"helper") and diff[0]["new"] == content_hash(b"x")
    assert diff[1]["old_value"] == {"a": 1, "b": [2]} and diff[1]["new_value"] == {"a": 3}


# --- store -----------------------------------------------------------------------------


def test_blob_roundtrip_and_corruption_is_reported_removed_never_served(tmp_path, capsys):
    store = Store(tmp_path / "c")
    h = store.put_blob(b"hello")
    assert h == content_hash(b"hello") and store.get_blob(h) == b"hello"
    path = store.blob_path(h)
    with open(path, "r+b") as f:
        f.write(b"j")
    assert store.get_blob(h, key="k" * 64) is None
    err = capsys.readouterr().err
    assert f"blob {h} (of key {'k' * 64}) is corrupt" in err
    assert not os.path.exists(path) and store.counts["corrupt"] == 1


def test_record_lookup_hit_miss_and_tampered_record(tmp_path, capsys):
    store = Store(tmp_path / "c")
    k = key_of()
    assert store.lookup(k.key) is None
    store.put_record(k.key, k.manifest, {"a.wgsl": b"A", "a.meta.json": b"{}"})
    assert store.lookup(k.key) == {"a.wgsl": b"A", "a.meta.json": b"{}"}
    assert store.counts["local_hits"] == 1 and store.counts["local_misses"] == 1
    path = store.record_path(k.key)
    rec = json.loads(Path(path).read_text())
    rec["outputs"]["a.wgsl"]["hash"] = content_hash(b"evil")
    Path(path).write_text(json.dumps(rec))
    assert store.lookup(k.key) is None
    assert capsys.readouterr().err == (
        f"vyre cache: warning: action record {k.key} is corrupt: checksum mismatch; "
        "removed, the entry will be rebuilt\n"
    )
    assert not os.path.exists(path)


def test_no_temp_files_left_and_stats_flush(tmp_path):
    store = Store(tmp_path / "c")
    k = key_of()
    store.put_record(k.key, k.manifest, {"x.kdesc": b"1"})
    store.lookup(k.key)
    build = store.finish_build("t", {"remote_hits": 2})
    assert build["local_hits"] == 1 and build["stored"] == 1 and build["remote_hits"] == 2
    assert store.finish_build("null build") is None  # counted nothing: writes nothing
    stats = read_stats(Store(tmp_path / "c"))
    assert stats["overall"]["builds"] == 1 and stats["last_build"]["label"] == "t"
    assert stats["overall"]["remote_hits"] == 2
    leftovers = [n for _, _, names in os.walk(tmp_path) for n in names if ".tmp." in n]
    assert leftovers == []


def test_gc_evicts_least_recently_used_and_by_age(tmp_path):
    store = Store(tmp_path / "c")
    keys = []
    for i in range(3):
        k = key_of(options={"i": i})
        store.put_record(k.key, k.manifest, {f"k{i}.wgsl": bytes([i]) * 1000})
        keys.append(k.key)
    now = time.time()
    for i, key in enumerate(keys):  # key 0 used most recently, key 2 least
        os.utime(store.record_path(key), (now - 100 * (i + 1),) * 2)
    report = store.gc(max_size=store.usage()["total_bytes"] - 1, now=now + 1000)
    assert report["evicted_entries"] == [keys[2]]
    assert store.iter_keys() == sorted(keys[:2]) and store.usage()["blobs"] == 2
    report = store.gc(max_age_s=150, now=now)
    assert report["evicted_entries"] == [keys[1]] and store.iter_keys() == [keys[0]]
    with pytest.raises(CacheError, match="--max-size"):
        store.gc(max_size=-1)


def test_history_keeps_each_key_once_last_build_last_and_per_project(tmp_path):
    store = Store(tmp_path / "c", project=str(tmp_path / "p"))
    store.note_built(["build/saxpy"], "a" * 64)
    store.note_built(["build/saxpy"], "a" * 64)
    store.note_built(["build/saxpy", "build/add.f32"], "b" * 64)
    assert store.history("build/saxpy") == ["a" * 64, "b" * 64]
    store.finish_build()
    again = Store(tmp_path / "c", project=str(tmp_path / "p"))
    assert again.history("build/saxpy") == ["a" * 64, "b" * 64]
    again.note_built(["build/saxpy"], "a" * 64)  # a rebuild from an older key: it is last
    again.finish_build()
    assert Store(tmp_path / "c", project=str(tmp_path / "p")).history("build/saxpy") == [
        "b" * 64,
        "a" * 64,
    ]
    assert again.history("build/add.f32") == ["b" * 64] and again.history("nope") == []
    other = Store(tmp_path / "c", project=str(tmp_path / "elsewhere"))
    assert other.history("build/saxpy") == []


def test_resolve_key_prefix(tmp_path):
    store = Store(tmp_path / "c")
    k = key_of()
    store.put_record(k.key, k.manifest, {})
    assert store.resolve_key(k.key[:8]) == k.key
    with pytest.raises(CacheError, match="matches no entry"):
        store.resolve_key("0000" if not k.key.startswith("0000") else "ffff")
    with pytest.raises(CacheError, match="not a key"):
        store.resolve_key("xyz")


# --- build step ------------------------------------------------------------------------


def test_build_step_hit_skips_compiler_and_moved_tree_hits(tmp_path, fake):
    src = tree(
        tmp_path / "t1",
        {"k.py": "# import h.py\n# kernel saxpy\n# kernel add\n", "h.py": "# helper\n"},
    )
    store = Store(tmp_path / "c")
    r1 = build(src / "k.py", tmp_path / "o1", store)
    assert not r1.hit and fake.calls == ["k.py"] and r1.stems == ["add", "saxpy"]
    assert sorted(os.listdir(tmp_path / "o1")) == sorted(
        f"{s}{x}" for s in ("add", "saxpy") for x in (".wgsl", ".spv", ".kdesc", ".meta.json")
    )
    moved = tree(
        tmp_path / "elsewhere" / "t2", {"k.py": (src / "k.py").read_text(), "h.py": "# helper\n"}
    )
    r2 = build(moved / "k.py", tmp_path / "o2", store)
    assert r2.hit and r2.tier == "local" and r2.key.key == r1.key.key and fake.calls == ["k.py"]
    for name in os.listdir(tmp_path / "o1"):
        assert (tmp_path / "o1" / name).read_bytes() == (tmp_path / "o2" / name).read_bytes()
    (moved / "h.py").write_text("# helper edited\n")
    r3 = build(moved / "k.py", tmp_path / "o2", store)
    assert not r3.hit and fake.calls == ["k.py", "k.py"]
    diff = diff_manifests(r1.key.manifest, r3.key.manifest)
    assert [d["part"] for d in diff] == ["import h.py"]
    assert store.history(output_name(str(tmp_path / "o2"), "saxpy", None)) == [
        r1.key.key,
        r3.key.key,
    ]


def test_build_step_corrupt_blob_is_rebuilt_right(tmp_path, fake, capsys):
    src = tree(tmp_path / "t", {"k.py": "# kernel saxpy\n"})
    store = Store(tmp_path / "c")
    r1 = build(src / "k.py", tmp_path / "o", store)
    good = (tmp_path / "o" / "saxpy.wgsl").read_bytes()
    rec = store.get_record(r1.key.key)
    blob = store.blob_path(rec["outputs"]["saxpy.wgsl"]["hash"])
    data = bytearray(Path(blob).read_bytes())
    data[0] ^= 1
    Path(blob).write_bytes(bytes(data))
    r2 = build(src / "k.py", tmp_path / "o", store)
    assert not r2.hit and len(fake.calls) == 2
    assert "is corrupt" in capsys.readouterr().err
    assert (tmp_path / "o" / "saxpy.wgsl").read_bytes() == good
    assert store.get_blob(rec["outputs"]["saxpy.wgsl"]["hash"]) == good


def test_rebuild_record_reports_same_and_differs(tmp_path, fake):
    src = tree(tmp_path / "t", {"sub/k.py": "# import ../h.py\n# kernel k\n", "h.py": "#h\n"})
    store = Store(tmp_path / "c")
    r = build(src / "sub" / "k.py", tmp_path / "o", store, targets=("wgsl",))
    rec = store.get_record(r.key.key)
    assert rebuild_record(store, rec, "fake_vyre_compiler")["status"] == "same"
    wgsl_blob = rec["outputs"]["k.wgsl"]["hash"]
    # A non-reproducible compiler: its output changed for the same inputs.
    fake.compile_file.__globals__["len"] = lambda s: 999
    try:
        res = rebuild_record(store, rec, "fake_vyre_compiler")
    finally:
        del fake.compile_file.__globals__["len"]
    assert res["status"] == "differs"
    assert (
        res["differences"][0]["output"] == "k.wgsl" and res["differences"][0]["first_offset"] == 5
    )
    assert store.get_blob(wgsl_blob) is not None


def test_declared_outputs_must_match(tmp_path, fake):
    src = tree(tmp_path / "t", {"k.py": "# kernel a\n"})
    with pytest.raises(CacheError, match="declared outputs differ"):
        build(src / "k.py", tmp_path / "o", None, expected=["b.wgsl"])


def test_compute_key_includes_variants_yaml(tmp_path):
    src = tree(tmp_path / "t", {"k.py": "x", "variants.yaml": "k.py: {}\n"})
    k1, inputs = compute_key(str(src / "k.py"), [], ["wgsl"], None, IDENT)
    assert sorted(inputs) == ["k.py", "variants.yaml"]
    (src / "variants.yaml").write_text("k.py: {a: {}}\n")
    k2, _ = compute_key(str(src / "k.py"), [], ["wgsl"], None, IDENT)
    assert [d["part"] for d in diff_manifests(k1.manifest, k2.manifest)] == [
        "variants variants.yaml"
    ]


# --- scan memo ---------------------------------------------------------------------------


def test_scan_memo_reuses_only_while_every_input_is_unchanged(tmp_path):
    from vyre_build.cache.scan import ScanMemo

    src = tree(tmp_path / "t", {"k.py": "k", "h.py": "h"})
    k, h = str(src / "k.py"), str(src / "h.py")
    memo = ScanMemo(Store(tmp_path / "c"), "ident-1", "/proj")
    assert memo.lookup(k) is None
    memo.save(k, memo.file_hash(k), ["k"], [h])
    memo.flush()
    [written] = list((tmp_path / "c" / "scan").iterdir())  # one file per project
    fresh = ScanMemo(Store(tmp_path / "c"), "ident-1", "/proj")
    assert fresh.lookup(k) == {"stems": ["k"], "deps": [h], "skipped": {}}
    assert ScanMemo(Store(tmp_path / "c"), "ident-2", "/proj").lookup(k) is None
    assert ScanMemo(Store(tmp_path / "c"), "ident-1", "/other").lookup(k) is None
    (src / "variants.yaml").write_text("k.py: {}\n")  # a new file the answer may read
    assert ScanMemo(Store(tmp_path / "c"), "ident-1", "/proj").lookup(k) is None
    (src / "variants.yaml").unlink()
    (src / "h.py").write_text("h2")
    assert ScanMemo(Store(tmp_path / "c"), "ident-1", "/proj").lookup(k) is None
    memo2 = ScanMemo(Store(tmp_path / "c"), "ident-1", "/proj")
    memo2.save(k, "0" * 64, ["stale"], [])  # source changed while parsing
    memo2.flush()
    assert memo2.lookup(k) is None


def test_scan_memo_keeps_which_stems_get_no_artifact_of_a_target(tmp_path):
    from vyre_build.cache.scan import ScanMemo

    src = tree(tmp_path / "t", {"k.py": "k"})
    k = str(src / "k.py")
    memo = ScanMemo(Store(tmp_path / "c"), "i")
    why = {"mm": {"wgsl": "needs cooperative matrices: SPIR-V only"}}
    memo.save(k, memo.file_hash(k), ["add", "mm"], [], why)
    memo.flush()
    assert ScanMemo(Store(tmp_path / "c"), "i").lookup(k) == {
        "stems": ["add", "mm"],
        "deps": [],
        "skipped": why,
    }
    [entry] = list((tmp_path / "c" / "scan").glob("*.json"))
    body = entry.read_bytes().split(b"\n", 1)[1].replace(b'{"wgsl":', b'{"wgsl":[1],"x":')
    entry.write_bytes(content_hash(body).encode() + b"\n" + body)
    assert ScanMemo(Store(tmp_path / "c"), "i").lookup(k) is None  # malformed: recomputed


def test_scan_memo_ignores_a_corrupt_file(tmp_path):
    from vyre_build.cache.scan import ScanMemo

    src = tree(tmp_path / "t", {"k.py": "k"})
    k = str(src / "k.py")
    memo = ScanMemo(Store(tmp_path / "c"), "i")
    memo.save(k, memo.file_hash(k), ["k"], [])
    memo.flush()
    [entry] = list((tmp_path / "c" / "scan").glob("*.json"))
    entry.write_bytes(entry.read_bytes().replace(b'"stems":["k"]', b'"stems":["evil"]'))
    assert ScanMemo(Store(tmp_path / "c"), "i").lookup(k) is None
    entry.write_bytes(b"[" * 100000)
    assert ScanMemo(Store(tmp_path / "c"), "i").lookup(k) is None


# --- CLI ---------------------------------------------------------------------------------


def test_cli_gc_show_why_and_errors(tmp_path, capsys):
    from vyre_build.cli import main

    store = Store(tmp_path / "c")
    a, b = key_of(), key_of(options={"a": 9})
    for k in (a, b):
        store.put_record(k.key, k.manifest, {"s.wgsl": k.key.encode()})
    store.note_built(["s"], a.key)
    store.note_built(["s"], b.key)
    store.finish_build()
    cd = ["--cache-dir", str(tmp_path / "c")]
    assert main(["cache", "why", "build/s.wgsl", *cd, "--json"]) == 0
    why = json.loads(capsys.readouterr().out)
    assert (why["old"], why["new"]) == (a.key, b.key)
    assert [d["part"] for d in why["differences"]] == ["options"]
    assert main(["cache", "show", b.key[:10], *cd]) == 0
    shown = capsys.readouterr().out
    assert f"key {b.key}" in shown and "import h.py" in shown and '"a": 9' in shown
    assert main(["cache", "show", "zz", *cd]) == 1
    assert "is not a key" in capsys.readouterr().err
    assert main(["cache", "gc", "--max-size", "0", *cd, "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["evicted_entries"]) == sorted([a.key, b.key])
    assert main(["cache", "stats", "--cache-dir", str(tmp_path / "none")]) == 1
    assert "no cache at" in capsys.readouterr().err


def test_link_mode_hard_links_verified_read_only_blobs(tmp_path, fake):
    src = tree(tmp_path / "t", {"k.py": "# kernel saxpy\n"})
    store = Store(tmp_path / "c")
    copy = build(src / "k.py", tmp_path / "copy", store)
    linked = build(src / "k.py", tmp_path / "linked", store, link=True)
    assert linked.hit and not copy.hit
    rec = store.get_record(linked.key.key)
    for name, ref in rec["outputs"].items():
        out, blob = tmp_path / "linked" / name, Path(store.blob_path(ref["hash"]))
        assert out.stat().st_ino == blob.stat().st_ino and blob.stat().st_mode & 0o222 == 0
        assert (tmp_path / "copy" / name).stat().st_ino != blob.stat().st_ino
        assert out.read_bytes() == (tmp_path / "copy" / name).read_bytes()


def test_the_scons_tool_imports_no_cli_and_gc_no_store():
    import subprocess
    import sys

    code = (
        "import sys, vyre_build.build.scons_tool, vyre_build.cache.gc\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('vyre_build.cli', "
        "'vyre_build.commands')))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    import ast
    import vyre_build.cache.gc as gc_module

    tree = ast.parse(Path(gc_module.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "vyre_build.cache.store" not in imported
