"""Per-element gcd and primality, through helpers that return early (also from inside a loop)."""
from vyre_build.lang import Buffer, global_id, kernel, u32


def gcd(a: u32, b: u32) -> u32:
    """Greatest common divisor by Euclid's algorithm; gcd(0, 0) == 0."""
    if b == 0:
        return a
    x = a
    y = b
    while y != 0:
        t = x % y
        x = y
        y = t
    return x


def is_prime(n: u32) -> bool:
    """Trial division by odd numbers up to sqrt(n)."""
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    d: u32 = 3
    while d <= n // d:
        if n % d == 0:
            return False
        d += 2
    return True


@kernel(workgroup_size=64, grid="g")
def gcd_prime(a: Buffer[u32], b: Buffer[u32], g: Buffer[u32, "w"], prime: Buffer[u32, "w"]):
    i = global_id().x
    if i < len(g):
        g[i] = gcd(a[i], b[i])
        prime[i] = u32(is_prime(a[i]))
