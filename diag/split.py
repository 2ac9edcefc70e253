import sys, os
sys.path.insert(0, "tests/gpu"); sys.path.insert(0, "tests")
import numpy as np
from test_runtime import load
from vyre_build.runtime.vulkan_backend import VulkanDevice
from vyre_build.runtime import vulkan_pipelines as vp
import vulkan as vk

def run(label, dev, first_small):
    iota = load("iota", "vulkan", dev)
    if first_small:
        iota(out=128, start=7, step=3)
    out = iota(out=1000, start=1, step=2).array("out")
    want = 1 + 2 * np.arange(1000, dtype=np.uint32)
    print(label, "wrong:", int((out != want).sum()), "zeros:", int((out == 0).sum()), flush=True)

d = VulkanDevice(pipeline_cache=False); d.max_workgroup_count = (4, 65535, 65535)
run("split first (base pipeline only)", d, False); d.close()
d = VulkanDevice(pipeline_cache=False); d.max_workgroup_count = (4, 65535, 65535)
run("small then split", d, True); d.close()
d = VulkanDevice(pipeline_cache=False); d.max_workgroup_count = (4, 65535, 65535)
d.pipeline_cache = vk.ffi.NULL
run("small then split, no VkPipelineCache", d, True)
# every pipeline created with the flag
orig = vp._create
vp._create = lambda dev, k, base: orig(dev, k, True)
d2 = VulkanDevice(pipeline_cache=False); d2.max_workgroup_count = (4, 65535, 65535)
run("all pipelines flagged", d2, True); d2.close()
vp._create = orig
# base per piece observed by a shader that writes workgroup id
