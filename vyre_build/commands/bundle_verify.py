"""`vyre-build bundle verify`: re-hash every artifact, check the layout, the signature and,
with `--rebuild-from`, the origin (build/rebuild.py), and report them as text or JSON.

Guarantees: exits 1 when `BundleReader.verify` finds problems, when none of the `--key`s
(default $VYRE_TRUSTED_KEYS) signed the bundle, or when the rebuild does not give the same
bytes (a version 1 bundle: the same kernels); with `--json`, a bundle that cannot be opened
is a problem in the document instead of an error. The rebuild report names each kernel
that differs, each artifact's first differing byte and each recorded source hash the tree
does not match.
"""

from __future__ import annotations

import argparse
import sys

from vyre_build.bundle import BundleReader, read_bundle
from vyre_build.commands.bundle_show import _print_json
from vyre_build.core.errors import BundleError

__all__ = ["cmd_verify"]


def _signature_json(reader: BundleReader) -> dict:
    sig, signer = reader.signature, reader.signer
    return {
        "signed": sig is not None,
        "key_id": sig.key_id if sig else None,
        "trusted": signer is not None if sig else False,
        "comment": signer.comment if signer else None,
    }


def _signature_text(reader: BundleReader) -> str:
    sig, signer = reader.signature, reader.signer
    if signer is not None:
        return f"signed by {signer.describe()}, a trusted key; signature verified"
    if sig is not None:
        return f"signed by key id {sig.key_id} (not checked against a trusted key: give --key PUB)"
    return "not signed"


def cmd_verify(args: argparse.Namespace) -> int:
    from vyre_build.bundle.keys import load_public_key

    options = {"spirv_opt": True} if args.spirv_opt else {}
    signature, rebuild = None, None
    keys = [load_public_key(p) for p in args.key] if args.key else None  # errors name the file
    try:
        with read_bundle(args.bundle, trusted_keys=keys) as reader:
            problems = reader.verify()
            count = len(reader.ids)
            signature = _signature_json(reader)
            sig_text = _signature_text(reader)
            if args.rebuild_from is not None:
                from vyre_build.build.rebuild import rebuild_and_compare

                rebuild = rebuild_and_compare(reader, args.rebuild_from, options=options)
                rebuild_lines = _rebuild_lines(rebuild)
    except BundleError as exc:
        if not args.json:
            raise
        problems, count = [str(exc)], 0
    failed = bool(problems) or (rebuild is not None and not _rebuild_ok(rebuild))
    if args.json:
        doc = {"bundle": args.bundle, "ok": not failed, "kernels": count, "problems": problems}
        doc["signature"] = signature
        if args.rebuild_from is not None:
            doc["rebuild"] = rebuild
        _print_json(doc)
        return 1 if failed else 0
    if problems:
        for p in problems:
            print(f"{args.bundle}: {p}", file=sys.stderr)
        print(f"{args.bundle}: {len(problems)} problem(s)", file=sys.stderr)
    else:
        print(f"{args.bundle}: ok ({count} kernel(s), every artifact verified)")
    print(f"{args.bundle}: {sig_text}")
    if rebuild is not None:
        print("\n".join(rebuild_lines))
    return 1 if failed else 0


def _rebuild_ok(r: dict) -> bool:
    return bool(r["identical"]) or (r["identical"] is None and r["same_kernels"])


def _artifact_text(d: dict) -> str:
    if d["bundle_size"] is None:
        return f"{d['suffix']} only in the rebuild"
    if d["rebuilt_size"] is None:
        return f"{d['suffix']} only in the bundle"
    return (
        f"{d['suffix']} differs from byte {d['first_offset']} "
        f"(bundle {d['bundle_size']} bytes, rebuilt {d['rebuilt_size']})"
    )


def _hash_text(m: dict) -> str:
    found = m["recorded_matches"]
    matches = f"the tree's {found} has that hash" if found else "no file of the tree has that hash"
    head = f"  kernel {m['kernel']!r}: recorded {m['kind']} hash {m['recorded']}"
    if m["kind"] == "import":
        return f"{head} is not among the imports of the tree's {m['tree_file']}; {matches}"
    if m["tree"] is None:
        return f"{head}: the tree builds no such kernel; {matches}"
    return f"{head} is not the tree's {m['tree_file']} (which hashes to {m['tree']}); {matches}"


def _rebuild_lines(r: dict) -> list[str]:
    """The text report of `rebuild_and_compare`."""
    from vyre_build.build.rebuild import identity_text

    head = f"{r['bundle']}: rebuilt from {r['source_dir']} with {identity_text(r['compiler'])}"
    kernels = [k for k in r["kernels"] if k["status"] != "not-in-bundle"]
    if r["identical"]:
        return [f"{head}: byte-identical ({len(kernels)} kernel(s); the signature aside)"]
    if r["identical"] is None and r["same_kernels"]:
        return [
            f"{head}: every kernel's artifacts and metadata identical ({len(kernels)} "
            "kernel(s); a version 1 bundle, so the file is not compared as a whole)"
        ]
    lines = [f"{head}: DIFFERS (targets {', '.join(r['targets'])})"]
    for k in r["kernels"]:
        name = f"  kernel {k['id']!r}" + (f" ({k['file']})" if k["file"] else "")
        if k["status"] == "missing-from-tree":
            lines.append(f"{name}: in the bundle, but the tree builds no such kernel")
        elif k["status"] == "not-in-bundle":
            lines.append(f"{name}: built by the tree, not in the bundle")
        elif k["status"] == "differs":
            parts = [_artifact_text(d) for d in k["artifacts"]]
            parts += ["metadata differs"] if k["meta_differs"] else []
            lines.append(f"{name}: " + "; ".join(parts))
    lines += [_hash_text(m) for m in r["source_mismatches"]]
    lines += [f"  {e}" for e in r["errors"]]
    bad = sum(k["status"] != "same" for k in r["kernels"])
    if bad == 0 and not r["errors"]:
        lines.append("  every kernel matches, but the file bytes differ (padding or layout)")
    lines.append(f"{bad} of {len(r['kernels'])} kernel(s) differ")
    return lines
