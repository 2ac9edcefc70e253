"""Compile work is bounded per file (operations x variants, MAX_FILE_OPERATIONS) and per
build (`BuildBudget`), counted from the parse and refused before anything compiles
(issue 26, defect 7)."""

from __future__ import annotations

import os

import pytest

from vyre_build.build import step as build_step
from vyre_build.build.budget import BuildBudget, budget_setting, parse_budget
from vyre_build.build.pool import WorkerPool
from vyre_build.build.step import DEFAULT_COMPILER, build_kernel_file
from vyre_build.cache.store import Store
from vyre_build.compiler import compile_file, compile_work
from vyre_build.core.errors import KernelError, VyreError
from vyre_build.frontend import checker, instances, load_module
from vyre_build.core import limits

HEAD = 'from vyre_build.lang import *\n\n@kernel(workgroup_size=64)\ndef big(o: Buffer[u32, "rw"], x: u32):\n'
FIX = (
    "  fix: declare fewer variants, make the kernel smaller, or split its kernels and "
    "variants over several kernel files"
)


def variants_yaml(n: int, file: str = "big.py", kernel: str = "big") -> str:
    return f"{file}:\n  {kernel}:\n" + "".join(f"    v{i}: {{N: {i}}}\n" for i in range(n))


@pytest.fixture
def checks(monkeypatch):
    """How many kernel instances were checked (the first step of compiling one)."""
    count = [0]
    plain = checker.KernelChecker.check

    def check(self):
        count[0] += 1
        return plain(self)

    monkeypatch.setattr(checker.KernelChecker, "check", check)
    return count


def test_the_issue_repro_is_refused_before_any_variant_compiles(tmp_path, checks):
    # A 240 KB kernel just under the per-kernel limit (99,960 operations as counted here)
    # with 1,000 variants: within every other limit, about 75 minutes to compile before.
    (tmp_path / "big.py").write_text(HEAD + "    o[0] = x + N\n" * 14280)
    (tmp_path / "variants.yaml").write_text(variants_yaml(1000))
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / "big.py"), display_path="big.py")
    assert str(info.value).splitlines() == [
        "variants.yaml:2:3: error: compiling this file takes more than 1000000 "
        "operations, each variant counted (the limit): 1000 variants of kernel 'big' pass "
        "it, at more than 1000 operations each",
        "      big:",
        "      ^",
        FIX,
    ]
    assert checks[0] == 0


def test_a_file_at_the_limit_passes_and_one_operation_more_is_refused(tmp_path, checks):
    # `o[0] = x` is 5 operations (the statement, the subscript, o, 0, x): 200 of them are
    # 1,000, times 1,000 variants is the limit exactly.
    (tmp_path / "variants.yaml").write_text(variants_yaml(1000))
    (tmp_path / "big.py").write_text(HEAD + "    o[0] = x\n" * 200)
    module = load_module(str(tmp_path / "big.py"))
    assert compile_work(str(tmp_path / "big.py"), module=module) == limits.MAX_FILE_OPERATIONS
    (tmp_path / "big.py").write_text(HEAD + "    o[0] = x\n" * 200 + "    x\n")
    module = load_module(str(tmp_path / "big.py"))  # loading (the scan) does not count
    with pytest.raises(KernelError) as info:
        compile_work(str(tmp_path / "big.py"), module=module)
    assert (
        str(info.value)
        .splitlines()[0]
        .endswith(
            "variants.yaml:2:3: error: compiling this file takes more than 1000000 operations, "
            "each variant counted (the limit): 1000 variants of kernel 'big' pass it, at more "
            "than 1000 operations each"
        )
    )
    assert checks[0] == 0


def test_helpers_count_where_they_are_inlined_and_earlier_kernels_count_too(tmp_path, checks):
    # Each call of `h` inlines its 1,000 operations (the return, 499 '+' and 500 names):
    # kernel a's 3,015 (3 calls) x 300 variants leave 95,500, and kernel b's 700 variants
    # get at most 136 operations each of them.
    helper = "def h(v: u32) -> u32:\n    return " + "+".join(["v"] * 500) + "\n\n"
    text = "from vyre_build.lang import *\n\n" + helper
    text += '@kernel(workgroup_size=64, variants={%s})\ndef a(o: Buffer[u32, "rw"], x: u32):\n' % (
        ", ".join(f'"v{i}": {{"N": {i}}}' for i in range(300))
    )
    text += "    o[0] = h(x) + h(x) + h(x)\n\n"
    text += '@kernel(workgroup_size=64)\ndef b(o: Buffer[u32, "rw"], x: u32):\n    o[0] = h(x)\n'
    (tmp_path / "k.py").write_text(text)
    (tmp_path / "variants.yaml").write_text(variants_yaml(700, "k.py", "b"))
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / "k.py"), display_path="k.py")
    assert (
        str(info.value)
        .splitlines()[0]
        .endswith(
            "variants.yaml:2:3: error: compiling this file takes more than 1000000 operations, "
            "each variant counted (the limit): 700 variants of kernel 'b' pass it, at more than "
            "136 operations each, after 904500 for the kernels before it"
        )
    )
    assert checks[0] == 0


