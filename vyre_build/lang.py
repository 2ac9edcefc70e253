"""Names of the kernel language, for editors and type checkers.

Kernel files are parsed, never executed, so nothing here runs at build time. Importing
these names (`from vyre_build.lang import kernel, Buffer, f32, global_id`) keeps linters
and IDEs quiet; calling a builtin from ordinary Python raises a clear error. The names
come from the frontend's tables (`vyre_build.frontend.names`; the builtins from the
registry `vyre_build.frontend.builtins`, each with its row's doc as `__doc__`), and their
types from `lang.pyi` beside this file, generated from the same registry
(`python -m vyre_build.frontend.stubgen`); tests hold all three to the same set.
"""

from __future__ import annotations

from vyre_build.frontend import names as _names
from vyre_build.frontend.builtins import BUILTINS as _BUILTINS


class _KernelOnly:
    def __init__(self, name: str, doc: str | None = None):
        self.__name__ = name
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.__name__}() exists only inside kernels, which vyre_build compiles "
            "ahead of time; load the built bundle with vyre_build.runtime.open_bundle"
        )

    def __repr__(self) -> str:
        return f"<vyre kernel builtin {self.__name__}>"


class _Type(_KernelOnly):
    def __getitem__(self, item):
        return self


class _Buffer:
    def __class_getitem__(cls, item):
        return cls


class _AccessMode(str):
    """An access mode of Buffer[T, mode]; equal to its string ("r", "w", "rw")."""


def kernel(fn=None, *, workgroup_size=64, grid=None, variants=None, any_length=None):
    """Marks a kernel; at build time the compiler reads these options from the source."""

    def mark(f):
        f.__vyre_kernel__ = {
            "workgroup_size": workgroup_size,
            "grid": grid,
            "variants": variants,
            "any_length": any_length,
        }
        return f

    return mark(fn) if fn is not None else mark


Buffer = _Buffer


def _build() -> dict:
    out = {"kernel": kernel, "Buffer": Buffer}
    out.update({t: _Type(t) for t in _names.TYPE_NAMES})
    out["bool_"] = out["bool"]
    out.update({m: _AccessMode(m) for m in _names.ACCESS_MODES})
    out.update({b: _KernelOnly(b, _BUILTINS[b].doc) for b in sorted(_names.ALL_BUILTINS)})
    return out


# Defined last: names such as len, range, min and bool shadow Python's builtins here.
globals().update(_build())
__all__ = sorted(_names.LANG_NAMES)
