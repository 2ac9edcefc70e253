"""The core build action: compile one kernel file, through the artifact cache, into a dir.

`build_kernel_file` computes the action key from the file, every file it imports and the
variants YAML (by content), the targets, the options and the compiler identity; then
looks the key up locally, then on the remote (a remote hit is kept locally); on a hit it
writes the stored outputs without importing or running the compiler; on a miss it
charges the file's compile work to the build's budget (`build.budget`), compiles, stores
the outputs and the input files as blobs, writes the outputs and queues the upload. The
step (`run_step`) runs in-process, or in a worker process of a `WorkerPool`, so that -jN
builds do their hashing, compiling and writing in parallel.
`recompile_record` recompiles a stored entry from its recorded inputs and `rebuild_record`
compares the result with what is stored (for `cache verify --repair` and `--rebuild`).
This module imports no SCons; the SCons Tool and the CLI both call it.

Guarantees: outputs are written atomically (temp file + os.replace); what is written is
byte-identical on a hit and a miss, local or remote, in-process or in a worker; an input
edited while it is being compiled is never stored under the old key.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pickle
import shutil
import tempfile
import threading
from dataclasses import dataclass, field

from vyre_build.core.artifacts import (
    DEFAULT_TARGETS,
    META_SUFFIX,
    TARGET_SUFFIXES,
    output_names,
    output_suffixes,
    split_output_name,
)
from vyre_build.build.inputs import (
    action_inputs,
    compute_key,
    input_bytes,
    key_inputs,
    normalize_targets,
    variants_section,
)
from vyre_build.cache.history import output_name
from vyre_build.cache.key import ActionKey, content_hash
from vyre_build.cache.record import make_record
from vyre_build.cache.store import Store
from vyre_build.core.errors import CacheError
from vyre_build.core.files import atomic_write

__all__ = [
    "DEFAULT_COMPILER",
    "DEFAULT_TARGETS",
    "META_SUFFIX",
    "TARGET_SUFFIXES",
    "StepResult",
    "action_inputs",
    "build_kernel_file",
    "compile_outputs",
    "compiler_identity",
    "compute_key",
    "load_compiler",
    "normalize_targets",
    "output_names",
    "output_suffixes",
    "rebuild_record",
    "recompile_record",
    "run_step",
    "split_output_name",
    "variants_section",
]

DEFAULT_COMPILER = "vyre_build.compiler"
_identity_memo: dict[str, dict] = {}
_takes_module: dict[str, bool] = {}
_made_dirs: set[str] = set()
_memo_lock = threading.Lock()


@dataclass
class StepResult:
    """What one build step did: its key, whether it was a cache hit (and from which tier:
    "local" or "remote"), the stems built and the files written."""

    key: ActionKey
    hit: bool
    stems: list[str]
    written: list[str] = field(default_factory=list)
    tier: str | None = None


def load_compiler(name: str = DEFAULT_COMPILER):
    """Import the compiler module lazily (a cache hit never needs it)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise CacheError(f"cannot import the kernel compiler {name!r}: {exc}") from None


def compiler_identity(compiler: str = DEFAULT_COMPILER) -> dict:
    """The compiler's identity (version + hash of its sources), computed once per process."""
    with _memo_lock:
        if compiler not in _identity_memo:
            _identity_memo[compiler] = dict(load_compiler(compiler).compiler_identity())
        return _identity_memo[compiler]


def with_tools(identity: dict, options, compiler: str = DEFAULT_COMPILER) -> dict:
    """`identity` plus the external tools `options` pull in (spirv-opt), which the outputs
    depend on as much as on the compiler itself."""
    tools = getattr(load_compiler(compiler), "tool_identity", None)
    found = tools(options) if tools is not None else {}
    return {**identity, "tools": found} if found else identity


