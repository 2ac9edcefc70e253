"""Order-preserving u32 keys of f32 values (radix-sort preprocessing), through bitcast."""
from vyre_build.lang import Buffer, bitcast, f32, global_id, kernel, u32

SIGN_BIT = 0x80000000
ALL_BITS = 0xFFFFFFFF


@kernel(workgroup_size=64)
def float_key(x: Buffer[f32], keys: Buffer[u32, "w"]):
    i = global_id().x
    if i < len(keys):
        b = bitcast(u32, x[i])
        # negatives: flip all bits (reverses their order); positives: set the sign bit
        flip: u32 = ALL_BITS if (b & SIGN_BIT) != 0 else SIGN_BIT
        keys[i] = b ^ flip


@kernel(workgroup_size=64)
def float_from_key(keys: Buffer[u32], x: Buffer[f32, "w"]):
    i = global_id().x
    if i < len(x):
        k = keys[i]
        flip: u32 = SIGN_BIT if (k & SIGN_BIT) != 0 else ALL_BITS
        x[i] = bitcast(f32, k ^ flip)
