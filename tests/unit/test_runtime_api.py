"""The runtime's Python surface with no GPU (a Device subclass with no backend behind it):
Bundle as a read-only Mapping, Kernel repr/signature/help, keyword-only calls, the
feature vocabulary, device-feature refusals, and dispatch splitting."""

from __future__ import annotations

import inspect
import pydoc

import numpy as np
import pytest

from runtime_fakes import SAXPY as FLAT

from vyre_build.bundle import read_bundle, write_bundle
from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.core.errors import BundleError, DeviceError, DispatchError
from vyre_build.core.features import (
    FEATURES,
    cooperative_matrix,
    is_feature,
    parse_cooperative_matrix,
)
from vyre_build.runtime import (
    Bundle,
    CallResult,
    CooperativeMatrixType,
    Device,
    DeviceProfile,
    Kernel,
)
from vyre_build.runtime.calls import workgroup_counts
from vyre_build.runtime.plan import split_dispatch
from vyre_build.runtime.kernel import WGSL_BASE, split_refusal_of_code, wgsl_at_base
from vyre_build.runtime.profile import features_of, missing_features

# runtime_fakes' saxpy with y as vec4f, so that the binding table shows a vector row.
SAXPY = {
    **FLAT,
    "bindings": [
        FLAT["bindings"][0],
        {**FLAT["bindings"][1], "dtype": "vec4f"},
        FLAT["bindings"][2],
    ],
}


def profile(features=(), wg=(1024, 1024, 64), invocations=1024) -> DeviceProfile:
    return DeviceProfile(
        backend="vulkan",
        adapter="Fake GPU [discrete GPU, Vulkan]",
        device_type="discrete GPU",
        vendor_id=0x10DE,
        device_id=0x2335,
        driver="fake 1.0",
        driver_version=1,
        api_version="1.3.0",
        subgroup_size=32,
        subgroup_size_range=(32, 32),
        subgroup_operations=("subgroup_basic",),
        f16=True,
        storage_16bit=True,
        bf16=False,
        cooperative_matrices=(),
        max_workgroup_size=wg,
        max_workgroup_invocations=invocations,
        max_workgroup_count=(2**31 - 1, 65535, 65535),
        max_shared_memory=49152,
        max_storage_buffer_binding=2**32 - 1,
        features=frozenset(features),
    )


class Fake(Device):
    """A Device with no backend: enough for loading kernels, never for running them."""

    backend, name = "vulkan", "Fake GPU [discrete GPU, Vulkan]"

    def __init__(self, features=("subgroup_basic", "f16")):
        super().__init__()
        self.profile = profile(features)
        self.pipelines_made = 0

    def _pipeline(self, meta, code, base, entry):
        self.pipelines_made += 1
        return ("pipeline", meta.id, base, entry)


def kernel(meta=SAXPY, device=None) -> Kernel:
    return Kernel(
        device or Fake(), check_metadata(meta, f"kernel {meta['id']!r}"), b"\x03\x02\x23\x07"
    )


def make_bundle(tmp_path, metas) -> str:
    path = tmp_path / "b.vyrebundle"
    write_bundle(
        path, [{"meta": m, "artifacts": {".spv": b"\x03\x02\x23\x07" + bytes(16)}} for m in metas]
    )
    return str(path)


# --- Bundle as a Mapping ------------------------------------------------------------


