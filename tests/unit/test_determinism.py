"""Compiling the kernels/ tree is deterministic: byte-identical artifacts across runs.

The tree is copied to two different temporary directories and compiled there by the
CLI (`python -m vyre_build compile FILE... --target all -o DIR`) in fresh processes with
different PYTHONHASHSEED values and working directories. Identical bytes prove the
artifacts depend on no dict/set order, hash seed, absolute path or time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "kernels")
SEEDS = ("0", "4242")
SUFFIXES = (".wgsl", ".spv", ".kdesc", ".meta.json")


def _copy_tree(dest: str) -> str:
    """A copy of kernels/ (sources and variants.yaml only) under `dest`."""
    tree = os.path.join(dest, "kernels")
    shutil.copytree(KERNELS, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tree


def _compile_tree(tree: str, out: str, seed: str, reverse: bool) -> dict[str, bytes]:
    """Compile every kernel file of `tree` into `out` in one CLI run (files in sorted or
    reversed order, so compile order cannot leak into outputs); return rel path -> bytes."""
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=ROOT)
    files = sorted((f for f in os.listdir(tree) if f.endswith(".py")), reverse=reverse)
    assert files, f"no kernel files in {tree}"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vyre_build",
            "compile",
            *[os.path.join(tree, f) for f in files],
            "--target",
            "all",
            "--root",
            tree,
            "-o",
            out,
        ],
        cwd=os.path.dirname(tree),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"compiling {tree} failed:\n{proc.stdout}{proc.stderr}"
    found = {}
    for base, _, names in os.walk(out):
        for n in names:
            path = os.path.join(base, n)
            with open(path, "rb") as f:
                found[os.path.relpath(path, out)] = f.read()
    return found


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory) -> tuple[dict, dict]:
    builds = []
    for i, seed in enumerate(SEEDS):
        work = str(tmp_path_factory.mktemp(f"tree{i}_seed{seed}"))
        builds.append(
            _compile_tree(_copy_tree(work), os.path.join(work, "out"), seed, reverse=i == 1)
        )
    return builds[0], builds[1]


def test_tree_compiles_to_every_target(two_builds):
    from vyre_build.compiler import list_kernels, skipped_targets

    first, _ = two_builds
    expected = {
        s
        for f in sorted(os.listdir(KERNELS))
        if f.endswith(".py")
        for s in list_kernels(os.path.join(KERNELS, f), root=KERNELS)
    }
    skipped = {
        stem: set(why)
        for f in sorted(os.listdir(KERNELS))
        if f.endswith(".py")
        for stem, why in skipped_targets(os.path.join(KERNELS, f), root=KERNELS).items()
    }
    # cooperative matrices and memory ordering (single-pass reduce and scan): SPIR-V only
    ordered = {
        f"lib_reduce_once.{op}_{t}" for op in ("sum", "min", "max") for t in ("f32", "i32", "u32")
    }
    for t in ("f32", "i32", "u32"):
        ordered |= {f"lib_scan_once.{t}", f"lib_scan_look.{t}", f"lib_scan_look.acquire_{t}"}
        ordered |= {f"lib_scan_look.wide_{t}", f"lib_scan_pipe.{t}"}
    coop = {
        "lib_matmul_f16",
        "lib_mm_f16.f16",
        "lib_mm_f16.f32",
        "lib_mm_bf16.bf16",
        "lib_mm_bf16.f32",
    }
    assert skipped == {k: {"wgsl"} for k in coop | ordered}
    stems = {p[: -len(s)] for p in first for s in SUFFIXES if p.endswith(s)}
    assert stems == expected, f"built {sorted(stems)}, the tree declares {sorted(expected)}"
    for stem in sorted(stems):
        want = [s for s in SUFFIXES if s != ".wgsl" or "wgsl" not in skipped.get(stem, ())]
        missing = [s for s in want if stem + s not in first]
        assert not missing, f"{stem} lacks {missing}"


def test_outputs_are_byte_identical(two_builds):
    first, second = two_builds
    assert sorted(first) == sorted(second)
    differ = [p for p in sorted(first) if first[p] != second[p]]
    assert not differ, f"artifacts differ between the two builds: {differ}"


def test_outputs_hold_no_build_paths(two_builds):
    first, _ = two_builds
    # the temp dirs differ per build; neither may leak into an artifact
    leaks = [
        p
        for p, data in sorted(first.items())
        if b"tree0_seed" in data or b"tree1_seed" in data or ROOT.encode() in data
    ]
    assert not leaks, f"artifacts contain a build path: {leaks}"
