"""What `Device.warm` hands its backend: the entry points of the kernels it is given
that have no pipeline yet, in chunks, as the kernels come (the bundle loads each kernel
as it is asked for), so that a backend that overlaps (Vulkan: backends/vulkan/stream.py)
creates the pipelines of a chunk while the next is loaded.

Guarantees: every entry point asked for and not yet created is in exactly one chunk,
once however often it is asked for, in the order given, a kernel's entry points in one
chunk; the chunks hold _FIRST, twice that, ... up to _MOST pipelines (a kernel's entry
points may make one more), each with whether more may follow it (False for the last:
the backend need not start a thread for it; a full chunk is given once the next kernel
has come, so that it can tell); `todo` lists what the chunks held so far.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator
from typing import Any

from vyre_build.bundle.metadata import KernelMeta

_FIRST, _MOST = 2, 8  # the first chunks small, so that the driver starts soon

Entry = tuple[KernelMeta, Any, str]  # (kernel, code, entry point)


def warm_chunks(
    kernels: Iterable[tuple[KernelMeta, Any]],
    made: Container[tuple[str, Any, Any, str]],
    coarse: bool,
    todo: list[Entry],
) -> Iterator[tuple[list[Entry], bool]]:
    """(chunk, whether more may follow) of the entry points of `kernels` ((meta, code)
    pairs: "main", and with `coarse` a kernel's coarse entry) whose (id, code, None,
    entry) key is not in `made`; each chunk is appended to `todo` before it is given."""
    chunk: list[Entry] = []
    full: list[Entry] | None = None  # a full chunk, given once another kernel comes
    asked: set[tuple[str, Any, Any, str]] = set()  # asked twice: made once
    size = _FIRST
    for m, c in kernels:
        if full is not None:
            todo.extend(full)
            yield full, True
            full = None
        for e in ("main", *([m.coarse.entry] if m.coarse and coarse else [])):
            key = (m.id, c, None, e)
            if key not in made and key not in asked:
                asked.add(key)
                chunk.append((m, c, e))
        if len(chunk) >= size:
            full, chunk, size = chunk, [], min(2 * size, _MOST)
    last = full if full is not None else chunk  # the other one is empty
    if last:
        todo.extend(last)
        yield last, False
