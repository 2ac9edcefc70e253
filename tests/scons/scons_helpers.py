"""Helpers for end-to-end SCons tests (imported by the tests; the fixture is in conftest): a kernel tree + SConstruct in a temp dir, scons run
as a subprocess (`python -m SCons`) with this checkout on PYTHONPATH and a private cache."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCONSTRUCT = """\
import vyre_build.build.scons_tool
env = Environment(tools=["default", "vyre"], toolpath=[vyre_build.build.scons_tool.toolpath()])
VariantDir("build", "kernels", duplicate=0)
outs = env.VyreKernelDir("build")
env.VyreBundle("dist/kernels.vyrebundle", outs)
"""

HELPER_A = """\
from vyre_build.lang import f32

SCALE = 2.0


def scale_a(v: f32) -> f32:
    return v * SCALE
"""

HELPER_B = """\
from vyre_build.lang import u32


def mix_b(v: u32) -> u32:
    return (v ^ (v >> 7)) * 3
"""


def kernel_source(i: int, helper: str | None) -> str:
    """A small kernel k<i>; uses helpers_a / helpers_b when `helper` says so."""
    if helper == "a":
        return textwrap.dedent(f"""\
            from vyre_build.lang import Buffer, f32, global_id, kernel

            from .helpers_a import scale_a


            @kernel(workgroup_size=64)
            def k{i}(x: Buffer[f32], y: Buffer[f32, "rw"]):
                i = global_id().x
                if i < len(y):
                    y[i] = scale_a(x[i]) + {i}.0
            """)
    if helper == "b":
        return textwrap.dedent(f"""\
            from vyre_build.lang import Buffer, global_id, kernel, u32

            from .helpers_b import mix_b


            @kernel(workgroup_size=64)
            def k{i}(x: Buffer[u32], y: Buffer[u32, "w"]):
                i = global_id().x
                if i < len(y):
                    y[i] = mix_b(x[i]) + {i}
            """)
    return textwrap.dedent(f"""\
        from vyre_build.lang import Buffer, global_id, kernel, u32


        @kernel(workgroup_size=64)
        def k{i}(x: Buffer[u32], y: Buffer[u32, "w"]):
            i = global_id().x
            if i < len(y):
                y[i] = x[i] * {i + 1}
        """)


def write_tree(root: Path, n: int = 4, sconstruct: str = SCONSTRUCT) -> Path:
    """kernels/k0..k<n-1>.py (k0 uses helpers_a, k1 helpers_b, others none) + SConstruct."""
    kdir = root / "kernels"
    kdir.mkdir(parents=True, exist_ok=True)
    (kdir / "helpers_a.py").write_text(HELPER_A)
    (kdir / "helpers_b.py").write_text(HELPER_B)
    for i in range(n):
        helper = {0: "a", 1: "b"}.get(i % 4 if i < 4 else -1)
        (kdir / f"k{i}.py").write_text(kernel_source(i, helper))
    (root / "SConstruct").write_text(sconstruct)
    return root


def scons_env(cache: Path | None, **extra: str) -> dict:
    """The environment of a test build: this checkout importable, `cache` as the cache
    (None: the config decides), nothing of the developer's own settings (remote, config
    file, ~/.netrc); `extra` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VYRE_") and k != "VYRESIGNKEY"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if cache is not None:
        env["VYRE_CACHE_DIR"] = str(cache)
    env["VYRE_CONFIG"] = os.devnull + ".none"
    env["NETRC"] = os.devnull + ".none"
    env.pop("SCONSFLAGS", None)
    env.update(extra)
    return env


def scons_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "SCons", "-Q", *args]


def run_scons(root: Path, cache: Path | None, *args: str, check: bool = True, env=None):
    proc = subprocess.run(
        scons_cmd(*args),
        cwd=root,
        env=scons_env(cache, **(env or {})),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"scons {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def start_build(root: Path, cache: Path, *args: str, stderr=subprocess.PIPE, **env: str):
    """A scons build started and read up to its first compile line (the first kernel is
    being built when this returns); (process, time of that line)."""
    proc = subprocess.Popen(
        scons_cmd(*args),
        cwd=root,
        env=scons_env(cache, PYTHONUNBUFFERED="1", **env),
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        start_new_session=True,
    )
    for line in proc.stdout:
        if STEP_LINE.match(line):
            break
    return proc, time.monotonic()


STEP_LINE = re.compile(
    r"^vyre: (?:\[\d+/\d+\] )?(compiled|local hit|remote hit|failed|compile) (\S+) -> ", re.M
)


def steps(proc) -> dict[str, str]:
    """{kernel file: what its step did} of a scons run (the default $VYRECOMSTR lines;
    "compile" under -n)."""
    return {m.group(2): m.group(1) for m in STEP_LINE.finditer(proc.stdout)}


def compiled(proc) -> list[str]:
    """Kernel files whose step a scons run ran (compiled or a cache hit: SCons found them
    out of date), from the default $VYRECOMSTR lines."""
    return sorted(steps(proc))


def bundled(proc) -> bool:
    return re.search(r"^vyre: bundle ", proc.stdout, re.M) is not None


def vyre(root: Path, cache: Path | None, *args: str):
    """`vyre-build ARGS` run in `root` with the test build's environment (not checked)."""
    return subprocess.run(
        [sys.executable, "-m", "vyre_build", *args],
        cwd=root,
        env=scons_env(cache),
        capture_output=True,
        text=True,
        timeout=300,
    )


def cache_cli(cache: Path | None, *args: str, check: bool = True, cwd=None, env=None):
    where = ["--cache-dir", str(cache)] if cache is not None else []
    proc = subprocess.run(
        [sys.executable, "-m", "vyre_build", "cache", *args, *where],
        env=scons_env(cache, **(env or {})),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"cache {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def cache_json(cache: Path | None, *args: str, check: bool = True, cwd=None) -> dict:
    return json.loads(cache_cli(cache, *args, "--json", check=check, cwd=cwd).stdout)


def warning_lines(proc) -> list[str]:
    """The vyre warnings a build printed."""
    return [line for line in proc.stderr.splitlines() if "warning:" in line]


def outputs(root: Path) -> dict[str, bytes]:
    """Every file under build/ and dist/, relative path -> bytes."""
    out = {}
    for top in ("build", "dist"):
        for p in sorted((root / top).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(root))] = p.read_bytes()
    return out


@pytest.fixture
def project(tmp_path):
    """(tree root, cache dir) with a 4-kernel tree, not built yet."""
    if shutil.which(sys.executable) is None:
        pytest.skip("no python")
    return write_tree(tmp_path / "proj"), tmp_path / "cache"
