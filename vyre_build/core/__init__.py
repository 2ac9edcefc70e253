"""The bottom layer: errors, files, features, artifact names, limits and the scalar
vocabulary that the compiler, the bundle tools and the runtime share. Standard library
only, importing nothing else of vyre_build, so that every layer may read it (the runtime
runs without the compiler: tests/unit/test_runtime_isolation.py; tests/unit/
test_import_graph.py keeps the layers)."""
