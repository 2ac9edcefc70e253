"""A signed bundle, opened with its key pinned, dispatches for real and matches numpy."""

from __future__ import annotations

import os

import numpy as np
import pytest

from vyre_build.bundle import write_bundle
from vyre_build.bundle.keys import generate_key_pair, write_key_pair
from vyre_build.compiler import compile_file
from vyre_build.core.errors import BundleError
from vyre_build.runtime import open_bundle

pytestmark = pytest.mark.gpu

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "kernels")


def test_signed_bundle_round_trip_through_the_runtime(backend, device, tmp_path, monkeypatch):
    secret, public = write_key_pair(tmp_path / "rel.key", generate_key_pair("release"))
    (k,) = compile_file(os.path.join(KERNELS, "saxpy.py"))
    arts = {s: b for s, b in k.artifacts.items() if s != ".meta.json"}
    path = tmp_path / "s.vyrebundle"
    write_bundle(path, [{"meta": k.meta, "artifacts": arts}], sign_key=secret)
    x = np.arange(1000, dtype=np.float32)
    y, want = np.ones(1000, np.float32), 2.0 * x + 1.0
    with open_bundle(path, device=device, trusted_keys=[public]) as b:
        assert b.reader.signer.comment == "release"
        out = b.kernel("saxpy")(x=x, y=y, a=2.0)["y"]
    np.testing.assert_array_equal(out, want)
    _, stranger = write_key_pair(tmp_path / "other.key", generate_key_pair("other"))
    monkeypatch.setenv("VYRE_TRUSTED_KEYS", stranger)
    with pytest.raises(BundleError, match="which is not a trusted key"):
        open_bundle(path, device=device)
