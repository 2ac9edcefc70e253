"""A stand-in device for call-planning tests (no GPU), and plan_of() over metadata dicts."""

from __future__ import annotations

from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.runtime.calls import plan_call
from vyre_build.runtime.plan import Plan


class FakeDevice:
    """Just the limits, identity and hooks plan_call reads."""

    name = "fake"
    backend = "fake"
    max_workgroup_count = (65535, 65535, 65535)
    max_buffer_bytes = 1 << 20
    coarse_entries = True

    def adopt(self, value, dtype, access):
        return None


DEV = FakeDevice()

SAXPY = {
    "name": "saxpy",
    "variant": None,
    "id": "saxpy",
    "workgroup_size": [64, 1, 1],
    "grid": ["y"],
    "bindings": [
        {"name": "x", "binding": 0, "kind": "buffer", "dtype": "f32", "access": "r"},
        {"name": "y", "binding": 1, "kind": "buffer", "dtype": "f32", "access": "rw"},
        {"name": "a", "binding": 2, "kind": "scalar", "dtype": "f32", "offset": 0},
    ],
    "uniform": {"binding": 2, "size": 16},
}


def plan_of(
    meta: dict,
    args: dict,
    grid=None,
    device=DEV,
    no_split: str | None = "the fake backend cannot split",
) -> Plan:
    """plan_call on the checked `meta`."""
    return plan_call(check_metadata(meta, f"kernel {meta['id']!r}"), args, grid, device, no_split)