def test_bundle_is_a_read_only_mapping_of_ids_to_kernels(tmp_path):
    add_f32 = {**SAXPY, "name": "add", "variant": "f32", "id": "add.f32"}
    path = make_bundle(tmp_path, [SAXPY, add_f32])
    dev = Fake()
    made = []
    bundle = Bundle(read_bundle(path), lambda: made.append(1) or dev)
    assert repr(bundle) == f"<Bundle {path!r}: 2 kernels, on a device made on first use>"
    assert list(bundle) == ["add.f32", "saxpy"] and len(bundle) == 2
    assert list(bundle.keys()) == ["add.f32", "saxpy"]
    assert "saxpy" in bundle and "add" not in bundle and 5 not in bundle
    assert made == []  # listing made no device
    assert bundle.get("nope") is None and bundle.get(5) is None
    assert isinstance(bundle["saxpy"], Kernel) and bundle["saxpy"] is bundle.kernel("saxpy")
    assert bundle.kernel("add", "f32") is bundle["add.f32"]
    assert [k.id for k in bundle.values()] == ["add.f32", "saxpy"]
    assert [(i, k.id) for i, k in bundle.items()] == [("add.f32", "add.f32"), ("saxpy", "saxpy")]
    assert dev.pipelines_made == 0  # loading a kernel makes no pipeline
    assert repr(bundle).endswith(f"on vulkan: {dev.name}>")
    with pytest.raises(KeyError) as info:
        bundle["add"]
    assert isinstance(info.value, BundleError)
    assert (
        str(info.value)
        == f"{path}: no kernel 'add' in the bundle; it has variants f32: ask for one"
    )
    with pytest.raises(TypeError):
        bundle["saxpy"] = None  # type: ignore[index]
    with pytest.raises(BundleError, match="kernel name and variant must be strings"):
        bundle.kernel(5)  # type: ignore[arg-type]
    assert bundle.warm().created == 2 and dev.pipelines_made == 2
    assert bundle.warm().created == 0


def test_warm_skips_what_the_device_cannot_run_unless_asked_by_name(tmp_path):
    coop = {
        **SAXPY,
        "name": "mm",
        "id": "mm",
        "features": [cooperative_matrix("f16", "f32", 16, 16, 16)],
    }
    path = make_bundle(tmp_path, [SAXPY, coop])
    dev = Fake()
    warmed = Bundle(read_bundle(path), dev).warm()
    assert warmed.kernels == ("saxpy",) and warmed.created == 1
    assert warmed.skipped == {
        "mm": "Kernel 'mm' needs cooperative_matrix.f16.f32.16x16x16, which the vulkan device "
        "Fake GPU [discrete GPU, Vulkan] does not offer"
    }
    with pytest.raises(DeviceError, match="Kernel 'mm' needs cooperative_matrix"):
        Bundle(read_bundle(path), dev).warm(["mm"])


@pytest.mark.parametrize(
    "bad, reason",
    [
        ('{"a":1,"a":2}', "duplicate key 'a'"),
        ("[1]", "'meta' must be a dict, got list"),
        ('{"a":1},{"b":2}', "Extra data"),
    ],
)
def test_warm_skips_a_corrupt_metadata_record_with_its_reason(tmp_path, bad, reason):
    # warm() decodes the records in one pass; a corrupt one spoils none of the others and
    # is refused with what its own decode says, before anything of it is used
    import json

    from test_bundle import manifest_of, with_manifest

    add = [{**SAXPY, "name": "add", "variant": v, "id": f"add.{v}"} for v in ("f32", "i32")]
    data = open(make_bundle(tmp_path, [*add, SAXPY]), "rb").read()
    doc = manifest_of(data)
    doc["kernels"][1]["meta"] = "@@"
    text = json.dumps(doc, sort_keys=True, separators=(",", ":")).replace('"@@"', bad)
    path = tmp_path / "bad.vyrebundle"
    path.write_bytes(with_manifest(data, text.encode()))
    dev = Fake()
    warmed = Bundle(read_bundle(path), dev).warm()
    assert warmed.kernels == ("add.f32", "saxpy") and warmed.created == 2
    assert list(warmed.skipped) == ["add.i32"] and reason in warmed.skipped["add.i32"]
    with pytest.raises(BundleError, match=reason):
        Bundle(read_bundle(path), dev).warm(["add.i32", "saxpy"])


def test_a_kernel_the_device_cannot_run_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    needs = ["subgroup_clustered", "cooperative_matrix.f16.f32.16x8x16", "warp_magic"]
    path = make_bundle(tmp_path, [{**SAXPY, "features": needs}])
    reader = read_bundle(path)
    monkeypatch.setattr(reader, "read_artifact", lambda *a: pytest.fail("artifact was read"))
    bundle = Bundle(reader, Fake())
    k = bundle["saxpy"]  # listed like any kernel: a Mapping iterates on every device
    message = (
        "Kernel 'saxpy' needs cooperative_matrix.f16.f32.16x8x16, subgroup_clustered, "
        "'warp_magic' (a feature this runtime does not know), which the vulkan device "
        "Fake GPU [discrete GPU, Vulkan] does not offer"
    )
    assert k.refusal == message and bundle.runnable() == []
    for use in (lambda: k(x=np.ones(4, np.float32)), k.warm, lambda: k.pipeline):
        with pytest.raises(DeviceError) as info:
            use()
        assert str(info.value) == message


