"""Memory scopes and orders on real dispatches, and the single-pass library reduce, against
numpy: Vulkan (lavapipe here) and the cpu reference run them; wgpu has no WGSL for them
(its atomics are relaxed) and keeps the two-pass reduce. Every expectation about a device
comes from its own profile."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import DeviceError
from vyre_build import library
from vyre_build.library import picks
from vyre_build.runtime import load_kernel, open_bundle
from vyre_build.library import SINGLE_PASS_FEATURES

from test_library import assert_scan, build_library, values

CODE = {"vulkan": lambda k: {"spirv": k.spirv}, "cpu": lambda k: {"kdesc": k.kdesc}}

TICKET = """
from vyre_build.lang import *

@kernel(workgroup_size=64)
def ticket_sum(x: Buffer[u32], parts: Buffer[u32, "rw"], ticket: Buffer[u32, "rw"],
               out: Buffer[u32, "w"]):
    s = shared(u32, 64)
    last = shared(u32, 1)
    lid = local_id().x
    g = num_workgroups().x
    s[lid] = x[global_id().x]
    barrier()
    if lid == 0:
        acc: u32 = 0
        for j in range(64):
            acc += s[j]
        atomic_store(parts, workgroup_id().x, acc)
        t = atomic_add(ticket, 0, 1, scope="device", order="acq_rel")
        last[0] = u32(t == g - 1)
    storage_barrier()
    if last[0] == 1 and lid == 0:
        atomic_load(ticket, 0, order="acquire")
        tot: u32 = 0
        for w in range(g):
            tot += atomic_load(parts, w)
        out[0] = tot
        atomic_store(ticket, 0, 0)