def test_decorator_variants_are_pointed_at_in_the_kernel_file(tmp_path):
    variants = ", ".join(f'"v{i}": {{"N": {i}}}' for i in range(100))
    text = (
        "from vyre_build.lang import *\n\n"
        f"@kernel(workgroup_size=64, variants={{{variants}}})\n"
        'def big(o: Buffer[u32, "rw"], x: u32):\n' + "    o[0] = x + N\n" * 1500
    )
    (tmp_path / "k.py").write_text(text)
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / "k.py"), display_path="k.py")
    first, line, caret, fix = str(info.value).splitlines()
    assert first == (
        "k.py:3:37: error: compiling this file takes more than 1000000 operations, each "
        "variant counted (the limit): 100 variants of kernel 'big' pass it, at more than "
        "10000 operations each"
    )
    assert caret.index("^") == 4 + 36 and fix == FIX


def test_one_kernel_too_large_keeps_the_checkers_own_message(tmp_path):
    # A kernel alone over MAX_OPERATIONS is refused at its first variant, naming the
    # kernel's limit (test_frontend_limits): the file's count leaves it to the checker.
    (tmp_path / "k.py").write_text(HEAD + "    o[0] = x + 1\n" * 25000)
    with pytest.raises(KernelError) as info:
        compile_file(str(tmp_path / "k.py"), display_path="k.py")
    assert "kernel 'big' is larger than 100000 operations" in str(info.value)


def test_the_count_is_at_least_what_the_checker_counts_for_every_library_kernel():
    from vyre_build.frontend.work import file_work, kernel_work

    kernels = os.path.join(os.path.dirname(__file__), "..", "..", "kernels")
    for name in sorted(os.listdir(kernels)):
        if not name.endswith(".py"):
            continue
        module = load_module(os.path.join(kernels, name), root=kernels)
        checked = 0
        for kname, variant, env in instances(module):
            c = checker.KernelChecker(module, module.kernels[kname], variant, env)
            c.check()
            checked += c.ops
            kdef = module.kernels[kname]
            assert c.ops <= kernel_work(module, kdef), (name, kname, variant)
            # and the count of this variant alone (its values in the unroll bounds)
            assert c.ops <= kernel_work(module, kdef, bound=env or None), (name, kname, variant)
        assert checked <= file_work(module), name  # the file: every variant, as grouped


def test_the_count_covers_every_copy_of_an_unroll_body(tmp_path):
    # unroll() copies its body at check time: the parse-time count multiplies it by the
    # copies (literal and constant bounds exactly; bounds it cannot fold, the most allowed),
    # so that it stays at least what the checker counts.
    from vyre_build.frontend.work import kernel_work

    src = (
        "from vyre_build.lang import *\nN = 40\n\n@kernel(workgroup_size=64)\n"
        "def k(o: Buffer[u32, 'rw'], x: u32):\n"
        "    for i in {it}:\n        for j in unroll(3):\n"
        "            o[i + j] += x * u32(j) + o[j]\n"
    )
    counts = {}
    for it in ("range(N)", "unroll(N)", "unroll(2, N, 2)"):
        (tmp_path / "k.py").write_text(src.format(it=it))
        module = load_module(str(tmp_path / "k.py"), root=str(tmp_path))
        c = checker.KernelChecker(module, module.kernels["k"], None, {})
        c.check()
        counts[it] = (c.ops, kernel_work(module, module.kernels["k"]))
        assert c.ops <= counts[it][1], (it, counts[it])
    body = counts["range(N)"][1]
    assert counts["unroll(N)"][1] > 30 * body and counts["unroll(2, N, 2)"][1] > 15 * body


# -- the build's budget ------------------------------------------------------------------


