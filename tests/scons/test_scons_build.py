"""End-to-end: real scons builds of a small kernel tree through the vyre tool and cache."""

from __future__ import annotations

import shutil

import pytest
from scons_helpers import bundled, cache_json, compiled, outputs, run_scons, write_tree

pytestmark = pytest.mark.scons

ALL = ["kernels/k0.py", "kernels/k1.py", "kernels/k2.py", "kernels/k3.py"]
SUFFIXES = (".wgsl", ".spv", ".kdesc", ".meta.json")


def test_build_declares_every_output_and_second_build_is_null(project):
    root, cache = project
    dry = run_scons(root, cache, "-n")
    assert compiled(dry) == ALL and not (root / "build").exists()
    first = run_scons(root, cache)
    assert compiled(first) == ALL and bundled(first)
    names = sorted(p.name for p in (root / "build").iterdir())
    assert names == sorted(f"k{i}{s}" for i in range(4) for s in SUFFIXES)
    assert (root / "dist" / "kernels.vyrebundle").stat().st_size > 0
    second = run_scons(root, cache)
    assert compiled(second) == [] and not bundled(second)
    assert "is up to date" in second.stdout
    clean = run_scons(root, cache, "-c")
    assert "Removed build/k0.spv" in clean.stdout and not list((root / "build").iterdir())
    assert not (root / "dist" / "kernels.vyrebundle").exists()


def test_edit_kernel_rebuilds_only_it_and_the_bundle(project):
    root, cache = project
    run_scons(root, cache)
    before = outputs(root)
    k2 = root / "kernels" / "k2.py"
    k2.write_text(k2.read_text().replace("x[i] * 3", "x[i] * 5"))
    proc = run_scons(root, cache, "--debug=explain")
    assert compiled(proc) == ["kernels/k2.py"] and bundled(proc)
    assert "rebuilding `build/k2.wgsl' because `kernels/k2.py' changed" in proc.stdout
    after = outputs(root)
    changed = sorted(k for k in after if after[k] != before[k])
    assert "build/k2.wgsl" in changed and "dist/kernels.vyrebundle" in changed
    assert all(c.startswith(("build/k2.", "dist/")) for c in changed)


def test_edit_helper_rebuilds_exactly_its_dependents(project):
    root, cache = project
    run_scons(root, cache)
    helper = root / "kernels" / "helpers_a.py"
    helper.write_text(helper.read_text().replace("SCALE = 2.0", "SCALE = 3.0"))
    proc = run_scons(root, cache, "--debug=explain")
    assert compiled(proc) == ["kernels/k0.py"] and bundled(proc)
    assert "because `kernels/helpers_a.py' changed" in proc.stdout
    why = cache_json(cache, "why", str(root / "build" / "k0.wgsl"))
    assert [d["part"] for d in why["differences"]] == ["import helpers_a.py"]


def test_clean_then_build_is_served_from_cache(project):
    root, cache = project
    run_scons(root, cache)
    before = outputs(root)
    run_scons(root, cache, "-c")
    proc = run_scons(root, cache)
    last = cache_json(cache, "stats")["last_build"]
    assert last["hits"] == 4 and last["misses"] == 0 and last["stored"] == 0
    assert outputs(root) == before and compiled(proc) == ALL  # actions ran, compiler did not


def test_copy_of_tree_elsewhere_is_served_from_cache(project, tmp_path):
    root, cache = project
    run_scons(root, cache)
    copy = tmp_path / "elsewhere" / "deeper" / "proj"
    shutil.copytree(root / "kernels", copy / "kernels")
    shutil.copy(root / "SConstruct", copy / "SConstruct")
    run_scons(copy, cache)
    last = cache_json(cache, "stats")["last_build"]
    assert last["hits"] == 4 and last["misses"] == 0
    assert outputs(copy) == outputs(root)


def test_parallel_and_serial_builds_are_byte_identical(tmp_path):
    a = write_tree(tmp_path / "a", n=8)
    b = write_tree(tmp_path / "b", n=8)
    run_scons(a, tmp_path / "cache_a", "-j1")
    run_scons(b, tmp_path / "cache_b", "-j2")
    assert outputs(a) == outputs(b) and len(outputs(a)) == 8 * 4 + 1


def test_option_and_target_changes_rebuild(project):
    root, cache = project
    run_scons(root, cache)
    sc = root / "SConstruct"
    sc.write_text(
        sc.read_text().replace("toolpath=", 'VYREOPTIONS={"spirv_opt": False}, toolpath=')
    )
    proc = run_scons(root, cache, "--debug=explain")
    assert compiled(proc) == ALL and "action changed" in proc.stdout
    sc.write_text(sc.read_text().replace("toolpath=", 'VYRETARGETS=["wgsl"], toolpath='))
    shutil.rmtree(root / "build")  # SCons leaves files it no longer declares; start clean
    proc = run_scons(root, cache)
    assert compiled(proc) == ALL
    assert sorted(p.name for p in (root / "build").iterdir() if p.name.startswith("k3.")) == [
        "k3.meta.json",
        "k3.wgsl",
    ]


