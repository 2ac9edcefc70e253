"""Range analysis: which bounds checks are proved unnecessary, and which must stay.

Every case compiles a small kernel and lists its memory accesses in program order as
(op, slot name, proved). A proof is only ever allowed where every execution is in
bounds; the cases where it must NOT be given (a guard on one path only, loop bounds from
scalars, negative i32 indices, wrap-around, reads before a barrier) pin the soundness.
The proved kernels are also run on the CPU reference with out-of-bounds sizes, and must
still give the pinned results.
"""

from __future__ import annotations

import textwrap

import numpy as np

from vyre_build.compiler import compile_file
from vyre_build.descriptor import validate
from vyre_build.reference import execute

HEADER = "from vyre_build.lang import *\n"


def compiled(tmp_path, src: str, name: str = "k"):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(src))
    (k,) = compile_file(str(path), targets=("kdesc", "wgsl", "spirv"))
    return k


def accesses(k) -> list[tuple[str, str, bool]]:
    desc = k.descriptor
    info = validate(desc)
    names = {s.slot: s.name for s in desc.slots}
    out = []

    def walk(body):
        for op in body.ops:
            if op.kind.name in ("LoadGlobal", "LoadShared", "StoreGlobal", "StoreShared", "Atomic"):
                out.append((op.kind.name, names[op.operands[0]], info.in_bounds(op)))
            for child in _children(op):
                walk(body.children[child])

    walk(desc.body)
    return [a for a in out if not a[1].startswith("_") and a[1] not in _locals(desc)]


def _locals(desc) -> set[str]:
    return {s.name for s in desc.slots if s.memory_class == "Scratch" and s.element_count == 1}


def _children(op):
    name = op.kind.name
    if name in ("StructuredIfThen", "StructuredIfThenElse"):
        return op.operands[1:]
    if name == "StructuredForLoop":
        return op.operands[2:]
    if name == "OpaqueNode" and op.kind.args[0] == "vyre.loop":
        return op.operands
    return ()


def test_guard_proves_the_guarded_buffer_only(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32):
            i = global_id().x
            if i < len(y):
                y[i] = a * x[i] + y[i]
        """,
    )
    # x may be shorter than y (an explicit grid= is allowed), so x[i] keeps its check
    assert accesses(k) == [
        ("LoadGlobal", "x", False),
        ("LoadGlobal", "y", True),
        ("StoreGlobal", "y", True),
    ]
    assert "min(" in k.wgsl  # the x load is still clamped
    x = np.arange(10, dtype=np.float32)
    y = np.ones(40, dtype=np.float32)
    got = execute(k.descriptor, {"x": x, "y": y}, {"a": 2.0}, (1, 1, 1))["y"]
    want = y + 2 * np.r_[x, np.zeros(30, np.float32)]  # out-of-bounds x reads 0
    np.testing.assert_array_equal(got, want)


def test_a_guard_on_one_path_proves_nothing_after_it(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(y: Buffer[u32, "rw"]):
            i = global_id().x
            if i < len(y):
                y[i] = 1
            else:
                y[i] = 2
            y[i] = y[i] + 1
        """,
    )
    assert accesses(k) == [
        ("StoreGlobal", "y", True),
        ("StoreGlobal", "y", False),
        ("LoadGlobal", "y", False),
        ("StoreGlobal", "y", False),
    ]
    got = execute(k.descriptor, {"y": np.zeros(10, np.uint32)}, {}, (1, 1, 1))["y"]
    np.testing.assert_array_equal(got, np.full(10, 2, np.uint32))


def test_an_exiting_guard_proves_the_rest_of_the_body(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(a: Buffer[u32], b: Buffer[u32, "rw"]):
            i = global_id().x
            if i >= len(b) or i >= len(a):
                return
            b[i] = a[i] * 2
        """,
    )
    assert accesses(k) == [("LoadGlobal", "a", True), ("StoreGlobal", "b", True)]


def test_and_proves_both_or_proves_neither(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(a: Buffer[u32], b: Buffer[u32, "rw"]):
            i = global_id().x
            if i < len(a) and i < len(b):
                b[i] = a[i]
            if i < len(a) or i < len(b):
                b[i] = a[i] + 1
        """,
    )
    assert accesses(k) == [
        ("LoadGlobal", "a", True),
        ("StoreGlobal", "b", True),
        ("LoadGlobal", "a", False),
        ("StoreGlobal", "b", False),
    ]
    got = execute(
        k.descriptor,
        {"a": np.arange(5, dtype=np.uint32), "b": np.zeros(8, np.uint32)},
        {},
        (1, 1, 1),
    )["b"]
    np.testing.assert_array_equal(got, np.array([1, 2, 3, 4, 5, 1, 1, 1], np.uint32))