def test_budget_charges_and_refuses_with_its_limit_and_a_fix():
    budget = BuildBudget(100, "VYRE_MAX_BUILD_OPERATIONS")
    budget.charge("/elsewhere/a.py", 60)
    with pytest.raises(VyreError) as info:
        budget.charge("/elsewhere/b.py", 41)
    assert str(info.value) == (
        "/elsewhere/b.py: error: compiling it would bring this build to about 101 "
        "operations (about 41 for this file, each variant counted), more than 100 (the "
        "build's limit, from VYRE_MAX_BUILD_OPERATIONS)\n"
        "  fix: build the tree in parts, or raise the build's limit: "
        "$VYREMAXBUILDOPERATIONS, or VYRE_MAX_BUILD_OPERATIONS in the environment "
        "(a number, or unlimited)"
    )
    assert budget.used == 60  # a refused charge counts nothing
    budget.charge("/elsewhere/c.py", 40)
    other = budget.sharing(None, "$VYREMAXBUILDOPERATIONS")  # unlimited, same tally
    other.charge("/elsewhere/d.py", 1000)
    assert budget.used == other.used == 1100


def test_budget_settings():
    assert budget_setting(None, {}) == (10_000_000, "the default")
    assert budget_setting(None, {"VYRE_MAX_BUILD_OPERATIONS": "2_000"}) == (
        2000,
        "VYRE_MAX_BUILD_OPERATIONS",
    )
    assert budget_setting("unlimited", {"VYRE_MAX_BUILD_OPERATIONS": "5"}) == (
        None,
        "$VYREMAXBUILDOPERATIONS",
    )
    assert budget_setting(300, {}) == (300, "$VYREMAXBUILDOPERATIONS")
    with pytest.raises(VyreError) as info:
        parse_budget("lots", "VYRE_MAX_BUILD_OPERATIONS")
    assert str(info.value) == (
        "VYRE_MAX_BUILD_OPERATIONS 'lots' is not a number of operations; write e.g. "
        "10000000 or unlimited"
    )
    with pytest.raises(VyreError):
        parse_budget(True, "$VYREMAXBUILDOPERATIONS")


SMALL = """\
from vyre_build.lang import *


@kernel(workgroup_size=64)
def k{i}(x: Buffer[u32], y: Buffer[u32, "w"]):
    i = global_id().x
    if i < len(y):
        y[i] = x[i] * {i}
"""


