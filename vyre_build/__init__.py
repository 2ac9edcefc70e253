"""vyre_build: an ahead-of-time GPU kernel build system (compiler, cache, bundles, runtime)."""

__version__ = "0.1.0"
