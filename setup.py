"""setuptools hook: the wheel carries the library kernels' sources.

`build_py` copies kernels/lib_*.py and their sections of kernels/variants.yaml into
vyre_build/_library/ of the build, byte for byte (the action keys stay those of the
checkout's files), so that `library.reduce(x)` works from an installed wheel: the first
call compiles them once into the user cache (vyre_build.library.bundle). Nothing
here needs more than the standard library. Everything else is in pyproject.toml.
"""

import os
import re

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
        out = os.path.join(self.build_lib, "vyre_build", "_library")
        os.makedirs(out, exist_ok=True)
        for name, data in library_files().items():
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)


setup(cmdclass={"build_py": BuildPy})