"""


@pytest.fixture(scope="module")
def ticket(tmp_path_factory):
    path = tmp_path_factory.mktemp("ticket") / "ticket.py"
    path.write_text(TICKET)
    return compile_file(str(path))[0]


def test_ticket_kernel_has_no_wgsl_and_needs_the_memory_model(ticket):
    assert ticket.wgsl is None and "wgsl" in ticket.meta["skipped"]
    assert ticket.meta["features"] == sorted(SINGLE_PASS_FEATURES)


@pytest.mark.parametrize("groups", [1, 2, 37, 300])
def test_last_workgroup_sees_every_release(ticket, backend, groups):
    if backend == "wgpu":
        pytest.skip("no WGSL: the kernel needs release/acquire (checked above)")
    kernel = load_kernel(ticket.meta, backend=backend, **CODE[backend](ticket))
    x = np.arange(64 * groups, dtype=np.uint32) * np.uint32(2654435761)
    t = np.zeros(1, np.uint32)
    for _ in range(2):  # the ticket is set back to 0: a second run needs no clear
        got = kernel(x=x, parts=np.zeros(groups, np.uint32), ticket=t, out=1, grid=64 * groups)
        assert got["out"][0] == x.sum(dtype=np.uint32)
        assert got["ticket"][0] == 0
        t = got["ticket"]


def test_a_device_without_the_memory_model_refuses_the_kernel(ticket, device, monkeypatch):
    if device.backend == "wgpu":
        pytest.skip("no SPIR-V or descriptor path on wgpu")
    less = device.profile.features - SINGLE_PASS_FEATURES
    monkeypatch.setattr(device, "profile", dataclasses.replace(device.profile, features=less))
    with pytest.raises(DeviceError) as info:
        load_kernel(ticket.meta, device=device, **CODE[device.backend](ticket))
    assert str(info.value) == (
        "Kernel 'ticket_sum' needs vulkan_memory_model, vulkan_memory_model_device_scope, "
        f"which the {device.backend} device {device.name} does not offer"
    )


# -- the single-pass library reduce ------------------------------------------------------


@pytest.fixture(scope="module")
def lib_bundle(tmp_path_factory):
    return build_library(tmp_path_factory.mktemp("lib1") / "lib.vyrebundle", ("lib_reduce.py",))


@pytest.fixture
def lib(backend, lib_bundle):
    with open_bundle(lib_bundle, backend=backend) as bundle:
        yield bundle


def test_reduce_kernel_names_the_path_the_profile_allows(lib):
    dev = lib.device
    p = dev.profile
    pays = p.backend == "cpu" or p.device_type != "CPU"  # lavapipe keeps the two passes
    once = SINGLE_PASS_FEATURES <= p.features and pays
    assert library.reduce_kernel(dev, "max", "i32") == (
        "lib_reduce_once.max_i32" if once else "lib_reduce.max_i32"
    )
    if dev.backend == "wgpu":  # WGSL cannot express the ticket's release/acquire
        assert not once


def sizes(dev):
    sg = dev.profile.subgroup_size or 32
    wg = 256
    return sorted({1, 7, sg - 1, sg + 1, wg - 1, wg + 1, 4 * wg - 1, 4 * wg + 1, 1 << 20})


@pytest.mark.parametrize("forced", [False, True], ids=["picked", "single-pass"])
@pytest.mark.parametrize("kind", ["f32", "u32", "i32"])
def test_reduce_matches_numpy_at_odd_sizes(lib, kind, forced, monkeypatch):
    """The path the library picks, and (forced) the single pass wherever the device has the
    memory model: lavapipe keeps the two passes for speed, but runs the single pass right."""
    if forced:
        if not SINGLE_PASS_FEATURES <= lib.device.profile.features:
            pytest.skip("the device has no Vulkan memory model (wgpu): no single pass")
        monkeypatch.setattr(picks, "_single_pass_pays", lambda device: True)
        assert library.reduce_kernel(lib.device, "sum", kind).startswith("lib_reduce_once.")
    for n in sizes(lib.device):
        x = values(kind, n, seed=n)
        for op in ("sum", "min", "max"):
            got = library.reduce(lib, x, op)
            where = f"{library.reduce_kernel(lib.device, op, kind)} n={n}"
            if op != "sum":
                assert got == getattr(np, op)(x), where
            elif kind == "f32":
                assert abs(float(got) - float(x.astype(np.float64).sum())) <= 1e-6 * n, where
            else:
                assert got == x.sum(dtype=x.dtype), where


def test_single_pass_reduce_needs_no_clear_between_calls_in_one_batch(lib, monkeypatch):
    dev = lib.device
    monkeypatch.setattr(picks, "_single_pass_pays", lambda device: True)
    xs = [values("u32", n, seed=n) for n in (5, 4099, 70001)]
    outs = [dev.buffer(1, "u32") for _ in xs]
    with dev.batch():
        for x, out in zip(xs, outs):
            library.reduce(lib, dev.buffer(x), "sum", out=out)
    for x, out in zip(xs, outs):
        assert out.read()[0] == x.sum(dtype=np.uint32)


def test_single_pass_f32_sum_is_the_same_every_run(lib, monkeypatch):
    monkeypatch.setattr(picks, "_single_pass_pays", lambda device: True)
    x = values("f32", 300001, seed=3, lo=-1e4, hi=1e4)
    first = library.reduce(lib, x, "sum")
    assert all(library.reduce(lib, x, "sum").tobytes() == first.tobytes() for _ in range(3))


def assert_reduced(got, x, op: str, where: str) -> None:
    if op != "sum":
        assert got == getattr(np, op)(x), where
    elif x.dtype == np.float32:
        assert abs(float(got) - float(x.astype(np.float64).sum())) <= 1e-6 * x.size, where
    else:
        assert got == x.sum(dtype=x.dtype), where


def once(kernel, x, groups: int, vin: bool, ticket) -> object:
    """OP over x by one dispatch of a single-pass reduce kernel (lib_reduce_once, or a
    bench/kernels/ candidate with its bindings and scalars) of `groups` workgroups, bound
    as library.reduce binds it: x padded to whole vec4s and bound twice (vin), or only as
    values (a zero vec4 buffer for x4). `ticket` is kept between calls (each sets it back
    to 0, checked)."""
    dev, kind = kernel.device, {np.float32: "f32", np.uint32: "u32", np.int32: "i32"}
    kind = kind[x.dtype.type]
    if vin:
        xb = dev.buffer(np.concatenate([x, np.zeros(-x.size % 4, x.dtype)]))
        x4 = xb
    else:
        xb, x4 = dev.buffer(x), dev.buffer(4, kind)
    out = dev.buffer(1, kind)
    args = dict(x4=x4, x=xb, partials=dev.buffer(groups, kind), ticket=ticket, out=out,
                n=x.size, vin=int(vin), stride=groups * 256)  # fmt: skip
    kernel.dispatch(args, grid=groups * 256)
    assert ticket.read()[0] == 0, f"{kernel.id}: the ticket is not set back to 0"
    return out.read()[0]


# one vec4 per invocation: up to 1,024 partials, so that the last workgroup's fold takes
# trips of four loads (769, 1,024) or only its remainder loop (767)
MANY_PARTIALS = (767, 769, 1024)


@pytest.mark.parametrize("kind", ["f32", "u32", "i32"])
def test_single_pass_reduce_shares_of_many_trips(lib, kind, monkeypatch):
    """lib_reduce_once's share loops and their remainders: 3 workgroups, so each invocation
    takes many trips (vec4s, and values where x is a DeviceBuffer of no whole vec4s); then
    one vec4 per invocation at up to 1,024 workgroups (dispatched directly: the library's
    grid gives each invocation four), so the last workgroup folds many partials."""
    if not SINGLE_PASS_FEATURES <= lib.device.profile.features:
        pytest.skip("the device has no Vulkan memory model (wgpu): no single pass")
    dev = lib.device
    monkeypatch.setattr(picks, "_single_pass_pays", lambda device: True)
    monkeypatch.setattr(library, "MAX_PARTIALS", 3)
    few = (1, 2, 255, 256, 257, 1023, 1025, 4095, 4097, 3 * 4 * 256 * 4 + 5, 65539)
    for n in few:
        x = values(kind, n, seed=n)
        for op in ("sum", "min", "max"):
            assert_reduced(library.reduce(lib, x, op), x, op, f"{op} {kind} n={n}, 3 groups")
            if n % 4:  # a DeviceBuffer of no whole vec4s: every value through the scalar loop
                out = dev.buffer(1, kind)
                library.reduce(lib, dev.buffer(x), op, out=out)
                assert_reduced(out.read()[0], x, op, f"{op} {kind} n={n} scalar, 3 groups")
    ticket = dev.buffer(np.zeros(1, np.uint32))
    for groups in MANY_PARTIALS:
        n = groups * 256 * 4 - 3
        x = values(kind, n, seed=groups)
        for op in ("sum", "min", "max"):
            got = once(lib[f"lib_reduce_once.{op}_{kind}"], x, groups, True, ticket)
            assert_reduced(got, x, op, f"{op} {kind} {groups} partials")


CANDIDATES = ("reduce_once_four",)  # bench/kernels/: single-pass reduce candidates


@pytest.fixture(scope="module")
def candidates():
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "bench")
    return {
        k.stem: k
        for name in CANDIDATES
        for k in compile_file(os.path.join(bench, "kernels", name + ".py"), root=bench)
    }


def barriers(kernel) -> list[str]:
    """The orderings of a compiled kernel's barriers ("AcqRel": barrier(), "SeqCst":
    storage_barrier(), which alone orders storage-buffer memory), in descriptor order."""
    found = []

    def walk(body):
        found.extend(op.kind.args[0] for op in body.ops if op.kind.name == "Barrier")
        for child in body.children:
            walk(child)

    walk(kernel.descriptor.body)
    return found


@pytest.mark.parametrize("name", CANDIDATES)
def test_the_bench_candidates_order_the_ticket_as_the_library_does(candidates, name):
    """Each candidate's barriers are lib_reduce_once's: a storage barrier after the ticket
    add, without which the last workgroup's acquire loads of the ticket are not ordered
    after its invocation 0's add (a plain barrier orders workgroup memory only)."""
    kernels = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "kernels")
    lib = {
        k.stem.split(".")[1]: barriers(k)
        for k in compile_file(
            os.path.join(kernels, "lib_reduce.py"),
            root=kernels,
            targets=("kdesc",),
            kernel="lib_reduce_once",
        )
    }
    assert lib["sum_f32"] == ["AcqRel", "SeqCst", "AcqRel"]
    got = {
        stem.split(".")[1]: barriers(k) for stem, k in candidates.items() if stem.startswith(name)
    }
    assert got == lib


