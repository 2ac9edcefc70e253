"""Parse each kernel file once per build: the SCons scan's parse is the compile's parse.

`Parses.scan(path)` loads a kernel file with one `ModuleLoader` shared by the whole build
(so a helper imported by a hundred kernels is parsed once too), answers the scan (stems,
dependencies) from it and keeps the loaded module. The build step then `take`s it and
compiles from it, in-process or in a worker process (it pickles), instead of parsing
again; `parse(path)` loads a file the scan did not (the scan memo answered it).

A kept parse is used only for the exact bytes it was parsed from: right after a load,
each new module's text is compared with its file's bytes (decoded as the frontend reads
them) and those bytes' blake3 recorded; the variants file beside the kernel is covered
by a stat taken before the first load in its directory and again after it was hashed.
The build step compares these hashes with the bytes its action key was computed from,
and parses afresh on any difference (a file edited during the build).

Only the vyre compiler takes a parsed module; a custom $VYRECOMPILER is asked per step.
"""

from __future__ import annotations

import io
import os
import pickle
import threading
from dataclasses import dataclass

from vyre_build.artifacts import VARIANTS_FILES
from vyre_build.build_inputs import cached_realpath
from vyre_build.cache.key import content_hash

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


class Parses:
    """The kernel files one build has parsed, keyed by real path."""

    def __init__(self, compiler_module):
        self.compiler = compiler_module
        self._loader = None
        self._lock = threading.RLock()
        self._verified: dict[str, str | None] = {}  # real path -> blake3 as parsed
        self._dir_sig: dict[str, tuple] = {}  # dir -> (variants stat before, covered)
        self._dirs_loaded: set[str] = set()
        self._kept: dict[str, ParsedFile] = {}

    def _new_loader(self):
        from vyre_build.frontend import ModuleLoader

        return ModuleLoader()

    def parse(self, path: str) -> ParsedFile:
        """Load `path` (raises the frontend's KernelError), answer the scan from the load."""
        real = os.path.realpath(path)
        directory = os.path.dirname(real)
        with self._lock:
            if self._loader is None:
                self._loader = self._new_loader()
            if directory not in self._dir_sig:
                # Covered only if no module of this directory was read before the stat.
                covered = directory not in self._dirs_loaded
                self._dir_sig[directory] = (_variants_sig(directory), covered)
            loader = self._loader
            before = set(loader.modules)
            module = loader.load(path)
            for name in set(loader.modules) - before:
                self._dirs_loaded.add(os.path.dirname(name))
                data, digest = _read_hash(name)
                same = data is not None and _decoded(data) == loader.modules[name].source.text
                self._verified[name] = digest if same else None
            stems = list(self.compiler.list_kernels(path, module=module))
            deps = list(self.compiler.kernel_dependencies(path, module=module))
            parsed = ParsedFile(real, module, stems, deps, self._hashes(real, module))
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

    def take(self, path: str) -> ParsedFile | None:
        """The kept parse of `path`, handed over once (the build step compiles from it)."""
        with self._lock:
            if not self._kept:
                return None
            return self._kept.pop(cached_realpath(path), None)

    def keep(self, parsed: ParsedFile) -> None:
        """Keep a parse made elsewhere (a worker's scan) for `take`."""
        with self._lock:
            self._kept[parsed.path] = parsed

    def scan_reply(self, path: str) -> dict:
        """What a worker's scan of `path` returns: stems, deps and the pickled parse (the
        module stays here only as long as the reply is built), or the kernel error."""
        from vyre_build.errors import VyreError

        try:
            parsed = self.parse(path)
        except VyreError as exc:
            return {"path": path, "error": str(exc)}
        self.take(path)
        try:
            blob = pickle.dumps(parsed.module, protocol=5)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            blob = None  # the compile parses again
        return {
            "path": path,
            "real": parsed.path,
            "stems": parsed.stems,
            "deps": parsed.deps,
            "hashes": parsed.hashes,
            "module_bytes": blob,
        }
