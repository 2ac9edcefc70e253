"""The compiler reads only regular files under the kernel tree's root: links and imports
that lead outside, FIFOs, devices, sockets and directories are refused before any read,
with a clear error; nothing of a file outside the tree reaches any output. Checked in
process, and through the CLI and scons under an audit hook (no file opened outside the
tree, no process started)."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MARKER = "SECRET-MARKER-7f3a"
GOOD = 'from vyre_build.lang import *\n@kernel\ndef good(o: Buffer[u32, "w"]):\n    o[0] = 1\n'
HELPER = "from vyre_build.lang import *\ndef g(x: u32) -> u32:\n    return x\n"
USES = (
    'from vyre_build.lang import *\n{imp}\n@kernel\ndef k(o: Buffer[u32, "w"]):\n    o[0] = g(1)\n'
)
OUTSIDE_FIX = (
    "the compiler reads only files under the tree's root (--root, or the kernel directory "
    "given to the SCons tool)"
)
IMPORT_FIX = (
    "imports may only name kernel files inside the tree's root (--root, or the kernel "
    "directory given to the SCons tool)"
)
SPECIAL_FIX = "kernel files and variants YAMLs must be regular files"


@contextlib.contextmanager
def no_hang(seconds=20):
    """Fail (not hang) if the body blocks, e.g. on opening a FIFO."""

    def expired(*_):
        raise AssertionError(f"blocked for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def hostile_tree(base):
    """base/proj/kernels (the tree) beside base/outside; returns (proj, kernels, outside)."""
    proj, outside = base / "proj", base / "outside"
    kernels = proj / "kernels"
    kernels.mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.py").write_text(f"{MARKER} root:x:0:0\nx = (\n")
    (outside / "lib.py").write_text(HELPER + f"# {MARKER}\n")
    (outside / "variants.yaml").write_text(f"good.py:\n  good:\n    {MARKER}: {{T: f32}}\n")
    (proj / "helper.py").write_text(HELPER)
    (kernels / "good.py").write_text(GOOD)
    (kernels / "passwd.py").symlink_to(outside / "secret.py")
    (kernels / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(kernels / "fifo.py")
    (kernels / "lib.py").symlink_to(outside / "lib.py")
    (kernels / "useslib.py").write_text(USES.format(imp="from .lib import g"))
    (kernels / "updots.py").write_text(USES.format(imp="from ...outside.lib import g"))
    (kernels / "upone.py").write_text(USES.format(imp="from ..helper import g"))
    second = proj / "kernels2"  # a tree whose variants YAML is a link out of it
    second.mkdir()
    (second / "good.py").write_text(GOOD)
    (second / "variants.yaml").symlink_to(outside / "variants.yaml")
    return proj, kernels, outside


def first_line(exc) -> str:
    return str(exc).splitlines()[0]


def refused(path, root=None, display="k.py"):
    with no_hang(), pytest.raises(KernelError) as info:
        compile_file(str(path), root=None if root is None else str(root), display_path=display)
    assert MARKER not in str(info.value)
    return info.value


def test_a_link_out_of_the_tree_is_refused_unread(tmp_path):
    _, kernels, outside = hostile_tree(tmp_path)
    err = refused(kernels / "passwd.py", kernels, "passwd.py")
    assert first_line(err) == (
        f"passwd.py:1:1: error: passwd.py resolves to {outside}/secret.py, outside the "
        f"kernel tree {kernels}"
    )
    assert err.fix == OUTSIDE_FIX


def test_a_link_to_a_device_is_refused_unread(tmp_path):
    _, kernels, _ = hostile_tree(tmp_path)
    err = refused(kernels / "zero.py", kernels, "zero.py")
    assert first_line(err) == (
        f"zero.py:1:1: error: zero.py resolves to /dev/zero, outside the kernel tree {kernels}"
    )


@pytest.mark.parametrize("kind", ["fifo", "device", "socket", "directory"])
def test_special_files_inside_the_tree_are_refused_without_blocking(tmp_path, kind):
    root = tmp_path
    if kind == "fifo":
        path = tmp_path / "k.py"
        os.mkfifo(path)
        what = "a FIFO"
    elif kind == "device":
        root, path, what = "/dev", "/dev/zero", "a character device"
    elif kind == "socket":
        path = tmp_path / "k.py"
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        what = "a socket"
    else:
        path = tmp_path / "k.py"
        path.mkdir()
        what = "a directory"
    err = refused(path, root)
    assert first_line(err) == f"k.py:1:1: error: k.py is {what}, not a kernel source"
    assert err.fix == SPECIAL_FIX
    if kind == "socket":
        sock.close()


def test_broken_and_looping_links_are_clear_errors(tmp_path):
    (tmp_path / "k.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    assert first_line(refused(tmp_path / "k.py")) == (
        "k.py:1:1: error: cannot read k.py: No such file or directory"
    )
    assert first_line(refused(tmp_path / "loop.py")) == (
        "k.py:1:1: error: cannot read k.py: too many levels of symbolic links "
        "(or a link where a file was expected)"
    )


def test_a_link_inside_the_tree_is_followed(tmp_path):
    (tmp_path / "real.py").write_text(GOOD)
    (tmp_path / "k.py").symlink_to(tmp_path / "real.py")
    assert [k.name for k in compile_file(str(tmp_path / "k.py"))] == ["good"]


@pytest.mark.parametrize(
    "name, message",
    [
        (
            "useslib",
            "useslib.py:2:1: error: lib.py resolves to {outside}/lib.py, outside the "
            "kernel tree {kernels}",
        ),
        (
            "updots",
            "updots.py:2:1: error: module 'outside.lib' would be {outside}/lib.py, "
            "outside the kernel tree {kernels}",
        ),
        (
            "upone",
            "upone.py:2:1: error: module 'helper' would be {proj}/helper.py, outside "
            "the kernel tree {kernels}",
        ),
    ],
)
def test_imports_leading_out_of_the_tree_are_refused(tmp_path, name, message):
    proj, kernels, outside = hostile_tree(tmp_path)
    err = refused(kernels / f"{name}.py", kernels, f"{name}.py")
    assert first_line(err) == message.format(outside=outside, kernels=kernels, proj=proj)


def test_a_wider_root_admits_the_import_it_contains(tmp_path):
    proj, kernels, _ = hostile_tree(tmp_path)
    (k,) = compile_file(str(kernels / "upone.py"), root=str(proj), targets=("kdesc",))
    assert k.name == "k"


def test_a_variants_yaml_out_of_the_tree_is_refused(tmp_path):
    proj, _, outside = hostile_tree(tmp_path)
    err = refused(proj / "kernels2" / "good.py", proj / "kernels2", "good.py")
    assert first_line(err) == (
        f"variants.yaml:1:1: error: variants.yaml resolves to {outside}/variants.yaml, "
        f"outside the kernel tree {proj / 'kernels2'}"
    )


def audited(tmp_path, mode, args, cwd):
    """Run audit_run.py; (returncode, stdout + stderr, files opened outside the allowed
    places, processes started)."""
    log = tmp_path / f"audit-{mode}.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "audit_run.py"), str(log), mode, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "VYRE_CACHE_DIR": str(tmp_path / "proj" / "cache")},
    )
    record = json.loads(log.read_text())
    # Python's own modules and vyre_build's may be read; otherwise only the tree itself.
    allowed = [
        os.path.realpath(p)
        for p in (sys.prefix, sys.base_prefix, os.path.join(REPO, "vyre_build"), tmp_path / "proj")
    ] + [os.path.realpath(log), os.path.realpath(tmp_path / "out")]

    def ok(p):
        real = os.path.realpath(p)
        return any(real == a or real.startswith(a + os.sep) for a in allowed)

    outside = sorted({p for p in record["opened"] if not ok(p)})
    return proc.returncode, proc.stdout + proc.stderr, outside, record["started"]


CLI_CASES = {
    "passwd": "passwd.py:1:1: error: passwd.py resolves to {outside}/secret.py, outside "
    "the kernel tree {kernels}",
    "zero": "zero.py:1:1: error: zero.py resolves to /dev/zero, outside the kernel tree {kernels}",
    "fifo": "fifo.py:1:1: error: fifo.py is a FIFO, not a kernel source",
    "useslib": "useslib.py:2:1: error: lib.py resolves to {outside}/lib.py, outside the "
    "kernel tree {kernels}",
    "updots": "updots.py:2:1: error: module 'outside.lib' would be {outside}/lib.py, "
    "outside the kernel tree {kernels}",
    "upone": "upone.py:2:1: error: module 'helper' would be {proj}/helper.py, outside the "
    "kernel tree {kernels}",
}


@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_cli_on_a_hostile_tree_reads_nothing_outside_and_starts_nothing(tmp_path, name):
    proj, kernels, outside = hostile_tree(tmp_path)
    args = ["compile", f"{name}.py", "--root", str(kernels), "-o", str(tmp_path / "out")]
    rc, out, opened, started = audited(tmp_path, "cli", args, kernels)
    assert rc == 1 and "Traceback" not in out, out
    assert out.splitlines()[0] == CLI_CASES[name].format(
        outside=outside, kernels=kernels, proj=proj
    )
    assert MARKER not in out
    assert opened == [] and started == []


def test_cli_default_root_is_the_project_and_refuses_what_leaves_it(tmp_path):
    proj, kernels, outside = hostile_tree(tmp_path)
    (proj / "SConstruct").write_text("")
    out_dir = tmp_path / "out"
    # The project root (where the SConstruct is) admits ../helper.py; the outside dir is not.
    rc, out, opened, started = audited(
        tmp_path, "cli", ["compile", "kernels/upone.py", "-o", str(out_dir)], proj
    )
    assert (rc, out, opened, started) == (0, "", [], [])
    assert sorted(os.listdir(out_dir)) == ["k.kdesc", "k.meta.json", "k.spv", "k.wgsl"]
    rc, out, opened, started = audited(
        tmp_path, "cli", ["compile", "kernels/updots.py", "-o", str(out_dir)], proj
    )
    assert rc == 1 and opened == [] and started == []
    assert out.splitlines()[0] == (
        f"kernels/updots.py:2:1: error: module 'outside.lib' would be {outside}/lib.py, "
        f"outside the kernel tree {proj}"
    )


SCONSTRUCT = """\
DefaultEnvironment(tools=[])  # SCons's default tools would run gcc --version
import vyre_build.build.scons_tool
env = Environment(tools=["vyre"], toolpath=[vyre_build.build.scons_tool.toolpath()])
VariantDir("build", "kernels", duplicate=0)
VariantDir("build2", "kernels2", duplicate=0)
env.VyreBundle("dist/kernels.vyrebundle", env.VyreKernelDir("build") + env.VyreKernelDir("build2"))
"""


@pytest.mark.scons
def test_scons_on_a_hostile_tree_reads_nothing_outside_and_starts_nothing(tmp_path):
    proj, kernels, outside = hostile_tree(tmp_path)
    (proj / "SConstruct").write_text(SCONSTRUCT)
    rc, out, opened, started = audited(tmp_path, "scons", ["-Q", "-k"], proj)
    assert rc != 0 and "Traceback" not in out, out
    assert MARKER not in out
    assert opened == [] and started == []
    for message in (
        f"kernels/passwd.py:1:1: error: kernels/passwd.py resolves to {outside}/secret.py, "
        f"outside the kernel tree {kernels}",
        f"kernels/zero.py:1:1: error: kernels/zero.py resolves to /dev/zero, outside the "
        f"kernel tree {kernels}",
        "kernels/fifo.py:1:1: error: kernels/fifo.py is a FIFO, not a kernel source",
        f"kernels/useslib.py:2:1: error: kernels/lib.py resolves to {outside}/lib.py, outside "
        f"the kernel tree {kernels}",
        f"kernels/updots.py:2:1: error: module 'outside.lib' would be {outside}/lib.py, "
        f"outside the kernel tree {kernels}",
        f"kernels/upone.py:2:1: error: module 'helper' would be {proj}/helper.py, outside the "
        f"kernel tree {kernels}",
        f"kernels2/variants.yaml:1:1: error: kernels2/variants.yaml resolves to "
        f"{outside}/variants.yaml, outside the kernel tree {proj / 'kernels2'}",
    ):
        assert message in out, out
    assert sorted(os.listdir(proj / "build")) == [
        "good.kdesc",
        "good.meta.json",
        "good.spv",
        "good.wgsl",
    ]
    for d, _, files in os.walk(proj):
        for f in files:
            path = os.path.join(d, f)
            if not os.path.islink(path) and os.path.isfile(path):
                with open(path, "rb") as fh:
                    assert MARKER.encode() not in fh.read(), path
