"""Runtime benchmark: fresh-process start-up phase by phase (bundle with a cold and a warm
persisted pipeline cache, compile-from-source, bundle.warm() of the tree), bundle open,
per-dispatch host overhead vs hand-written wgpu-py / `vulkan` code, and (--device-report)
throughput.

    python bench/runtime_bench.py [--quick] [--device-report] [--backend wgpu|vulkan|both]
                                  [--no-write]

Every figure is measured in this run; ratios compare runs on the same machine and
device. Results are appended, dated, to bench/RESULTS.md (unless --no-write).
--quick uses small sizes and fewer runs (lavapipe on a shared CPU); the H200 numbers
come from a run without it. Start-up: bench/runtime_start.py.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "gpu")]

import numpy as np  # noqa: E402

import reference  # noqa: E402
import runtime_start  # noqa: E402
import test_runtime as shaders  # noqa: E402
from vyre_build.bundle.metadata_check import check_metadata  # noqa: E402
from vyre_build.runtime import get_device, open_bundle  # noqa: E402

KERNELS = os.path.join(ROOT, "kernels")
LINES: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def median_time(fn, repeat: int, number: int = 1) -> float:
    """Median seconds per call of `fn` over `repeat` rounds of `number` calls."""
    fn()
    rounds = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - t) / number)
    return statistics.median(rounds)


# ------------------------------------------------------------ 100-kernel bundle, cold start


def build_bundle(path: str, count: int = 100) -> list:
    """A bundle of `count` kernels: the tree's kernels, renamed copies until `count`
    (0: the tree's kernels alone)."""
    from vyre_build.bundle import write_bundle
    from vyre_build.compiler import compile_file

    compiled = []
    for file in sorted(f for f in os.listdir(KERNELS) if f.endswith(".py")):
        compiled += compile_file(
            os.path.join(KERNELS, file), root=KERNELS, targets=("wgsl", "spirv", "kdesc")
        )
    entries = []
    for i in range(count or len(compiled)):
        k = compiled[i % len(compiled)]
        name = k.meta["name"] if i < len(compiled) else f"{k.meta['name']}_{i}"
        meta = {
            **k.meta,
            "name": name,
            "id": f"{name}.{k.meta['variant']}" if k.meta.get("variant") else name,
        }
        arts = {s: b for s, b in k.artifacts.items() if s != ".meta.json"}
        entries.append({"meta": meta, "artifacts": arts})
    write_bundle(path, entries)
    return entries


def bundle_open(bundle: str, repeat: int) -> None:
    def once():
        open_bundle(bundle, device=None).close()

    t = median_time(once, repeat)
    say(f"bundle open (100 kernels, header + manifest): {t * 1e3:.3f} ms (target <= 5 ms)")


# ------------------------------------------------------------------ per-dispatch overhead


def wgpu_hand_written(n: int, wg: int = 64):
    """saxpy through wgpu-py's native API with buffers kept on the device: the baseline.
    `wg` is the workgroup size (256 for large n: 65535 workgroups per axis at most)."""
    import wgpu

    dev = get_device("wgpu").device  # same device; the baseline skips our layer only
    code = shaders.SAXPY_WGSL.replace("@workgroup_size(64, 1, 1)", f"@workgroup_size({wg}, 1, 1)")
    module = dev.create_shader_module(code=code)
    stor = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    x = dev.create_buffer_with_data(data=np.arange(n, dtype=np.float32), usage=stor)
    y = dev.create_buffer_with_data(data=np.zeros(n, np.float32), usage=stor)
    T = wgpu.BufferBindingType
    layout = dev.create_bind_group_layout(
        entries=[
            {"binding": i, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": t}}
            for i, t in enumerate((T.read_only_storage, T.storage, T.uniform))
        ]
    )
    pipe = dev.create_compute_pipeline(
        layout=dev.create_pipeline_layout(bind_group_layouts=[layout]),
        compute={"module": module, "entry_point": "main"},
    )

    def call():
        u = dev.create_buffer_with_data(
            data=np.array([2.0, 0, 0, 0], np.float32), usage=wgpu.BufferUsage.UNIFORM
        )
        group = dev.create_bind_group(
            layout=layout,
            entries=[
                {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
                for i, b in enumerate((x, y, u))
            ],
        )
        enc = dev.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(pipe)
        cp.set_bind_group(0, group)
        cp.dispatch_workgroups(-(-n // wg), 1, 1)
        cp.end()
        dev.queue.submit([enc.finish()])

    return call, get_device("wgpu").wait


def vulkan_hand_written(n: int):
    """saxpy through the `vulkan` package: one descriptor set and mapped uniform prepared
    once; per call: write the scalar, record, submit, wait."""
    import vulkan as vk

    d = get_device("vulkan")
    pipe, layout, set_layout = d.pipeline(
        check_metadata(shaders.SAXPY_META, "saxpy"), shaders.assemble(shaders.SAXPY_SPVASM)
    )
    x, y = d.buffer(np.arange(n, dtype=np.float32)), d.buffer(n, "f32")
    u = d._make(16, vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, True)
    sizes = [
        vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=2),
        vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, descriptorCount=1),
    ]
    pool_info = vk.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=2, pPoolSizes=sizes)
    pool = vk.vkCreateDescriptorPool(d.dev, pool_info, None)
    layouts = [set_layout]
    alloc = vk.VkDescriptorSetAllocateInfo(
        descriptorPool=pool, descriptorSetCount=1, pSetLayouts=layouts
    )
    dset = vk.vkAllocateDescriptorSets(d.dev, alloc)[0]
    infos = [
        [vk.VkDescriptorBufferInfo(buffer=b, offset=0, range=s)]
        for b, s in ((x.handle.buffer, n * 4), (y.handle.buffer, n * 4), (u.buffer, 16))
    ]
    kinds = (
        vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
    )
    writes = [
        vk.VkWriteDescriptorSet(
            dstSet=dset, dstBinding=i, descriptorCount=1, descriptorType=t, pBufferInfo=info
        )
        for i, (t, info) in enumerate(zip(kinds, infos))
    ]
    vk.vkUpdateDescriptorSets(d.dev, 3, writes, 0, None)
    # Its own command buffer and fence, from the device's pool.
    cmd_alloc = vk.VkCommandBufferAllocateInfo(
        commandPool=d.cmd_pool, commandBufferCount=1, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY
    )
    cmd = vk.vkAllocateCommandBuffers(d.dev, cmd_alloc)[0]
    fence, queue = vk.vkCreateFence(d.dev, vk.VkFenceCreateInfo(), None), d.queue
    scalar = np.array([2.0, 0, 0, 0], np.float32).tobytes()

    # `_keep` holds the buffers the descriptor set points at: collected, they would be
    # freed while dispatches still write them (heap corruption on lavapipe).
    def call(_keep=(x, y, u, sizes, pool_info, layouts, alloc, infos, writes, cmd_alloc)):
        u.mapped[0:16] = scalar
        begin = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        vk.vkBeginCommandBuffer(cmd, begin)
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe)
        vk.vkCmdBindDescriptorSets(
            cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, [dset], 0, None
        )
        vk.vkCmdDispatch(cmd, -(-n // 64), 1, 1)
        vk.vkEndCommandBuffer(cmd)
        cmds = [cmd]
        submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cmds)
        vk.vkQueueSubmit(queue, 1, [submit], fence)
        vk.vkWaitForFences(d.dev, 1, [fence], vk.VK_TRUE, 10**11)
        vk.vkResetFences(d.dev, 1, [fence])
        vk.vkResetCommandBuffer(cmd, 0)

    return call, lambda: None


def dispatch_overhead(backend: str, repeat: int, number: int) -> None:
    n = 256
    dev = get_device(backend)
    kern = shaders.load("saxpy", backend, dev)
    bx, by = dev.buffer(np.arange(n, dtype=np.float32), read_only=True), dev.buffer(n, "f32")
    hand, sync = (wgpu_hand_written if backend == "wgpu" else vulkan_hand_written)(n)

    def ours():
        kern(x=bx, y=by, a=2.0)

    def block(fn):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        return (time.perf_counter() - t) / number

    block(hand), block(ours)  # warm up both paths (pipelines, cached binding sets)
    # Interleaved rounds, best of each: other load on a shared machine hits both alike.
    rounds = [(block(hand), block(ours)) for _ in range(repeat * 3)]
    t_hand, t_ours = min(r[0] for r in rounds), min(r[1] for r in rounds)
    lib = "wgpu-py" if backend == "wgpu" else "`vulkan` package"
    say(
        f"[{backend}] small dispatch (saxpy n={n}, device buffers), per call: runtime "
        f"{t_ours * 1e6:.1f} us, hand-written {lib} {t_hand * 1e6:.1f} us, ratio "
        f"{t_ours / t_hand:.2f}x (target <= 1.1x; best of {repeat * 3} interleaved rounds)"
    )


# ----------------------------------------------------------------------- device report


def _on_device(dev, args: dict, meta: dict) -> dict:
    """Arrays uploaded as DeviceBuffers; a write-only output given as a length gets one
    zeroed buffer (else it would be allocated on every call)."""
    out = dict(args)
    for bind in meta["bindings"]:
        value = args[bind["name"]]
        if isinstance(value, np.ndarray):
            out[bind["name"]] = dev.buffer(value)
        elif bind["kind"] == "buffer":
            out[bind["name"]] = dev.buffer(value, bind["dtype"])
    return out


def _throughput(kernel, dev, args: dict, repeat: int, number: int, grid=None) -> tuple:
    """(host-inclusive s per dispatch: wall time of `number` calls in one device.batch()
    and its wait, as torch's figure is `number` ops and a synchronize; GPU s per dispatch
    from timestamps before the batch's first dispatch and after its last, or None)."""
    gpu = []

    def block():
        with dev.batch():
            for _ in range(number):
                kernel.dispatch(args, grid=grid)
        dev.wait()
        if dev.gpu_seconds is not None:
            gpu.append(dev.gpu_seconds / number)

    host = median_time(block, repeat) / number
    return host, (statistics.median(gpu[1:]) if len(gpu) > 1 else None)


def _compile_entries(paths: list, root: str) -> list:
    from vyre_build.compiler import compile_file

    entries = []
    for path in paths:
        for k in compile_file(path, root=root, targets=("wgsl", "spirv", "kdesc")):
            entries.append(
                {
                    "meta": k.meta,
                    "artifacts": {s: b for s, b in k.artifacts.items() if s != ".meta.json"},
                }
            )
    return entries


def device_report(backend: str, quick: bool, repeat: int, big: int | None = None) -> None:
    """Throughput of the tree's saxpy/add/reduce/scan/matmul and the bench's grid-stride
    saxpy/add (bench/kernels/stride.py), host-inclusive and (Vulkan) GPU-only, against
    torch on the same sizes and (wgpu) a hand-written WGSL saxpy. `big`: one more
    element count for the grid-stride kernels (beyond the 65,535-workgroup 1-D limit)."""
    dev = get_device(backend)
    dev.timing = True  # GPU timestamps where the backend has them (Vulkan)
    bundle_path = os.path.join(tempfile.mkdtemp(prefix="vyre-bench-"), "tree.vyrebundle")
    from vyre_build.bundle import write_bundle

    bench_kernels = os.path.join(HERE, "kernels")
    write_bundle(
        bundle_path,
        _compile_entries(
            [
                os.path.join(KERNELS, f)
                for f in ("saxpy.py", "add.py", "reduce.py", "scan.py", "matmul.py", "vector.py")
            ],
            KERNELS,
        )
        + _compile_entries([os.path.join(bench_kernels, "stride.py")], bench_kernels),
    )
    bundle = open_bundle(bundle_path, device=dev)
    # The largest 1-D grid a 256-wide kernel can cover in one dispatch (65535 workgroups).
    n = 1 << 16 if quick else 65535 * 256
    mm = (64, 64, 64) if quick else (2048, 2048, 2048)
    number = 5 if quick else 20
    rng = np.random.default_rng(0)
    # (stem, size, bytes moved per call or flops, unit, grid= or None, torch op)
    plan = [
        ("saxpy", n, 12 * n, "GB/s", None, "saxpy"),
        ("add.f32", n, 12 * n, "GB/s", None, "add.f32"),
        ("reduce_sum.u32", n, 4 * n, "GB/s", None, "reduce_sum.u32"),
        ("scan_inclusive", n, 8 * n, "GB/s", None, "scan_inclusive"),
        ("matmul", mm, 2 * mm[0] * mm[1] * mm[2], "GFLOP/s", None, "matmul"),
    ]
    # Grid-stride kernels at 1, 2, 4 and 8 elements per invocation (`big`: 4 and 16), each
    # grid at most the 65,535 x 256 invocations one dispatch can have.
    for size, pers in ((n, (1, 2, 4, 8)), (big, (4, 16))) if big else ((n, (1, 4)),):
        for per in pers:
            grid = min(-(-size // per), 65535 * 256)
            plan += [
                (f"{stem}_stride", size, 12 * size, "GB/s", grid, op)
                for stem, op in (("saxpy", "saxpy"), ("add", "add.f32"))
            ]
    # Four elements per invocation with every load issued first (bench/kernels/stride.py),
    # at n and at 4n floats (a grid of n / 4 and n invocations).
    plan += [
        (f"{stem}_coarse4", m, 12 * m, "GB/s", -(-m // 4), op)
        for m in (n, 4 * n)
        for stem, op in (("saxpy", "saxpy"), ("add", "add.f32"))
    ]
    # The tree's vec4 kernels (kernels/vector.py): 16-byte accesses, n floats as n/4 vec4s;
    # torch runs on the same n floats.
    # Also at the full 1-D grid (4n floats), where the GPU time outweighs recording.
    plan += [
        (stem, m, 48 * m, "GB/s", None, op)
        for m in (n // 4, n)
        for stem, op in (("saxpy4", "saxpy"), ("add4", "add.f32"))
    ]
    torch, torch_times = _torch(), {}
    say(
        f"[{backend}] device report: median of {repeat} rounds of {number} calls in one "
        "device.batch() on device buffers; host = wall time of the calls and the wait per "
        "dispatch, gpu = timestamps around the batch's dispatches (incl. barriers and gaps)"
    )
    # Half a second of full-size dispatches first, so the GPU's clocks are up before the
    # first row (torch, measured after each of our rows, is warm already).
    warm = _on_device(dev, reference.case("add.f32").inputs(rng, n), bundle["add.f32"].meta.record)
    deadline = time.perf_counter() + 0.5
    while time.perf_counter() < deadline:
        _throughput(bundle["add.f32"], dev, warm, 1, number)
    for stem, size, work, unit, grid, torch_op in plan:
        kernel = bundle[stem]  # a _stride kernel takes its tree kernel's arguments
        vec4 = stem in ("saxpy4", "add4")
        args = _on_device(
            dev, reference.case(stem if vec4 else torch_op).inputs(rng, size), kernel.meta.record
        )
        tsize = size * 4 if vec4 else size
        host, gpu = _throughput(kernel, dev, args, repeat, number, grid)
        label = stem + (f" grid={grid}" if grid else "")
        line = f"[{backend}] {label:30s} size={size}: host {work / host / 1e9:9.2f} {unit}"
        if gpu is not None:
            line += f", gpu {work / gpu / 1e9:9.2f} {unit}"
        if torch is not None:
            if (torch_op, tsize) not in torch_times:
                torch_times[torch_op, tsize] = _torch_time(torch, torch_op, tsize, repeat, number)
            tt = torch_times[torch_op, tsize]
            line += f" | torch ({_torch_device(torch)}) {work / tt / 1e9:9.2f} {unit}"
            if gpu is not None:
                line += f" (gpu {tt / gpu:.2f}x, host {tt / host:.2f}x of torch)"
        if stem == "saxpy" and backend == "wgpu":
            call, sync = wgpu_hand_written(n, wg=256)

            def hand_block(call=call, sync=sync):
                for _ in range(number):
                    call()
                sync()

            th = median_time(hand_block, repeat) / number
            line += f" | hand-written WGSL {work / th / 1e9:9.2f} {unit}"
        say(line)
        for value in args.values():
            if hasattr(value, "release"):
                value.release()


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _torch_device(torch) -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _torch_time(torch, stem: str, size, repeat: int, number: int) -> float:
    dev = _torch_device(torch)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    if stem == "matmul":
        m, nn, k = size
        a, b = torch.rand(m, k, device=dev), torch.rand(k, nn, device=dev)
        op = lambda: a @ b  # noqa: E731
    else:
        x, y = torch.rand(size, device=dev), torch.rand(size, device=dev)
        ops = {
            "saxpy": lambda: y.add_(x, alpha=2.0),
            "add.f32": lambda: x + y,
            "reduce_sum.u32": lambda: x.sum(),
            "scan_inclusive": lambda: x.cumsum(0),
        }
        op = ops[stem]

    def block():
        for _ in range(number):
            op()
        sync()

    return median_time(block, repeat) / number


# ---------------------------------------------------------------------------------- main


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    p.add_argument("--device-report", action="store_true", help="throughput figures too")
    p.add_argument("--backend", default="both", choices=("wgpu", "vulkan", "both"))
    p.add_argument("--no-write", action="store_true", help="do not append to RESULTS.md")
    a = p.parse_args(argv)
    backends = ("wgpu", "vulkan") if a.backend == "both" else (a.backend,)
    repeat = 3 if a.quick else 7
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    say(
        f"## {stamp} -- runtime_bench{' --quick' if a.quick else ''}"
        f"{' --device-report' if a.device_report else ''}"
    )
    say(
        f"host: {platform.machine()} {platform.system()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs"
    )
    for backend in backends:
        say(f"[{backend}] device: {get_device(backend).name}")
    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "hundred.vyrebundle")
        build_bundle(bundle)
        bundle_open(bundle, repeat=max(repeat, 20))
        import signing_bench  # bench/signing_bench.py: open with vs without verification

        signing_bench.report(bundle, max(repeat, 20), say)
        tree = os.path.join(tmp, "tree.vyrebundle")
        count = len(build_bundle(tree, count=0))
        for backend in backends:
            runtime_start.startup(backend, ROOT, tree, count, repeat, say)
    for backend in backends:
        dispatch_overhead(backend, repeat, 50 if a.quick else 500)
    if a.device_report:
        for backend in backends:
            device_report(backend, a.quick, repeat)
    if not a.no_write:
        with open(os.path.join(HERE, "RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n".join(["", "```", *LINES, "```", ""]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
