"""The compiler driver: kernel file -> per kernel and variant, one artifact per target asked
for (WGSL / SPIR-V / .kdesc: vyre_build.core.targets) and metadata.

Pipeline, one direction (each step a plain data value):
    source --frontend--> Program --lower--> KernelDescriptor --Target.emit--> artifact
                                                                  (one per target)
Emitters read only the descriptor. Output is a pure function of the input files'
contents, the variant values, the targets and the options (no paths, no times).
Importing this module is cheap (the frontend, lowering and emitters load on first
compile), so `compiler_identity()` costs a null build no compiler import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import blake3

from vyre_build import __version__
from vyre_build.core.artifacts import (
    META_SUFFIX,
    TARGETS,
    VARIANTS_FILES,
    TargetError,
    normalize_targets,
)
from vyre_build.core.errors import VyreError
from vyre_build.core.files import canonical_json
from vyre_build.core.targets import KDESC, SPIRV, WGSL
from vyre_build.core.targets import TARGETS as REGISTERED

if TYPE_CHECKING:
    from vyre_build.bundle.metadata import Coarse, DebugTable
    from vyre_build.descriptor import DescriptorInfo, KernelDescriptor

# debug: a debug build (print/assert kept, out-of-bounds accesses reported; docs/debugging.md);
# debug_dir: the kernel file's folder as reports name it ("kernels"), for debug builds.
# The targets' own options (spirv_opt: Target.options) come first (compiler_options()).
COMMON_OPTIONS = {"debug": bool, "debug_dir": str}
_PKG = os.path.dirname(os.path.abspath(__file__))
# The compiler's own sources: any change to these changes every action key.
_IDENTITY_PARTS = (
    "__init__.py",
    "compiler.py",
    "core",
    "descriptor",
    "emit",
    "frontend",
)
# ... less what only the runtime reads: a backend row changes no artifact.
_NOT_IDENTITY = ("core/backends.py",)


@lru_cache(maxsize=1)
def compiler_identity() -> dict:
    """{"version", "source_hash"}: blake3 over the compiler's own source files (names + bytes)."""
    h = blake3.blake3()
    for part in _IDENTITY_PARTS:
        full = os.path.join(_PKG, part)
        files = (
            [full]
            if os.path.isfile(full)
            else sorted(
                os.path.join(d, f)
                for d, _, fs in os.walk(full)
                for f in fs
                if f.endswith((".py", ".json"))
            )
            if os.path.isdir(full)
            else []
        )
        for path in sorted(files):
            rel = os.path.relpath(path, _PKG).replace(os.sep, "/")
            if rel in _NOT_IDENTITY:
                continue
            with open(path, "rb") as f:
                data = f.read()
            h.update(f"{rel}\0{len(data)}\0".encode())
            h.update(data)
    return {"version": __version__, "source_hash": h.hexdigest()}


def compiler_options() -> dict[str, type]:
    """The compiler options, name -> type: the registered targets' own, then COMMON_OPTIONS."""
    found: dict[str, type] = {}
    for target in REGISTERED.values():
        found.update(target.options)
    return {**found, **COMMON_OPTIONS}


def tool_identity(options: dict | None) -> dict:
    """External tools that `options` bring into the outputs, for action keys (each target's
    `tool_identity`): {"spirv-opt": "<version> blake3:<binary hash>"} when spirv_opt is on
    ("missing" if absent)."""
    found: dict[str, str] = {}
    for target in REGISTERED.values():
        found.update(target.tool_identity(options or {}))
    return found


@dataclass(frozen=True)
class CompiledKernel:
    """One kernel (or variant) compiled: `outputs` maps artifact suffix -> bytes, one per
    target made (the .kdesc always); `artifacts` adds the metadata file."""

    name: str
    variant: str | None
    descriptor: KernelDescriptor
    meta: dict
    outputs: dict[str, bytes]

    @property
    def stem(self) -> str:
        return self.descriptor.id

    @property
    def artifacts(self) -> dict[str, bytes]:
        return {**self.outputs, META_SUFFIX: canonical_json(self.meta) + b"\n"}

    # The artifacts of the built-in targets, by name (None where not made).
    @property
    def kdesc(self) -> bytes:
        return self.outputs[KDESC.suffix]

    @property
    def wgsl(self) -> str | None:
        text = self.outputs.get(WGSL.suffix)
        return None if text is None else text.decode("utf-8")

    @property
    def spirv(self) -> bytes | None:
        return self.outputs.get(SPIRV.suffix)


