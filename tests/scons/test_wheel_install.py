"""End to end: the wheel as a user installs it, in a fresh venv outside the repo (and the
README's editable install, which mypy must see through).

The wheel is built from this checkout (`pip wheel`, setuptools' build folder kept out of
build/, which is SCons's), installed with --no-deps into a venv of its own; the venv
reaches the dependencies (numpy, SCons, mypy, ...) through a .pth line to this test run's
site-packages, which holds no vyre_build of its own (an editable install's finder there is
not run: .pth files of an added directory are not processed). Then, with nothing of the
checkout on the path: `library.reduce(x)` with no bundle on the cpu backend and on
Vulkan (lavapipe in CI), `scons` on a project of its own, and `mypy --strict` on a kernel
file against the installed stub (and pyright, where it is installed).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from scons_helpers import REPO, steps, write_tree

pytestmark = [pytest.mark.scons, pytest.mark.slow]

KERNEL = """\
from vyre_build.lang import Buffer, f32, global_id, kernel, rw


@kernel(workgroup_size=64)
def saxpy(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32) -> None:
    i = global_id().x
    if i < len(y):
        y[i] = a * x[i] + y[i]
"""

REDUCE = """\
import numpy as np
import vyre_build
from vyre_build import library

x = np.arange(1, 1001, dtype=np.float32)
print(vyre_build.__file__)
print(library.reduce(x), library.reduce(x, "max"), library.scan(np.ones(5, np.uint32))[-1])
"""
BACKEND = """\
import sys
from vyre_build.library.bundle import default_library, library_bundle_path

print(default_library().device.backend)
print(library_bundle_path())
print("vyre_build.compiler" in sys.modules)
"""


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]


def fresh_venv(tmp: Path, *install: str) -> tuple[Path, dict]:
    """A venv in `tmp` with `pip install --no-deps INSTALL` of this checkout done, its
    dependencies reached through this run's site-packages; (its python, an environment
    with nothing of the checkout or of the developer's settings)."""
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    subprocess.run([*PIP, "--python", str(python), "install", "--no-deps", *install], check=True)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = sorted({sysconfig.get_paths()["purelib"], *site.getsitepackages()})
    Path(purelib, "test-deps.pth").write_text("".join(f"{d}\n" for d in deps))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VYRE_", "PYTHON"))}
    env.update(XDG_CACHE_HOME=str(tmp / "xdg-cache"), VYRE_CONFIG=os.devnull + ".none")
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return python, env


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> tuple[Path, dict]:
    """(the venv's python, the environment to run it in) with the built wheel installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    out = tmp / "dist"
    subprocess.run([*PIP, "wheel", "--no-deps", "-w", str(out), str(REPO)], check=True)
    (wheel,) = out.glob("vyre_build-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "vyre_build/_library/lib_reduce.py" in names and "vyre_build/lang.pyi" in names
    # the library's kernels built: an installed wheel compiles nothing at its first call
    assert {"vyre_build/_library/library.vyrebundle", "vyre_build/_library/library.digest"} <= set(
        names
    )
    assert not (REPO / "build" / "lib").exists()  # setuptools kept out of SCons's build/
    return fresh_venv(tmp, str(wheel))


def run(python: Path, env: dict, cwd: Path, *args: str, **extra: str):
    return subprocess.run(
        [str(python), *args],
        cwd=cwd,
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("which", ["cpu", "vulkan", ""])  # "": unset, the default (wgpu)
def test_library_reduce_runs_from_the_wheel_with_no_bundle(venv, tmp_path, which):
    python, env = venv
    (tmp_path / "use.py").write_text(REDUCE + BACKEND)
    proc = run(python, env, tmp_path, "use.py", **({"VYRE_BACKEND": which} if which else {}))
    assert proc.returncode == 0, proc.stderr
    where, values, backend, bundle, compiled = proc.stdout.splitlines()
    assert backend == (which or "wgpu")
    assert where.startswith(str(python.parent.parent)) and not where.startswith(str(REPO))
    assert values == "500500.0 1000.0 5"
    # the bundle the wheel ships, opened as it is: no compiler imported, no cache written
    assert bundle == os.path.join(os.path.dirname(where), "_library", "library.vyrebundle")
    assert compiled == "False" and not os.path.exists(os.path.join(env["XDG_CACHE_HOME"], "vyre"))


def test_scons_builds_a_project_of_its_own_with_the_installed_tool(venv, tmp_path):
    python, env = venv
    root = write_tree(tmp_path / "proj", n=3)
    proc = run(python, env, root, "-m", "SCons", "-Q", VYRE_CACHE_DIR=str(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert steps(proc) == {f"kernels/k{i}.py": "compiled" for i in range(3)}
    assert proc.stdout.splitlines()[-1] == "vyre: 3 kernel files: 3 compiled"
    assert (root / "dist" / "kernels.vyrebundle").is_file()


def test_mypy_strict_checks_a_kernel_file_against_the_installed_stub(venv, tmp_path):
    python, env = venv
    (tmp_path / "saxpy.py").write_text(KERNEL)
    wrong = KERNEL.replace("y[i] = a * x[i] + y[i]", "y[i] = global_id()")
    (tmp_path / "wrong.py").write_text(wrong)
    args = ("-m", "mypy", "--strict", "--no-incremental", "--no-error-summary")
    ok = run(python, env, tmp_path, *args, "saxpy.py")
    assert (ok.returncode, ok.stdout) == (0, ""), ok.stdout + ok.stderr
    bad = run(python, env, tmp_path, *args, "wrong.py")
    assert bad.stdout == textwrap.dedent("""\
        wrong.py:8: error: Incompatible types in assignment (expression has type "_Ids", target has type "float")  [assignment]
        """)


def test_mypy_finds_the_language_in_the_readmes_editable_install(tmp_path):
    # README: pip install -e . --config-settings editable_mode=compat (a plain path entry;
    # setuptools' default import-hook finder is invisible to mypy).
    python, env = fresh_venv(tmp_path, "-e", str(REPO), "--config-settings", "editable_mode=compat")
    kernels = tmp_path / "proj" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "saxpy.py").write_text(KERNEL)
    args = ("-m", "mypy", "--strict", "--no-incremental", "--no-error-summary", "kernels/")
    proc = run(python, env, kernels.parent, *args)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout + proc.stderr
    where = run(python, env, tmp_path, "-c", "import vyre_build; print(vyre_build.__file__)")
    assert where.stdout == f"{REPO / 'vyre_build' / '__init__.py'}\n"


@pytest.mark.skipif(shutil.which("pyright") is None, reason="pyright (npm) is not installed")
def test_pyright_resolves_the_installed_stub_and_warns_only_on_a_star_import(venv, tmp_path):
    python, env = venv
    (tmp_path / "named.py").write_text(KERNEL)
    (tmp_path / "star.py").write_text(KERNEL.replace("Buffer, f32, global_id, kernel, rw", "*", 1))

    def diagnostics() -> list[tuple[str, str, str | None]]:
        proc = subprocess.run(
            ["pyright", "--outputjson", "--pythonpath", str(python), "named.py", "star.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        found = json.loads(proc.stdout)["generalDiagnostics"]
        return [(Path(d["file"]).name, d["severity"], d.get("rule")) for d in found]

    assert diagnostics() == [("star.py", "warning", "reportWildcardImportFromLibrary")]
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pyright]\nreportWildcardImportFromLibrary = false\n"
    )
    assert diagnostics() == []  # the README's setting for star imports