def shown(path: str) -> str:
    """A path as messages show it: from the working directory, unless that climbs out."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def small_tree(tmp_path, n: int = 3) -> list[str]:
    paths = []
    for i in range(n):
        path = tmp_path / "kernels" / f"k{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(SMALL.format(i=i))
        paths.append(str(path))
    return paths


@pytest.fixture
def compiles(monkeypatch):
    """The sources build steps compiled."""
    seen: list[str] = []
    plain = build_step.compile_outputs

    def compile_outputs(source, *args, **kw):
        seen.append(os.path.basename(source))
        return plain(source, *args, **kw)

    monkeypatch.setattr(build_step, "compile_outputs", compile_outputs)
    return seen


def test_a_build_step_charges_before_compiling_and_a_hit_charges_nothing(tmp_path, compiles):
    paths = small_tree(tmp_path)
    work = compile_work(paths[0])
    assert work == 20 and all(compile_work(p) == work for p in paths)
    store = Store(str(tmp_path / "cache"))
    budget = BuildBudget(2 * work, "$VYREMAXBUILDOPERATIONS")
    out = str(tmp_path / "out")
    for p in paths[:2]:
        build_kernel_file(p, out, store=store, budget=budget)
    with pytest.raises(VyreError) as info:
        build_kernel_file(paths[2], out, store=store, budget=budget)
    assert str(info.value).splitlines()[0] == (
        f"{shown(paths[2])}: error: compiling it would bring this build to about "
        "60 operations (about 20 for this file, each variant counted), more than 40 (the "
        "build's limit, from $VYREMAXBUILDOPERATIONS)"
    )
    assert compiles == ["k0.py", "k1.py"] and not os.path.exists(os.path.join(out, "k2.wgsl"))
    # The next build: the two built files are hits, so the third fits.
    again = BuildBudget(2 * work, "$VYREMAXBUILDOPERATIONS")
    for p in paths:
        build_kernel_file(p, out, store=store, budget=again)
    assert compiles == ["k0.py", "k1.py", "k2.py"] and again.used == work


def test_workers_ask_the_build_process_for_the_one_budget(tmp_path, compiles):
    paths = small_tree(tmp_path, 4)
    pool = WorkerPool(2, DEFAULT_COMPILER)
    try:
        pool._start()
        for worker in pool._workers:  # ready, so that every step runs in a worker
            worker.poll_ready(True)
        budget = BuildBudget(3 * 20, "VYRE_MAX_BUILD_OPERATIONS")
        out = str(tmp_path / "out")
        for p in paths[:3]:
            build_kernel_file(p, out, store=None, budget=budget, pool=pool)
        assert budget.used == 60
        with pytest.raises(VyreError) as info:
            build_kernel_file(paths[3], out, store=None, budget=budget, pool=pool)
        assert str(info.value).splitlines()[0] == (
            f"{shown(paths[3])}: error: compiling it would bring this build to "
            "about 80 operations (about 20 for this file, each variant counted), more than "
            "60 (the build's limit, from VYRE_MAX_BUILD_OPERATIONS)"
        )
        assert len(pool._workers) == 2  # the workers answered; none was lost
        assert compiles == []  # every compile ran in a worker
        assert sorted(os.listdir(out)) == sorted(
            f"k{i}{s}" for i in range(3) for s in (".kdesc", ".meta.json", ".spv", ".wgsl")
        )
    finally:
        pool.close()


def test_the_limits_are_documented():
    from vyre_build.build.budget import DEFAULT_BUILD_OPERATIONS

    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    section = readme.split("## Limits", 1)[1].split("\n## ", 1)[0]
    assert f"Work per file: {limits.MAX_FILE_OPERATIONS:,} operations" in section
    assert f"Work per build: {DEFAULT_BUILD_OPERATIONS:,} operations" in section
    assert "`VYRE_MAX_BUILD_OPERATIONS`" in section and "`$VYREMAXBUILDOPERATIONS`" in section


def test_unroll_bounds_a_variant_binds_count_that_variants_copies(tmp_path):
    # unroll(HELD), HELD a variant value: each variant counted with its own HELD (the file
    # counts the two bindings apart), not every one at the most copies an unroll may make.
    from vyre_build.frontend.work import file_work, kernel_work

    src = (
        "from vyre_build.lang import *\n\n"
        "@kernel(workgroup_size=64, variants={'a': {'HELD': 2}, 'b': {'HELD': 200},"
        " 'c': {'HELD': 2}})\n"
        "def k(o: Buffer[u32, 'rw'], x: u32):\n"
        "    for j in unroll(u32(HELD)):\n        o[j] += x * j + o[j + 1]\n"
    )
    (tmp_path / "k.py").write_text(src)
    module = load_module(str(tmp_path / "k.py"), root=str(tmp_path))
    kdef = module.kernels["k"]
    counts = {}
    for _, variant, env in instances(module):
        c = checker.KernelChecker(module, kdef, variant, env)
        c.check()
        counts[variant] = kernel_work(module, kdef, bound=env)
        assert c.ops <= counts[variant], (variant, c.ops, counts[variant])
    # 2 and 200 copies of the same body: b - a is 198 of them
    assert counts["a"] == counts["c"] and (counts["b"] - counts["a"]) % 198 == 0
    assert counts["b"] > 50 * counts["a"]
    assert kernel_work(module, kdef) > counts["b"]  # any variant: the most copies, 256
    assert file_work(module) == 2 * counts["a"] + counts["b"]


def test_unroll_bounds_read_through_constants_and_imported_helpers_stay_upper_bounds(tmp_path):
    # A file constant read from a variant-bound one (Q = H // 4, the checker folds it again
    # per variant), and an imported helper's unroll of a name the kernel's variant binds:
    # counted at the most copies, never at the file's default values.
    from vyre_build.frontend.work import file_work, kernel_work

    (tmp_path / "common.py").write_text(
        "from vyre_build.lang import *\nN = 2\n\n"
        "def bump(o: Buffer[u32, 'rw'], x: u32) -> None:\n"
        "    for j in unroll(N):\n        o[j] += x * j\n"
    )
    (tmp_path / "k.py").write_text(
        "from vyre_build.lang import *\nfrom common import bump\nH = 8\nQ = H // 4\n\n"
        "@kernel(workgroup_size=64, variants={'a': {'H': 400, 'N': 200}, 'b': {'H': 8, 'N': 2}})\n"
        "def k(o: Buffer[u32, 'rw'], x: u32):\n"
        "    for j in unroll(Q):\n        o[j] += x * j + o[j + 1]\n"
        "    bump(o, x)\n"
    )
    module = load_module(str(tmp_path / "k.py"), root=str(tmp_path))
    kdef = module.kernels["k"]
    checked = 0
    for _, variant, env in instances(module):
        c = checker.KernelChecker(module, kdef, variant, env)
        c.check()
        checked += c.ops
        assert c.ops <= kernel_work(module, kdef), variant
        assert c.ops <= kernel_work(module, kdef, bound=env), variant
    assert file_work(module) >= checked
