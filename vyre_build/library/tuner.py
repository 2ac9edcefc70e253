"""The tuner behind `vyre-build tune`: every candidate of every tunable of a bundle, run on
one device, checked against the cpu reference and timed; the result is a tuning record.

Guarantees:
- A candidate is kept only when its result on the case's inputs matches the reference:
  the tunable's default candidate run by the cpu reference backend (integers exactly,
  floats within `tolerance` times the largest reference magnitude, at least 1). One that
  differs, or fails, is dropped with the reason and never chosen.
- Times are the device's: `device.gpu_seconds` (Vulkan timestamp queries, wgpu timestamp
  queries where offered), the median of `rounds` calls after one warm-up call; a device
  with no timestamps (the cpu backend) is timed by the host clock, and the record says so.
- Inputs are a pure function of the case and the tunable's name (seeded by its blake3), so
  two runs measure the same values; the record holds no time of day and no path.
- A time limit is checked before each candidate; tunables left when it runs out are in
  the record's `untuned`, with the reason; one cut off midway is too.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import blake3
import numpy as np

from vyre_build.bundle.tuning import check_record
from vyre_build.core.backends import REFERENCE
from vyre_build.core.errors import VyreError
from vyre_build.runtime.plan import DTYPES
from vyre_build.runtime.tuning import Choice, Forced, device_identity

__all__ = ["make_inputs", "tune_bundle"]


def make_inputs(name: str, case: dict) -> dict[str, Any]:
    """The case's arguments: arrays generated from their specs (seeded by `name`), scalars."""
    seed = int.from_bytes(blake3.blake3(name.encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for arg, spec in sorted(case["inputs"].items()):
        if not isinstance(spec, dict):
            out[arg] = spec
            continue
        shape, dtype, fill = tuple(spec["shape"]), DTYPES[spec["dtype"]], spec["fill"]
        count = int(np.prod(shape))
        if fill == "zeros":
            values = np.zeros(shape)
        elif fill == "ones":
            values = np.ones(shape)
        elif fill == "range":
            values = np.arange(count).reshape(shape) % 1000
        elif fill == "normal":
            values = rng.standard_normal(shape)
        elif np.issubdtype(dtype, np.integer):
            values = rng.integers(0, 100, shape)
        else:
            values = rng.uniform(-1.0, 1.0, shape)
        out[arg] = np.ascontiguousarray(values.astype(dtype))
    return out


def _run(kernels: Any, tunable: dict, choice: Choice, args: dict[str, Any]) -> dict[str, Any]:
    """One call of `choice` on `kernels` with `args`: {output name: numpy array}."""
    forced = Forced(kernels, choice)
    case = tunable["case"]
    # Fresh copies: a call may write its results into the arrays it was given.
    args = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    if tunable["library"] is not None:
        from vyre_build import library

        result = getattr(library, tunable["library"])(forced, **args)
        return {"result": np.array(result.read() if hasattr(result, "read") else result)}
    kernel = forced[choice.kernel]
    grid = case.get("grid")
    res = kernel(**args, **({"grid": tuple(grid)} if grid else {}))
    names = case.get("check") or sorted(res)
    return {n: np.array(res[n].read() if hasattr(res[n], "read") else res[n]) for n in names}


def _differs(got: dict[str, Any], want: dict[str, Any], tolerance: float) -> str | None:
    """Why `got` is not the reference `want`, or None when it matches."""
    for name, ref in want.items():
        out = got.get(name)
        if out is None or out.shape != ref.shape or out.dtype != ref.dtype:
            shape = None if out is None else (out.shape, str(out.dtype))
            return f"{name}: got {shape}, the reference is {(ref.shape, str(ref.dtype))}"
        if np.issubdtype(ref.dtype, np.integer):
            bad = np.flatnonzero(out.reshape(-1) != ref.reshape(-1))
            if bad.size:
                i = int(bad[0])
                return (
                    f"{name}: {bad.size} of {ref.size} values differ from the reference, the "
                    f"first at flat index {i}: {out.reshape(-1)[i]} instead of {ref.reshape(-1)[i]}"
                )
            continue
        o, r = out.astype(np.float64).reshape(-1), ref.astype(np.float64).reshape(-1)
        nan = np.isnan(o) != np.isnan(r)
        err = np.where(np.isnan(o) | np.isnan(r), 0.0, np.abs(o - r))
        allowed = tolerance * max(1.0, float(np.nanmax(np.abs(r), initial=0.0)))
        if nan.any() or (err.size and err.max() > allowed):
            bad = np.flatnonzero(nan | (err > allowed))
            i = int(bad[0])
            return (
                f"{name}: {bad.size} of {r.size} values differ from the reference, the first "
                f"at flat index {i} by {err[i]:.3g} "
                f"({o[i]:.6g} instead of {r[i]:.6g}; allowed {allowed:.3g})"
            )
    return None


def _device_args(device: Any, args: dict[str, Any]) -> dict[str, Any]:
    return {k: device.buffer(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}


def _time(device: Any, call: Callable[[], Any], rounds: int) -> tuple[float, str]:
    """(median seconds of `rounds` calls after a warm-up, "gpu" or "wall")."""
    device.timing = True
    try:
        call()  # warm-up: pipelines, scratch buffers and recipes made
        gpu, wall = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            call()
            device.wait()
            wall.append(time.perf_counter() - start)
            gpu.append(device.gpu_seconds)
    finally:
        device.timing = False
    if all(g is not None for g in gpu):
        return statistics.median(gpu), "gpu"
    return statistics.median(wall), "wall"


def tune_bundle(
    bundle: Any,
    reference: Any,
    *,
    rounds: int = 7,
    time_limit: float | None = None,
    progress: Callable[[str], None] = lambda line: None,
    only: list[str] | None = None,
) -> dict:
    """Tune every tunable of `bundle` (an open Bundle on the device to tune; `only`: those
    named) against `reference` (the same bundle open on the cpu backend); return the
    tuning record."""
    tunables = bundle.reader.tuning["tunables"]
    if only is not None:
        tunables = {n: t for n, t in tunables.items() if n in only}
    device = bundle.device
    deadline = None if time_limit is None else time.monotonic() + time_limit
    picks: dict[str, dict] = {}
    untuned: dict[str, str] = {}
    clocks = set()
    for n, name in enumerate(sorted(tunables), 1):
        tunable = tunables[name]
        head = f"[{n}/{len(tunables)}] {name}"
        if deadline is not None and time.monotonic() > deadline:
            untuned[name] = f"the time limit ({time_limit:g} s) ran out before it was tuned"
            progress(f"{head}: not tuned ({untuned[name]})")
            continue
        args = make_inputs(name, tunable["case"])
        default = _choice(name, tunable, tunable["default"])
        try:
            want = _run(reference, tunable, default, args)
        except (VyreError, TypeError, ValueError) as exc:  # a case it cannot take
            untuned[name] = (
                f"the reference ({REFERENCE.name} backend, candidate {tunable['default']!r}) failed: "
                f"{exc}"
            )
            progress(f"{head}: not tuned ({untuned[name]})")
            continue
        seconds: dict[str, float] = {}
        dropped: dict[str, str] = {}
        cut = False
        for cname in tunable["candidates"]:
            if deadline is not None and time.monotonic() > deadline:
                cut = True
                break
            choice = _choice(name, tunable, cname)
            try:
                why = _differs(
                    _run(bundle, tunable, choice, args), want, tunable["case"]["tolerance"]
                )
                if why is None:
                    dev_args = _device_args(device, args)
                    secs, clock = _time(
                        device,
                        lambda c=choice, a=dev_args, t=tunable: _run(bundle, t, c, a),
                        rounds,
                    )
                    seconds[cname] = secs
                    clocks.add(clock)
            except (VyreError, TypeError, ValueError) as exc:
                why = f"failed: {exc}"
            if why is not None:
                dropped[cname] = why
                progress(f"{head}: {cname} dropped: {why}")
            else:
                progress(f"{head}: {cname} {seconds[cname] * 1e3:.4f} ms")
        if cut:
            untuned[name] = (
                f"the time limit ({time_limit:g} s) ran out after {len(seconds) + len(dropped)} "
                f"of {len(tunable['candidates'])} candidates"
            )
            progress(f"{head}: not tuned ({untuned[name]})")
        elif not seconds:
            untuned[name] = "every candidate was dropped (see above); the default stays"
            progress(f"{head}: not tuned ({untuned[name]})")
        else:
            best = min(seconds, key=lambda c: (seconds[c], c))
            picks[name] = {"candidate": best, "seconds": seconds, "dropped": dropped}
            progress(f"{head}: picked {best}")
    record = {
        "device": device_identity(device.profile),
        "clock": "gpu" if clocks <= {"gpu"} else "wall",
        "picks": picks,
        "untuned": untuned,
    }
    return check_record(record)


def _choice(name: str, tunable: dict, cname: str) -> Choice:
    cand = tunable["candidates"][cname]
    return Choice(name, cname, cand["kernel"], dict(cand["params"]), "forced", None)