def binding_table(desc: KernelDescriptor, info: DescriptorInfo) -> tuple[list[dict], dict | None]:
    """The host-visible bindings of a descriptor, as the metadata record lists them."""
    access = {"ReadOnly": "r", "WriteOnly": "w", "ReadWrite": "rw"}
    bindings = [
        {
            "name": s.name,
            "binding": s.slot,
            "kind": "buffer",
            "dtype": info.slot_types[s.slot],
            "access": access[s.visibility],
        }
        for s in desc.slots
        if s.memory_class == "Global"
    ]
    block = info.uniform
    if block is None:
        return bindings, None
    for m in block.members:
        bindings.append(
            {
                "name": m.name,
                "binding": block.binding,
                "kind": "scalar",
                "dtype": m.type,
                "offset": m.offset,
            }
        )
    return bindings, {"binding": block.binding, "size": block.size}


def _coarse_entries(desc: KernelDescriptor, info: DescriptorInfo) -> tuple[tuple, Coarse | None]:
    """The coarse entry point of an elementwise kernel (descriptor.coarsen) and its record
    for the runtime, or ((), None) when the kernel does not qualify."""
    from vyre_build.bundle.metadata import Coarse
    from vyre_build.descriptor.coarsen import ENTRY, FACTOR, entries

    found = entries(desc, info)
    return found, (Coarse(ENTRY, FACTOR) if found else None)


def _debug_table(binding: int | None, sites: list[dict]) -> DebugTable:
    """A debug build's site table from the lowering's rows (lists become tuples)."""
    from vyre_build.bundle.metadata import DebugSite, DebugTable

    return DebugTable(
        binding,
        tuple(
            DebugSite(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})
            for row in sites
        ),
    )


def _check_options(targets, options) -> dict:
    try:
        normalize_targets(targets)
    except TargetError as exc:
        raise VyreError(str(exc)) from None
    options = dict(options or {})
    known = compiler_options()
    for k, v in options.items():
        if k not in known or not isinstance(v, known[k]):
            raise VyreError(
                f"unknown or mistyped compiler option {k}={v!r}; options: "
                + ", ".join(f"{n} ({t.__name__})" for n, t in known.items())
            )
    return options


def _file_hash(path: str) -> str:
    with open(path, "rb") as f:
        return blake3.blake3(f.read()).hexdigest()


def compile_file(
    path: str,
    *,
    root: str | None = None,
    targets=TARGETS,
    options: dict | None = None,
    kernel: str | None = None,
    text: str | None = None,
    display_path: str | None = None,
    module=None,
) -> list[CompiledKernel]:
    """Compile every kernel (and variant) of one kernel file; raises KernelError on bad source.
    `module`: the file already loaded (a build's scan), so it is not parsed again."""
    from vyre_build.bundle.metadata import PORTABLE_SHARED_BYTES, Binding, KernelMeta, Uniform
    from vyre_build.frontend import check_module, kernel_needs, load_module
    from vyre_build.frontend.work import file_work
    from vyre_build.frontend.lower import lower

    targets = tuple(targets)
    options = _check_options(targets, options)
    # the targets made, in registry order: those asked for and those made always (.kdesc)
    made = [t for t in REGISTERED.values() if t.always or t.name in targets]
    if module is None:
        module = load_module(path, root=root, text=text, display_path=display_path)
    if kernel is not None and kernel not in module.kernels:
        import difflib

        close = difflib.get_close_matches(kernel, sorted(module.kernels), n=3)
        guess = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise VyreError(
            f"{module.source.path}: no kernel named {kernel!r}; {guess}kernels: "
            f"{', '.join(sorted(module.kernels)) or 'none'}"
        )
    # Provenance names imported kernel files by content; a variants YAML shows up as the
    # variant values themselves (its other sections cannot change these outputs).
    sources = [
        _file_hash(p) for p in module.dependencies[1:] if os.path.basename(p) not in VARIANTS_FILES
    ]
    main_hash = blake3.blake3(module.source.text.encode("utf-8")).hexdigest()
    provenance = {"compiler": compiler_identity(), "source": main_hash, "imports": sorted(sources)}
    file_work(module)  # refuses a file past MAX_FILE_OPERATIONS before any variant compiles
    out = []
    needs: dict[str, tuple[str, ...]] = {}  # kernel -> the language features it needs
    debug = options.get("debug", False)
    where = options.get("debug_dir", "") if debug else ""
    for prog in check_module(module, kernel, debug=debug, debug_dir=where):
        sites: list[dict] = []
        desc, info = lower(prog, sites)
        bindings, uniform = binding_table(desc, info)
        entries, coarse = ((), None) if debug else _coarse_entries(desc, info)
        if prog.name not in needs:
            needs[prog.name] = kernel_needs(module, prog.name)
        outputs: dict[str, bytes] = {}
        skipped: dict[str, str] = {}
        for target in made:
            refusal = target.refusal(needs[prog.name])
            if refusal is not None:
                skipped[target.name] = refusal
            else:
                outputs[target.suffix] = target.emit(desc, info, options, entries)
        meta = KernelMeta(
            id=prog.id,
            name=prog.name,
            variant=prog.variant,
            workgroup_size=prog.workgroup_size,
            grid=tuple(prog.grid),
            # any_length: recorded only where declared (other records stay as they were)
            bindings=tuple(Binding(**b, any_length=b["name"] in prog.any_length) for b in bindings),
            uniform=None if uniform is None else Uniform(**uniform),
            features=tuple(sorted(info.features)),  # the device features it needs
            coarse=coarse,
            # the runtime reads the debug buffer back and reports by this table
            debug=_debug_table(info.debug_binding, sites) if debug else None,
            # a requirement the runtime checks; else the portable 16 KiB
            shared_bytes=PORTABLE_SHARED_BYTES if prog.shared_bytes is None else prog.shared_bytes,
            declares_shared_bytes=prog.shared_bytes is not None,
            variant_values=dict(prog.variant_values),
            provenance=provenance,
            skipped=skipped or None,  # the bundle and `bundle show` carry it
        ).record
        out.append(CompiledKernel(prog.name, prog.variant, desc, meta, outputs))
    return out


