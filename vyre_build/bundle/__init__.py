"""Shader bundle (`.vyrebundle`): one file of prebuilt kernels, its writer and lazy reader.

Byte layout: `docs/bundle-format.md`. An 80-byte header (MAGIC, VERSION, file size,
manifest offset/size, counts, blake3 of the manifest), the artifacts (each 16-byte
aligned, in kernel-id then suffix order), then a canonical JSON manifest that indexes
them (offset, size, blake3 per artifact) and carries each kernel's metadata record.

Guarantees:
- `write_bundle` output depends only on the entries' content (sorted by id), never on
  their order, the clock or the paths; it writes atomically (temp file + `os.replace`).
- `read_bundle` reads the header and manifest only and checks magic, version, sizes, the
  manifest hash and the kernel ids before it returns; every artifact offset and size
  (bounds, alignment, overlaps) before the first artifact index is served, each kernel's
  index and metadata on its first use; artifact bytes are read on first use and verified
  by blake3 each first read (docs/bundle-format.md, "What the reader checks").
- Every refusal raises `BundleError` with the file, the byte offset where it applies and
  the reason; no length is allocated before it is checked against the real file size.

This module imports only the standard library, blake3 and `vyre_build.core.errors`: the
runtime loads it without the compiler.
"""

from vyre_build.bundle.format import (
    ALIGN,
    HEADER_SIZE,
    MAGIC,
    VERSION,
    check_id,
    check_suffix,
    kernel_id,
)
from vyre_build.bundle.reader import BundleEntry, BundleReader, read_bundle, read_bundle_bytes

__all__ = [
    "ALIGN",
    "HEADER_SIZE",
    "MAGIC",
    "VERSION",
    "BundleEntry",
    "BundleReader",
    "check_id",
    "check_suffix",
    "encode_bundle",
    "kernel_id",
    "read_bundle",
    "read_bundle_bytes",
    "write_bundle",
]


def __getattr__(name: str):
    # The writer loads on first use: a runtime that only reads bundles never imports it.
    if name in ("encode_bundle", "write_bundle"):
        from vyre_build.bundle import writer

        return getattr(writer, name)
    raise AttributeError(f"module 'vyre_build.bundle' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
