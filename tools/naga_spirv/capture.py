"""The SPIR-V naga makes of a kernel's WGSL, as wgpu hands it to the Vulkan driver.

    python3 tools/naga_spirv/capture.py KERNEL.py ID OUT.spv

Compiles KERNEL.py (root: its folder), creates kernel ID's pipeline on the wgpu backend
(our trusted module path: naga's bounds checks off, as the runtime runs it) in a child
process under the layer of layer.c (built here with cc; needs the Vulkan headers, Debian's
libvulkan-dev), and writes the module wgpu passed to vkCreateShaderModule to OUT.spv.
bench/matmul_f32_bench.py --spirv OUT.spv then runs that module on the Vulkan backend with
the kernel's bindings: whether the wgpu backend's gap is naga's code or wgpu's dispatch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CHILD = """
import sys
sys.path.insert(0, {root!r})
from vyre_build.compiler import compile_file
from vyre_build.runtime import get_device, load_kernel
found = [k for k in compile_file({path!r}, root={folder!r}) if k.stem == {kid!r}]
if not found:
    raise SystemExit("no kernel " + {kid!r} + " in " + {path!r})
load_kernel(found[0].meta, device=get_device("wgpu"), wgsl=found[0].wgsl)
"""


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    path, kid, out = (os.path.abspath(argv[0]), argv[1], os.path.abspath(argv[2]))
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "libvyre_dump.so")
        subprocess.run(
            ["cc", "-shared", "-fPIC", "-O1", "-o", lib, os.path.join(HERE, "layer.c")],
            check=True,
        )
        layer = {
            "file_format_version": "1.1.2",
            "layer": {
                "name": "VK_LAYER_vyre_dump",
                "type": "GLOBAL",
                "library_path": lib,
                "api_version": "1.3.0",
                "implementation_version": "1",
                "description": "writes every SPIR-V module to $SPV_DUMP_DIR",
                "functions": {
                    "vkGetInstanceProcAddr": "dump_GetInstanceProcAddr",
                    "vkGetDeviceProcAddr": "dump_GetDeviceProcAddr",
                },
            },
        }
        with open(os.path.join(tmp, "vyre_dump.json"), "w") as f:
            json.dump(layer, f)
        dump = os.path.join(tmp, "dump")
        os.mkdir(dump)
        env = dict(
            os.environ,
            VK_LAYER_PATH=tmp,
            VK_INSTANCE_LAYERS="VK_LAYER_vyre_dump",
            SPV_DUMP_DIR=dump,
        )
        code = CHILD.format(root=ROOT, path=path, folder=os.path.dirname(path), kid=kid)
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        # wgpu makes modules of its own too (its buffer-clearing and timestamp helpers):
        # the kernel's is the largest, and the only one with the kernel's LocalSize
        modules = sorted(os.listdir(dump), key=lambda m: os.path.getsize(os.path.join(dump, m)))
        shutil.copyfile(os.path.join(dump, modules[-1]), out)
    print(f"{out}: naga's SPIR-V of {kid}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
