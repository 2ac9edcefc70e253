"""Vector buffers at the runtime boundary: host arrays hold `count` values per element."""

from __future__ import annotations

import numpy as np
import pytest

from runtime_fakes import plan_of

from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.core.errors import BundleError, DispatchError

SAXPY4 = {
    "name": "saxpy4",
    "variant": None,
    "id": "saxpy4",
    "workgroup_size": [64, 1, 1],
    "grid": ["y"],
    "bindings": [
        {"name": "x", "binding": 0, "kind": "buffer", "dtype": "vec4f", "access": "r"},
        {"name": "y", "binding": 1, "kind": "buffer", "dtype": "vec4f", "access": "rw"},
        {"name": "o", "binding": 2, "kind": "buffer", "dtype": "vec2u", "access": "w"},
        {"name": "a", "binding": 3, "kind": "scalar", "dtype": "f32", "offset": 0},
    ],
    "uniform": {"binding": 3, "size": 16},
}


def test_vector_elements_count_once_for_the_grid_and_outputs_get_a_component_axis():
    x = np.zeros((130, 4), np.float32)
    plan = plan_of(SAXPY4, {"x": x, "y": x.copy(), "o": 130, "a": 1.0}, None)
    assert plan.workgroups == (3, 1, 1)  # 130 vec4 elements / 64
    by_name = {a.name: a for a in plan.buffers}
    assert by_name["y"].elements == 130 and by_name["y"].dtype == "f32"
    assert by_name["o"].shape == (130, 2) and by_name["o"].dtype == "u32"


def test_flat_arrays_are_accepted_when_they_hold_whole_vectors():
    flat = np.zeros(8, np.float32)
    plan = plan_of(SAXPY4, {"x": flat, "y": flat.copy(), "o": 2, "a": 0.0}, None)
    assert plan.workgroups == (1, 1, 1) and plan.buffers[1].elements == 2


def test_partial_vectors_and_wrong_dtypes_are_refused_before_dispatch():
    with pytest.raises(DispatchError) as info:
        plan_of(
            SAXPY4,
            {"x": np.zeros(6, np.float32), "y": np.zeros(8, np.float32), "o": 2, "a": 0.0},
        )
    assert str(info.value) == (
        "Kernel 'saxpy4': argument 'x' is a buffer of vec4f: it needs a "
        "multiple of 4 float32 values, got 6"
    )
    with pytest.raises(DispatchError, match="argument 'y' must be a float32 array, got int32"):
        plan_of(
            SAXPY4,
            {"x": np.zeros(8, np.float32), "y": np.zeros(8, np.int32), "o": 2, "a": 0.0},
        )


def test_vector_dtypes_are_buffer_only_in_metadata():
    bad = dict(
        SAXPY4,
        bindings=SAXPY4["bindings"][:3]
        + [{"name": "a", "binding": 3, "kind": "scalar", "dtype": "vec4f", "offset": 0}],
    )
    with pytest.raises(BundleError) as info:
        check_metadata(bad, "kernel 'saxpy4'")
    assert str(info.value) == (
        "kernel 'saxpy4': metadata field 'bindings[3].dtype' must be one of f32, i32, u32, "
        "f16, bf16, got 'vec4f'"
    )
    assert check_metadata(SAXPY4, "kernel 'saxpy4'").buffers[2].dtype == "vec2u"


def test_an_output_shape_with_the_component_axis_is_the_host_shape():
    x = np.zeros((100, 4), np.float32)
    for out in (100, (100,), (100, 2)):
        plan = plan_of(SAXPY4, {"x": x, "y": x.copy(), "o": out, "a": 0.0}, None)
        o = next(a for a in plan.buffers if a.name == "o")
        assert (o.shape, o.elements) == ((100, 2), 100), out
