"""The runtime never imports the compiler: it runs with the compiler made unimportable.

Each check runs in a fresh interpreter whose meta-path finder raises ImportError for the
frontend, IR, lowering, compiler and emitter modules (and, but on the cpu backend's
path, the descriptor), then asserts none of them (nor their submodules) ended up in
sys.modules. The cpu backend imports vyre_build.descriptor and vyre_build.reference
only when a cpu device is made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORBIDDEN = (
    "vyre_build.frontend",
    "vyre_build.ir",
    "vyre_build.lower",
    "vyre_build.compiler",
    "vyre_build.emit",
    "vyre_build.descriptor",
    "vyre_build.reference",
    "vyre_build.lang",
)

# The cpu backend reads the descriptor and runs it with the reference: all else stays out.
FORBIDDEN_CPU = tuple(
    m for m in FORBIDDEN if m not in ("vyre_build.descriptor", "vyre_build.reference")
)

GUARD = textwrap.dedent("""
    import importlib.abc, json, sys
    FORBIDDEN = FORBIDDEN_MODULES

    def forbidden(name):
        return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if forbidden(name):
                raise ImportError(f"the runtime must not import {name}")
            return None

    sys.meta_path.insert(0, Block())

    def report(**extra):
        leaked = sorted(m for m in sys.modules if forbidden(m))
        print(json.dumps({"leaked": leaked, **extra}))
""")


def run_guarded(body: str, env_extra: dict | None = None, forbidden=FORBIDDEN) -> dict:
    env = {**os.environ, "PYTHONPATH": ROOT, **(env_extra or {})}
    guard = GUARD.replace("FORBIDDEN_MODULES", repr(forbidden), 1)
    done = subprocess.run(
        [sys.executable, "-c", guard + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_guard_really_blocks():
    """The finder itself works: importing a forbidden module fails in the subprocess."""
    result = run_guarded("""
        try:
            import vyre_build.descriptor
            report(blocked=False)
        except ImportError:
            report(blocked=True)
    """)
    assert result == {"leaked": [], "blocked": True}


def test_importing_the_runtime_pulls_in_no_compiler_and_no_gpu_stack():
    result = run_guarded("""
        import vyre_build.runtime, vyre_build.commands.run
        report(gpu=sorted(m for m in ("wgpu", "vulkan") if m in sys.modules))
    """)
    assert result == {"leaked": [], "gpu": []}


# What the runtime may import of vyre_build besides itself (docs/runtime.md).
ALLOWED = (
    "vyre_build.bundle",
    "vyre_build.errors",
    "vyre_build.files",
    "vyre_build.artifacts",
    "vyre_build.targets",
    "vyre_build.backends",
    "vyre_build.features",
)


def test_the_runtime_imports_only_the_allowed_modules():
    result = run_guarded("""
        import vyre_build.runtime
        import vyre_build.runtime.calls, vyre_build.runtime.pipeline_cache
        report(ours=sorted(m for m in sys.modules if m.startswith("vyre_build")))
    """)
    outside = [
        m
        for m in result["ours"]
        if m != "vyre_build"
        and not m.startswith("vyre_build.runtime")
        and not any(m == a or m.startswith(a + ".") for a in ALLOWED)
    ]
    assert outside == [] and "vyre_build.bundle.writer" not in result["ours"]
    assert "vyre_build.features" in result["ours"]


@pytest.mark.backends("wgpu", "vulkan")
def test_bundle_open_and_dispatch_without_the_compiler(backend, tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
    try:
        import test_runtime as shaders
    finally:
        sys.path.pop(0)
    from vyre_build.bundle import write_bundle

    meta, wgsl, spvasm = shaders.SHADERS["saxpy"]
    path = tmp_path / "iso.vyrebundle"
    write_bundle(
        path,
        [{"meta": meta, "artifacts": {".wgsl": wgsl.encode(), ".spv": shaders.assemble(spvasm)}}],
    )
    result = run_guarded(f"""
        import numpy as np
        from vyre_build.runtime import open_bundle
        with open_bundle({str(path)!r}, backend={backend!r}) as bundle:
            x = np.arange(8, dtype=np.float32)
            y = bundle["saxpy"](x=x, y=np.ones(8, np.float32), a=2.0)["y"]
        report(y=y.tolist())
    """)
    assert result == {"leaked": [], "y": [2.0 * i + 1.0 for i in range(8)]}


def test_the_cpu_backend_module_imports_no_descriptor_until_a_device_is_made():
    result = run_guarded("""
        from vyre_build.runtime import adapter_profiles, list_adapters
        names = list_adapters("cpu")
        profile = adapter_profiles("cpu")[0]
        report(names=names, size=profile.subgroup_size, gpu=[m for m in ("wgpu", "vulkan") if m in sys.modules])
    """)
    assert result == {"leaked": [], "names": ["vyre reference (CPU)"], "size": 32, "gpu": []}


def test_the_cpu_backend_runs_a_bundle_without_the_compiler_or_a_gpu_stack(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
    try:
        import test_runtime as shaders
    finally:
        sys.path.pop(0)
    from vyre_build.bundle import write_bundle

    path = tmp_path / "iso.vyrebundle"
    entries = [{"meta": shaders.SAXPY_META, "artifacts": {".kdesc": shaders.kdesc("saxpy")}}]
    write_bundle(path, entries)
    result = run_guarded(
        f"""
        import numpy as np
        from vyre_build.runtime import open_bundle
        with open_bundle({str(path)!r}) as bundle:
            x = np.arange(8, dtype=np.float32)
            y = bundle["saxpy"](x=x, y=np.ones(8, np.float32), a=2.0)["y"]
        report(
            y=y.tolist(),
            gpu=[m for m in ("wgpu", "vulkan") if m in sys.modules],
            ours=sorted(m.split(".")[1] for m in sys.modules if m.startswith("vyre_build.")),
        )
        """,
        {"VYRE_BACKEND": "cpu"},
        FORBIDDEN_CPU,
    )
    assert result["leaked"] == [] and result["gpu"] == []
    assert result["y"] == [2.0 * i + 1.0 for i in range(8)]
    assert {"descriptor", "reference"} <= set(result["ours"])
    assert set(result["ours"]) - {"descriptor", "reference", "runtime"} <= {
        a.split(".")[1] for a in ALLOWED
    }
