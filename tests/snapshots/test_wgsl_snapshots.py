"""Golden WGSL: the corpus cases of `corpus.GOLDEN` emitted and compared byte for byte with
tests/snapshots/wgsl/<stem>.wgsl. Review a change as a diff; rewrite the goldens with
VYRE_UPDATE_SNAPSHOTS=1 (then the test fails once, saying what it rewrote).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from corpus import CORPUS, GOLDEN, golden_stem

from vyre_build.descriptor import decode, encode
from vyre_build.emit.wgsl import emit_wgsl

GOLDEN_DIR = Path(__file__).parent / "wgsl"


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{golden_stem('wgsl', name)}.wgsl"


@pytest.mark.parametrize("name", GOLDEN)
def test_wgsl_matches_golden(name):
    desc = CORPUS[name]().desc
    text = emit_wgsl(desc)
    assert emit_wgsl(decode(encode(desc))) == text
    path = golden_path(name)
    if os.environ.get("VYRE_UPDATE_SNAPSHOTS") == "1":
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            pytest.fail(f"rewrote {path}; review the diff and rerun without VYRE_UPDATE_SNAPSHOTS")
        return
    assert path.exists(), f"{path} is missing: run with VYRE_UPDATE_SNAPSHOTS=1 to create it"
    assert text == path.read_text(encoding="utf-8"), (
        f"emitted WGSL differs from {path}; if the change is intended, rerun with "
        "VYRE_UPDATE_SNAPSHOTS=1 and review the diff"
    )


def test_every_golden_file_belongs_to_a_case():
    assert sorted(p.name for p in GOLDEN_DIR.glob("*.wgsl")) == sorted(
        golden_path(n).name for n in GOLDEN
    )


@pytest.mark.gpu
@pytest.mark.parametrize("name", GOLDEN)
def test_golden_validates_under_naga(name, wgpu_device):
    wgpu_device.create_shader_module(code=golden_path(name).read_text(encoding="utf-8"))
