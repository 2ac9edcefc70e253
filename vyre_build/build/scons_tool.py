"""SCons Tool `vyre`: builders for kernel files and shader bundles, thin over build_step.

Load it from an SConstruct (works for an installed package; the tool lives in it):

    import vyre_build.build.scons_tool
    env = Environment(tools=["default", "vyre"], toolpath=[vyre_build.build.scons_tool.toolpath()])
    # or: env.Tool("vyre", toolpath=[vyre_build.build.scons_tool.toolpath()])
    # or: import vyre_build.build.scons_tool as vyre; vyre.generate(env)
    VariantDir("build", "kernels", duplicate=0)
    outs = env.VyreKernelDir("build")            # every kernel file of build/ (= kernels/)
    env.VyreBundle("dist/kernels.vyrebundle", outs)

Builders: `VyreKernel(source)` (one kernel file -> `<stem>.wgsl/.spv/.kdesc/.meta.json`
per kernel and variant, in the directory of the target, default beside the source),
`VyreTuning(target, sources)` (a `tuning.yaml` of tunables and tuning record files, or a
directory of them, -> one `<target>.tuning.json`: docs/tuning.md) and
`VyreBundle(target, sources)` (kernel outputs, and `.tuning.json` files carried along). An emitter declares every output (from one parse of the
file, which the compile reuses: build_parse), so `scons -c` removes them and `-n` shows
them; a scanner follows kernel imports and the variants YAML. Cache misses compile in
worker processes under -jN (build_pool), in-process under -j1. Construction variables
(defaults from the environment and the config files: vyre_build.cache.config):
    VYRETARGETS       targets to emit (default ["wgsl", "spirv", "kdesc"])
    VYREOPTIONS       compiler options dict (default {})
    VYREDEBUG         a debug build when 1/true/yes/on (default $VYRE_DEBUG; docs/debugging.md)
    VYRECACHEDIR      cache dir (default <project>/cache); "" disables the cache
    VYRECACHEMAXSIZE / VYRECACHEMAXAGE   limits (default "5G", none; days) kept after builds
    VYREREMOTECACHE / VYREREMOTECACHEMODE   remote tier URL and "read-only"/"read-write"
    VYRELINKOUTPUTS   hard-link outputs to their read-only cache blobs instead of copying
                      (like ccache's hard_link: fast where creating files is slow; default off)
    VYREWORKERS       compile worker processes (default: the -j count; 0: in-process)
    VYREMAXBUILDOPERATIONS   operations this build may compile, over all its kernel files
                      (default $VYRE_MAX_BUILD_OPERATIONS, else 10000000; "unlimited")
    VYREROOT          the kernel tree: nothing outside it is read (VyreKernelDir sets its
                      directory; default each kernel file's folder)
    VYRECOMPILER      compiler module (default vyre_build.compiler)
    VYRESIGNKEY       secret key file (`vyre-build key generate`): sign the bundle with it;
                      default the VYRESIGNKEY environment variable (a relative path there is
                      taken from the SConstruct's folder, as "#path"); the SConstruct's own
                      value wins over the environment's
    VYRECOM / VYRECOMSTR, VYREBUNDLECOM / VYREBUNDLECOMSTR,
    VYRETUNINGCOM / VYRETUNINGCOMSTR   actions and their lines;
                      a kernel's line is printed when its step is done, with $VYRESTEP
                      (compiled, local hit, remote hit, failed) and $VYREPROGRESS ("[n/N] "
                      on builds of 10 steps or more); the build ends with one summary line
                      (`vyre: 33 kernel files: 2 compiled, 31 cache hits (29 remote)`)
Action signatures include the targets, the options and the compiler identity (varlist),
so changing any of them rebuilds.

This module holds the VyreKernel builder (emitter, scanner, action and its line),
VyreKernelDir and `generate`, which registers every builder; the VyreTuning and VyreBundle
actions are in `scons_bundle`, what one build shares across its nodes in `scons_build`,
and the scan of kernel files in `scons_scan`.
"""

from __future__ import annotations

import os
import sys
import threading

import SCons.Action
import SCons.Builder
import SCons.Errors
import SCons.Scanner
import SCons.Subst

