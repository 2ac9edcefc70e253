"""setuptools hook: the wheel carries the library kernels' sources and their bundle.

`build_py` copies kernels/lib_*.py, their sections of kernels/variants.yaml and
kernels/tuning.yaml into vyre_build/_library/ of the build, byte for byte (the action keys
stay those of the checkout's files), then compiles them there into
_library/library.vyrebundle with the digest of the files it is built from
(vyre_build.build.library_bundle.ship, run on the package being built: its compiler,
blake3 and pyyaml, which pyproject.toml's build requirements provide), so that an
installed wheel's `library.reduce(x)` opens a prebuilt bundle and compiles nothing
(vyre_build.library.bundle). Everything else is in pyproject.toml.
"""

import os
import re
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "kernels")


def library_files() -> dict[str, bytes]:
    """{name: bytes} of the library's kernel sources and their variants (kernels/)."""
    found = os.listdir(KERNELS) if os.path.isdir(KERNELS) else []
    names = sorted(n for n in found if re.fullmatch(r"lib_\w+\.py", n))
    if "lib_reduce.py" not in names or "variants.yaml" not in found:
        raise SystemExit(
            f"setup.py: {KERNELS} lacks the library's kernel sources (lib_*.py, "
            "variants.yaml), which the wheel carries; build it from a checkout or the sdist"
        )
    files = {}
    for name in names:
        with open(os.path.join(KERNELS, name), "rb") as f:
            files[name] = f.read()
    with open(os.path.join(KERNELS, "variants.yaml"), "rb") as f:
        text = f.read().decode("utf-8")
    # The top-level sections of the library's files, each up to the next top-level key.
    kept, keep = [], False
    for line in text.splitlines(keepends=True):
        top = re.match(r"([A-Za-z_][\w.]*):\s*$", line)
        if top:
            keep = top.group(1) in names
        if keep and not line.startswith("#"):
            kept.append(line)
    files["variants.yaml"] = "".join(kept).encode("utf-8")
    if os.path.isfile(os.path.join(KERNELS, "tuning.yaml")):  # the tunables (docs/tuning.md)
        with open(os.path.join(KERNELS, "tuning.yaml"), "rb") as f:
            files["tuning.yaml"] = f.read()
    return files


class BuildPy(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install uses kernels/ itself
            return
        out = os.path.join(self.build_lib, "vyre_build", "_library")
        os.makedirs(out, exist_ok=True)
        for name, data in library_files().items():
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
        # The bundle, by the compiler of the package being built (not an installed one).
        sys.path.insert(0, os.path.abspath(self.build_lib))
        try:
            for name in [
                m for m in sys.modules if m == "vyre_build" or m.startswith("vyre_build.")
            ]:
                del sys.modules[name]
            from vyre_build.build.library_bundle import ship

            ship(os.path.join(os.path.abspath(self.build_lib), "vyre_build"))
        finally:
            sys.path.remove(os.path.abspath(self.build_lib))


setup(cmdclass={"build_py": BuildPy})
