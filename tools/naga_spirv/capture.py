"""The SPIR-V naga makes of a kernel's WGSL, as wgpu hands it to the Vulkan driver.

    python3 tools/naga_spirv/capture.py KERNEL.py ID OUT.spv [--no-loop-bounding] [--inline-division]

Compiles KERNEL.py (root: its folder), creates kernel ID's pipeline on the wgpu backend
(our trusted module path: naga's bounds checks off, as the runtime runs it) in a child
process under the layer of layer.c (built here with cc; needs the Vulkan headers, Debian's
libvulkan-dev), and writes the module wgpu passed to vkCreateShaderModule to OUT.spv.
bench/matmul_f32_bench.py --spirv OUT.spv then runs that module on the Vulkan backend with
the kernel's bindings: whether the wgpu backend's gap is naga's code or wgpu's dispatch.

Without it the module is made with naga's loop bounding whether or not its loops are
proven to end (the runtime leaves the bounding out where they are: backends/wgpu/loops.py).
--no-loop-bounding: the module made without naga's loop bounding, to measure what the
bounding counter costs.
--inline-division: naga's integer division and remainder helpers (functions guarding
against a zero divisor) replaced, at each call, by the plain OpUDiv / OpUMod / OpSDiv /
OpSRem (text-edited with the pinned spirv-dis and spirv-as; valid only where every divisor
is non-zero, as in lib_matmul's constant divisors): to measure what the calls cost.
"""

from __future__ import annotations

import json
import os
import re
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
from vyre_build.runtime.backends.wgpu import module
module.runtime_checks = lambda code: {checks!r}  # as asked, proven or not
found = [k for k in compile_file({path!r}, root={folder!r}) if k.stem == {kid!r}]
if not found:
    raise SystemExit("no kernel " + {kid!r} + " in " + {path!r})
load_kernel(found[0].meta, device=get_device("wgpu"), wgsl=found[0].wgsl)
"""


def inline_division(spv: str, out: str) -> None:
    """Rewrite module `spv` into `out` with each call of a naga division helper (a function
    of two parameters returning OpUDiv / OpUMod / OpSDiv / OpSRem of the first by a
    zero-guarded second) replaced by that instruction on the call's operands."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from spirv_tools import pinned

    text = subprocess.run(
        [pinned("spirv-dis"), "--raw-id", spv], check=True, capture_output=True, text=True
    ).stdout
    helpers = {}
    for m in re.finditer(
        r"(%\d+) = OpFunction %(\w+) None %\d+\n\s*(%\d+) = OpFunctionParameter %\w+\n"
        r"\s*%\d+ = OpFunctionParameter %\w+\n(?:.*\n){3}"
        r"\s*%\d+ = (OpUDiv|OpUMod|OpSDiv|OpSRem) %\w+ \3 %\d+\n\s*OpReturnValue",
        text,
    ):
        helpers[m.group(1)] = m.group(4)
    if not helpers:
        raise SystemExit(f"{spv}: no naga division helper found")
    call = re.compile(r"(%\d+) = OpFunctionCall (%\w+) (%\d+) (%\w+) (%\w+)")
    text = call.sub(
        lambda m: (
            f"{m.group(1)} = {helpers[m.group(3)]} {m.group(2)} {m.group(4)} {m.group(5)}"
            if m.group(3) in helpers
            else m.group(0)
        ),
        text,
    )
    with tempfile.NamedTemporaryFile("w", suffix=".spvasm", delete=False) as f:
        f.write(text)
    try:
        subprocess.run(
            [pinned("spirv-as"), "--target-env", "vulkan1.3", "--preserve-numeric-ids",
             f.name, "-o", out],
            check=True,
        )  # fmt: skip
    finally:
        os.unlink(f.name)


def main(argv: list[str]) -> int:
    flags = {a for a in argv if a.startswith("--")}
    argv = [a for a in argv if not a.startswith("--")]
    if len(argv) != 3 or flags - {"--no-loop-bounding", "--inline-division"}:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    path, kid, out = (os.path.abspath(argv[0]), argv[1], os.path.abspath(argv[2]))
    checks = "None" if "--no-loop-bounding" in flags else "ForceLoopBounding"
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
        code = CHILD.format(
            root=ROOT, path=path, folder=os.path.dirname(path), kid=kid, checks=checks
        )
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        # wgpu makes modules of its own too (its buffer-clearing and timestamp helpers):
        # the kernel's is the largest, and the only one with the kernel's LocalSize
        modules = sorted(os.listdir(dump), key=lambda m: os.path.getsize(os.path.join(dump, m)))
        if "--inline-division" in flags:
            inline_division(os.path.join(dump, modules[-1]), out)
        else:
            shutil.copyfile(os.path.join(dump, modules[-1]), out)
    print(f"{out}: naga's SPIR-V of {kid}{''.join(' ' + f for f in sorted(flags))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
