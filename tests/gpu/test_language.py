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
