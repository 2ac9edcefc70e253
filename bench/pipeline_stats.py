"""What the driver made of a kernel: its pipeline executables' statistics (registers per
invocation, spills, shared memory, instruction counts: whatever the driver reports) through
VK_KHR_pipeline_executable_properties, for the library kernels that issue 22 and 23 measure
and the hand-written GLSL witnesses of bench/glsl/prebuilt. Where ours is slower than the
GLSL of the same design, this says whether the driver gave it more registers (fewer
workgroups per SM) or spilled.

    python3 bench/pipeline_stats.py                      # the H200 (NVIDIA reports them)
    python3 bench/pipeline_stats.py --kernels lib_scan_look.f32,lib_mm_f16.f32
    python3 bench/pipeline_stats.py --kernels lib_mm_f16.f32,mm_f16_lib_k32 --ir DIR

--ir DIR also asks for the driver's internal representations of each pipeline
(VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR) and writes each into DIR,
where the driver gives any (to compare the code the driver made of ours and of the GLSL).

The extension is a debugging one: the runtime never enables it. This script makes its own
Vulkan device with it (the runtime's device, with the feature chained into its create-info
and VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR set on its pipelines), creates each
kernel's pipeline and prints every statistic of every executable. A device without the
extension (lavapipe) gets a one-line message and exit status 0.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import vulkan as vk  # noqa: E402

from vyre_build.compiler import compile_file  # noqa: E402
from vyre_build.core.errors import DeviceError  # noqa: E402
from vyre_build.runtime import load_kernel  # noqa: E402
from vyre_build.runtime.backends.vulkan import pipelines, profile  # noqa: E402
from vyre_build.runtime.backends.vulkan.device import VulkanDevice  # noqa: E402

EXT = "VK_KHR_pipeline_executable_properties"
KERNELS = os.path.join(ROOT, "kernels")
# (kernel file, the ids of it to report)
DEFAULT = {
    "lib_mm_f16.py": ("lib_mm_f16.f32", "lib_mm_f16.f16"),
    "lib_scan.py": ("lib_scan_look.f32", "lib_scan_block.f32", "lib_scan_sums.f32"),
    "lib_reduce.py": ("lib_reduce_once.sum_f32",),
    "lib_norm_warp.py": ("lib_softmax_warp.f32", "lib_layer_norm_warp.f32"),
    "lib_norm_flat.py": (
        "lib_softmax_flat.f32",
        "lib_layer_norm_flat.f32",
        "lib_softmax_pair.f32",
        "lib_layer_norm_pair.f32",
    ),
    "lib_matmul.py": ("lib_matmul.f32",),
}
# the GLSL witnesses (bench/glsl/prebuilt), with the library kernel whose bindings they take
GLSL = {
    "mm_f16_lib_k32": "lib_mm_f16.f32",
    "mm_f16_lib_k32_wide": "lib_mm_f16.f32",
}


def patch_for_statistics(internal: bool = False) -> None:
    """Chain the extension's feature into every device the runtime creates from now on and
    ask every pipeline for its statistics (and, with `internal`, for the driver's internal
    representations of it: `internals`)."""
    make_info, fill = profile.device_create_info, pipelines._stages

    def device_create_info(family, enable, keep):
        info = make_info(family, enable, keep)
        feature = vk.ffi.new("VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR*")
        feature.sType = (
            vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR
        )
        feature.pipelineExecutableInfo, feature.pNext = vk.VK_TRUE, info.pNext
        names = [vk.ffi.new("char[]", n.encode()) for n in (*enable.extensions, EXT)]
        array = vk.ffi.new("char*[]", names)
        keep += [feature, names, array]
        info.pNext, info.ppEnabledExtensionNames = feature, array
        info.enabledExtensionCount = len(names)
        return info

    def stages(infos, codes, entries, base, keep, *rest):
        fill(infos, codes, entries, base, keep, *rest)
        flags = vk.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
        if internal:
            flags |= vk.VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR
        for k in range(len(codes)):
            infos[k].flags |= flags

    profile.device_create_info = device_create_info
    pipelines._stages = stages


def _proc(dev, name):
    fn = vk.lib.vkGetDeviceProcAddr(dev.dev, name.encode())
    if fn == vk.ffi.NULL:
        raise SystemExit(f"{name}: not found on {dev.name}")
    return vk.ffi.cast("PFN_" + name, fn)


def _executables(dev, pipeline) -> list[tuple[str, object]]:
    """[(name, VkPipelineExecutableInfoKHR*)] of `pipeline`'s executables."""
    ffi = vk.ffi
    get = _proc(dev, "vkGetPipelineExecutablePropertiesKHR")
    info = ffi.new("VkPipelineInfoKHR*")
    info.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR
    info.pipeline = pipeline
    count = ffi.new("uint32_t*")
    get(dev.dev, info, count, ffi.NULL)
    props = ffi.new("VkPipelineExecutablePropertiesKHR[]", count[0])
    for p in props:
        p.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR
    get(dev.dev, info, count, props)
    out = []
    for index in range(count[0]):
        ex = ffi.new("VkPipelineExecutableInfoKHR*")
        ex.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR
        ex.pipeline, ex.executableIndex = pipeline, index
        out.append((ffi.string(props[index].name).decode(), ex))
    return out


