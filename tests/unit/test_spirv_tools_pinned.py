"""The tests take the test extra's pinned SPIR-V tools, never an older one earlier on PATH
(Debian's spirv-tools refused the emitter's capabilities: "Invalid capability operand")."""

from __future__ import annotations

import os
import subprocess

import pytest
from spirv_tools import missing, spirv_tool


@pytest.mark.skipif(missing("spirv-val"), reason="the test extra is not installed")
def test_a_spirv_val_earlier_on_path_is_not_taken(tmp_path, monkeypatch):
    fake = tmp_path / "spirv-val"
    fake.write_text("#!/bin/sh\necho 'Invalid capability operand: 6022' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    tool = spirv_tool("spirv-val")
    assert tool is not None and os.path.dirname(tool) != str(tmp_path)
    done = subprocess.run([tool, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and "SPIRV-Tools" in done.stdout


def test_an_absent_tool_is_none():
    assert spirv_tool("spirv-no-such-tool") is None
