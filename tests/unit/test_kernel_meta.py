"""KernelMeta serialises itself: the compiler builds each kernel's KernelMeta and writes its
`to_record()`, and checking that record gives the same KernelMeta and the same record back
(every optional field: coarse entries, features, skipped targets, declared shared memory,
any_length buffers, debug sites of print, assert and bounds)."""

from __future__ import annotations

import os

import pytest

from vyre_build.bundle.metadata import (
    PORTABLE_SHARED_BYTES,
    Binding,
    KernelMeta,
    Uniform,
)
from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.compiler import compile_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEBUGGED = """\
from vyre_build.lang import *


@kernel(workgroup_size=64, any_length="bias", shared_bytes=16384)
def k(x: Buffer[f32], bias: Buffer[f32], out: Buffer[f32, "w"], n: u32, nb: u32):
    t = shared(f32, 64)
    i = global_id().x
    print("i =", i, x[i], i < n)
    assert i < n, "i in range"
    assert i < n + 1
    t[local_id().x] = x[i]
    barrier()
    if i < len(out):
        out[i] = t[local_id().x] * 2.0 + bias[i % nb]
"""


def records(tmp_path) -> list[dict]:
    out = []
    for name in ("saxpy.py", "lib_reduce.py", "lib_mm_f16.py", "scan.py"):
        out += [k.meta for k in compile_file(os.path.join(ROOT, "kernels", name))]
    src = tmp_path / "dbg.py"
    src.write_text(DEBUGGED)
    for debug in (False, True):
        out += [k.meta for k in compile_file(str(src), options={"debug": debug})]
    return out


def test_a_checked_record_writes_itself_back(tmp_path):
    metas = records(tmp_path)
    seen = set()
    for meta in metas:
        km = check_metadata(meta, "test")
        assert km.record is meta
        assert km.to_record() == meta, meta["id"]
        # made from its fields, a KernelMeta's record is what it writes
        again = KernelMeta(**{**km.__dict__, "record": {}})
        assert again == km and again.record == meta
        seen |= set(meta)
        seen |= {f"debug.{s['kind']}" for s in meta.get("debug", {}).get("sites", [])}
        seen |= {"any_length" for b in meta["bindings"] if b.get("any_length")}
    for field in ("coarse", "features", "skipped", "shared_bytes", "debug", "any_length"):
        assert field in seen, field
    assert {"debug.print", "debug.assert", "debug.bounds"} <= seen


def test_defaults_are_left_out_as_the_compiler_leaves_them_out():
    km = KernelMeta(
        id="k",
        name="k",
        variant=None,
        workgroup_size=(64, 1, 1),
        grid=("n",),
        bindings=(
            Binding("x", "buffer", 0, "f32", access="r"),
            Binding("n", "scalar", 1, "u32", offset=0),
        ),
        uniform=Uniform(1, 16),
        features=(),
        coarse=None,
    )
    assert km.record == {
        "name": "k",
        "variant": None,
        "id": "k",
        "workgroup_size": [64, 1, 1],
        "grid": ["n"],
        "bindings": [
            {"name": "x", "binding": 0, "kind": "buffer", "dtype": "f32", "access": "r"},
            {"name": "n", "binding": 1, "kind": "scalar", "dtype": "u32", "offset": 0},
        ],
        "uniform": {"binding": 1, "size": 16},
    }
    assert km.shared_bytes == PORTABLE_SHARED_BYTES
    assert check_metadata(km.record, "test") == km


def test_an_unknown_key_stays_in_the_record_but_not_in_its_fields():
    meta = compile_file(os.path.join(ROOT, "kernels", "saxpy.py"))[0].meta
    newer = {**meta, "from_a_newer_compiler": 1}
    km = check_metadata(newer, "test")
    assert km.record is newer and km.to_record() == meta
    with pytest.raises(TypeError):
        hash(km.record)  # the record is JSON data; the KernelMeta itself stays hashable
    assert hash(km) == hash(check_metadata(meta, "test"))
