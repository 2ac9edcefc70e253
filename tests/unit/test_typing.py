"""Typing: `mypy --strict` passes on a user's script (tests/typing/user_script.py, whose
assert_type lines pin the exact types the runtime returns, so no Any leaks into it) and
on the runtime itself; the wheel ships py.typed so that mypy reads the package at all."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = [
    "vyre_build/runtime",
    "vyre_build/library/__init__.py",
    "vyre_build/library/matmuls.py",
    "vyre_build/library/rows.py",
    "vyre_build/library/bundle.py",
    "vyre_build/library/call.py",
    "vyre_build/library/checks.py",
    "vyre_build/library/kept.py",
    "vyre_build/library/picks.py",
    "vyre_build/library/tuning.py",
    "vyre_build/core/features.py",
    "vyre_build/core/targets.py",
    "vyre_build/core/backends.py",
    "vyre_build/bundle/metadata.py",
    "vyre_build/bundle/metadata_check.py",
    "vyre_build/commands/devices.py",
]


def mypy(*paths: str) -> subprocess.CompletedProcess:
    # Modules other than `paths` are read for their types only (as for an installed package).
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--no-incremental",
            *paths,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )


def test_mypy_strict_passes_on_a_user_script():
    done = mypy("tests/typing/user_script.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "Success: no issues found in 1 source file\n"


def test_mypy_strict_passes_on_the_runtime():
    done = mypy(*RUNTIME)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_catches_a_wrong_type_in_the_user_script(tmp_path):
    """The check can fail: the same script claiming a wrong type is an error."""
    with open(os.path.join(ROOT, "tests", "typing", "user_script.py"), encoding="utf-8") as f:
        text = f.read().replace(
            "assert_type(warmed.created, int)", "assert_type(warmed.created, str)"
        )
    bad = os.path.join(ROOT, "tests", "typing", f"_wrong_{os.getpid()}.py")
    with open(bad, "w", encoding="utf-8") as f:
        f.write(text)
    try:
        done = mypy(os.path.relpath(bad, ROOT))
    finally:
        os.unlink(bad)
    assert done.returncode == 1
    assert 'error: Expression is of type "int", not "str"  [assert-type]' in done.stdout


@pytest.mark.slow
def test_the_wheel_ships_py_typed(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), ROOT],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = [n for n in os.listdir(tmp_path) if n.endswith(".whl")]
    names = zipfile.ZipFile(tmp_path / wheel).namelist()
    assert "vyre_build/py.typed" in names and "vyre_build/runtime/__init__.py" in names
