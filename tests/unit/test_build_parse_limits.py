"""The build's shared parse (build_parse.Parses: one loader per kernel tree, helpers parsed
once) holds each frontend limit per kernel file as a compile of that file alone does: a
build reading many files in all refuses none, and a file that passes a limit only counted
with its reused helpers left out gets the compiler's own refusal."""

import pytest

from vyre_build import compiler
from vyre_build.build.parse import Parses
from vyre_build.core.errors import KernelError
from vyre_build.core import limits

HEAD = "from vyre_build.lang import *\n"
KERNEL = '@kernel(workgroup_size=64)\ndef {name}(o: Buffer[u32, "rw"]):\n    o[0] = {value}\n'


def refused_as_alone(tmp_path, first, kernel, message: str) -> None:
    """After `first` is parsed (its helpers now reused), parsing `kernel` in the same build
    gives exactly the refusal compiling `kernel` alone gives, which says `message`."""
    parses = Parses(compiler)
    parses.parse(str(first), str(tmp_path))
    with pytest.raises(KernelError) as alone:
        compiler.compile_file(str(kernel), root=str(tmp_path), targets=("kdesc",))
    assert message in str(alone.value)
    with pytest.raises(KernelError) as info:
        parses.parse(str(kernel), str(tmp_path))
    assert str(info.value) == str(alone.value)


def test_a_build_reading_more_files_than_one_compile_may_refuses_none(tmp_path):
    (tmp_path / "helper.py").write_text("ONE = 1\n")
    count = limits.MAX_FILES + 10
    for i in range(count):
        text = HEAD + "from .helper import ONE\n" + KERNEL.format(name=f"k{i}", value="ONE")
        (tmp_path / f"k{i}.py").write_text(text)
    parses = Parses(compiler)
    stems = [parses.parse(str(tmp_path / f"k{i}.py"), str(tmp_path)).stems for i in range(count)]
    assert stems == [[f"k{i}"] for i in range(count)]


def test_an_import_chain_too_deep_only_through_a_reused_helper_is_refused(tmp_path):
    depth = limits.MAX_IMPORT_DEPTH
    for i in range(depth):  # h0 -> h1 -> ... -> h{depth-1}: a chain of exactly the limit
        nxt = f"from .h{i + 1} import C{i + 1}\n" if i + 1 < depth else ""
        value = f"C{i + 1}" if i + 1 < depth else "1"
        (tmp_path / f"h{i}.py").write_text(f"{nxt}C{i} = {value}\n")
    kernel = tmp_path / "k.py"
    kernel.write_text(HEAD + "from .h0 import C0\n" + KERNEL.format(name="k", value="C0"))
    message = f"imports nested more than {depth} files deep (the limit)"
    refused_as_alone(tmp_path, tmp_path / "h0.py", kernel, message)


def test_too_many_files_only_counting_reused_helpers_is_refused(tmp_path):
    n = limits.MAX_FILES  # the kernel reads itself and n helpers: one file past the limit
    for i in range(n):
        (tmp_path / f"h{i}.py").write_text(f"C{i} = {i}\n")
    first = tmp_path / "a.py"  # reads half of the helpers first: fine alone
    first.write_text(
        HEAD
        + "".join(f"from .h{i} import C{i}\n" for i in range(n // 2))
        + KERNEL.format(name="a", value="C0")
    )
    kernel = tmp_path / "k.py"
    kernel.write_text(
        HEAD
        + "".join(f"from .h{i} import C{i}\n" for i in range(n))
        + KERNEL.format(name="k", value="C1")
    )
    message = f"compiling this file reads more than {limits.MAX_FILES} files (the limit)"
    refused_as_alone(tmp_path, first, kernel, message)


def test_each_kernel_tree_is_confined_to_itself(tmp_path):
    # One build, two trees: a file of the second is not refused as outside the first.
    for tree in ("one", "two"):
        (tmp_path / tree).mkdir()
        (tmp_path / tree / "k.py").write_text(HEAD + KERNEL.format(name=tree, value="1"))
    parses = Parses(compiler)
    for tree in ("one", "two"):
        parsed = parses.parse(str(tmp_path / tree / "k.py"), str(tmp_path / tree))
        assert parsed.stems == [tree]
        assert parses.take(str(tmp_path / tree / "k.py"), str(tmp_path)) is None  # other tree
