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
`VyreBundle(target, sources)`. An emitter declares every output (compiler's
`list_kernels`), so `scons -c` removes them and `-n` shows them; a scanner follows kernel
imports (`kernel_dependencies`) and the variants YAML. The compile runs in-process
through the artifact cache. Construction variables:
    VYRETARGETS       targets to emit (default ["wgsl", "spirv", "kdesc"])
    VYREOPTIONS       compiler options dict (default {})
    VYRECACHEDIR      cache dir (default $VYRE_CACHE_DIR, else #cache); "" disables the cache
    VYRECACHEMAXSIZE / VYRECACHEMAXAGE   limits (e.g. "2G", 30 days) applied after a build
    VYRELINKOUTPUTS   hard-link outputs to their read-only cache blobs instead of copying
                      (like ccache's hard_link: fast where creating files is slow; default off)
    VYREROOT          the kernel tree: nothing outside it is read (VyreKernelDir sets its
                      directory; default each kernel file's folder)
    VYRECOMPILER      compiler module (default vyre_build.compiler)
    VYRESIGNKEY       secret key file (`vyre-build key generate`): sign the bundle with it
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

from vyre_build.build_step import (
    DEFAULT_COMPILER,
    DEFAULT_TARGETS,
    VARIANTS_FILES,
    build_kernel_file,
    compiler_identity,
    load_compiler,
    normalize_targets,
    output_names,
    split_output_name,
    with_tools,
)
from vyre_build.cache import CACHE_DIR_ENV
from vyre_build.files import canonical_json
from vyre_build.cache.scan import ScanMemo
from vyre_build.cache.store import Store
from vyre_build.errors import VyreError

__all__ = ["exists", "generate", "toolpath"]

_lock = threading.Lock()
_stores: dict[str, Store] = {}
_limits: dict[str, tuple] = {}
_memo: dict[tuple, object] = {}


def toolpath() -> str:
    """The directory to pass as `toolpath=[...]` so that SCons finds the tool `vyre`."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "site_tools")


def _compiler(env) -> str:
    raw = env.get("VYRECOMPILER")
    # A plain module name needs no substitution (asked several times per node).
    if isinstance(raw, str) and "$" not in raw:
        return raw or DEFAULT_COMPILER
    return env.subst("$VYRECOMPILER") or DEFAULT_COMPILER


def _source_path(node) -> str:
    # With VariantDir(duplicate=0) the kernel exists only in the source tree.
    return node.srcnode().abspath


def _root(env, node) -> str:
    """The kernel tree `node` is compiled in (nothing outside it is read): $VYREROOT, which
    VyreKernelDir sets to its directory (in the source tree), else the file's own folder."""
    raw = env.get("VYREROOT")
    if raw:
        return env.Dir(raw).srcnode().abspath
    return os.path.dirname(_source_path(node))


def _scan_memo(env, compiler: str, root: str) -> ScanMemo | None:
    store = _store(env)
    if store is None:
        return None
    key = ("scanmemo", store.root, compiler, root)
    with _lock:
        if key not in _memo:
            _memo[key] = ScanMemo(store, f"{_identity_text(compiler)}\0root={root}")
        return _memo[key]


def _scan_file(env, node, root: str | None = None) -> dict:
    """{"stems", "deps"} of a kernel file: once per process, and across builds through the
    scan memo in the cache (reused only while every file it came from is unchanged)."""
    path, compiler = _source_path(node), _compiler(env)
    root = root or _root(env, node)
    key = ("scan", compiler, path, root)
    with _lock:
        if key in _memo:
            return _memo[key]
    module = load_compiler(compiler)
    memo = _scan_memo(env, compiler, root)
    try:
        # Before the memo hashes the file: a FIFO, a device or a link out of the tree is
        # refused unread.
        getattr(module, "check_source", lambda p, r: None)(path, root)
        info = memo.lookup(path) if memo is not None else None
    except VyreError as exc:
        info = {"stems": [], "deps": [], "error": str(exc)}
    if info is None:
        before = memo.file_hash(path) if memo is not None else None
        try:
            stems = list(module.list_kernels(path, root=root))
            deps = set(module.kernel_dependencies(path, root=root))
        except VyreError as exc:
            # Reported when this file's target is built, so -c, -n and -k still work.
            info = {"stems": [], "deps": [], "error": str(exc)}
            with _lock:
                _memo[key] = info
            return info
        base = os.path.dirname(path)
        deps.update(
            os.path.join(base, v) for v in VARIANTS_FILES if os.path.isfile(os.path.join(base, v))
        )
        deps.discard(path)
        info = {"stems": stems, "deps": sorted(deps)}
        if memo is not None:
            try:
                memo.save(path, before, info["stems"], info["deps"])
            except VyreError as exc:  # the memo only saves time; the build goes on
                print(f"vyre cache: warning: {exc}", file=sys.stderr)
    with _lock:
        _memo[key] = info
    return info


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


def _signature_var(target, source, env, for_signature):
    """$_VYRESIG: called by SCons's substitution directly (no expression to parse per node,
    which dominated a large null build), from the environment as it is at build time."""
    return _signature(env.get("VYRETARGETS"), env.get("VYREOPTIONS"), _compiler(env))


def _identity_text(compiler) -> str:
    return canonical_json(compiler_identity(str(compiler) or DEFAULT_COMPILER)).decode()


def _fatal(message: str):
    """A configuration error: one line, as SCons prints its own, no Python stack."""
    print(f"scons: *** {message}", file=sys.stderr)
    raise SystemExit(2)


def _store(env) -> Store | None:
    raw = env.get("VYRECACHEDIR")
    cache_dir = raw if isinstance(raw, str) and "$" not in raw else env.subst("$VYRECACHEDIR")
    if not cache_dir:
        return None
    memo_key = ("storedir", cache_dir, env.Dir("#").abspath)
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
                os.makedirs(root, exist_ok=True)
                _stores[root] = Store(root)
            except OSError as exc:
                _fatal(f"vyre cache: cannot create cache directory {root}: {exc.strerror or exc}")
            except VyreError as exc:
                _fatal(f"vyre cache: {exc}")
            limits = _cache_limits(env)
            if limits != (None, None):
                _limits[root] = limits
        return _stores[root]


def _cache_limits(env) -> tuple[int | None, float | None]:
    """($VYRECACHEMAXSIZE bytes or "500M", $VYRECACHEMAXAGE days) -> (bytes, seconds)."""
    from vyre_build.commands.cache import parse_size  # only when a limit is set

    size, age = env.get("VYRECACHEMAXSIZE"), env.get("VYRECACHEMAXAGE")
    try:
        size = (
            None
            if size in (None, "")
            else (size if isinstance(size, int) else parse_size(str(size)))
        )
        age = None if age in (None, "") else float(age) * 86400.0
    except (VyreError, ValueError) as exc:
        raise SCons.Errors.UserError(f"$VYRECACHEMAXSIZE / $VYRECACHEMAXAGE: {exc}") from None
    return size, age


@atexit.register
def _finish_build() -> None:
    """Record this build's hit/miss counts; then apply the cache limits, if any are set."""
    label = " ".join(sys.argv[1:])
    for root, store in sorted(_stores.items()):
        try:
            if store.flush_stats(label) is not None and root in _limits:
                store.gc(*_limits[root])
        except VyreError as exc:
            print(f"vyre cache: warning: {exc}", file=sys.stderr)


ERROR_SUFFIX = ".vyre-error"


def kernel_emitter(target, source, env):
    """Declare `<dir of target>/<stem><suffix>` for every kernel, variant and target; a
    kernel file that does not parse gets one `<file>.vyre-error` target whose build fails
    with the diagnostic."""
    out_dir = target[0].dir
    info = _scan_file(env, source[0])
    if "error" in info:
        # A Value stands in for the file, so SCons never reads (hashes) a refused one.
        shown = env.Value(str(source[0].srcnode()), built_value=info["error"])
        return [out_dir.File(source[0].name + ERROR_SUFFIX)], [shown]
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
    """Build one kernel file through the cache (in-process: no subprocess per kernel)."""
    src = source[0]
    if target[0].name.endswith(ERROR_SUFFIX):
        print(src.read(), file=sys.stderr)
        return 1
    try:
        build_kernel_file(
            _source_path(src),
            target[0].dir.abspath,
            store=_store(env),
            targets=_targets(env),
            options=_options(env),
            deps=kernel_deps(env, src),
            identity=compiler_identity(_compiler(env)),
            compiler=_compiler(env),
            expected=[t.name for t in target],
            link=bool(env.get("VYRELINKOUTPUTS")),
            root=_root(env, src),
        )
    except VyreError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


def bundle_action(target, source, env):
    """Pack the kernel outputs among `source` (grouped per directory and stem) into a bundle."""
    from vyre_build.bundle import write_bundle  # the bundle writer is only needed here

    groups: dict[tuple[str, str], dict[str, bytes]] = {}
    for node in source:
        parts = split_output_name(node.name)
        if parts is None:
            print(
                f"vyre: {node} is not a kernel output (.wgsl/.spv/.kdesc/.meta.json)",
                file=sys.stderr,
            )
            return 1
        with open(node.abspath, "rb") as f:
            groups.setdefault((node.dir.abspath, parts[0]), {})[parts[1]] = f.read()
    entries = []
    for (directory, stem), files in sorted(groups.items()):
        if ".meta.json" not in files:
            print(
                f"vyre: {os.path.join(directory, stem)}.meta.json is missing from the "
                "bundle sources; pass every output of VyreKernel",
                file=sys.stderr,
            )
            return 1
        meta = json.loads(files.pop(".meta.json"))
        entries.append({"meta": meta, "artifacts": files})
    key = env.subst("$VYRESIGNKEY")
    try:
        write_bundle(target[0].abspath, entries, sign_key=env.File(key).abspath if key else None)
    except VyreError as exc:
        print(f"{target[0]}: {exc}", file=sys.stderr)
        return 1
    return 0


def _sign_key_id(target, source, env, for_signature):
    """$_VYRESIGNID: the key id of $VYRESIGNKEY (or why it cannot be read), for the signature."""
    key = env.subst("$VYRESIGNKEY")
    if not key:
        return ""
    from vyre_build.bundle.keys import load_secret_key

    try:
        return load_secret_key(env.File(key).abspath).public.key_id
    except VyreError as exc:  # reported by the bundle action itself
        return f"unreadable: {exc}"


def kernel_dir(env, build_dir, pattern="*.py"):
    """`VyreKernel` for every file of `build_dir` matching `pattern` that defines a kernel;
    returns all output nodes, sorted (helper-only files are scanned, not built)."""
    outs = []
    root = env.Dir(build_dir).srcnode().abspath  # the kernel tree: nothing outside is read
    for node in sorted(env.Glob(os.path.join(str(build_dir), pattern)), key=str):
        info = _scan_file(env, node, root)
        if node.name == "__init__.py" or not (info["stems"] or "error" in info):
            continue
        outs.extend(env.VyreKernel(node, VYREROOT=root))
    return outs


def generate(env) -> None:
    """Register the VyreKernel / VyreBundle builders, the scanner and the variables."""
    # $VYRECOM holds a ready Action: a bare function would be re-wrapped (and its code
    # re-serialised for the signature) on every use, which dominates a large null build.
    kernel_com = SCons.Action.Action(kernel_action, "$VYRECOMSTR", varlist=["_VYRESIG"])
    # The key's id, not only its path, is in the signature: a new key re-signs the bundle.
    bundle_com = SCons.Action.Action(
        bundle_action, "$VYREBUNDLECOMSTR", varlist=["VYRESIGNKEY", "_VYRESIGNID"]
    )
    env.SetDefault(
        VYRETARGETS=list(DEFAULT_TARGETS),
        VYREOPTIONS={},
        VYRECACHEDIR=os.environ.get(CACHE_DIR_ENV) or "#cache",
        VYRECOMPILER=DEFAULT_COMPILER,
        VYRELINKOUTPUTS=False,
        VYRECOM=kernel_com,
        VYRECOMSTR="vyre: compile $SOURCE -> ${TARGET.dir}",
        VYREBUNDLECOM=bundle_com,
        VYREBUNDLECOMSTR="vyre: bundle $TARGET",
    )
    env["_VYRESIG"] = _signature_var
    env["_VYRESIGNID"] = _sign_key_id
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