def test_a_bundle_iterates_on_a_device_that_cannot_run_some_kernels(tmp_path):
    coop = {**SAXPY, "name": "mm", "id": "mm", "features": ["cooperative_matrix"]}
    bundle = Bundle(read_bundle(make_bundle(tmp_path, [SAXPY, coop])), Fake())
    assert [k.id for k in bundle.values()] == ["mm", "saxpy"]
    assert [kid for kid, _ in bundle.items()] == ["mm", "saxpy"] and len(bundle) == 2
    assert bundle.runnable() == ["saxpy"] and bundle["saxpy"].refusal is None
    assert "needs cooperative_matrix" in bundle["mm"].refusal


def test_workgroup_limits_are_checked_at_load():
    with pytest.raises(DeviceError) as info:
        kernel({**SAXPY, "workgroup_size": [1, 1, 128]})
    assert str(info.value) == (
        "Kernel 'saxpy' has workgroup size 128 on z, more than the vulkan device "
        "Fake GPU [discrete GPU, Vulkan] allows (64)"
    )
    with pytest.raises(DeviceError, match="has 2048 invocations per workgroup, more than"):
        kernel({**SAXPY, "workgroup_size": [1024, 2, 1]})


# --- Kernel ---------------------------------------------------------------------------


def test_kernel_repr_signature_and_help():
    k = kernel()
    assert repr(k) == (
        "<Kernel saxpy(x: f32[r], y: vec4f[rw], a: f32) on vulkan: Fake GPU [discrete GPU, Vulkan]>"
    )
    sig = inspect.signature(k)
    assert list(sig.parameters) == ["x", "y", "a", "grid"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values())
    assert sig.parameters["a"].annotation is float and sig.parameters["grid"].default is None
    assert sig.return_annotation is CallResult
    text = pydoc.render_doc(k, renderer=pydoc.plaintext)
    assert "Kernel saxpy on vulkan: Fake GPU [discrete GPU, Vulkan]" in text
    assert "workgroup size 64x1x1, grid y" in text
    assert "A numpy array passed for a written buffer (w, rw) receives the result." in text
    assert "  x              buffer  f32    r   binding 0    float32 array" in text
    assert "  y              buffer  vec4f  rw  binding 1    float32 array (n, 4)" in text
    assert "  a              scalar  f32        offset  0    uniform block" in text


def test_positional_and_malformed_calls_are_refused_before_the_device():
    k = kernel()
    with pytest.raises(DispatchError) as info:
        k(np.zeros(4, np.float32))
    assert str(info.value) == (
        "Kernel 'saxpy' takes keyword arguments only (x=, y=, a=); got 1 positional"
    )
    with pytest.raises(DispatchError) as info:
        k.dispatch([1, 2, 3])  # type: ignore[arg-type]
    assert str(info.value) == "Kernel 'saxpy': arguments must be a dict of name -> value, got list"
    with pytest.raises(DispatchError, match="unexpected argument 7; it takes x, y, a"):
        k.dispatch({"x": 1, "y": 2, "a": 3, 7: 4})  # type: ignore[dict-item]
    x, y = np.zeros(4, np.float32), np.zeros((4, 4), np.float32)
    for value, shown in (
        (10**400, "an integer of 1329 bits"),
        (np.longdouble("1e4000"), "1e+4000"),
    ):
        with pytest.raises(DispatchError) as info:
            k(x=x, y=y, a=value)
        assert str(info.value) == f"Kernel 'saxpy': argument 'a' = {shown} is out of range for f32"
    with pytest.raises(DispatchError, match="argument 'a' = 1e\\+39 is out of range for f32"):
        k(x=x, y=y, a=np.float64(1e39))
    assert k.device.pipelines_made == 0


