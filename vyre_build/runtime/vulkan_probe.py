"""Whether a Vulkan driver honours vkCmdDispatchBase, probed once per device before the
first split dispatch.

A dispatch past the per-axis workgroup limit is split into pieces that start at a base
workgroup (vkCmdDispatchBase, pipelines made with VK_PIPELINE_CREATE_DISPATCH_BASE). The
H200's driver (580.159.04) ignores the base: every piece after the first wrote nothing where
it should (872 of 1000 elements 0), also through vkGetDeviceProcAddr's pointer, with and
without a pipeline cache, for WorkgroupId and GlobalInvocationId alike, while lavapipe
honours it. So before splitting, the runtime dispatches one workgroup at base (1, 0, 0) of a
kernel that writes its WorkgroupId.x + 1 at out[WorkgroupId.x]; a device where out is not
[0, 2] refuses split dispatches with a DispatchError instead of giving wrong results.

PROBE_SPIRV is the compiler's output for (regenerated and compared by
tests/unit/test_split_probe.py):

    @kernel(workgroup_size=1, grid=2)
    def vyre_dispatch_base_probe(out: Buffer[u32, "w"]):
        i = workgroup_id().x
        out[i] = i + 1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from vyre_build.runtime.vulkan_backend import VulkanDevice

PROBE_META = {
    "bindings": [{"access": "w", "binding": 0, "dtype": "u32", "kind": "buffer", "name": "out"}],
    "grid": [2],
    "id": "vyre_dispatch_base_probe",
    "name": "vyre_dispatch_base_probe",
    "uniform": None,
    "variant": None,
    "variant_values": {},
    "workgroup_size": [1, 1, 1],
}
PROBE_SPIRV = bytes.fromhex(
    "0302230700030100000000001b0000000000000011000200010000000e00030000000000010000000f000600"
    "05000000070000006d61696e0000000010000000100006000700000011000000010000000100000001000000"
    "050005000a0000006f75745f626c6f636b000000050003000c0000006f7574000500050010000000576f726b"
    "67726f757049640005000400070000006d61696e000000004700040009000000060000000400000047000300"
    "0a00000002000000480005000a000000000000002300000000000000480004000a0000000000000019000000"
    "470004000c0000002200000000000000470004000c000000210000000000000047000400100000000b000000"
    "1a00000015000400010000002000000000000000150004000200000020000000010000001600030003000000"
    "20000000140002000400000013000200050000002100030006000000050000001d0003000900000001000000"
    "1e0003000a00000009000000200004000b0000000c0000000a0000003b0004000b0000000c0000000c000000"
    "200004000d0000000c00000001000000170004000e0000000100000003000000200004000f00000001000000"
    "0e0000003b0004000f00000010000000010000002b0004000100000013000000010000002b00040001000000"
    "19000000000000003600050005000000070000000000000006000000f8000200080000003d0004000e000000"
    "110000001000000051000500010000001200000011000000000000004400050001000000150000000c000000"
    "000000008000050001000000140000001200000013000000b000050004000000160000001200000015000000"
    "f70003001800000000000000fa000400160000001700000018000000f800020017000000410006000d000000"
    "1a0000000c00000019000000120000003e0003001a00000014000000f900020018000000f800020018000000"
    "fd00010038000100"
)


def dispatch_base_works(dev: VulkanDevice) -> bool:
    """Dispatch the probe's workgroup 1 alone through a base workgroup; True when it wrote
    out[1] and nothing else. Called with the device's lock held (from Kernel planning)."""
    from vyre_build.bundle.metadata import check_metadata
    from vyre_build.runtime.kernel import Kernel

    kernel = Kernel(dev, check_metadata(PROBE_META, "the dispatch-base probe"), PROBE_SPIRV)
    pipe = kernel._pipeline(True)
    buf = dev.buffer(np.zeros(2, np.uint32))
    try:
        with dev._lock:
            entry = dev._bind(pipe, [(0, buf._live(), buf.nbytes)], None, None)
            try:
                dev._submit([(pipe, entry, (1, 1, 1), (1, 0, 0))], True)
            finally:
                dev._unbind(entry)
        return bool(buf.read(np.uint32).tolist() == [0, 2])
    finally:
        buf.release()