@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("kind", ["f32", "u32", "i32"])
@pytest.mark.parametrize("name", CANDIDATES)
def test_the_bench_candidates_match_numpy(candidates, backend, name, kind, op):
    """A bench/kernels/ candidate for lib_reduce_once (bench/reduce_bench.py times it), bound
    as the library binds lib_reduce_once, against numpy: one workgroup, three (many trips
    of the share loops and their remainders, vec4s and values alike) and many partials,
    one ticket kept through every call."""
    if backend == "wgpu":
        pytest.skip("no WGSL: the kernel needs release/acquire")
    found = candidates[f"{name}.{op}_{kind}"]
    kernel = load_kernel(found.meta, backend=backend, **CODE[backend](found))
    ticket = kernel.device.buffer(np.zeros(1, np.uint32))
    cases = [(n, 1, vin) for n in (1, 3, 4, 5, 1023, 4097) for vin in (True, False)]
    cases += [(n, 3, vin) for n in (3 * 4 * 256 * 4 + 5, 65539) for vin in (True, False)]
    cases += [(g * 256 * 4 - 3, g, True) for g in (MANY_PARTIALS if op == "sum" else (769,))]
    for n, groups, vin in cases:
        x = values(kind, n, seed=n + groups)
        got = once(kernel, x, groups, vin, ticket)
        assert_reduced(got, x, op, f"{name}.{op}_{kind} n={n} groups={groups} vin={vin}")


