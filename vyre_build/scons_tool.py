"""SCons Tool `vyre`: builders for kernel files and shader bundles, thin over build_step.

Load it from an SConstruct (works for an installed package; the tool lives in it):

    import vyre_build.scons_tool
    env = Environment(tools=["default", "vyre"], toolpath=[vyre_build.scons_tool.toolpath()])
    # or: env.Tool("vyre", toolpath=[vyre_build.scons_tool.toolpath()])
    # or: import vyre_build.scons_tool as vyre; vyre.generate(env)
    VariantDir("build", "kernels", duplicate=0)
    outs = env.VyreKernelDir("build")            # every kernel file of build/ (= kernels/)
    env.VyreBundle("dist/kernels.vyrebundle", outs)

Builders: `VyreKernel(source)` (one kernel file -> `<stem>.wgsl/.spv/.kdesc/.meta.json`
per kernel and variant, in the directory of the target, default beside the source) and
`VyreBundle(target, sources)`. An emitter declares every output (from one parse of the
file, which the compile reuses: build_parse), so `scons -c` removes them and `-n` shows
them; a scanner follows kernel imports and the variants YAML. Cache misses compile in
worker processes under -jN (build_pool), in-process under -j1. Construction variables
(defaults from the environment and the config files: vyre_build.config):
    VYRETARGETS       targets to emit (default ["wgsl", "spirv", "kdesc"])
    VYREOPTIONS       compiler options dict (default {})
    VYRECACHEDIR      cache dir (default <project>/cache); "" disables the cache
    VYRECACHEMAXSIZE / VYRECACHEMAXAGE   limits (default "5G", none; days) kept after builds
    VYREREMOTECACHE / VYREREMOTECACHEMODE   remote tier URL and "read-only"/"read-write"
    VYRELINKOUTPUTS   hard-link outputs to their read-only cache blobs instead of copying
                      (like ccache's hard_link: fast where creating files is slow; default off)
    VYREWORKERS       compile worker processes (default: the -j count; 0: in-process)
    VYRECOMPILER      compiler module (default vyre_build.compiler)
    VYRECOM / VYRECOMSTR, VYREBUNDLECOM / VYREBUNDLECOMSTR   actions and their lines
Action signatures include the targets, the options and the compiler identity (varlist),
so changing any of them rebuilds.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading

import SCons.Action
import SCons.Builder
import SCons.Errors
import SCons.Scanner
import SCons.Script

from vyre_build.artifacts import VARIANTS_FILES
from vyre_build.build_parse import PARSE_ONCE_COMPILER, ParsedFile, Parses
from vyre_build.build_step import (
    DEFAULT_COMPILER,
    DEFAULT_TARGETS,
    build_kernel_file,
    compiler_identity,
    load_compiler,
    normalize_targets,
    output_names,
    split_output_name,
    with_tools,
)
from vyre_build.cache.scan import ScanMemo
from vyre_build.cache.store import Store
from vyre_build.config import CACHE_DIR_ENV, ConfigError, load_config, parse_size
from vyre_build.errors import VyreError
from vyre_build.files import canonical_json

__all__ = ["exists", "generate", "toolpath"]

_lock = threading.RLock()
_memo: dict[tuple, object] = {}
_stores: dict[str, Store] = {}
_limits: dict[str, tuple] = {}
_remotes: dict[tuple, object] = {}
_pools: dict[tuple, object] = {}
_scan_memos: list[ScanMemo] = []
MIN_WORKER_SCAN = 16  # fewer unscanned files are parsed in the build process


def toolpath() -> str:
    """The directory to pass as `toolpath=[...]` so that SCons finds the tool `vyre`."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "site_tools")


def _var(env, name: str) -> str:
    raw = env.get(name)
    # A plain value needs no substitution (asked several times per node).
    if isinstance(raw, str) and "$" not in raw:
        return raw
    return env.subst(f"${name}") if raw not in (None, "") else ""


def _compiler(env) -> str:
    return _var(env, "VYRECOMPILER") or DEFAULT_COMPILER


def _project(env) -> str:
    # The top directory is one per SCons process: looked up once, not per node.
    root = _memo.get("project")
    if root is None:
        root = _memo["project"] = env.Dir("#").abspath
    return root


