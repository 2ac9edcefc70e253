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