# -- the single-pass scan (decoupled look-back) --------------------------------------------


@pytest.fixture(scope="module")
def scan_bundle(tmp_path_factory):
    return build_library(tmp_path_factory.mktemp("scan1") / "lib.vyrebundle", ("lib_scan.py",))


@pytest.fixture
def scan_lib(backend, scan_bundle):
    with open_bundle(scan_bundle, backend=backend) as bundle:
        yield bundle


def test_scan_kernels_take_the_look_back_only_with_forward_progress(scan_lib):
    p = scan_lib.device.profile
    progress = p.backend == "cpu" or (
        p.backend == "vulkan"
        and p.vendor_id in library.FORWARD_PROGRESS_VENDORS
        and p.vendor_id in library.LOOK_BACK_PAYS_VENDORS
        and p.vendor_id in library.IN_ORDER_VENDORS
    )
    once = progress and SINGLE_PASS_FEATURES <= p.features
    look = library.LOOK_BACK_KERNEL.format(t="i32")
    assert look in library.kernel_ids() and look in scan_lib  # a kernel the library names
    want = (look,) if once else ("lib_scan_sums.i32", "lib_scan_block.i32")
    assert library.scan_kernels(scan_lib.device, "i32") == want
    if p.backend == "vulkan" and "llvmpipe" in scan_lib.device.name:
        assert not once  # lavapipe runs workgroups on a few threads: no forward progress


def test_every_vendor_that_takes_the_look_back_starts_workgroups_in_order(scan_bundle):
    # The library's look-back kernels take their tile from the workgroup id (WGID): a
    # vendor whose look-back pays must also start workgroups in id order, or a tile could
    # wait for a workgroup that has not started while the ones waiting hold the GPU.
    assert library.LOOK_BACK_PAYS_VENDORS <= library.IN_ORDER_VENDORS
    assert library.LOOK_BACK_PAYS_VENDORS <= library.FORWARD_PROGRESS_VENDORS
    with open_bundle(scan_bundle, backend="cpu") as bundle:
        for t in ("u32", "i32", "f32"):
            for tpl in (library.LOOK_BACK_KERNEL, library.LOOK_BACK_WIDE):
                kid = tpl.format(t=t)
                got = bundle[kid].meta.variant_values or {}
                assert (str(got.get("WGID")), str(got.get("PACKED"))) == ("1", "1"), kid


def test_a_kernel_the_build_made_no_artifact_for_is_refused_with_the_reason(backend, scan_bundle):
    # lib_scan_look.f32's folded program orders no memory (PACKED), but its source does
    # (the flag form of the other variants), so the build makes no WGSL of it and records
    # why: on wgpu it is refused with that reason when loaded, not a missing-artifact error.
    if backend != "wgpu":
        pytest.skip("the one backend whose artifact these kernels lack")
    with open_bundle(scan_bundle, backend="wgpu") as bundle:
        kid = library.LOOK_BACK_KERNEL.format(t="f32")
        refusal = bundle[kid].refusal
        assert refusal is not None and refusal.startswith(f"kernel {kid!r} has no .wgsl artifact")
        assert "memory ordering" in refusal
        assert kid not in bundle.runnable()
        assert "lib_scan_block.f32" in bundle.runnable()


# every look-back kernel: the library's (lib_scan_look, its wide tiles), the acquire-load
# form, the first one
LOOK_BACKS = (
    "lib_scan_look.{t}",
    "lib_scan_look.wide_{t}",
    "lib_scan_look.acquire_{t}",
    "lib_scan_once.{t}",
)


