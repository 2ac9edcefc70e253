"""`library.*` without a bundle: the package's own library, built once into the user cache
from the shipped kernel sources, opened on the default device ($VYRE_BACKEND), and from
then on used without importing the compiler (test_runtime_isolation's guard)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from test_runtime_isolation import FORBIDDEN_CPU, ROOT, run_guarded

from vyre_build.core.errors import DispatchError
from vyre_build import library
from vyre_build.library import bundle as library_bundle

USE = """
    import numpy as np
    from vyre_build import library
    from vyre_build.library.bundle import default_library, library_bundle_path

    x = np.arange(1, 1001, dtype=np.float32)
    r = np.arange(24, dtype=np.float32).reshape(4, 6)
    report(
        sum=float(library.reduce(x)),
        max=float(library.reduce(x, "max")),
        scan=library.scan(np.ones(6, np.int32), exclusive=True).tolist(),
        softmax_rows=[round(float(v), 5) for v in library.softmax(r).sum(axis=1)],
        backend=default_library().device.backend,
        path=library_bundle_path(),
    )
"""


def test_without_a_bundle_on_the_default_device_then_with_no_compiler(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path), "VYRE_BACKEND": "cpu"}
    first = run_guarded(USE, env, forbidden=())  # builds the bundle: the compiler runs
    again = run_guarded(USE, env, forbidden=FORBIDDEN_CPU)  # opens it: no compiler at all
    assert first == again
    assert first["leaked"] == [] and first["backend"] == "cpu"
    assert (first["sum"], first["max"], first["scan"]) == (500500.0, 1000.0, [0, 1, 2, 3, 4, 5])
    assert first["softmax_rows"] == [1.0, 1.0, 1.0, 1.0]
    assert first["path"].startswith(os.path.join(str(tmp_path), "vyre", "library", ""))
    assert sorted(os.listdir(os.path.dirname(first["path"]))) == [
        "library.vyrebundle",
        "library.vyrebundle.lock",
    ]


def test_the_bundle_is_named_by_its_sources_and_the_same_sources_give_the_same_bytes(
    tmp_path, monkeypatch
):
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "kernels"), src)
    monkeypatch.setattr(library_bundle, "library_sources", lambda: str(src))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a"))
    one = library_bundle.library_bundle_path()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "b"))
    two = library_bundle.library_bundle_path()
    assert open(one, "rb").read() == open(two, "rb").read()  # deterministic
    with open(src / "lib_reduce.py", "a") as f:
        f.write("# edited\n")
    three = library_bundle.library_bundle_path()
    assert os.path.dirname(three) != os.path.dirname(two) and os.path.isfile(three)


def test_kernels_given_by_keyword_or_first_and_a_bad_first_argument():
    x = np.ones(4, np.float32)
    with pytest.raises(DispatchError) as info:
        library.reduce("dist/kernels.vyrebundle", x)
    assert str(info.value) == (
        "library.reduce: kernels must be a Bundle or a mapping of kernel id -> Kernel, got str"
    )
    with pytest.raises(DispatchError) as info:
        library.reduce(kernels={}, x=x)
    assert str(info.value) == (
        "library.reduce: no kernel 'lib_reduce.sum_f32' in the kernels given (build "
        "kernels/lib_reduce.py into them)"
    )


def test_an_install_without_the_library_sources_says_so(monkeypatch, tmp_path):
    # A package directory with neither _library/ (a wheel's) nor ../kernels (a checkout's).
    package = tmp_path / "site" / "vyre_build"
    package.mkdir(parents=True)
    monkeypatch.setattr(library_bundle, "__file__", str(package / "library" / "bundle.py"))
    with pytest.raises(DispatchError) as info:
        library_bundle.library_sources()
    assert str(info.value) == (
        f"library: this install of vyre_build has no library kernel sources "
        f"({package / '_library'} is missing); reinstall the wheel, or pass a bundle built "
        "from kernels/lib_*.py as the first argument"
    )
    (tmp_path / "site" / "kernels").mkdir(parents=True)
    (tmp_path / "site" / "kernels" / "lib_reduce.py").write_text("")
    assert library_bundle.library_sources() == str(tmp_path / "site" / "kernels")


def test_device_buffers_choose_the_device_the_library_runs_on(tmp_path, monkeypatch):
    from vyre_build.runtime import get_device

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("VYRE_BACKEND", raising=False)  # the default would be wgpu
    cpu = get_device("cpu")
    x = cpu.buffer(np.arange(1, 1001, dtype=np.float32))
    out = cpu.buffer((1,), "f32")
    assert library.reduce(x, out=out) is out and out.read()[0] == 500500.0
    assert library_bundle.default_library(cpu).device is cpu
    sums = library.scan(np.ones(3, np.uint32), out=cpu.buffer((3,), "u32"))  # out= decides
    assert sums.read().tolist() == [1, 2, 3]


def test_a_shipped_bundle_is_served_only_for_the_files_it_was_built_from(tmp_path, monkeypatch):
    # A wheel's _library/ holds the bundle built from its sources and the digest of the
    # files it was built from: served as it is while they match, never once they differ.
    from vyre_build.build.library_bundle import SHIPPED, SHIPPED_DIGEST, library_digest

    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "kernels"), src)
    monkeypatch.setattr(library_bundle, "library_sources", lambda: str(src))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    package = os.path.dirname(os.path.dirname(os.path.abspath(library_bundle.__file__)))
    (src / SHIPPED).write_bytes(b"the shipped bundle")
    (src / SHIPPED_DIGEST).write_text(library_digest(str(src), package) + "\n")
    assert library_bundle.library_bundle_path() == str(src / SHIPPED)
    assert not (tmp_path / "cache").exists()  # nothing compiled
    with open(src / "lib_reduce.py", "a") as f:
        f.write("# edited after the bundle was built\n")
    built = library_bundle.library_bundle_path()
    assert built.startswith(str(tmp_path / "cache")) and os.path.isfile(built)
    (src / SHIPPED_DIGEST).write_text("not a digest")
    assert library_bundle.library_bundle_path() == built


def test_the_library_bundle_is_the_same_bytes_built_by_one_process_or_several(tmp_path):
    # build_library_bundle splits the files over helper processes (one per core): which
    # process compiled a file changes nothing in the bundle.
    from vyre_build.build.library_bundle import build_library_bundle

    src = os.path.join(ROOT, "kernels")
    build_library_bundle(src, str(tmp_path / "one.vyrebundle"), jobs=1)
    build_library_bundle(src, str(tmp_path / "three.vyrebundle"), jobs=3)
    assert (tmp_path / "one.vyrebundle").read_bytes() == (
        tmp_path / "three.vyrebundle"
    ).read_bytes()


def test_a_helper_that_fails_has_its_files_compiled_by_the_caller(tmp_path, monkeypatch):
    from vyre_build.build import library_bundle as lb

    src = os.path.join(ROOT, "kernels")
    lb.build_library_bundle(src, str(tmp_path / "good.vyrebundle"), jobs=1)
    monkeypatch.setattr(lb, "_HELPER", "import sys; sys.stdout.write('garbage'); sys.exit(0)")
    lb.build_library_bundle(src, str(tmp_path / "fallback.vyrebundle"), jobs=2)
    assert (tmp_path / "good.vyrebundle").read_bytes() == (
        tmp_path / "fallback.vyrebundle"
    ).read_bytes()


def test_an_embedding_applications_executable_is_never_started(tmp_path, monkeypatch):
    # sys.executable of Python embedded in an application is the application: no helper
    # is started with it, the files are compiled here.
    import subprocess

    from vyre_build.build import library_bundle as lb

    started = []
    monkeypatch.setattr(lb.sys, "executable", "/opt/app/bin/app")
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    path = tmp_path / "here.vyrebundle"
    lb.build_library_bundle(os.path.join(ROOT, "kernels"), str(path), jobs=4)
    assert started == [] and path.stat().st_size > 0
