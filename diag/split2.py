import sys
sys.path.insert(0, "tests/gpu"); sys.path.insert(0, "tests")
import numpy as np
from test_runtime import load, IOTA_META, IOTA_SPVASM, assemble, _PROLOGUE
from vyre_build.runtime import load_kernel
from vyre_build.runtime.vulkan_backend import VulkanDevice
from vyre_build.runtime import vulkan_backend as vb
import vulkan as vk

def check(label, k, n=1000):
    out = k(out=n, start=1, step=2).array("out")
    want = 1 + 2 * np.arange(n, dtype=np.uint32)
    print(label, "wrong:", int((out != want).sum()), "zeros:", int((out == 0).sum()), flush=True)

d = VulkanDevice(pipeline_cache=False); d.max_workgroup_count = (4, 65535, 65535)
# a) WorkgroupId instead of GlobalInvocationId, workgroup of 1
text = IOTA_SPVASM.replace("OpDecorate %gid BuiltIn GlobalInvocationId", "OpDecorate %gid BuiltIn WorkgroupId").replace("LocalSize %main 32 1 1", "LocalSize %main 1 1 1")
assert text != IOTA_SPVASM
k = load_kernel({**IOTA_META, "workgroup_size": [1, 1, 1], "id": "wid", "name": "wid"}, spirv=assemble(text), device=d)
check("WorkgroupId, wg 1", k)
# b) vkCmdDispatchBase through vkGetDeviceProcAddr
class LibProxy:
    def __init__(self, lib, fn): self._lib, self._fn = lib, fn
    def __getattr__(self, name):
        return self._fn if name == "vkCmdDispatchBase" else getattr(self._lib, name)
class VkProxy:
    def __init__(self, mod, lib): self._mod, self.lib = mod, lib
    def __getattr__(self, name): return getattr(self._mod, name)
for name in (b"vkCmdDispatchBase", b"vkCmdDispatchBaseKHR"):
    p = vk.lib.vkGetDeviceProcAddr(d.dev, name)
    print(name, "proc addr null" if p == vk.ffi.NULL else "found")
    if p == vk.ffi.NULL: continue
    fn = vk.ffi.cast("PFN_vkCmdDispatchBase", p)
    vb.vk = VkProxy(vk, LibProxy(vk.lib, fn))
    iota = load("iota", "vulkan", d)
    check(f"GlobalInvocationId, {name.decode()} via vkGetDeviceProcAddr", iota)
    vb.vk = vk
print("loader export:", vk.lib.vkCmdDispatchBase)