def _source_path(node) -> str:
    # With VariantDir(duplicate=0) the kernel exists only in the source tree.
    return node.srcnode().abspath


def _fatal(message: str):
    """A configuration error: one line, as SCons prints its own, no Python stack."""
    print(f"scons: *** {message}", file=sys.stderr)
    raise SystemExit(2)


def _scan_memo(env, compiler: str) -> ScanMemo | None:
    store = _store(env)
    if store is None:
        return None
    key = ("scanmemo", store.root, compiler)
    with _lock:
        if key not in _memo:
            _memo[key] = ScanMemo(store, _identity_text(compiler), _project(env))
            _scan_memos.append(_memo[key])
        return _memo[key]


def _parses(compiler: str) -> Parses | None:
    """The build's parses (the vyre compiler only; see build_parse)."""
    if compiler != PARSE_ONCE_COMPILER:
        return None
    with _lock:
        key = ("parses", compiler)
        if key not in _memo:
            _memo[key] = Parses(load_compiler(compiler))
        return _memo[key]


def _scan_info(path: str, stems, deps) -> dict:
    deps = set(deps)
    base = os.path.dirname(path)
    deps.update(
        os.path.join(base, v) for v in VARIANTS_FILES if os.path.isfile(os.path.join(base, v))
    )
    deps.discard(path)
    return {"stems": list(stems), "deps": sorted(deps)}


def _scan_file(env, node) -> dict:
    """{"stems", "deps"} of a kernel file: once per process, and across builds through the
    scan memo in the cache (reused only while every file it came from is unchanged)."""
    path, compiler = _source_path(node), _compiler(env)
    key = ("scan", compiler, path)
    with _lock:
        if key in _memo:
            return _memo[key]
    memo = _scan_memo(env, compiler)
    info = memo.lookup(path) if memo is not None else None
    if info is None:
        before = memo.file_hash(path) if memo is not None else None
        parses = _parses(compiler)
        try:
            if parses is not None:
                parsed = parses.parse(path)
                info = _scan_info(path, parsed.stems, parsed.deps)
            else:
                module = load_compiler(compiler)
                info = _scan_info(path, module.list_kernels(path), module.kernel_dependencies(path))
        except VyreError as exc:
            # Reported when this file's target is built, so -c, -n and -k still work.
            info = {"stems": [], "deps": [], "error": str(exc)}
        if memo is not None and "error" not in info:
            memo.save(path, before, info["stems"], info["deps"])
    with _lock:
        _memo[key] = info
    return info


def _scan_in_workers(env, nodes) -> None:
    """Scan the files the memo cannot answer in the compile workers, in parallel (a cold
    -jN build); their parses wait, pickled, for the compiles (build_parse)."""
    compiler = _compiler(env)
    parses, pool = _parses(compiler), _pool(env)
    if parses is None or pool is None:
        return
    memo = _scan_memo(env, compiler)
    todo = {}
    for node in nodes:
        path = _source_path(node)
        with _lock:
            if ("scan", compiler, path) in _memo:
                continue
        info = memo.lookup(path) if memo is not None else None
        if info is not None:
            with _lock:
                _memo[("scan", compiler, path)] = info
            continue
        todo[path] = memo.file_hash(path) if memo is not None else None
    if len(todo) < MIN_WORKER_SCAN:
        return  # a few edited files: parsed here, as they come
    for r in pool.scan(sorted(todo)):
        path = r["path"]
        if "error" in r:
            info = {"stems": [], "deps": [], "error": r["error"]}
        else:
            info = _scan_info(path, r["stems"], r["deps"])
            parses.keep(
                ParsedFile(r["real"], None, r["stems"], r["deps"], r["hashes"], r["module_bytes"])
            )
            if memo is not None:
                memo.save(path, todo[path], info["stems"], info["deps"])
        with _lock:
            _memo[("scan", compiler, path)] = info


def kernel_stems(env, node) -> list[str]:
    """Output stems ("saxpy", "add.f32") of one kernel file."""
    return _scan_file(env, node)["stems"]


def kernel_deps(env, node) -> list[str]:
    """Every file compiling `node` reads besides itself: imports (transitively) + variants."""
    return _scan_file(env, node)["deps"]


