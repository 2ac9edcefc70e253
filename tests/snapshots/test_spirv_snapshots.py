"""Golden `spirv-dis` text of the corpus cases of `corpus.GOLDEN`
(tests/snapshots/spirv/<stem>.spvasm), but those in `corpus.SPIRV_INVALID`.

A change in the emitter shows up here as a reviewable diff of the disassembly. To accept
a change on purpose: VYRE_UPDATE_SNAPSHOTS=1 pytest tests/snapshots/test_spirv_snapshots.py
"""

from __future__ import annotations

import difflib
import os
import subprocess
from pathlib import Path

import pytest
from spirv_tools import missing, pinned  # noqa: E402
from corpus import CORPUS, GOLDEN, SPIRV_INVALID, golden_stem

from vyre_build.emit.spirv import emit_spirv

GOLDEN_DIR = Path(__file__).parent / "spirv"
CASES = tuple(n for n in GOLDEN if n not in SPIRV_INVALID)


def disassemble(binary: bytes, tmp_path) -> str:
    path = tmp_path / "m.spv"
    path.write_bytes(binary)
    return subprocess.run(
        [pinned("spirv-dis"), str(path)], capture_output=True, text=True, check=True
    ).stdout


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{golden_stem('spirv', name)}.spvasm"


@pytest.mark.skipif(
    missing("spirv-dis"),
    reason="spirv-dis (the test extra's pinned tool) not installed; CI=true requires it",
)
@pytest.mark.parametrize("name", CASES)
def test_disassembly_matches_golden_file(name, tmp_path):
    text = disassemble(emit_spirv(CORPUS[name]().desc), tmp_path)
    golden = golden_path(name)
    if os.environ.get("VYRE_UPDATE_SNAPSHOTS") == "1":
        golden.write_text(text, encoding="utf-8", newline="\n")
    assert golden.exists(), (
        f"no golden file {golden}; run with VYRE_UPDATE_SNAPSHOTS=1 to create it"
    )
    want = golden.read_text(encoding="utf-8")
    if text != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(True),
                text.splitlines(True),
                f"golden/{golden.name}",
                f"emitted/{golden.name}",
            )
        )
        pytest.fail(f"SPIR-V for {name} changed (VYRE_UPDATE_SNAPSHOTS=1 accepts it):\n{diff}")


def test_every_golden_file_belongs_to_a_case():
    assert sorted(p.name for p in GOLDEN_DIR.glob("*.spvasm")) == sorted(
        golden_path(n).name for n in CASES
    )