def internals(dev, pipeline) -> list[tuple[str, str, bool, bytes]]:
    """[(executable, representation name, is text, bytes)]: the driver's internal
    representations of `pipeline` (a device patched with internal=True), where it gives any
    (vkGetPipelineExecutableInternalRepresentationsKHR: the count, the sizes, the data)."""
    ffi = vk.ffi
    get = _proc(dev, "vkGetPipelineExecutableInternalRepresentationsKHR")
    stype = vk.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR
    out = []
    for exe, ex in _executables(dev, pipeline):
        count = ffi.new("uint32_t*")
        get(dev.dev, ex, count, ffi.NULL)
        reps = ffi.new("VkPipelineExecutableInternalRepresentationKHR[]", count[0])
        for r in reps:
            r.sType = stype
        get(dev.dev, ex, count, reps)  # the sizes
        keep = []
        for r in reps:
            keep.append(ffi.new("char[]", max(1, r.dataSize)))
            r.pData = keep[-1]
        get(dev.dev, ex, count, reps)
        for r in reps:
            data = bytes(ffi.buffer(r.pData, r.dataSize))
            text = bool(r.isText)
            out.append(
                (exe, ffi.string(r.name).decode(), text, data.rstrip(b"\0") if text else data)
            )
    return out


def statistics(dev, pipeline) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(executable name, [(statistic, value)])] of `pipeline` on `dev` (a VulkanDevice)."""
    ffi = vk.ffi
    get = _proc(dev, "vkGetPipelineExecutableStatisticsKHR")
    out = []
    for exe, ex in _executables(dev, pipeline):
        count = ffi.new("uint32_t*")  # the Vulkan two-call idiom: the count, then the structs
        get(dev.dev, ex, count, ffi.NULL)
        stats = ffi.new("VkPipelineExecutableStatisticKHR[]", count[0])
        for item in stats:
            item.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR
        get(dev.dev, ex, count, stats)
        rows = []
        for s in stats:
            fmt = s.format
            if fmt == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
                value = str(bool(s.value.b32))
            elif fmt == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
                value = str(s.value.i64)
            elif fmt == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
                value = str(s.value.u64)
            else:
                value = f"{s.value.f64:g}"
            rows.append((ffi.string(s.name).decode(), value))
        out.append((exe, rows))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--kernels",
        default="",
        help="comma list of kernel ids of DEFAULT's files (default: the set DEFAULT names)",
    )
    ap.add_argument(
        "--ir",
        default="",
        metavar="DIR",
        help="also write the driver's internal representations of each pipeline (where it "
        "gives any) into DIR, a file each: KERNEL.EXECUTABLE.NAME.txt (or .bin)",
    )
    args = ap.parse_args(argv)
    wanted = set(filter(None, args.kernels.split(",")))
    physical = profile.physical_devices()
    if not physical:
        print("no Vulkan device")
        return 0
    have = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(physical[0][0], None)}
    if EXT not in have:
        print(f"{physical[0][2]}: no {EXT}: nothing to report")
        return 0
    patch_for_statistics(internal=bool(args.ir))
    # with --ir, no persisted pipeline cache: a pipeline the driver takes from its cache may
    # come without the representations it would capture while compiling
    dev = VulkanDevice(None, pipeline_cache=False) if args.ir else VulkanDevice(None)
    print(f"{dev.name}: pipeline executable statistics")
    metas = {}
    for file, ids in DEFAULT.items():
        for k in compile_file(os.path.join(KERNELS, file), root=KERNELS):
            metas[k.stem] = k.meta
            if k.stem in wanted if wanted else k.stem in ids:  # any of the files' kernels
                report(
                    dev, k.stem, lambda k=k: load_kernel(k.meta, device=dev, spirv=k.spirv), args.ir
                )
    for name, like in GLSL.items():
        path = os.path.join(HERE, "glsl", "prebuilt", name + ".spv")
        if os.path.exists(path) and (not wanted or name in wanted):
            with open(path, "rb") as f:
                code = f.read()
            meta = metas[like]
            report(
                dev,
                "glsl." + name,
                lambda m=meta, c=code: load_kernel(m, device=dev, spirv=c),
                args.ir,
            )
    dev.close()
    return 0


def described(dev, name: str, pipeline) -> list[str]:
    """A line per executable of `pipeline`: "NAME [EXECUTABLE]: statistic=value, ..."."""
    return [
        f"{name} [{exe}]: " + ", ".join(f"{s}={v}" for s, v in rows)
        for exe, rows in statistics(dev, pipeline)
    ]


def report(dev, name: str, load, ir: str = "") -> None:
    """Print the statistics of the pipeline of the kernel `load()` makes (or why not); with
    `ir`, write its internal representations into that directory."""
    try:
        pipeline = load().pipeline[0]
    except DeviceError as e:
        print(f"{name}: {e}")
        return
    print("\n".join(described(dev, name, pipeline)))
    if ir:
        os.makedirs(ir, exist_ok=True)
        found = internals(dev, pipeline)
        for exe, what, text, data in found:
            safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in f"{exe}.{what}")
            path = os.path.join(ir, f"{name}.{safe}.{'txt' if text else 'bin'}")
            with open(path, "wb") as f:
                f.write(data)
            print(f"{name} [{exe}]: internal representation {what!r}: {len(data)} bytes -> {path}")
        if not found:
            print(f"{name}: the driver gives no internal representation")


if __name__ == "__main__":
    sys.exit(main())
