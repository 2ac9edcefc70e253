"""Parse each kernel file once per build: the SCons scan's parse is the compile's parse.

`Parses.parse(path, root)` loads a kernel file with one `ModuleLoader` per kernel tree
shared by the whole build (so a helper imported by a hundred kernels is parsed once too),
answers the scan (stems, dependencies, the stems that get no artifact of a target) from it and keeps the loaded module. The build step then `take`s it and
compiles from it, in-process or in a worker process (it pickles), instead of parsing
again; `parse(path)` loads a file the scan did not (the scan memo answered it).

A kept parse is used only for the exact bytes it was parsed from: right after a load,
each new module's text is compared with its file's bytes (decoded as the frontend reads
them) and those bytes' blake3 recorded; the variants file beside the kernel is covered
by a stat taken before the first load in its directory and again after it was hashed.
The build step compares these hashes with the bytes its action key was computed from,
and parses afresh on any difference (a file edited during the build).

The frontend's limits hold per kernel file as if it were loaded alone: the shared loader
counts each load's own reads, and a file whose import chain or file count (helpers read
for earlier files included) could pass a limit is loaded again alone, which refuses it
with the compiler's own message.

Only the vyre compiler takes a parsed module; a custom $VYRECOMPILER is asked per step.
"""

from __future__ import annotations

import io
import os
import pickle
import threading
from dataclasses import dataclass, field

from vyre_build.core.artifacts import VARIANTS_FILES
from vyre_build.build.inputs import cached_realpath
from vyre_build.cache.key import content_hash
from vyre_build.core.limits import MAX_FILES, MAX_IMPORT_DEPTH

__all__ = ["ParsedFile", "Parses", "PARSE_ONCE_COMPILER"]

PARSE_ONCE_COMPILER = "vyre_build.compiler"


@dataclass
class ParsedFile:
    """A loaded kernel file, and blake3 of every file its outputs depend on as parsed
    (None: some file changed while it was parsed; then it is not reused). A file parsed
    in a worker process carries its module pickled (`module_bytes`), passed on as is."""

    path: str
    module: object
    stems: list[str]
    deps: list[str]
    hashes: dict[str, str] | None
    module_bytes: bytes | None = None
    root: str | None = None  # the kernel tree it was loaded in
    skipped: dict = field(default_factory=dict)  # {stem: {target: why}}: no such artifact

    def matches(self, files: dict[str, str]) -> bool:
        """True if `files` ({real path: blake3}, what a key was computed from) are the
        bytes this parse read."""
        return self.hashes is not None and self.hashes == files


def _decoded(data: bytes) -> str | None:
    """`data` as `open(path, encoding="utf-8").read()` returns it (universal newlines)."""
    try:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    except UnicodeDecodeError:
        return None


def _variants_sig(directory: str) -> tuple:
    sig = []
    for name in VARIANTS_FILES:
        try:
            st = os.stat(os.path.join(directory, name))
            sig.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            sig.append(None)
    return tuple(sig)


def _read_hash(path: str) -> tuple[bytes | None, str | None]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None, None
    return data, content_hash(data)


def _chain_heights(loader):
    """Wrap `loader.load` to record, per module, the longest import chain starting at it
    (itself counted): what a loader of its own would walk, even where this one reuses."""
    heights: dict[str, int] = {}
    reach = [0]
    plain = loader.load

    def load(path, text=None, given=None, importer=None):
        real = os.path.realpath(path)
        if real in loader.modules:
            reach[0] = max(reach[0], len(loader.loading) + heights.get(real, 1))
            return loader.modules[real]
        outer, reach[0] = reach[0], len(loader.loading) + 1
        try:
            module = plain(path, text=text, given=given, importer=importer)
            heights[real] = reach[0] - len(loader.loading)
        finally:
            reach[0] = max(outer, reach[0])
        return module

    loader.load = load
    return heights


def _alone_reads(deps: list[str]) -> int:
    """Files a loader of its own reads for a module with these dependencies: each kernel
    file once, and for each the variants file beside it, if there is one."""
    files = set(deps)
    kernels = [d for d in deps if os.path.basename(d) not in VARIANTS_FILES]
    beside = sum(
        1
        for k in kernels
        if any(os.path.join(os.path.dirname(k), v) in files for v in VARIANTS_FILES)
    )
    return len(kernels) + beside