def _targets(env) -> tuple[str, ...]:
    try:
        return normalize_targets(env["VYRETARGETS"])
    except VyreError as exc:
        raise SCons.Errors.UserError(f"$VYRETARGETS: {exc}") from None


def _options(env) -> dict:
    options = env.get("VYREOPTIONS") or {}
    if not isinstance(options, dict):
        raise SCons.Errors.UserError(f"$VYREOPTIONS must be a dict, got {options!r}")
    return options


def _canon(value) -> str:
    """Stable text of a construction value for action signatures (dict order ignored)."""
    if isinstance(value, (list, tuple)):
        value = sorted(value) if all(isinstance(v, str) for v in value) else list(value)
    return canonical_json(value).decode()


def _signature(targets, options, compiler) -> str:
    """What the kernel action's signature adds to its code: the targets, the options and
    the compiler module and identity, as canonical text (memoised: asked per node)."""
    memo_key = ("sig", repr(targets), repr(options), str(compiler))
    with _lock:
        if memo_key in _memo:
            return _memo[memo_key]
    name = str(compiler) or DEFAULT_COMPILER
    # The identity includes external tools the options pull in (spirv-opt), as the key does.
    identity = with_tools(
        compiler_identity(name), options if isinstance(options, dict) else {}, name
    )
    text = "|".join(
        [_canon(targets), _canon(options), str(compiler), canonical_json(identity).decode()]
    )
    with _lock:
        _memo[memo_key] = text
    return text


class _KernelAction(SCons.Action.FunctionAction):
    """The kernel action; its signature is the function's code plus `_signature` of the
    environment as it is at build time, joined directly (SCons substitutes a varlist
    through its expander several times per node, which a large build pays for)."""

    def get_presig(self, target, source, env, executor=None):
        sig = _signature(env.get("VYRETARGETS"), env.get("VYREOPTIONS"), _compiler(env))
        return bytes(self.funccontents) + sig.encode()


def _identity_text(compiler) -> str:
    return canonical_json(compiler_identity(str(compiler) or DEFAULT_COMPILER)).decode()


def _store(env) -> Store | None:
    cache_dir = _var(env, "VYRECACHEDIR")
    if not cache_dir:
        return None
    memo_key = ("storedir", cache_dir, _project(env))
    with _lock:
        root = _memo.get(memo_key)
    if root is None:
        try:
            root = env.Dir(cache_dir).abspath
        except TypeError:  # SCons: "File ... found where directory expected"
            root = None
        if root is None or (os.path.exists(root) and not os.path.isdir(root)):
            _fatal(
                f"vyre cache directory {cache_dir!r} is a file, not a directory (set by "
                f"$VYRECACHEDIR or ${CACHE_DIR_ENV}); point it at a directory"
            )
        with _lock:
            _memo[memo_key] = root
    with _lock:
        if root not in _stores:
            try:
                _stores[root] = Store(root, project=_project(env))
            except VyreError as exc:
                _fatal(f"vyre cache: {exc}")
            _limits[root] = _cache_limits(env)
        return _stores[root]


def _cache_limits(env) -> tuple[int | None, float | None]:
    """($VYRECACHEMAXSIZE bytes or "500M", $VYRECACHEMAXAGE days) -> (bytes, seconds)."""
    size, age = env.get("VYRECACHEMAXSIZE"), env.get("VYRECACHEMAXAGE")
    try:
        size = None if size in (None, "") else parse_size(size, "$VYRECACHEMAXSIZE")
        if age not in (None, ""):
            age = float(age)
            if not 0 <= age < float("inf"):
                raise ValueError(age)
            age *= 86400.0
        else:
            age = None
    except ConfigError as exc:
        raise SCons.Errors.UserError(str(exc)) from None
    except (TypeError, ValueError):
        raise SCons.Errors.UserError(
            f"$VYRECACHEMAXAGE {env.get('VYRECACHEMAXAGE')!r} is not a number of days >= 0"
        ) from None
    return size, age


def _remote(env):
    """The remote tier of $VYREREMOTECACHE (one per build), or None."""
    url = _var(env, "VYREREMOTECACHE")
    if not url:
        return None
    mode = _var(env, "VYREREMOTECACHEMODE") or None
    timeout = float(env.get("VYREREMOTECACHETIMEOUT") or 5.0)
    key = (url, mode, timeout)
    with _lock:
        if key not in _remotes:
            from vyre_build.cache.remote import RemoteCache  # only builds with a remote

            _remotes[key] = RemoteCache(url, mode=mode, timeout=timeout)
        return _remotes[key]