def compile_outputs(
    source: str,
    targets,
    options,
    compiler: str = DEFAULT_COMPILER,
    root: str | None = None,
    module=None,
) -> dict[str, bytes]:
    """Compile `source` (no cache): {`<stem><suffix>`: bytes} for every kernel and variant;
    `root` is the kernel tree (nothing outside it is read; default the source's folder).
    `module`: the file as the build's scan loaded it (see build.parse), if the compiler
    takes one."""
    mod = load_compiler(compiler)
    extra = {"module": module} if module is not None and _takes_module_arg(compiler) else {}
    if root:
        extra["root"] = root
    kernels = mod.compile_file(
        source, targets=normalize_targets(targets), options=dict(options or {}), **extra
    )
    wanted = set(output_suffixes(targets))
    outputs: dict[str, bytes] = {}
    for ck in kernels:
        for suffix, blob in sorted(ck.artifacts.items()):
            if suffix not in wanted:  # only what was asked for, whatever the compiler adds
                continue
            name = ck.stem + suffix
            if name in outputs:
                raise RuntimeError(f"compiler produced {name} twice for {source}")
            outputs[name] = bytes(blob)
    return outputs


def _takes_module_arg(compiler: str) -> bool:
    if compiler not in _takes_module:
        params = inspect.signature(load_compiler(compiler).compile_file).parameters
        _takes_module[compiler] = "module" in params
    return _takes_module[compiler]


def _charge(job: dict, module, budget):
    """Charge the file's compile work (the compiler's `compile_work`, from its parse) to
    the build's budget before anything of it compiles; returns the module to compile from
    (loaded here for the count if the scan's was not usable, so it is parsed once). A
    compiler without `compile_work` is not counted."""
    compiler, source, root = job["compiler"], job["source"], job.get("root")
    mod = load_compiler(compiler)
    work_of = getattr(mod, "compile_work", None)
    if work_of is None:
        return module
    where = {"root": root} if root else {}
    if module is None and hasattr(mod, "load_kernel_file") and _takes_module_arg(compiler):
        module = mod.load_kernel_file(source, **where)
    budget.charge(source, work_of(source, module=module, **where))
    return module


def write_output(path: str, data: bytes) -> None:
    """Write one output atomically (a reader or a killed build never sees half a file).
    The temporary name is fixed per output, so one left by a killed build is replaced by
    the next write instead of piling up (one build never writes an output twice at once)."""
    try:
        atomic_write(path, data, tmp=f"{path}.vyre-tmp")
    except OSError as exc:
        raise CacheError(f"cannot write build output {path}: {exc.strerror or exc}") from None


def _write_outputs(
    out_dir: str, outputs: dict[str, bytes], store: Store | None, link: bool, verified: bool
) -> list[str]:
    """Write every output into `out_dir`; with `link`, as a hard link to its cache blob
    when that blob holds exactly these bytes (`verified`: the lookup just re-hashed it)."""
    if out_dir not in _made_dirs:
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"cannot create output directory {out_dir}: {exc.strerror}") from None
        _made_dirs.add(out_dir)
    written = []
    for name, data in sorted(outputs.items()):
        path = os.path.join(out_dir, name)
        digest = content_hash(data) if link and store is not None else None
        linked = (
            digest is not None
            and (verified or store.get_blob(digest, size=len(data)) == data)
            and store.link_blob(digest, path)
        )
        if not linked:
            write_output(path, data)
        written.append(path)
    return written


def _stems(outputs) -> list[str]:
    return sorted({split_output_name(n)[0] for n in outputs if split_output_name(n)})


def _check_declared(source: str, expected, outputs) -> None:
    if expected is not None and sorted(expected) != sorted(outputs):
        missing = sorted(set(expected) - set(outputs))
        extra = sorted(set(outputs) - set(expected))
        raise CacheError(
            f"{source}: declared outputs differ from the compiled ones "
            f"(declared but not produced: {missing}; produced but not declared: "
            f"{extra}); list_kernels and compile_file disagree"
        )


def _inputs_unchanged(source: str, deps, found, warn_fn) -> bool:
    # An input edited during the compile would pair new outputs with the old key.
    now = action_inputs(source, deps)
    for rel, (kind, path) in now.items():
        try:
            data = input_bytes(kind, path, source)
        except CacheError:
            data = None
        if data is None and rel not in found.data:
            continue
        if rel not in found.data or data != found.data[rel]:
            warn_fn(
                f"{rel} changed while {os.path.basename(source)} was compiling; "
                f"not caching key {found.key.key}"
            )
            return False
    return set(found.data) <= set(now)


