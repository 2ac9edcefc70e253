"""The tuning and bundle steps of the SCons tool `vyre` (scons_tool registers their
builders, VyreTuning and VyreBundle): tuning.yaml files and tuning record files merged into
one checked `<target>.tuning.json` (docs/tuning.md), and kernel outputs (with the
`.tuning.json` files among them) packed into a bundle, signed with $VYRESIGNKEY if set
(default: the VYRESIGNKEY environment variable).

Guarantees: a source that is not a kernel output, a kernel whose `.meta.json` is not among
the sources, a tunable declared in two tuning files or a candidate running a kernel the
bundle lacks fails its action with one line on stderr, no Python stack; the key's id
($_VYRESIGNID, in the bundle action's signature) makes a new key re-sign the bundle.
"""

from __future__ import annotations

import json
import os
import sys

from vyre_build.build.step import META_SUFFIX, TARGET_SUFFIXES, split_output_name
from vyre_build.core.errors import VyreError
from vyre_build.core.files import canonical_json


TUNING_SUFFIX = ".tuning.json"


def tuning_sources(env, source) -> list:
    """VyreTuning's sources: files as given, a directory as its *.yaml and *.json files."""
    out = []
    for node in env.arg2nodes(source if isinstance(source, list) else [source], env.fs.Entry):
        path = node.srcnode().abspath
        if os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if n.endswith((".yaml", ".yml", ".json")))
            out.extend(env.File(os.path.join(path, n)) for n in names)
        else:
            out.append(env.File(node))
    return out


def tuning_action(target, source, env):
    """Check and merge tuning declarations (YAML) and records (JSON) into one file."""
    from vyre_build.bundle.tuning import check_tuning, merge_records, read_records
    from vyre_build.frontend.tuning_yaml import load_tuning

    tunables: dict = {}
    records: list = []
    try:
        for node in source:
            path = str(node.srcnode())
            if node.name.endswith(".json"):
                records = merge_records(records, read_records(node.srcnode().abspath))
                continue
            with open(node.srcnode().abspath, encoding="utf-8") as f:
                found = load_tuning(path, f.read())
            for name in found:
                if name in tunables:
                    raise VyreError(f"{path}: tunable '{name}' is declared in two tuning files")
            tunables.update(found)
        data = canonical_json(check_tuning({"tunables": tunables, "records": records}))
    except (VyreError, OSError, UnicodeDecodeError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    with open(target[0].abspath, "wb") as f:
        f.write(data + b"\n")
    return 0


def vyre_tuning(env, target, source):
    """`env.VyreTuning(target, sources)`: tuning.yaml files and record files (or folders of
    them, read when the SConstruct is) -> `<target>.tuning.json`, a VyreBundle source."""
    name = str(target)
    name = name if name.endswith(TUNING_SUFFIX) else name.removesuffix(".json") + TUNING_SUFFIX
    return env._VyreTuning(name, tuning_sources(env, source))


def bundle_tuning(source, ids: set[str]) -> dict | None:
    """The tuning data of the `.tuning.json` sources of a bundle, merged (None: none);
    VyreError when a candidate names a kernel the bundle lacks."""
    from vyre_build.bundle.tuning import merge_records

    found = [n for n in source if n.name.endswith(TUNING_SUFFIX)]
    if not found:
        return None
    tunables: dict = {}
    records: list = []
    for node in found:
        with open(node.abspath, "rb") as f:
            doc = json.loads(f.read())
        tunables.update(doc["tunables"])
        records = merge_records(records, doc["records"])
    for name, t in sorted(tunables.items()):
        for cname, cand in t["candidates"].items():
            if cand["kernel"] is not None and cand["kernel"] not in ids:
                raise VyreError(
                    f"vyre: tunable '{name}' candidate '{cname}' runs kernel '{cand['kernel']}', "
                    "which is not among the bundle's kernels (build its kernel file into it)"
                )
    return {"tunables": tunables, "records": records}


def bundle_entries(source) -> list[dict]:
    """The bundle entries ({"meta", "artifacts"}) of kernel outputs, grouped per directory
    and stem; VyreError naming a source that is not a kernel output or lacks its metadata."""
    groups: dict[tuple[str, str], dict[str, bytes]] = {}
    for node in source:
        if node.name.endswith(TUNING_SUFFIX):
            continue
        parts = split_output_name(node.name)
        if parts is None:
            kinds = "/".join([*TARGET_SUFFIXES.values(), META_SUFFIX])
            raise VyreError(f"vyre: {node} is not a kernel output ({kinds})")
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
    """Pack the kernel outputs among `source` into a bundle, signed with $VYRESIGNKEY if set."""
    from vyre_build.bundle import write_bundle  # the bundle writer is only needed here

    try:
        entries = bundle_entries(source)
        tuning = bundle_tuning(source, {e["meta"].get("id") for e in entries})
    except VyreError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    key = env.subst("$VYRESIGNKEY")
    try:
        write_bundle(
            target[0].abspath,
            entries,
            sign_key=env.File(key).abspath if key else None,
            tuning=tuning,
        )
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


def _sign_key_from_environment() -> str:
    """$VYRESIGNKEY's default: `VYRESIGNKEY=keys/release.key scons` signs as the SConstruct's
    `VYRESIGNKEY="#keys/release.key"` does ("" when unset: no signature)."""
    key = os.environ.get("VYRESIGNKEY", "")
    return key if not key or key.startswith("#") or os.path.isabs(key) else "#" + key
