"""`compiler.skipped_targets` (what the SCons emitter declares from a parse) agrees with
what `compile_file` produces: a kernel using cooperative matrices, each of its variants
too, gets no WGSL; `artifacts.output_names` then leaves its .wgsl out."""

from vyre_build import compiler
from vyre_build.core.artifacts import output_names

SRC = """\
from vyre_build.lang import *
@kernel(workgroup_size=32, grid=32, variants={"x1": {"N": 1}, "x2": {"N": 2}})
def mm(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "w"]):
    acc = coop_mma(coop_load_a(a, 0, 16, 16, 16), coop_load_b(b, 0, 16, 16, 16), coop_fill(f32, 16, 16, 0.0))
    coop_store(acc, c, 0, 16 * N)
@kernel(workgroup_size=64)
def add(x: Buffer[u32], y: Buffer[u32, "w"]):
    y[global_id().x] = x[global_id().x] + 1
"""
WHY = "needs cooperative matrices: SPIR-V only"


def test_the_parse_names_the_kernels_that_get_no_wgsl_as_the_compile_does(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(SRC)
    skipped = compiler.skipped_targets(str(path))
    assert skipped == {"mm.x1": {"wgsl": WHY}, "mm.x2": {"wgsl": WHY}}
    kernels = compiler.compile_file(str(path))
    assert {k.stem: k.meta["skipped"] for k in kernels if "skipped" in k.meta} == skipped
    stems = compiler.list_kernels(str(path))
    names = output_names(stems, ("wgsl", "spirv", "kdesc"), skipped)
    produced = sorted(k.stem + suffix for k in kernels for suffix in k.artifacts)
    assert sorted(names) == produced
    assert "mm.x1.wgsl" not in names and "add.wgsl" in names


def test_output_names_leaves_out_only_targets_asked_for():
    skipped = {"mm": {"wgsl": WHY}}
    assert output_names(["mm", "add"], ["spirv"], skipped) == [
        "mm.spv",
        "mm.meta.json",
        "add.spv",
        "add.meta.json",
    ]
    assert output_names(["mm"], ["wgsl"], skipped) == ["mm.meta.json"]
