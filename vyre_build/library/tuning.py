"""What of the library functions a tuning record may choose, and the choice they run with.

`LIBRARY_TUNABLES` (bundle/tuning.py, so the build checks candidates without the runtime) maps each tunable library function to its host parameters, each with
its range and its default (the value the function uses with no tunable or no record):

- reduce `partials`: workgroups of the first pass (the second pass adds up their partials);
- scan `blocks`: the most blocks the input is cut into (their sums scanned in one step);
- softmax, layer_norm `short_rows`: the longest row that goes to the short-row kernel
  (0: every row goes to the 256-wide one); the candidate's `kernel` (one of
  library.SHORT_DESIGNS: lib_{fn}_flat.f32, the default, _warp or _pair) is that kernel;
- matmul `tile`, `tile_m`, `tile_n` and `wg`: the block of C one workgroup computes
  (`tile_m` rows by `tile_n` columns; either one 0, the default, takes the square `tile`)
  and its workgroup size, for the candidate's `kernel` (default lib_matmul.f32, 128 and
  256).
- matmul_f16: no parameters; the candidate's `kernel` (lib_matmul_f16, the default, or
  lib_mm_f16.f32) is the f32-output kernel it runs where the shape allows it.

`library_choice(kernels, fn)` gives (kernel id or None, params): the tunable of `fn` in a
Bundle (or what `tune` forces), its pick for the device, with the defaults filled in; a
plain mapping of kernels (no tuning data) gets the defaults.
"""

from __future__ import annotations

from typing import Any

from vyre_build.bundle.tuning import LIBRARY_TUNABLES

__all__ = ["library_choice"]


def library_choice(kernels: Any, fn: str) -> tuple[str | None, dict[str, int]]:
    """(the kernel id the tuned candidate names, or None; every host parameter of `fn`)."""
    params = {name: spec[2] for name, spec in LIBRARY_TUNABLES[fn].items()}
    tunable_for = getattr(kernels, "tunable_for", None)
    name = tunable_for(fn) if tunable_for is not None else None
    choice = kernels.tuned(name) if name is not None else None
    if choice is None:
        return None, params
    params.update(choice.params)
    return choice.kernel, params
