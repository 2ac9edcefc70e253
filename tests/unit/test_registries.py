"""Adding a compile target or a runtime backend is one registry line.

A toy target (a text listing of the kernel descriptor, emitted from the descriptor alone)
registered for a test flows through the compiler, the artifact names, the build step, the
refusals and `vyre-build compile` with no other edit; a toy backend (the cpu reference
under another name) flows through get_device, load_kernel, bundles and the CLI's
choices. The CLI's --target and --backend choices are the registries' names.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import pytest

from vyre_build.core import artifacts
from vyre_build.core.backends import BACKENDS, Backend
from vyre_build.build.step import compile_outputs
from vyre_build.bundle import write_bundle
from vyre_build.cli import build_parser
from vyre_build.cli import main as cli_main
from vyre_build.compiler import compile_file, skipped_targets
from vyre_build.descriptor import decode, encode
from vyre_build.core.errors import DispatchError, VyreError
from vyre_build import runtime
from vyre_build.runtime.backends import cpu as cpu_backend
from vyre_build.runtime.backends.cpu import CpuDevice
from vyre_build.core.targets import COOPERATIVE_MATRIX, TARGETS, Target

HEAD = "from vyre_build.lang import *\n\n"
SAXPY = HEAD + (
    "@kernel(workgroup_size=64)\n"
    'def saxpy(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32):\n'
    "    i = global_id().x\n"
    "    if i < len(y):\n"
    "        y[i] = a * x[i] + y[i]\n"
)
# Orders memory (no WGSL) in one kernel, uses cooperative matrices in another.
MIXED = HEAD + (
    "@kernel(workgroup_size=64)\n"
    'def ordered(out: Buffer[u32, "rw"]):\n'
    "    i = global_id().x\n"
    '    atomic_store(out, i, 7, order="release")\n'
    "\n"
    "@kernel(workgroup_size=32, grid=32)\n"
    'def coop(a: Buffer[f16], b: Buffer[f16], c: Buffer[f32, "rw"]):\n'
    "    fa = coop_load_a(a, 0, 16, 16, 16)\n"
    "    fb = coop_load_b(b, 0, 16, 16, 16)\n"
    "    acc = coop_mma(fa, fb, coop_fill(f32, 16, 16, 0.0))\n"
    "    coop_store(acc, c, 0, 16)\n"
)
ORDERED_WGSL = (
    "needs memory ordering (an acquire/release atomic or a fence), which WGSL's relaxed "
    "atomics cannot express: SPIR-V only"
)


def listing(desc, info, options, entries) -> bytes:
    """The toy target: the descriptor's id, slots and top-level op kinds, one a line
    (upper-cased with the toy option on)."""
    lines = [f"kernel {desc.id}"]
    lines += [f"slot {s.slot} {s.name} {s.visibility}" for s in desc.slots]
    lines += [f"op {op.kind.name}" for op in desc.body.ops]
    text = "\n".join(lines) + "\n"
    return (text.upper() if options.get("toy_upper") else text).encode()


TOY = Target(
    "toy",
    ".toy.txt",
    listing,
    offers=frozenset({COOPERATIVE_MATRIX}),
    options={"toy_upper": bool},
    title="Toy",
)


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_registered_target_is_compiled_named_and_built(tmp_path):
    path = write(tmp_path, "saxpy.py", SAXPY)
    with TARGETS.added(TOY):
        assert "toy" in artifacts.TARGETS and artifacts.TARGET_SUFFIXES["toy"] == ".toy.txt"
        assert artifacts.normalize_targets("spirv,toy") == ("spirv", "toy")
        assert artifacts.output_suffixes(("toy", "wgsl")) == [".wgsl", ".toy.txt", ".meta.json"]
        assert artifacts.split_output_name("saxpy.toy.txt") == ("saxpy", ".toy.txt")
        (k,) = compile_file(path, targets=("toy",))
        expected = listing(k.descriptor, None, {}, ())
        assert expected.startswith(b"kernel saxpy\nslot ") and b"\nop " in expected
        assert k.artifacts[".toy.txt"] == expected
        assert sorted(k.artifacts) == [".kdesc", ".meta.json", ".toy.txt"]  # no .wgsl, .spv
        assert k.wgsl is None and k.spirv is None and decode(k.kdesc) == k.descriptor
        # the target's own option is a compiler option the emitter reads
        (up,) = compile_file(path, targets=("toy",), options={"toy_upper": True})
        assert up.artifacts[".toy.txt"] == expected.upper()
        with pytest.raises(VyreError, match=r"options: spirv_opt \(bool\), toy_upper \(bool\), "):
            compile_file(path, targets=("toy",), options={"toy_upper": 1})
        # the build step: one file per stem and target, named by the registry
        outputs = compile_outputs(path, ("toy", "kdesc"), {})
        assert sorted(outputs) == ["saxpy.kdesc", "saxpy.meta.json", "saxpy.toy.txt"]
        assert outputs["saxpy.toy.txt"] == expected
        assert outputs["saxpy.kdesc"] == encode(k.descriptor)
    # gone with the `with` block
    assert "toy" not in artifacts.TARGETS
    with pytest.raises(artifacts.TargetError, match="unknown target 'toy'; choose from wgsl, "):
        artifacts.normalize_targets(("toy",))
    with pytest.raises(VyreError, match="unknown target 'toy'"):
        compile_file(path, targets=("toy",))


def test_refusal_is_the_features_the_kernel_needs_that_the_target_lacks(tmp_path):
    path = write(tmp_path, "mixed.py", MIXED)
    # without the toy: what every build shows today
    plain = {k.stem: k for k in compile_file(path)}
    assert plain["ordered"].meta["skipped"] == {"wgsl": ORDERED_WGSL}
    assert plain["coop"].meta["skipped"] == {"wgsl": "needs cooperative matrices: SPIR-V only"}
    with TARGETS.added(TOY):
        made = {k.stem: k for k in compile_file(path, targets=("toy", "wgsl", "spirv"))}
        # the toy lacks memory ordering: refused like WGSL, without WGSL's note
        assert made["ordered"].meta["skipped"] == {
            "toy": "needs memory ordering (an acquire/release atomic or a fence): SPIR-V only",
            "wgsl": ORDERED_WGSL,
        }
        assert sorted(made["ordered"].artifacts) == [".kdesc", ".meta.json", ".spv"]
        # the toy offers cooperative matrices: made, and WGSL's refusal names it
        assert made["coop"].meta["skipped"] == {
            "wgsl": "needs cooperative matrices: SPIR-V or Toy only"
        }
        assert made["coop"].artifacts[".toy.txt"].startswith(b"kernel coop\n")
        # the scan decides the same from parsing alone, for every registered target
        assert skipped_targets(path) == {k: m.meta["skipped"] for k, m in made.items()}
        # a target not asked for refuses nothing
        (only,) = compile_file(path, targets=("spirv",), kernel="ordered")
        assert "skipped" not in only.meta


def test_the_cli_compiles_a_registered_target(tmp_path, capsys):
    path = write(tmp_path, "saxpy.py", SAXPY)
    with TARGETS.added(TOY):
        out = tmp_path / "out"
        assert cli_main(["compile", path, "--target", "toy", "-o", str(out)]) == 0
        assert sorted(os.listdir(out)) == ["saxpy.meta.json", "saxpy.toy.txt"]
        (k,) = compile_file(path, targets=("toy",))
        assert (out / "saxpy.toy.txt").read_bytes() == k.artifacts[".toy.txt"]


def choices(parser: argparse.ArgumentParser, *path: str, flag: str) -> tuple:
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    (action,) = [a for a in parser._actions if flag in a.option_strings]
    return tuple(action.choices)


def test_cli_choices_are_the_registries():
    names = ("wgpu", "vulkan", "cpu")
    assert tuple(BACKENDS) == names and tuple(TARGETS) == ("wgsl", "spirv", "kdesc")
    parser = build_parser()
    assert choices(parser, "compile", flag="--target") == (*TARGETS, "all")
    for command in (("run",), ("tune",), ("devices",), ("bundle", "show"), ("bundle", "warm")):
        assert choices(parser, *command, flag="--backend") == names, command
    toy = Backend("toy", "kdesc", CpuDevice, gpu=False)
    with TARGETS.added(TOY), BACKENDS.added(toy):
        parser = build_parser()
        assert choices(parser, "compile", flag="--target") == (*TARGETS, "all")
        assert "toy" in choices(parser, "compile", flag="--target")
        assert choices(parser, "run", flag="--backend") == (*names, "toy")


class ToyDevice(CpuDevice):
    """The reference under another backend name: what a new backend's Device is."""

    backend = "toy"