import vyre_build.build.scons_build as build
import vyre_build.build.scons_scan as scan
from vyre_build.build.scons_bundle import (
    _sign_key_from_environment,
    _sign_key_id,
    bundle_action,
    tuning_action,
    vyre_tuning,
)
from vyre_build.build.step import (
    DEFAULT_COMPILER,
    DEFAULT_TARGETS,
    TARGET_SUFFIXES,
    build_kernel_file,
    compiler_identity,
    compute_key,
    load_compiler,
    normalize_targets,
    output_names,
    with_tools,
)
from vyre_build.cache.history import output_name
from vyre_build.core.errors import VyreError
from vyre_build.core.files import canonical_json

__all__ = ["exists", "generate", "toolpath"]

_NULL = SCons.Action._null  # SCons's "not given" for an action's show/execute


def toolpath() -> str:
    """The directory to pass as `toolpath=[...]` so that SCons finds the tool `vyre`."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "site_tools")


def kernel_stems(env, node) -> list[str]:
    """Output stems ("saxpy", "add.f32") of one kernel file."""
    return scan.scan_file(env, node)["stems"]


def kernel_deps(env, node) -> list[str]:
    """Every file compiling `node` reads besides itself: imports (transitively) + variants."""
    return scan.scan_file(env, node)["deps"]


def _targets(env) -> tuple[str, ...]:
    try:
        return normalize_targets(env["VYRETARGETS"])
    except VyreError as exc:
        raise SCons.Errors.UserError(f"$VYRETARGETS: {exc}") from None


def _options(env) -> dict:
    options = env.get("VYREOPTIONS") or {}
    if not isinstance(options, dict):
        raise SCons.Errors.UserError(f"$VYREOPTIONS must be a dict, got {options!r}")
    return _with_debug(env, options)


_FLAGS = {"1": True, "true": True, "yes": True, "on": True}
_FLAGS.update({"0": False, "false": False, "no": False, "off": False, "": False})


def _with_debug(env, options):
    """`options` with debug=True when $VYREDEBUG (default: the environment's VYRE_DEBUG)
    is on: a debug build, whose action keys differ from a release build's."""
    value = env.get("VYREDEBUG")
    on = _FLAGS.get(str(value).strip().lower()) if not isinstance(value, bool) else value
    if on is None:
        raise SCons.Errors.UserError(
            f"$VYREDEBUG (or VYRE_DEBUG) must be 1/0, true/false, yes/no or on/off, got {value!r}"
        )
    if not on or not isinstance(options, dict):
        return options
    return {**options, "debug": True}


def _canon(value) -> str:
    """Stable text of a construction value for action signatures (dict order ignored)."""
    if isinstance(value, (list, tuple)):
        value = sorted(value) if all(isinstance(v, str) for v in value) else list(value)
    return canonical_json(value).decode()


def _signature(targets, options, compiler) -> str:
    """What the kernel action's signature adds to its code: the targets, the options and
    the compiler module and identity, as canonical text (memoised: asked per node)."""
    memo_key = ("sig", repr(targets), repr(options), str(compiler))
    with build.lock:
        if memo_key in build.state:
            return build.state[memo_key]
    name = str(compiler) or DEFAULT_COMPILER
    # The identity includes external tools the options pull in (spirv-opt), as the key does.
    identity = with_tools(
        compiler_identity(name), options if isinstance(options, dict) else {}, name
    )
    text = "|".join(
        [_canon(targets), _canon(options), str(compiler), canonical_json(identity).decode()]
    )
    with build.lock:
        build.state[memo_key] = text
    return text


_shown = threading.local()  # whether SCons shows this job's command line (not under -s)


class _KernelAction(SCons.Action.FunctionAction):
    """The kernel action; its signature is the function's code plus `_signature` of the
    environment as it is at build time, joined directly (SCons substitutes a varlist
    through its expander several times per node, which a large build pays for).

    Its line ($VYRECOMSTR) is printed when the step is done, not before as SCons prints
    one, so that it can say what the step did ($VYRESTEP: compiled, local hit, remote hit,
    failed) and where the build is ($VYREPROGRESS: "[n/N] "); under -n, before, as SCons
    does ($VYRESTEP "compile")."""

    def get_presig(self, target, source, env, executor=None):
        options = _with_debug(env, env.get("VYREOPTIONS"))
        sig = _signature(env.get("VYRETARGETS"), options, build.compiler_of(env))
        return bytes(self.funccontents) + sig.encode()

    def __call__(
        self,
        target,
        source,
        env,
        exitstatfunc=_NULL,
        presub=_NULL,
        show=_NULL,
        execute=_NULL,
        chdir=_NULL,
        executor=None,
    ):
        show = SCons.Action.print_actions if show is _NULL else show
        execute = SCons.Action.execute_actions if execute is _NULL else execute
        if execute:
            _shown.value, show = show, False
        return super().__call__(
            target, source, env, exitstatfunc, presub, show, execute, chdir, executor
        )


def step_line(env, target, source, status: str) -> None:
    """Count one finished kernel step (`build.step_done`) and print its $VYRECOMSTR
    (through $PRINT_CMD_LINE_FUNC if set), in step order under -jN."""
    with build.print_lock:
        progress = build.step_done(env, status, up_to_date)
        if not getattr(_shown, "value", True):
            return
        step = build.STEP_WORDS[status]
        done = env.Override({"VYRESTEP": step, "VYREPROGRESS": progress})
        line = done.subst("$VYRECOMSTR", SCons.Subst.SUBST_RAW, target, source)
        if not line:
            return
        print_func = env.get("PRINT_CMD_LINE_FUNC")
        if print_func:
            print_func(line, target, source, env)
        else:
            build.say(line)


ERROR_SUFFIX = ".vyre-error"


def up_to_date(group) -> bool:
    """Whether the step of one VyreKernel call's outputs `group` will not run, judged
    without SCons (whose verdict needs node scans that only its main thread may make):
    every output exists and the store's history says it was last built from the key the
    step would have now. Only the [n/N] estimate rests on it; no store: False."""
    first = group[0]
    env = first.get_build_env()
    store = build.store_of(env)
    if store is None or first.name.endswith(ERROR_SUFFIX) or not first.sources:
        return False
    if not all(os.path.isfile(t.abspath) for t in group):
        return False
    src = first.sources[0]
    compiler, path = build.compiler_of(env), build.source_path(src)
    options = _options(env)
    identity = with_tools(compiler_identity(compiler), options, compiler)
    try:
        key = compute_key(path, kernel_deps(env, src), _targets(env), options, identity)[0]
    except (VyreError, OSError):
        return False
    project = build.project_of(env)
    latest = build.latest_keys(store)
    return all(
        latest.get(output_name(first.dir.abspath, stem, project)) == key.key
        for stem in scan.scan_file(env, src)["stems"]
    )


def kernel_emitter(target, source, env):
    """Declare `<dir of target>/<stem><suffix>` for every kernel, variant and target; a
    kernel file that does not parse gets one `<file>.vyre-error` target whose build fails
    with the diagnostic."""
    out_dir = target[0].dir
    info = scan.scan_file(env, source[0])
    if "error" in info:
        # A Value stands in for the file, so SCons never reads (hashes) a refused one.
        shown = env.Value(str(source[0].srcnode()), built_value=info["error"])
        return [out_dir.File(source[0].name + ERROR_SUFFIX)], [shown]
    names = output_names(info["stems"], _targets(env), info.get("skipped"))
    if not names:
        raise SCons.Errors.UserError(
            f"{source[0].srcnode()} defines no @kernel; a helper-only file needs no "
            "VyreKernel call (VyreKernelDir skips such files)"
        )
    outs = [out_dir.File(n) for n in names]
    build.note_kernel(outs)
    # Depend on the kernel in the source tree: with VariantDir(duplicate=0) SCons's
    # --debug=explain misreports a changed variant-dir source as removed and re-added.
    return outs, [s.srcnode() for s in source]


def kernel_scan(node, env, path=()):
    return [env.File(p) for p in kernel_deps(env, node)]


def skipped_notes(info: dict, targets) -> list[str]:
    """One line per kernel of a scan that gets no artifact of one of `targets`, and why."""
    return [
        f"vyre: {stem}: {why} (no {TARGET_SUFFIXES[t]})"
        for stem, whys in sorted(info.get("skipped", {}).items())
        for t, why in sorted(whys.items())
        if t in targets
    ]


def kernel_action(target, source, env):
    """Build one kernel file through the cache tiers (a miss in a worker, or in-process)."""
    build.plan(env, up_to_date)  # before this step writes anything
    src = source[0]
    if target[0].name.endswith(ERROR_SUFFIX):
        step_line(env, target, source, "failed")
        print(src.read(), file=sys.stderr)  # the Value the emitter put in for the file
        return 1
    compiler, path = build.compiler_of(env), build.source_path(src)
    parses, root = scan.parses_of(compiler), build.root_of(env, src)
    options = _options(env)
    if options.get("debug"):  # reports name files from the project root: kernels/x.py
        folder = os.path.relpath(os.path.dirname(path), build.project_of(env))
        if folder != "." and not folder.startswith(".."):
            options = {**options, "debug_dir": folder.replace(os.sep, "/")}
    try:
        result = build_kernel_file(
            path,
            target[0].dir.abspath,
            store=build.store_of(env),
            targets=_targets(env),
            options=options,
            deps=kernel_deps(env, src),
            identity=compiler_identity(compiler),
            compiler=compiler,
            expected=[t.name for t in target],
            link=bool(env.get("VYRELINKOUTPUTS")),
            remote=build.remote_of(env),
            pool=build.pool_of(env),
            parsed=parses.take(path, root) if parses is not None else None,
            project=build.project_of(env),
            root=root,
            budget=build.budget_of(env),
        )
    except VyreError as exc:
        step_line(env, target, source, "failed")
        print(str(exc), file=sys.stderr)
        return 1
    step_line(env, target, source, result.tier or "compiled")
    for line in skipped_notes(scan.scan_file(env, src), _targets(env)):
        build.say(line)
    return 0


def kernel_dir(env, build_dir, pattern="*.py"):
    """`VyreKernel` for every file of `build_dir` matching `pattern` that defines a kernel;
    returns all output nodes, sorted (helper-only files are scanned, not built)."""
    outs = []
    root = env.Dir(build_dir).srcnode().abspath  # the kernel tree: nothing outside is read
    nodes = sorted(env.Glob(os.path.join(str(build_dir), pattern)), key=str)
    scan.scan_in_workers(env, [n for n in nodes if n.name != "__init__.py"], root)
    owner: dict[str, str] = {}  # artifact stem -> the file whose kernel it is
    for node in nodes:
        info = scan.scan_file(env, node, root)
        if node.name == "__init__.py" or not (info["stems"] or "error" in info):
            continue
        for stem in info["stems"]:
            if owner.setdefault(stem, str(node.srcnode())) != str(node.srcnode()):
                build.fatal(
                    f"{owner[stem]} and {node.srcnode()} both define kernel {stem!r}, whose "
                    f"artifacts ({build_dir}/{stem}.*) would overwrite each other; rename one "
                    "of them"
                )
        outs.extend(env.VyreKernel(node, VYREROOT=root))
    return outs


def generate(env) -> None:
    """Register the VyreKernel / VyreBundle builders, the scanner and the variables."""
    # $VYRECOM holds a ready Action: a bare function would be re-wrapped (and its code
    # re-serialised for the signature) on every use, which dominates a large null build.
    kernel_com = _KernelAction(kernel_action, {"cmdstr": "$VYRECOMSTR"})
    # The key's id, not only its path, is in the signature: a new key re-signs the bundle.
    bundle_com = SCons.Action.Action(
        bundle_action, "$VYREBUNDLECOMSTR", varlist=["VYRESIGNKEY", "_VYRESIGNID"]
    )
    env.SetDefault(
        VYRETARGETS=list(DEFAULT_TARGETS),
        VYREOPTIONS={},
        VYREDEBUG=os.environ.get("VYRE_DEBUG", ""),
        VYRECOMPILER=DEFAULT_COMPILER,
        VYRELINKOUTPUTS=False,
        VYREWORKERS="",
        VYRECOM=kernel_com,
        VYRECOMSTR="vyre: ${VYREPROGRESS}${VYRESTEP} $SOURCE -> ${TARGET.dir}",
        VYRESTEP="compile",
        VYREPROGRESS="",
        VYREBUNDLECOM=bundle_com,
        VYREBUNDLECOMSTR="vyre: bundle $TARGET",
        VYRESIGNKEY=_sign_key_from_environment(),
        VYRETUNINGCOM=SCons.Action.Action(tuning_action, "$VYRETUNINGCOMSTR"),
        VYRETUNINGCOMSTR="vyre: tuning $TARGET",
        **build.defaults(env),
    )
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
    env["BUILDERS"]["_VyreTuning"] = SCons.Builder.Builder(action="$VYRETUNINGCOM")
    env.AddMethod(vyre_tuning, "VyreTuning")
    env.AddMethod(kernel_dir, "VyreKernelDir")


def exists(env) -> bool:
    """True when the compiler module imports (the builders need it to declare outputs)."""
    try:
        load_compiler(env.subst("$VYRECOMPILER") or DEFAULT_COMPILER)
    except VyreError:
        return False
    return True