def test_call_results_are_typed_by_accessor():
    r = CallResult(y=np.ones(2, np.float32))
    assert r.array("y").tolist() == [1.0, 1.0]
    with pytest.raises(DispatchError, match="result 'y' is a numpy array, not a DeviceBuffer"):
        r.buffer("y")
    with pytest.raises(KeyError) as info:  # ResultNotFound: no kernel known here
        r.array("z")
    assert str(info.value) == "no result 'z'; its results are 'y'"
    with pytest.raises(DispatchError) as info:
        CallResult()["y"]
    assert str(info.value) == "no result 'y'; the call returned no results"


# --- features ---------------------------------------------------------------------------


def test_feature_vocabulary():
    assert sorted(FEATURES) == [
        "bf16",
        "cooperative_matrix",
        "f16",
        "storage_16bit",
        "subgroup_arithmetic",
        "subgroup_ballot",
        "subgroup_basic",
        "subgroup_clustered",
        "subgroup_quad",
        "subgroup_shuffle",
        "subgroup_shuffle_relative",
        "subgroup_vote",
        "vulkan_memory_model",
        "vulkan_memory_model_device_scope",
    ]
    name = cooperative_matrix("f16", "f32", 16, 8, 16)
    assert name == "cooperative_matrix.f16.f32.16x8x16"
    assert parse_cooperative_matrix(name) == ("f16", "f32", 16, 8, 16)
    assert is_feature(name) and is_feature("f16") and is_feature("subgroup_quad")
    for bad in ("cooperative_matrix.f16.f32.16x8", "cooperative_matrix.f8.f32.16x8x16", "fp16", 3):
        assert not is_feature(bad)
    with pytest.raises(ValueError, match="unknown matrix component type 'f8'"):
        cooperative_matrix("f8", "f32", 16, 16, 16)


def test_profile_features_from_capabilities():
    mats = (
        CooperativeMatrixType(16, 16, 16, "f16", "f16", "f32", "f32"),
        CooperativeMatrixType(16, 16, 16, "f16", "f16", "f16", "f16"),
        CooperativeMatrixType(16, 16, 32, "s8", "u8", "s32", "s32"),  # mixed: not nameable
        CooperativeMatrixType(16, 16, 16, "e4m3", "e4m3", "f32", "f32"),  # unknown type
        CooperativeMatrixType(16, 16, 16, "f16", "f16", "f32", "f32", scope="workgroup"),
    )
    names = features_of(("subgroup_basic", "subgroup_vote"), True, False, mats)
    assert sorted(names) == [
        "cooperative_matrix",
        "cooperative_matrix.f16.f16.16x16x16",
        "cooperative_matrix.f16.f32.16x16x16",
        "f16",
        "subgroup_basic",
        "subgroup_vote",
    ]
    assert missing_features(("f16", "storage_16bit"), names) == ["storage_16bit"]
    p = profile(names)
    assert p.as_json()["features"] == sorted(names) and p.as_json()["max_workgroup_size"] == [
        1024,
        1024,
        64,
    ]
    assert "subgroups    size 32 (range 32..32): basic" in p.describe()


# --- grids past the device's per-axis limit -----------------------------------------------


def test_workgroup_counts_and_splitting():
    limits = (4, 3, 65535)
    assert workgroup_counts("k", [10], (2, 1, 1), limits, None) == ((5, 1, 1), True)
    assert workgroup_counts("k", [8, 3], (2, 1, 1), limits, "never") == ((4, 3, 1), False)
    with pytest.raises(DispatchError) as info:
        workgroup_counts("k", [10], (2, 1, 1), limits, "the kernel reads num_workgroups()")
    assert str(info.value) == (
        "Kernel 'k': grid needs 5 workgroups on axis x (10 invocations / 2 per workgroup), more "
        "than the device's limit of 4 on x, and the kernel reads num_workgroups()"
    )
    pieces = split_dispatch((10, 7, 1), limits)
    assert pieces[:4] == [
        ((0, 0, 0), (4, 3, 1)),
        ((4, 0, 0), (4, 3, 1)),
        ((8, 0, 0), (2, 3, 1)),
        ((0, 3, 0), (4, 3, 1)),
    ]
    covered = {
        (bx + i, by + j)
        for (bx, by, _), (nx, ny, _) in pieces
        for i in range(nx)
        for j in range(ny)
    }
    assert covered == {(i, j) for i in range(10) for j in range(7)} and len(pieces) == 9
    assert all(n[0] <= 4 and n[1] <= 3 for _, n in pieces)