# A backend's module gives its adapters and their profiles (Backend.module): this one's
# are the reference's.
list_adapters = cpu_backend.list_adapters
adapter_profiles = cpu_backend.adapter_profiles
TOY_BACKEND = Backend("toy", "kdesc", ToyDevice, gpu=False, needs="nothing")


def test_a_registered_backend_runs_kernels_and_bundles(tmp_path):
    path = write(tmp_path, "saxpy.py", SAXPY)
    (k,) = compile_file(path, targets=("kdesc",))
    bundle = tmp_path / "k.vyrebundle"
    write_bundle(bundle, [{"meta": k.meta, "artifacts": {".kdesc": k.kdesc}}])
    x = np.arange(100, dtype=np.float32)
    y = np.full(100, 3.0, np.float32)
    with BACKENDS.added(TOY_BACKEND):
        dev = runtime.get_device("toy")
        assert isinstance(dev, ToyDevice) and runtime.get_device("toy") is dev
        assert BACKENDS["toy"].suffix == ".kdesc"
        kernel = runtime.load_kernel(k.meta, kdesc=k.kdesc, backend="toy")
        got = kernel(x=x, y=y.copy(), a=2.0).array("y")
        np.testing.assert_array_equal(got, 2.0 * x + 3.0)
        with pytest.raises(DispatchError, match="the toy backend needs kdesc="):
            runtime.load_kernel(k.meta, wgsl="x", backend="toy")
        with runtime.open_bundle(bundle, backend="toy", trusted_keys=False) as b:
            assert b.device is dev
            got = b["saxpy"](x=x, y=y.copy(), a=-1.0).array("y")
        np.testing.assert_array_equal(got, -x + 3.0)
        assert runtime.list_adapters("toy") == ["vyre reference (CPU)"]
        dev.close()
    with pytest.raises(VyreError, match="unknown backend 'toy'; choose one of wgpu, vulkan, cpu"):
        runtime.get_device("toy")


