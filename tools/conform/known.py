"""Bugs already found and recorded: a finding they explain is counted as known, not new.

Each has a regression test (tests/conformance/cases/, strict xfail until fixed): once a
fix lands that test turns red, and its entry here is deleted (seven were fixed so: the
stepped-loop wrap, two range-analysis crashes, two coarsening bugs, and naga's reading
of OpFUnordNotEqual, now emitted as !(a == b), and its refusal of a constant
out-of-bounds index, now decided at compile time). An explanation is checked by the error it
names, not assumed.
"""

from __future__ import annotations

from dataclasses import dataclass


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
            "wgpu-pipeline-segfault",
            "wgpu pipeline creation (naga's SPIR-V output on lavapipe; both wgpu paths)",
            "a segfault creating the pipeline of a while loop whose condition calls a "
            "helper with nested early returns and a stepped loop",
            "wgpu_pipeline_segfault",
        ),
        Known(
            "lavapipe-memory-barrier-suspends",
            "Mesa lavapipe (llvmpipe's coroutine subgroups; Vulkan and wgpu/SPIR-V)",
            "an invocation reaching a memory barrier (fence) in a loop after others of its "
            "workgroup returned loses its later writes",
            "lavapipe_memory_barrier_suspends",
        ),
        Known(
            "lavapipe-memory-barrier-desyncs-barriers",
            "Mesa lavapipe (llvmpipe's coroutine subgroups; Vulkan)",
            "a memory barrier (fence) that one subgroup runs in a loop of workgroup barriers "
            "puts it a barrier out of step: the others read shared memory before it is written",
            "lavapipe_memory_barrier_desyncs_barriers",
        ),
        Known(
            "lavapipe-release-store-in-loop",
            "Mesa lavapipe (Vulkan; its case runs right on NVIDIA's 580 driver)",
            "a release atomic_store in a loop that one invocation runs and breaks out of "
            "loses another invocation's later plain store",
            "lavapipe_release_store_in_loop",
        ),
        Known(
            "nvidia-abs-nan-compare",
            "NVIDIA's shader compiler (Vulkan driver 580.159.04; all three GPU paths)",
            "abs(x) >= 0.0 folded to true for a NaN x (no SignedZeroInfNanPreserve asked)",
            "nvidia_abs_nan_compare",
        ),
        Known(
            "nvidia-nested-max-negate",
            "NVIDIA's shader compiler (Vulkan driver 580.159.04; all three GPU paths)",
            "max(x, max(min(p, x), -x)) of i32s computed as if without the negation",
            "nvidia_nested_max_negate",
        ),
    )
}


def explain(finding, prog, backends, runners=None) -> str | None:
    """The id of the known bug that explains `finding` on `prog`, or None."""
    return None