def test_loop_bounds_from_scalars_prove_nothing_from_lengths_they_do(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=1, grid=1)
        def k(out: Buffer[u32, "rw"], n: u32):
            for j in range(n):
                out[j] = j
            for j in range(len(out)):
                out[j] = out[j] + 1
        """,
    )
    assert accesses(k) == [
        ("StoreGlobal", "out", False),
        ("LoadGlobal", "out", True),
        ("StoreGlobal", "out", True),
    ]
    got = execute(k.descriptor, {"out": np.zeros(4, np.uint32)}, {"n": 9}, (1, 1, 1))["out"]
    np.testing.assert_array_equal(got, np.arange(1, 5, dtype=np.uint32))


def test_shared_indices_from_local_ids_masks_and_modulo(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=32)
        def k(out: Buffer[u32, "w"]):
            s = shared(u32, 16)
            lid = local_id().x
            s[lid & 15] = lid
            s[lid % 16] = lid
            s[lid] = lid
            barrier()
            out[global_id().x] = s[15 - (lid >> 1)]
        """,
    )
    assert accesses(k) == [
        ("StoreShared", "s", True),
        ("StoreShared", "s", True),
        ("StoreShared", "s", False),  # lid reaches 31 on a 16-element array
        ("LoadShared", "s", True),  # lid >> 1 is 0..15, so 15 - it stays in 0..15
        ("StoreGlobal", "out", False),
    ]


def test_negative_i32_indices_and_wrap_around_keep_their_checks(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=16)
        def k(out: Buffer[i32, "w"]):
            s = shared(i32, 16)
            lid = local_id().x
            d = i32(lid) - 5
            if d < 10:
                s[u32(d)] = d
            s[lid + 4294967295] = 7
            s[lid * 268435456] = 9
            s[lid] = s[lid]
            barrier()
            out[lid] = s[lid]
        """,
    )
    got = accesses(k)
    assert got[:3] == [
        ("StoreShared", "s", False),  # d may be negative: u32(d) is huge
        ("StoreShared", "s", False),  # lid - 1 wraps at lid == 0
        ("StoreShared", "s", False),  # wraps for lid >= 16... and is >= 16 for lid >= 1
    ]
    out = execute(k.descriptor, {"out": np.zeros(16, np.int32)}, {}, (1, 1, 1))["out"]
    # negative d and lid - 1 at lid 0 and lid * 2**28 past lid 0 are all dropped stores;
    # element 15 is never written, and reads its zero (the read before the covering store
    # keeps the zeroing)
    np.testing.assert_array_equal(out, np.r_[9, np.full(14, 7), 0].astype(np.int32))


def test_scratch_loop_variable_reaches_a_fixpoint(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=256, grid="x")
        def k(x: Buffer[u32], out: Buffer[u32, "rw"]):
            p = shared(u32, 256)
            lid = local_id().x
            p[lid] = x[global_id().x]
            barrier()
            s: u32 = 128
            while s > 0:
                if lid < s:
                    p[lid] += p[lid + s]
                barrier()
                s >>= 1
            if lid == 0:
                atomic_add(out, 0, p[0])
        """,
    )
    shared = [a for a in accesses(k) if a[1] == "p"]
    assert shared and all(proved for _, _, proved in shared)
    assert validate(k.descriptor).proofs.unzeroed  # fully written then fenced: no zeroing
    assert "_flat" not in k.wgsl
    x = np.arange(1000, dtype=np.uint32)
    got = execute(k.descriptor, {"x": x, "out": np.zeros(1, np.uint32)}, {}, (4, 1, 1))["out"]
    assert int(got[0]) == int(x.sum())


