"""The scalar vocabulary (vyre_build/core/scalars.py) is the one table of host dtypes: the
type vocabulary's `host` column, the metadata's dtype lists, the runtime's buffer dtypes
and the CPU reference's dtypes all come from it, in the orders they had."""

from __future__ import annotations

import numpy as np

from vyre_build.bundle import metadata
from vyre_build.core import scalars
from vyre_build.descriptor.types import SCALARS, TYPES, VECTORS
from vyre_build.reference import values
from vyre_build.runtime import plan as runtime_plan


def test_host_order_lists_exactly_the_host_shareable_scalars():
    shareable = {s.name for s in scalars.SCALARS if s.size}
    assert sorted(scalars.HOST_ORDER) == sorted(shareable)
    assert [s.name for s in scalars.SCALARS] == list(SCALARS)


def test_every_value_type_has_its_elements_host_dtype():
    for name, t in TYPES.items():
        assert t.host == TYPES[t.element].host, name
        assert np.dtype(t.host).name == t.host, name
        if t.size:  # what the host holds of it is whole elements of that dtype
            assert t.size == np.dtype(t.host).itemsize * t.count, name


def test_metadata_runtime_and_reference_read_the_column():
    assert metadata.SCALAR_DTYPES == {"f32": 4, "i32": 4, "u32": 4, "f16": 2, "bf16": 2}
    assert list(metadata.SCALAR_DTYPES) == ["f32", "i32", "u32", "f16", "bf16"]
    assert metadata.BUFFER_DTYPES == (
        *("f32", "i32", "u32", "f16", "bf16"),
        *("vec2f", "vec4f", "vec2i", "vec4i", "vec2u", "vec4u", "vec2h", "vec4h"),
        *("vec2bf", "vec4bf"),
    )
    assert set(metadata.VECTOR_DTYPES) == set(VECTORS)
    for name, (elem, n) in metadata.VECTOR_DTYPES.items():
        assert VECTORS[name] == (elem, n)
    for name, size in metadata.SCALAR_DTYPES.items():
        dt = runtime_plan.DTYPES[name]
        assert dt == np.dtype(TYPES[name].host) and dt.itemsize == size
        assert dt.str[0] in "<|"  # little-endian, as devices store it
        # messages call bf16 by its name and the bits the host holds
        shown = "bfloat16 (uint16 bits)" if name == "bf16" else TYPES[name].host
        assert runtime_plan.NP_NAMES[name] == shown and TYPES[name].host == str(dt)
    assert list(runtime_plan.DTYPES) == list(metadata.SCALAR_DTYPES)
    for name in SCALARS:
        assert values.DTYPES[name] == np.dtype(TYPES[name].host)
    assert values.DTYPES["bool"] == np.dtype(np.bool_)
