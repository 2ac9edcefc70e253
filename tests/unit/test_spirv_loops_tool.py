"""tools/spirv_loops.py: lists a module's loops and rewrites their loop-control hints in
the binary, changing nothing else, into a module the pinned validator still accepts."""

from __future__ import annotations

import os
import subprocess
import sys

from vyre_build.compiler import compile_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import spirv_loops  # noqa: E402
from spirv_tools import pinned  # noqa: E402

KERNELS = os.path.join(ROOT, "kernels")


def module(tmp_path) -> str:
    (k,) = [k for k in compile_file(os.path.join(KERNELS, "lib_matmul.py"), root=KERNELS)
            if k.stem == "lib_matmul.f32"]  # fmt: skip
    path = tmp_path / "m.spv"
    path.write_bytes(k.spirv)
    return str(path)


def test_lists_every_loop_and_sets_one_hint_changing_only_its_word(tmp_path, capsys):
    src = module(tmp_path)
    assert spirv_loops.main([src]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.endswith(", None") for line in lines)
    out = str(tmp_path / "o.spv")
    assert spirv_loops.main([src, out, "--set", "2=DontUnroll", "--set", "0=Unroll"]) == 0
    before, after = spirv_loops.read(src), spirv_loops.read(out)
    loops = spirv_loops.loop_merges(before)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert changed == [loops[0] + 3, loops[2] + 3]
    assert (after[loops[0] + 3], after[loops[2] + 3]) == (1, 2)
    val = subprocess.run([pinned("spirv-val"), "--target-env", "vulkan1.1", out],
                         capture_output=True, text=True)  # fmt: skip
    assert val.returncode == 0, val.stderr


def test_bad_arguments_are_refused_with_a_reason(tmp_path, capsys):
    src = module(tmp_path)
    out = str(tmp_path / "o.spv")
    assert spirv_loops.main([src, out, "--set", "9=DontUnroll"]) == 2
    assert spirv_loops.main([src, out, "--set", "1=Sideways"]) == 2
    assert spirv_loops.main([src, "--set", "1=Unroll"]) == 2
    junk = tmp_path / "junk.spv"
    junk.write_bytes(b"not spirv at all")
    assert spirv_loops.main([str(junk)]) == 2
    err = capsys.readouterr().err
    assert "N below 4" in err and "needs an output path" in err and "not a little-endian" in err
    assert not os.path.exists(out)
