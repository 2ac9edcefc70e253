"""The execution paths a program runs on, each `run(compiled, prog) -> {buffer: array}`.

- "reference": the CPU reference (`vyre_build.reference.execute`) on the descriptor;
- "wgpu": WGSL through the runtime (`load_kernel(meta, wgsl=..., backend="wgpu")`);
- "vulkan": SPIR-V through the runtime (`load_kernel(meta, spirv=..., backend="vulkan")`);
- "wgpu-spirv": the same SPIR-V bytes through wgpu (naga's SPIR-V reader). The runtime
  has no such path (its wgpu device takes WGSL only), so `_WgpuDirect` dispatches itself on
  the runtime's wgpu device;
- "wgpu-x4": the coarse entry point (`meta["coarse"]`, descriptor/coarsen.py) of the WGSL,
  each invocation doing 4 elements, for programs whose buffers all have one length, a
  multiple of 4 (the runtime's condition for it); the runtime does not dispatch it yet;
- "reference-x4": the CPU reference on that coarse descriptor (`descriptor.coarsen.entries`),
  which tells a coarsening bug from an emitter's.

`_WgpuDirect`'s layout declares every storage buffer read-write: naga
  reads a buffer decorated NonWritable on its block member as writable, and refuses a
  read-only layout entry for it ("Storage class Storage { access: LOAD } doesn't match the
  shader Storage { access: LOAD | STORE }").

Each returns the final contents of every storage buffer (read-only ones unchanged), as
flat numpy arrays in host layout.
"""

from __future__ import annotations

import struct

import numpy as np

ALL = ("reference", "wgpu", "vulkan", "wgpu-spirv", "wgpu-x4", "reference-x4")


class Unavailable(Exception):
    """The backend cannot run here at all (no package, no adapter): skipped, not failed."""


def _float_broadcast_first(compiled) -> bool:
    """Whether a subgroup_broadcast_first broadcasts a float (lavapipe_broadcast_first_vector.py)
    or the bitcast of one straight away (lavapipe_broadcast_first_bitcast.py: LLVM folds the
    bitcast through the broadcast); one validate of the program's descriptor, cached."""
    key = compiled.kdesc  # one per program (an id() could be reused)
    if _BROADCAST_FIRST.get("key") != key:
        _BROADCAST_FIRST.update(key=key, hit=_broadcasts_a_float(compiled.descriptor))
    return _BROADCAST_FIRST["hit"]


_BROADCAST_FIRST: dict = {}


def _broadcasts_a_float(desc) -> bool:
    from vyre_build.descriptor import validate
    from vyre_build.descriptor.view import Bitcast, Subgroup

    floats = ("f32", "vec2f", "vec4f")
    info = validate(desc)
    made = {op.result: op for op in info.view.ops if op.result is not None}
    for op in info.view.ops:
        if isinstance(op, Subgroup) and op.name == "broadcast_first" and op.operands:
            value = op.operands[0]
            src = made.get(value)
            if info.types.get(value) in floats or (
                isinstance(src, Bitcast) and info.types.get(src.a) in floats
            ):
                return True
    return False


def _on_lavapipe(backend: str) -> bool:
    """Whether `backend`'s adapter is Mesa's lavapipe (llvmpipe), whose LLVM bug the skip
    is for; True when the adapter cannot be asked (the run then fails elsewhere anyway)."""
    kind = "vulkan" if backend == "vulkan" else "wgpu"
    if kind not in _LAVAPIPE:
        try:
            from vyre_build.runtime import get_device

            _LAVAPIPE[kind] = "llvmpipe" in get_device(kind).name.lower()
        except Exception:  # noqa: BLE001 - no adapter: keep the conservative skip
            _LAVAPIPE[kind] = True
    return _LAVAPIPE[kind]


_LAVAPIPE: dict = {}


def reference_execute():
    """`vyre_build.reference.execute`, or Unavailable until the reference backend lands."""
    try:
        from vyre_build.reference import execute
    except ImportError as exc:
        raise Unavailable(f"no CPU reference backend: {exc}") from exc
    return execute


def _args(prog) -> dict:
    args = {k: v.copy() for k, v in prog.inputs.items()}
    args.update(prog.scalars)
    return args


def _flat(out: dict, prog) -> dict:
    result = {k: v.copy() for k, v in prog.inputs.items()}
    for name, arr in out.items():
        result[name] = np.ascontiguousarray(arr).reshape(-1)
    return result


def run_reference(compiled, prog) -> dict:
    execute = reference_execute()
    buffers = {k: v.copy() for k, v in prog.inputs.items()}
    out = execute(
        compiled.descriptor,
        buffers,
        dict(prog.scalars),
        (prog.groups, 1, 1),
        subgroup_size=getattr(prog, "subgroup_size", 8),
    )
    return _flat(out, prog)