@pytest.mark.parametrize("vendor", [0x10DE, 0x1002, 0x8086])
def test_scan_takes_the_look_back_on_nvidia_through_spirv_only(device, monkeypatch, vendor):
    # The device's own profile under another vendor id, with the memory model it needs:
    # NVIDIA (forward progress, and the look-back measured faster) takes the single pass on
    # Vulkan; AMD (forward progress, not measured) and Intel (no promise) keep
    # reduce-then-scan; wgpu (no release/acquire in WGSL) keeps it whatever the vendor; the
    # cpu reference gives forward progress itself.
    p = device.profile
    fake = dataclasses.replace(p, vendor_id=vendor, features=p.features | SINGLE_PASS_FEATURES)
    monkeypatch.setattr(device, "profile", fake)
    look = p.backend == "cpu" or (p.backend == "vulkan" and vendor == 0x10DE)
    want = ("lib_scan_look.f32",) if look else ("lib_scan_sums.f32", "lib_scan_block.f32")
    assert library.scan_kernels(device, "f32") == want


@pytest.mark.parametrize("vendor", [0x10DE, 0x1002])
@pytest.mark.parametrize("shared", [16384, 49152])
def test_scan_picks_its_kernel_by_size(device, monkeypatch, vendor, shared):
    # On a device that takes the look-back: lib_scan_look below LOOK_WIDE_LEAST values,
    # lib_scan_look.wide_f32 from there where the device has its shared memory; without it,
    # lib_scan_look up to LOOK_BACK_MOST f32 values and reduce-then-scan past it on a GPU
    # (the cpu reference: the look-back at any size; integer scans: no size limit). Other
    # devices: reduce-then-scan at any size.
    p = device.profile
    features = p.features | SINGLE_PASS_FEATURES
    fake = dataclasses.replace(p, vendor_id=vendor, features=features, max_shared_memory=shared)
    monkeypatch.setattr(device, "profile", fake)
    look, wide = ("lib_scan_look.f32",), ("lib_scan_look.wide_f32",)
    two = ("lib_scan_sums.f32", "lib_scan_block.f32")
    least, most = library.LOOK_WIDE_LEAST, library.LOOK_BACK_MOST
    assert least <= most and 16384 < library.LOOK_WIDE_SHARED <= 49152
    sizes = (None, 1, least - 1, least, most, most + 1)
    picked = {n: library.scan_kernels(device, "f32", n) for n in sizes}
    if not (p.backend == "cpu" or (p.backend == "vulkan" and vendor == 0x10DE)):
        assert set(picked.values()) == {two}
        return
    assert picked[None] == picked[1] == picked[least - 1] == look
    if shared >= library.LOOK_WIDE_SHARED:
        assert picked[least] == picked[most] == picked[most + 1] == wide
    else:
        assert picked[least] == picked[most] == look
        assert picked[most + 1] == (look if p.backend == "cpu" else two)
        # integer scans: no size limit
        assert library.scan_kernels(device, "i32", most + 1) == ("lib_scan_look.i32",)
    # a mapping without the wide kernel (a bundle built before it): the pick without it
    held = {k: None for k in (*look, *two)}
    assert library.scan_runs(held, device, "f32", least) == look


@pytest.mark.backends("vulkan")
def test_scan_runs_the_path_its_size_picks(scan_bundle, monkeypatch):
    # Under a lowered LOOK_BACK_MOST, on this device given NVIDIA's id: a scan of at most
    # that many values runs the look-back, a longer one reduce-then-scan, and one of a
    # lowered LOOK_WIDE_LEAST values the wide look-back; all right.
    from vyre_build.library import picks
    from vyre_build.runtime.device import Device

    with open_bundle(scan_bundle, backend="vulkan") as bundle:
        p = bundle.device.profile
        if not SINGLE_PASS_FEATURES <= p.features:
            pytest.skip("the device has no Vulkan memory model: no look-back")
        monkeypatch.setattr(bundle.device, "profile", dataclasses.replace(p, vendor_id=0x10DE))
        monkeypatch.setattr(picks, "LOOK_BACK_MOST", 1000)
        cases = [(1000, "lib_scan_look.f32"), (1001, "lib_scan_block.f32")]
        if p.max_shared_memory >= library.LOOK_WIDE_SHARED:
            monkeypatch.setattr(picks, "LOOK_WIDE_LEAST", 3000)  # (one tile of 16,384 values)
            cases.append((3000, "lib_scan_look.wide_f32"))
        ran = []
        run = Device.run
        monkeypatch.setattr(Device, "run", lambda d, k, *a: ran.append(k.id) or run(d, k, *a))
        for n, want in cases:
            x = (np.arange(n) % 13 - 6).astype(np.float32)  # exact sums in f32
            ran.clear()  # (reduce-then-scan of one block: lib_scan_block alone)
            np.testing.assert_array_equal(library.scan(bundle, x), np.cumsum(x, dtype=np.float32))
            assert set(ran) == {want}