def _pool(env):
    """The compile workers of this build: $VYREWORKERS, default the -j count; None for 1."""
    raw = env.get("VYREWORKERS")
    if raw in (None, ""):
        raw = SCons.Script.GetOption("num_jobs") or 1
    try:
        size = int(raw)
    except (TypeError, ValueError):
        raise SCons.Errors.UserError(f"$VYREWORKERS {raw!r} is not a number") from None
    if size <= 1:
        return None
    compiler = _compiler(env)
    with _lock:
        if (size, compiler) not in _pools:
            from vyre_build.build_pool import WorkerPool

            _pools[(size, compiler)] = WorkerPool(size, compiler)
        return _pools[(size, compiler)]


@atexit.register
def _finish_build() -> None:
    """Drain uploads, stop the workers, record this build's counters and history, keep the
    scan memo; then apply the cache limits."""
    label = " ".join(sys.argv[1:])
    with _lock:
        pools, remotes = list(_pools.values()), list(_remotes.values())
        _pools.clear()
    for pool in pools:  # the workers' uploads drain first; their counters go to the remote
        pool.close(remotes[0] if remotes else None)
    extra: dict = {}
    for remote in remotes:
        for name, n in remote.finish().items():
            extra[name] = extra.get(name, 0) + n
    for memo in _scan_memos:
        memo.flush()
    for root, store in sorted(_stores.items()):
        try:
            store.finish_build(label, extra, *_limits.get(root, (None, None)))
        except VyreError as exc:
            print(f"vyre cache: warning: {exc}", file=sys.stderr)
        extra = {}  # the remote's counters go with the first store


ERROR_SUFFIX = ".vyre-error"


def kernel_emitter(target, source, env):
    """Declare `<dir of target>/<stem><suffix>` for every kernel, variant and target; a
    kernel file that does not parse gets one `<file>.vyre-error` target whose build fails
    with the diagnostic."""
    out_dir = target[0].dir
    info = _scan_file(env, source[0])
    if "error" in info:
        return [out_dir.File(source[0].name + ERROR_SUFFIX)], [s.srcnode() for s in source]
    names = output_names(info["stems"], _targets(env))
    if not names:
        raise SCons.Errors.UserError(
            f"{source[0].srcnode()} defines no @kernel; a helper-only file needs no "
            "VyreKernel call (VyreKernelDir skips such files)"
        )
    # Depend on the kernel in the source tree: with VariantDir(duplicate=0) SCons's
    # --debug=explain misreports a changed variant-dir source as removed and re-added.
    return [out_dir.File(n) for n in names], [s.srcnode() for s in source]


def kernel_scan(node, env, path=()):
    return [env.File(p) for p in kernel_deps(env, node)]


def kernel_action(target, source, env):
    """Build one kernel file through the cache tiers (a miss in a worker, or in-process)."""
    src = source[0]
    if target[0].name.endswith(ERROR_SUFFIX):
        print(_scan_file(env, src).get("error", f"{src}: cannot be compiled"), file=sys.stderr)
        return 1
    compiler, path = _compiler(env), _source_path(src)
    parses = _parses(compiler)
    try:
        build_kernel_file(
            path,
            target[0].dir.abspath,
            store=_store(env),
            targets=_targets(env),
            options=_options(env),
            deps=kernel_deps(env, src),
            identity=compiler_identity(compiler),
            compiler=compiler,
            expected=[t.name for t in target],
            link=bool(env.get("VYRELINKOUTPUTS")),
            remote=_remote(env),
            pool=_pool(env),
            parsed=parses.take(path) if parses is not None else None,
            project=_project(env),
        )
    except VyreError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


