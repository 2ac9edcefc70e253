"""`@kernel(shared_bytes=N)`: a kernel declares more shared memory than the portable 16 KiB.

The frontend caps a kernel's shared arrays at the declared value (else 16384), the metadata
records a declaration (and only then: every other record and artifact is unchanged), the
metadata checker reads it (absent: 16384) and the runtime refuses the kernel on a device
with less. The runs on lavapipe are in tests/gpu/test_shared_bytes_dispatch.py.
"""

from __future__ import annotations

import pytest

from test_runtime_api import SAXPY, kernel

from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.compiler import compile_file
from vyre_build.core.errors import BundleError, DeviceError, KernelError

TILES = """\
from vyre_build.lang import *


@kernel(workgroup_size=64{option})
def tiles(x: Buffer[f32], out: Buffer[f32, "w"]):
    a = shared(f32, {n})
    i = local_id().x
    a[i] = x[global_id().x]
    barrier()
    out[global_id().x] = a[63 - i]
"""


def compiled(tmp_path, option: str, n: int = 64, name: str = "k.py", source: str = TILES):
    path = tmp_path / name
    path.write_text(source.format(option=option, n=n))
    return compile_file(str(path), targets=("wgsl", "spirv", "kdesc"), display_path=name)


def test_a_declaration_is_recorded_and_changes_no_artifact(tmp_path):
    (plain,) = compiled(tmp_path, "", name="plain.py")
    (big,) = compiled(tmp_path, ", shared_bytes=49152", name="big.py")
    assert big.meta["shared_bytes"] == 49152 and "shared_bytes" not in plain.meta
    assert {k: v for k, v in big.meta.items() if k not in ("shared_bytes", "provenance")} == {
        k: v for k, v in plain.meta.items() if k != "provenance"
    }
    assert (big.wgsl, big.spirv, big.kdesc) == (plain.wgsl, plain.spirv, plain.kdesc)
    assert check_metadata(big.meta, "kernel 'tiles'").shared_bytes == 49152
    assert check_metadata(plain.meta, "kernel 'tiles'").shared_bytes == 16384


def test_the_declared_value_is_the_cap(tmp_path):
    (k,) = compiled(tmp_path, ", shared_bytes=SMEM", n=12288, source="SMEM = 48 * 1024\n" + TILES)
    assert k.meta["shared_bytes"] == 49152  # 12288 f32 fill it exactly
    with pytest.raises(KernelError) as info:
        compiled(tmp_path, ", shared_bytes=32768", n=12288)
    err = info.value
    assert (err.line, err.col) == (6, 21)
    assert err.message == (
        "shared memory limit exceeded: 49152 bytes, more than the 32768 bytes of workgroup "
        "memory the kernel declares (shared_bytes)"
    )
    assert err.fix == "use fewer or smaller elements, or declare more (up to 1048576)"


def test_without_a_declaration_the_portable_cap_says_how_to_declare_more(tmp_path):
    with pytest.raises(KernelError) as info:
        compiled(tmp_path, "", n=4097)
    err = info.value
    assert (err.line, err.col) == (6, 21)
    assert err.message == (
        "shared memory limit exceeded: 16388 bytes, more than the 16384 bytes of workgroup "
        "memory (all shared arrays of a kernel; the portable default)"
    )
    assert err.fix == (
        "use fewer or smaller elements, or declare more with @kernel(shared_bytes=17408) "
        "(the runtime then refuses the kernel on a device with less)"
    )


def test_a_variant_may_set_it(tmp_path):
    option = (
        ', shared_bytes=S, variants={"small": {"S": 16384, "N": 64}, '
        '"big": {"S": 65536, "N": 16384}}'
    )
    big, small = compiled(tmp_path, option, n="N")  # in name order
    assert (small.meta["id"], small.meta["shared_bytes"]) == ("tiles.small", 16384)
    assert (big.meta["id"], big.meta["shared_bytes"]) == ("tiles.big", 65536)
    with pytest.raises(KernelError) as info:  # the cap is each variant's own
        compiled(tmp_path, option.replace('"N": 64', '"N": 8192'), n="N")
    assert info.value.message == (
        "shared memory limit exceeded: 32768 bytes, more than the 16384 bytes of workgroup "
        "memory the kernel declares (shared_bytes)"
    )


@pytest.mark.parametrize(
    ("option", "col", "message"),
    [
        (
            ", shared_bytes=1024",
            41,
            "shared_bytes must be an integer from 16384 (the portable default) to 1048576, "
            "got 1024",
        ),
        (
            ", shared_bytes=1 << 21",
            41,
            "shared_bytes must be an integer from 16384 (the portable default) to 1048576, "
            "got 2097152",
        ),
        (
            ", shared_bytes=32768.0",
            41,
            "shared_bytes must be an integer from 16384 (the portable default) to 1048576, "
            "got 32768.0 (f32)",
        ),
        (
            ", shared_bytes=SMEM",
            41,
            "shared_bytes names 'SMEM', which is neither a module constant nor a parameter "
            "of this variant",
        ),
    ],
)
def test_bad_declarations_are_kernel_errors(tmp_path, option, col, message):
    with pytest.raises(KernelError) as info:
        compiled(tmp_path, option)
    err = info.value
    assert (err.line, err.col, err.message) == (4, col, message)
    assert "shared_bytes=49152" in err.fix


def test_the_metadata_checker_bounds_it():
    for bad in (1024, 1 << 21, "49152", True):
        with pytest.raises(BundleError) as info:
            check_metadata({**SAXPY, "shared_bytes": bad}, "kernel 'saxpy'")
        assert str(info.value) == (
            "kernel 'saxpy': metadata field 'shared_bytes' must be an integer in "
            f"16384..1048576, got {bad!r}"
        )


def test_the_runtime_refuses_it_on_a_device_with_less():
    assert kernel({**SAXPY, "shared_bytes": 49152}).meta.shared_bytes == 49152  # it has 49152
    with pytest.raises(DeviceError) as info:
        kernel({**SAXPY, "shared_bytes": 49156})
    assert str(info.value) == (
        "Kernel 'saxpy' declares 49156 bytes of shared memory (shared_bytes), more than the "
        "vulkan device Fake GPU [discrete GPU, Vulkan] allows (49152)"
    )
