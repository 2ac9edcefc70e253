"""Vulkan compute pipelines: their layouts, creation (a batch in slices of driver calls
made by helper threads while the caller prepares the next slice, stream.py; with
VK_KHR_maintenance5, from SPIR-V chained to each stage, no shader module made), and the
VkPipelineCache persisted across processes through pipeline_cache.PipelineCacheFile, as
`Pipelines`, an object the VulkanDevice owns and makes with what it uses of the device."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from typing import Any

import vulkan as vk

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.core.artifacts import CHECKED_SPEC_ID
from vyre_build.core.errors import DeviceError
from vyre_build.runtime.backends.common import layout_of, stride
from vyre_build.runtime.backends.vulkan.pipeline_cache import PipelineCacheFile, cache_dir
from vyre_build.runtime.backends.vulkan.results import SUCCESS
from vyre_build.runtime.backends.vulkan.sets import STORAGE, UNIFORM
from vyre_build.runtime.backends.vulkan.spirv_patch import patch_uniform as _patch_uniform
from vyre_build.runtime.backends.vulkan.stream import Slice, Stream, create_slice

# What warm() hands over: chunks of (kernel, SPIR-V, entry point), produced as it loads,
# each with whether more may follow it.
Chunks = Iterable[tuple[list[tuple[KernelMeta, bytes, str]], bool]]
# A created pipeline: (pipeline, pipeline layout, set layout, (storage, uniform)
# descriptors of its set, the binding its uniform block is written at, the element size of
# each storage binding where the device keeps the bounds rule, else None: binding.py binds
# whole elements, docs/runtime.md "Checks the device keeps").
Made = tuple[Any, Any, Any, tuple[int, int], int | None, dict[int, int] | None]


# Storage slots of the shared layout (docs/runtime.md, "Vulkan layouts"): bindings
# 0.._SHARED_SLOTS-1 are storage buffers and the uniform block is at binding _SHARED_SLOTS.
_SHARED_SLOTS = 8
_SHARED = "shared"


class Pipelines:
    """The pipelines side of one VulkanDevice, an object the device owns: its layouts
    (`layouts`: the shared one, "shared", and one per binding signature that does not fit
    it), its VkPipelineCache (`cache`, seeded from and saved to `cache_file`: `cache_loaded`
    bytes were loaded) and pipeline creation. Made with what it uses of the device, passed
    in: the VkDevice `device`; `new(what, kind, **fields)`, vkCreate<kind> with its errors
    raised as the device's DeviceError named `what`; `call(what, fn, *args)`, a `vulkan`
    package call raising the same; `check(what, call, result)`, a direct call's VkResult
    checked; the physical device's properties `props`; the `setting` of the persisted
    cache (pipeline_cache.cache_dir); `inline_modules`, whether the device was created
    with VK_KHR_maintenance5's feature (then each pipeline stage carries its SPIR-V in a
    chained VkShaderModuleCreateInfo and no VkShaderModule is made; else one module per
    kernel's code, destroyed after the call); `robust_alignment`, the device's
    robustStorageBufferAccessSizeAlignment where it was created with robustBufferAccess2
    (0: not), under which a kernel whose every storage binding's element is a multiple of
    it gets its pipeline with `vyre_checked` false (`device_checks`). Every method runs
    under the device's lock."""

    def __init__(
        self,
        device: Any,
        new: Callable[..., Any],
        call: Callable[..., Any],
        check: Callable[[str, str, int], None],
        props: Any,
        setting: str | os.PathLike[str] | bool | None,
        inline_modules: bool = False,
        robust_alignment: int = 0,
    ):
        self.device, self._new, self._vk, self._check = device, new, call, check
        self.inline_modules = inline_modules
        self.robust_alignment = robust_alignment
        # (pipeline layout, set layout, (storage, uniform) descriptors) by key
        self.layouts: dict[object, tuple[Any, Any, tuple[int, int]]] = {}
        self.shared_slots = 0
        self.cache_file: PipelineCacheFile | None = None
        self.cache_loaded = 0  # bytes of persisted cache the device started with
        self.cache = self._open_cache(props, setting)
        # The shared layout; the driver's one-time pipeline-layout set-up (4-5 ms on NVIDIA
        # without its disk cache) belongs to the device, not to whichever kernel is loaded
        # first.
        self._first_layout(props.limits)

    def close(self) -> None:
        """Destroy the layouts and the pipeline cache (the device destroys its pipelines
        first, then this, then itself)."""
        for layout, set_layout, _ in self.layouts.values():
            vk.vkDestroyPipelineLayout(self.device, layout, None)
            vk.vkDestroyDescriptorSetLayout(self.device, set_layout, None)
        self.layouts.clear()
        vk.vkDestroyPipelineCache(self.device, self.cache, None)

    # -- the pipeline cache --

    def _open_cache(self, props: Any, setting: str | os.PathLike[str] | bool | None) -> Any:
        # The VkPipelineCache, seeded from the persisted file when there is one.
        directory = cache_dir(setting)
        blob = None
        if directory is not None:
            self.cache_file = PipelineCacheFile(
                directory,
                int(props.vendorID),
                int(props.deviceID),
                int(props.driverVersion),
                bytes(props.pipelineCacheUUID),
            )
            blob = self.cache_file.load()
        if blob:
            data = vk.ffi.from_buffer(blob)
            info = vk.VkPipelineCacheCreateInfo(initialDataSize=len(blob), pInitialData=data)
            with contextlib.suppress(DeviceError):  # a blob the driver refuses: start empty
                cache = self._vk(
                    "pipeline cache", vk.vkCreatePipelineCache, self.device, info, None
                )
                self.cache_loaded = len(blob)
                return cache
        return self._new("pipeline cache", "PipelineCache")

    def _cache_data(self, cache: Any) -> bytes:
        # vkGetPipelineCacheData of `cache` (the size query, then the bytes).
        size = vk.ffi.new("size_t*")
        read = "vkGetPipelineCacheData"
        self._check(
            "pipeline cache read",
            read,
            vk.lib.vkGetPipelineCacheData(self.device, cache, size, vk.ffi.NULL),
        )
        buf = vk.ffi.new("char[]", size[0])
        self._check(
            "pipeline cache read",
            read,
            vk.lib.vkGetPipelineCacheData(self.device, cache, size, buf),
        )
        return bytes(vk.ffi.buffer(buf, size[0]))

    def save(self) -> bool:
        """Write the pipeline cache to its file, merged with what another process saved
        meanwhile (PipelineCacheFile.save); False where there is no file or it was not
        written. The device decides when (pipelines added, the device usable)."""
        if self.cache_file is None:
            return False

        def merge(blob: bytes) -> None:
            # Another process saved pipelines meanwhile: keep theirs too.
            data = vk.ffi.from_buffer(blob)
            info = vk.VkPipelineCacheCreateInfo(initialDataSize=len(blob), pInitialData=data)
            try:
                theirs = self._vk(
                    "pipeline cache", vk.vkCreatePipelineCache, self.device, info, None
                )
            except DeviceError:
                return
            srcs = vk.ffi.new("VkPipelineCache[1]", [theirs])
            try:
                self._check(
                    "pipeline cache merge",
                    "vkMergePipelineCaches",
                    vk.lib.vkMergePipelineCaches(self.device, self.cache, 1, srcs),
                )
            except DeviceError:
                pass  # save ours alone
            finally:
                vk.vkDestroyPipelineCache(self.device, theirs, None)

        return self.cache_file.save(lambda: self._cache_data(self.cache), merge)

    # -- layouts --

    def _first_layout(self, limits: Any) -> None:
        # Make the shared layout at device creation: the driver's first
        # vkCreatePipelineLayout pays a one-time set-up there, and most kernels use it. Its
        # storage slots are _SHARED_SLOTS, fewer where the device's limits (`limits`:
        # VkPhysicalDeviceLimits) allow fewer storage buffers in a set or a stage.
        slots = min(
            _SHARED_SLOTS,
            int(limits.maxPerStageDescriptorStorageBuffers),
            int(limits.maxDescriptorSetStorageBuffers),
            int(limits.maxPerStageResources) - 1,
        )
        self.shared_slots = slots
        kinds = [(b, "rw") for b in range(slots)] + [(slots, "u")]
        self.layouts[_SHARED] = self._make_layout(kinds)

    def _shared_fits(self, kinds: list[tuple[int, str]]) -> bool:
        # Whether a kernel's bindings fit the shared layout: every storage binding below its
        # slots and at most one uniform block (moved to the slot past them, _patch_uniform).
        return (
            _SHARED in self.layouts
            and all(b < self.shared_slots for b, a in kinds if a != "u")
            and sum(a == "u" for _, a in kinds) <= 1
        )

    def _layouts(
        self, meta: KernelMeta, code: bytes
    ) -> tuple[bytes, tuple[Any, Any, tuple[int, int], int | None]]:
        # (code to create the pipeline from, (pipeline layout, set layout, (storage, uniform)
        # descriptors of a set, the binding its uniform block is written at)) of a kernel. A
        # kernel whose bindings fit uses the shared layout, its uniform block moved to the
        # shared slot in the code given to the driver; any other kernel gets the layout of
        # its binding signature, made once per device (NVIDIA's first one costs 0.4-5 ms).
        kinds = layout_of(meta)
        uniform = next((b for b, a in kinds if a == "u"), None)
        if self._shared_fits(kinds):
            slot = self.shared_slots
            patched = code if uniform is None else _patch_uniform(code, uniform, slot)
            if patched is not None:
                return patched, (*self.layouts[_SHARED], None if uniform is None else slot)
        key = tuple((b, a == "u") for b, a in kinds)
        found = self.layouts.get(key)
        if found is None:
            found = self.layouts[key] = self._make_layout(kinds)
        return code, (*found, uniform)

    def _make_layout(self, kinds: list[tuple[int, str]]) -> tuple[Any, Any, tuple[int, int]]:
        # A set layout of `kinds` ((binding, access); "u": the uniform block, any other a
        # storage buffer, read-only ones too: NonWritable is the shader's business) and its
        # pipeline layout, with the descriptors a set of it takes.
        entries = [
            vk.VkDescriptorSetLayoutBinding(
                binding=b,
                descriptorType=UNIFORM if a == "u" else STORAGE,
                descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            )
            for b, a in kinds
        ]
        set_layout = self._new("descriptor set layout", "DescriptorSetLayout", pBindings=entries)
        try:
            layout = self._new("pipeline layout", "PipelineLayout", pSetLayouts=[set_layout])
        except DeviceError:
            vk.vkDestroyDescriptorSetLayout(self.device, set_layout, None)
            raise
        uniform = sum(a == "u" for _, a in kinds)
        return layout, set_layout, (len(kinds) - uniform, uniform)

    def device_checks(self, meta: KernelMeta) -> bool:
        """Whether `meta`'s pipeline leaves the bounds rule of its storage-buffer loads to
        the device (SpecId 3, `vyre_checked`, false): the device keeps it
        (robustBufferAccess2) and rounds no binding's range past an element of the kernel's
        (docs/runtime.md, "Checks the device keeps"); a debug build keeps its own."""
        a = self.robust_alignment
        return (
            bool(a) and meta.debug is None and all(stride(b.dtype) % a == 0 for b in meta.buffers)
        )

    # -- pipelines --

    def create(
        self,
        kernels: list[tuple[KernelMeta, bytes, str]],
        base: tuple[int, int, int] | None,
    ) -> list[Made]:
        """`Made` (pipeline, pipeline layout, set layout, (storage, uniform) descriptors of
        its set, the binding its uniform block is written at, the storage bindings' element
        sizes where the device keeps the bounds rule) of each (kernel, SPIR-V, entry point),
        created in one driver call (`base`: the base workgroup of a split dispatch's piece,
        set through the modules' specialization constants 0-2, docs/descriptor-conventions.md;
        `vyre_checked`, constant 3, false where `device_checks`). When the driver refuses the
        batch, each is created alone, so that the error names its kernel."""
        return self.stream([(kernels, False)], base)

    def stream(
        self,
        chunks: Chunks,
        base: tuple[int, int, int] | None = None,
    ) -> list[Made]:
        """What `create` gives for the (kernel, SPIR-V, entry point) of every chunk of
        `chunks` ((chunk, whether more may follow)), in order, each chunk's create-infos
        built as it comes and handed (a slice: one driver call) to the helper threads of a
        stream.Stream, which create its pipelines while the next chunk is prepared (an
        iterator: `Device.warm` loading kernels); a chunk after which none may follow
        starts no thread. A slice the driver refuses has its kernels created
        alone, so that the error names the kernel; on any error, every pipeline made here
        is destroyed before it is raised, once the helpers are joined."""
        slices: list[Slice] = []
        try:
            with Stream(self.device, self.cache) as stream:
                for chunk, more in chunks:
                    slices.append(self._prepare(chunk, base))
                    stream.put(slices[-1], more)
                stream.finish()
            return self._collect(slices, base)
        except BaseException:
            for sl in slices:
                sl.destroy(self.device)
            raise
        finally:  # layouts stay, for every kernel that uses them
            for sl in slices:
                for m in sl.modules:
                    vk.lib.vkDestroyShaderModule(self.device, m, vk.ffi.NULL)
                sl.modules = []

    def _collect(self, slices: list[Slice], base: tuple[int, int, int] | None) -> list[Made]:
        # The pipelines of run `slices`, in order: a slice's exception raised, a refused
        # slice's kernels created alone (their pipelines added to its slots), so that the
        # error names the kernel.
        out: list[Made] = []
        for sl in slices:
            if sl.result is None or isinstance(sl.result, BaseException):
                raise sl.result or DeviceError("a slice of pipelines was not created")
            if sl.result != SUCCESS:
                sl.destroy(self.device)  # those made before the failure go too
                with contextlib.suppress(DeviceError):  # a lost device is marked so here
                    self._check(
                        "compute pipeline creation", "vkCreateComputePipelines", int(sl.result)
                    )
                for k, kernel in enumerate(sl.kernels):
                    sl.pipes[k] = self._alone(kernel, base)
            out += [(sl.pipes[k], *found) for k, found in enumerate(sl.made)]
        return out

    def _alone(
        self, kernel: tuple[KernelMeta, bytes, str], base: tuple[int, int, int] | None
    ) -> Any:
        # The pipeline of one kernel of a refused slice, in its own driver call.
        sl = self._prepare([kernel], base)
        try:
            sl.result = create_slice(self.device, self.cache, sl)
            if sl.result != SUCCESS:
                sl.destroy(self.device)
            try:
                self._check("compute pipeline creation", "vkCreateComputePipelines", sl.result)
            except DeviceError as exc:
                raise DeviceError(
                    f"Kernel {kernel[0].id!r}: the Vulkan driver refused the shader or its "
                    f"layout: {exc}"
                ) from exc
            return sl.pipes[0]
        finally:
            for m in sl.modules:
                vk.lib.vkDestroyShaderModule(self.device, m, vk.ffi.NULL)

    def _prepare(
        self,
        kernels: list[tuple[KernelMeta, bytes, str]],
        base: tuple[int, int, int] | None,
    ) -> Slice:
        """The slice of `kernels`: their create-infos, built as plain cffi arrays (the
        `vulkan` package's per-struct wrappers cost more than the driver does once its
        pipeline cache is warm), with their layouts (a kernel's entry points laid out
        once) and, without maintenance5, the shader modules they name."""
        once: dict[tuple[int, int], Any] = {}  # a kernel's entry points: laid out once
        laid = []
        for meta, code, _ in kernels:
            key = (id(meta), id(code))
            if key not in once:
                once[key] = self._layouts(meta, code)
            laid.append(once[key])
        codes = [code for code, _ in laid]
        strides = [
            {b.binding: stride(b.dtype) for b in meta.buffers} if self.robust_alignment else None
            for meta, _, _ in kernels
        ]
        made = [(*found, s) for (_, found), s in zip(laid, strides)]
        keep: list[Any] = []  # every buffer the create-infos point into, alive until the call
        infos = vk.ffi.new("VkComputePipelineCreateInfo[]", len(kernels))
        unchecked = [self.device_checks(meta) for meta, _, _ in kernels]
        _stages(infos, codes, [entry for _, _, entry in kernels], base, keep, unchecked)
        modules = [] if self.inline_modules else self._modules(infos, codes)
        for k, (layout, *_) in enumerate(made):
            infos[k].layout = layout
        keep.append(codes)
        return Slice(kernels, infos, keep, modules, made)

    def _modules(self, infos: Any, codes: list[bytes]) -> list[Any]:
        """Without maintenance5: one VkShaderModule per code object of `codes` (a
        kernel's entry points share it), made from the VkShaderModuleCreateInfo that
        `_stages` chained to each stage, which then names the module instead. Returns the
        modules made (also when one fails: those made before are destroyed, then it
        raises)."""
        ffi, lib = vk.ffi, vk.lib
        made: dict[int, Any] = {}  # by the code object's id, as _stages chains them
        out = ffi.new("VkShaderModule*")
        try:
            for k, code in enumerate(codes):
                stage = infos[k].stage
                module = made.get(id(code))
                if module is None:
                    self._check(
                        "shader module creation",
                        "vkCreateShaderModule",
                        lib.vkCreateShaderModule(
                            self.device,
                            ffi.cast("VkShaderModuleCreateInfo*", stage.pNext),
                            ffi.NULL,
                            out,
                        ),
                    )
                    module = made[id(code)] = out[0]
                stage.pNext, stage.module = ffi.NULL, module
        except BaseException:
            for m in made.values():
                lib.vkDestroyShaderModule(self.device, m, ffi.NULL)
            raise
        return list(made.values())


