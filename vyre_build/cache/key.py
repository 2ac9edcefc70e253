"""Action keys: what went into a build step, as a manifest of parts, and its blake3 key.

A key manifest lists every input that can change the output of compiling one kernel
file: the compiler identity, the kernel source and every kernel file it imports (by
content; each named by its path relative to the source's directory, so a moved or cloned
tree gives the same key), the variants YAML content, the targets and the options.
It holds no absolute path and no time.

Guarantees: the key is blake3 over the canonical JSON of the manifest, so equal inputs
give equal keys on any machine, in any process, whatever the dict or set order; every
part carries its own hash, so two manifests can be diffed part by part (`diff_manifests`).
"""

from __future__ import annotations

from dataclasses import dataclass

import blake3

from vyre_build.core.errors import CacheError
from vyre_build.core.files import canonical_json

__all__ = [
    "MANIFEST_SCHEMA",
    "ActionKey",
    "KeyPart",
    "canonical_json",
    "content_hash",
    "diff_manifests",
    "key_from_manifest",
    "make_action_key",
    "manifest_parts",
]

MANIFEST_SCHEMA = "vyre-action-key/1"
# Part kinds that name a file whose bytes are stored in the cache as a blob.
FILE_PART_KINDS = ("source", "import", "variants")


def content_hash(data: bytes) -> str:
    """blake3 hex digest (64 chars) of `data`: the name of a blob in the store."""
    return blake3.blake3(data).hexdigest()


@dataclass(frozen=True)
class KeyPart:
    """One input of an action: its kind, an optional relative path, its hash and value."""

    kind: str
    hash: str
    path: str | None = None
    value: object = None

    @property
    def label(self) -> str:
        """How the part is named in `show` and `why`: `import helpers.py`, `options`."""
        return self.kind if self.path is None else f"{self.kind} {self.path}"

    def to_json(self) -> dict:
        out: dict = {"kind": self.kind, "hash": self.hash}
        if self.path is not None:
            out["path"] = self.path
        if self.value is not None:
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class ActionKey:
    """A key (hex blake3 of the canonical manifest) and the manifest it was made from."""

    key: str
    manifest: dict

    @property
    def parts(self) -> list[KeyPart]:
        return manifest_parts(self.manifest)


def _value_part(kind: str, value) -> KeyPart:
    return KeyPart(kind, content_hash(canonical_json(value)), None, value)


_identity_parts: dict[int, tuple[dict, KeyPart]] = {}


def _identity_part(identity: dict) -> KeyPart:
    # One identity object serves a whole build: hash it once (the object is kept, so its
    # id cannot be reused by another dict while the entry exists).
    found = _identity_parts.get(id(identity))
    if found is None or found[0] is not identity:
        found = _identity_parts[id(identity)] = (identity, _value_part("compiler", identity))
        if len(_identity_parts) > 64:
            _identity_parts.pop(next(iter(_identity_parts)))
    return found[1]


def _check_relpath(path: str) -> str:
    if not path or path.startswith("/") or "\\" in path or ":" in path.split("/")[0]:
        raise CacheError(
            f"key part path {path!r} must be a relative POSIX path; keys never hold absolute paths"
        )
    return path


def make_action_key(
    *,
    identity: dict,
    source: tuple[str, bytes],
    imports: list[tuple[str, bytes]],
    variants: list[tuple[str, bytes]],
    targets,
    options: dict | None,
) -> ActionKey:
    """Build the manifest and key of compiling one kernel file.

    Arguments:
        identity: the compiler identity, e.g. {"version": "0.1.0", "source_hash": "..."}.
        source: (path relative to the source's own directory, i.e. its file name, content).
        imports / variants: (relative path, content) of each imported kernel file / YAML.
        targets: target names ("wgsl", "spirv", "kdesc"); order and repeats do not matter.
        options: compiler options (JSON-serialisable), or None for none.
    Returns:
        ActionKey whose manifest lists the parts in a fixed order (files sorted by path).
    """
    if not isinstance(identity, dict) or "version" not in identity:
        raise CacheError(f"compiler identity must be a dict with a 'version', got {identity!r}")
    try:
        parts = [_identity_part(identity)]
        parts.append(KeyPart("source", content_hash(source[1]), _check_relpath(source[0])))
        for kind, files in (("import", imports), ("variants", variants)):
            for rel, data in sorted(files, key=lambda f: f[0]):
                parts.append(KeyPart(kind, content_hash(data), _check_relpath(rel)))
        parts.append(_value_part("targets", sorted(set(targets))))
        parts.append(_value_part("options", dict(options or {})))
        manifest = {"schema": MANIFEST_SCHEMA, "parts": [p.to_json() for p in parts]}
        return ActionKey(content_hash(canonical_json(manifest)), manifest)
    except (TypeError, ValueError) as exc:
        raise CacheError(
            f"cannot make an action key: an input is not canonical JSON ({exc}); "
            "options and identity must be plain dicts of str/int/float/bool/list"
        ) from None


def key_from_manifest(manifest: dict) -> str:
    """Recompute the key of a stored manifest (used to check a record's integrity)."""
    return content_hash(canonical_json(manifest))


def manifest_parts(manifest: dict) -> list[KeyPart]:
    """The parts of a manifest as `KeyPart`s, in manifest order; raises CacheError if malformed."""
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        raise CacheError(
            f"not a {MANIFEST_SCHEMA} manifest: schema "
            f"{manifest.get('schema') if isinstance(manifest, dict) else manifest!r}"
        )
    try:
        return [
            KeyPart(p["kind"], p["hash"], p.get("path"), p.get("value")) for p in manifest["parts"]
        ]
    except (KeyError, TypeError) as exc:
        raise CacheError(f"malformed key manifest: missing {exc}") from None


def diff_manifests(old: dict, new: dict) -> list[dict]:
    """Parts that differ between two manifests, by label, in a stable order.

    Returns a list of {"part": label, "change": "changed"|"added"|"removed",
    "old": hash|None, "new": hash|None, "old_value"/"new_value" for value parts}.
    """
    a = {p.label: p for p in manifest_parts(old)}
    b = {p.label: p for p in manifest_parts(new)}
    out = []
    for label in sorted(set(a) | set(b)):
        pa, pb = a.get(label), b.get(label)
        if pa is not None and pb is not None and pa.hash == pb.hash:
            continue
        change = "added" if pa is None else "removed" if pb is None else "changed"
        entry = {
            "part": label,
            "change": change,
            "old": pa.hash if pa else None,
            "new": pb.hash if pb else None,
        }
        if (pa and pa.value is not None) or (pb and pb.value is not None):
            entry["old_value"] = pa.value if pa else None
            entry["new_value"] = pb.value if pb else None
        out.append(entry)
    return out
