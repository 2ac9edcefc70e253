"""Regression kernels found by tools/conformance.py, each checked against its numpy result.

Every module in cases/ holds a minimised kernel (SOURCE), its inputs, the expected
buffers, and XFAIL: the stages ("compile" or a backend) where the bug still bites, as
strict xfails, so a fix turns them red until the mark (and its entry in
tools/conform/known.py) is removed. Each case runs compile-only, on the CPU reference and
on wgpu/WGSL, Vulkan/SPIR-V and wgpu/SPIR-V (lavapipe); a case marked COARSE (an
elementwise kernel) also through its coarse entry, on the reference and on wgpu/WGSL; one
marked DEFAULT_GRID is called with the metadata's grid, so the runtime may pick that entry;
one marked NO_WGSL (a kernel WGSL cannot express) is checked on wgpu/WGSL by getting none.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools")
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.dirname(HERE))  # tests/: adapters

from adapters import require_adapter  # noqa: E402
from conform import backends as B  # noqa: E402
from conform.compare import compare  # noqa: E402

CASES = sorted(f[:-3] for f in os.listdir(os.path.join(HERE, "cases")) if f.endswith(".py"))
STAGES = ("compile", "reference", "wgpu", "vulkan", "wgpu-spirv", "reference-x4", "wgpu-x4")
CPU = ("compile", "reference", "reference-x4")


def load(name: str):
    spec = importlib.util.spec_from_file_location(
        f"case_{name}", os.path.join(HERE, "cases", name + ".py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Run:
    """What a backend runner needs of a program: inputs, scalars, the grid."""

    def __init__(self, buffers: dict, scalars: dict, groups: int, wg: int):
        self.inputs, self.scalars, self.groups = buffers, scalars, groups
        self.invocations, self.uses_cas, self.default_grid = groups * wg, False, False


def params():
    for name in CASES:
        case = load(name)
        xfail = case.XFAIL
        for stage in STAGES:
            if stage.endswith("-x4") and not getattr(case, "COARSE", False):
                continue
            if stage != "compile" and hasattr(case, "EXPECT_KERNEL_ERROR"):
                continue
            marks = [pytest.mark.gpu] if stage not in CPU else []
            reason = xfail.get(stage) or (xfail.get("compile") if stage != "compile" else None)
            if reason and not getattr(case, "DRIVER", None):  # a driver's bug: see test_case
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            yield pytest.param(name, stage, marks=marks, id=f"{name}-{stage}")


def gpu_backend(stage: str) -> str:
    return "vulkan" if stage == "vulkan" else "wgpu"


@pytest.mark.parametrize("name,stage", list(params()))
def test_case(tmp_path, name, stage):
    """A case's stage: right, or, where XFAIL names it, still wrong (strict). A case with a
    DRIVER (e.g. "llvmpipe") records that driver's bug: the xfail holds on that driver
    only, and the stage must pass on every other device (the H200's driver runs them)."""
    case = load(name)
    driver = getattr(case, "DRIVER", None)
    reason = case.XFAIL.get(stage)
    if driver and reason and stage not in CPU:
        from vyre_build.runtime import get_device

        require_adapter(gpu_backend(stage))
        if driver in get_device(gpu_backend(stage)).name:
            try:
                _check_case(tmp_path, name, stage, case)
            except AssertionError:
                pytest.xfail(reason)
            pytest.fail(f"[XPASS(strict)] {reason}")
    _check_case(tmp_path, name, stage, case)


def _check_case(tmp_path, name, stage, case):
    if getattr(case, "ISOLATE", False) and stage not in CPU:
        # A case that crashes a driver runs the stage in a child process.
        require_adapter(gpu_backend(stage))
        code = f"import test_cases as t; t.run_stage({name!r}, {stage!r}, {str(tmp_path)!r})"
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, f"{stage} exited with {proc.returncode}: {proc.stderr[-2000:]}"
        return
    run_stage(name, stage, str(tmp_path))


def run_stage(name: str, stage: str, tmp: str) -> None:
    """Compile case `name` and check it on `stage` (raises AssertionError on a difference)."""
    from vyre_build.compiler import compile_file

    case = load(name)
    tmp_path = pathlib.Path(tmp)
    if hasattr(case, "EXPECT_KERNEL_ERROR"):  # a user error, refused with a clear message
        from vyre_build.core.errors import KernelError

        with pytest.raises(KernelError, match=case.EXPECT_KERNEL_ERROR):
            compile_file(str(tmp_path / f"{name}.py"), text=case.SOURCE)
        return
    (compiled,) = compile_file(str(tmp_path / f"{name}.py"), text=case.SOURCE)
    if stage == "compile":
        return
    if stage in ("wgpu", "wgpu-x4") and hasattr(case, "NO_WGSL"):
        # a kernel WGSL cannot express (e.g. memory ordering): its check is that none is made
        assert compiled.wgsl is None, f"{name}: WGSL was made for a kernel that needs SPIR-V"
        return
    if stage == "wgpu-spirv" and hasattr(case, "NO_NAGA_SPIRV"):
        # a module naga's SPIR-V reader refuses (the Vulkan memory model): the check is that
        # wgpu refuses it with that reason, as tools/conformance.py skips such programs
        from vyre_build.runtime import get_device

        require_adapter("wgpu")
        with pytest.raises(Exception, match=case.NO_NAGA_SPIRV):
            get_device("wgpu").device.create_shader_module(code=compiled.spirv)
        return
    lanes = getattr(case, "SUBGROUP_SIZE", 8)  # the reference's; a GPU runs its own
    if stage not in CPU:
        from vyre_build.runtime import get_device

        require_adapter(gpu_backend(stage))
        # wgpu reports a range only; it runs on the same Vulkan adapter, whose size is fixed
        lanes = (
            get_device(gpu_backend(stage)).profile.subgroup_size
            or get_device("vulkan").profile.subgroup_size
        )
    buffers, scalars, groups = case.inputs()
    run = Run(buffers, scalars, groups, compiled.meta["workgroup_size"][0])
    run.default_grid = getattr(case, "DEFAULT_GRID", False)  # the runtime may pick main_x4
    run.subgroup_size = lanes
    if stage.endswith("-x4"):
        assert compiled.meta["coarse"] == {"entry": "main_x4", "factor": 4}
    got = B.RUNNERS[stage](compiled, run)
    takes_lanes = "lanes" in inspect.signature(case.expected).parameters
    want = (
        case.expected(buffers, scalars, lanes) if takes_lanes else case.expected(buffers, scalars)
    )
    for name_, arr in want.items():
        assert got[name_].dtype == arr.dtype
    diffs = compare(got, {**got, **want}, list(want), {})
    assert not diffs, "; ".join(d.describe(stage, "numpy") for d in diffs)


def test_every_case_has_the_parts():
    for name in CASES:
        case = load(name)
        assert case.__doc__ and "Found by:" in case.__doc__ and "Layer:" in case.__doc__, name
        assert set(case.XFAIL) <= set(STAGES), name
        if hasattr(case, "EXPECT_KERNEL_ERROR"):
            continue
        buffers, scalars, groups = case.inputs()
        assert all(isinstance(v, np.ndarray) for v in buffers.values()), name
