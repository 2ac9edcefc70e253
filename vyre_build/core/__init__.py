"""The bottom layer: errors, files, features, artifact names, limits. Imports nothing
else of vyre_build (tests/unit/test_import_graph.py)."""
