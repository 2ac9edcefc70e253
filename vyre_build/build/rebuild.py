"""Proof of origin: rebuild a bundle from a kernel tree and compare it, byte for byte.

`rebuild_and_compare` compiles every kernel file of the tree (its top-level `*.py`, as
`VyreKernelDir` does) through the build step's own compile path, with the targets the
bundle holds, packs the result as the bundle writer would and compares: the whole file
(signature aside), each kernel's artifacts and metadata, and each recorded source and
import hash against the tree's files. It refuses to run when the installed compiler's
identity differs from the one the manifest records, since the bytes would then differ
for that reason alone. This module imports the compiler; the runtime never loads it.
"""

from __future__ import annotations

import json
import os

import blake3

from vyre_build.core.artifacts import META_SUFFIX, TARGET_SUFFIXES
from vyre_build.bundle.format import VERSION
from vyre_build.bundle.reader import BundleReader
from vyre_build.bundle.signing import unsigned_bytes
from vyre_build.core.errors import BundleError, VyreError
from vyre_build.core.files import canonical_json

__all__ = ["rebuild_and_compare"]


def identity_text(identity) -> str:
    """A compiler identity as reports show it."""
    if not isinstance(identity, dict):
        return repr(identity)
    return (
        f"vyre_build {identity.get('version')} (compiler source hash {identity.get('source_hash')})"
    )


def _recorded_identity(reader: BundleReader) -> dict:
    """The one compiler identity every kernel of the bundle records; BundleError otherwise."""
    found: dict[str, dict] = {}
    for e in reader.entries():
        prov = e.meta.get("provenance")
        identity = prov.get("compiler") if isinstance(prov, dict) else None
        if not isinstance(identity, dict):
            raise BundleError(
                f"{reader.path}: kernel {e.id!r} records no compiler identity "
                "(meta.provenance.compiler): its origin cannot be rebuilt"
            )
        found.setdefault(canonical_json(identity).decode(), identity)
    if len(found) > 1:
        raise BundleError(
            f"{reader.path}: the kernels record {len(found)} different compiler identities "
            f"({'; '.join(identity_text(i) for i in found.values())}): no one compiler "
            "rebuilds it"
        )
    if not found:
        raise BundleError(f"{reader.path}: the bundle holds no kernels: nothing to rebuild")
    return next(iter(found.values()))


def _tree_hashes(src_dir: str) -> dict[str, str]:
    """blake3 -> relative path for every file of the tree, raw and as the frontend reads
    text (UTF-8, universal newlines), so a recorded hash names the file it came from."""
    out: dict[str, str] = {}
    for directory, dirs, files in sorted(os.walk(src_dir)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, src_dir).replace(os.sep, "/")
            try:
                with open(path, "rb") as f:
                    raw = f.read()
            except OSError:
                continue
            out.setdefault(blake3.blake3(raw).hexdigest(), rel)
            try:
                text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
            except UnicodeDecodeError:
                continue
            out.setdefault(blake3.blake3(text.encode("utf-8")).hexdigest(), rel)
    return out


def _compile_tree(src_dir: str, targets: tuple, options: dict) -> tuple[dict, list[str]]:
    """{kernel id: {"file", "meta", "artifacts"}} of the tree, and the files that failed."""
    from vyre_build.build.step import compile_outputs
    from vyre_build.core.artifacts import split_output_name

    kernels: dict[str, dict] = {}
    errors: list[str] = []
    for name in sorted(os.listdir(src_dir)):
        path = os.path.join(src_dir, name)
        if not name.endswith(".py") or name == "__init__.py" or not os.path.isfile(path):
            continue
        try:
            outputs = compile_outputs(path, targets, options)
        except VyreError as exc:
            errors.append(f"{name}: does not compile: {exc}")
            continue
        for out_name, data in sorted(outputs.items()):
            stem, suffix = split_output_name(out_name)
            rec = kernels.setdefault(stem, {"file": name, "meta": None, "artifacts": {}})
            if rec["file"] != name:
                errors.append(f"{name}: kernel {stem!r} is also defined by {rec['file']}")
                continue
            if suffix == META_SUFFIX:
                rec["meta"] = json.loads(data)
            else:
                rec["artifacts"][suffix] = data
    return kernels, errors


def _provenance(meta: dict) -> tuple[str | None, list]:
    prov = meta.get("provenance") if isinstance(meta, dict) else None
    prov = prov if isinstance(prov, dict) else {}
    imports = prov.get("imports")
    return prov.get("source"), sorted(imports) if isinstance(imports, list) else []


def _compare_kernel(reader: BundleReader, entry, rebuilt: dict) -> dict:
    diffs = []
    for suffix in sorted(set(entry.artifacts) | set(rebuilt["artifacts"])):
        have = reader.read_artifact(entry.id, suffix) if suffix in entry.artifacts else None
        new = rebuilt["artifacts"].get(suffix)
        if have == new:
            continue
        common = len(os.path.commonprefix([have or b"", new or b""]))
        diffs.append(
            {
                "suffix": suffix,
                "first_offset": common,
                "bundle_size": None if have is None else len(have),
                "rebuilt_size": None if new is None else len(new),
            }
        )
    meta_differs = canonical_json(entry.meta) != canonical_json(rebuilt["meta"])
    return {
        "id": entry.id,
        "file": rebuilt["file"],
        "status": "differs" if diffs or meta_differs else "same",
        "artifacts": diffs,
        "meta_differs": meta_differs,
    }


