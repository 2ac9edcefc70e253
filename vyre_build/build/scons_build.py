"""What one SCons build shares across its nodes: the cache store and its limits, the
remote tier, the worker processes, the compile budget, what each kernel step did (its
line, the `[n/N]` progress and the summary line at the end), and the end of the build.
The scan of kernel files (memo and parses) is `scons_scan`'s, over the state and lock
here. The tool (`scons_tool`) asks here; nothing here defines builders.

Everything is per process (one SCons run), memoised under one lock: SCons calls emitters
and scanners from its main thread and actions from its job threads.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

import SCons.Action
import SCons.Errors
import SCons.Node
import SCons.Node.FS
import SCons.Script

from vyre_build.build.step import DEFAULT_COMPILER
from vyre_build.cache.scan import ScanMemo
from vyre_build.cache.store import Store
from vyre_build.cache.config import (
    CACHE_DIR_ENV,
    CONSTRUCTION_VARIABLES,
    DEFAULT_REMOTE_MAX_BLOB,
    ConfigError,
    load_config,
    parse_size,
    write_build_settings,
)
from vyre_build.core.errors import VyreError

lock = threading.RLock()
state: dict[tuple, object] = {}
_stores: dict[str, Store] = {}
_limits: dict[str, tuple] = {}
_settings: dict[str, dict] = {}
_remotes: dict[tuple, object] = {}
_pools: dict[tuple, object] = {}
scan_memos: list[ScanMemo] = []  # the build's scan memos (scons_scan), flushed at its end
PROGRESS_MIN = 10  # a build of fewer kernel steps prints no [n/N]
STEP_WORDS = {
    "compiled": "compiled",
    "local": "local hit",
    "remote": "remote hit",
    "failed": "failed",
}
_steps = {"compiled": 0, "local": 0, "remote": 0, "failed": 0}
_kernel_groups: list[list] = []  # the targets of every VyreKernel call, in call order
_plan: dict = {}
print_lock = threading.RLock()  # one line at a time, steps counted in print order


def var(env, name: str) -> str:
    raw = env.get(name)
    # A plain value needs no substitution (asked several times per node).
    if isinstance(raw, str) and "$" not in raw:
        return raw
    return env.subst(f"${name}") if raw not in (None, "") else ""


def compiler_of(env) -> str:
    return var(env, "VYRECOMPILER") or DEFAULT_COMPILER


def project_of(env) -> str:
    # The top directory is one per SCons process: looked up once, not per node.
    root = state.get("project")
    if root is None:
        root = state["project"] = env.Dir("#").abspath
    return root


def source_path(node) -> str:
    # With VariantDir(duplicate=0) the kernel exists only in the source tree.
    return node.srcnode().abspath


def root_of(env, node) -> str:
    """The kernel tree `node` is compiled in (nothing outside it is read): $VYREROOT, which
    VyreKernelDir sets to its directory (in the source tree), else the file's own folder."""
    raw = var(env, "VYREROOT")
    if raw:
        return env.Dir(raw).srcnode().abspath
    return os.path.dirname(source_path(node))


def fatal(message: str):
    """A configuration error: one line, as SCons prints its own, no Python stack."""
    print(f"scons: *** {message}", file=sys.stderr)
    raise SystemExit(2)


def store_of(env) -> Store | None:
    cache_dir = var(env, "VYRECACHEDIR")
    if not cache_dir:
        return None
    memo_key = ("storedir", cache_dir, project_of(env))
    with lock:
        root = state.get(memo_key)
    if root is None:
        try:
            root = env.Dir(cache_dir).abspath
        except TypeError:  # SCons: "File ... found where directory expected"
            root = None
        if root is None or (os.path.exists(root) and not os.path.isdir(root)):
            fatal(
                f"vyre cache directory {cache_dir!r} is a file, not a directory (set by "
                f"$VYRECACHEDIR or ${CACHE_DIR_ENV}); point it at a directory"
            )
        with lock:
            state[memo_key] = root
    with lock:
        if root not in _stores:
            try:
                _stores[root] = Store(root, project=project_of(env))
            except VyreError as exc:
                fatal(f"vyre cache: {exc}")
            _limits[root] = cache_limits(env)
            _settings[root] = construction_settings(env)
        return _stores[root]