def look_back_sizes(kid: str) -> list[int]:
    """Edge sizes for a look-back kernel: around one and several of its tiles, around 4096
    (the other kernel's tile), not multiples of 4, and past 2^20."""
    tile = 256 * 4 * library.look_back_items(kid)
    edges = [1, 2, 3, 7, 4095, 4096, 4097, tile - 1, tile, tile + 1, 5 * tile + 3]
    return sorted(set(edges + [1 << 20, (1 << 20) + 3]))


@pytest.mark.parametrize("template", LOOK_BACKS)
@pytest.mark.parametrize("kind", ["f32", "u32", "i32"])
def test_the_look_back_is_right_where_the_device_gives_forward_progress(scan_lib, kind, template):
    """Each look-back kernel, run directly, on a device that gives forward progress: the cpu
    reference (its schedule gives it) and a GPU of FORWARD_PROGRESS_VENDORS (the H200 in
    the device tier), though the library picks the look-back on no GPU yet. Never on
    lavapipe, where a workgroup may wait for one that is not scheduled (docs/runtime.md)."""
    p = scan_lib.device.profile
    progress = p.backend == "cpu" or (
        p.backend == "vulkan" and p.vendor_id in library.FORWARD_PROGRESS_VENDORS
    )
    if not (progress and SINGLE_PASS_FEATURES <= p.features):
        pytest.skip(f"{scan_lib.device.name} promises no forward progress between workgroups")
    kid = template.format(t=kind)
    for n in look_back_sizes(kid):
        x = values(kind, n, seed=n)
        for exclusive in (False, True):
            got = library._scan_once(scan_lib, kid, x, kind, exclusive, None)
            assert_scan(got, x, exclusive, f"{kid} n={n} excl={exclusive}")


PIPE_SIZES = (1, 4097, 8192, 8193, 3 * 8192 + 17, 9 * 8192 + 5)


@pytest.mark.parametrize("kind", ["f32", "u32", "i32"])
def test_the_pipelined_look_back_is_right_where_the_device_gives_forward_progress(scan_lib, kind):
    """lib_scan_pipe (a bench candidate, kept for comparison: bench/scan_bench.py --pipe):
    `groups` workgroups taking tiles of 8,192 values in turn, the next tile's loads in
    flight during the walk back, on the cpu reference and a GPU of
    FORWARD_PROGRESS_VENDORS (the device tier); one to seven workgroups, so one to ten
    rounds each, and the group counts in turn on one size: each count draws its own number of tickets a call, so each has its own
    state buffer (library._scan_once keys it by the ticket period)."""
    p = scan_lib.device.profile
    progress = p.backend == "cpu" or (
        p.backend == "vulkan" and p.vendor_id in library.FORWARD_PROGRESS_VENDORS
    )
    if not (progress and SINGLE_PASS_FEATURES <= p.features):
        pytest.skip(f"{scan_lib.device.name} promises no forward progress between workgroups")
    kid = f"lib_scan_pipe.{kind}"
    for n in PIPE_SIZES:
        x = values(kind, n, seed=n)
        for groups in (1, 3, 1, 2, 7):
            for exclusive in (False, True):
                got = library._scan_once(scan_lib, kid, x, kind, exclusive, None, 8, groups)
                assert_scan(got, x, exclusive, f"{kid} n={n} groups={groups} excl={exclusive}")


@pytest.mark.parametrize("template", LOOK_BACKS)
def test_a_one_tile_look_back_runs_wherever_the_memory_model_is(scan_lib, template):
    """Up to one tile no workgroup waits for another, so the look-back kernels run without
    forward progress: every device with the memory model (lavapipe included) runs them at
    sizes up to one tile, several calls in a row (each a new epoch of the kept flags)."""
    if not SINGLE_PASS_FEATURES <= scan_lib.device.profile.features:
        pytest.skip(f"{scan_lib.device.name} lacks the Vulkan memory model")
    for kind in ("f32", "i32", "u32"):
        kid = template.format(t=kind)
        tile = 256 * 4 * library.look_back_items(kid)
        for n in sorted({1, 2, 3, 5, 255, 1023, 1024, 1025, tile - 1, tile}):
            x = values(kind, n, seed=n)
            for exclusive in (False, True, False):
                got = library._scan_once(scan_lib, kid, x, kind, exclusive, None)
                assert_scan(got, x, exclusive, f"{kid} n={n} excl={exclusive}")


