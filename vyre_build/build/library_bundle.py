"""The library bundle: the library's kernel sources (kernels/lib_*.py, their variants and
tunables) compiled into one bundle, and the digest that names what it was built from.

The wheel ships it built (setup.py calls `ship` on the package it is about to pack:
`_library/library.vyrebundle` beside `_library/library.digest`), so that an installed
package's first `library.reduce(x)` opens a prebuilt bundle and compiles nothing;
`vyre_build.library.bundle` serves it where the digest of the installed files is the one
it was built for, and builds one into the user cache otherwise (a checkout, an edited
kernel, a package changed after install).

Guarantees: `library_digest` reads files only (the compiler is not imported: a process that
opens the shipped bundle never loads it); it covers the library's sources and every source
file of the package (a superset of the compiler's identity), so a bundle is never served
for other sources or another compiler. The same sources give the same bundle bytes.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import blake3

__all__ = ["SHIPPED", "SHIPPED_DIGEST", "build_library_bundle", "library_digest", "ship"]

SHIPPED = "library.vyrebundle"  # in the package's _library/ (a wheel)
SHIPPED_DIGEST = "library.digest"  # the library_digest it was built for, as hex text


def library_files(src: str) -> list[str]:
    """The library's kernel files of `src` (lib_*.py), sorted."""
    return sorted(n for n in os.listdir(src) if re.fullmatch(r"lib_\w+\.py", n))


def tuning_files(src: str) -> list[str]:
    """The tuning declarations (tuning.yaml) and records (tuning/*.json) of `src`, if any."""
    records = os.path.join(src, "tuning")
    found = (
        sorted(f"tuning/{n}" for n in os.listdir(records) if n.endswith(".json"))
        if os.path.isdir(records)
        else []
    )
    return (["tuning.yaml"] if os.path.isfile(os.path.join(src, "tuning.yaml")) else []) + found


def _package_files(package: str) -> list[str]:
    """Every source file of the package (the compiler's among them), sorted; _library/ (the
    sources, counted apart, and the shipped bundle) left out."""
    found = []
    for where, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "_library"))
        found += [os.path.join(where, f) for f in files if f.endswith((".py", ".pyi", ".json"))]
    return sorted(found)


def library_digest(src: str, package: str) -> str:
    """The hex digest of the library's sources in `src` and of every source file of
    `package` (read as files, by their paths relative to it)."""
    digest = blake3.blake3()
    for path in _package_files(package):
        with open(path, "rb") as f:
            data = f.read()
        rel = os.path.relpath(path, package).replace(os.sep, "/")
        digest.update(f"\0{rel}\0{len(data)}\0".encode() + data)
    for name in [*library_files(src), "variants.yaml", *tuning_files(src)]:
        with open(os.path.join(src, name), "rb") as f:
            data = f.read()
        digest.update(f"\0{name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


def build_library_bundle(src: str, path: str, jobs: int | None = None) -> None:
    """Compile every library kernel file of `src` and bundle them, with the tuning data,
    into `path`. The files are compiled by `jobs` processes (default: one per core, at
    most one per file): this one and helpers started for it (`_compile_shares`); the bundle
    is the same bytes whichever compiled what."""
    from vyre_build.bundle import write_bundle
    from vyre_build.core.artifacts import META_SUFFIX, split_output_name

    names = library_files(src)
    jobs = min(len(names), os.cpu_count() or 1) if jobs is None else max(1, jobs)
    groups: dict[str, dict[str, bytes]] = {}
    for outputs in _compile_shares(src, names, jobs).values():
        for out, data in outputs.items():
            parts = split_output_name(out)
            if parts is not None:
                groups.setdefault(parts[0], {})[parts[1]] = data
    entries = []
    for _, files in sorted(groups.items()):
        meta = json.loads(files.pop(META_SUFFIX))
        entries.append({"meta": meta, "artifacts": files})
    write_bundle(path, entries, tuning=_tuning(src))


# A helper process: compiles the files named on its command line, answers one pickle.
_HELPER = (
    "import pickle, sys; sys.path.insert(0, sys.argv[1]); "
    "from vyre_build.build.library_bundle import _compile; "
    "sys.stdout.buffer.write(pickle.dumps(_compile(sys.argv[2], sys.argv[3:])))"
)


def _compile(src: str, names: list[str]) -> dict[str, dict[str, bytes]]:
    """{file name: its outputs (artifact name -> bytes)} of `names` in `src`."""
    from vyre_build.build.step import DEFAULT_TARGETS, compile_outputs

    return {n: compile_outputs(os.path.join(src, n), DEFAULT_TARGETS, {}, root=src) for n in names}


def _compile_shares(src: str, names: list[str], jobs: int) -> dict[str, dict[str, bytes]]:
    """`_compile` of `names` split over `jobs` shares, the largest files first: the first
    share here, each other one in a helper process (`python -c`, not multiprocessing, so
    that an application's main module is never imported again). A helper that fails has
    its share compiled here instead, so that its error, if the files have one, is raised
    as this process's own. Where sys.executable is not a Python (an application embedding
    one), everything is compiled here."""
    import pickle
    import subprocess

    if not os.path.basename(sys.executable or "").lower().startswith("python"):
        jobs = 1  # an embedding application's executable (no `python -c`): compile here
    shares: list[list[str]] = [[] for _ in range(min(jobs, len(names)))]
    loads = [0] * len(shares)
    sizes = {n: os.path.getsize(os.path.join(src, n)) for n in names}
    for name in sorted(names, key=lambda n: -sizes[n]):
        k = loads.index(min(loads))
        shares[k].append(name)
        loads[k] += sizes[name]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    helpers = []
    for share in shares[1:]:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _HELPER, root, src, *share],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, ValueError):
            proc = None
        helpers.append((share, proc))
    try:
        done = _compile(src, shares[0]) if shares else {}
    except BaseException:  # this share's error stands: no helper outlives it
        for _, proc in helpers:
            if proc is not None:
                proc.kill()
                proc.wait()
        raise
    for share, proc in helpers:
        got = None
        if proc is not None:
            out, _ = proc.communicate()
            if proc.returncode == 0:
                try:
                    got = pickle.loads(out)
                except Exception:  # noqa: BLE001 - a helper's garbled answer: compile here
                    got = None
        done.update(
            got if isinstance(got, dict) and set(got) == set(share) else _compile(src, share)
        )
    return done


def _tuning(src: str) -> dict[str, Any]:
    """The tuning data of the library: tuning.yaml's tunables, tuning/*.json's records."""
    from vyre_build.bundle.tuning import merge_records, read_records
    from vyre_build.frontend.tuning_yaml import load_tuning

    tunables: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    for name in tuning_files(src):
        path = os.path.join(src, name)
        if name == "tuning.yaml":
            with open(path, encoding="utf-8") as f:
                tunables = load_tuning(path, f.read())
        else:
            records = merge_records(records, read_records(path))
    return {"tunables": tunables, "records": records}


def ship(package: str) -> str:
    """Build the library bundle of `package`'s _library/ sources into _library/ beside
    them, with the digest it is built for (what a wheel carries); returns the digest."""
    src = os.path.join(package, "_library")
    digest = library_digest(src, package)
    build_library_bundle(src, os.path.join(src, SHIPPED))
    with open(os.path.join(src, SHIPPED_DIGEST), "w", encoding="ascii") as f:
        f.write(digest + "\n")
    return digest