def test_zeroing_stays_where_a_read_could_see_it(tmp_path):
    guarded = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=16)
        def k(x: Buffer[u32], out: Buffer[u32, "w"]):
            t = shared(u32, 16)
            lid = local_id().x
            if global_id().x < len(x):
                t[lid] = x[global_id().x]
            barrier()
            out[global_id().x] = t[15 - lid]
        """,
        "guarded",
    )
    early = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=16)
        def k(out: Buffer[u32, "w"]):
            t = shared(u32, 16)
            lid = local_id().x
            out[global_id().x] = t[lid]
            t[lid] = lid
            barrier()
        """,
        "early",
    )
    for k in (guarded, early):
        assert not validate(k.descriptor).proofs.unzeroed
        assert "_flat" in k.wgsl
    got = execute(
        guarded.descriptor,
        {"x": np.arange(1, 6, dtype=np.uint32), "out": np.zeros(16, np.uint32)},
        {},
        (1, 1, 1),
    )
    np.testing.assert_array_equal(got["out"][-5:], np.arange(5, 0, -1, dtype=np.uint32))
    np.testing.assert_array_equal(got["out"][:11], np.zeros(11, np.uint32))  # zeroed, not stale


def test_a_guarded_difference_and_a_reloaded_local(tmp_path):
    # `lid >= offset` makes lid - offset a value in [0, 255] (no wrap below 0); offset is a
    # local reloaded for each use, and a reload with no store in between is the same value
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=256)
        def k(x: Buffer[u32], out: Buffer[u32, "w"]):
            buf = shared(u32, 256)
            lid = local_id().x
            buf[lid] = x[global_id().x]
            barrier()
            offset: u32 = 1
            while offset < 256:
                v: u32 = 0
                if lid >= offset:
                    v = buf[lid - offset]
                barrier()
                buf[lid] += v
                barrier()
                offset <<= 1
            out[global_id().x] = buf[lid]
        """,
    )
    assert ("LoadShared", "buf", True) in accesses(k)
    assert all(proved for op, name, proved in accesses(k) if name == "buf")
    x = np.arange(300, dtype=np.uint32)
    got = execute(k.descriptor, {"x": x, "out": np.zeros(300, np.uint32)}, {}, (2, 1, 1))["out"]
    want = np.r_[np.cumsum(x[:256]), np.cumsum(np.r_[x[256:], np.zeros(212, np.uint32)])[:44]]
    np.testing.assert_array_equal(got, want.astype(np.uint32))


def test_a_store_between_the_guard_and_the_use_keeps_the_check(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "w"], n: u32):
            t = shared(u32, 64)
            lid = local_id().x
            j: u32 = n
            if lid >= j:
                j = j + 7
                t[lid - j] = 1
            if lid >= j:
                for q in range(3):
                    j = j + 1
                t[lid - j] = 2
            if j <= lid:
                t[lid - j] = 3
            out[lid] = t[lid]
        """,
    )
    # only the last one: a reload with no store since the guard
    assert [p for op, name, p in accesses(k) if op == "StoreShared"] == [False, False, True]
    got = execute(k.descriptor, {"out": np.zeros(64, np.uint32)}, {"n": 0}, (1, 1, 1))["out"]
    # every lane: j = 7, t[lid - 7] = 1 (lid < 7 wraps: dropped); lanes >= 7: j = 10,
    # t[lid - 10] = 2 (7..9 dropped); lanes >= 10: t[lid - 10] = 3
    want = np.zeros(64, np.uint32)
    want[:57], want[:54] = 1, 3
    np.testing.assert_array_equal(got, want)


def test_i32_differences_keep_their_checks(tmp_path):
    k = compiled(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "w"], a: i32, b: i32):
            t = shared(u32, 64)
            if a >= b:
                t[u32(a - b)] = 1
            out[local_id().x] = t[local_id().x]
        """,
    )
    assert [p for op, name, p in accesses(k) if op == "StoreShared"] == [False]
    got = execute(
        k.descriptor, {"out": np.zeros(64, np.uint32)}, {"a": 2**31 - 1, "b": -(2**31)}, (1, 1, 1)
    )["out"]
    np.testing.assert_array_equal(got, np.zeros(64, np.uint32))  # a - b wraps to -1: dropped
