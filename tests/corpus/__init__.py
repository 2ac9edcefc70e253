"""The hand-built descriptor corpus: name -> builder of a `descriptors.Case`.

Every case is a descriptor built with tests/descriptors.py plus its inputs and the
numpy-computed expectation. Both emitters take every case: spirv-val, naga, and real
dispatches (SPIR-V through the `vulkan` package and wgpu, WGSL through wgpu), but the
SPIR-V of the cases in `SPIRV_INVALID`, which strictly xfails spirv-val. `GOLDEN`
names the cases whose emitted text is pinned in both golden sets, as
tests/snapshots/wgsl/<stem>.wgsl and tests/snapshots/spirv/<stem>.spvasm
(`golden_stem`: the case name, but for saxpy, see there).
"""

from __future__ import annotations

from corpus.flow import case_control_flow, case_loops, case_returns, case_saxpy, case_terminators
from corpus.memory import case_atomics, case_bounds, case_shared, case_shared_atomics
from corpus.values import case_casts, case_float_ops, case_int_ops, case_pinned_ops
from corpus.vectors import VECTOR_CASES

__all__ = ["CORPUS", "GOLDEN", "SPIRV_INVALID", "golden_stem"]

CORPUS = {
    "saxpy_64": case_saxpy,
    "saxpy_256": lambda: case_saxpy(wg=256),
    "int_ops_u32": lambda: case_int_ops("U32"),
    "int_ops_i32": lambda: case_int_ops("I32"),
    "float_ops": case_float_ops,
    "casts": case_casts,
    "pinned_ops": case_pinned_ops,
    "loops": case_loops,
    "returns": case_returns,
    "terminators": case_terminators,
    "control_flow": case_control_flow,
    "shared": case_shared,
    "atomics": case_atomics,
    "bounds": case_bounds,
    "shared_atomics": case_shared_atomics,
    **VECTOR_CASES,
}
GOLDEN = (
    "saxpy_64",
    "saxpy_256",
    "pinned_ops",
    "loops",
    "returns",
    "terminators",
    "control_flow",
    "shared",
    "atomics",
    "bounds",
    "shared_atomics",
    "vec_construct_extract",
    "vec_casts",
)
# SPIR-V has no golden for these yet: what the emitter writes for them does not validate.
SPIRV_INVALID = {
    "shared_atomics": "a Bool uniform member becomes OpTypeBool in the Uniform block "
    "(spirv-val: OpTypeBool only in non-externally-visible storage classes)",
}
# Before the two sets shared this corpus each recorded its own saxpy, WGSL 256 wide and
# SPIR-V 64 wide; both files stay byte for byte as saxpy, so each set names the other width.
_HISTORIC_SAXPY = {"wgsl": "saxpy_256", "spirv": "saxpy_64"}


def golden_stem(target: str, name: str) -> str:
    """The golden file name (without suffix) of case `name` in the `target` set."""
    return "saxpy" if _HISTORIC_SAXPY[target] == name else name
