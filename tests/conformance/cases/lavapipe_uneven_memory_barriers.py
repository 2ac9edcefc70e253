"""Subgroups of one workgroup that run different numbers of memory barriers (fences, no
execution barrier) are abandoned on lavapipe: the workgroup ends with only the subgroups
that ran the fewest, and the others' later stores never land.

Found by: the spin-lock contention kernel (bench/kernels/contention.py) with an acquire
compare-exchange and a release exchange around its critical section, race-free under the
Vulkan memory model, ended on lavapipe with total 8-34 of 2,048 and the lock still held
(2026-12-06; the reference right every time): a subgroup stopped right after a winning
compare-exchange never ran its release. Minimised (scratch probes, 2026-12-06 18:xx UTC) to
this kernel: subgroup-sized groups of 8 lanes, group k runs k fences in a loop, then every
lane writes 1. On lavapipe 16 of 256 invocations finish (the first two groups); with the
count reversed (31 - k fences) the last two; with the same count everywhere all 256. The
fence's scope (device or workgroup) and the memory model (Vulkan or GLSL450) do not matter.
Given QueueFamily scope instead of Device (the same meaning within one dispatch), the
module runs right: lavapipe drops compute barriers of any other scope than workgroup and
device. An acquire or release atomic is the same case: Mesa puts a memory barrier beside
it, so lanes that retry it different numbers of times fall out of step in the same way.
spirv-val accepts the module.
Layer: Mesa lavapipe (llvmpipe runs a workgroup's subgroups as coroutines and suspends
them at a memory barrier as at a control barrier, with the same rule as
lavapipe_memory_barrier_suspends.py and lavapipe_memory_barrier_desyncs_barriers.py).
Other drivers must run it right (DRIVER); the reference does.
"""

import numpy as np

SOURCE = """
from vyre_build.lang import *

@kernel(workgroup_size=256)
def k(out: Buffer[u32, "w"]):
    i = local_id().x
    groups = i // 8
    j: u32 = 0
    while j < groups:
        fence(scope="device", order="acq_rel")
        j += 1
    out[i] = 1
"""
WHY = "lavapipe abandons subgroups that ran more memory barriers than the others"
XFAIL = {"vulkan": WHY}
NO_NAGA_SPIRV = "VulkanMemoryModel"  # naga's SPIR-V reader has no Vulkan memory model
NO_WGSL = "fence(scope='device'): memory ordering WGSL cannot express"
DRIVER = "llvmpipe"  # lavapipe's bug: other drivers must run it right


def inputs():
    return {"out": np.zeros(256, np.uint32)}, {}, 1


def expected(buffers, scalars):
    return {"out": np.ones(256, np.uint32)}