def test_tool_loads_three_documented_ways(tmp_path):
    ways = {
        "env_tool": "env = Environment()\n"
        'env.Tool("vyre", toolpath=[vyre_build.build.scons_tool.toolpath()])\n',
        "generate": "import vyre_build.build.scons_tool as vyre\nenv = Environment()\n"
        "vyre.generate(env)\n",
    }
    for name, setup in ways.items():
        sconstruct = (
            "import vyre_build.build.scons_tool\n"
            + setup
            + 'VariantDir("build", "kernels", duplicate=0)\n'
            'env.VyreBundle("dist/kernels.vyrebundle", env.VyreKernelDir("build"))\n'
        )
        root = write_tree(tmp_path / name, n=2, sconstruct=sconstruct)
        run_scons(root, tmp_path / "cache")
        assert (root / "build" / "k1.spv").exists() and (root / "dist/kernels.vyrebundle").exists()


def test_kernel_error_fails_the_build_with_the_message(project):
    root, cache = project
    (root / "kernels" / "k3.py").write_text(
        "from vyre_build.lang import Buffer, global_id, kernel, u32\n\n\n"
        "@kernel(workgroup_size=64)\n"
        'def k3(y: Buffer[u32, "w"]):\n'
        "    y[global_id().x] = undefined_name\n"
    )
    proc = run_scons(root, cache, check=False)
    assert proc.returncode != 0
    assert "k3.py:6:" in proc.stderr and "undefined_name" in proc.stderr


def test_two_files_defining_one_kernel_stop_the_build_naming_both(project):
    root, cache = project
    (root / "kernels" / "k9.py").write_text((root / "kernels" / "k3.py").read_text())
    proc = run_scons(root, cache, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "scons: *** kernels/k3.py and kernels/k9.py both define kernel 'k3', whose artifacts "
        "(build/k3.*) would overwrite each other; rename one of them"
    ]


def test_cache_limits_from_construction_variables_evict_after_build(project):
    root, cache = project
    sc = root / "SConstruct"
    sc.write_text(sc.read_text().replace("toolpath=", 'VYRECACHEMAXSIZE="1", toolpath='))
    run_scons(root, cache)
    stats = cache_json(cache, "stats")
    assert stats["entries"] == 0 and stats["blobs"] == 0
    assert stats["last_build"]["stored"] == 4 and len(list((root / "build").iterdir())) == 16


def test_cache_dir_construction_variable_and_no_cache(project, tmp_path):
    root, cache = project
    sc = root / "SConstruct"
    sc.write_text(sc.read_text().replace("toolpath=", 'VYRECACHEDIR="#mycache", toolpath='))
    run_scons(root, cache)
    assert (root / "mycache" / "stats.json").exists() and not cache.exists()
    sc.write_text(sc.read_text().replace('"#mycache"', '""'))
    shutil.rmtree(root / "mycache")
    run_scons(root, cache, "-c")
    run_scons(root, cache)
    assert not (root / "mycache").exists() and len(list((root / "build").iterdir())) == 16


VARIANT_KERNEL = """\
from vyre_build.lang import Buffer, global_id, kernel


@kernel(workgroup_size=64)
def vadd(a: Buffer[T], b: Buffer[T], out: Buffer[T, "w"]):
    i = global_id().x
    if i < len(out):
        out[i] = a[i] + b[i]
"""


def test_variants_yaml_declares_outputs_and_its_edits_rebuild(project):
    root, cache = project
    kdir = root / "kernels"
    (kdir / "kv.py").write_text(VARIANT_KERNEL)
    (kdir / "variants.yaml").write_text("kv.py:\n  vadd:\n    f32: {T: f32}\n")
    run_scons(root, cache)
    assert (root / "build" / "vadd.f32.spv").exists()
    (kdir / "variants.yaml").write_text("kv.py:\n  vadd:\n    f32: {T: f32}\n    u32: {T: u32}\n")
    proc = run_scons(root, cache, "--debug=explain")
    assert "kernels/kv.py" in compiled(proc) and "`kernels/variants.yaml' changed" in proc.stdout
    assert (root / "build" / "vadd.u32.spv").exists()
    why = cache_json(cache, "why", "vadd.f32")
    assert [d["part"] for d in why["differences"]] == ["variants variants.yaml"]
