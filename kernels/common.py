"""Helpers shared by several kernel files (imported with `from .common import ...`).

Helpers are inlined at each call site; this file also holds one small kernel so that
it compiles on its own like every other file of the tree.
"""
from vyre_build.lang import Buffer, f32, global_id, kernel, rotl, u32

# Multipliers of the murmur3 32-bit finaliser (fmix32), so the GPU hash matches a known reference.
MIX_1 = 0x85EBCA6B
MIX_2 = 0xC2B2AE35


def lerp(a: f32, b: f32, t: f32) -> f32:
    """Linear interpolation a + (b - a) * t."""
    return a + (b - a) * t


def hash_u32(x: u32) -> u32:
    """murmur3's fmix32 finaliser: a bijective u32 -> u32 avalanche mix."""
    h = x
    h ^= h >> 16
    h *= MIX_1
    h ^= h >> 13
    h *= MIX_2
    h ^= h >> 16
    return h


def load_byte(data: Buffer[u32], i: u32) -> u32:
    """Byte i of a buffer of little-endian packed bytes (4 per u32 element)."""
    return (data[i >> 2] >> ((i & 3) * 8)) & 0xFF


def rotl_mix(x: u32, n: u32) -> u32:
    """A cheap rotate-xor mix: rotl(x, n) ^ x."""
    return rotl(x, n) ^ x


@kernel(workgroup_size=64)
def hash_fill(out: Buffer[u32, "w"], seed: u32):
    i = global_id().x
    if i < len(out):
        out[i] = hash_u32(i ^ seed)
