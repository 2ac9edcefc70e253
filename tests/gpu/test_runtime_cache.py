"""The persisted Vulkan pipeline cache across processes, close(), `vyre-build bundle warm`,
and the typed user script, for real (lavapipe here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import load, python  # noqa: E402
from test_runtime_device import bundle  # noqa: E402

from vyre_build.runtime import get_device  # noqa: E402

from vyre_build.core.errors import DeviceError  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# --- the persisted pipeline cache and close() -----------------------------------------


def fresh(code: str, tmp_path, timeout: int = 300, **env) -> subprocess.CompletedProcess:
    script = textwrap.dedent(f"""
        import json, sys, warnings
        sys.path.insert(0, {ROOT!r})
        sys.path.insert(0, {os.path.join(ROOT, "tests", "gpu")!r})
        from test_runtime import load
        from vyre_build.runtime import get_device, open_bundle
    """) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "VYRE_PIPELINE_CACHE": str(tmp_path / "plc"), **env},
        timeout=timeout,
        check=False,
    )


def test_the_vulkan_pipeline_cache_persists_across_processes(tmp_path):
    from adapters import require_adapter

    require_adapter("vulkan")
    first = fresh(
        """
        dev = get_device("vulkan")
        assert dev.cache_loaded == 0
        load("saxpy", "vulkan", dev)
        print(json.dumps({"path": dev.cache_file.path}))
        """,  # saved at exit: no close()
        tmp_path,
    )
    assert first.returncode == 0, first.stderr
    path = json.loads(first.stdout)["path"]
    assert path.startswith(str(tmp_path / "plc" / "vk-")) and os.path.getsize(path) > 40
    second = fresh(
        """
        dev = get_device("vulkan")
        print(json.dumps({"loaded": dev.cache_loaded}))
        dev.close()
        """,
        tmp_path,
    )
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["loaded"] == os.path.getsize(path) - 40
    with open(path, "r+b") as f:  # corrupt one byte of the driver's blob
        f.seek(45)
        byte = f.read(1)
        f.seek(45)
        f.write(bytes([byte[0] ^ 0xFF]))
    third = fresh(
        """
        dev = get_device("vulkan")
        assert dev.cache_loaded == 0
        load("saxpy", "vulkan", dev)
        dev.close()
        """,
        tmp_path,
    )
    assert third.returncode == 0, third.stderr
    assert third.stderr.count("PipelineCacheWarning") == 1
    assert (
        f"ignoring the pipeline cache {path}: blake3 mismatch (corrupt); it will be replaced"
        in third.stderr
    )
    fourth = fresh('print(get_device("vulkan").cache_loaded)', tmp_path)
    assert fourth.returncode == 0 and int(fourth.stdout) > 0 and fourth.stderr == ""
    off = fresh(
        """
        dev = get_device("vulkan")
        load("saxpy", "vulkan", dev)
        dev.close()
        print(dev.cache_file)
        """,
        tmp_path,
        VYRE_PIPELINE_CACHE="off",
    )
    assert off.returncode == 0 and off.stdout.strip() == "None"


def test_close_saves_and_ends_the_device(tmp_path):
    from adapters import require_adapter

    require_adapter("vulkan")
    from vyre_build.runtime import get_device

    dev = get_device("vulkan", pipeline_cache=tmp_path / "plc")
    k = load("iota", "vulkan", dev)
    buf = dev.buffer(8, "u32")
    k(out=buf, start=1, step=1)
    dev.close()
    dev.close()  # twice is fine
    assert os.listdir(tmp_path / "plc")
    for use in (
        lambda: buf.read(),
        lambda: dev.buffer(4, "f32"),
        lambda: k(out=4, start=0, step=1),
    ):
        with pytest.raises(
            DeviceError, match="the device was closed; get a new one with get_device"
        ):
            use()
    buf.release()  # nothing left to free: no error
    again = get_device("vulkan", pipeline_cache=tmp_path / "plc")
    assert again is not dev and repr(dev).endswith("(closed)>")
    np.testing.assert_array_equal(
        load("iota", "vulkan", again)(out=3, start=2, step=2).array("out"), [2, 4, 6]
    )
    again.close()


def test_bundle_warm_command(tmp_path):
    from adapters import require_adapter

    require_adapter("vulkan")
    path = bundle(tmp_path / "w.vyrebundle")

    def warm(*flags):
        done = python(
            "-m",
            "vyre_build",
            "bundle",
            "warm",
            str(path),
            "--backend",
            "vulkan",
            *flags,
            env={"VYRE_PIPELINE_CACHE": str(tmp_path / "plc")},
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = json.loads(warm("--json"))
    assert first["kernels"] == ["iota", "saxpy"] and first["created"] == 2
    assert first["skipped"] == {} and first["saved"] is True and first["cache_loaded"] == 0
    assert first["unpicked"] == {}  # no tunable, no library kernel: nothing to leave out
    assert first["pipeline_cache"].startswith(str(tmp_path / "plc" / "vk-"))
    second = json.loads(warm("--json"))  # a later process starts from the saved cache
    assert second["created"] == 2 and second["cache_loaded"] > 0
    text = warm()
    name = get_device("vulkan").name
    assert f"2 kernel(s) ready on vulkan: {name}, 2 pipeline(s) created in" in text
    assert f"pipeline cache {first['pipeline_cache']}" in text
    assert "left out" not in text
    every = json.loads(warm("--json", "--all"))
    assert every["kernels"] == ["iota", "saxpy"] and every["unpicked"] == {}


@pytest.mark.backends("wgpu", "vulkan")
def test_the_typed_user_script_runs(backend, tmp_path):
    path = bundle(tmp_path / "user.vyrebundle")
    done = python("tests/typing/user_script.py", str(path), backend)
    assert done.returncode == 0, done.stdout + done.stderr
    name = get_device(backend).name
    assert done.stdout == f"2 kernels, 2 pipelines, {name}: ok\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_cache_file_that_is_a_fifo_or_a_device_does_not_hang_get_device(tmp_path, kind):
    from adapters import require_adapter

    require_adapter("vulkan")
    first = fresh('print(get_device("vulkan").cache_file.path)', tmp_path)  # saves nothing
    assert first.returncode == 0, first.stderr
    path = first.stdout.strip()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)  # get_device blocked in open() until a writer came
    else:
        os.symlink(kind, path)  # read without bound until MemoryError
    second = fresh(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        dev = get_device("vulkan")
        print(dev.cache_loaded)
        load("saxpy", "vulkan", dev)
        dev.close()
        """,
        tmp_path,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    what = "a FIFO" if kind == "fifo" else "a character device"
    assert second.stdout == "0\n" and second.stderr.count("PipelineCacheWarning") == 1
    assert (
        f"ignoring the pipeline cache {path}: it is {what}, not a regular file; it will be "
        "replaced" in second.stderr
    )
    assert os.path.isfile(path) and not os.path.islink(path)  # replaced by the save
    third = fresh('print(get_device("vulkan").cache_loaded)', tmp_path)
    assert third.returncode == 0 and int(third.stdout) > 0 and third.stderr == ""