class Parses:
    """The kernel files one build has parsed, keyed by real path."""

    def __init__(self, compiler_module):
        self.compiler = compiler_module
        self._loaders: dict[str | None, tuple] = {}  # root -> (loader, chain heights)
        self._lock = threading.RLock()
        self._verified: dict[str, str | None] = {}  # real path -> blake3 as parsed
        self._dir_sig: dict[str, tuple] = {}  # dir -> (variants stat before, covered)
        self._dirs_loaded: set[str] = set()
        self._kept: dict[str, ParsedFile] = {}

    def _loader(self, root: str | None) -> tuple:
        from vyre_build.frontend import ModuleLoader

        if root not in self._loaders:
            loader = ModuleLoader(root)
            self._loaders[root] = (loader, _chain_heights(loader))
        return self._loaders[root]

    def parse(self, path: str, root: str | None = None) -> ParsedFile:
        """Load `path` from the kernel tree `root` (default its folder; nothing outside is
        read), or raise the frontend's KernelError; answer the scan from the load."""
        real = os.path.realpath(path)
        directory = os.path.dirname(real)
        root = root or os.path.dirname(os.path.abspath(path))
        with self._lock:
            if directory not in self._dir_sig:
                # Covered only if no module of this directory was read before the stat.
                covered = directory not in self._dirs_loaded
                self._dir_sig[directory] = (_variants_sig(directory), covered)
            loader, heights = self._loader(root)
            before = set(loader.modules)
            loader.files_read = 0  # the file limit counts this load's reads, not the build's
            module = loader.load(path)
            if (
                heights.get(real, 1) > MAX_IMPORT_DEPTH
                or _alone_reads(module.dependencies) > MAX_FILES
            ):
                # Helpers reused from earlier loads hid a limit: loaded alone, it refuses.
                from vyre_build.frontend import load_module

                load_module(path, root=root)
            for name in set(loader.modules) - before:
                self._dirs_loaded.add(os.path.dirname(name))
                data, digest = _read_hash(name)
                same = data is not None and _decoded(data) == loader.modules[name].source.text
                self._verified[name] = digest if same else None
            work = getattr(self.compiler, "compile_work", None)
            if work is not None:  # past the per-file limit: refused now, no outputs declared
                work(path, module=module)  # (memoised on the module for the compile)
            stems = list(self.compiler.list_kernels(path, module=module))
            deps = list(self.compiler.kernel_dependencies(path, module=module))
            skipped = self.compiler.skipped_targets(path, module=module)
            parsed = ParsedFile(
                real, module, stems, deps, self._hashes(real, module), root=root, skipped=skipped
            )
            self._kept[real] = parsed
            return parsed

    def _hashes(self, real: str, module) -> dict[str, str] | None:
        directory = os.path.dirname(real)
        hashes = {}
        for dep in getattr(module, "dependencies", [real]):
            if os.path.basename(dep) in VARIANTS_FILES:
                continue  # the key reads only the variants beside the source: below
            digest = self._verified.get(dep)
            if digest is None:
                return None
            hashes[dep] = digest
        sig, covered = self._dir_sig[directory]
        for name in VARIANTS_FILES:
            path = os.path.join(directory, name)
            if os.path.exists(path):
                _, digest = _read_hash(path)
                if digest is None:
                    return None
                hashes[path] = digest
        if not covered or _variants_sig(directory) != sig:
            return None
        return hashes

    def take(self, path: str, root: str | None = None) -> ParsedFile | None:
        """The kept parse of `path` in the kernel tree `root`, handed over once (the build
        step compiles from it)."""
        with self._lock:
            if not self._kept:
                return None
            parsed = self._kept.pop(cached_realpath(path), None)
        root = root or os.path.dirname(os.path.abspath(path))
        return parsed if parsed is not None and parsed.root == root else None

    def keep(self, parsed: ParsedFile) -> None:
        """Keep a parse made elsewhere (a worker's scan) for `take`."""
        with self._lock:
            self._kept[parsed.path] = parsed

    def scan_reply(self, path: str, root: str | None = None) -> dict:
        """What a worker's scan of `path` returns: stems, deps and the pickled parse (the
        module stays here only as long as the reply is built), or the kernel error."""
        from vyre_build.core.errors import VyreError

        try:
            parsed = self.parse(path, root)
        except VyreError as exc:
            return {"path": path, "error": str(exc)}
        self.take(path, parsed.root)
        try:
            blob = pickle.dumps(parsed.module, protocol=5)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            blob = None  # the compile parses again
        return {
            "path": path,
            "real": parsed.path,
            "stems": parsed.stems,
            "skipped": parsed.skipped,
            "deps": parsed.deps,
            "hashes": parsed.hashes,
            "module_bytes": blob,
        }
