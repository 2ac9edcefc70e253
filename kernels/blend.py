"""Uses helpers imported from common.py: lerp of two f32 buffers and a hashed u32 stream."""
from vyre_build.lang import Buffer, clamp, f32, global_id, i32, kernel, u32

from .common import hash_u32, lerp, rotl_mix

SEED = 0x9E3779B9


@kernel(workgroup_size=64, grid="mixed")
def blend(a: Buffer[f32], b: Buffer[f32], keys: Buffer[u32], mixed: Buffer[f32, "w"],
          hashed: Buffer[u32, "w"], t: f32, bias: i32):
    i = global_id().x
    if i >= len(mixed):
        return
    mixed[i] = lerp(a[i], b[i], clamp(t, 0.0, 1.0))
    h = hash_u32(keys[i] ^ SEED)
    # bias is signed: reinterpret and add with wrapping
    hashed[i] = rotl_mix(h, 7) + u32(bias)
