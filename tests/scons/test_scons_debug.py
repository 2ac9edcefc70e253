"""End-to-end: `VYRE_DEBUG=1 scons` makes a debug build (print/assert kept, accesses
checked) under keys of its own, so a debug and a release build never share a cache entry
and switching back is a cache hit with the release bytes; `bundle show` names the build;
a bad value is refused by name."""

from __future__ import annotations

import json

import pytest
from scons_helpers import cache_json, compiled, outputs, run_scons, vyre, write_tree

pytestmark = pytest.mark.scons

PRINTING = """\
from vyre_build.lang import *


@kernel(workgroup_size=64)
def shown(x: Buffer[f32], y: Buffer[f32, "w"]):
    i = global_id().x
    print("i =", i)
    if i < len(y):
        y[i] = x[i + 1]
"""


def test_debug_build_has_its_own_keys_and_is_named_by_bundle_show(tmp_path):
    root, cache = write_tree(tmp_path / "proj", 2), tmp_path / "cache"
    (root / "kernels" / "shown.py").write_text(PRINTING)
    run_scons(root, cache)
    release = outputs(root)
    debug_run = run_scons(root, cache, env={"VYRE_DEBUG": "1"})
    assert compiled(debug_run) == ["kernels/k0.py", "kernels/k1.py", "kernels/shown.py"]
    stats = cache_json(cache, "stats")
    assert (stats["last_build"]["misses"], stats["entries"]) == (3, 6)
    debug = outputs(root)
    assert debug["build/shown.wgsl"] != release["build/shown.wgsl"]
    # Reports name the file from the project root, as the build's own lines do.
    sites = json.loads(debug["build/shown.meta.json"])["debug"]["sites"]
    assert [(s["file"], s["line"], s["col"]) for s in sites] == [
        ("kernels/shown.py", 7, 5),
        ("kernels/shown.py", 9, 9),
        ("kernels/shown.py", 9, 16),
    ]
    shown = vyre(root, cache, "bundle", "show", "dist/kernels.vyrebundle", "shown").stdout
    assert "build      debug (1 print, 0 assert, 2 bounds sites; debug buffer at binding 2)" in (
        shown.splitlines()
    )
    run_scons(root, cache)  # back to release: every step a local hit, the release bytes
    assert cache_json(cache, "stats")["last_build"]["hits"] == 3
    assert outputs(root) == release
    shown = vyre(root, cache, "bundle", "show", "dist/kernels.vyrebundle", "shown").stdout
    assert "build " not in shown


def test_a_bad_vyre_debug_value_is_refused_by_name(tmp_path):
    root, cache = write_tree(tmp_path / "proj", 1), tmp_path / "cache"
    proc = run_scons(root, cache, check=False, env={"VYRE_DEBUG": "maybe"})
    assert proc.returncode != 0
    assert (
        "$VYREDEBUG (or VYRE_DEBUG) must be 1/0, true/false, yes/no or on/off, got 'maybe'"
        in proc.stderr
    )
