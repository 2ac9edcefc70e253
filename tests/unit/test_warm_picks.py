"""Bundle.warm() makes the pipelines of the kernels the device may be asked to run: every
kernel but the candidates no pick on this device runs (a kernel tunable's others, and what
a registered picker passes over), on the cpu backend (a real device, its pipelines
counted), and a tuned library pick. The library's picks on real devices:
tests/gpu/test_warm_library.py."""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest

from test_tuning import _library_bundle
from tuning_tree import tuning_bundle

from vyre_build.bundle import read_bundle, write_bundle
from vyre_build.compiler import compile_file
from vyre_build.core.backends import BACKENDS
from vyre_build.core.errors import BundleError
from vyre_build.runtime import get_device, open_bundle
from vyre_build.runtime import bundles
from vyre_build.runtime.bundles import Pick, register_picks
from vyre_build.runtime.tuning import device_identity

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "kernels")


def _bundle(tmp_path, pick: str | None):
    """The tuning tree's scale.{plain,twice,bad} (tunable "scale", default plain) and the
    tree's saxpy, with a record of this machine's cpu device picking `pick` (None: none)."""
    path = tuning_bundle(tmp_path)
    with read_bundle(path) as r:
        entries = [
            {"meta": e.meta, "artifacts": {s: r.read_artifact(e.id, s) for s in e.artifacts}}
            for e in r.entries()
        ]
        tuning = copy.deepcopy(r.tuning)
    (saxpy,) = compile_file(os.path.join(KERNELS, "saxpy.py"), root=KERNELS)
    arts = {s: b for s, b in saxpy.artifacts.items() if s != ".meta.json"}
    entries.append({"meta": saxpy.meta, "artifacts": arts})
    if pick is not None:
        tuning["records"] = [
            {
                "device": device_identity(get_device("cpu").profile),
                "clock": "wall",
                "picks": {"scale": {"candidate": pick, "seconds": {pick: 1e-3}, "dropped": {}}},
                "untuned": {},
            }
        ]
    write_bundle(path, entries, tuning=tuning)
    return path


def _fresh_cpu():
    # A cpu device of this test's own (not the shared one), so that its pipelines are these.
    return BACKENDS["cpu"].device_class()(None)


@pytest.mark.parametrize("pick", [None, "twice"])
def test_warm_leaves_out_the_candidates_the_device_does_not_pick(tmp_path, pick):
    path = _bundle(tmp_path, pick)
    dev = _fresh_cpu()
    runs = f"scale.{pick or 'plain'}"
    how = "exact" if pick else "default"
    with open_bundle(path, device=dev) as bundle:
        warmed = bundle.warm()
        assert warmed.kernels == tuple(sorted(("saxpy", runs)))  # saxpy: no pick names it
        assert warmed.created == len(dev._pipelines) == 2 and warmed.skipped == {}
        why = f"tunable 'scale' ({how}) runs {runs} on this device"
        assert warmed.unpicked == {
            k: why for k in bundle.ids if k.startswith("scale.") and k != runs
        }
        assert len(warmed.unpicked) == 2
        assert bundle.unpicked() == warmed.unpicked
        # the tunable's name runs the pick, with the pipeline warm() made
        x = np.arange(64, dtype=np.float32)
        y = bundle["scale"](x=x, y=np.zeros(64, np.float32), a=2.0).array("y")
        np.testing.assert_array_equal(y, 2 * x)
        assert bundle["scale"].id == runs and len(dev._pipelines) == 2
        everything = bundle.warm(all=True)
        assert everything.kernels == tuple(bundle.ids) and everything.unpicked == {}
        assert everything.created == 2 and len(dev._pipelines) == 4
        assert bundle.warm(all=True).created == 0
    dev.close()


def test_warm_by_name_or_all_and_never_both(tmp_path):
    path = _bundle(tmp_path, None)
    dev = _fresh_cpu()
    with open_bundle(path, device=dev) as bundle:
        named = bundle.warm(["scale.bad"])  # named: warmed though no pick runs it
        assert named.kernels == ("scale.bad",) and named.created == 1
        assert named.unpicked == {} and named.skipped == {}
        with pytest.raises(BundleError, match=r"warm\(\) takes ids or all=True, not both"):
            bundle.warm(["saxpy"], all=True)
    dev.close()


def test_a_registered_picker_passes_kernels_over_and_any_pick_that_runs_one_keeps_it(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(bundles, "_PICKERS", {})
    seen = []

    def picker(bundle):
        seen.append(bundle)
        return [
            Pick("toy", ("saxpy", "scale.twice", "not_in_the_bundle"), ("scale.twice",)),
            Pick("toy again", ("saxpy",), ("nothing_here",)),
        ]

    register_picks("toy", picker)
    path = _bundle(tmp_path, None)
    dev = _fresh_cpu()
    with open_bundle(path, device=dev) as bundle:
        warmed = bundle.warm()
        assert seen == [bundle]
        # scale.twice: the tunable passes it over, but the toy's pick runs it; saxpy: the
        # first pick that passes it over says why; ids the bundle lacks: nothing
        assert warmed.kernels == ("scale.plain", "scale.twice")
        assert warmed.unpicked == {
            "saxpy": "toy runs scale.twice on this device",
            "scale.bad": "tunable 'scale' (default) runs scale.plain on this device",
        }
        assert [p.by for p in bundle.picks()] == ["tunable 'scale' (default)", "toy", "toy again"]
        # a pick that runs none of the bundle's kernels passes none over
        register_picks("toy", lambda bundle: [Pick("absent", ("saxpy",), ("nothing_here",))])
        again = bundle.warm()
        assert again.kernels == ("saxpy", "scale.plain") and again.created == 1  # saxpy's
        assert again.unpicked == {
            "scale.bad": "tunable 'scale' (default) runs scale.plain on this device",
            "scale.twice": "tunable 'scale' (default) runs scale.plain on this device",
        }
        assert bundle.unpicked() == {
            "scale.bad": "tunable 'scale' (default) runs scale.plain on this device",
            "scale.twice": "tunable 'scale' (default) runs scale.plain on this device",
        }
    dev.close()


def test_a_tuned_pick_is_warmed_in_place_of_the_default(tmp_path):
    """With a record picking matmul's 64 x 64 variant and the _warp softmax on this device,
    warm() makes those and not the defaults, and the calls run them."""
    from vyre_build import library  # registers the library's picks

    path = _library_bundle(
        tmp_path,
        ("lib_matmul", "lib_softmax", "lib_softmax_warp", "lib_softmax_flat"),
        {"matmul": "tile64", "softmax": "warp1024"},
    )
    dev = _fresh_cpu()
    try:
        with open_bundle(path, device=dev) as bundle:
            warmed = bundle.warm()
            assert warmed.kernels == (
                "lib_matmul.f32_64",
                "lib_softmax.f32",
                "lib_softmax_warp.f32",
            )
            assert "lib_matmul.f32" in warmed.unpicked and "lib_softmax_flat.f32" in warmed.unpicked
            pipelines = len(dev._pipelines)
            a = np.ones((70, 5), np.float32)
            np.testing.assert_allclose(library.matmul(bundle, a, a.T), np.full((70, 70), 5.0))
            np.testing.assert_allclose(library.softmax(bundle, np.zeros((2, 8), np.float32)), 1 / 8)
            assert len(dev._pipelines) == pipelines
    finally:
        dev.close()