def _module(job: dict, found):
    """The scan's parse of the source, if it was parsed from exactly the key's bytes."""
    if job.get("parsed_hashes") is None or job["parsed_hashes"] != found.files:
        return None
    if job.get("module") is not None:
        return job["module"]
    return pickle.loads(job["module_bytes"]) if job.get("module_bytes") else None


def run_step(job: dict, store: Store | None, remote=None, budget=None) -> dict:
    """One build step, in the build process or in a worker (`build.pool`): the key, the
    local store, the remote (a hit kept locally), else charge the build's `budget` (a
    `BuildBudget`, or a worker's line to the build's) and compile and store; the outputs
    written; the upload queued. `job` holds plain values (see build_kernel_file).

    Returns {"key", "manifest", "tier": "local"|"remote"|None, "stems", "written"}.
    """
    source, deps = job["source"], job["deps"]
    found = key_inputs(source, deps, job["targets"], job["options"], job["identity"])
    key = found.key
    outputs = store.lookup(key.key, job["expected"]) if store is not None else None
    tier = "local" if outputs is not None else None
    if outputs is None and remote is not None:
        fetched = remote.fetch(key.key, job["expected"])
        if fetched is not None:
            record, outputs, tier = fetched[0], fetched[1], "remote"
            if store is not None:  # kept locally: inputs first, the record last
                for data in found.data.values():
                    store.put_blob(data)
                store.put_record(key.key, key.manifest, outputs, record["info"])
    compiled = outputs is None
    if compiled:
        module = _module(job, found)
        if budget is not None:
            module = _charge(job, module, budget)
        outputs = compile_outputs(
            source, job["targets"], job["options"], job["compiler"], job.get("root"), module
        )
    _check_declared(source, job["expected"], outputs)
    stems = _stems(outputs)
    info = {"source": os.path.basename(source), "stems": stems}
    if compiled and store is not None and store.writable:
        if _inputs_unchanged(source, deps, found, store.warn):
            for data in found.data.values():
                store.put_blob(data)
            store.put_record(key.key, key.manifest, outputs, info)
    written = _write_outputs(job["out_dir"], outputs, store, job["link"], tier == "local")
    if store is not None:
        store.count("misses" if compiled else "hits")
    if compiled and remote is not None and remote.writable:
        refs = {n: {"hash": content_hash(d), "size": len(d)} for n, d in outputs.items()}
        remote.upload(make_record(key.key, key.manifest, refs, info), outputs, found.data)
    return {
        "key": key.key,
        "manifest": key.manifest,
        "tier": tier,
        "stems": stems,
        "written": written,
    }


def build_kernel_file(
    source: str,
    out_dir: str,
    *,
    store: Store | None,
    targets=DEFAULT_TARGETS,
    options: dict | None = None,
    deps=None,
    identity: dict | None = None,
    compiler: str = DEFAULT_COMPILER,
    expected=None,
    link: bool = False,
    remote=None,
    pool=None,
    parsed=None,
    project: str | None = None,
    root: str | None = None,
    budget=None,
) -> StepResult:
    """Build every output of one kernel file into `out_dir`, through `store` if given.

    Arguments:
        source: the kernel file. deps: the files it imports (+ variants YAML); if None,
            asks the compiler's `kernel_dependencies`. identity: compiler identity; if
            None, the compiler's own. expected: output names the caller declared (e.g.
            SCons targets); a mismatch with what the compiler produced is an error.
        link: hard-link outputs to their (read-only) cache blobs instead of writing copies
            (much cheaper where creating files is slow; a blob changed later on disk then
            shows in the linked output too, until it is rebuilt).
        remote: a `RemoteCache` looked up after the local store, uploaded to on a miss.
        pool: a `WorkerPool` to run the step in (None: in this process).
        parsed: the scan's `ParsedFile` of `source`, compiled from if its bytes still match.
        project: the project root, naming outputs in the store's history.
        root: the kernel tree the compiler may read (default: the source's folder).
        budget: the build's `BuildBudget`, charged before a miss compiles (None: no bound
            past the compiler's own per-file limits).
    Returns:
        StepResult with the key, hit/miss and tier, the stems built and the paths written.
    """
    source = os.path.abspath(source)
    if deps is None:
        deps = parsed.deps if parsed is not None else None
    if deps is None:
        deps = load_compiler(compiler).kernel_dependencies(
            source, **({"root": root} if root else {})
        )
    identity = identity if identity is not None else compiler_identity(compiler)
    job = {
        "source": source,
        "deps": list(deps),
        "out_dir": out_dir,
        "targets": normalize_targets(targets),
        "options": dict(options or {}),
        "identity": with_tools(identity, options, compiler),
        "compiler": compiler,
        "expected": None if expected is None else list(expected),
        "link": link,
        "root": root,
        # The scan's parse: as bytes when a worker made it (shipped on unopened).
        "parsed_hashes": parsed.hashes if parsed is not None else None,
        "module": parsed.module if parsed is not None else None,
        "module_bytes": parsed.module_bytes if parsed is not None else None,
    }
    if pool is not None:
        reply = pool.run(job, store, remote, budget)
    else:
        reply = run_step(job, store, remote, budget)
    key = ActionKey(reply["key"], reply["manifest"])
    if store is not None:
        names = [output_name(out_dir, s, project) for s in reply["stems"]]
        store.note_built(names, key.key)
    tier = reply["tier"]
    return StepResult(key, tier is not None, reply["stems"], reply["written"], tier)