def test_the_devices_command_lists_a_registered_backend(capsys):
    with BACKENDS.added(TOY_BACKEND):
        assert cli_main(["devices", "--backend", "toy", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["backends"]
    assert list(report) == ["toy"] and len(report["toy"]["adapters"]) == 1


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="target 'wgsl' is registered already"):
        TARGETS.register(Target("wgsl", ".w", listing))
    with pytest.raises(ValueError, match="backend 'cpu' is registered already"):
        BACKENDS.register(Backend("cpu", "kdesc", CpuDevice))
    assert sys.modules[ToyDevice.__module__] is sys.modules[__name__]


def test_library_policies_read_backend_capabilities_not_names():
    # The reference under another name: the library's choices follow what its Backend
    # says (forward_progress, gpu), not the name "cpu".
    from vyre_build import library

    look = (library.LOOK_BACK_KERNEL.format(t="i32"),)
    two = ("lib_scan_sums.i32", "lib_scan_block.i32")
    for progress, want in ((True, look), (False, two)):
        toy = Backend("toy", "kdesc", ToyDevice, gpu=False, forward_progress=progress)
        with BACKENDS.added(toy):
            dev = runtime.get_device("toy")
            try:
                assert library.scan_kernels(dev, "i32") == want
                assert library.reduce_kernel(dev, "sum", "f32") == "lib_reduce_once.sum_f32"
            finally:
                dev.close()
