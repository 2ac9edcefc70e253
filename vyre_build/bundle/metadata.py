"""The metadata record of one kernel as a `KernelMeta` (its parameters, uniform block,
coarse entry point, debug table and what the record carries along), and a `KernelMeta`
written back as that record.

The record's layout is in docs/descriptor-conventions.md ("Metadata record"). The compiler
builds each kernel's `KernelMeta` and writes `meta.record`, which `to_record()` makes from
the fields (`check_metadata(meta.record, ...)` gives the same KernelMeta back). Records read
from a bundle are checked field by field into a KernelMeta by `check_metadata`
(metadata_check.py), so every tool that shows a kernel and the runtime that dispatches it
see either a sound `KernelMeta` or one `BundleError` naming the kernel, the field and the
bad value. The buffer and scalar types here are the ones a record may name.

Standard library only (the runtime imports it without the compiler).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from vyre_build.core.scalars import HOST_SCALARS, VECTOR_COUNTS, vector_name

__all__ = [
    "BUFFER_DTYPES",
    "SCALAR_DTYPES",
    "VECTOR_DTYPES",
    "Binding",
    "Coarse",
    "DebugSite",
    "DebugTable",
    "KernelMeta",
    "Uniform",
]

# Host scalar types and their sizes in bytes (from the scalar vocabulary, core/scalars.py).
SCALAR_DTYPES = {s.name: s.size for s in HOST_SCALARS}
# Vector element types of buffers: (scalar type, components); a vec4f buffer is a float32
# array holding 4 values per element.
VECTOR_DTYPES = {
    vector_name(s, n): (s.name, n) for s in HOST_SCALARS if s.letter for n in VECTOR_COUNTS
}
BUFFER_DTYPES = (*SCALAR_DTYPES, *VECTOR_DTYPES)
# Shared memory: what every device offers (Vulkan's minimum), and the most a kernel declares.
PORTABLE_SHARED_BYTES, MAX_SHARED_BYTES = 16384, 1 << 20

GridEntry = Union[int, str]


@dataclass(frozen=True)
class Binding:
    """One parameter: a storage `buffer` (binding number, dtype, access "r"|"w"|"rw") or
    a `scalar` in the uniform block (dtype and byte `offset`). `any_length`: a read-only
    buffer the kernel does not index by the grid index, so a call does not hold its length
    to the grid's (`@kernel(any_length=...)`; absent from the record means False)."""

    name: str
    kind: str
    binding: int
    dtype: str
    access: str | None = None
    offset: int | None = None
    any_length: bool = False

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "binding": self.binding,
            "kind": self.kind,
            "dtype": self.dtype,
        }
        if self.kind == "buffer":
            out["access"] = self.access
            if self.any_length:  # recorded only where declared
                out["any_length"] = True
        else:
            out["offset"] = self.offset
        return out


@dataclass(frozen=True)
class Uniform:
    """The uniform block holding every scalar: its binding number and size in bytes."""

    binding: int
    size: int

    def to_record(self) -> dict[str, Any]:
        return {"binding": self.binding, "size": self.size}


@dataclass(frozen=True)
class Coarse:
    """A second entry point of the kernel's modules in which each invocation handles
    `factor` consecutive elements (descriptor/coarsen.py)."""

    entry: str
    factor: int

    def to_record(self) -> dict[str, Any]:
        return {"entry": self.entry, "factor": self.factor}


@dataclass(frozen=True)
class DebugSite:
    """One row of a debug build's site table: a print, an assert or a bounds check at
    file:line:col, and the types of the values its records carry (docs/debugging.md)."""

    kind: str  # "print" | "assert" | "bounds"
    file: str
    line: int
    col: int
    types: tuple[str, ...]
    format: tuple[Union[str, int], ...] = ()  # print: literal text, or the index of a value
    condition: str = ""  # assert: its source text
    message: str | None = None  # assert: its message
    labels: tuple[str, ...] = ()  # assert: the source text of each reported value
    access: str = ""  # bounds: "read" | "write" | "atomic"
    array: str = ""  # bounds: the buffer or array

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "col": self.col,
        }
        if self.kind == "print":
            out["format"] = list(self.format)
        elif self.kind == "assert":
            out.update(condition=self.condition, message=self.message, labels=list(self.labels))
        else:
            out.update(access=self.access, array=self.array)
        out["types"] = list(self.types)
        return out


@dataclass(frozen=True)
class DebugTable:
    """A debug build's `debug` record: the debug buffer's binding (None when the kernel
    has no debug op) and its sites, by id."""

    binding: int | None
    sites: tuple[DebugSite, ...]

    def to_record(self) -> dict[str, Any]:
        return {"binding": self.binding, "sites": [s.to_record() for s in self.sites]}


@dataclass(frozen=True)
class KernelMeta:
    """A checked metadata record. `record` is the record itself (JSON data): the one read
    (check_metadata), or, for a KernelMeta made from its fields (the compiler's), the one
    `to_record()` writes."""

    id: str
    name: str
    variant: str | None
    workgroup_size: tuple[int, int, int]
    grid: tuple[GridEntry, ...]
    bindings: tuple[Binding, ...]
    uniform: Uniform | None
    features: tuple[str, ...]
    coarse: Coarse | None
    record: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    debug: DebugTable | None = None  # a debug build's site table
    # The workgroup memory the kernel may use: @kernel(shared_bytes=N), else the portable
    # 16 KiB (absent from the record); the runtime refuses it on a device with less.
    shared_bytes: int = PORTABLE_SHARED_BYTES
    declares_shared_bytes: bool = False  # the record names shared_bytes (the kernel did)
    # Carried as the record has them (None: absent), not compared: the variant's parameter
    # values, the provenance (format.py checks it) and {target: why} of targets not built.
    variant_values: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    provenance: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    skipped: dict[str, str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.record:  # made from its fields: its record is what they write
            object.__setattr__(self, "record", self.to_record())

    def to_record(self) -> dict[str, Any]:
        """The metadata record of these fields (what the compiler writes as .meta.json:
        absent fields and their defaults are left out exactly as it leaves them out)."""
        out: dict[str, Any] = {
            "name": self.name,
            "variant": self.variant,
            "id": self.id,
            "workgroup_size": list(self.workgroup_size),
            "grid": list(self.grid),
            "bindings": [b.to_record() for b in self.bindings],
            "uniform": None if self.uniform is None else self.uniform.to_record(),
        }
        if self.variant_values is not None:
            out["variant_values"] = dict(self.variant_values)
        if self.provenance is not None:
            out["provenance"] = self.provenance
        if self.declares_shared_bytes:
            out["shared_bytes"] = self.shared_bytes
        if self.debug is not None:
            out["debug"] = self.debug.to_record()
        if self.coarse is not None:
            out["coarse"] = self.coarse.to_record()
        if self.features:
            out["features"] = list(self.features)
        if self.skipped is not None:
            out["skipped"] = dict(self.skipped)
        return out

    @property
    def buffers(self) -> tuple[Binding, ...]:
        """The storage-buffer parameters, in parameter order."""
        return tuple(b for b in self.bindings if b.kind == "buffer")

    @property
    def scalars(self) -> tuple[Binding, ...]:
        """The scalar parameters, in parameter order."""
        return tuple(b for b in self.bindings if b.kind == "scalar")