def _source_mismatches(entry, rebuilt: dict | None, tree: dict[str, str]) -> list[dict]:
    """Recorded source and import hashes of `entry` that the tree's build does not have."""
    source, imports = _provenance(entry.meta)
    now_source, now_imports = _provenance(rebuilt["meta"]) if rebuilt else (None, [])
    out = []
    if source != now_source:
        out.append(
            {
                "kernel": entry.id,
                "kind": "source",
                "recorded": source,
                "tree": now_source,
                "tree_file": rebuilt["file"] if rebuilt else None,
                "recorded_matches": tree.get(source),
            }
        )
    # A kernel the tree no longer builds has no imports to compare with: its source says it.
    for h in sorted(set(imports) - set(now_imports)) if rebuilt else []:
        out.append(
            {
                "kernel": entry.id,
                "kind": "import",
                "recorded": h,
                "tree": None,
                "tree_file": rebuilt["file"] if rebuilt else None,
                "recorded_matches": tree.get(h),
            }
        )
    return out


def rebuild_and_compare(
    reader: BundleReader, src_dir: str, *, options: dict | None = None, compiler_identity=None
) -> dict:
    """Rebuild the bundle open in `reader` from the kernel tree `src_dir` and compare.

    Arguments:
        reader: the open bundle (read from a file: the whole file is compared).
        src_dir: the kernel tree (its top-level kernel files are compiled).
        options: compiler options the bundle was built with (default none).
        compiler_identity: the installed compiler's identity (default: build.step's).
    Returns:
        {"bundle", "source_dir", "compiler", "targets", "identical" (the whole file,
        signature aside; None for a version 1 bundle, compared kernel by kernel only),
        "same_kernels", "kernels": [{"id", "file", "status" ("same",
        "differs", "missing-from-tree", "not-in-bundle"), "artifacts": [{"suffix",
        "first_offset", "bundle_size", "rebuilt_size"}], "meta_differs"}],
        "source_mismatches": [{"kernel", "kind", "recorded", "tree", "tree_file",
        "recorded_matches"}], "errors": [files that did not compile]}.
        BundleError when the tree is not a directory or the compiler identity differs.
    """
    from vyre_build.build.step import compiler_identity as installed_identity
    from vyre_build.bundle.writer import encode_bundle

    if not os.path.isdir(src_dir):
        raise BundleError(f"--rebuild-from {src_dir}: not a directory (give the kernel tree)")
    recorded = _recorded_identity(reader)
    installed = compiler_identity if compiler_identity is not None else installed_identity()
    if dict(installed) != recorded:
        raise BundleError(
            f"{reader.path}: built by {identity_text(recorded)}, but the installed compiler "
            f"is {identity_text(installed)}; install the recorded version to rebuild it "
            "(a different compiler gives different bytes whatever the sources)"
        )
    entries = reader.entries()
    suffixes = {s for e in entries for s in e.artifacts}
    target_of = {suffix: target for target, suffix in TARGET_SUFFIXES.items()}
    targets = tuple(sorted(target_of[s] for s in suffixes if s in target_of))
    rebuilt, errors = _compile_tree(src_dir, targets, dict(options or {}))
    tree = _tree_hashes(src_dir)
    kernels, mismatches = [], []
    for e in entries:
        new = rebuilt.get(e.id)
        mismatches += _source_mismatches(e, new, tree)
        if new is None:
            kernels.append(
                {
                    "id": e.id,
                    "file": None,
                    "status": "missing-from-tree",
                    "artifacts": [],
                    "meta_differs": False,
                }
            )
        else:
            kernels.append(_compare_kernel(reader, e, new))
    for ident in sorted(set(rebuilt) - set(reader.ids)):
        kernels.append(
            {
                "id": ident,
                "file": rebuilt[ident]["file"],
                "status": "not-in-bundle",
                "artifacts": [],
                "meta_differs": False,
            }
        )
    kernels.sort(key=lambda k: k["id"])
    same = not errors and all(k["status"] == "same" for k in kernels)
    identical = None if reader.version != VERSION else False
    if same and reader.version == VERSION:  # the writer writes only the current version
        with open(reader.path, "rb") as f:
            shipped = unsigned_bytes(f.read())
        # Tuning data is measured, not compiled: carried as the bundle holds it.
        fresh = encode_bundle(
            ({"meta": r["meta"], "artifacts": r["artifacts"]} for r in rebuilt.values()),
            tuning=reader.tuning,
        )
        identical = shipped == fresh
    return {
        "bundle": reader.path,
        "source_dir": src_dir,
        "compiler": recorded,
        "targets": list(targets),
        "identical": identical,
        "same_kernels": same,
        "kernels": kernels,
        "source_mismatches": mismatches,
        "errors": errors,
    }
