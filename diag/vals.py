import json, sys
import numpy as np
sys.path.insert(0, "tools")
from vyre_build.compiler import compile_file
from vyre_build.runtime import load_kernel
case = json.load(open("diag/h200_wgpu_spirv_int.json"))
(k,) = compile_file("diag/v1.py", root="diag")
a = np.array(case["inputs"]["a"], np.int32); b = np.array(case["inputs"]["b"], np.uint32)
args = dict(a=a, b=b, out=300, p=-2, q=65535)
ref = load_kernel(k.meta, kdesc=k.kdesc, backend="cpu")(**args).array("out")
vk = load_kernel(k.meta, spirv=k.spirv, backend="vulkan")(**args).array("out")
bad = np.nonzero(ref != vk)[0][:12]
for i in bad:
    x = int(a[i]); print(f"x={x} ({x & 0xffffffff:#010x}) ref={ref[i]} vulkan={vk[i]}")
