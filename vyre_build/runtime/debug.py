"""A debug build's reports: the debug buffer the runtime binds, reads back and reports.

A kernel compiled with `--debug` (`VYRE_DEBUG=1`) has a `debug` table in its metadata:
the binding of one extra storage buffer and its sites (each print, assert and bounds
check, with file:line:col). Every dispatch of it gets a fresh zeroed buffer of
`DEBUG_WORDS` u32 words at that binding:

    word 0: words claimed so far (an atomic counter)   word 1: records that did not fit
    word 2...: records, each [site id, global id x, y, z, value bits...] (site's types)

A reporting invocation claims its record's words with one atomic add, and writes them only
when they fit (else it counts one dropped record), so the buffer is never written out of
bounds. After the dispatch the runtime reads it back (`report`), orders the records by
invocation (z, y, x; each invocation's in program order, so every backend reports alike),
prints the prints (`file:line:col [kernel (x, y, z)] text values`), and raises
KernelAssertion for the first failed assert or out-of-bounds access, listing the others. The cpu backend
writes the same records into the same buffer (`append_records`), so all three backends
report alike.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import numpy as np

from vyre_build.bundle.metadata import DebugSite, KernelMeta
from vyre_build.core.errors import KernelAssertion

__all__ = ["DEBUG_WORDS", "MAX_REPORTS", "append_records", "format_record", "report"]

DEBUG_WORDS = 2 + (1 << 18)  # 1 MiB: header + records; a full buffer drops and counts
MAX_REPORTS = 100  # failures formatted into KernelAssertion.reports (the rest are counted)
_HEADER = 2
_SHOWN = 10  # failures the message lists


def _value(bits: int, ty: str) -> str:
    if ty == "u32":
        return str(bits)
    if ty == "i32":
        return str(bits - (1 << 32) if bits >> 31 else bits)
    if ty == "bool":
        return "True" if bits else "False"
    return str(np.array([bits], np.uint32).view(np.float32)[0])


def format_record(kernel: str, site: DebugSite, words: list[int]) -> str:
    """The report of one record ([site, x, y, z, values...]) of `kernel` at `site`."""
    where = f"{site.file}:{site.line}:{site.col}"
    gid = f"({words[1]}, {words[2]}, {words[3]})"
    values = [_value(w, t) for w, t in zip(words[4:], site.types)]
    if site.kind == "print":
        text = " ".join(p if isinstance(p, str) else values[p] for p in site.format)
        return f"{where} [{kernel} {gid}] {text}"
    if site.kind == "assert":
        shown = ", ".join(f"{lab} = {v}" for lab, v in zip(site.labels, values))
        message = f": {site.message}" if site.message else ""
        extra = f"{shown}; " if shown else ""
        return (
            f"Kernel {kernel!r} ({where}): assertion failed: {site.condition}{message} "
            f"({extra}global_id {gid})"
        )
    return (
        f"Kernel {kernel!r} ({where}): out-of-bounds {site.access} of {site.array!r}: "
        f"index {values[0]}, length {values[1]} (global_id {gid})"
    )


def buffer_for(meta: KernelMeta) -> int | None:
    """The debug buffer's binding of a kernel, or None (a release build, or no debug op)."""
    table = meta.debug
    return None if table is None else table.binding


def append_records(buf: np.ndarray, records: list[np.ndarray]) -> None:
    """Write `records` (arrays of [site, x, y, z, values...] rows, in order) into the debug
    buffer `buf` (u32 words) as invocations claiming their words one after another would."""
    cap = len(buf) - _HEADER
    for block in records:
        rows, n = block.shape
        off = int(buf[0])
        fit = 0 if n > cap or off > cap - n else min(rows, (cap - off) // n)
        buf[_HEADER + off : _HEADER + off + fit * n] = block[:fit].reshape(-1)
        buf[0] = min(off + rows * n, 0xFFFFFFFF)
        buf[1] = min(int(buf[1]) + rows - fit, 0xFFFFFFFF)


def report(meta: KernelMeta, words: np.ndarray, out: TextIO | None = None) -> None:
    """Report the debug buffer `words` (u32) of one dispatch of `meta`: print the prints to
    `out` (default stdout), raise KernelAssertion for failed asserts and bounds checks."""
    table = meta.debug
    if table is None:
        return
    out = out if out is not None else sys.stdout
    end = min(int(words[0]), len(words) - _HEADER)
    dropped = int(words[1])
    data = words[_HEADER : _HEADER + end].tolist()
    records = []
    pos = 0
    while pos < end:
        site_id = data[pos]
        if site_id >= len(table.sites):
            dropped += 1  # a corrupt record: nothing after it can be trusted
            break
        n = 4 + len(table.sites[site_id].types)
        if pos + n > end:
            break
        records.append(data[pos : pos + n])
        pos += n
    # By invocation (z, y, x), each one's records in program order (the order it claimed
    # them): the same on every backend, whatever order the invocations ran in.
    records.sort(key=lambda r: (r[3], r[2], r[1]))
    failures: list[str] = []
    failed = 0
    for record in records:
        site = table.sites[record[0]]
        if site.kind == "print":
            print(format_record(meta.id, site, record), file=out)
            continue
        failed += 1
        if len(failures) < MAX_REPORTS:
            failures.append(format_record(meta.id, site, record))
    if dropped:
        print(
            f"vyre: kernel {meta.id!r}: the debug buffer was full: {dropped} reports dropped",
            file=sys.stderr,
        )
    if not failed:
        return
    lines = [failures[0]]
    if failed > 1:
        more = failed - 1
        lines.append(f"{more} more report{'s' if more > 1 else ''} in this dispatch:")
        lines += [f"  {r}" for r in failures[1:_SHOWN]]
        if failed > _SHOWN:
            lines.append(f"  ... and {failed - _SHOWN} more")
    if dropped:
        lines.append(f"({dropped} more were dropped: the debug buffer was full)")
    raise KernelAssertion("\n".join(lines), tuple(failures), dropped)


def attach(device: Any, meta: KernelMeta, bound: list[tuple[int, Any, int]]) -> Any | None:
    """Allocate a zeroed debug buffer on `device` and add it to `bound`; its handle, or None
    for a kernel with no debug buffer. Called under the device's lock."""
    binding = buffer_for(meta)
    if binding is None:
        return None
    nbytes = 4 * DEBUG_WORDS
    handle = device._alloc(nbytes, None)  # zero-filled by every backend, nothing uploaded
    bound.append((binding, handle, nbytes))
    return handle


def read_back(device: Any, meta: KernelMeta, handle: Any) -> None:
    """After the dispatch: read the debug buffer and report (see `report`); the header
    first, the records only when there are any. The caller frees the buffer."""
    head = np.frombuffer(device._download(handle, 4 * _HEADER), np.uint32)
    words = head
    if head[0]:
        used = _HEADER + min(int(head[0]), DEBUG_WORDS - _HEADER)
        words = np.frombuffer(device._download(handle, 4 * used), np.uint32)
    report(meta, words)
