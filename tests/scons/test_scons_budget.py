"""The build's compile budget (issue 26, defect 7): a real SCons build refuses the kernel
file that would pass $VYRE_MAX_BUILD_OPERATIONS before compiling it, builds the others
with -k, and a later build, whose hits charge nothing, builds the rest."""

from __future__ import annotations

from scons_helpers import compiled, run_scons, write_tree

REFUSED = (
    "kernels/k1.py: error: compiling it would bring this build to about 56 operations "
    "(about 30 for this file, each variant counted), more than 50 (the build's limit, "
    "from VYRE_MAX_BUILD_OPERATIONS)\n"
    "  fix: build the tree in parts, or raise the build's limit: $VYREMAXBUILDOPERATIONS, "
    "or VYRE_MAX_BUILD_OPERATIONS in the environment (a number, or unlimited)"
)


def test_the_file_past_the_budget_is_refused_and_hits_charge_nothing(tmp_path):
    # k0 counts 26 operations, k1 30, k2 20: k0 + k1 pass 50.
    root = write_tree(tmp_path / "proj", n=3)
    cache = tmp_path / "cache"
    budget = {"VYRE_MAX_BUILD_OPERATIONS": "50"}
    proc = run_scons(root, cache, "-k", "-j1", check=False, env=budget)
    assert proc.returncode != 0
    assert REFUSED in proc.stderr and "Traceback" not in proc.stderr
    assert (root / "build" / "k0.wgsl").exists() and (root / "build" / "k2.wgsl").exists()
    assert not (root / "build" / "k1.wgsl").exists()
    proc = run_scons(root, cache, "-j1", env=budget)
    assert compiled(proc) == ["kernels/k1.py"] and (root / "dist" / "kernels.vyrebundle").exists()


def test_a_bad_budget_is_one_line_of_error(tmp_path):
    root = write_tree(tmp_path / "proj", n=1)
    proc = run_scons(
        root, tmp_path / "cache", check=False, env={"VYRE_MAX_BUILD_OPERATIONS": "lots"}
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "scons: *** [build/k0.wgsl] VYRE_MAX_BUILD_OPERATIONS 'lots' is not a number of "
        "operations; write e.g. 10000000 or unlimited\n"
    )


def test_a_file_past_the_per_file_limit_fails_only_its_own_target(tmp_path):
    # Issue 26's repro in a tree: 1,000 variants of a kernel near the per-kernel limit.
    root = write_tree(tmp_path / "proj", n=1)
    big = root / "kernels" / "big.py"
    big.write_text(
        "from vyre_build.lang import *\n\n@kernel(workgroup_size=64)\n"
        'def big(o: Buffer[u32, "rw"], x: u32):\n' + "    o[0] = x + N\n" * 14280
    )
    (root / "kernels" / "variants.yaml").write_text(
        "big.py:\n  big:\n" + "".join(f"    v{i}: {{N: {i}}}\n" for i in range(1000))
    )
    proc = run_scons(root, tmp_path / "cache", "-k", check=False)
    assert proc.returncode != 0
    assert (
        "kernels/variants.yaml:2:3: error: compiling this file takes more than 1000000 "
        "operations, each variant counted (the limit): 1000 variants of kernel 'big' pass "
        "it, at more than 1000 operations each\n"
    ) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(compiled(proc)) == ["kernels/big.py", "kernels/k0.py"]
    assert (root / "build" / "k0.wgsl").exists() and not (root / "build" / "big.v0.wgsl").exists()