@lru_cache(maxsize=64)
def _real_dir(root: str) -> str:
    return os.path.realpath(root)  # asked once per kernel file of a scan: memoised


def check_source(path: str, root: str | None = None) -> None:
    """Raise the KernelError compiling `path` would give if the file is not to be read at all
    (outside `root`, default its folder; not a regular file; too large). Reads nothing, so
    a caller that hashes the file first (the SCons scan) never opens a FIFO or a device."""
    from vyre_build.core.errors import KernelError
    from vyre_build.frontend.source import Refusal, check_tree_file

    root = root or os.path.dirname(os.path.abspath(path))
    shown = os.path.relpath(path)  # as the frontend shows paths: from the working directory
    shown = path if shown.startswith("..") else shown
    try:
        check_tree_file(path, shown, _real_dir(root))
    except Refusal as r:
        raise KernelError(r.message, shown, 1, 1, None, r.fix) from None


def list_kernels(path: str, root: str | None = None, module=None) -> list[str]:
    """Output stems ("saxpy", "add.f32") of a kernel file, from parsing alone."""
    from vyre_build.frontend import instances, load_module

    module = module if module is not None else load_module(path, root=root)
    return [name if v is None else f"{name}.{v}" for name, v, _ in instances(module)]


def skipped_targets(path: str, root: str | None = None, module=None) -> dict[str, dict[str, str]]:
    """{stem: {target: why}} for the kernels of a kernel file that get no artifact of a
    registered target, from parsing alone (as compile_file decides: the language features
    the kernel needs that the target lacks): a kernel using cooperative matrices gets no
    WGSL."""
    from vyre_build.frontend import instances, kernel_needs, load_module

    module = module if module is not None else load_module(path, root=root)
    why: dict[str, dict[str, str]] = {}
    out = {}
    for name, v, _ in instances(module):
        if name not in why:
            needs = kernel_needs(module, name)
            refusals = {t.name: t.refusal(needs) for t in REGISTERED.values()}
            why[name] = {t: r for t, r in refusals.items() if r is not None}
        if why[name]:
            out[name if v is None else f"{name}.{v}"] = dict(why[name])
    return out


def load_kernel_file(path: str, root: str | None = None):
    """The parse of a kernel file: what `compile_file`, `list_kernels` and `compile_work`
    take as `module`; raises KernelError."""
    from vyre_build.frontend import load_module

    return load_module(path, root=root)


def compile_work(path: str, root: str | None = None, module=None) -> int:
    """About how many operations compiling a kernel file takes (each kernel's, helpers
    inlined, times its variants), from parsing alone: what a build charges to its budget
    (build.budget) before compiling the file. Raises the KernelError `compile_file` gives
    a file past the per-file limit."""
    from vyre_build.frontend.work import file_work

    return file_work(module if module is not None else load_kernel_file(path, root))


def kernel_dependencies(path: str, root: str | None = None, module=None) -> list[str]:
    """Absolute paths of every file a kernel file's build reads besides itself, sorted."""
    from vyre_build.frontend import load_module

    module = module if module is not None else load_module(path, root=root)
    real = os.path.realpath(path)
    return sorted({os.path.abspath(p) for p in module.dependencies if p != real})
