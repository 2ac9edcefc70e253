"""WGSL helper functions: included in a module only when one of its templates calls them.

Each helper spells out a pinned semantic WGSL has no single builtin for (exact integer
-> f32 rounding). `values._vector_casts` adds one helper per vector cast pair that is
not a bitcast (float -> int vector casts are per component in the legal form).
"""

from __future__ import annotations

import re

__all__ = ["HELPERS", "HELPER_CALL"]

HELPER_CALL = re.compile(r"\b(_vy_[a-z0-9_]+)\(")

HELPERS: dict[str, str] = {
    "_vy_u32_to_f32": """\
fn _vy_u32_to_f32(x: u32) -> f32 {
    // Both halves convert exactly; the one add rounds to nearest even on every backend.
    return f32(x >> 16u) * 65536.0f + f32(x & 0xffffu);
}""",
    "_vy_i32_to_f32": """\
fn _vy_i32_to_f32(x: i32) -> f32 {
    let m = _vy_u32_to_f32(select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i));
    return select(m, -m, x < 0i);
}""",
}
