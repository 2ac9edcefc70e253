"""The value-type vocabulary: one row per type, every spelling of it in one place.

A value type is named as the kernel language, the IR and the metadata name it ("u32",
"vec4f", ...). Each `ValueType` row holds what every layer needs: the descriptor DataType
(`Variant("U32")`, `Variant("Vec", (Variant("F32"), 4))`), the element and component count,
the WGSL spelling, the size and numpy dtype on the host and where the type may live
(storage buffers, the uniform block, atomics). The scalars' spellings come from
`vyre_build.core.scalars` (which the runtime reads too); adding a type is one row there or
here (plus emitter rules for the ops the op table gives it; a test enforces that).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from vyre_build.core.scalars import SCALARS as _SCALAR_ROWS
from vyre_build.core.scalars import VECTOR_COUNTS
from vyre_build.descriptor.codec import Variant
from vyre_build.core.errors import DescriptorFormatError
from vyre_build.core.features import MATRIX_DIMS, MATRIX_ELEMENTS

__all__ = [
    "ValueType",
    "TYPES",
    "SCALARS",
    "NUMERIC",
    "INTEGER",
    "FLOAT",
    "STORAGE_ONLY",
    "STORAGE_TYPES",
    "VECTORS",
    "MATRICES",
    "matrix_name",
    "element",
    "count",
    "vector_of",
    "type_of",
    "datatype",
    "literal_type",
]


@dataclass(frozen=True)
class ValueType:
    name: str  # "u32", "vec4f": the kernel language's, the IR's and the metadata's name
    datatype: Variant  # the descriptor DataType
    element: str  # the scalar component type (the type itself for a scalar)
    count: int  # components: 1 for a scalar
    kind: str  # "uint" | "sint" | "float" | "bool" (of the element)
    wgsl: str  # WGSL type spelling
    size: int  # bytes per element in a host buffer (0: not host-shareable)
    storage: bool  # may be a storage-buffer element
    uniform: bool  # may be a uniform-block member (bool travels as a u32 there)
    atomic: bool  # atomics are defined on it
    # a cooperative matrix: (use, rows, cols), use "a" | "b" | "acc"; None for other types
    matrix: tuple[str, int, int] | None = None
    host: str = ""  # the numpy dtype name of its element on the host ("float32", "bool")


# (name, DataType name, kind, WGSL, bytes): the scalars; vectors are derived from them below.
_SCALARS = tuple((s.name, s.datatype, s.kind, s.wgsl, s.size) for s in _SCALAR_ROWS)
# A vector's name: "vec" + count + this letter of its element.
_LETTER = {s.name: s.letter for s in _SCALAR_ROWS if s.letter}
_HOST = {s.name: s.host for s in _SCALAR_ROWS}
# Cooperative matrices (VK_KHR_cooperative_matrix, subgroup scope): DataType TensorShaped
# {element, shape [rows, cols, use]} with use 0 A, 1 B, 2 accumulator. A and B are f16;
# accumulators f16 or f32; each side 8, 16 or 32 (features.py; the device's list decides
# what runs).
_USE = {"a": 0, "b": 1, "acc": 2}


def _rows() -> dict[str, ValueType]:
    rows: dict[str, ValueType] = {}
    for name, dt, kind, wgsl, size in _SCALARS:
        # uniform members are 4-byte slots: bool travels as a u32, f16 not at all (pass an f32)
        ints = kind in ("uint", "sint")
        rows[name] = ValueType(
            name, Variant(dt), name, 1, kind, wgsl, size, kind != "bool", size != 2, ints
        )
    for name, dt, kind, wgsl, size in _SCALARS:
        if name not in _LETTER:  # bool, bf16: no vectors
            continue
        for n in VECTOR_COUNTS:
            vname = f"vec{n}{_LETTER[name]}"
            vt = Variant("Vec", (Variant(dt), n))
            vw = f"vec{n}<{wgsl}>"
            rows[vname] = ValueType(vname, vt, name, n, kind, vw, size * n, True, False, False)
    for use, elements in MATRIX_ELEMENTS.items():
        for elem in elements:
            for r in MATRIX_DIMS:
                for c in MATRIX_DIMS:
                    mname = matrix_name(use, elem, r, c)
                    dt = Variant(
                        "TensorShaped", (Variant(rows[elem].datatype.name), (r, c, _USE[use]))
                    )
                    rows[mname] = ValueType(
                        mname, dt, elem, 1, "matrix", "", 0, False, False, False, (use, r, c)
                    )
    return {n: replace(t, host=_HOST[t.element]) for n, t in rows.items()}


def matrix_name(use: str, elem: str, rows: int, cols: int) -> str:
    """The value type of a cooperative matrix: "matrix_a.f16.16x16", "matrix_acc.f32.16x8"."""
    return f"matrix_{use}.{elem}.{rows}x{cols}"


TYPES: dict[str, ValueType] = _rows()
SCALARS = tuple(t.name for t in TYPES.values() if t.count == 1 and t.matrix is None)
_ARITH = {s.name for s in _SCALAR_ROWS if s.arith}  # not bf16: converts to f32 for arithmetic
NUMERIC = tuple(n for n in SCALARS if TYPES[n].kind != "bool" and n in _ARITH)  # i32 u32 f32 f16
INTEGER = tuple(n for n in SCALARS if TYPES[n].kind in ("uint", "sint"))  # i32 u32
FLOAT = tuple(n for n in SCALARS if TYPES[n].kind == "float" and n in _ARITH)  # f32 f16
# Storage types: values that load, store, select and convert to f32 (and cooperative-matrix
# operands), with no arithmetic of their own.
STORAGE_ONLY = tuple(n for n in SCALARS if n not in _ARITH and TYPES[n].kind != "bool")  # bf16
# ... and every value type of them: bf16, vec2bf, vec4bf (not the cooperative matrices)
STORAGE_TYPES = frozenset(
    t for t, row in TYPES.items() if row.element in STORAGE_ONLY and row.matrix is None
)
VECTORS = {t.name: (t.element, t.count) for t in TYPES.values() if t.count > 1}
MATRICES = {t.name: t.matrix for t in TYPES.values() if t.matrix is not None}
_BY_DATATYPE = {t.datatype: t.name for t in TYPES.values()}
_BY_LITERAL = {TYPES[s].datatype.name: s for s in SCALARS}  # LiteralValue variant -> type


def element(ty: str) -> str:
    """The element type of a vector type, or the type itself for a scalar."""
    return TYPES[ty].element


def count(ty: str) -> int:
    return TYPES[ty].count


def vector_of(elem: str, n: int) -> str:
    """The vector type of `n` components of scalar type `elem` (KeyError if there is none)."""
    name = f"vec{n}{_LETTER.get(elem, '?')}"
    if name not in TYPES or TYPES[name].element != elem:
        raise KeyError(f"no vector of {n} {elem}")
    return name


def type_of(dt: Variant) -> str:
    """The value type of a descriptor DataType; DescriptorFormatError if vyre_build has none."""
    name = _BY_DATATYPE.get(dt) if isinstance(dt, Variant) else None
    if name is None:
        raise DescriptorFormatError(f"unsupported data type {dt!r}")
    return name


def literal_type(lit: Variant) -> str:
    """The value type of a LiteralValue (its variant names a scalar DataType)."""
    return _BY_LITERAL[lit.name]


def datatype(ty: str) -> Variant:
    """The descriptor DataType of value type `ty`."""
    return TYPES[ty].datatype
