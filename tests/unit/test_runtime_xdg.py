"""A GPU backend gives Mesa a usable XDG_RUNTIME_DIR before its driver loads, so that
"XDG_RUNTIME_DIR is invalid or not set in the environment" is not printed on every run."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

import vyre_build.runtime as runtime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("value", [None, "", "relative/dir", "/nonexistent/vyre-xdg"])
def test_an_unusable_runtime_dir_becomes_a_private_one(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    else:
        monkeypatch.setenv("XDG_RUNTIME_DIR", value)
    runtime._runtime_dir_for_drivers()
    made = os.environ["XDG_RUNTIME_DIR"]
    info = os.stat(made)
    assert os.path.isabs(made) and os.path.basename(made).startswith("vyre-xdg-")
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
    assert info.st_uid == os.getuid() and os.listdir(made) == []
    runtime._runtime_dir_for_drivers()  # now usable: kept
    assert os.environ["XDG_RUNTIME_DIR"] == made


def test_a_usable_runtime_dir_is_left_alone(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    runtime._runtime_dir_for_drivers()
    assert os.environ["XDG_RUNTIME_DIR"] == str(tmp_path)


def run_without_runtime_dir(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["PYTHONPATH"] = ROOT
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


SCRIPT = """\
import os
import numpy as np
from vyre_build.runtime import get_device, list_adapters
print(len(list_adapters("wgpu")) > 0)
buf = get_device("wgpu").buffer(np.arange(4, dtype=np.uint32))
print(buf.read().tolist())
private = os.environ["XDG_RUNTIME_DIR"]
print(os.path.basename(private).startswith("vyre-xdg-"))
print(private)
"""


@pytest.mark.gpu
def test_a_wgpu_run_and_devices_print_no_runtime_dir_error():
    proc = run_without_runtime_dir("-c", SCRIPT)
    assert proc.returncode == 0, proc.stderr
    assert "XDG_RUNTIME_DIR" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:3] == ["True", "[0, 1, 2, 3]", "True"]
    assert not os.path.exists(lines[3])  # removed at exit
    proc = run_without_runtime_dir("-m", "vyre_build", "devices")
    assert proc.returncode == 0 and "wgpu adapter 0:" in proc.stdout
    assert "XDG_RUNTIME_DIR" not in proc.stderr
