"""`cache why`: what changed between the last two builds of an output that differ in key.

An output is named as the history names it (`build/saxpy`: its directory relative to the
project root and its stem), or by a path to one of its files, or by its bare stem when
only one directory builds it. The pair compared is the last two keys of its history
(each key once, moved to the end when built again), so it is always the last change,
never an older one. Changed source, import and variants files are shown as a unified
diff of their texts, read (and re-hashed) from the store; the other parts (compiler,
targets, options) follow with their old and new values.
"""

from __future__ import annotations

import difflib
import os
import re

from vyre_build.core.artifacts import split_output_name
from vyre_build.cache.key import FILE_PART_KINDS, diff_manifests
from vyre_build.core.errors import CacheError
from vyre_build.core.targets import WGSL

__all__ = ["explain", "resolve_output"]

_MAX_DIFF_LINES = 400


def _strip_suffix(name: str) -> str:
    split = split_output_name(name)
    return split[0] if split else name


def resolve_output(history, what: str, cwd: str | None = None) -> str | None:
    """The history name of output `what` (a path, `dir/stem` or a bare stem), or None."""
    names = history.names()
    if not names:
        return None
    cwd = os.getcwd() if cwd is None else cwd
    candidates = [_strip_suffix(what.replace(os.sep, "/").rstrip("/"))]
    full = os.path.join(cwd, what)
    if history.project is not None:
        rel = os.path.relpath(full, history.project).replace(os.sep, "/")
        candidates.insert(0, _strip_suffix(rel))
    candidates.append(_strip_suffix(os.path.abspath(full).replace(os.sep, "/")))
    for cand in candidates:
        if cand in names:
            return cand
    stem = _strip_suffix(os.path.basename(what.rstrip("/")))
    matches = [n for n in names if n.rsplit("/", 1)[-1] == stem]
    if len(matches) > 1:
        raise CacheError(
            f"{what!r} names an output built in {len(matches)} places: "
            f"{', '.join(matches)}; give one of them"
        )
    return matches[0] if matches else None


def _find(store, what: str, cwd: str | None) -> tuple[str | None, list[str], object]:
    """(history name or None, its keys, the history it was found in) for `what`."""
    if re.fullmatch(r"[0-9a-fA-F]{4,64}", what):
        try:
            return None, [store.resolve_key(what)], store.builds
        except CacheError:
            if len(what) == 64:
                raise
    for history in [store.builds, *store.builds.other_projects()]:
        name = resolve_output(history, what, cwd)
        if name is not None:
            return name, history.keys(name), history
    raise CacheError(
        f"{what!r} is neither a key in the cache nor an output built through it "
        f"(no build of it is recorded); give an output path such as build/saxpy{WGSL.suffix}"
    )


def _record(store, key: str, which: str) -> dict:
    record = store.get_record(key)
    if record is None:
        raise CacheError(
            f"the {which} build's entry (key {key}) is no longer in {store.root} "
            "(evicted or cleared); nothing to compare"
        )
    return record


def _text(store, digest: str | None, key: str) -> list[str] | None:
    if digest is None:
        return []
    data = store.get_blob(digest, key)
    return None if data is None else data.decode("utf-8", "replace").splitlines(keepends=True)


def _file_diff(store, part: dict, old_key: str, new_key: str) -> str | None:
    """The unified diff of a changed file part, from the blobs; None if a text is missing."""
    old = _text(store, part["old"], old_key)
    new = _text(store, part["new"], new_key)
    if old is None or new is None:
        return None
    path = part["part"].split(" ", 1)[1]
    lines = list(
        difflib.unified_diff(
            old,
            new,
            "/dev/null" if part["old"] is None else f"a/{path}",
            "/dev/null" if part["new"] is None else f"b/{path}",
        )
    )
    if len(lines) > _MAX_DIFF_LINES:
        lines = lines[:_MAX_DIFF_LINES] + [f"... ({len(lines) - _MAX_DIFF_LINES} more lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def explain(store, target: str, other: str | None = None, cwd: str | None = None) -> dict:
    """Compare the last two builds of `target` (or `target`'s last build with `other`'s).

    Returns {"target", "output": history name or None, "old", "new", "differences":
    [diff_manifests entries, file parts first, each file part with "diff": text or None]}.
    """
    name, keys, _ = _find(store, target, cwd)
    if other is not None:
        old_key = _find(store, other, cwd)[1][-1]
        new_key = keys[-1]
    elif len(keys) < 2:
        raise CacheError(
            f"{target!r}: only one build of {name or keys[-1]} is recorded; nothing to "
            "compare (give two keys or outputs)"
        )
    else:
        old_key, new_key = keys[-2], keys[-1]
    old = _record(store, old_key, "earlier")
    new = _record(store, new_key, "last")
    diff = diff_manifests(old["manifest"], new["manifest"])
    files = [d for d in diff if d["part"].split(" ", 1)[0] in FILE_PART_KINDS]
    others = [d for d in diff if d not in files]
    for d in files:
        d["diff"] = _file_diff(store, d, old_key, new_key)
    return {
        "target": target,
        "output": name,
        "old": old_key,
        "new": new_key,
        "differences": files + others,
    }