@pytest.mark.parametrize("kind", ["f32", "u32", "i32"])
def test_scan_matches_numpy_at_odd_sizes(scan_lib, kind):
    tiles = {256 * 4 * items for items in library.LOOK_BACK_ITEMS.values()}  # look-back tiles
    edges = [t + d for t in sorted(tiles) for d in (-1, 1)] + [5 * max(tiles) + 3]
    for n in sizes(scan_lib.device) + edges:
        x = values(kind, n, seed=n)
        for exclusive in (False, True):
            where = f"{library.scan_kernels(scan_lib.device, kind)} n={n} excl={exclusive}"
            assert_scan(library.scan(scan_lib, x, exclusive=exclusive), x, exclusive, where)


@pytest.mark.parametrize("template", LOOK_BACKS)
@pytest.mark.parametrize("per_chunk", [2, 40])
def test_look_back_across_reference_chunks(monkeypatch, scan_bundle, per_chunk, template):
    """Chunks of `per_chunk` workgroups: a chunk's first tile finds its predecessor's prefix
    published by an earlier chunk, the others walk back over the aggregates of their own
    chunk (40: walks of up to 39 tiles, past one look-back window: lib_scan_once's LOOK =
    16 predecessors, lib_scan_look's subgroup of 32 lanes on the reference)."""
    import vyre_build.reference as reference

    monkeypatch.setattr(reference, "CHUNK_LANES", 256 * per_chunk)
    with open_bundle(scan_bundle, backend="cpu") as bundle:
        look = library.LOOK_BACK_KERNEL.format(t="u32")
        assert library.scan_kernels(bundle.device, "u32") == (look,)
        assert (bundle.device.profile.subgroup_size or 32) < 39
        kid = template.format(t="u32")
        tile = 256 * 4 * library.look_back_items(kid)
        for n in (tile * 45 + 5, tile * 2):
            x = values("u32", n, seed=n)
            got = library._scan_once(bundle, kid, x, "u32", False, None)
            assert_scan(got, x, False, f"{kid} n={n}")
            if kid == look:
                assert_scan(library.scan(bundle, x), x, False, f"scan n={n}")


@pytest.mark.parametrize("template", LOOK_BACKS[:3])
def test_look_back_total_overflows_no_more_than_the_tiles_scan(scan_bundle, template):
    """A tile's total, posted before the tile is scanned (lib_scan_look's post_aggregate),
    sums each vec4 first, as the scan does: a first tile of +1e38 and -1e38 alternating
    (every vec4 and every step sums to 0) followed by ones scans to finite, exact values
    (a sum of the vec4s across steps first overflows to inf and made later tiles NaN)."""
    with open_bundle(scan_bundle, backend="cpu") as bundle:
        kid = template.format(t="f32")
        tile = 256 * 4 * library.look_back_items(kid)
        x = np.ones(3 * tile, np.float32)
        x[:tile] = np.where(np.arange(tile) % 2 == 0, 1e38, -1e38).astype(np.float32)
        got = np.asarray(library._scan_once(bundle, kid, x, "f32", False, None))
        assert np.isfinite(got).all(), kid
        assert got[tile:].tolist() == list(range(1, 2 * tile + 1)), kid


def look_back_state(dev, kid: str, tiles: int):
    """The state buffer the library keeps for look-back kernel `kid` on `dev` over calls of
    `tiles` tiles (one ticket period): a 16-byte slot a tile, then the count or epoch."""
    from vyre_build.library import call as library_call

    key = (library._look_back_state_name(kid, tiles), "u32", 4 * tiles + 1)
    (state,) = [b for k, b in library_call._SCRATCH[dev].items() if k[1:] == key]
    return state


