"""The Device's pipelines (a base of device.py's Device; it names none of that module's
types): the check of a kernel against the device's profile, each kernel entry point's
pipeline created once per device (`base`: a split dispatch's piece), and `warm`, which
creates many at once, in chunks as the kernels come (warm_chunks.py), keeping none of a
call that raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from vyre_build.bundle.metadata import KernelMeta
from vyre_build.runtime.binding_sets import BindingSets
from vyre_build.runtime.profile import check_kernel
from vyre_build.runtime.warm_chunks import Entry, warm_chunks


class DevicePipelines(BindingSets):
    """The kernel checks and pipelines of a Device (the module docstring)."""

    def check_kernel(self, meta: KernelMeta) -> None:
        """DeviceError unless this device can run `meta`: its features, workgroup size and
        declared shared memory."""
        check_kernel(meta, self.profile, f"the {self.backend} device {self.name}")

    def pipeline(
        self,
        meta: KernelMeta,
        code: Any,
        base: tuple[int, int, int] | None = None,
        entry: str = "main",
    ) -> Any:
        """The backend pipeline of this kernel's `entry` point (`base`: specialised for a
        split dispatch's piece starting at that workgroup), created once per device."""
        key = (meta.id, code, base, entry)
        found = self._pipelines.get(key)
        if found is None:
            with self._lock:
                self._check_open()
                found = self._pipelines.get(key)
                if found is None:
                    found = self._pipelines[key] = self._pipeline(meta, code, base, entry)
                    self._pipelines_added += 1
        return found

    def warm(self, kernels: Iterable[tuple[KernelMeta, Any]]) -> int:
        """Create the pipelines of `kernels` ((meta, code) pairs; each entry point) not yet
        created; return how many were created. `kernels` may be an iterator (a bundle
        loading each kernel as it is asked for), consumed under the device's lock in
        chunks (warm_chunks.py): a backend that overlaps (Vulkan) creates the pipelines
        of a chunk while the next is produced. When anything raises (the iterator, or a
        refused pipeline), no pipeline of the call is kept."""
        todo: list[tuple[KernelMeta, Any, str]] = []
        with self._lock:
            self._check_open()
            chunks = warm_chunks(kernels, self._pipelines, self.coarse_entries, todo)
            made = self._pipelines_chunked(chunks)
            for (m, c, e), pipe in zip(todo, made):
                self._pipelines[m.id, c, None, e] = pipe
            self._pipelines_added += len(todo)
        return len(todo)

    def _pipelines_chunked(self, chunks: Iterator[tuple[list[Entry], bool]]) -> list[Any]:
        # The pipelines of every chunk's (meta, code, entry), in order (each chunk with
        # whether more may follow). Backends that create while later chunks are produced
        # (Vulkan) override this; the others make them all once every chunk is in.
        return self._pipelines_many([k for chunk, _ in chunks for k in chunk])

    def _pipelines_many(self, kernels: list[tuple[KernelMeta, Any, str]]) -> list[Any]:
        # Backends that can create many pipelines in one driver call override this.
        return [self._pipeline(m, c, None, e) for m, c, e in kernels]