def coarse_groups(compiled, prog) -> int:
    """Workgroups of the coarse entry: each invocation does `factor` elements."""
    coarse, meta = compiled.meta["coarse"], compiled.meta
    elements = next(prog.inputs[b["name"]].size for b in meta["bindings"] if b["kind"] == "buffer")
    return -(-elements // (coarse["factor"] * meta["workgroup_size"][0]))


def run_reference_coarse(compiled, prog) -> dict:
    from vyre_build.descriptor import validate
    from vyre_build.descriptor.coarsen import entries

    execute = reference_execute()
    ((_, coarse, info),) = entries(compiled.descriptor, validate(compiled.descriptor))
    buffers = {k: v.copy() for k, v in prog.inputs.items()}
    out = execute(
        coarse,
        buffers,
        dict(prog.scalars),
        (coarse_groups(compiled, prog), 1, 1),
        info=info,
        subgroup_size=getattr(prog, "subgroup_size", 8),
    )
    return _flat(out, prog)


def uniform_block(meta: dict, scalars: dict) -> bytes:
    """The Params block as docs/descriptor-conventions.md lays it out (4 bytes a member)."""
    block = bytearray(meta["uniform"]["size"])
    for b in meta["bindings"]:
        if b["kind"] == "scalar":
            struct.pack_into(_PACK[b["dtype"]], block, b["offset"], scalars[b["name"]])
    return bytes(block)


_PACK = {"f32": "<f", "i32": "<i", "u32": "<I"}


def _runtime_kernel(compiled, backend: str):
    try:
        from vyre_build.runtime import load_kernel
    except ImportError as exc:  # pragma: no cover - the runtime ships with the package
        raise Unavailable(str(exc)) from exc
    code = {"wgsl": compiled.wgsl} if backend == "wgpu" else {"spirv": compiled.spirv}
    return load_kernel(compiled.meta, backend=backend, **code)


def run_runtime(backend: str):
    def run(compiled, prog) -> dict:
        kernel = _runtime_kernel(compiled, backend)
        out = kernel.dispatch(_args(prog), grid=None if prog.default_grid else prog.invocations)
        return _flat(out, prog)

    return run


def without_spec_constants(spirv: bytes) -> bytes:
    """`spirv` with its specialization constants made plain constants of their defaults
    (OpSpecConstant -> OpConstant, SpecId decorations dropped): what Vulkan runs for an
    unsplit dispatch. naga (wgpu 0.32) reads spec constants as overrides, and a module with
    overrides has every constant expression evaluated at pipeline creation, which refuses
    valid kernels ("Pipeline constant error: << operation overflowed", "Function [0] 'main'
    is invalid"; tests/unit/test_spirv_vulkan.py asserts that refusal), so the
    wgpu-spirv path reads our SPIR-V this way."""
    words = np.frombuffer(spirv, dtype="<u4").copy()
    out, at = [words[:5]], 5
    while at < len(words):
        count, opcode = int(words[at]) >> 16, int(words[at]) & 0xFFFF
        inst = words[at : at + max(count, 1)].copy()
        if opcode == 50:  # OpSpecConstant
            inst[0] = (count << 16) | 43  # OpConstant
        if not (opcode == 71 and count == 4 and inst[2] == 1):  # OpDecorate _ SpecId _
            out.append(inst)
        at += max(count, 1)
    return np.concatenate(out).astype("<u4").tobytes()


class _WgpuDirect:
    """WGSL or SPIR-V through wgpu's create_shader_module, on the runtime's wgpu device,
    from entry point `main` or, with `coarse`, the coarse entry for 4 elements each."""

    def __init__(self, code: str, coarse: bool = False):
        self.code, self.coarse = code, coarse

    def __call__(self, compiled, prog) -> dict:
        import wgpu

        from vyre_build.runtime import get_device

        device = get_device("wgpu").device
        meta = compiled.meta
        bufs = [b for b in meta["bindings"] if b["kind"] == "buffer"]
        read_only = wgpu.BufferBindingType.read_only_storage
        if self.code == "spirv":  # naga reads a NonWritable member as writable (see above)
            read_only = wgpu.BufferBindingType.storage
        entries_layout = [
            {
                "binding": b["binding"],
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {
                    "type": read_only if b["access"] == "r" else wgpu.BufferBindingType.storage
                },
            }
            for b in bufs
        ]
        uniform = meta.get("uniform")
        if uniform:
            entries_layout.append(
                {
                    "binding": uniform["binding"],
                    "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": wgpu.BufferBindingType.uniform},
                }
            )
        layout = device.create_bind_group_layout(entries=entries_layout)
        module = device.create_shader_module(
            code=without_spec_constants(compiled.spirv) if self.code == "spirv" else compiled.wgsl
        )
        entry, groups = "main", prog.groups
        if self.coarse:
            entry, groups = meta["coarse"]["entry"], coarse_groups(compiled, prog)
        pipeline = device.create_compute_pipeline(
            layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": entry},
        )
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
        handles, entries = {}, []
        for b in bufs:
            data = np.ascontiguousarray(prog.inputs[b["name"]]).tobytes()
            h = device.create_buffer_with_data(data=data, usage=usage)
            handles[b["name"]] = h
            entries.append(
                {"binding": b["binding"], "resource": {"buffer": h, "offset": 0, "size": h.size}}
            )
        if uniform:
            scalars = {
                b["name"]: prog.scalars[b["name"]]
                for b in meta["bindings"]
                if b["kind"] == "scalar"
            }
            ubuf = device.create_buffer_with_data(
                data=uniform_block(meta, scalars), usage=wgpu.BufferUsage.UNIFORM
            )
            entries.append(
                {
                    "binding": uniform["binding"],
                    "resource": {"buffer": ubuf, "offset": 0, "size": ubuf.size},
                }
            )
        group = device.create_bind_group(layout=layout, entries=entries)
        encoder = device.create_command_encoder()
        cpass = encoder.begin_compute_pass()
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(groups, 1, 1)
        cpass.end()
        device.queue.submit([encoder.finish()])
        out = {}
        for name, h in handles.items():
            dtype, size = prog.inputs[name].dtype, prog.inputs[name].size
            # wgpu pads a buffer to 4 bytes: an odd-length f16 buffer reads back one more
            data = np.frombuffer(device.queue.read_buffer(h), dtype=dtype)[:size]
            out[name] = data.copy()
            h.destroy()
        return _flat(out, prog)


