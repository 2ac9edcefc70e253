"""Argument checking, grid computation and uniform packing (no GPU: a stand-in device)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from runtime_fakes import SAXPY, plan_of

from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.core.errors import DispatchError
from vyre_build.runtime.calls import pack_uniform


FILL = {
    "name": "fill",
    "variant": "u32",
    "id": "fill.u32",
    "workgroup_size": [8, 8, 1],
    "grid": ["cols", "rows"],
    "bindings": [
        {"name": "out", "binding": 0, "kind": "buffer", "dtype": "u32", "access": "w"},
        {"name": "cols", "binding": 1, "kind": "scalar", "dtype": "u32", "offset": 0},
        {"name": "rows", "binding": 2, "kind": "scalar", "dtype": "u32", "offset": 4},
        {"name": "bias", "binding": 3, "kind": "scalar", "dtype": "i32", "offset": 8},
    ],
    "uniform": {"binding": 1, "size": 16},
}


def f32(n):
    return np.arange(n, dtype=np.float32)


def refused(meta, args, grid=None) -> str:
    with pytest.raises(DispatchError) as info:
        plan_of(meta, args, grid)
    return str(info.value)


def test_good_call_plans_buffers_uniform_and_workgroups():
    plan = plan_of(SAXPY, {"x": f32(1000), "y": f32(1000), "a": 2.5}, None)
    assert [b.name for b in plan.buffers] == ["x", "y"]
    assert plan.workgroups == (16, 1, 1)  # ceil(1000 / 64)
    assert plan.uniform_binding == 2
    assert plan.uniform == struct.pack("<f", 2.5) + bytes(12)


def test_missing_extra_and_misnamed_arguments():
    assert (
        refused(SAXPY, {"x": f32(4), "y": f32(4)})
        == "Kernel 'saxpy': missing argument 'a'; it takes x, y, a"
    )
    assert (
        refused(SAXPY, {"x": f32(4)})
        == "Kernel 'saxpy': missing arguments 'y', 'a'; it takes x, y, a"
    )
    assert (
        refused(SAXPY, {"x": f32(4), "y": f32(4), "a": 1.0, "z": 1})
        == "Kernel 'saxpy': unexpected argument 'z'; it takes x, y, a"
    )
    assert (
        refused(SAXPY, {"x": f32(4), "yy": f32(4), "a": 1.0})
        == "Kernel 'saxpy': unexpected argument 'yy' (did you mean 'y'?); it takes x, y, a"
    )


def test_buffer_dtype_kind_and_emptiness():
    assert (
        refused(SAXPY, {"x": np.arange(4), "y": f32(4), "a": 1.0})
        == "Kernel 'saxpy': argument 'x' must be a float32 array, got int64"
    )
    assert (
        refused(SAXPY, {"x": [1.0, 2.0], "y": f32(4), "a": 1.0})
        == "Kernel 'saxpy': argument 'x' must be a float32 array, got list"
    )
    assert (
        refused(SAXPY, {"x": f32(4).astype(">f4"), "y": f32(4), "a": 1.0})
        == "Kernel 'saxpy': argument 'x' must be a float32 array, got >f4"
    )
    assert (
        refused(SAXPY, {"x": f32(0), "y": f32(4), "a": 1.0})
        == "Kernel 'saxpy': argument 'x' is empty; a storage buffer needs >= 1 element"
    )


def test_lengths_only_for_write_only_buffers():
    assert (
        refused(SAXPY, {"x": f32(4), "y": 4, "a": 1.0})
        == "Kernel 'saxpy': argument 'y' is read by the kernel (access 'rw'): "
        "pass a float32 array, not a length"
    )
    assert (
        refused(FILL, {"out": 0, "cols": 1, "rows": 1, "bias": 0})
        == "Kernel 'fill.u32': argument 'out': an output length must be a positive int or a "
        "shape of positive ints, got 0"
    )
    plan = plan_of(FILL, {"out": (3, 5), "cols": 5, "rows": 3, "bias": -1}, None)
    (out,) = plan.buffers
    assert (out.source, out.elements, out.shape) == (None, 15, (3, 5))


def test_too_small_peer_buffer_refused_when_grid_comes_from_a_buffer():
    assert (
        refused(SAXPY, {"x": f32(10), "y": f32(1000), "a": 1.0})
        == "Kernel 'saxpy': argument 'x' has 10 elements but the grid covers 1000 (the length "
        "of 'y'); pass at least 1000 or give grid= explicitly (a kernel that does not index "
        "'x' by the grid index declares @kernel(..., any_length=\"x\"))"
    )
    # An explicit grid is the caller's statement that the shorter read is intended.
    plan = plan_of(SAXPY, {"x": f32(10), "y": f32(1000), "a": 1.0}, 10)
    assert plan.workgroups == (1, 1, 1)


def test_read_only_arrays_refused_where_the_kernel_writes():
    frozen = f32(8)
    frozen.flags.writeable = False
    assert (
        refused(SAXPY, {"x": f32(8), "y": frozen, "a": 1.0})
        == "Kernel 'saxpy': argument 'y' is a read-only array (flags.writeable is False) but "
        "the kernel writes it (access 'rw') and a call writes its result back into the array "
        "passed; pass a writable array (y.copy()), or a DeviceBuffer"
    )
    out = np.broadcast_to(np.uint32(0), (6,))  # a broadcast view is read-only
    assert (
        refused(FILL, {"out": out, "cols": 2, "rows": 3, "bias": 0})
        == "Kernel 'fill.u32': argument 'out' is a read-only array (flags.writeable is False) "
        "but the kernel writes it (access 'w') and a call writes its result back into the "
        "array passed; pass a writable array (out.copy()), a length, or a DeviceBuffer"
    )
    # Read-only inputs are fine; a non-contiguous written array is taken (written back
    # through its strides by the device, tests/gpu/test_runtime_writes.py).
    plan = plan_of(SAXPY, {"x": frozen, "y": f32(16)[::2], "a": 1.0})
    assert [b.shape for b in plan.buffers] == [(8,), (8,)]


def test_scalar_types_and_ranges():
    base = {"out": 4, "cols": 2, "rows": 2, "bias": 0}
    assert (
        refused(FILL, {**base, "cols": -1})
        == "Kernel 'fill.u32': argument 'cols' = -1 is out of range for u32 [0, 4294967295]"
    )
    assert (
        refused(FILL, {**base, "cols": 2**32})
        == "Kernel 'fill.u32': argument 'cols' = 4294967296 is out of range for u32 "
        "[0, 4294967295]"
    )
    assert (
        refused(FILL, {**base, "bias": 2**31})
        == "Kernel 'fill.u32': argument 'bias' = 2147483648 is out of range for i32 "
        "[-2147483648, 2147483647]"
    )
    assert (
        refused(FILL, {**base, "cols": 2.0})
        == "Kernel 'fill.u32': argument 'cols' must be an integer (u32), got float 2.0"
    )
    assert (
        refused(FILL, {**base, "rows": True})
        == "Kernel 'fill.u32': argument 'rows' must be a u32 scalar, got bool"
    )
    assert (
        refused(SAXPY, {"x": f32(4), "y": f32(4), "a": "2"})
        == "Kernel 'saxpy': argument 'a' must be a float scalar, got str"
    )
    assert refused(SAXPY, {"x": f32(4), "y": f32(4), "a": f32(4)}) == (
        "Kernel 'saxpy': argument 'a' must be a float scalar, got an array of float32, shape "
        "(4,) (a scalar parameter takes one number)"
    )
    assert refused(FILL, {**base, "cols": [2]}) == (
        "Kernel 'fill.u32': argument 'cols' must be an integer (u32), got a list (a scalar "
        "parameter takes one number)"
    )
    assert (
        refused(FILL, {**base, "cols": None})
        == "Kernel 'fill.u32': argument 'cols' must be an integer (u32), got None"
    )
    assert (
        refused(SAXPY, {"x": f32(4), "y": f32(4), "a": 1e39})
        == "Kernel 'saxpy': argument 'a' = 1e+39 is out of range for f32"
    )
    plan = plan_of(FILL, {**base, "cols": np.uint32(7), "bias": np.int64(-3)}, None)
    assert plan.uniform == struct.pack("<IIi", 7, 2, -3) + bytes(4)


def test_grid_from_scalars_two_axes():
    plan = plan_of(FILL, {"out": 100, "cols": 20, "rows": 5, "bias": 0}, None)
    assert plan.workgroups == (3, 1, 1)  # ceil(20 / 8), ceil(5 / 8)
    plan = plan_of(FILL, {"out": 1, "cols": 0, "rows": 5, "bias": 0}, None)
    assert plan.workgroups == (0, 1, 1)


def test_grid_defaults_to_first_written_buffer():
    meta = {**SAXPY, "grid": []}
    plan = plan_of(meta, {"x": f32(130), "y": f32(130), "a": 1.0}, None)
    assert plan.workgroups == (3, 1, 1)
    no_out = {**SAXPY, "grid": None, "bindings": [SAXPY["bindings"][0]], "uniform": None}
    assert (
        refused(no_out, {"x": f32(4)})
        == "Kernel 'saxpy': no grid in the metadata and no written buffer to take it from; "
        "pass grid="
    )


def test_grid_override_validation_and_device_limit():
    args = {"x": f32(4), "y": f32(4), "a": 1.0}
    assert plan_of(SAXPY, args, (64, 2)).workgroups == (1, 2, 1)
    for bad in (-1, 1.5, (1, 2, 3, 4), "8", True, ()):
        assert refused(SAXPY, args, bad) == (
            "Kernel 'saxpy': grid= must be a non-negative int or a tuple of 1-3 of them "
            f"(invocations per axis), got {bad!r}"
        )
    assert (
        refused(SAXPY, args, 65536 * 64)
        == "Kernel 'saxpy': grid needs 65536 workgroups on axis x (4194304 invocations / 64 "
        "per workgroup), more than the device's limit of 65535 on x, and the fake backend "
        "cannot split"
    )


def test_buffer_over_the_device_binding_limit():
    big = np.zeros((1 << 18) + 1, np.float32)
    assert (
        refused(SAXPY, {"x": big, "y": big, "a": 1.0})
        == "Kernel 'saxpy': argument 'x' is 1048580 bytes, more than the device's storage "
        "buffer binding limit of 1048576 bytes"
    )


def test_uniform_block_takes_its_size_and_offsets_from_the_metadata():
    meta = check_metadata({**FILL, "uniform": {"binding": 1, "size": 32}}, "kernel 'fill'")
    block = pack_uniform(meta, {"cols": 1, "rows": 2, "bias": -2})
    assert block == struct.pack("<IIi", 1, 2, -2) + bytes(20)
    assert len(pack_uniform(check_metadata(SAXPY, "k"), {"a": float("inf")})) == 16


def test_the_coarse_entry_is_planned_when_every_buffer_has_one_length_a_multiple_of_its_factor():
    meta = {**SAXPY, "coarse": {"entry": "main_x4", "factor": 4}}
    plan = plan_of(meta, {"x": f32(1024), "y": f32(1024), "a": 1.0})
    assert (plan.entry, plan.workgroups) == ("main_x4", (4, 1, 1))  # 256 invocations / 64
    for args, grid in (
        ({"x": f32(1022), "y": f32(1022), "a": 1.0}, None),  # not a multiple of 4
        ({"x": f32(2048), "y": f32(1024), "a": 1.0}, None),  # lengths differ
        ({"x": f32(1024), "y": f32(1024), "a": 1.0}, 1024),  # an explicit grid
    ):
        plan = plan_of(meta, args, grid)
        assert (plan.entry, plan.workgroups) == ("main", (16, 1, 1)), (args, grid)
    assert plan_of(SAXPY, {"x": f32(1024), "y": f32(1024), "a": 1.0}).entry == "main"