def construction_settings(env) -> dict:
    """{construction variable: value} of the settings this build's SConstruct set (those
    that differ from their defaults), recorded in the cache for `vyre-build cache config`."""
    defaults = dict(state.get("defaults") or {}, VYRELINKOUTPUTS=False, VYREWORKERS="")
    out = {}
    for name in CONSTRUCTION_VARIABLES:
        value = env.get(name)
        if name in defaults and value != defaults[name]:
            out[name] = value if isinstance(value, (str, int, float, bool)) else str(value)
    return out


def cache_limits(env) -> tuple[int | None, float | None]:
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


def remote_of(env):
    """The remote tier of $VYREREMOTECACHE (one per build), or None."""
    url = var(env, "VYREREMOTECACHE")
    if not url:
        return None
    mode = var(env, "VYREREMOTECACHEMODE") or None
    timeout = float(env.get("VYREREMOTECACHETIMEOUT") or 5.0)
    max_blob = env.get("VYREREMOTECACHEMAXBLOBSIZE", DEFAULT_REMOTE_MAX_BLOB)
    try:
        max_blob = parse_size(max_blob, "$VYREREMOTECACHEMAXBLOBSIZE")
    except ConfigError as exc:
        raise SCons.Errors.UserError(str(exc)) from None
    key = (url, mode, timeout, max_blob)
    with lock:
        if key not in _remotes:
            from vyre_build.cache.remote import RemoteCache  # only builds with a remote

            _remotes[key] = RemoteCache(url, mode=mode, timeout=timeout, max_blob=max_blob)
        return _remotes[key]


def budget_of(env):
    """The build's compile budget (build.budget), one tally per build: the limit is
    $VYREMAXBUILDOPERATIONS, else $VYRE_MAX_BUILD_OPERATIONS, else the default."""
    from vyre_build.build.budget import BUILD_OPERATIONS_VAR, BuildBudget, budget_setting

    raw = env.get(BUILD_OPERATIONS_VAR)
    key = ("budget", str(raw))
    with lock:
        if key not in state:
            try:
                limit, source = budget_setting(raw)
            except VyreError as exc:
                raise SCons.Errors.UserError(str(exc)) from None
            first = state.get("budget")
            state[key] = first.sharing(limit, source) if first else BuildBudget(limit, source)
            state.setdefault("budget", state[key])
        return state[key]


def pool_of(env):
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
    compiler = compiler_of(env)
    with lock:
        if (size, compiler) not in _pools:
            from vyre_build.build.pool import WorkerPool

            _pools[(size, compiler)] = WorkerPool(size, compiler)
        return _pools[(size, compiler)]


def note_kernel(targets) -> None:
    """Remember the outputs of one VyreKernel call (the emitter's), for the progress total."""
    with lock:
        _kernel_groups.append(list(targets))


def _command_line_roots(env) -> list | None:
    """The nodes this build was asked for, when that is not the whole tree: the command
    line's targets, else the Default() ones; None for a build of everything."""
    names = list(SCons.Script.COMMAND_LINE_TARGETS)
    if not names:
        return list(SCons.Script.DEFAULT_TARGETS) or None
    roots = []
    for name in names:
        node = None
        for lookup in SCons.Node.arg2nodes_lookups:  # aliases first, as SCons looks them up
            node = lookup(name, curdir=os.getcwd())
            if node is not None:
                break
        roots.append(node if node is not None else env.Entry(os.path.abspath(name)))
    return roots


def _requested_groups(env) -> list[list]:
    """The VyreKernel outputs among what this build was asked for, and what those need:
    explicit sources and dependencies followed (a bundle, an alias), a directory's
    entries. Reads node attributes only: a job thread must not scan nodes or fill their
    memos, which SCons's main thread owns."""
    roots = _command_line_roots(env)
    if roots is None:
        return list(_kernel_groups)
    member = {id(t): i for i, group in enumerate(_kernel_groups) for t in group}
    hit: set[int] = set()
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in member:
            hit.add(member[id(node)])
        elif isinstance(node, SCons.Node.FS.Dir):
            todo.extend(n for name, n in node.entries.items() if name not in (".", ".."))
        else:
            todo.extend([*(node.sources or ()), *(node.depends or ())])
    return [_kernel_groups[i] for i in sorted(hit)]


def latest_keys(store: Store) -> dict[str, str]:
    """The store's history of this project as the build began (read once per build)."""
    with lock:
        key = ("latest", store.root)
        if key not in state:
            state[key] = store.builds.latest()
        return state[key]


def plan(env, up_to_date) -> int:
    """How many kernel steps this build runs, estimated when the first one starts (each
    step calls this first): the requested ones that `up_to_date(group)` does not find up
    to date."""
    with lock:
        return _total(env, up_to_date)


