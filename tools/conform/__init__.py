"""Differential conformance testing of vyre_build: random kernels (gen.py), run on every
backend (backends.py), compared under the float policy (floats.py, compare.py), mismatches
minimised (shrink.py). The command line is tools/conformance.py; docs/conformance.md."""
