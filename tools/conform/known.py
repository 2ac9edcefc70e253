"""Bugs already found and recorded: a finding they explain is counted as known, not new.

Each has a regression test (tests/conformance/cases/, strict xfail until fixed): once a
fix lands that test turns red, and its entry here is deleted. An explanation is checked,
not assumed: a mismatch is known only if the program rewritten to avoid the bug (same
semantics by the language's definition) no longer shows it, and a self-check failure
only if every chk bit set belongs to a loop that the bug's arithmetic predicts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .check import evaluate
from .values import I32_MAX


@dataclass(frozen=True)
class Known:
    id: str
    layer: str
    summary: str
    case: str  # tests/conformance/cases/<case>.py


KNOWN = {
    k.id: k
    for k in (
        Known(
            "for-step-wrap",
            "lower (vyre_build/lower.py for_loop)",
            "range(lo, hi, step) with step != 1 counts i += step in the loop type, so a "
            "step past the type's end wraps and the loop runs on (Python's range stops)",
            "for_step_wrap",
        ),
        Known(
            "ranges-negative-shift",
            "range analysis (vyre_build/descriptor/ranges.py)",
            "a descending u32 loop to 0 and a shift by the literal 0: the Shr interval rule "
            "shifts by a negative bound (ValueError: negative shift count)",
            "ranges_negative_shift",
        ),
        Known(
            "ranges-zero-divide",
            "range analysis (vyre_build/descriptor/ranges.py)",
            "x // j with j the counter of a descending u32 loop: the Div interval rule divides "
            "by an upper bound of 0 (ZeroDivisionError)",
            "ranges_zero_divide",
        ),
        Known(
            "coarsen-local-array",
            "coarsening (vyre_build/descriptor/coarsen.py)",
            "in the coarse entry, copies 1-3 of the body read a local array back as zeros",
            "coarsen_local_array",
        ),
        Known(
            "coarsen-trailing-return",
            "coarsening (vyre_build/descriptor/coarsen.py)",
            "a kernel ending in `return` gets an invalid coarse descriptor (ops after a break)",
            "coarsen_trailing_return",
        ),
        Known(
            "wgpu-pipeline-segfault",
            "wgpu pipeline creation (naga's SPIR-V output on lavapipe; both wgpu paths)",
            "a segfault creating the pipeline of a while loop whose condition calls a "
            "helper with nested early returns and a stepped loop",
            "wgpu_pipeline_segfault",
        ),
        Known(
            "naga-spv-unord-ne",
            "naga SPIR-V reader (wgpu/SPIR-V path only)",
            "OpFUnordNotEqual reads back as an ordered !=, so NaN != x is false",
            "naga_unordered_not_equal",
        ),
        Known(
            "naga-spv-const-oob",
            "naga SPIR-V reader/validator (wgpu/SPIR-V path only)",
            "a store to a local array at a constant out-of-bounds index (dead, guarded "
            "code) is rejected: 'Accessing index N is out of [M] bounds'",
            "naga_constant_oob_store",
        ),
    )
}


def _wrap(ty: str, v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if ty == "i32" and v > I32_MAX else v


def compiled_trips(ty: str, lo: int, hi: int, step: int, cap: int) -> int:
    """Trips of the lowered loop (i += step in `ty`, wrapping), counting at most `cap`."""
    i, n = lo, 0
    while (i < hi if step > 0 else i > hi) and n < cap:
        n += 1
        i = _wrap(ty, i + step)
    return n


def _value(x, prog) -> int | None:
    if x is None:
        return None
    return prog.scalars.get(x, 0) if isinstance(x, str) else x


def explains_selfcheck(prog, chk_bits: int) -> bool:
    """Every set bit is a loop whose lowered form runs more trips than its guard allows."""
    loops = prog.stats.get("loops", {})
    for bit in range(32):
        if not chk_bits >> bit & 1:
            continue
        ok = False
        for ty, lo, hi, step, allowed in loops.get(bit, []):
            lo, hi = _value(lo, prog), _value(hi, prog)
            if lo is None or step == 1:
                continue
            if compiled_trips(ty, lo, hi, step, allowed + 1) > allowed:
                ok = True
        if not ok:
            return False
    return True


def coarse_dispatch(backend: str, prog) -> bool:
    """Did `backend` run the coarse entry? The -x4 ones always; the runtime's for an
    elementwise program, dispatched with the default grid (all lengths one multiple of 4)."""
    return backend.endswith("-x4") or (backend in ("wgpu", "vulkan") and prog.default_grid)


def uses_local_array(prog) -> bool:
    from .shrink import statements

    names = [s.line().split(" = ")[0] for s in prog.decls if "local_array(" in s.line()]
    return any(n + "[" in s.line() for s in statements(prog) for n in names)


def without_unordered_ne(prog):
    """`a != b` as `not (a == b)` and bool(x) as `not (x == 0)`: the same by definition."""
    prog = prog.copy()

    def fix(e):
        kids = tuple(fix(k) for k in e.kids)
        fmt = e.fmt
        if e.tag == "!=" and len(kids) == 2:
            fmt = "(not ({0} == {1}))"
        elif e.tag == "cast" and e.ty == "bool" and kids and kids[0].ty == "f32":
            fmt = "(not ({0} == 0.0))"
        return replace(e, fmt=fmt, kids=kids)

    from .shrink import statements

    for s in statements(prog):
        s.exprs = tuple(fix(e) for e in s.exprs)
    return prog


def explain(finding, prog, backends, runners=None) -> str | None:
    """The id of the known bug that explains `finding` on `prog`, or None."""
    if finding.kind == "selfcheck":
        bits = int(finding.detail.split("0x")[1].split()[0], 16)
        return "for-step-wrap" if explains_selfcheck(prog, bits) else None
    if finding.kind == "compile" and "ValueError: negative shift count" in finding.detail:
        return "ranges-negative-shift"
    if finding.kind == "compile" and "ZeroDivisionError" in finding.detail:
        return "ranges-zero-divide"
    if (
        finding.kind == "compile"
        and "'k+x4'" in finding.detail
        and "must end its body" in finding.detail
    ):
        return "coarsen-trailing-return"
    if (
        finding.kind == "mismatch"
        and coarse_dispatch(finding.backend, prog)
        and uses_local_array(prog)
    ):
        return "coarsen-local-array"
    if finding.backend != "wgpu-spirv":
        return None
    if (
        finding.kind == "error"
        and "Accessing index" in finding.detail
        and "bounds" in finding.detail
    ):
        return "naga-spv-const-oob"
    if finding.kind == "mismatch":
        fixed = without_unordered_ne(prog)
        outcome = evaluate(fixed, [finding.baseline, finding.backend], runners)
        if not any(f.key() == finding.key() for f in outcome.findings):
            return "naga-spv-unord-ne"
    return None
