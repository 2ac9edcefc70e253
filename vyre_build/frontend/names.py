"""The kernel language's names: every builtin (from the registry, frontend/builtins.py) and
every type (from the type vocabulary). The checker, the `from vyre_build.lang import ...`
check and `vyre_build.lang` itself read these sets, so a new builtin is one row in
frontend/builtins.py (and `lang.pyi`, generated from the rows, types it)."""

from __future__ import annotations

from vyre_build.frontend.builtins import BUILTINS, in_group
from vyre_build.frontend.ir import SCALARS, TYPES

TYPE_NAMES = TYPES  # scalars and vectors
SCALAR_NAMES = SCALARS

ATOMICS = in_group("atomics")  # name -> the Atomic op (atomic_sub is an Add of -value)
# The other memory builtins: atomic_load, atomic_store, fence (all take scope= / order=).
MEMORY_BUILTINS = tuple(in_group("memory"))
ID_BUILTINS = tuple(in_group("ids"))
BARRIERS = tuple(in_group("barriers"))  # statements the checker takes before any call
ARRAY_DECLARATIONS = tuple(in_group("arrays"))  # name = shared(T, n) / local_array(T, n)
ALL_BUILTINS = frozenset(BUILTINS)
# Importable for editors and type checkers, never reserved in kernels: the decorator, the
# buffer type, `bool_` (an alias that does not shadow Python's bool) and the access modes
# (so that the forward references "r" / "w" / "rw" in Buffer[T, "rw"] resolve).
ACCESS_MODES = ("r", "w", "rw")
DECLARATIONS = ("kernel", "Buffer", "bool_")
LANG_NAMES = frozenset(ALL_BUILTINS | set(TYPE_NAMES) | set(DECLARATIONS) | set(ACCESS_MODES))
