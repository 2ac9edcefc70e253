"""`@kernel(any_length=...)`: read-only buffers a call does not hold to the grid's length.

The option is checked by the frontend, recorded in the metadata only on the bindings it
names (every other record, and every artifact, byte for byte as without it), read by the
metadata checker (absent: False, so older bundles keep their meaning) and honoured by the
call planner. The device runs are in tests/gpu/test_runtime_writes.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from runtime_fakes import SAXPY, plan_of

from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.compiler import compile_file
from vyre_build.core.errors import BundleError, DispatchError, KernelError

BIAS = """\
from vyre_build.lang import *


@kernel(workgroup_size=64{option})
def add_bias(x: Buffer[f32], bias: Buffer[f32], out: Buffer[f32, "w"], nb: u32):
    i = global_id().x
    if i < len(out):
        out[i] = x[i] + bias[i % nb]
"""


def compiled(tmp_path, option: str, name: str = "k.py", source: str = BIAS):
    path = tmp_path / name
    path.write_text(source.format(option=option))
    return compile_file(str(path), targets=("wgsl", "spirv", "kdesc"), display_path=name)


def test_the_metadata_records_it_and_the_artifacts_are_unchanged(tmp_path):
    (plain,) = compiled(tmp_path, "", "plain.py")
    (free,) = compiled(tmp_path, ', any_length="bias"', "free.py")
    assert [b.get("any_length") for b in free.meta["bindings"]] == [None, True, None, None]
    assert all("any_length" not in b for b in plain.meta["bindings"])
    assert {k: v for k, v in free.meta.items() if k not in ("bindings", "provenance")} == {
        k: v for k, v in plain.meta.items() if k not in ("bindings", "provenance")
    }
    assert (free.wgsl, free.spirv, free.kdesc) == (plain.wgsl, plain.spirv, plain.kdesc)
    # A tuple names several; the checked metadata carries the flag.
    (both,) = compiled(tmp_path, ', any_length=("bias", "x")', "both.py")
    meta = check_metadata(both.meta, "kernel 'add_bias'")
    assert [b.name for b in meta.buffers if b.any_length] == ["x", "bias"]


@pytest.mark.parametrize(
    ("option", "where", "message", "fix"),
    [
        (
            ', any_length="nb"',
            "4:39",
            "any_length entry 'nb' is not a buffer parameter of kernel 'add_bias'",
            "buffer parameters: x, bias, out",
        ),
        (
            ', any_length="bais"',
            "4:39",
            "any_length entry 'bais' is not a buffer parameter of kernel 'add_bias'",
            "buffer parameters: x, bias, out",
        ),
        (
            ', any_length=("bias", "out")',
            "4:48",
            "any_length entry 'out' is a written buffer (access \"w\"); only read-only "
            "buffers are held to the grid's length",
            "remove 'out' from any_length",
        ),
        (
            ", any_length=[1]",
            "4:39",
            "any_length entries are buffer parameter names as strings",
            'write e.g. any_length="bias" or any_length=("bias", "table")',
        ),
        (
            ', any_length=("bias", "bias")',
            "4:48",
            "any_length names 'bias' twice",
            "keep one of them",
        ),
        (
            ", any_lenght=1",
            "4:39",
            "unknown @kernel option 'any_lenght'",
            "options are workgroup_size, grid, variants, any_length and shared_bytes",
        ),
    ],
)
def test_bad_options_are_kernel_errors(tmp_path, option, where, message, fix):
    with pytest.raises(KernelError) as info:
        compiled(tmp_path, option)
    err = info.value
    assert f"{err.line}:{err.col}" == where
    assert err.message == message
    assert err.fix == fix


def test_the_metadata_checker_reads_and_checks_the_flag():
    def binding(**extra):
        meta = {**SAXPY, "bindings": [dict(b) for b in SAXPY["bindings"]]}
        meta["bindings"][0].update(extra)
        return meta

    assert check_metadata(SAXPY, "k").bindings[0].any_length is False  # older records
    assert check_metadata(binding(any_length=True), "k").bindings[0].any_length is True
    with pytest.raises(BundleError) as info:
        check_metadata(binding(any_length=1), "kernel 'saxpy'")
    assert str(info.value) == (
        "kernel 'saxpy': metadata field 'bindings[0].any_length' must be true or false, got 1"
    )
    meta = binding()
    meta["bindings"][1]["any_length"] = True
    with pytest.raises(BundleError) as info:
        check_metadata(meta, "kernel 'saxpy'")
    assert str(info.value) == (
        "kernel 'saxpy': metadata field 'bindings[1].any_length' is true but buffer 'y' has "
        "access 'rw'; only read-only buffers are held to the grid's length"
    )


def test_the_planner_honours_it_and_compares_element_types():
    free = {
        **SAXPY,
        "bindings": [{**SAXPY["bindings"][0], "any_length": True}, *SAXPY["bindings"][1:]],
    }
    args = {"x": np.zeros(1000, np.float32), "y": np.zeros(100_000, np.float32), "a": 1.0}
    with pytest.raises(DispatchError) as info:
        plan_of(SAXPY, args)
    assert str(info.value).startswith(
        "Kernel 'saxpy': argument 'x' has 1000 elements but the grid covers 100000"
    )
    assert plan_of(free, args).workgroups == (1563, 1, 1)  # ceil(100000 / 64)
    # Elements of another type are no peers: 250 vec4fs next to 1000 f32s are not refused.
    vec = {
        **SAXPY,
        "bindings": [{**SAXPY["bindings"][0], "dtype": "vec4f"}, *SAXPY["bindings"][1:]],
    }
    plan = plan_of(
        vec, {"x": np.zeros((250, 4), np.float32), "y": np.zeros(1000, np.float32), "a": 0.0}
    )
    assert [b.elements for b in plan.buffers] == [250, 1000]


def test_help_shows_it():
    from vyre_build.runtime.kernel import _row

    meta = check_metadata(
        {
            **SAXPY,
            "bindings": [{**SAXPY["bindings"][0], "any_length": True}, *SAXPY["bindings"][1:]],
        },
        "k",
    )
    assert _row(meta.bindings[0]) == (
        "  x              buffer  f32    r   binding 0    float32 array, any length"
    )
    assert _row(meta.bindings[1]).endswith("binding 1    float32 array")


def test_bundle_show_marks_it(tmp_path, capsys):
    from vyre_build.bundle import write_bundle
    from vyre_build.cli import main

    (free,) = compiled(tmp_path, ', any_length="bias"')
    path = tmp_path / "b.vyrebundle"
    write_bundle(path, [{"meta": free.meta, "artifacts": {".wgsl": free.wgsl.encode()}}])
    assert main(["bundle", "show", str(path), "add_bias"]) == 0
    out = capsys.readouterr().out
    assert "binding      1  buffer f32  bias             access r, any length\n" in out
    assert "binding      0  buffer f32  x                access r\n" in out


@pytest.mark.slow
def test_mypy_takes_the_option_from_the_stub(tmp_path):
    import os
    import subprocess
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    (tmp_path / "good.py").write_text(BIAS.format(option=', any_length=("bias",)'))
    (tmp_path / "bad.py").write_text(BIAS.format(option=", any_length=1"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--no-error-summary",
            "good.py",
            "bad.py",
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": repo},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors == [
        'bad.py:4: error: No overload variant of "kernel" matches argument types "int", "int"  '
        "[call-overload]"
    ], done.stdout
    assert "any_length: str | tuple[str, ...] | None = ..." in done.stdout


def test_the_language_stub_takes_the_option():
    import vyre_build.lang as lang

    fn = lang.kernel(workgroup_size=64, any_length=("bias",))(lambda: None)
    assert fn.__vyre_kernel__["any_length"] == ("bias",)
    with open(lang.__file__ + "i", encoding="utf-8") as f:  # lang.pyi
        assert "any_length: builtins.str | tuple[builtins.str, ...] | None = None" in f.read()