def test_what_a_shader_must_declare_to_be_split_is_found_in_its_code():
    def module(*decorations, base=True):
        words = [0x07230203, 0x10000, 0, 100, 0]
        for target, builtin in decorations:
            words += [(4 << 16) | 71, target, 11, builtin]
        for axis in range(3 if base else 0):
            words += [(4 << 16) | 71, 50 + axis, 1, axis]  # SpecId
        words += [(2 << 16) | 19, 1]  # OpTypeVoid
        return np.array(words, "<u4").tobytes()

    nwg = "the kernel reads num_workgroups(), so the dispatch cannot be split"
    assert split_refusal_of_code(module((5, 28))) is None  # GlobalInvocationId, with the base
    assert split_refusal_of_code(module((5, 29))) is None  # LocalInvocationId only
    assert split_refusal_of_code(module((5, 28), (6, 24))) == nwg
    assert split_refusal_of_code(module((5, 26), base=False)) == (
        "the shader reads workgroup ids without the vyre_wg_base specialization constants "
        "(SpecId 0-2) that vyre_build's SPIR-V emitter declares, so the dispatch cannot be "
        "split"
    )
    bad = np.array([0x07230203, 0x10000, 0, 9, 0, 0], "<u4").tobytes()
    assert split_refusal_of_code(bad) == (
        "the kernel's SPIR-V is malformed, so the dispatch cannot be split"
    )
    head = "fn main(@builtin(global_invocation_id) gid_in: vec3<u32>, @builtin(num_workgroups) "
    wgsl = head + "nwg: vec3<u32>) {"
    base = "const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);\n"
    assert base.strip() == WGSL_BASE
    assert split_refusal_of_code(base + wgsl + "}") is None
    assert split_refusal_of_code(base + wgsl + " let n = nwg.x; }") == nwg
    no_base = (
        "the shader reads workgroup ids without the vyre_wg_base constant (one line "
        "`const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);`) that vyre_build's WGSL "
        "emitter declares, so the dispatch cannot be split"
    )
    assert split_refusal_of_code(wgsl + "}") == no_base
    assert split_refusal_of_code(base + base + wgsl + "}") == no_base  # which one is it?
    wid = "fn main(@builtin(workgroup_id) w: vec3<u32>) {}"
    assert split_refusal_of_code(wid) == no_base
    assert split_refusal_of_code("fn main(@builtin(local_invocation_id) l: vec3<u32>) {}") is None
    at = wgsl_at_base(base + wgsl + "}", (3, 65535, 70000))
    assert at == "const vyre_wg_base: vec3<u32> = vec3<u32>(3u, 65535u, 70000u);\n" + wgsl + "}"


def test_the_runtime_and_the_wgsl_emitter_spell_the_split_base_alike():
    from vyre_build.emit.wgsl import WORKGROUP_BASE

    assert WORKGROUP_BASE == WGSL_BASE


def test_open_bundle_refuses_what_is_not_a_device(tmp_path):
    from vyre_build.runtime import get_device, open_bundle

    path = make_bundle(tmp_path, [SAXPY])
    with pytest.raises(DeviceError) as info:
        open_bundle(path, device=5)
    assert str(info.value) == (
        "device= must be a vyre_build Device or a wgpu GPUDevice/GPUAdapter, got int"
    )
    with pytest.raises(
        DispatchError, match="backend='wgpu' but the device given is a vulkan device"
    ):
        open_bundle(path, backend="wgpu", device=Fake())
    with pytest.raises(DeviceError, match="unknown backend 'metal'; choose one of wgpu, vulkan"):
        get_device("metal")
