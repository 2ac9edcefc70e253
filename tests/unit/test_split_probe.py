"""The dispatch-base probe the Vulkan runtime runs before its first split dispatch is the
compiler's output for the kernel its docstring shows (regenerate it when this fails)."""

from __future__ import annotations

import textwrap

from vyre_build.compiler import compile_file
from vyre_build.runtime import vulkan_probe

SOURCE = "from vyre_build.lang import Buffer, kernel, u32, workgroup_id\n\n\n" + textwrap.dedent(
    vulkan_probe.__doc__.split("tests/unit/test_split_probe.py):\n\n", 1)[1]
)


def test_the_probe_is_what_the_compiler_makes(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(SOURCE)
    (k,) = compile_file(str(path), root=str(tmp_path), targets=("spirv",))
    meta = {n: v for n, v in k.meta.items() if n != "provenance"}
    assert meta == vulkan_probe.PROBE_META
    assert k.spirv == vulkan_probe.PROBE_SPIRV
