"""Limits on what compiling one kernel file may read and do (README: "Limits").

A kernel tree may come from someone else: these bound the time, memory and stack one
compile can take, whatever the input. Passing one is a KernelError at the place that
passes it, naming the limit's value and a fix.
"""

from __future__ import annotations

MAX_SOURCE_BYTES = 1 << 20  # a kernel file or a variants YAML
MAX_FILES = 256  # files read for one kernel file: itself, its imports and variants YAMLs
MAX_IMPORT_DEPTH = 32  # kernel files importing one another in a chain
MAX_NESTING = 100  # expressions and blocks inside one another, through inlined helpers
MAX_BLOCK_NESTING = 32  # blocks (if/for/while, a helper that returns early) in one another
MAX_NAME_BYTES = 100  # a name, in UTF-8 bytes (kernel and variant names become file names)
MAX_CONSTANTS = 10_000  # module constants of one file, imported ones included
MAX_HELPERS = 1_000  # helper functions of one file, imported ones included
MAX_KERNELS = 1_000  # kernels of one file, each variant counted
MAX_UNROLL = 256  # copies of the body one unroll() loop makes
MAX_OPERATIONS = 100_000  # expressions and statements of one kernel, helpers inlined
MAX_FILE_OPERATIONS = 1_000_000  # operations of one file's kernels, times their variants
MAX_FOLD_STEPS = 100_000  # constant-folding steps at the top level of one file
MAX_YAML_NESTING = 16  # collections inside one another in a variants YAML
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1  # an integer constant while folding: 64 bits
# Workgroup (shared) memory of one kernel: the Vulkan minimum unless the kernel declares more
# with @kernel(shared_bytes=N); then the runtime refuses it on a device with less.
PORTABLE_SHARED_BYTES = 16384
MAX_SHARED_BYTES = 1 << 20  # what a declaration may ask for (no GPU has more)
LOCAL_ARRAY_BYTES = 16384  # one local array, per invocation


def shown(text: str, width: int = 40) -> str:
    """User text for a message: at most `width` characters (a hostile name can be huge)."""
    return text if len(text) <= width else text[: width - 3] + "..."


def int_text(v: int) -> str:
    """An integer for a message, without int-to-str of a huge value."""
    return str(v) if INT_MIN <= v <= INT_MAX else f"a {v.bit_length()}-bit integer"
