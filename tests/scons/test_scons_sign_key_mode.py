"""`$VYRESIGNKEY` naming a secret key that others can read: scons prints ssh's warning
once and signs (issue 26)."""

from __future__ import annotations

import os

import pytest
from scons_helpers import run_scons
from test_scons_signing import SIGNED

from vyre_build.bundle import read_bundle
from vyre_build.bundle.keys import generate_key_pair, write_key_pair

pytestmark = pytest.mark.scons


def test_an_unprotected_sign_key_is_warned_about_once_and_used(project):
    root, cache = project
    (root / "SConstruct").write_text(SIGNED)
    (root / "keys").mkdir()
    secret, public = write_key_pair(root / "keys" / "release.key", generate_key_pair("release"))
    os.chmod(secret, 0o644)
    proc = run_scons(root, cache)
    assert proc.stderr == (
        "vyre: WARNING: UNPROTECTED PRIVATE KEY FILE! "
        f"Permissions 0644 for '{secret}' are too open.\n"
        "vyre: a secret key must not be accessible by others: whoever reads it can sign "
        f"bundles as you. It is used anyway; run chmod 600 '{secret}' (and make a new key "
        "if others may have read it).\n"
    )
    with read_bundle(root / "dist" / "kernels.vyrebundle", trusted_keys=[public]) as r:
        assert r.signer is not None
    os.chmod(secret, 0o600)
    run_scons(root, cache, "-c")
    assert run_scons(root, cache).stderr == ""
