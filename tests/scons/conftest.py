"""Fixtures of the end-to-end SCons tests (helpers live in scons_helpers.py)."""

from scons_helpers import project  # noqa: F401 - a pytest fixture
