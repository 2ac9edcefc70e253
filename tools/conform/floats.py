"""The float policy: which f32 values may flow where, and how far backends may differ.

Every float expression carries `Facts` (prog.py): a bound `mag` on its magnitude and a bound
`err` on how far two conforming backends may disagree about it (absolute). The rules:

- Exact ops (+ - * on finite values, negation, abs, min/max/clamp, floor/ceil/trunc/round,
  sign, casts from integers, division by a power of two, select) are IEEE-exact on every
  backend, so chains of them on exact operands have err 0 and must match bit for bit
  (up to the sign of zero and NaN payloads). Two exceptions, both allowed by Vulkan (as by
  GLSL without `precise`) and done by lavapipe's NIR: an add or subtract that takes a
  product may be contracted into an fma (half an ulp of the product), and an add (mul)
  chain may be regrouped, `(x + 0.1) - 3.0` -> `x + (0.1 - 3.0)` or `t * (a * t)` ->
  `(t * t) * a` (an ulp of the chain's magnitude per op). Without NoContraction SPIR-V
  allows both: lavapipe folds constants so (the first long run), the H200 regroups any
  chain (the first run there). Only two raw operands (loads, parameters, literals) have
  nothing to regroup. A select may be folded or have a shared op factored out (the
  frontend does both), so it passes a product's contractibility on.
- Inexact ops get the precision Vulkan requires of them (Vulkan spec, "Precision and
  Operation of SPIR-V Instructions"), on arguments kept where that bound is defined:
  division 2.5 ulp by a denominator >= 1; sqrt and inversesqrt a few ulp; exp/exp2
  (3 + 2|x|) ulp on |x| <= 8; log/log2 3 ulp or 2^-21 absolute on arguments >= 1;
  sin/cos 2^-11 absolute on [-pi, pi]; tan on [-1, 1] and tanh on [-8, 8] 2^-8 and 2^-10
  absolute; fma fused or not (half an ulp of the product). Errors propagate through later
  ops by the usual first-order bounds (each rule below is monotone in its operands' facts,
  so the minimiser may replace an operand by one with smaller facts).
- Discontinuous consumers (comparisons, floor and friends, casts to integers, bitcast,
  sign, isnan/isinf/isfinite, float `//`) take only exact values: an approximate value
  could fall on either side of a step.
- Edge values (NaN of several payloads, +-inf, +-FLT_MAX, 1e30, +-0, denormals) come from
  "edge" inputs and from bitcast(f32, int); they reach only ops whose result is pinned for
  them: moves, select, negation, abs, comparisons, classification, casts to integers,
  floor/ceil/trunc/round. Never arithmetic, and never min/max (NaN operands are
  backend-defined). bitcast(u32, x) takes only raw values (loads, literals, their negation),
  since arithmetic may lose the sign of a zero.
- Denormals: lavapipe and the CPU reference keep them (measured: a denormal input
  survives loads, stores, `x * 1.0` and `x == 0.0` is false). A device that flushes them
  (most GPUs by default; the H200 does, in comparisons too) disagrees on them; pass
  `--no-denormals` there: then no input, literal or bitcast(f32, int) is a denormal.
- NaN payloads are pinned through copies only: bitcast(int, x) never takes a negated NaN.
- Magnitudes stay below 2^100 in arithmetic (a clamp is inserted where a bound would
  pass it), so no arithmetic result overflows to infinity.

Outputs are compared with prog.Program.tolerances(): an output whose stores all have err 0
must match bit for bit (+-0 equal, NaN equal to NaN of any payload); otherwise
|a - b| <= tol + 4 ulp(max(|a|, |b|)).
"""

from __future__ import annotations

import math

from .prog import INF, Facts

ULP = 2.0**-23
MAX_MAG = 2.0**100  # arithmetic keeps magnitudes below this (no overflow to inf)
SIN_ABS = 2.0**-11
TAN_ABS = 2.0**-8
TANH_ABS = 2.0**-10
LOG_ABS = 2.0**-21


def ulp(m: float) -> float:
    return max(m, 2.0**-126) * ULP


def uni(*fs: Facts) -> bool:
    return all(f.uni for f in fs)


def _rounded(mag: float, err: float) -> float:
    # Once operands may differ, the rounded results may differ by one more ulp.
    return err + ulp(mag) if err > 0 else 0.0


def _regroups(a: Facts, b: Facts, chain_a: bool, chain_b: bool) -> tuple[bool, bool]:
    """(the result is part of a chain, a compiler may regroup this op). Without SPIR-V's
    NoContraction a compiler may reassociate any add (mul) chain, not only one holding a
    constant (found on the H200: `t * (a * t)` evaluated as `(t * t) * a`)."""
    return True, (a.konst or b.konst or chain_a or chain_b) and not (a.raw and b.raw)


def add(a: Facts, b: Facts, contract: bool) -> Facts:
    mag = a.mag + b.mag
    err = _rounded(mag, a.err + b.err)
    if contract and (a.mul or b.mul):
        err += ulp(mag) + ulp(max(a.mag if a.mul else 0, b.mag if b.mul else 0))
    chain, regroup = _regroups(a, b, a.kadd, b.kadd)
    err += 2 * ulp(mag) if regroup else 0.0
    return Facts(mag=mag, err=err, uni=uni(a, b), kadd=chain)


