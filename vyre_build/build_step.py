"""The core build action: compile one kernel file, through the artifact cache, into a dir.

`build_kernel_file` computes the action key from the file, every file it imports and the
variants YAML (by content), the targets, the options and the compiler identity; on a hit
it writes the stored outputs without importing or running the compiler; on a miss it
compiles, stores the outputs and the input files as blobs, and writes the outputs.
`rebuild_record` recompiles a stored entry from its recorded inputs (for `cache verify
--rebuild`). This module imports no SCons; the SCons Tool and the CLI both call it.

Guarantees: outputs are written atomically (temp file + os.replace); what is written is
byte-identical on a hit and a miss; an input edited while it is being compiled is never
stored under the old key.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field

from vyre_build import artifacts
from vyre_build.artifacts import (
    DEFAULT_TARGETS,
    META_SUFFIX,
    TARGET_SUFFIXES,
    VARIANTS_FILES,
    output_names,
    output_suffixes,
    split_output_name,
)
from vyre_build.cache.key import ActionKey, content_hash, make_action_key
from vyre_build.cache.store import Store, warn
from vyre_build.errors import CacheError
from vyre_build.files import atomic_write

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
    "split_output_name",
]

DEFAULT_COMPILER = "vyre_build.compiler"
_identity_memo: dict[str, dict] = {}
_memo_lock = threading.Lock()


@dataclass
class StepResult:
    """What one build step did: its key, whether it was a cache hit, the files it wrote."""

    key: ActionKey
    hit: bool
    stems: list[str]
    written: list[str] = field(default_factory=list)


def normalize_targets(targets) -> tuple[str, ...]:
    """Targets as a sorted, de-duplicated tuple; CacheError naming an unknown one."""
    try:
        return artifacts.normalize_targets(targets)
    except artifacts.TargetError as exc:
        raise CacheError(str(exc)) from None


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


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CacheError(f"cannot read kernel input {path}: {exc.strerror or exc}") from None


def action_inputs(source: str, deps) -> dict[str, tuple[str, str]]:
    """Every input file of compiling `source`: {relative path: (kind, absolute path)}.

    Paths are relative to the source's directory (POSIX separators); kinds are "source",
    "import" and "variants". The variants YAML beside the source is always included.
    """
    # Real paths on both sides, so a symlinked tree still gives relative (movable) paths.
    source = os.path.realpath(source)
    base = os.path.dirname(source)
    files = {os.path.basename(source): ("source", source)}
    candidates = [os.path.realpath(d) for d in deps]
    candidates += [
        os.path.join(base, v) for v in VARIANTS_FILES if os.path.isfile(os.path.join(base, v))
    ]
    for dep in candidates:
        if dep == source:
            continue
        rel = os.path.relpath(dep, base).replace(os.sep, "/")
        kind = "variants" if os.path.basename(dep) in VARIANTS_FILES else "import"
        files[rel] = (kind, dep)
    return dict(sorted(files.items()))


def variants_section(path: str, source: str) -> bytes | None:
    """The part of a variants YAML that can change `source`'s outputs: its own section,
    as a canonical YAML document (a valid variants file by itself), or None when the file
    has no section for it. Unparsable YAML is returned whole (the compiler reports it)."""
    import yaml  # only when a variants file exists

    raw = _read(path)
    if os.path.dirname(os.path.realpath(path)) != os.path.dirname(os.path.realpath(source)):
        return None  # a YAML beside an imported file declares that file's variants only
    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    name = os.path.basename(source)
    if not isinstance(doc, dict):
        return raw
    if name not in doc:
        return None
    return yaml.safe_dump({name: doc[name]}, sort_keys=True, allow_unicode=True).encode()


def _input_bytes(kind: str, path: str, source: str) -> bytes | None:
    return variants_section(path, source) if kind == "variants" else _read(path)


def compute_key(
    source: str, deps, targets, options, identity: dict
) -> tuple[ActionKey, dict[str, bytes]]:
    """The action key of compiling `source`, and the input bytes it was computed from.
    A variants YAML counts by this source's section only, so editing another file's
    variants (or a comment) keeps this key."""
    inputs = action_inputs(source, deps)
    data = {rel: _input_bytes(kind, path, source) for rel, (kind, path) in inputs.items()}
    data = {rel: b for rel, b in data.items() if b is not None}
    by_kind: dict[str, list] = {"source": [], "import": [], "variants": []}
    for rel, (kind, _) in inputs.items():
        if rel in data:
            by_kind[kind].append((rel, data[rel]))
    key = make_action_key(
        identity=identity,
        source=by_kind["source"][0],
        imports=by_kind["import"],
        variants=by_kind["variants"],
        targets=normalize_targets(targets),
        options=options,
    )
    return key, data


def compile_outputs(
    source: str, targets, options, compiler: str = DEFAULT_COMPILER, root: str | None = None
) -> dict[str, bytes]:
    """Compile `source` (no cache): {`<stem><suffix>`: bytes} for every kernel and variant;
    `root` is the kernel tree (nothing outside it is read; default the source's folder)."""
    module = load_compiler(compiler)
    kernels = module.compile_file(
        source,
        targets=normalize_targets(targets),
        options=dict(options or {}),
        **({"root": root} if root else {}),
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


def write_output(path: str, data: bytes) -> None:
    """Write one output atomically (a reader or a killed build never sees half a file).
    The temporary name is fixed per output, so one left by a killed build is replaced by
    the next write instead of piling up (one build never writes an output twice at once)."""
    try:
        atomic_write(path, data, tmp=f"{path}.vyre-tmp")
    except OSError as exc:
        raise CacheError(f"cannot write build output {path}: {exc.strerror or exc}") from None


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
    root: str | None = None,
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
        root: the kernel tree the compiler may read (default: the source's folder).
    Returns:
        StepResult with the key, hit/miss, the stems built and the paths written.
    """
    source = os.path.abspath(source)
    if deps is None:
        deps = load_compiler(compiler).kernel_dependencies(source)
    identity = identity if identity is not None else compiler_identity(compiler)
    identity = with_tools(identity, options, compiler)
    key, inputs = compute_key(source, deps, targets, options, identity)
    outputs = store.lookup(key.key) if store is not None else None
    hit = outputs is not None
    if outputs is None:
        outputs = compile_outputs(source, targets, options, compiler, root)
        if store is not None:
            _store_result(store, source, deps, key, inputs, outputs)
    if expected is not None and sorted(expected) != sorted(outputs):
        missing = sorted(set(expected) - set(outputs))
        extra = sorted(set(outputs) - set(expected))
        raise CacheError(
            f"{source}: declared outputs differ from the compiled ones "
            f"(declared but not produced: {missing}; produced but not declared: "
            f"{extra}); list_kernels and compile_file disagree"
        )
    os.makedirs(out_dir, exist_ok=True)
    refs = {}
    if link and store is not None:
        record = store.get_record(key.key, report=False)
        refs = {n: r["hash"] for n, r in record["outputs"].items()} if record else {}
    written = []
    for name, data in sorted(outputs.items()):
        path = os.path.join(out_dir, name)
        # A link is only made to a blob whose bytes are the ones just verified or stored.
        if not (
            name in refs and refs[name] == content_hash(data) and store.link_blob(refs[name], path)
        ):
            write_output(path, data)
        written.append(path)
    stems = sorted({split_output_name(n)[0] for n in outputs if split_output_name(n)})
    if store is not None:
        store.note_built(stems, key.key)
    return StepResult(key, hit, stems, written)


def _store_result(
    store: Store,
    source: str,
    deps,
    key: ActionKey,
    inputs: dict[str, bytes],
    outputs: dict[str, bytes],
) -> None:
    # An input edited during the compile would pair new outputs with the old key: skip.
    now = action_inputs(source, deps)
    for rel, (kind, path) in now.items():
        data = _input_bytes(kind, path, source)
        if data is None and rel not in inputs:
            continue
        if rel not in inputs or data is None or content_hash(data) != content_hash(inputs[rel]):
            warn(
                f"{rel} changed while {os.path.basename(source)} was compiling; "
                f"not caching key {key.key}"
            )
            return
    for data in inputs.values():
        store.put_blob(data)
    info = {
        "source": os.path.basename(source),
        "stems": sorted({split_output_name(n)[0] for n in outputs}),
    }
    store.put_record(key.key, key.manifest, outputs, info)


def rebuild_record(store: Store, record: dict, compiler: str = DEFAULT_COMPILER) -> dict:
    """Recompile a stored entry from its recorded input blobs and compare, byte for byte.

    Returns {"key", "status": "same"|"differs"|"missing-input"|"other-compiler"|"error",
    "differences": [{"output", "first_offset", "stored_size", "rebuilt_size"}], "detail"}.
    """
    key = record["key"]
    parts = record["manifest"]["parts"]
    by_kind = {p["kind"]: p for p in parts if p.get("path") is None}
    result = {"key": key, "status": "same", "differences": [], "detail": ""}
    expected = with_tools(compiler_identity(compiler), by_kind["options"]["value"], compiler)
    if by_kind["compiler"]["value"] != expected:
        result.update(
            status="other-compiler", detail=f"built by compiler {by_kind['compiler']['value']}"
        )
        return result
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
                return result
            path = os.path.normpath(os.path.join(base, p["path"]))
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
            return result
        for name in sorted(set(rebuilt) | set(record["outputs"])):
            ref = record["outputs"].get(name)
            stored = store.get_blob(ref["hash"], key) if ref else None
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
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))