def _total(env, up_to_date) -> int:
    if "total" not in _plan:
        try:
            groups = _requested_groups(env)
            _plan["requested"] = len(groups)
            _plan["total"] = sum(1 for g in groups if not up_to_date(g))
        except Exception:  # noqa: BLE001 - only the [n/N] depends on it; no progress then
            _plan["total"], _plan["requested"] = 0, 0
    return _plan["total"]


def step_done(env, status: str, up_to_date) -> str:
    """Count one kernel step ("compiled", "local", "remote", "failed"); its progress text
    ("[3/33] " on a build of PROGRESS_MIN steps or more, else "")."""
    with lock:
        total = _total(env, up_to_date)
        _steps[status] += 1
        n = sum(_steps.values())
    return f"[{n}/{max(n, total)}] " if max(n, total) >= PROGRESS_MIN else ""


def say(line: str) -> None:
    """One whole line on stdout (job threads print in turn)."""
    with print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line() -> str | None:
    """`vyre: 33 kernel files: 2 compiled, 31 cache hits (29 remote)`, Bazel's last line;
    None when no kernel step ran."""
    c = dict(_steps)
    ran = sum(c.values())
    if not ran:
        return None
    hits = c["local"] + c["remote"]
    parts = []
    if c["compiled"]:
        parts.append(f"{c['compiled']} compiled")
    if hits:
        remote = f" ({c['remote']} remote)" if c["remote"] else ""
        parts.append(f"{_plural(hits, 'cache hit')}{remote}")
    if c["failed"]:
        parts.append(f"{c['failed']} failed")
    # Where SCons stopped at a failure (no -k), the files it did not reach are not known to
    # be up to date: they are not counted, and the line says so.
    stopped = bool(c["failed"]) and not _keep_going()
    fresh = 0 if stopped else max(0, _plan.get("requested", 0) - ran)  # asked for, no step ran
    if fresh:
        parts.append(f"{fresh} up to date")
    end = "; scons stopped at the first failure (scons -k builds the other files)" * stopped
    return f"vyre: {_plural(ran + fresh, 'kernel file')}: {', '.join(parts)}{end}"


def _keep_going() -> bool:
    try:
        return bool(SCons.Script.GetOption("keep_going"))
    except Exception:  # noqa: BLE001 - outside an SConstruct's run (tests): as scons -k
        return True


@atexit.register
def finish_build() -> None:
    """Drain uploads, stop the workers, record this build's counters and history, keep the
    scan memo; then apply the cache limits."""
    label = " ".join(sys.argv[1:])
    line = summary_line()
    if line is not None and SCons.Action.print_actions:
        say(line)
    with lock:
        pools, remotes = list(_pools.values()), list(_remotes.values())
        _pools.clear()
    for pool in pools:  # the workers' uploads drain first; their counters go to the remote
        pool.close(remotes[0] if remotes else None)
    extra: dict = {}
    for remote in remotes:
        for name, n in remote.finish().items():
            extra[name] = extra.get(name, 0) + n
    for memo in scan_memos:
        memo.flush()
    for root, store in sorted(_stores.items()):
        try:
            store.finish_build(label, extra, *_limits.get(root, (None, None)))
        except VyreError as exc:
            print(f"vyre cache: warning: {exc}", file=sys.stderr)
        if root in _settings and "project" in state and store.claim():  # a vyre cache only
            try:
                write_build_settings(root, state["project"], _settings[root])
            except OSError:  # only `cache config` reads it; the build's outcome stands
                pass
        extra = {}  # the remote's counters go with the first store


def defaults(env) -> dict:
    """Construction variable defaults from the environment and the config files."""
    try:
        cfg = load_config(project_of(env))
    except ConfigError as exc:
        fatal(str(exc))
    state["defaults"] = found = {
        "VYRECACHEDIR": cfg.cache_dir,
        "VYRECACHEMAXSIZE": "unlimited" if cfg.max_size is None else cfg.max_size,
        "VYRECACHEMAXAGE": "" if cfg.max_age_s is None else cfg.max_age_s / 86400.0,
        "VYREREMOTECACHE": cfg.remote_url or "",
        "VYREREMOTECACHEMODE": cfg.remote_mode or "",
        "VYREREMOTECACHETIMEOUT": cfg.remote_timeout_s,
        "VYREREMOTECACHEMAXBLOBSIZE": (
            "unlimited" if cfg.remote_max_blob is None else cfg.remote_max_blob
        ),
    }
    return dict(found)
