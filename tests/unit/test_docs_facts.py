"""Facts the README and docs/runtime.md state about the tree, checked against the tree:
what a newcomer copies from the docs must be what the code does."""

from __future__ import annotations

import glob
import os
import re

from vyre_build.frontend import check_module, load_module
from vyre_build.runtime import get_device
from vyre_build import library

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "kernels")


def read(name: str) -> str:
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def section(text: str, heading: str) -> str:
    """`text` from the line `heading` to the next heading of the same or a higher level."""
    level = heading.split()[0]
    start = text.index(heading + "\n")
    rest = text[start + len(heading) :]
    found = re.search(rf"^#{{1,{len(level)}}} ", rest, re.M)
    return rest[: found.start()] if found else rest


def test_runtime_md_counts_the_kernels_of_the_tree():
    ids = [
        prog.id
        for path in sorted(glob.glob(os.path.join(KERNELS, "*.py")))
        for prog in check_module(load_module(path, root=KERNELS))
    ]
    assert len(ids) == len(set(ids))
    assert f"<Bundle 'dist/kernels.vyrebundle': {len(ids)} kernels, ...>" in read("docs/runtime.md")


def test_both_library_tables_name_every_library_call():
    calls = ["reduce", "scan", "matmul", "matmul_f16", "softmax", "layer_norm"]
    assert set(calls) <= set(library.__all__)
    readme = section(
        read("README.md"), "### Library kernels: reduce, scan, matmul, softmax, layer norm"
    )
    table = section(read("docs/runtime.md"), "## Library kernels")
    for call in calls:
        assert f"library.{call}(bundle, " in readme, call
        assert f"| `{call}(k, " in table, call


def test_the_docs_say_what_the_cpu_backend_does_with_cooperative_matrices():
    profile = get_device("cpu").profile
    assert any(f.startswith("cooperative_matrix.f16.f32.16x16x16") for f in profile.features)
    cpu = section(read("README.md"), "### The cpu backend: kernels with no GPU driver")
    assert "no cooperative matrices" not in cpu
    assert "every cooperative-matrix shape\nthe compiler makes" in cpu
    assert "the cpu backend runs all." in read("README.md")
    assert "or the cpu backend (which runs every shape; wgpu has none)" in read("docs/runtime.md")
