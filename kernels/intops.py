"""Integer division, remainder and shifts with the pinned semantics (truncation toward
zero, x // 0 == x, x % 0 == 0, shift amounts mod 32), and saturating f32 -> int casts."""
from vyre_build.lang import Buffer, f32, global_id, i32, kernel, u32


@kernel(workgroup_size=64, grid="quot", variants={"i32": {"T": i32}, "u32": {"T": u32}})
def int_ops(a: Buffer[T], b: Buffer[T], s: Buffer[u32], quot: Buffer[T, "w"],
            rem: Buffer[T, "w"], shl: Buffer[T, "w"], shr: Buffer[T, "w"]):
    i = global_id().x
    if i < len(quot):
        x = a[i]
        y = b[i]
        q = x
        q //= y
        quot[i] = q
        r = x
        r %= y
        rem[i] = r
        shl[i] = x << s[i]
        shr[i] = x >> s[i]


@kernel(workgroup_size=64, grid="x")
def float_to_int(x: Buffer[f32], as_i32: Buffer[i32, "w"], as_u32: Buffer[u32, "w"]):
    i = global_id().x
    if i < len(x):
        as_i32[i] = i32(x[i])
        as_u32[i] = u32(x[i])