def _specialization(base: tuple[int, int, int] | None, unchecked: bool, keep: list[Any]) -> Any:
    """The VkSpecializationInfo of `base` (the base workgroup: constants 0, 1, 2) where
    given and of `vyre_checked` (constant CHECKED_SPEC_ID) false where `unchecked`; NULL
    where neither. Its buffers are appended to `keep`."""
    ffi = vk.ffi
    values = [*(base or ())]
    ids = list(range(len(values)))
    if unchecked:
        ids.append(CHECKED_SPEC_ID)
        values.append(vk.VK_FALSE)  # a bool constant takes a VkBool32
    if not ids:
        return ffi.NULL
    entries = ffi.new("VkSpecializationMapEntry[]", len(ids))
    for k, sid in enumerate(ids):
        entries[k].constantID, entries[k].offset, entries[k].size = sid, 4 * k, 4
    data = ffi.new("uint32_t[]", values)
    size = 4 * len(ids)
    spec = ffi.new(
        "VkSpecializationInfo*",
        {"mapEntryCount": len(ids), "pMapEntries": entries, "dataSize": size, "pData": data},
    )
    keep += [entries, data, spec]
    return spec


def _stages(
    infos: Any,
    codes: list[bytes],
    entries: list[str],
    base: tuple[int, int, int] | None,
    keep: list[Any],
    unchecked: list[bool] | None = None,
) -> None:
    """Fill the compute create-infos `infos` (all but their layouts) of the SPIR-V
    `codes` and entry points `entries`: each stage with module VK_NULL_HANDLE and a
    VkShaderModuleCreateInfo of its code chained as pNext (as VK_KHR_maintenance5 reads
    it; one per code object, shared by a module's entry points), with `base`'s
    specialization (the base workgroup as constants 0, 1, 2) where given and `vyre_checked`
    false for the kernels `unchecked` marks. Every buffer they point into is appended to
    `keep`, which must outlive their use."""
    ffi = vk.ffi
    unchecked = unchecked or [False] * len(codes)
    specs = {u: _specialization(base, u, keep) for u in set(unchecked)}
    # one per code object (a kernel's entry points share theirs): no hash of the code
    distinct = list({id(code): code for code in codes}.values())
    module_infos = ffi.new("VkShaderModuleCreateInfo[]", len(distinct))
    at: dict[int, Any] = {}
    for k, code in enumerate(distinct):
        words = ffi.from_buffer(code)
        info = module_infos[k]
        info.sType = vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
        info.codeSize = len(code)
        info.pCode = ffi.cast("uint32_t*", words)
        keep.append(words)
        at[id(code)] = module_infos + k
    names: dict[str, Any] = {}
    for name in entries:
        if name not in names:
            names[name] = ffi.new("char[]", name.encode("utf-8"))
    keep += [module_infos, *names.values()]
    compute = vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
    shader = vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
    bit = vk.VK_SHADER_STAGE_COMPUTE_BIT
    for k, (code, entry) in enumerate(zip(codes, entries)):
        info = infos[k]
        info.sType = compute
        stage = info.stage
        stage.sType, stage.stage, stage.pNext = shader, bit, at[id(code)]
        stage.pName, stage.pSpecializationInfo = names[entry], specs[unchecked[k]]