def bundle_entries(source) -> list[dict]:
    """The bundle entries ({"meta", "artifacts"}) of kernel outputs, grouped per directory
    and stem; VyreError naming a source that is not a kernel output or lacks its metadata."""
    groups: dict[tuple[str, str], dict[str, bytes]] = {}
    for node in source:
        parts = split_output_name(node.name)
        if parts is None:
            raise VyreError(f"vyre: {node} is not a kernel output (.wgsl/.spv/.kdesc/.meta.json)")
        with open(node.abspath, "rb") as f:
            groups.setdefault((node.dir.abspath, parts[0]), {})[parts[1]] = f.read()
    entries = []
    for (directory, stem), files in sorted(groups.items()):
        if ".meta.json" not in files:
            raise VyreError(
                f"vyre: {os.path.join(directory, stem)}.meta.json is missing from the "
                "bundle sources; pass every output of VyreKernel"
            )
        meta = json.loads(files.pop(".meta.json"))
        entries.append({"meta": meta, "artifacts": files})
    return entries


def bundle_action(target, source, env):
    """Pack the kernel outputs among `source` into a bundle."""
    from vyre_build.bundle import write_bundle  # the bundle writer is only needed here

    try:
        entries = bundle_entries(source)
    except VyreError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    try:
        write_bundle(target[0].abspath, entries)
    except VyreError as exc:
        print(f"{target[0]}: {exc}", file=sys.stderr)
        return 1
    return 0


def kernel_dir(env, build_dir, pattern="*.py"):
    """`VyreKernel` for every file of `build_dir` matching `pattern` that defines a kernel;
    returns all output nodes, sorted (helper-only files are scanned, not built)."""
    outs = []
    nodes = sorted(env.Glob(os.path.join(str(build_dir), pattern)), key=str)
    _scan_in_workers(env, [n for n in nodes if n.name != "__init__.py"])
    for node in nodes:
        info = _scan_file(env, node)
        if node.name == "__init__.py" or not (info["stems"] or "error" in info):
            continue
        outs.extend(env.VyreKernel(node))
    return outs


def _defaults(env) -> dict:
    """Construction variable defaults from the environment and the config files."""
    try:
        cfg = load_config(_project(env))
    except ConfigError as exc:
        _fatal(str(exc))
    return {
        "VYRECACHEDIR": cfg.cache_dir,
        "VYRECACHEMAXSIZE": "unlimited" if cfg.max_size is None else cfg.max_size,
        "VYRECACHEMAXAGE": "" if cfg.max_age_s is None else cfg.max_age_s / 86400.0,
        "VYREREMOTECACHE": cfg.remote_url or "",
        "VYREREMOTECACHEMODE": cfg.remote_mode or "",
        "VYREREMOTECACHETIMEOUT": cfg.remote_timeout_s,
    }


def generate(env) -> None:
    """Register the VyreKernel / VyreBundle builders, the scanner and the variables."""
    # $VYRECOM holds a ready Action: a bare function would be re-wrapped (and its code
    # re-serialised for the signature) on every use, which dominates a large null build.
    kernel_com = _KernelAction(kernel_action, {"cmdstr": "$VYRECOMSTR"})
    bundle_com = SCons.Action.Action(bundle_action, "$VYREBUNDLECOMSTR")
    env.SetDefault(
        VYRETARGETS=list(DEFAULT_TARGETS),
        VYREOPTIONS={},
        VYRECOMPILER=DEFAULT_COMPILER,
        VYRELINKOUTPUTS=False,
        VYREWORKERS="",
        VYRECOM=kernel_com,
        VYRECOMSTR="vyre: compile $SOURCE -> ${TARGET.dir}",
        VYREBUNDLECOM=bundle_com,
        VYREBUNDLECOMSTR="vyre: bundle $TARGET",
        **_defaults(env),
    )
    scanner = SCons.Scanner.Scanner(
        function=kernel_scan, name="VyreKernelScanner", skeys=[".py"], recursive=False
    )
    env["BUILDERS"]["VyreKernel"] = SCons.Builder.Builder(
        action="$VYRECOM",
        emitter=kernel_emitter,
        source_scanner=scanner,
        src_suffix=".py",
        single_source=True,
    )
    env["BUILDERS"]["VyreBundle"] = SCons.Builder.Builder(
        action="$VYREBUNDLECOM", suffix=".vyrebundle"
    )
    env.AddMethod(kernel_dir, "VyreKernelDir")


def exists(env) -> bool:
    """True when the compiler module imports (the builders need it to declare outputs)."""
    try:
        load_compiler(env.subst("$VYRECOMPILER") or DEFAULT_COMPILER)
    except VyreError:
        return False
    return True
