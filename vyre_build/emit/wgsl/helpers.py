"""WGSL helper functions: included in a module only when one of its templates calls them.

Each helper spells out a pinned semantic WGSL has no single builtin for (64-bit high
multiply, rotations, exact integer -> f32 rounding). `values._vector_casts` adds one
helper per vector cast pair.
"""

from __future__ import annotations

import re

__all__ = ["HELPERS", "HELPER_CALL"]

HELPER_CALL = re.compile(r"\b(_vy_[a-z0-9_]+)\(")

HELPERS: dict[str, str] = {
    "_vy_rotl": """\
fn _vy_rotl(x: u32, n: u32) -> u32 {
    let s = n & 31u;
    return (x << s) | (x >> ((32u - s) & 31u));
}""",
    "_vy_srem": """\
fn _vy_srem(a: i32, b: i32) -> i32 {
    // Truncated remainder without `%` (OpSRem is undefined for negative operands on Vulkan).
    return a - b * (a / b);
}""",
    "_vy_mulhi_u32": """\
fn _vy_mulhi_u32(a: u32, b: u32) -> u32 {
    // High word of the 64-bit product from 16-bit halves (WGSL has no 64-bit integers).
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}""",
    "_vy_mulhi_i32": """\
fn _vy_mulhi_i32(a: i32, b: i32) -> i32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    return bitcast<i32>(_vy_mulhi_u32(ua, ub) - select(0u, ub, a < 0i) - select(0u, ua, b < 0i));
}""",
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