def test_look_back_ticket_count_starts_again_past_restart(backend, scan_bundle):
    """lib_scan_look's ticket form (acquire_*) draws tile and epoch from one count kept
    across calls (`tiles` tickets a call): the last ticket of a call past RESTART (2^30)
    sets it back to 0, and the next calls (epochs 0, 1) still find only their own flags.
    The cpu reference only: a look-back needs forward progress, and this needs no GPU to
    show."""
    if backend != "cpu":
        pytest.skip("the count's arithmetic is the same on every device: the cpu reference")
    with open_bundle(scan_bundle, backend="cpu") as bundle:
        dev, kid = bundle.device, "lib_scan_look.acquire_i32"
        x = values("i32", 3 * 8192 + 5, seed=1)
        assert_scan(library._scan_once(bundle, kid, x, "i32", False, None), x, False, "first")
        # the slots of 4 tiles and the count (other tests may have left calls in it)
        state = look_back_state(dev, kid, 4)
        words = state.read().copy()
        assert words[-1] % 4 == 0 and words[-1] > 0  # whole calls of 4 tiles
        words[-1] = 4 * (1 << 28)  # a count past RESTART, after a whole call
        state.write(words)
        for step, exclusive in enumerate((True, False, True)):
            got = library._scan_once(bundle, kid, x, "i32", exclusive, None)
            assert_scan(got, x, exclusive, f"call {step} after the restart")
            assert state.read()[-1] == 4 * step


@pytest.mark.parametrize(
    ("kid", "kind"), [("lib_scan_look.i32", "i32"), ("lib_scan_look.wide_f32", "f32")]
)
def test_look_back_epoch_word_wraps(backend, scan_bundle, kid, kind):
    """The library's look-back form (WGID, PACKED) keeps the call's epoch in the word after
    the tiles' slots, and the last tile moves it on; its values are tagged with the
    epoch's low 15 bits. Past 2^32 calls (and past the tag's wrap) every call still finds
    only its own values, though the slots keep the last call's: epochs 2^32 - 2, 2^32 - 1,
    0, 1. The cpu reference only, as above."""
    if backend != "cpu":
        pytest.skip("the epoch's arithmetic is the same on every device: the cpu reference")
    with open_bundle(scan_bundle, backend="cpu") as bundle:
        dev = bundle.device
        tile = 256 * 4 * library.look_back_items(kid)
        x = values(kind, 3 * tile + 5, seed=2)
        assert_scan(library._scan_once(bundle, kid, x, kind, False, None), x, False, "first")
        state = look_back_state(dev, kid, 4)
        words = state.read().copy()
        assert words[-1] >= 1  # one call at least, each moving the epoch on by one
        words[-1] = 0xFFFFFFFE
        state.write(words)
        for step, exclusive in enumerate((True, False, True, False)):
            got = library._scan_once(bundle, kid, x, kind, exclusive, None)
            assert_scan(got, x, exclusive, f"{kid}: call {step} near the wrap")
            assert state.read()[-1] == (0xFFFFFFFE + step + 1) % (1 << 32)


def test_look_back_needs_no_clear_between_calls(scan_lib):
    dev = scan_lib.device
    xs = [values("i32", n, seed=n) for n in (9000, 9000, 5, 40000)]
    outs = [dev.buffer(x.shape, "i32") for x in xs]
    with dev.batch():
        for x, out in zip(xs, outs):
            library.scan(scan_lib, dev.buffer(x), out=out)
    for x, out in zip(xs, outs):
        assert_scan(out.read(), x, False, f"n={x.size}")
    again = library.scan(scan_lib, xs[0], exclusive=True)  # a later call, new epoch
    assert_scan(again, xs[0], True, "again")


def test_path_queries_refuse_bad_arguments():
    from vyre_build.core.errors import DispatchError
    from vyre_build.runtime import get_device

    dev = get_device("cpu")
    reduce_kernel, scan_kernels = library.reduce_kernel, library.scan_kernels
    cases = [
        ("reduce_kernel", lambda: reduce_kernel("cpu"), "device must be a Device, got str"),
        (
            "reduce_kernel",
            lambda: reduce_kernel(dev, "mean"),
            "op must be 'sum', 'min' or 'max', got 'mean'",
        ),
        (
            "reduce_kernel",
            lambda: reduce_kernel(dev, "sum", "f64"),
            "dtype must be 'f32', 'i32' or 'u32', got 'f64'",
        ),
        ("scan_kernels", lambda: scan_kernels(None), "device must be a Device, got NoneType"),
        (
            "scan_kernels",
            lambda: scan_kernels(dev, "u8"),
            "dtype must be 'f32', 'i32' or 'u32', got 'u8'",
        ),
    ]
    for fn, call, message in cases:
        with pytest.raises(DispatchError) as info:
            call()
        assert str(info.value) == f"library.{fn}: {message}"