def recompile_record(
    store: Store, record: dict, compiler: str = DEFAULT_COMPILER
) -> tuple[dict, dict[str, bytes] | None]:
    """Recompile a stored entry from its recorded input blobs: ({"key", "status", "detail"},
    its outputs), status "same" when it compiled (outputs given), else "missing-input",
    "other-compiler" or "error" (outputs None)."""
    key = record["key"]
    parts = record["manifest"]["parts"]
    by_kind = {p["kind"]: p for p in parts if p.get("path") is None}
    result = {"key": key, "status": "same", "differences": [], "detail": ""}
    expected = with_tools(compiler_identity(compiler), by_kind["options"]["value"], compiler)
    if by_kind["compiler"]["value"] != expected:
        result.update(
            status="other-compiler", detail=f"built by compiler {by_kind['compiler']['value']}"
        )
        return result, None
    files = [p for p in parts if p.get("path") is not None]
    depth = max([p["path"].split("/").count("..") for p in files] + [0])
    tmp = tempfile.mkdtemp(prefix="vyre-rebuild-")
    try:
        base = os.path.join(tmp, *[f"d{i}" for i in range(depth)])
        source = None
        for p in files:
            data = store.get_blob(p["hash"], key)
            if data is None:
                result.update(status="missing-input", detail=f"input blob of {p['path']}")
                return result, None
            path = os.path.normpath(os.path.join(base, p["path"]))
            if not path.startswith(tmp + os.sep):
                result.update(status="error", detail=f"input path {p['path']!r} leaves the tree")
                return result, None
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            if p["kind"] == "source":
                source = path
        if source is None:
            raise CacheError(f"record {key} has no source part")
        try:
            rebuilt = compile_outputs(
                source, by_kind["targets"]["value"], by_kind["options"]["value"], compiler
            )
        except Exception as exc:  # noqa: BLE001 - any compiler failure is this entry's result
            result.update(status="error", detail=f"{type(exc).__name__}: {exc}")
            return result, None
        return result, rebuilt
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def rebuild_record(store: Store, record: dict, compiler: str = DEFAULT_COMPILER) -> dict:
    """Recompile a stored entry from its recorded input blobs and compare, byte for byte.

    Returns {"key", "status": "same"|"differs"|"missing-input"|"other-compiler"|"error",
    "differences": [{"output", "first_offset", "stored_size", "rebuilt_size"}], "detail"}.
    """
    key = record["key"]
    result, rebuilt = recompile_record(store, record, compiler)
    if rebuilt is None:
        return result
    for name in sorted(set(rebuilt) | set(record["outputs"])):
        ref = record["outputs"].get(name)
        stored = store.get_blob(ref["hash"], key, ref["size"]) if ref else None
        new = rebuilt.get(name)
        if stored is not None and new is not None and stored == new:
            continue
        offset = _first_difference(stored or b"", new or b"")
        result["differences"].append(
            {
                "output": name,
                "first_offset": offset,
                "stored_size": None if stored is None else len(stored),
                "rebuilt_size": None if new is None else len(new),
            }
        )
    if result["differences"]:
        result["status"] = "differs"
    return result


def _first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))
