"""Language constructs that need a real dispatch to prove: helper returns inside loops."""

import numpy as np

from vyre_build.compiler import compile_file
from vyre_build.runtime import load_kernel

# The code argument of load_kernel for each backend, from a compiled kernel.
CODE = {
    "wgpu": lambda k: {"wgsl": k.wgsl},
    "vulkan": lambda k: {"spirv": k.spirv},
    "cpu": lambda k: {"kdesc": k.kdesc},
}

PRIMES = """
from vyre_build.lang import *

def is_prime(n: u32) -> bool:
    if n < 2:
        return False
    d: u32 = 2
    while d * d <= n:
        for k in range(3):
            if k == 1 and n % d == 0:
                return False
        d += 1
    return True

@kernel(workgroup_size=64)
def primes(out: Buffer[u32, "w"]):
    i = global_id().x
    out[i] = u32(is_prime(i)) + u32(is_prime(i + 1)) * 2
"""


def test_helper_return_inside_nested_loops(tmp_path, backend):
    path = tmp_path / "primes.py"
    path.write_text(PRIMES)
    k = compile_file(str(path))[0]
    code = CODE[backend](k)
    got = load_kernel(k.meta, backend=backend, **code)(out=301)["out"]

    def prime(n):
        return n >= 2 and all(n % d for d in range(2, int(n**0.5) + 1))

    want = np.array([int(prime(n)) + 2 * int(prime(n + 1)) for n in range(301)], dtype=np.uint32)
    np.testing.assert_array_equal(got, want)


BROADCAST = """
from vyre_build.lang import *

@kernel(workgroup_size=64)
def pick(v: Buffer[vec4f], o: Buffer[vec4f, "w"]):
    i = global_id().x
    x = v[i]
    a = select(x.x > 0.0, x, 1.5)
    o[i] = a + (2.0 if x.y > 0.0 else x) * 2.0
"""


def test_select_and_conditional_expression_broadcast_a_scalar(tmp_path, backend):
    path = tmp_path / "pick.py"
    path.write_text(BROADCAST)
    k = compile_file(str(path))[0]
    code = CODE[backend](k)
    v = np.random.default_rng(3).standard_normal((77, 4)).astype(np.float32)
    got = load_kernel(k.meta, backend=backend, **code)(v=v, o=77)["o"]
    a = np.where(v[:, :1] > 0, v, np.float32(1.5))
    b = np.where(v[:, 1:2] > 0, np.float32(2.0), v)
    np.testing.assert_allclose(got, a + b * 2, rtol=1e-6)


UNROLL = """
from vyre_build.lang import *

N = 4

def first_over(v: vec4f, limit: f32) -> u32:
    for j in unroll(4):
        if (v.x if j == 0 else v.y if j == 1 else v.z if j == 2 else v.w) > limit:
            return u32(j)
    return u32(9)

@kernel(workgroup_size=64)
def unrolled(x: Buffer[vec4f], out: Buffer[f32, "w"], first: Buffer[u32, "w"],
             bits: Buffer[u32, "w"]):
    v = local_array(vec4f, N)
    i = global_id().x
    if i < len(out):
        for j in unroll(N):
            v[j] = x[i * N + j]
        acc = 0.0
        for j in unroll(N - 1, -1, -1):
            for k in unroll(2):
                acc += (v[j].x + f32(k)) * f32(j * 2 + k)
        out[i] = acc
        first[i] = first_over(v[0], 0.5)
        b = u32(0)
        for s in unroll(u32(1), u32(32), 8):
            b |= (i >> s) << (s - 1)
        bits[i] = b
"""


def test_unroll_copies_the_body_with_a_constant_counter(tmp_path, backend):
    # unroll(): local arrays indexed by the counter, nested and reversed unrolls, a typed
    # counter in shifts, a helper's return inside an unrolled if; no loop left in the code.
    path = tmp_path / "unrolled.py"
    path.write_text(UNROLL)
    k = compile_file(str(path))[0]
    # one loop: the block a helper that returns early is inlined in, which its return leaves
    assert k.wgsl.count("loop {") == 1 and "for (" not in k.wgsl
    n = 70
    x = np.random.default_rng(5).random((n * 4, 4), dtype=np.float32)
    res = load_kernel(k.meta, backend=backend, **CODE[backend](k))(x=x, out=n, first=n, bits=n)
    v = x.reshape(n, 4, 4)
    want = sum((v[:, j, 0] + k) * (j * 2 + k) for j in range(4) for k in range(2))
    np.testing.assert_allclose(res["out"], want, rtol=1e-5)
    over = v[:, 0, :] > 0.5
    np.testing.assert_array_equal(res["first"], np.where(over.any(1), over.argmax(1), 9))
    i = np.arange(n, dtype=np.uint64)
    bits = sum(((i >> s) << (s - 1)) for s in range(1, 32, 8)) & 0xFFFFFFFF
    np.testing.assert_array_equal(res["bits"], bits.astype(np.uint32))