RUNNERS = {
    "reference": run_reference,
    "wgpu": run_runtime("wgpu"),
    "vulkan": run_runtime("vulkan"),
    "wgpu-spirv": _WgpuDirect("spirv"),
    "wgpu-x4": _WgpuDirect("wgsl", coarse=True),
    "reference-x4": run_reference_coarse,
}


def _device_lacks(backend: str, needs) -> list:
    """Which of the features `needs` the device of `backend` does not offer."""
    if backend.startswith("reference") or not needs:
        return []
    from vyre_build.runtime import get_device

    try:
        offered = get_device("vulkan" if backend == "vulkan" else "wgpu").profile.features
    except Exception:  # noqa: BLE001 - no device: the run itself says Unavailable
        return []
    return [f for f in needs if f not in offered]


HALF_FEATURES = ("f16", "storage_16bit")


def skip_reason(backend: str, prog, compiled) -> str | None:
    """Why `prog` is not run on `backend` (a known limitation, no such entry), or None."""
    source = prog.source()  # rendered once: the rules below read it
    needs = [f for f in compiled.meta.get("features", ()) if f in HALF_FEATURES]
    lacks = _device_lacks(backend, needs)
    if lacks:  # the runtime would refuse the kernel (DeviceError): not a finding
        return f"the device has no {', '.join(lacks)} (an f16 program: gen_half.py)"
    if backend == "wgpu-spirv" and prog.uses_cas:
        # tests/unit/test_spirv_vulkan.py::test_wgpu_spirv_input_compare_exchange (xfail)
        return "naga's SPIR-V reader rejects a used OpAtomicCompareExchange result"
    if backend in ("wgpu", "wgpu-x4") and compiled.wgsl is None:
        return f"no WGSL: {compiled.meta.get('skipped', {}).get('wgsl', 'skipped')}"
    if backend == "wgpu-spirv" and "vulkan_memory_model" in compiled.meta.get("features", ()):
        return "naga's SPIR-V reader has no Vulkan memory model (memory orders, fences)"
    if backend == "wgpu-spirv" and "subgroup_elect(" in source:
        return "naga's SPIR-V reader has no OpGroupNonUniformElect"
    if (
        backend in ("wgpu", "vulkan", "wgpu-spirv", "wgpu-x4")
        and _float_broadcast_first(compiled)
        and _on_lavapipe(backend)
    ):
        # tests/conformance/cases/lavapipe_broadcast_first_vector.py and _bitcast.py
        return "lavapipe's LLVM aborts on some subgroup_broadcast_first of a float"
    if backend == "vulkan" and "fence(" in source and _on_lavapipe(backend):
        if "return" in source:
            # tests/conformance/cases/lavapipe_memory_barrier_suspends.py: an invocation
            # that reaches a memory barrier after others returned loses its later writes
            return "lavapipe loses writes after a fence that some invocations returned before"
        if "barrier()" in source:
            # tests/conformance/cases/lavapipe_memory_barrier_desyncs_barriers.py: a fence
            # that part of a workgroup runs puts it a barrier out of step with the rest
            return "lavapipe puts a subgroup out of step with the barriers after a fence"
    if (
        backend == "vulkan"
        and any(f'order="{o}"' in source for o in ("release", "acquire", "acq_rel"))
        and "break" in source
        and _on_lavapipe(backend)
    ):
        # tests/conformance/cases/lavapipe_release_store_in_loop.py (seed 206:588) and
        # lavapipe_ordered_atomic_in_loop.py (seed 11:743, 11:1303)
        return "lavapipe loses a store after an ordered atomic in a loop left by break"
    if backend in ("wgpu-x4", "reference-x4"):
        coarse = compiled.meta.get("coarse")
        if not coarse:
            return "no coarse entry (not an elementwise kernel)"
        sizes = {
            prog.inputs[b["name"]].size for b in compiled.meta["bindings"] if b["kind"] == "buffer"
        }
        if len(sizes) != 1 or sizes.pop() % coarse["factor"] or not prog.default_grid:
            return "coarse entry, but buffer lengths differ or are not a multiple of 4"
    return None
