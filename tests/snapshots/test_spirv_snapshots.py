"""Golden `spirv-dis` text of a few emitted modules (tests/snapshots/spirv/<case>.spvasm).

A change in the emitter shows up here as a reviewable diff of the disassembly. To accept
a change on purpose: VYRE_UPDATE_SNAPSHOTS=1 pytest tests/snapshots/test_spirv_snapshots.py
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.join(os.path.dirname(HERE), "unit")
if UNIT not in sys.path:
    sys.path.insert(0, UNIT)  # the hand-built descriptor catalogue lives beside the unit tests

from spirv_kernels_flow import CASES  # noqa: E402

from vyre_build.emit.spirv import emit_spirv  # noqa: E402

GOLDEN = os.path.join(HERE, "spirv")
SNAPSHOT_CASES = ("saxpy", "loops", "returns", "terminators", "shared", "atomics", "bounds")


def disassemble(binary: bytes, tmp_path) -> str:
    path = tmp_path / "m.spv"
    path.write_bytes(binary)
    return subprocess.run(
        ["spirv-dis", str(path)], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.skipif(
    shutil.which("spirv-dis") is None and os.environ.get("CI") != "true",
    reason="spirv-dis not on PATH (CI=true requires it)",
)
@pytest.mark.parametrize("name", SNAPSHOT_CASES)
def test_disassembly_matches_golden_file(name, tmp_path):
    text = disassemble(emit_spirv(CASES[name]().desc), tmp_path)
    golden = os.path.join(GOLDEN, f"{name}.spvasm")
    if os.environ.get("VYRE_UPDATE_SNAPSHOTS") == "1":
        with open(golden, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    assert os.path.exists(golden), (
        f"no golden file {golden}; run with VYRE_UPDATE_SNAPSHOTS=1 to create it"
    )
    with open(golden, encoding="utf-8") as f:
        want = f.read()
    if text != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(True),
                text.splitlines(True),
                f"golden/{name}.spvasm",
                f"emitted/{name}.spvasm",
            )
        )
        pytest.fail(f"SPIR-V for {name} changed (VYRE_UPDATE_SNAPSHOTS=1 accepts it):\n{diff}")
