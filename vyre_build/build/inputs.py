"""The inputs of one build step and its action key, read from the files once.

Every file compiling a kernel file reads: the source, every kernel file it imports and
the variants YAML beside it; each is named by its path relative to the source's directory
(so a moved or cloned tree gives the same key). A variants YAML counts by this source's
section only, so editing another file's variants (or a comment) keeps this key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from vyre_build.core import artifacts
from vyre_build.core.artifacts import VARIANTS_FILES
from vyre_build.cache.key import ActionKey, content_hash, make_action_key
from vyre_build.core.errors import CacheError

__all__ = [
    "KeyInputs",
    "action_inputs",
    "cached_realpath",
    "compute_key",
    "input_bytes",
    "key_inputs",
    "normalize_targets",
    "variants_section",
]


def normalize_targets(targets) -> tuple[str, ...]:
    """Targets as a sorted, de-duplicated tuple; CacheError naming an unknown one."""
    try:
        return artifacts.normalize_targets(targets)
    except artifacts.TargetError as exc:
        raise CacheError(str(exc)) from None


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CacheError(f"cannot read kernel input {path}: {exc.strerror or exc}") from None


_real: dict[str, str] = {}


def cached_realpath(path: str) -> str:
    """os.path.realpath, memoised for the process: a build asks for the same paths again
    and again (a path changing into a link mid-build changes a key's names, never bytes)."""
    found = _real.get(path)
    if found is None:
        found = _real[path] = os.path.realpath(path)
    return found


def action_inputs(source: str, deps) -> dict[str, tuple[str, str]]:
    """Every input file of compiling `source`: {relative path: (kind, absolute path)}.

    Paths are relative to the source's directory (POSIX separators); kinds are "source",
    "import" and "variants". The variants YAML beside the source is always included.
    """
    # Real paths on both sides, so a symlinked tree still gives relative (movable) paths.
    source = cached_realpath(source)
    base = os.path.dirname(source)
    files = {os.path.basename(source): ("source", source)}
    candidates = [cached_realpath(d) for d in deps]
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


def variants_section(path: str, source: str, raw: bytes | None = None) -> bytes | None:
    """The part of a variants YAML that can change `source`'s outputs: its own section,
    as a canonical YAML document (a valid variants file by itself), or None when the file
    has no section for it. Unparsable YAML is returned whole (the compiler reports it)."""
    import yaml  # only when a variants file exists

    raw = _read(path) if raw is None else raw
    if os.path.dirname(os.path.realpath(path)) != os.path.dirname(os.path.realpath(source)):
        return None  # a YAML beside an imported file declares that file's variants only
    from vyre_build.frontend.variants import bounded_yaml

    try:  # bounded as the compiler reads it: depth, no anchors or tags
        doc = bounded_yaml(raw)
    except (yaml.YAMLError, ValueError):
        return raw  # the compile reports the file's defect with its position
    name = os.path.basename(source)
    if not isinstance(doc, dict):
        return raw
    if name not in doc:
        return None
    return yaml.safe_dump({name: doc[name]}, sort_keys=True, allow_unicode=True).encode()


def input_bytes(kind: str, path: str, source: str, raw: bytes | None = None) -> bytes | None:
    """What an input contributes to the key: its bytes, or a variants file's own section."""
    raw = _read(path) if raw is None else raw
    return variants_section(path, source, raw) if kind == "variants" else raw


@dataclass
class KeyInputs:
    """An action key, the bytes each input contributed ({relative path: bytes}), and
    blake3 of each input file as read ({real path: hash}; variants files beside imported
    files are left out: they cannot change this source's outputs)."""

    key: ActionKey
    data: dict[str, bytes]
    files: dict[str, str]


def key_inputs(source: str, deps, targets, options, identity: dict) -> KeyInputs:
    """Read every input of compiling `source` once and compute its action key."""
    inputs = action_inputs(source, deps)
    base = os.path.dirname(cached_realpath(source))
    data, files = {}, {}
    for rel, (kind, path) in inputs.items():
        raw = _read(path)
        if kind != "variants" or os.path.dirname(path) == base:
            files[path] = content_hash(raw)
        part = input_bytes(kind, path, source, raw)
        if part is not None:
            data[rel] = part
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
    return KeyInputs(key, data, files)


def compute_key(
    source: str, deps, targets, options, identity: dict
) -> tuple[ActionKey, dict[str, bytes]]:
    """The action key of compiling `source`, and the input bytes it was computed from."""
    found = key_inputs(source, deps, targets, options, identity)
    return found.key, found.data
