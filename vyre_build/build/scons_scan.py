"""The scan of kernel files in one SCons build: what a kernel file defines (the output
stems of its kernels and variants, and the targets a stem does not get) and what compiling
it reads besides itself (its imports, transitively, and the variants files beside it),
asked by the VyreKernel emitter and scanner and by VyreKernelDir (scons_tool); and the
build's parses, which the compiles reuse (build_parse).

Guarantees: a file is scanned once per process, memoised in the build's state under its
lock (scons_build), and across builds through the scan memo in the cache, reused only
while every file it came from is unchanged; a file not to be read at all (a FIFO, a
device, a link out of the tree, too large) is refused before anything hashes or parses
it; a file that does not parse gets an {"error"} answer, reported when its target is
built, so that -c, -n and -k still work. A cold -jN build parses its tree in the compile
workers.
"""

from __future__ import annotations

import os

from vyre_build.core.artifacts import VARIANTS_FILES
from vyre_build.build.parse import PARSE_ONCE_COMPILER, ParsedFile, Parses
from vyre_build.build.scons_build import (
    compiler_of,
    lock,
    pool_of,
    project_of,
    root_of,
    scan_memos,
    source_path,
    state,
    store_of,
)
from vyre_build.build.step import DEFAULT_COMPILER, compiler_identity, load_compiler
from vyre_build.cache.scan import ScanMemo
from vyre_build.core.errors import VyreError
from vyre_build.core.files import canonical_json

MIN_WORKER_SCAN = 16  # fewer unscanned files are parsed in the build process


def scan_memo_of(env, compiler: str, root: str) -> ScanMemo | None:
    store = store_of(env)
    if store is None:
        return None
    key = ("scanmemo", store.root, compiler, root)
    with lock:
        if key not in state:
            # Per tree: a file's answer (or refusal) depends on what the tree lets it read.
            text = f"{identity_text(compiler)}\0root={root}"
            state[key] = ScanMemo(store, text, project_of(env))
            scan_memos.append(state[key])
        return state[key]


def parses_of(compiler: str) -> Parses | None:
    """The build's parses (the vyre compiler only; see build_parse)."""
    if compiler != PARSE_ONCE_COMPILER:
        return None
    with lock:
        key = ("parses", compiler)
        if key not in state:
            state[key] = Parses(load_compiler(compiler))
        return state[key]


def scan_info(path: str, stems, deps, skipped) -> dict:
    deps = set(deps)
    base = os.path.dirname(path)
    deps.update(
        os.path.join(base, v) for v in VARIANTS_FILES if os.path.isfile(os.path.join(base, v))
    )
    deps.discard(path)
    return {"stems": list(stems), "deps": sorted(deps), "skipped": dict(skipped)}


def _refusal(compiler: str, path: str, root: str) -> dict | None:
    """The scan's answer for a file not to be read at all (a FIFO, a device, a link out of
    the tree, too large), decided before anything hashes or parses it; else None."""
    check = getattr(load_compiler(compiler), "check_source", None)
    try:
        if check is not None:
            check(path, root)
    except VyreError as exc:
        return {"stems": [], "deps": [], "error": str(exc)}
    return None


def scan_file(env, node, root: str | None = None) -> dict:
    """{"stems", "deps", "skipped"} of a kernel file ("skipped": {stem: {target: why}}, the
    artifacts a stem does not get), or {"error"}: once per process, and across builds
    through the scan memo in the cache (reused only while every file it came from is
    unchanged)."""
    path, compiler = source_path(node), compiler_of(env)
    root = root or root_of(env, node)
    key = ("scan", compiler, path, root)
    with lock:
        if key in state:
            return state[key]
    memo = scan_memo_of(env, compiler, root)
    info = _refusal(compiler, path, root)
    if info is None and memo is not None:
        info = memo.lookup(path)
    if info is None:
        before = memo.file_hash(path) if memo is not None else None
        parses = parses_of(compiler)
        try:
            if parses is not None:
                parsed = parses.parse(path, root)
                info = scan_info(path, parsed.stems, parsed.deps, parsed.skipped)
            else:
                module = load_compiler(compiler)
                stems = module.list_kernels(path, root=root)
                deps = module.kernel_dependencies(path, root=root)
                skip = getattr(module, "skipped_targets", None)  # a custom compiler may lack it
                skipped = skip(path, root=root) if skip is not None else {}
                info = scan_info(path, stems, deps, skipped)
        except VyreError as exc:
            # Reported when this file's target is built, so -c, -n and -k still work.
            info = {"stems": [], "deps": [], "error": str(exc)}
        if memo is not None and "error" not in info:
            memo.save(path, before, info["stems"], info["deps"], info["skipped"])
    with lock:
        state[key] = info
    return info


def scan_in_workers(env, nodes, root: str) -> None:
    """Scan the files of the kernel tree `root` that the memo cannot answer in the compile
    workers, in parallel (a cold -jN build); their parses wait, pickled, for the compiles
    (build.parse)."""
    compiler = compiler_of(env)
    parses, pool = parses_of(compiler), pool_of(env)
    if parses is None or pool is None:
        return
    memo = scan_memo_of(env, compiler, root)
    todo = {}
    for node in nodes:
        path = source_path(node)
        key = ("scan", compiler, path, root)
        with lock:
            if key in state:
                continue
        info = _refusal(compiler, path, root)
        if info is None and memo is not None:
            info = memo.lookup(path)
        if info is not None:
            with lock:
                state[key] = info
            continue
        todo[path] = memo.file_hash(path) if memo is not None else None
    if len(todo) < MIN_WORKER_SCAN:
        return  # a few edited files: parsed here, as they come
    for r in pool.scan(sorted(todo), root):
        path = r["path"]
        if "error" in r:
            info = {"stems": [], "deps": [], "error": r["error"]}
        else:
            info = scan_info(path, r["stems"], r["deps"], r["skipped"])
            parses.keep(
                ParsedFile(
                    r["real"],
                    None,
                    r["stems"],
                    r["deps"],
                    r["hashes"],
                    r["module_bytes"],
                    root=root,
                    skipped=r["skipped"],
                )
            )
            if memo is not None:
                memo.save(path, todo[path], info["stems"], info["deps"], info["skipped"])
        with lock:
            state[("scan", compiler, path, root)] = info


def identity_text(compiler) -> str:
    return canonical_json(compiler_identity(str(compiler) or DEFAULT_COMPILER)).decode()
