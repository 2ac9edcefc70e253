"""Names in scope, literals and indices: the leaves every expression generator draws from."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import floats
from .prog import INF, E, Facts, Param

I32_MIN, I32_MAX, U32_MAX = -(2**31), 2**31 - 1, 2**32 - 1
INT_EDGES = {
    "i32": [
        0,
        1,
        -1,
        2,
        -2,
        3,
        7,
        -8,
        31,
        32,
        33,
        40,
        255,
        -256,
        65535,
        I32_MIN,
        I32_MAX,
        -I32_MAX,
    ],
    "u32": [0, 1, 2, 3, 7, 31, 32, 33, 40, 255, 65535, 2**31, 2**31 - 1, U32_MAX, U32_MAX - 1],
}
FLOAT_LITERALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 0.25, -2.5, 1.5, 0.1, -0.75, 4.0, 100.0, 1e6]
FLOAT_EDGES = [1e30, -1e30, 3.4028234663852886e38, 1.1754943508222875e-38, -1.401298464324817e-45]
SMALL = Facts(mag=4.0, raw=True, lo=-4.0)  # the contents of a float input of class "in"
EDGE_F = Facts(mag=INF, nan=True, raw=True)  # edge inputs: NaN, infinities, denormals, FLT_MAX
EXACT = Facts(mag=floats.MAX_MAG, lo=-floats.MAX_MAG, mul=True)  # any finite exact float


@dataclass
class Val:
    """A name an expression may use: a local, a parameter, a loop variable, a constant."""

    name: str
    ty: str
    facts: Facts
    kind: str  # var let param loop const
    mutable: bool = False


@dataclass
class Buf:
    """A buffer or array and what it may hold (stores must stay within `facts`)."""

    name: str
    ty: str  # element type
    role: str  # in edge io out accd accs chk shared local
    facts: Facts
    size: int = 0  # arrays: element count
    ops: list = field(default_factory=list)  # accs: its one atomic op

    @property
    def readable(self) -> bool:
        return self.role not in ("out", "chk")


def int_literal(r, ty: str, uni: bool = True) -> E:
    v = r.choice(INT_EDGES[ty]) if r.random() < 0.6 else r.randint(-100, 100)
    if ty == "u32":
        v %= 2**32
    return E(ty, f"{ty}({v})", facts=Facts(uni=True, raw=True), tag="lit")


def bare(e: E) -> E:
    """A typed literal written bare, typed by the operand beside it (`x + 5`)."""
    if e.tag != "lit" or not e.fmt.startswith(("i32(", "u32(")):
        return e
    return E(e.ty, e.fmt[4:-1], facts=e.facts, tag="lit")


def float_literal(r, want: Facts, denormals: bool = True) -> E:
    """A literal within `want`; edge values only where want.nan allows them, and no
    denormal for a device that flushes them (--no-denormals)."""
    pool = [v for v in FLOAT_LITERALS if abs(v) <= want.mag and v >= want.lo]
    if want.nan:
        pool += FLOAT_EDGES if denormals else [v for v in FLOAT_EDGES if abs(v) >= 2.0**-126]
    v = r.choice(pool) if pool else (1.0 if want.lo >= 1 else 0.0)
    return E("f32", repr(float(v)), facts=floats.literal(v), tag="lit")


def zero(ty: str) -> E:
    """The simplest literal of a type (what the minimiser puts in place of an expression)."""
    if ty == "bool":
        return E(ty, "False", facts=Facts(uni=True, raw=True), tag="lit")
    one = ty == "f32" or ty.endswith("f")
    text = ("1.0" if one else "0") if ty.startswith("vec") else ("1.0" if one else f"{ty}(0)")
    text = f"{ty}({text})" if ty.startswith("vec") else text
    facts = Facts(mag=1.0, lo=1.0, raw=True, uni=True) if one else Facts(uni=True, raw=True)
    return E(ty, text, facts=facts, tag="lit")


def params_of(role_bufs: list, scalars: list) -> list:
    return [Param(b.name, b.ty, "buffer", _ACCESS[b.role], b.role) for b in role_bufs] + [
        Param(v.name, v.ty, "scalar") for v in scalars
    ]


_ACCESS = {"in": "r", "edge": "r", "io": "rw", "out": "w", "accd": "rw", "accs": "rw", "chk": "w"}