def mul(a: Facts, b: Facts) -> Facts:
    mag = a.mag * b.mag
    err = _rounded(mag, a.mag * b.err + b.mag * a.err + a.err * b.err)
    chain, regroup = _regroups(a, b, a.kmul, b.kmul)
    err += 2 * ulp(mag) if regroup else 0.0
    return Facts(mag=mag, err=err, mul=True, uni=uni(a, b), lo=-mag, kmul=chain)


def div(a: Facts, b: Facts) -> Facts:
    """a / b with b >= 1 (b.lo >= 1): 2.5 ulp plus propagation."""
    assert b.lo >= 1.0
    mag = a.mag
    err = a.err + a.mag * b.err + 3 * ulp(mag)
    return Facts(mag=mag, err=err, uni=uni(a, b))


def scale(a: Facts, factor: float) -> Facts:
    """Multiplication or division by a power of two: exact, unless it regroups with
    another constant of a product chain."""
    mag = a.mag * factor
    err = a.err * factor + (2 * ulp(mag) if a.kmul else 0.0)
    return Facts(mag=mag, err=err, uni=a.uni, lo=-mag, kmul=True)


def neg(a: Facts) -> Facts:
    return Facts(
        mag=a.mag,
        err=a.err,
        nan=a.nan,
        raw=a.raw,
        mul=a.mul,
        uni=a.uni,
        konst=a.konst,
        kadd=a.kadd,
        kmul=a.kmul,
    )


def absolute(a: Facts) -> Facts:
    return Facts(mag=a.mag, err=a.err, nan=a.nan, raw=a.raw, uni=a.uni, lo=0.0, konst=a.konst)


def plus_const(a: Facts, c: float) -> Facts:
    """abs(x) + c with c > 0: a lower bound of c (abs ends any chain, so no regrouping)."""
    mag = a.mag + c
    return Facts(mag=mag, err=_rounded(mag, a.err), uni=a.uni, lo=c, kadd=True)


def join(*fs: Facts) -> Facts:
    """A value that is one of `fs` (select, min, max, a vector of them)."""
    return Facts(
        mag=max(f.mag for f in fs),
        err=max(f.err for f in fs),
        lo=min(f.lo for f in fs),
        nan=any(f.nan for f in fs),
        raw=all(f.raw for f in fs),
        mul=any(f.mul for f in fs),  # the frontend folds constant selects, factors shared ops
        uni=uni(*fs),
        konst=all(f.konst for f in fs),
        # a lane (vector) or arm that is a constant may fold with a neighbour's: the H200
        # turns (v - 0.1) * 0.1 into an fma of v with folded constants, lane by lane
        kadd=any(f.kadd or f.konst for f in fs),
        kmul=any(f.kmul or f.konst for f in fs),
    )


def clamp(a: Facts, bound: float) -> Facts:
    return Facts(mag=min(a.mag, bound), err=a.err, uni=a.uni, lo=max(a.lo, -bound))


def rounding(a: Facts) -> Facts:
    """floor ceil trunc round: exact, defined for every value."""
    return Facts(mag=a.mag + 1, nan=a.nan, uni=a.uni)


def from_int(ty: str, uni_: bool) -> Facts:
    return Facts(mag=2.0**32 if ty == "u32" else 2.0**31, uni=uni_)


def literal(v: float) -> Facts:
    edge = not math.isfinite(v) or (v != 0 and abs(v) < 2.0**-126) or abs(v) > MAX_MAG
    return Facts(mag=INF if edge else abs(v), nan=edge, raw=True, uni=True, lo=v, konst=True)


def transcendental(name: str, a: Facts) -> tuple[Facts, float]:
    """(facts of name(x), the bound the argument must stay within) for one unary op.

    The caller shapes the argument: clamp to the bound, or abs(x) + 1 for the log family.
    """
    m, e = a.mag, a.err
    if name in ("sin", "cos"):
        return Facts(mag=1.0, err=e + SIN_ABS, uni=a.uni, lo=-1.0), 3.0
    if name == "tan":
        return Facts(mag=1.6, err=3.5 * e + TAN_ABS, uni=a.uni, lo=-1.6), 1.0
    if name == "tanh":
        return Facts(mag=1.0, err=e + TANH_ABS, uni=a.uni, lo=-1.0), 8.0
    if name in ("exp", "exp2"):
        base = math.e if name == "exp" else 2.0
        top = base ** min(m, 8.0)
        slope = top * (1.0 if name == "exp" else math.log(2))
        return Facts(mag=top, err=slope * e + (3 + 2 * 8) * ulp(top), uni=a.uni, lo=0.0), 8.0
    if name in ("log", "log2"):  # argument >= 1
        top = math.log(m + 1) / (1.0 if name == "log" else math.log(2))
        slope = 1.0 if name == "log" else 1 / math.log(2)
        return Facts(mag=top, err=slope * e + max(LOG_ABS, 3 * ulp(top)), uni=a.uni, lo=0.0), 0
    if name == "sqrt":  # argument >= 0
        top = math.sqrt(m)
        return Facts(mag=top, err=math.sqrt(e) + 6 * ulp(top), uni=a.uni, lo=0.0), 0
    if name == "rsqrt":  # argument >= 1
        return Facts(mag=1.0, err=e / 2 + 3 * ulp(1.0), uni=a.uni, lo=0.0), 0
    raise KeyError(name)


def fma(a: Facts, b: Facts, c: Facts) -> Facts:
    p = mul(a, b)
    mag = p.mag + c.mag
    return Facts(mag=mag, err=p.err + c.err + ulp(p.mag) + ulp(mag), uni=uni(a, b, c))
